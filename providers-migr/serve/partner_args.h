/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the partner's side reads of a partner line (partner_serve.h) before
 * it touches a QP: the entries cut apart, then each step's arguments.
 * Text only, no device: the fuzz target (fuzz_serve.c) runs it alone.
 */
#ifndef MIGR_PARTNER_ARGS_H
#define MIGR_PARTNER_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "partner_line.h"

/* A request's entries, cut at " . " in a copy of its line */
struct pserve_cut {
	char *pairs; /* keys: the pairs; NULL for the other steps */
	const char *entry[PLINE_QPS_MAX]; /* "QPN ARGS" */
	const char *args[PLINE_QPS_MAX]; /* ARGS: from the space after QPN */
};

/*
 * pl as pline_parse() read it from line, its entries and the keys' pairs
 * cut in copy (a copy of line, which c points into): how many entries
 */
unsigned int migr_pserve_cut(const struct pline *pl, char *copy,
			     const char *line, struct pserve_cut *c);

/* A prepare's arguments (and those of faces and give, made of them) */
struct prepare_args {
	unsigned int peer_qpn, lease, mkey, peer_phys, partner_phys;
	int access;
	uint64_t maddr, peer_id;
};

/* Its QP numbers 24 bits, PARTNER_PHYS not 0 */
bool migr_pserve_read_prepare(const char *entry, const char *args,
			      struct prepare_args *a);

/* A fetch's arguments: FROM "-" is a probe, else the first key's index */
struct fetch_args {
	unsigned int peer_qpn, peer_phys;
	uint64_t peer_id, gen;
	bool probe;
	unsigned long start;
};

/* Its QP numbers 24 bits, START at most 2^32 - 1 */
bool migr_pserve_read_fetch(const char *args, struct fetch_args *f);

/*
 * A give's: a prepare's, then GEN, LAST (0 or 1) and its pairs ("-" for
 * none), *pairs pointing into args
 */
bool migr_pserve_read_give(const char *entry, const char *args,
			   struct prepare_args *a, uint64_t *gen, int *last,
			   const char **pairs);

/* A suspend's: its drain's bound, 1 to 600000 ms; else *wait_ms stays */
bool migr_pserve_read_suspend(const char *args, unsigned int *wait_ms);

/* A recvs': the mover's RECVs, counted or not, completed and posted */
bool migr_pserve_read_recvs(const char *args, int *counted, uint64_t *recvs,
			    uint64_t *posted);

/* A reconnect's: the moved peer's new QP, its GID in hex, its consumers */
bool migr_pserve_read_reconnect(const char *args, unsigned int *new_qpn,
				char gidhex[33], uint64_t *consumers);

#endif /* MIGR_PARTNER_ARGS_H */
