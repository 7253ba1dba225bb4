// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues. A basic SRQ with a PD can move in a switch: its
 * RECVs are logged like a QP's (post.c), and what it used up is counted
 * on the CQs of the QPs that receive through it (migr_cq_watch()).
 */
#include <errno.h>
#include <stdlib.h>

#include "cq_watch.h"
#include "datapath.h"
#include "migr.h"
#include "verbs.h"

/* What a switch can rebuild: a basic SRQ on a PD, never resized */
static bool srq_movable(const struct ibv_srq_init_attr_ex *attr)
{
	return (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) &&
	       (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
		attr->srq_type == IBV_SRQT_BASIC);
}

static void srq_unsupported(struct migr_srq *msrq, int delta)
{
	migr_record_unsupported(to_mcontext(msrq->vsrq.srq.context),
				msrq->unsup, delta);
}

/*
 * The CQ learns the QP's lower QPN is its SRQ's; a CQ that cannot hold it
 * cannot tell its completions apart and refuses a switch. rec.lock held.
 */
static void srq_qps_add(struct migr_cq *rcq, struct migr_qp *mqp)
{
	mqp->srq_lower_qpn = mqp->lower->qp_num;
	if (migr_u32map_put(&rcq->srq_qps, mqp->srq_lower_qpn, 1) &&
	    !rcq->srq_mixed) {
		migr_record_unsupported(mqp->ctx, MIGR_UNSUP_SRQ_CQ, 1);
		rcq->srq_mixed = true;
	}
}

/* The receive CQ of a QP that receives through an SRQ, or NULL */
static struct migr_cq *srq_rcq(struct migr_qp *mqp)
{
	struct ibv_qp *qp = &mqp->vqp.qp;

	if (!qp->srq || !qp->recv_cq || qp->qp_type == IBV_QPT_XRC_SEND)
		return NULL;
	return to_mcq(qp->recv_cq);
}

/*
 * A new QP receives through its SRQ, or through its own queue, on its
 * receive CQ: the CQ knows which QPs are the SRQ's (by lower QPN); a CQ
 * serving two SRQs cannot count what each used up.
 */
void migr_srq_note_qp(struct migr_qp *mqp)
{
	struct ibv_qp *qp = &mqp->vqp.qp;
	struct migr_srq *msrq = qp->srq ? to_msrq(qp->srq) : NULL;
	struct migr_cq *rcq;

	if (!qp->recv_cq || qp->qp_type == IBV_QPT_XRC_SEND)
		return;
	rcq = to_mcq(qp->recv_cq);
	pthread_mutex_lock(&mqp->ctx->rec.lock);
	if (qp->qp_type == IBV_QPT_UD)
		rcq->watch |= MIGR_WATCH_UD;
	if (!msrq) {
		rcq->recv_plain = true;
	} else if (rcq->srq_fed && rcq->srq_fed != msrq) {
		if (!rcq->srq_mixed)
			migr_record_unsupported(mqp->ctx, MIGR_UNSUP_SRQ_CQ, 1);
		rcq->srq_mixed = true;
	} else {
		rcq->srq_fed = msrq;
		rcq->watch |= MIGR_WATCH_SRQ;
		srq_qps_add(rcq, mqp);
	}
	pthread_mutex_unlock(&mqp->ctx->rec.lock);
}

/* The QP is destroyed: its completions are all in */
void migr_srq_forget_qp(struct migr_qp *mqp)
{
	struct migr_cq *rcq = srq_rcq(mqp);

	if (!rcq)
		return;
	pthread_mutex_lock(&mqp->ctx->rec.lock);
	migr_u32map_del(&rcq->srq_qps, mqp->srq_lower_qpn);
	pthread_mutex_unlock(&mqp->ctx->rec.lock);
}

/* The QP has a new lower QP (a switch): its completions carry its number */
void migr_srq_rekey_qp(struct migr_qp *mqp)
{
	struct migr_cq *rcq = srq_rcq(mqp);

	if (!rcq)
		return;
	pthread_mutex_lock(&mqp->ctx->rec.lock);
	migr_u32map_del(&rcq->srq_qps, mqp->srq_lower_qpn);
	srq_qps_add(rcq, mqp);
	pthread_mutex_unlock(&mqp->ctx->rec.lock);
}

static struct ibv_srq *finish_srq(struct migr_srq *msrq,
				  struct ibv_context *context,
				  const struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq = &msrq->vsrq.srq;
	struct verbs_srq *lvsrq =
		container_of(msrq->lower, struct verbs_srq, srq);

	srq->context = context;
	srq->srq_context = attr->srq_context;
	srq->pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : NULL;
	srq->handle = msrq->lower->handle;
	srq->events_completed = 0;
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);

	msrq->vsrq.srq_type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ?
				      attr->srq_type :
				      IBV_SRQT_BASIC;
	msrq->vsrq.cq = (attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ? attr->cq :
								   NULL;
	msrq->vsrq.xrcd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) &&
					  attr->xrcd ?
				  &to_mxrcd(attr->xrcd)->vxrcd :
				  NULL;
	if (msrq->vsrq.srq_type == IBV_SRQT_XRC &&
	    migr_xlate_born(&to_mcontext(context)->xlate, MIGR_XLATE_SRQN,
			    lvsrq->srq_num, &msrq->vsrq.srq_num)) {
		ibv_destroy_srq(msrq->lower);
		free(msrq);
		return migr_fail(ENOMEM);
	}
	pthread_mutex_init(&msrq->hold.lock, NULL);
	migr_queue_owner_init(&msrq->owner);
	msrq->hold.tail = &msrq->hold.wrs;
	msrq->max_wr = attr->attr.max_wr;
	msrq->max_sge = attr->attr.max_sge;
	msrq->limit = attr->attr.srq_limit;
	msrq->unsup = srq_movable(attr) ? -1 : MIGR_UNSUP_SRQ;
	if (msrq->unsup < 0 &&
	    migr_rlog_init(&msrq->rlog, msrq->max_wr, msrq->max_sge)) {
		ibv_destroy_srq(msrq->lower);
		free(msrq);
		return migr_fail(ENOMEM);
	}
	if (msrq->unsup < 0)
		migr_record_add(to_mcontext(context),
				&to_mcontext(context)->rec.srqs, &msrq->entry);
	else
		srq_unsupported(msrq, 1);
	return srq;
}

