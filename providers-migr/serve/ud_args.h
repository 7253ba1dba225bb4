/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the serving side of UD peers (ud_serve.c) reads of a "ud LINE"
 * request before it touches a context: text only, no device, so that
 * the fuzz target (fuzz_serve.c) runs it alone.
 */
#ifndef MIGR_UD_ARGS_H
#define MIGR_UD_ARGS_H

#include <stdint.h>

#define MIGR_UD_PAIRS_MAX 256 /* of one moved request */

enum migr_ud_op {
	MIGR_UD_BAD,
	MIGR_UD_PROBE, /* "probe" */
	MIGR_UD_MOVED, /* "moved ARGS" */
};

/* The request line's op; *args: what follows its word (moved) */
enum migr_ud_op migr_ud_op(const char *line, const char **args);

/* A UD peer's QP that moved: FROM is TO now, KNOWN its application's */
struct migr_ud_pair {
	uint32_t from, to, known;
};

/* "FROM:TO:KNOWN,..." (hex, 24 bits each) into v: how many, or -1 */
int migr_ud_read_pairs(const char *s, struct migr_ud_pair *v);

/*
 * moved's "FROMGID TOGID PAIRS": the GIDs' text (up to 32 characters,
 * for migr_gid_parse()) and the pairs into v (MIGR_UD_PAIRS_MAX): how
 * many, or -1
 */
int migr_ud_read_moved(const char *args, char fromhex[33], char tohex[33],
		       struct migr_ud_pair *v);

#endif /* MIGR_UD_ARGS_H */
