/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A QP's own phases in a move (qp_phase.c), in their order: suspend,
 * drain, retire, reconnect, repost, replay, resume. A switch takes them
 * for every QP of its contexts; a partner's side (serve/partner_follow.c) takes them
 * for the one QP that faces the mover, while its other QPs run on.
 */
#ifndef MIGR_QP_PHASE_H
#define MIGR_QP_PHASE_H

#include "marker.h"
#include "migr.h"

/*
 * The GIDs the process's own QPs and AHs address each other with, on the
 * old device and the new one: a partner in this process moves too.
 */
#define MIGR_MAX_GIDS 8
struct migr_gid_move {
	unsigned int n;
	struct {
		uint8_t port, index;
		union ibv_gid from, to;
	} e[MIGR_MAX_GIDS];
};

/* Suspend: posts held from now on (threads see it after a quiesce) */
void migr_qp_suspend(struct migr_qp *mqp);
/* Polls of the QP's CQs take the shadow path */
void migr_qp_take_cqs(struct migr_qp *mqp);
/* RECVs posted from now on wait for the new lower QP */
void migr_qp_hold_recvs(struct migr_qp *mqp);

/* Drain: no marker of this drain out yet */
void migr_qp_drain_begin(struct migr_qp *mqp);
/*
 * Its marker toward t, unless out already or the QP only receives (RTR);
 * ENOMEM: the send queue is full, try again once completions made room
 */
int migr_qp_post_marker(struct migr_context *ctx, struct migr_qp *mqp,
			const struct migr_marker_target *t);
/* Its send queue drained (an RTR QP has nothing to drain) */
bool migr_qp_drained(const struct migr_qp *mqp);
/* Its CQs' completions into their shadows; how many moved */
unsigned int migr_qp_drain_cqs(struct migr_qp *mqp);
/* Log what an operator needs to see of a QP that would not drain */
void migr_qp_log_state(struct migr_qp *mqp, const char *why);

/*
 * Retire: the lower QP in error, its flushes awaited. The one wait,
 * migr_await_flushes(), calls poll(arg) (true: it took completions) until
 * it stayed quiet for quiet_ms once enough(arg) says the expected flushes
 * are in, or for wait_ms if they never come: a flush left behind would
 * reach the application. Its bounds, per caller:
 *
 * a switch's release, every QP of its contexts at once (rebuild.c): done
 * at the first quiet poll once all are in; 50 ms if they never come ...
 */
#define MIGR_RELEASE_FLUSH_QUIET_MS 0
#define MIGR_RELEASE_FLUSH_WAIT_MS 50
/* ... and, expecting nothing (a rollback's release), quiet this long */
#define MIGR_RELEASE_NONE_QUIET_MS 0.6
/*
 * a partner retiring one QP (migr_qp_retire()): its CQs carry the
 * application's traffic meanwhile, hence the longer bounds
 */
#define MIGR_RETIRE_FLUSH_QUIET_MS 1.5
#define MIGR_RETIRE_FLUSH_WAIT_MS 200

void migr_await_flushes(bool (*poll)(void *arg), bool (*enough)(void *arg),
			void *arg, double quiet_ms, double wait_ms);
/* The lower QP in error, so that what it holds flushes */
void migr_qp_flush(struct migr_qp *mqp);
/*
 * What a released QP flushes: its unused RECVs, and under a replay the WRs
 * and markers it never finished
 */
static inline uint64_t migr_expected_flushes(const struct migr_qp *mqp,
					     uint64_t unused)
{
	return unused + mqp->replay.n + mqp->replay.markers;
}
/*
 * One QP's lower QP retired, its CQs running on: flushed (unused RECVs
 * and replayed WRs expected, and dropped), destroyed. 0, or an errno
 * with why.
 */
int migr_qp_retire(struct migr_qp *mqp, uint64_t unused, char *why,
		   size_t why_len);

/* Reconnect: a new lower QP on the lower objects it has now, unconnected */
int migr_rebuild_lower_qp(struct migr_qp *mqp, char *why, size_t why_len);
/* ... brought to the state the application had it in (gids: see above) */
int migr_connect_qp(struct migr_qp *mqp, const struct migr_gid_move *gids,
		    char *why, size_t why_len);
void migr_rewrite_gid(const struct migr_gid_move *gids, struct ibv_ah_attr *ah);
/* The PSNs its lower QP holds now, into the record; 0 or an errno */
int migr_qp_keep_psns(struct migr_qp *mqp);
/*
 * Its drained lower QP pointed in place at new_qpn at gid where the
 * device can (migr_rxe(7)); 0, or an errno with nothing changed
 */
int migr_qp_repoint(struct migr_qp *mqp, const union ibv_gid *gid,
		    uint32_t new_qpn);
/*
 * A retired QP's new lower QP, connected, its unused RECVs posted again,
 * its type 2 windows bound again (their keys in keys); 0 or an errno
 */
int migr_qp_replace(struct migr_qp *mqp, uint64_t unused, char *keys, char *why,
		    size_t why_len);

/* Repost: RECVs posted but never used, the other end having used `used` */
int migr_unused_recvs(const struct migr_qp *mqp, uint64_t used,
		      uint64_t *unused);
/* Post the QP's n newest logged RECVs again, in their order */
int migr_repost_recvs(struct migr_qp *mqp, uint64_t n, char *why,
		      size_t why_len);

/* Replay: a replay's unfinished WRs posted again; how many (*lost: not) */
unsigned int migr_qp_replay(struct migr_qp *mqp, unsigned int *lost);

/* Resume: the QP's held WRs posted in order, its posts let through; how many */
unsigned int migr_qp_resume(struct migr_qp *mqp);
/* Its CQs back to the fast path, unless something else holds them */
void migr_qp_settle_cqs(struct migr_qp *mqp);

#endif /* MIGR_QP_PHASE_H */
