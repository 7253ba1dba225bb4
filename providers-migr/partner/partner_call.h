/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Inside the moving side of the partner protocol (partner.h): a step is
 * one request line per partner process to this host's migrd, which relays
 * it (partner_call.c); the switch's steps (partner_steps.c) and a
 * connect's fetch and give (partner_fetch.c) are made of it.
 */
#ifndef MIGR_PARTNER_CALL_H
#define MIGR_PARTNER_CALL_H

#include <jansson.h>

#include "partner.h"

/* rkey pairs per "keys" request: well under migrd's line limit */
#define KEYS_PER_LINE 160
/* A connect waits this long at most for what its peer says (fetch) */
#define FETCH_TIMEOUT_S 3

/* What a step sends per QP, and takes from its answer */
struct migr_pcall_step {
	const char *op;
	const char *head; /* keys: the pairs, before the QPs */
	int (*args)(struct migr_partner *p, char *buf, size_t len, void *arg);
	int (*take)(struct migr_partner *p, const json_t *res, void *arg,
		    char *err, size_t errlen);
	void *arg;
	bool prepare; /* QPs a process disowns are looked for elsewhere */
	bool only_prepared; /* resume, abort: partners that said yes */
	unsigned int timeout_s; /* 0: migrd_call()'s default */
};

/*
 * A step for every partner in v[] (those st->args accepts), one request
 * per partner process and at most 24 QPs. 0, EBUSY, or an errno with err.
 */
int migr_pcall_step(struct migr_partner *v, unsigned int n,
		    const struct migr_pcall_step *st, char *err, size_t errlen);
/* The same, again every 100 ms up to tries times while a partner is busy */
int migr_pcall_patient(struct migr_partner *v, unsigned int n,
		       const struct migr_pcall_step *st, unsigned int tries,
		       char *err, size_t errlen);

#endif /* MIGR_PARTNER_CALL_H */
