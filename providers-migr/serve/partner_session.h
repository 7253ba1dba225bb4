/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The partner's sessions (partner_session.c): one per QP of this process
 * that a moving partner holds, from its prepare to its resume or abort,
 * with a lease. A watchdog ends the sessions of a mover that went quiet
 * for longer (it died): the QP goes on as it is. All of it under the
 * process's list of contexts (migr_contexts_lock_within()).
 */
#ifndef MIGR_PARTNER_SESSION_H
#define MIGR_PARTNER_SESSION_H

#include "marker.h"
#include "migr.h"

struct migr_psess {
	struct migr_context *ctx;
	uint32_t qpn, peer_qpn;
	union ibv_gid gid;
	struct migr_marker_target peer_marker; /* where our marker goes */
	unsigned int lease_ms;
	double deadline;
	double t_suspended; /* its posts held since: the blackout it saw */
	bool suspended;
	/* its send queue did not drain in time; its old QP was replaced */
	bool undrained, reconnected;
	/* the SRQ it receives through, holding its RECVs for "recvs" */
	struct migr_srq *srq_held;
	struct list_node entry;
};

/* The session of ctx's QP qpn, or NULL */
struct migr_psess *migr_psess_find(struct migr_context *ctx, uint32_t qpn);
/* A new session for mqp (its QP's GID gid), the watchdog running; NULL */
struct migr_psess *migr_psess_open(struct migr_context *ctx,
				   struct migr_qp *mqp,
				   const union ibv_gid *gid);
/* News from the mover: the lease starts again (lease_ms 0: the same) */
void migr_psess_renew(struct migr_psess *s, unsigned int lease_ms);
/*
 * The session ends (mqp NULL: its QP is gone): the QP's posts let through
 * again, after the WRs a replay posts again toward the moved peer; how
 * many of those (the mover's report counts them)
 */
unsigned int migr_psess_end(struct migr_psess *s, struct migr_qp *mqp);

#endif /* MIGR_PARTNER_SESSION_H */
