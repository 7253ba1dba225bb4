/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Inside the partner relay: partner_asker.c takes every request and checks
 * what a migr process that is not root may ask (its partners' QPs only,
 * by the kernel's word); partner.c, below it, finds the process a request
 * is for and relays it.
 */
#ifndef MIGRD_PARTNER_RELAY_H
#define MIGRD_PARTNER_RELAY_H

#include <jansson.h>
#include <stdbool.h>

#include "log.h"
#include "req.h"
#include "sbuf.h"

struct client;

/* One relayed request, for the replies and the log */
struct relay {
	const struct req *r;
	const char *where; /* HOST as given, or "this host" */
	char who[48]; /* the requester */
	int op_len;
	long long t0; /* when it came: the logs say how long it took */
	int asker; /* a local asker's process, never its own partner; or 0 */
};

#define rlog(x, fmt, ...)                                                      \
	log_dbg("partner %.*s for QP 0x%x on %s from %s: " fmt, (x)->op_len,   \
		(x)->r->line, (x)->r->qpn, (x)->where, (x)->who,               \
		##__VA_ARGS__)

/* A refusal, logged, as the request's reply */
void relay_refuse(const struct relay *x, struct sbuf *out, const char *err);
/* The request, relayed: to HOST's migrd, the named pid, or its owner */
void relay_to(const struct relay *x, bool remote, struct sbuf *out);
/* The results of a relayed reply (*j to be freed), its process in *pid */
const json_t *relay_results(const struct sbuf *out, json_t **j, int *pid);

#endif /* MIGRD_PARTNER_RELAY_H */
