// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The legacy post path. While nothing was remapped and a WR carries no
 * pointer to a migr object, the application's WR list goes to the lower
 * provider untouched. Otherwise WRs are copied in bounded batches onto the
 * stack with translated keys and lower objects: no locks, no allocation,
 * no system call is added.
 */
#include <errno.h>

#include "migr.h"

#define WR_BATCH 16
#define SGE_BATCH 256

struct sge_pool {
	struct ibv_sge sge[SGE_BATCH];
	unsigned int used;
};

/*
 * Point *out at the scatter list to hand down: the caller's own while
 * nothing was remapped, else a copy with translated lkeys. False when the
 * batch's pool has no room left for it.
 */
static bool xlate_sges(const struct migr_xlate *x, struct sge_pool *pool,
		       struct ibv_sge *sg, int num_sge, struct ibv_sge **out)
{
	int i;

	*out = sg;
	if (!x->active || num_sge <= 0)
		return true;
	if (pool->used + num_sge > SGE_BATCH)
		return false;
	*out = &pool->sge[pool->used];
	pool->used += num_sge;
	for (i = 0; i < num_sge; i++) {
		(*out)[i] = sg[i];
		(*out)[i].lkey = migr_lkey_to_phys(x, sg[i].lkey);
	}
	return true;
}

static void xlate_send_wr(struct migr_qp *mqp, struct ibv_send_wr *lwr,
			  const struct ibv_send_wr *wr)
{
	const struct migr_xlate *x = &mqp->ctx->xlate, *r = mqp->remote;

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		lwr->wr.rdma.rkey =
			migr_remote_rkey_to_phys(r, wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		lwr->wr.atomic.rkey =
			migr_remote_rkey_to_phys(r, wr->wr.atomic.rkey);
		break;
	case IBV_WR_BIND_MW:
		/*
		 * Providers name a window by its current rkey, which the
		 * application keeps up to date on its own migr window.
		 */
		lwr->bind_mw.mw = lower_mw(wr->bind_mw.mw);
		lwr->bind_mw.mw->rkey =
			migr_rkey_to_phys(x, wr->bind_mw.mw->rkey);
		lwr->bind_mw.rkey = migr_rkey_to_phys(x, wr->bind_mw.rkey);
		lwr->bind_mw.bind_info.mr = lower_mr(wr->bind_mw.bind_info.mr);
		break;
	case IBV_WR_LOCAL_INV:
		lwr->invalidate_rkey =
			migr_rkey_to_phys(x, wr->invalidate_rkey);
		break;
	case IBV_WR_SEND_WITH_INV:
		lwr->invalidate_rkey =
			migr_remote_rkey_to_phys(r, wr->invalidate_rkey);
		break;
	default:
		break;
	}

	switch (mqp->vqp.qp.qp_type) {
	case IBV_QPT_UD:
		lwr->wr.ud.ah = lower_ah(wr->wr.ud.ah);
		lwr->wr.ud.remote_qpn =
			migr_remote_qpn_to_phys(r, wr->wr.ud.remote_qpn);
		break;
	case IBV_QPT_XRC_SEND:
		lwr->qp_type.xrc.remote_srqn = migr_remote_srqn_to_phys(
			r, wr->qp_type.xrc.remote_srqn);
		break;
	default:
		break;
	}
}

static int post_send_rewritten(struct migr_qp *mqp, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad_wr)
{
	const struct migr_xlate *x = &mqp->ctx->xlate;
	struct ibv_send_wr lwr[WR_BATCH], *orig[WR_BATCH], *lbad;
	struct sge_pool pool;
	int n, ret;

	while (wr) {
		pool.used = 0;
		for (n = 0; wr && n < WR_BATCH; n++, wr = wr->next) {
			struct ibv_sge *sg;

			if (!xlate_sges(x, &pool, wr->sg_list, wr->num_sge,
					&sg)) {
				if (n)
					break;
				*bad_wr = wr;
				return EINVAL;
			}
			lwr[n] = *wr;
			lwr[n].sg_list = sg;
			lwr[n].next = &lwr[n + 1];
			xlate_send_wr(mqp, &lwr[n], wr);
			orig[n] = wr;
		}
		lwr[n - 1].next = NULL;

		ret = ibv_post_send(mqp->lower, lwr, &lbad);
		if (ret) {
			*bad_wr = orig[lbad - lwr];
			return ret;
		}
	}
	return 0;
}

static bool has_bind_mw(const struct ibv_send_wr *wr)
{
	for (; wr; wr = wr->next)
		if (unlikely(wr->opcode == IBV_WR_BIND_MW))
			return true;
	return false;
}

int migr_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct migr_qp *mqp = to_mqp(qp);

	if (likely(!mqp->rewrite_sends && !mqp->ctx->xlate.active &&
		   !mqp->remote->active) &&
	    !has_bind_mw(wr))
		return ibv_post_send(mqp->lower, wr, bad_wr);
	return post_send_rewritten(mqp, wr, bad_wr);
}

int migr_post_recv_rewritten(const struct migr_xlate *x, void *lower,
			     post_recv_fn post, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr lwr[WR_BATCH], *orig[WR_BATCH], *lbad;
	struct sge_pool pool;
	int n, ret;

	while (wr) {
		pool.used = 0;
		for (n = 0; wr && n < WR_BATCH; n++, wr = wr->next) {
			struct ibv_sge *sg;

			if (!xlate_sges(x, &pool, wr->sg_list, wr->num_sge,
					&sg)) {
				if (n)
					break;
				*bad_wr = wr;
				return EINVAL;
			}
			lwr[n] = *wr;
			lwr[n].sg_list = sg;
			lwr[n].next = &lwr[n + 1];
			orig[n] = wr;
		}
		lwr[n - 1].next = NULL;

		ret = post(lower, lwr, &lbad);
		if (ret) {
			*bad_wr = orig[lbad - lwr];
			return ret;
		}
	}
	return 0;
}

static int post_qp_recv(void *lower, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return ibv_post_recv(lower, wr, bad_wr);
}

static int post_srq_recv(void *lower, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	return ibv_post_srq_recv(lower, wr, bad_wr);
}

int migr_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct migr_qp *mqp = to_mqp(qp);

	if (likely(!mqp->ctx->xlate.active))
		return ibv_post_recv(mqp->lower, wr, bad_wr);
	return migr_post_recv_rewritten(&mqp->ctx->xlate, mqp->lower,
					post_qp_recv, wr, bad_wr);
}

int migr_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	const struct migr_xlate *x = &ctx_of(srq->context)->xlate;
	struct migr_srq *msrq = to_msrq(srq);

	if (likely(!x->active))
		return ibv_post_srq_recv(msrq->lower, wr, bad_wr);
	return migr_post_recv_rewritten(x, msrq->lower, post_srq_recv, wr,
					bad_wr);
}
