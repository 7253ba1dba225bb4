/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Unfinished WRs posted again after the wait bound (replay.c, with
 * MIGR_REPLAY=1): what the other end received decides.
 */
#ifndef MIGR_REPLAY_H
#define MIGR_REPLAY_H

#include "migr.h"

/* What the other end of a QP received, for a replay's decision */
struct migr_replay_peer {
	bool counted; /* it counts its RECVs (MIGR_REPLAY=1) */
	uint64_t recvs; /* its RECVs that completed */
	/* the RECVs it ever posted; on an SRQ: recvs + the SRQ's left */
	uint64_t posted;
};
void migr_replay_peer_of(const struct migr_qp *p, struct migr_replay_peer *out);
int migr_replay_plan(struct migr_qp *q, const struct migr_replay_peer *peer,
		     char *why, size_t why_len);
void migr_replay_forget(struct migr_context *ctx);
int migr_replay_post(struct migr_qp *mqp, unsigned int *n);
void migr_replay_drained(struct migr_qp *mqp);

#endif /* MIGR_REPLAY_H */
