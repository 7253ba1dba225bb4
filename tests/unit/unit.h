/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* A tiny test harness: CHECK() records failures, unit_done() reports. */
#ifndef MIGR_UNIT_H
#define MIGR_UNIT_H

#include <stdio.h>

static int unit_passed, unit_failed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			unit_passed++;                                         \
		} else {                                                       \
			unit_failed++;                                         \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

static inline int unit_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#endif
