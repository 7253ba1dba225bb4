/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the driver (driver.c) keeps from run to run: the edges of the
 * target's code each input takes, and the inputs that took new ones, in a
 * corpus directory read again by the next run. corpus.c is built without
 * coverage, so that only the target's code counts.
 */
#ifndef MIGR_FUZZ_CORPUS_H
#define MIGR_FUZZ_CORPUS_H

#include <stdbool.h>
#include <stddef.h>

/* An input begins: its edges are counted from here */
void cov_begin(void);
/*
 * When it is done: the edges it took that no input took before it, or
 * not as many times (by classes: 1, 2, 3, 4-7, ... 128 and more)
 */
unsigned int cov_new(void);
/* Edges taken so far, by every input; 0 if the code has no coverage */
unsigned int cov_edges(void);

/*
 * The corpus directory of target T into path: dir if given, else
 * $MIGR_CACHE/fuzz/T, MIGR_CACHE being ~/.cache/migr unless set. false if
 * there is none ("-", or no home)
 */
bool corpus_dir(const char *dir, const char *target, char *path, size_t len);
/*
 * buf into the corpus as a file named by its hash, the directory made if
 * need be: 0, or -1 (errno) if it cannot be written; a file of that name
 * there already counts as written
 */
int corpus_keep(const char *path, const void *buf, size_t len);

#endif
