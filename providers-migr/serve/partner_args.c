// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A partner line's entries and each step's arguments (partner_args.h) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partner_args.h"

unsigned int migr_pserve_cut(const struct pline *pl, char *copy,
			     const char *line, struct pserve_cut *c)
{
	int i;

	c->pairs = NULL;
	if (pl->pairs) {
		c->pairs = copy + (pl->pairs - line);
		c->pairs[pl->pairs_len] = 0;
	}
	for (i = 0; i < pl->nqp; i++) {
		char *at = copy + (pl->at[i] - line), *dot = strstr(at, " . ");

		if (dot)
			*dot = 0;
		c->entry[i] = at;
		c->args[i] = at + strcspn(at, " ");
	}
	return pl->nqp;
}

/* QP numbers are 24 bits: "%u" would take "-1" and 2^24 too */
static bool qpn_ok(unsigned int qpn)
{
	return qpn <= 0xffffff;
}

bool migr_pserve_read_prepare(const char *entry, const char *args,
			      struct prepare_args *a)
{
	/* PARTNER_PHYS as migrd reads it (it asks that QP's holder only) */
	return sscanf(args, "%u %u %d %x %" SCNx64 " %u %" SCNx64, &a->peer_qpn,
		      &a->lease, &a->access, &a->mkey, &a->maddr, &a->peer_phys,
		      &a->peer_id) == 7 &&
	       qpn_ok(a->peer_qpn) && qpn_ok(a->peer_phys) &&
	       !pline_word(entry, PLINE_PARTNER_PHYS_WORD, &a->partner_phys) &&
	       a->partner_phys;
}

bool migr_pserve_read_fetch(const char *args, struct fetch_args *f)
{
	char from[16], *end;

	if (sscanf(args, "%u %u %" SCNx64 " %" SCNu64 " %15s", &f->peer_qpn,
		   &f->peer_phys, &f->peer_id, &f->gen, from) != 5 ||
	    !qpn_ok(f->peer_qpn) || !qpn_ok(f->peer_phys))
		return false;
	/* FROM "-": no keys, only what the asker needs to know if it has them */
	f->probe = !strcmp(from, "-");
	f->start = 0;
	if (f->probe)
		return true;
	f->start = strtoul(from, &end, 10);
	return !*end && f->start <= UINT32_MAX;
}

bool migr_pserve_read_give(const char *entry, const char *args,
			   struct prepare_args *a, uint64_t *gen, int *last,
			   const char **pairs)
{
	int n = -1;

	if (!migr_pserve_read_prepare(entry, args, a) ||
	    sscanf(args, "%*u %*u %*d %*x %*x %*u %*x %*u %" SCNu64 " %d %n",
		   gen, last, &n) != 2 ||
	    n < 0 || !*gen || (*last != 0 && *last != 1))
		return false;
	*pairs = args + n;
	return true;
}

bool migr_pserve_read_suspend(const char *args, unsigned int *wait_ms)
{
	unsigned int v;

	/* *wait_ms kept if not: the drain of the others is bounded by it */
	if (sscanf(args, "%u", &v) != 1 || !v || v > 600000)
		return false;
	*wait_ms = v;
	return true;
}

bool migr_pserve_read_recvs(const char *args, int *counted, uint64_t *recvs,
			    uint64_t *posted)
{
	return sscanf(args, "%d %" SCNu64 " %" SCNu64, counted, recvs,
		      posted) == 3;
}

bool migr_pserve_read_reconnect(const char *args, unsigned int *new_qpn,
				char gidhex[33], uint64_t *consumers)
{
	return sscanf(args, "%u %32s %" SCNu64, new_qpn, gidhex, consumers) ==
		       3 &&
	       *new_qpn && !(*new_qpn >> 24);
}
