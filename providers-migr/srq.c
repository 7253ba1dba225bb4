// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Shared receive queues */
#include <errno.h>
#include <stdlib.h>

#include "migr.h"

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
	msrq->vsrq.cq =
		(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ? attr->cq : NULL;
	msrq->vsrq.xrcd =
		(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) && attr->xrcd ?
			&to_mxrcd(attr->xrcd)->vxrcd :
			NULL;
	if (msrq->vsrq.srq_type == IBV_SRQT_XRC &&
	    migr_xlate_born(&ctx_of(context)->xlate, MIGR_XLATE_SRQN,
			    lvsrq->srq_num, &msrq->vsrq.srq_num)) {
		ibv_destroy_srq(msrq->lower);
		free(msrq);
		return migr_fail(ENOMEM);
	}
	migr_record_unsupported(ctx_of(context), MIGR_UNSUP_SRQ, 1);
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

	msrq = calloc(1, sizeof(*msrq));
	if (!msrq)
		return migr_fail(ENOMEM);
	/* The lower SRQ carries our SRQ as context: events map back O(1) */
	lattr.srq_context = msrq;
	msrq->lower = ibv_create_srq(lower_pd(pd), &lattr);
	if (!msrq->lower) {
		free(msrq);
		return NULL;
	}
	attr->attr = lattr.attr;
	return finish_srq(msrq, pd->context, &attr_ex);
}

struct ibv_srq *migr_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr_ex lattr = *attr;
	struct migr_srq *msrq;

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
	msrq->lower = ibv_create_srq_ex(ctx_of(context)->lower, &lattr);
	if (!msrq->lower) {
		free(msrq);
		return NULL;
	}
	attr->attr = lattr.attr;
	return finish_srq(msrq, context, attr);
}

int migr_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		    int attr_mask)
{
	return ibv_modify_srq(lower_srq(srq), attr, attr_mask);
}

int migr_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return ibv_query_srq(lower_srq(srq), attr);
}

int migr_destroy_srq(struct ibv_srq *srq)
{
	struct migr_srq *msrq = to_msrq(srq);
	int ret;

	ret = ibv_destroy_srq(msrq->lower);
	if (ret)
		return ret;
	migr_record_unsupported(ctx_of(srq->context), MIGR_UNSUP_SRQ, -1);
	if (msrq->vsrq.srq_type == IBV_SRQT_XRC)
		migr_xlate_gone(&ctx_of(srq->context)->xlate, MIGR_XLATE_SRQN,
				msrq->vsrq.srq_num);
	migr_wait_acks(&srq->mutex, &srq->cond, &srq->events_completed,
		       msrq->async_events);
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
