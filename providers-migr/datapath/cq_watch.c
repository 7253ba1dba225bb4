// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What completions tell besides themselves (datapath.h): the QPNs the
 * application knows, what an SRQ used up, which UD peers send to us, what
 * a replay counts, which type 2 windows a remote invalidated. The poll
 * paths (cq.c, cq_ex.c) and the shadows (shadow.c) all call here.
 */
#include "cq_watch.h"
#include "datapath.h"
#include "migr.h"

void migr_wc_to_virt(struct migr_context *ctx, struct ibv_wc *wc, int n)
{
	migr_wc_to_virt_fast(ctx, wc, n);
}

/* migr_cq_watch() on a CQ that feeds an SRQ, receives for a UD QP, counts
 * for replay or may see type 2 windows invalidated */
void migr_cq_watched(struct migr_cq *mcq, struct ibv_wc *wc, int n)
{
	struct migr_context *ctx = to_mcontext(mcq->vcq.cq.context);
	unsigned int used = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (mcq->srq_fed)
			used += migr_srq_used(mcq, wc[i].status, wc[i].opcode,
					      wc[i].qp_num);
		if (mcq->watch & MIGR_WATCH_UD)
			migr_ud_src_seen(ctx, wc[i].status, wc[i].src_qp);
		if (mcq->watch & MIGR_WATCH_REPLAY)
			migr_replay_seen(ctx, wc[i].status, wc[i].opcode,
					 wc[i].qp_num, wc[i].wr_id);
		if ((mcq->watch & MIGR_WATCH_INV) &&
		    wc[i].status == IBV_WC_SUCCESS &&
		    wc[i].opcode == IBV_WC_RECV &&
		    (wc[i].wc_flags & ctx->wc_inv))
			migr_mw_remote_inv(ctx, &wc[i].invalidated_rkey, true);
	}
	if (used)
		__atomic_add_fetch(&mcq->srq_recvs, used, __ATOMIC_RELAXED);
}

/* A sender's lower QPN, seen by a poll; lock-free while it is known */
void migr_ud_src_note(struct migr_context *ctx, uint32_t src_qp)
{
	unsigned int i, n = __atomic_load_n(&ctx->n_ud_src, __ATOMIC_ACQUIRE);

	for (i = 0; i < n && i < MIGR_UD_SRC_MAX; i++)
		if (__atomic_load_n(&ctx->ud_src[i], __ATOMIC_RELAXED) ==
		    src_qp)
			return;
	if (n > MIGR_UD_SRC_MAX)
		return; /* too many to tell: a switch refuses anyway */
	pthread_mutex_lock(&ctx->ud_src_lock);
	n = ctx->n_ud_src;
	for (i = 0; i < n && i < MIGR_UD_SRC_MAX; i++)
		if (ctx->ud_src[i] == src_qp)
			break;
	if (i == n && n <= MIGR_UD_SRC_MAX) {
		if (n < MIGR_UD_SRC_MAX)
			__atomic_store_n(&ctx->ud_src[n], src_qp,
					 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->n_ud_src, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctx->ud_src_lock);
}

/* A rebuild renumbered the process's QPs: the senders are learned anew */
void migr_ud_src_forget(struct migr_context *ctx)
{
	pthread_mutex_lock(&ctx->ud_src_lock);
	__atomic_store_n(&ctx->n_ud_src, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->ud_src_lock);
}
