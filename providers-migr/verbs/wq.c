// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Receive work queues and the RSS indirection tables built from them */
#include <errno.h>
#include <stdlib.h>

#include "datapath.h"
#include "migr.h"
#include "verbs.h"

static int post_wq_recv(void *lower, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return ibv_post_wq_recv(lower, wr, bad_wr);
}

static int migr_post_wq_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	const struct migr_xlate *x = &to_mcontext(wq->context)->xlate;
	struct migr_wq *mwq = to_mwq(wq);

	if (likely(!x->active))
		return ibv_post_wq_recv(mwq->lower, wr, bad_wr);
	return migr_post_recv_rewritten(x, mwq->lower, post_wq_recv, wr,
					bad_wr);
}

struct ibv_wq *migr_create_wq(struct ibv_context *context,
			      struct ibv_wq_init_attr *attr)
{
	struct ibv_wq_init_attr lattr = *attr;
	struct migr_wq *mwq;
	struct ibv_wq *wq;

	mwq = calloc(1, sizeof(*mwq));
	if (!mwq)
		return migr_fail(ENOMEM);

	/* ibv_create_wq() stores this in the lower WQ: events map back O(1) */
	lattr.wq_context = mwq;
	lattr.pd = lower_pd(attr->pd);
	lattr.cq = lower_cq(attr->cq);
	mwq->lower = ibv_create_wq(to_mcontext(context)->lower, &lattr);
	if (!mwq->lower) {
		free(mwq);
		return NULL;
	}
	/* Providers report the sizes they really allocated */
	attr->max_wr = lattr.max_wr;
	attr->max_sge = lattr.max_sge;

	/*
	 * wq_context, events_completed, mutex and cond are set by
	 * ibv_create_wq() once we return; calloc() left them valid meanwhile.
	 */
	wq = &mwq->wq;
	wq->context = context;
	wq->pd = attr->pd;
	wq->cq = attr->cq;
	/* Receives on a WQ complete with its number as the QPN */
	if (migr_xlate_born(&to_mcontext(context)->xlate, MIGR_XLATE_QPN,
			    mwq->lower->wq_num, &wq->wq_num)) {
		ibv_destroy_wq(mwq->lower);
		free(mwq);
		return migr_fail(ENOMEM);
	}
	wq->handle = mwq->lower->handle;
	wq->state = mwq->lower->state;
	wq->wq_type = mwq->lower->wq_type;
	wq->comp_mask = mwq->lower->comp_mask;
	wq->post_recv = migr_post_wq_recv;
	migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_WQ, 1);
	return wq;
}

int migr_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{
	struct migr_wq *mwq = to_mwq(wq);
	int ret;

	ret = ibv_modify_wq(mwq->lower, attr);
	if (!ret)
		wq->state = mwq->lower->state;
	return ret;
}

int migr_destroy_wq(struct ibv_wq *wq)
{
	struct migr_wq *mwq = to_mwq(wq);
	int ret;

	ret = ibv_destroy_wq(mwq->lower);
	if (ret)
		return ret;
	migr_xlate_gone(&to_mcontext(wq->context)->xlate, MIGR_XLATE_QPN,
			wq->wq_num);
	migr_record_unsupported(to_mcontext(wq->context), MIGR_UNSUP_WQ, -1);
	/* As a provider does: return once every event handed out was acked */
	migr_wait_acks(&wq->mutex, &wq->cond, &wq->events_completed,
		       mwq->async_events);
	free(mwq);
	return 0;
}

struct ibv_rwq_ind_table *
migr_create_rwq_ind_table(struct ibv_context *context,
			  struct ibv_rwq_ind_table_init_attr *init_attr)
{
	struct ibv_rwq_ind_table_init_attr lattr = *init_attr;
	struct migr_rwq_ind_table *mtbl;
	struct ibv_wq **lwqs = NULL;
	size_t i, n;

	mtbl = calloc(1, sizeof(*mtbl));
	if (!mtbl)
		return migr_fail(ENOMEM);

	/* Sizes the lower cannot take are its to refuse: don't allocate them */
	if (init_attr->ind_tbl && init_attr->log_ind_tbl_size < 32) {
		n = (size_t)1 << init_attr->log_ind_tbl_size;
		lwqs = calloc(n, sizeof(*lwqs));
		if (!lwqs) {
			free(mtbl);
			return migr_fail(ENOMEM);
		}
		for (i = 0; i < n; i++)
			lwqs[i] = lower_wq(init_attr->ind_tbl[i]);
		lattr.ind_tbl = lwqs;
	}

	mtbl->lower =
		ibv_create_rwq_ind_table(to_mcontext(context)->lower, &lattr);
	free(lwqs);
	if (!mtbl->lower) {
		free(mtbl);
		return NULL;
	}

	mtbl->tbl.context = context;
	mtbl->tbl.ind_tbl_handle = mtbl->lower->ind_tbl_handle;
	mtbl->tbl.ind_tbl_num = mtbl->lower->ind_tbl_num;
	mtbl->tbl.comp_mask = mtbl->lower->comp_mask;
	migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_WQ, 1);
	return &mtbl->tbl;
}

int migr_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table)
{
	struct migr_rwq_ind_table *mtbl = to_mrwq_ind_table(rwq_ind_table);
	int ret;

	ret = ibv_destroy_rwq_ind_table(mtbl->lower);
	if (ret)
		return ret;
	migr_record_unsupported(to_mcontext(rwq_ind_table->context),
				MIGR_UNSUP_WQ, -1);
	free(mtbl);
	return 0;
}
