/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The switch's steps toward the partners of the QPs it moves: each one a
 * partner-protocol request (calls/partner_call.h) to every partner at once.
 */
#ifndef MIGR_PARTNER_STEPS_H
#define MIGR_PARTNER_STEPS_H

#include "partner_call.h"

/*
 * For n partners at once (one request per partner process and step): 0,
 * EBUSY (a partner is switching itself), or an errno with err set naming
 * the QP, the partner and the reason.
 */
int migr_partner_init(struct migr_partner *p, struct migr_qp *mqp, char *err,
		      size_t errlen);
/* Each partner's session ends by itself after lease_ms without news */
int migr_partners_prepare(struct migr_partner *v, unsigned int n,
			  unsigned int lease_ms, char *err, size_t errlen);
int migr_partners_suspend(struct migr_partner *v, unsigned int n,
			  unsigned int wait_ms, char *err, size_t errlen);
/* RECVs held from now on; what each took from us and was given */
int migr_partners_recvs(struct migr_partner *v, unsigned int n, char *err,
			size_t errlen);
/* v[] in runs of one context of ours: its keys go to their contexts */
int migr_partners_reconnect(struct migr_partner *v, unsigned int n, char *err,
			    size_t errlen);
/* 0, or an errno with err: a partner that did not resume (or abort) */
int migr_partners_resume(struct migr_partner *v, unsigned int n, bool abort,
			 char *err, size_t errlen);

#endif /* MIGR_PARTNER_STEPS_H */
