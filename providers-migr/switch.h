/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A live switch: the whole RDMA state of a migr context moves to another
 * device while the application runs (see docs/architecture.md, "Live
 * switch"). Phases: suspend, drain, release, rebuild, replay.
 */
#ifndef MIGR_SWITCH_H
#define MIGR_SWITCH_H

#include <stdbool.h>

#include "clock.h"
#include "migr.h"
#include "qp_move.h"

/* Threads inside a post or poll leave it in microseconds */
#define QUIESCE_MS 2000


struct migr_switch_report {
	char from[IBV_SYSFS_NAME_MAX];
	char to[IBV_SYSFS_NAME_MAX];
	unsigned int contexts, pds, dms, mrs, mws, channels, cqs, srqs, qps,
		ahs;
	unsigned int partners; /* QPs whose partner is in another process */
	unsigned int retries; /* tries a busy partner put off */
	unsigned int held_wrs; /* posted while suspended, replayed */
	unsigned int
		replayed_wrs; /* unfinished at the wait bound, posted again */
	/* the partners' unfinished WRs they posted again toward us */
	unsigned int partner_replayed_wrs;
	unsigned int reposted_recvs; /* posted before, unused, posted again */
	unsigned int flushed; /* WRs the released QPs flushed (unused RECVs) */
	unsigned int shadowed; /* completions taken off the old CQs */
	unsigned int lost; /* non-flush completions left in destroyed CQs */
	/* what the process held of the device between release and rebuild */
	int device_fds, device_maps;
	double ms_suspend, ms_drain, ms_release, ms_rebuild, ms_replay;
	double ms_partner; /* talking to partners (within the phases) */
	double ms_total;
	bool rolled_back;
	char error[256]; /* empty on success */
};

/*
 * Move the n contexts in ctxs (all on one device, partners among them) to
 * the device named target (a real device, or its migr twin) together;
 * with target NULL, rebuild every object on the device they are on (new
 * physical numbers and keys, the same virtual ones). wait_ms bounds the
 * drain. Returns 0, or an errno with rep->error set; on
 * failure the contexts run on their original device.
 */
int migr_switch(struct migr_context **ctxs, unsigned int n, const char *target,
		unsigned int wait_ms, struct migr_switch_report *rep);

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

/*
 * rebuild.c: the halves of the move, run with ctl_lock held for writing.
 * Release returns the completions it found lost; unused (per QP in record
 * order, or NULL) is what each QP is expected to flush.
 */
unsigned int migr_release_all(struct migr_context *ctx, const uint64_t *unused);
int migr_rebuild_objects(struct migr_context *ctx, struct ibv_context *lower,
			 char *why, size_t why_len);
int migr_reconnect_all(struct migr_context *ctx,
		       const struct migr_gid_move *gids, char *why,
		       size_t why_len);
int migr_rebuild_lower_qp(struct migr_qp *mqp, char *why, size_t why_len);
int migr_lower_connect(struct ibv_qp *lower, const struct ibv_qp_attr *r,
		       uint32_t dest, enum ibv_qp_state *last);
int migr_connect_qp(struct migr_qp *mqp, const struct migr_gid_move *gids,
		    char *why, size_t why_len);
void migr_rewrite_gid(const struct migr_gid_move *gids, struct ibv_ah_attr *ah);
void migr_qp_flush(struct migr_qp *mqp);
void migr_count_device_holds(int *fds, int *maps);

/* ud_switch.c: UD QPs through the phases of a switch */
int migr_ud_precheck(struct migr_context *ctx, struct migr_context *const *v,
		     unsigned int n, char *why, size_t why_len);
int migr_ud_post_marker(struct migr_context *ctx, struct migr_qp *mqp);
void migr_ud_marker_drop(struct migr_qp *mqp);
int migr_ud_connect(struct migr_qp *mqp, char *why, size_t why_len);
int migr_ud_publish(struct migr_context **ctxs, unsigned int n);
void migr_ud_unused_from_flushes(struct migr_context *ctx, uint64_t *unused);

/* srq_switch.c: shared receive queues through the phases of a switch */
void migr_srqs_suspend(struct migr_context *ctx);
void migr_srqs_hold_recvs(struct migr_context *ctx);
int migr_srqs_count_unused(struct migr_context *ctx, char *why, size_t why_len);
void migr_srqs_release(struct migr_context *ctx);
int migr_srqs_rebuild(struct migr_context *ctx, char *why, size_t why_len);
int migr_srqs_repost(struct migr_context *ctx, unsigned int *reposted,
		     char *why, size_t why_len);
unsigned int migr_srqs_resume(struct migr_context *ctx);
void migr_srq_partner_hold(struct migr_srq *msrq);

/* The RECVs of msrq that the CQs it feeds saw used up */
static inline uint64_t migr_srq_used_total(const struct migr_context *ctx,
					   const struct migr_srq *msrq)
{
	const struct migr_cq *mcq;
	uint64_t used = 0;

	list_for_each (&ctx->rec.cqs, mcq, entry)
		if (mcq->srq_fed == msrq)
			used += __atomic_load_n(&mcq->srq_recvs,
						__ATOMIC_RELAXED);
	return used;
}
unsigned int migr_srq_partner_release(struct migr_srq *msrq);

/*
 * What a released QP flushes: its unused RECVs, and under a replay the WRs
 * and markers it never finished
 */
static inline uint64_t migr_expected_flushes(const struct migr_qp *mqp,
					     uint64_t unused)
{
	return unused + mqp->replay_n + mqp->replay_markers;
}

/* replay.c: unfinished WRs posted again after the wait bound */
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

/* mw_switch.c: type 1 memory windows bound again on the target */
int migr_mws_rebuild(struct migr_context *ctx, char *why, size_t why_len);
int migr_mws_bind_type2(struct migr_context *ctx, struct migr_qp *only,
			char *why, size_t why_len);
/* a partner's switch replaces a QP that type 2 windows are bound through */
#define MIGR_QP_MW_MAX 32
void migr_mws_release_qp(struct migr_context *ctx, struct migr_qp *mqp);
int migr_mws_rebind_qp(struct migr_context *ctx, struct migr_qp *mqp,
		       char *pairs, char *why, size_t why_len);
void migr_mws_release(struct migr_context *ctx);

/* dm_switch.c: device memory, its contents carried through host memory */
int migr_dms_precheck(struct migr_context *ctx, struct ibv_context *target,
		      char *why, size_t why_len);
int migr_dms_save(struct migr_context *ctx, char *why, size_t why_len);
void migr_dms_release(struct migr_context *ctx);
int migr_dms_rebuild(struct migr_context *ctx, char *why, size_t why_len);
void migr_dms_resume(struct migr_context *ctx);

#endif /* MIGR_SWITCH_H */
