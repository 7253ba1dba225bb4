// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Type 2 memory windows: what binds and invalidations left each one as,
 * so that a switch binds it again. Such a window is bound by a WR on a QP
 * (IBV_WR_BIND_MW), through which alone it is then reached, and unbound
 * by a LOCAL_INV on any QP or by a SEND_WITH_INV from the other end,
 * which only the receive completion shows. The state follows the WRs the
 * lower QPs took, in posting order; a switch reads it once every posted
 * WR completed (the drain), and a bind that failed left its QP in error,
 * which a switch refuses anyway. Binds and invalidations are rare next to
 * other WRs: they take the record's lock.
 */
#include <stdlib.h>

#include "cq_watch.h"
#include "datapath.h"
#include "migr.h"

/* The type 2 window a key of ours names (virtual or lower); rec.lock held */
static struct migr_mw *mw2_by_key(struct migr_context *ctx, uint32_t rkey,
				  bool lower)
{
	struct migr_mw *mmw;

	list_for_each (&ctx->rec.mws, mmw, entry) {
		uint32_t k = lower ? (mmw->lower ? mmw->lower->rkey : 0) :
				     mmw->mw.rkey;

		if (mmw->mw.type == IBV_MW_TYPE_2 && (!lower || mmw->lower) &&
		    migr_key_index(k) == migr_key_index(rkey))
			return mmw;
	}
	return NULL;
}

/* A type 2 window exists: every CQ of the context watches invalidations */
void migr_mw2_added(struct migr_context *ctx)
{
	struct migr_cq *mcq;

	pthread_mutex_lock(&ctx->rec.lock);
	ctx->mw2++;
	list_for_each (&ctx->rec.cqs, mcq, entry)
		__atomic_or_fetch(&mcq->watch, MIGR_WATCH_INV,
				  __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ctx->rec.lock);
}

static void bound(struct migr_qp *mqp, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;
	struct migr_mw *mmw = to_mmw(wr->bind_mw.mw);

	pthread_mutex_lock(&mqp->ctx->rec.lock);
	mmw->cur_rkey = wr->bind_mw.rkey;
	mmw->mr = b->mr ? to_mmr(b->mr) : NULL;
	mmw->addr = b->addr;
	mmw->length = b->length;
	mmw->access = b->mw_access_flags;
	mmw->qp = mmw->mr && b->length ? mqp : NULL;
	pthread_mutex_unlock(&mqp->ctx->rec.lock);
}

/* Send WRs the lower QP took, from wr up to stop (NULL: all) */
void migr_mw_track_sends(struct migr_qp *mqp, const struct ibv_send_wr *wr,
			 const struct ibv_send_wr *stop)
{
	for (; wr && wr != stop; wr = wr->next) {
		if (wr->opcode == IBV_WR_BIND_MW && wr->bind_mw.mw &&
		    wr->bind_mw.mw->type == IBV_MW_TYPE_2)
			bound(mqp, wr);
		else if (wr->opcode == IBV_WR_LOCAL_INV)
			migr_mw_local_inv(mqp->ctx, wr->invalidate_rkey);
	}
}

/* A LOCAL_INV of rkey (virtual) went to a lower QP */
void migr_mw_local_inv(struct migr_context *ctx, uint32_t rkey)
{
	struct migr_mw *mmw;

	pthread_mutex_lock(&ctx->rec.lock);
	mmw = mw2_by_key(ctx, rkey, false);
	if (mmw)
		mmw->qp = NULL;
	pthread_mutex_unlock(&ctx->rec.lock);
}

/*
 * An ibv_wr_local_inv() of the open batch: noted when the batch is
 * posted (migr_mw_batch_done()), forgotten if it is aborted
 */
int migr_mw_batch_inv(struct migr_qp *mqp, uint32_t rkey)
{
	if (mqp->wr.n_inv == mqp->wr.cap_inv) {
		unsigned int cap = mqp->wr.cap_inv ? 2 * mqp->wr.cap_inv : 4;
		uint32_t *n = realloc(mqp->wr.inv, cap * sizeof(*n));

		if (!n)
			return ENOMEM;
		mqp->wr.inv = n;
		mqp->wr.cap_inv = cap;
	}
	mqp->wr.inv[mqp->wr.n_inv++] = rkey;
	return 0;
}

void migr_mw_batch_done(struct migr_qp *mqp, bool posted)
{
	unsigned int i;

	for (i = 0; posted && i < mqp->wr.n_inv; i++)
		migr_mw_local_inv(mqp->ctx, mqp->wr.inv[i]);
	mqp->wr.n_inv = 0;
}

/*
 * A receive completion says the other end invalidated *rkey, a lower key
 * of ours: the application is shown its own (virtual) key, and with
 * unbind that window is taken as unbound
 */
void migr_mw_remote_inv(struct migr_context *ctx, uint32_t *rkey, bool unbind)
{
	struct migr_mw *mmw;
	uint32_t v;

	pthread_mutex_lock(&ctx->rec.lock);
	mmw = mw2_by_key(ctx, *rkey, true);
	if (mmw) {
		if (unbind)
			mmw->qp = NULL;
		if (migr_xlate_rekey(&ctx->xlate, MIGR_XLATE_RKEY, mmw->mw.rkey,
				     *rkey, &v))
			*rkey = v;
	}
	pthread_mutex_unlock(&ctx->rec.lock);
}

/* A QP is destroyed: the windows bound through it go with it */
void migr_mw_qp_gone(struct migr_qp *mqp)
{
	struct migr_context *ctx = mqp->ctx;
	struct migr_mw *mmw;

	free(mqp->wr.inv);
	mqp->wr.inv = NULL;
	if (!ctx->mw2)
		return;
	pthread_mutex_lock(&ctx->rec.lock);
	list_for_each (&ctx->rec.mws, mmw, entry)
		if (mmw->qp == mqp)
			mmw->qp = NULL;
	pthread_mutex_unlock(&ctx->rec.lock);
}

/* How many windows are bound through mqp (a partner's switch replaces it) */
unsigned int migr_mw_bound_through(struct migr_qp *mqp)
{
	struct migr_context *ctx = mqp->ctx;
	struct migr_mw *mmw;
	unsigned int n = 0;

	if (!ctx->mw2)
		return 0;
	pthread_mutex_lock(&ctx->rec.lock);
	list_for_each (&ctx->rec.mws, mmw, entry)
		n += mmw->qp == mqp;
	pthread_mutex_unlock(&ctx->rec.lock);
	return n;
}

/*
 * Why a switch cannot follow the type 2 windows, or NULL: an extended CQ
 * that reads no immediate data cannot show which key the other end
 * invalidated
 */
const char *migr_mw2_blocker(struct migr_context *ctx)
{
	struct migr_cq *mcq;

	if (!ctx->mw2)
		return NULL;
	list_for_each (&ctx->rec.cqs, mcq, entry)
		if (mcq->lower_ex && !mcq->lower_ex->read_imm_data)
			return "an extended CQ without IBV_WC_EX_WITH_IMM next to type 2 memory windows (the key a remote invalidation names would go unseen)";
	return NULL;
}
