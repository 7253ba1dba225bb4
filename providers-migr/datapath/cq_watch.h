/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the poll paths (cq.c, cq_ex.c, shadow.c) take from completions
 * besides handing them out (cq_watch.c): the QPNs the application knows,
 * what an SRQ used up, which UD peers send to us, what a replay counts.
 */
#ifndef MIGR_CQ_WATCH_H
#define MIGR_CQ_WATCH_H

#include "migr.h"

/* A successful RECV completion of a QP that receives through the SRQ */
static inline bool migr_srq_used(const struct migr_cq *mcq,
				 enum ibv_wc_status status,
				 enum ibv_wc_opcode opcode, uint32_t qpn)
{
	uint32_t one;

	return status == IBV_WC_SUCCESS && (opcode & IBV_WC_RECV) &&
	       (!mcq->recv_plain || migr_u32map_get(&mcq->srq_qps, qpn, &one));
}

enum {
	MIGR_WATCH_SRQ = 1 << 0, /* srq_fed: count what the SRQ used up */
	MIGR_WATCH_UD = 1 << 1, /* a UD QP receives here: note its senders */
	MIGR_WATCH_REPLAY = 1 << 2, /* count each tracked QP's completions */
	MIGR_WATCH_INV = 1 << 3, /* type 2 windows: remote invalidations */
};

/*
 * Show the application the QPNs it knows: its own and its partners'. The
 * table is taken once per poll; a QPN (24 bits) is never the spare key.
 */
static inline __attribute__((always_inline)) void
migr_wc_to_virt_fast(struct migr_context *ctx, struct ibv_wc *wc, int n)
{
	const struct migr_u32tab *t =
		migr_u32map_tab(&ctx->xlate.map[MIGR_XLATE_QPN]);
	uint32_t v;
	int i;

	for (i = 0; i < n; i++) {
		if (migr_u32tab_get(t, wc[i].qp_num, &v))
			wc[i].qp_num = v;
		/* Only UD receives name a sender; elsewhere it is zero */
		if (unlikely(wc[i].src_qp))
			wc[i].src_qp = migr_remote_qpn_to_virt(&ctx->remote,
							       wc[i].src_qp);
	}
}

/* The same, out of line (shadow.c) */
void migr_wc_to_virt(struct migr_context *ctx, struct ibv_wc *wc, int n);

/* The UD senders seen, for a UD switch (ud_switch.c) */
void migr_ud_src_note(struct migr_context *ctx, uint32_t src_qp);
void migr_ud_src_forget(struct migr_context *ctx);

/*
 * A UD datagram names its sender's lower QP (src_qp: zero elsewhere; rxe
 * does not set IBV_WC_GRH in a user CQ, so that flag cannot tell)
 */
static inline void migr_ud_src_seen(struct migr_context *ctx,
				    enum ibv_wc_status status, uint32_t src_qp)
{
	if (status == IBV_WC_SUCCESS && src_qp &&
	    (!ctx->n_ud_src ||
	     __atomic_load_n(&ctx->ud_src[0], __ATOMIC_RELAXED) != src_qp))
		migr_ud_src_note(ctx, src_qp);
}

/*
 * Completions taken off a lower CQ: what its SRQ used up, and who sent
 * its UD QPs datagrams. One predictable branch on CQs that need neither.
 */
void migr_cq_watched(struct migr_cq *mcq, struct ibv_wc *wc, int n);

static inline void migr_cq_watch(struct migr_cq *mcq, struct ibv_wc *wc, int n)
{
	if (unlikely(mcq->watch) && n > 0)
		migr_cq_watched(mcq, wc, n);
}

#endif /* MIGR_CQ_WATCH_H */
