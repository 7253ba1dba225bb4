// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migr's record of the control path: the live objects of a context and
 * what they were created and modified with, so that a switch can build
 * them again on another device. Destroyed objects leave the record; nothing
 * is replayed that the application undid. Objects a switch cannot rebuild
 * yet are only counted, so the switch can refuse before touching anything.
 */
#include "migr.h"

static const char *const unsup_names[MIGR_UNSUP_NUM] = {
	[MIGR_UNSUP_SRQ] =
		"an XRC, tag-matching, PD-less or resized shared receive queue",
	[MIGR_UNSUP_SRQ_CQ] = "a CQ receiving for QPs on two different SRQs",
	[MIGR_UNSUP_XRCD] = "an XRC domain",
	[MIGR_UNSUP_TD] = "a thread domain",
	[MIGR_UNSUP_PARENT_DOMAIN] = "a parent domain",
	[MIGR_UNSUP_IMPORTED] = "an imported object",
	[MIGR_UNSUP_WQ] = "a work queue or RSS table",
	[MIGR_UNSUP_FLOW] = "a flow steering rule or action",
	[MIGR_UNSUP_COUNTERS] = "a counters object",
	[MIGR_UNSUP_CQ_EX] =
		"an extended CQ reading timestamps, VLANs, flow tags or tag-matching data, or in a parent domain",
	[MIGR_UNSUP_QP_EX] =
		"a QP whose ibv_wr_* operations include TSO, MW binds, atomic writes or flushes",
	[MIGR_UNSUP_QP_TYPE] = "a QP of a type other than RC or UD",
	[MIGR_UNSUP_MR_KIND] = "a dmabuf or null MR",
};

void migr_record_init(struct migr_record *rec)
{
	pthread_mutex_init(&rec->lock, NULL);
	list_head_init(&rec->pds);
	list_head_init(&rec->dms);
	list_head_init(&rec->mrs);
	list_head_init(&rec->mws);
	list_head_init(&rec->channels);
	list_head_init(&rec->cqs);
	list_head_init(&rec->srqs);
	list_head_init(&rec->qps);
	list_head_init(&rec->ahs);
}

void migr_record_add(struct migr_context *ctx, struct list_head *list,
		     struct list_node *node)
{
	pthread_mutex_lock(&ctx->rec.lock);
	list_add_tail(list, node);
	pthread_mutex_unlock(&ctx->rec.lock);
}

void migr_record_del(struct migr_context *ctx, struct list_node *node)
{
	pthread_mutex_lock(&ctx->rec.lock);
	list_del(node);
	pthread_mutex_unlock(&ctx->rec.lock);
}

void migr_record_unsupported(struct migr_context *ctx, enum migr_unsup what,
			     int delta)
{
	__atomic_add_fetch(&ctx->rec.unsupported[what], delta,
			   __ATOMIC_RELAXED);
}

/* The first thing that stops a switch, for its one-line error; or NULL */
const char *migr_record_blocker(struct migr_context *ctx)
{
	int i;

	for (i = 0; i < MIGR_UNSUP_NUM; i++)
		if (__atomic_load_n(&ctx->rec.unsupported[i], __ATOMIC_RELAXED))
			return unsup_names[i];
	return NULL;
}

/* Merge what a successful ibv_modify_qp() set into the QP's record */
void migr_record_modify_qp(struct migr_qp *mqp, const struct ibv_qp_attr *attr,
			   int mask)
{
	struct ibv_qp_attr *r = &mqp->attr;

	if (mask & IBV_QP_STATE)
		r->qp_state = attr->qp_state;
	if (mask & IBV_QP_CUR_STATE)
		r->cur_qp_state = attr->cur_qp_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		r->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IBV_QP_ACCESS_FLAGS)
		r->qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		r->pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		r->port_num = attr->port_num;
	if (mask & IBV_QP_QKEY)
		r->qkey = attr->qkey;
	if (mask & IBV_QP_AV)
		r->ah_attr = attr->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		r->path_mtu = attr->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		r->timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		r->retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		r->rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		r->rq_psn = attr->rq_psn;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		r->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		r->alt_ah_attr = attr->alt_ah_attr;
		r->alt_pkey_index = attr->alt_pkey_index;
		r->alt_port_num = attr->alt_port_num;
		r->alt_timeout = attr->alt_timeout;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		r->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		r->sq_psn = attr->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		r->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		r->path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_CAP)
		r->cap = attr->cap;
	if (mask & IBV_QP_DEST_QPN)
		r->dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RATE_LIMIT)
		r->rate_limit = attr->rate_limit;
	/* A reset forgets the connection */
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
		mqp->attr_mask = IBV_QP_STATE;
	else
		mqp->attr_mask |= mask;
}
