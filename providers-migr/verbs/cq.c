// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Completion queues: creation, resizing, destruction (polls: datapath/cq_poll.c) */
#include <errno.h>
#include <stdlib.h>

#include "cq_watch.h"
#include "datapath.h"
#include "migr.h"
#include "verbs.h"

static void fill_cq(struct migr_cq *mcq, struct migr_context *ctx)
{
	if (ctx->replay)
		mcq->watch |= MIGR_WATCH_REPLAY;
	if (__atomic_load_n(&ctx->mw2, __ATOMIC_RELAXED))
		mcq->watch |= MIGR_WATCH_INV;
	/* The lower CQ carries our CQ as cq_context: events map back O(1) */
	mcq->vcq.cq.cqe = mcq->lower->cqe;
	mcq->vcq.cq.handle = mcq->lower->handle;
	pthread_mutex_init(&mcq->shadow_lock, NULL);
}

struct ibv_cq *migr_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel, int comp_vector)
{
	struct migr_cq *mcq;

	mcq = calloc(1, sizeof(*mcq));
	if (!mcq)
		return migr_fail(ENOMEM);
	ctl_enter(context);
	mcq->lower = ibv_create_cq(to_mcontext(context)->lower, cqe, mcq,
				   lower_channel(channel), comp_vector);
	if (!mcq->lower) {
		ctl_leave(context);
		free(mcq);
		return NULL;
	}
	fill_cq(mcq, to_mcontext(context));
	mcq->cqe_req = cqe;
	mcq->comp_vector = comp_vector;
	mcq->mch = channel ? to_mcomp_channel(channel) : NULL;
	migr_record_add(to_mcontext(context), &to_mcontext(context)->rec.cqs,
			&mcq->entry);
	ctl_leave(context);
	return &mcq->vcq.cq;
}

struct ibv_cq_ex *migr_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_init_attr_ex lattr = *attr;
	struct migr_cq *mcq;

	mcq = calloc(1, sizeof(*mcq));
	if (!mcq)
		return migr_fail(ENOMEM);

	lattr.cq_context = mcq;
	lattr.channel = lower_channel(attr->channel);
	/* replay counts completions per QP */
	if (to_mcontext(context)->replay)
		lattr.wc_flags |= IBV_WC_EX_WITH_QP_NUM;
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		lattr.parent_domain = lower_pd(attr->parent_domain);

	ctl_enter(context);
	mcq->lower_ex = ibv_create_cq_ex(to_mcontext(context)->lower, &lattr);
	if (!mcq->lower_ex) {
		ctl_leave(context);
		free(mcq);
		return NULL;
	}
	mcq->lower = ibv_cq_ex_to_cq(mcq->lower_ex);
	fill_cq(mcq, to_mcontext(context));
	mcq->vcq.cq_ex.comp_mask = mcq->lower_ex->comp_mask;
	migr_cq_ex_set_ops(mcq);
	mcq->ex_attr = *attr;
	mcq->cqe_req = attr->cqe;
	mcq->mch = attr->channel ? to_mcomp_channel(attr->channel) : NULL;
	if (migr_cq_ex_movable(attr))
		migr_record_add(to_mcontext(context),
				&to_mcontext(context)->rec.cqs, &mcq->entry);
	else
		migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_CQ_EX,
					1);
	ctl_leave(context);
	return &mcq->vcq.cq_ex;
}

int migr_destroy_cq(struct ibv_cq *cq)
{
	struct migr_cq *mcq = to_mcq(cq);
	int ret;

	ctl_enter(cq->context);
	ret = ibv_destroy_cq(mcq->lower);
	if (ret) {
		ctl_leave(cq->context);
		return ret;
	}
	if (mcq->lower_ex && !migr_cq_ex_movable(&mcq->ex_attr))
		migr_record_unsupported(to_mcontext(cq->context),
					MIGR_UNSUP_CQ_EX, -1);
	else
		migr_record_del(to_mcontext(cq->context), &mcq->entry);
	if (mcq->srq_mixed)
		migr_record_unsupported(to_mcontext(cq->context),
					MIGR_UNSUP_SRQ_CQ, -1);
	ctl_leave(cq->context);

	/* As a real provider does: return once every event was acked */
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed != mcq->comp_events ||
	       cq->async_events_completed != mcq->async_events)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);

	migr_shadow_free(mcq);
	migr_u32map_free(&mcq->srq_qps);
	free(mcq);
	return 0;
}

int migr_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct migr_cq *mcq = to_mcq(cq);
	int ret;

	ctl_enter(cq->context);
	ret = ibv_resize_cq(mcq->lower, cqe + mcq->senders);
	if (!ret) {
		mcq->cqe_req = cqe;
		cq->cqe = mcq->lower->cqe - mcq->senders;
	}
	ctl_leave(cq->context);
	return ret;
}

/*
 * A QP now sends its completions to cq: room for one more of migr's own.
 * An application that sized a CQ for exactly its WRs (perftest's latency
 * tests: one) would otherwise see it overflow when a drain marker
 * completes next to its own WR, and the marker's completion would be
 * lost (rxe: "queue full"). The caller holds the control path.
 */
void migr_cq_sender_add(struct ibv_cq *cq)
{
	struct migr_cq *mcq;

	if (!cq)
		return;
	mcq = to_mcq(cq);
	mcq->senders++;
	if (mcq->lower->cqe >= mcq->cqe_req + (int)mcq->senders)
		return;
	if (ibv_resize_cq(mcq->lower, mcq->cqe_req + mcq->senders))
		verbs_warn(
			&to_mcontext(cq->context)->vctx,
			"CQ of %d entries: no room added for migr's own completions (a switch may lose one)\n",
			mcq->cqe_req);
}

void migr_cq_sender_del(struct ibv_cq *cq)
{
	if (cq)
		to_mcq(cq)->senders--;
}

int migr_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
	return ibv_modify_cq(to_mcq(cq)->lower, attr);
}