struct ibv_srq *migr_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr lattr = *attr;
	struct ibv_srq_init_attr_ex attr_ex = {
		.srq_context = attr->srq_context,
		.comp_mask = IBV_SRQ_INIT_ATTR_PD,
		.pd = pd,
	};
	struct migr_srq *msrq;
	struct ibv_srq *srq;

	msrq = calloc(1, sizeof(*msrq));
	if (!msrq)
		return migr_fail(ENOMEM);
	/* The lower SRQ carries our SRQ as context: events map back O(1) */
	lattr.srq_context = msrq;
	ctl_enter(pd->context);
	msrq->lower = ibv_create_srq(lower_pd(pd), &lattr);
	if (!msrq->lower) {
		ctl_leave(pd->context);
		free(msrq);
		return NULL;
	}
	attr->attr = lattr.attr;
	attr_ex.attr = lattr.attr;
	srq = finish_srq(msrq, pd->context, &attr_ex);
	ctl_leave(pd->context);
	return srq;
}

struct ibv_srq *migr_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr_ex lattr = *attr;
	struct migr_srq *msrq;
	struct ibv_srq *srq;

	msrq = calloc(1, sizeof(*msrq));
	if (!msrq)
		return migr_fail(ENOMEM);
	lattr.srq_context = msrq;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD)
		lattr.pd = lower_pd(attr->pd);
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD)
		lattr.xrcd = lower_xrcd(attr->xrcd);
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ)
		lattr.cq = lower_cq(attr->cq);
	ctl_enter(context);
	msrq->lower = ibv_create_srq_ex(to_mcontext(context)->lower, &lattr);
	if (!msrq->lower) {
		ctl_leave(context);
		free(msrq);
		return NULL;
	}
	attr->attr = lattr.attr;
	srq = finish_srq(msrq, context, attr);
	ctl_leave(context);
	return srq;
}

int migr_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		    int attr_mask)
{
	struct migr_srq *msrq = to_msrq(srq);
	int ret;

	ctl_enter(srq->context);
	ret = ibv_modify_srq(msrq->lower, attr, attr_mask);
	if (!ret && (attr_mask & IBV_SRQ_LIMIT))
		__atomic_store_n(&msrq->limit, attr->srq_limit,
				 __ATOMIC_RELAXED);
	/* A resized SRQ outgrows its RECV log: it cannot move any more */
	if (!ret && (attr_mask & IBV_SRQ_MAX_WR) && msrq->unsup < 0) {
		migr_record_del(to_mcontext(srq->context), &msrq->entry);
		msrq->unsup = MIGR_UNSUP_SRQ;
		srq_unsupported(msrq, 1);
	}
	ctl_leave(srq->context);
	return ret;
}

int migr_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return ibv_query_srq(lower_srq(srq), attr);
}

/* CQs that received for the SRQ count for none now */
static void forget_fed_cqs(struct migr_context *ctx, struct migr_srq *msrq)
{
	struct migr_cq *mcq;

	pthread_mutex_lock(&ctx->rec.lock);
	list_for_each (&ctx->rec.cqs, mcq, entry) {
		if (mcq->srq_fed != msrq)
			continue;
		mcq->srq_fed = NULL;
		mcq->watch &= ~MIGR_WATCH_SRQ;
		mcq->srq_recvs = 0;
	}
	pthread_mutex_unlock(&ctx->rec.lock);
}

int migr_destroy_srq(struct ibv_srq *srq)
{
	struct migr_context *ctx = to_mcontext(srq->context);
	struct migr_srq *msrq = to_msrq(srq);
	int ret;

	ctl_enter(srq->context);
	ret = ibv_destroy_srq(msrq->lower);
	if (ret) {
		ctl_leave(srq->context);
		return ret;
	}
	if (msrq->unsup < 0)
		migr_record_del(ctx, &msrq->entry);
	else
		srq_unsupported(msrq, -1);
	forget_fed_cqs(ctx, msrq);
	ctl_leave(srq->context);
	if (msrq->vsrq.srq_type == IBV_SRQT_XRC)
		migr_xlate_gone(&ctx->xlate, MIGR_XLATE_SRQN,
				msrq->vsrq.srq_num);
	migr_wait_acks(&srq->mutex, &srq->cond, &srq->events_completed,
		       msrq->async_events);
	while (msrq->hold.wrs) {
		struct migr_held_wr *h = msrq->hold.wrs;

		msrq->hold.wrs = h->next;
		free(h);
	}
	migr_ring_free(&msrq->rlog.ring);
	free(msrq);
	return 0;
}

int migr_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	struct migr_srq *msrq = to_msrq(srq);
	int ret;

	ret = ibv_get_srq_num(msrq->lower, srq_num);
	if (!ret && msrq->vsrq.srq_type == IBV_SRQT_XRC)
		*srq_num = msrq->vsrq.srq_num;
	return ret;
}

int migr_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
		      struct ibv_ops_wr **bad_op)
{
	/* Tag matching ops carry no keys migr translates yet: forward */
	return ibv_post_srq_ops(lower_srq(srq), op, bad_op);
}
