/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Inside the partner's side (partner.h, "partner OP ..." lines): a request
 * names up to PLINE_QPS_MAX QPs, each an entry with its own result; the
 * steps are served by partner_follow.c (a mover's switch: prepare,
 * suspend, recvs, reconnect, resume, abort), partner_keys.c (rkeys: keys,
 * fetch, give) and partner_serve.c (faces, the dispatch and the reply);
 * each step's arguments are read by partner_args.c.
 */
#ifndef MIGR_PARTNER_SERVE_H
#define MIGR_PARTNER_SERVE_H

#include <stdio.h>

#include "migr.h"
#include "partner_args.h"
#include "partner_session.h"

/* One QP of a request and what it answers */
struct serve_entry {
	uint32_t qpn;
	const char *entry, *args; /* "QPN ARGS", and ARGS */
	struct migr_qp *mqp;
	struct migr_context *ctx;
	struct migr_psess *s;
	uint32_t phys; /* its lower QP when it was found: migrd checks it */
	bool ok, notmine, busy;
	char res[2048]; /* its JSON object (fetch: MIGR_FETCH_KEYS pairs) */
};

#define RESULT(e, ok_, fmt, ...)                                               \
	do {                                                                   \
		(e)->ok = (ok_);                                               \
		snprintf((e)->res, sizeof((e)->res), fmt, ##__VA_ARGS__);      \
	} while (0)

/* A refusal: its reason escaped, so no text can add keys to the reply */
void __attribute__((format(printf, 3, 4)))
migr_pserve_error(struct serve_entry *e, bool notmine, const char *fmt, ...);

#define FAILED(e, fmt, ...) migr_pserve_error(e, false, fmt, ##__VA_ARGS__)
/*
 * Not this process's: one request may name QPs of several processes (their
 * virtual numbers repeat), so the mover asks the others for this one
 */
#define NOT_MINE(e, fmt, ...) migr_pserve_error(e, true, fmt, ##__VA_ARGS__)

/* Not the QP the asker's faces: answered notmine (true) */
bool migr_pserve_faces_other(struct serve_entry *e, uint32_t peer_qpn,
			     uint32_t peer_phys, uint32_t partner_phys);

/* The steps, each for the n entries of a request (pairs: keys') */
typedef void migr_pserve_step(struct serve_entry *v, unsigned int n,
			      const char *pairs, const union ibv_gid *gid);
/* partner_follow.c */
migr_pserve_step migr_pserve_prepare, migr_pserve_suspend, migr_pserve_recvs,
	migr_pserve_reconnect, migr_pserve_end;
/* partner_keys.c */
migr_pserve_step migr_pserve_keys, migr_pserve_fetch, migr_pserve_give;

#endif /* MIGR_PARTNER_SERVE_H */
