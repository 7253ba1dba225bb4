/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * One fuzz target per parser of migrd. Each is built twice: with driver.c
 * (gcc, ASan+UBSan, bounded, run by ctest) and, when clang is there, as a
 * libFuzzer binary (README.md).
 */
#ifndef MIGR_FUZZ_H
#define MIGR_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The target: returns 0; a finding aborts (sanitizer report or abort()) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Seeds the target builds itself (those a file cannot hold well, such as
 * a frame sealed with the target's key); add() copies each */
void fuzz_seeds(void (*add)(const void *buf, size_t len));

/* A property of the parser does not hold: abort, naming it */
#define FUZZ_ASSERT(cond)                                                      \
	do {                                                                   \
		if (!(cond))                                                   \
			fuzz_fail(__FILE__, __LINE__, #cond);                  \
	} while (0)

#include <stdio.h>
#include <stdlib.h>

static inline void __attribute__((noreturn))
fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: property does not hold: %s\n", file, line,
		what);
	abort();
}

#endif
