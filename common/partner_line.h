/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The lines of the partner protocol (partner_call.h), as one parser reads them
 * in the library (partner_serve.c) and in migrd (which relays them, and
 * checks who may send which): a line read one way in one place and another
 * way in the other would be a hole at a trust boundary.
 *
 *   OP GID QPN ARGS [. QPN ARGS]...
 *   keys GID PAIRS . QPN [. QPN]...
 *
 * OP a known step, GID 32 lowercase hex digits, each QPN 24 bits in
 * decimal, single spaces, entries split at " . ". The limits of a line are
 * here too, once.
 */
#ifndef MIGR_PARTNER_LINE_H
#define MIGR_PARTNER_LINE_H

#include <stddef.h>
#include <stdint.h>

#define PLINE_GID_LEN 32 /* hex digits */
#define PLINE_QPS_MAX 64 /* entries of one line */
#define PLINE_LINE_MAX 3800 /* what migrd relays after its own words */

enum pline_step {
	PLINE_PREPARE,
	PLINE_SUSPEND,
	PLINE_KEYS,
	PLINE_RECONNECT,
	PLINE_RESUME,
	PLINE_ABORT,
	PLINE_RECVS,
	PLINE_FETCH, /* a connect asks its peer: read only */
	PLINE_FACES, /* migrd's own question before a prepare */
	PLINE_GIVE, /* a connect hands its rkeys to the QP facing it */
};

/* Is the step routed and checked as a prepare is (PLINE_PARTNER_PHYS_WORD)? */
static inline int pline_names_partner(enum pline_step step)
{
	return step == PLINE_PREPARE || step == PLINE_FACES ||
	       step == PLINE_GIVE;
}

/*
 * In a prepare's entry (and the faces step made of it), "QPN PEER_QPN
 * LEASE_MS ACCESS MKEY MADDR PEER_PHYS PEER_ID PARTNER_PHYS": the word that
 * names the lower QP of the partner's the asker's QP is connected to. A
 * give's entry begins the same (LEASE_MS to MADDR 0), so that migrd checks
 * it with the same faces step.
 */
#define PLINE_PARTNER_PHYS_WORD 8

struct pline {
	enum pline_step step;
	char gid[PLINE_GID_LEN + 1];
	const char *pairs; /* keys: the pairs, up to " . " */
	size_t pairs_len;
	int nqp;
	uint32_t qpn[PLINE_QPS_MAX];
	const char *at[PLINE_QPS_MAX]; /* each entry, from its QPN */
};

/*
 * Read line into pl (pointers into line). gid, if not NULL, is the GID
 * the line must name. 0, or -1 with a one-line err (never echoing line).
 */
int pline_parse(const char *line, const char *gid, struct pline *pl, char *err,
		size_t errlen);

/* The step's name ("prepare"...) */
const char *pline_step_name(enum pline_step step);

/*
 * Entry i as a string of its own, "QPN ARGS" without the entries after
 * it, into buf. 0, or -1 if it does not fit.
 */
int pline_entry(const struct pline *pl, int i, char *buf, size_t len);

/*
 * Word k of an entry (0: its QPN) as a QP number, 0..0xffffff in decimal:
 * 0, or -1 if the entry has no such word.
 */
int pline_word(const char *at, int k, uint32_t *v);

/*
 * A reconnect entry's new peer, "QPN NEW_QPN NEW_GID ...": 0, or -1 unless
 * NEW_QPN is 1..0xffffff in decimal and NEW_GID 32 lowercase hex digits.
 */
int pline_reconnect(const char *at, uint32_t *qpn, char *gid);

#endif /* MIGR_PARTNER_LINE_H */
