// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Queue pairs: the control path (create, modify, query, destroy) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "verbs.h"

static struct migr_qp *alloc_qp(struct ibv_context *context)
{
	struct migr_qp *mqp = calloc(1, sizeof(*mqp));

	if (!mqp)
		return migr_fail(ENOMEM);
	mqp->ctx = to_mcontext(context);
	mqp->replay.slot = -1;
	return mqp;
}

/* The lower attributes: same request, lower objects, our QP as context */
void migr_qp_lower_attr(struct ibv_qp_init_attr_ex *lattr,
			const struct ibv_qp_init_attr_ex *attr,
			struct migr_qp *mqp)
{
	*lattr = *attr;
	lattr->qp_context = mqp;
	lattr->send_cq = lower_cq(attr->send_cq);
	lattr->recv_cq = lower_cq(attr->recv_cq);
	lattr->srq = lower_srq(attr->srq);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_PD)
		lattr->pd = lower_pd(attr->pd);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD)
		lattr->xrcd = lower_xrcd(attr->xrcd);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)
		lattr->rwq_ind_tbl =
			attr->rwq_ind_tbl ?
				to_mrwq_ind_table(attr->rwq_ind_tbl)->lower :
				NULL;
}

/*
 * Room for one send WR of migr's own (a drain marker) on top of what the
 * application asked for: a program that keeps its send queue full, or a
 * receiver that asked for none (qperf's servers), would leave the marker
 * no room. Only QP types a switch moves; without it if the device cannot.
 */
#define OWN_SEND_WRS 1

static void reserve_own_wrs(struct migr_qp *mqp, struct ibv_qp_cap *cap,
			    enum ibv_qp_type type)
{
	mqp->own_wrs = 0;
	/* a request the device must refuse stays as it was (no wrap to 0) */
	if ((type != IBV_QPT_RC && type != IBV_QPT_UD) ||
	    cap->max_send_wr > UINT32_MAX - OWN_SEND_WRS)
		return;
	mqp->own_wrs = OWN_SEND_WRS;
	cap->max_send_wr += OWN_SEND_WRS;
}

/* The lower QP could not take the room: as the application asked */
static bool unreserve_own_wrs(struct migr_qp *mqp, struct ibv_qp_cap *cap)
{
	if (!mqp->own_wrs)
		return false;
	cap->max_send_wr -= mqp->own_wrs;
	mqp->own_wrs = 0;
	return true;
}

/* What the lower allocated, as the application may use it */
void migr_qp_cap_to_app(const struct migr_qp *mqp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr -= cap->max_send_wr >= mqp->own_wrs ? mqp->own_wrs :
							       cap->max_send_wr;
}

/* The lower QP for the request in lattr, with room for migr's own WRs */
struct ibv_qp *migr_qp_create_lower(struct migr_qp *mqp,
				    struct ibv_context *lower_ctx,
				    struct ibv_qp_init_attr_ex *lattr)
{
	struct ibv_qp *qp;

	reserve_own_wrs(mqp, &lattr->cap, lattr->qp_type);
	qp = ibv_create_qp_ex(lower_ctx, lattr);
	if (!qp && unreserve_own_wrs(mqp, &lattr->cap))
		qp = ibv_create_qp_ex(lower_ctx, lattr);
	return qp;
}

/*
 * Take a new lower RC QP through INIT and RTR to RTS (or the state r names,
 * if earlier) with r's attributes, connected to lower QP dest. Returns the
 * last state tried in *last (the one that failed, on error).
 */
int migr_lower_connect(struct ibv_qp *lower, const struct ibv_qp_attr *r,
		       uint32_t dest, enum ibv_qp_state *last)
{
	struct ibv_qp_attr a = {};
	int ret;

	a.qp_state = *last = IBV_QPS_INIT;
	a.pkey_index = r->pkey_index;
	a.port_num = r->port_num;
	a.qp_access_flags = r->qp_access_flags;
	ret = ibv_modify_qp(lower, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS);
	if (ret || r->qp_state == IBV_QPS_INIT)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = *last = IBV_QPS_RTR;
	a.ah_attr = r->ah_attr;
	a.path_mtu = r->path_mtu;
	a.dest_qp_num = dest;
	a.rq_psn = r->rq_psn;
	a.max_dest_rd_atomic = r->max_dest_rd_atomic;
	a.min_rnr_timer = r->min_rnr_timer;
	ret = ibv_modify_qp(lower, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	if (ret || r->qp_state == IBV_QPS_RTR)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = *last = IBV_QPS_RTS;
	a.sq_psn = r->sq_psn;
	a.timeout = r->timeout;
	a.retry_cnt = r->retry_cnt;
	a.rnr_retry = r->rnr_retry;
	a.max_rd_atomic = r->max_rd_atomic;
	return ibv_modify_qp(lower, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

static bool qp_switchable(const struct migr_qp *mqp)
{
	return (mqp->vqp.qp.qp_type == IBV_QPT_RC ||
		mqp->vqp.qp.qp_type == IBV_QPT_UD) &&
	       (!mqp->lower_ex || migr_qp_ex_movable(mqp->init.send_ops_flags));
}

/*
 * With MIGR_REPLAY, an RC QP keeps its send WRs; ibv_wr_*() batches go
 * through ibv_post_send() to be logged (qp_ex.c), so a QP with builders
 * that cannot be written down as legacy WRs is not logged. A QP that
 * cannot have a log runs without: a switch rolls back instead.
 */
static void log_sends(struct migr_qp *mqp, const struct ibv_qp_cap *cap)
{
	if (!mqp->ctx->replay || mqp->vqp.qp.qp_type != IBV_QPT_RC ||
	    (mqp->lower_ex && !migr_qp_ex_movable(mqp->init.send_ops_flags)))
		return;
	if (migr_slog_init(&mqp->slog, cap, mqp->init.sq_sig_all) ||
	    migr_replay_track(mqp)) {
		verbs_warn(&mqp->ctx->vctx,
			   "QP 0x%x: no send log, it will not be replayed\n",
			   mqp->vqp.qp.qp_num);
		migr_replay_untrack(mqp);
		migr_ring_free(&mqp->slog.ring);
	}
}

/* Fill what a provider fills in a new QP, from the lower one */
static struct ibv_qp *finish_qp(struct migr_qp *mqp,
				const struct ibv_qp_init_attr_ex *attr,
				const struct ibv_qp_cap *cap)
{
	struct ibv_qp *qp = &mqp->vqp.qp, *lower = mqp->lower;

	qp->context = &mqp->ctx->vctx.context;
	qp->qp_context = attr->qp_context;
	qp->pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_type = lower->qp_type;
	qp->state = lower->state;
	qp->handle = lower->handle;
	if (migr_rlog_init(&mqp->rlog, cap->max_recv_wr, cap->max_recv_sge) ||
	    migr_xlate_born(&mqp->ctx->xlate, MIGR_XLATE_QPN, lower->qp_num,
			    &qp->qp_num)) {
		ibv_destroy_qp(lower);
		migr_ring_free(&mqp->rlog.ring);
		free(mqp);
		return migr_fail(ENOMEM);
	}
	pthread_mutex_init(&mqp->hold.lock, NULL);
	migr_queue_owner_init(&mqp->sq);
	migr_queue_owner_init(&mqp->rq);
	mqp->hold.tail = &mqp->hold.wrs;
	mqp->wr.rec_tail = &mqp->wr.rec;
	mqp->init = *attr;
	mqp->attr.qp_state = IBV_QPS_RESET;
	mqp->attr_mask = IBV_QP_STATE;
	/* Until a partner is known to have moved, its values are its own */
	mqp->remote = &mqp->ctx->remote;
	qp->events_completed = 0;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);

	if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD && attr->xrcd) {
		mqp->vqp.comp_mask |= VERBS_QP_XRCD;
		mqp->vqp.xrcd = &to_mxrcd(attr->xrcd)->vxrcd;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		mqp->lower_ex = ibv_qp_to_qp_ex(lower);
		if (mqp->lower_ex)
			migr_qp_ex_set_ops(mqp);
	}
	mqp->rewrite_sends = qp->qp_type == IBV_QPT_UD;
	log_sends(mqp, cap);
	migr_qp_update_slow(mqp);
	migr_srq_note_qp(mqp);
	migr_cq_sender_add(attr->send_cq);
	if (qp_switchable(mqp))
		migr_record_add(mqp->ctx, &mqp->ctx->rec.qps, &mqp->entry);
	else
		migr_record_unsupported(mqp->ctx,
					mqp->lower_ex ? MIGR_UNSUP_QP_EX :
							MIGR_UNSUP_QP_TYPE,
					1);
	return qp;
}

struct ibv_qp *migr_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp_init_attr lattr;
	struct ibv_qp_init_attr_ex lex;
	struct migr_qp *mqp;
	struct ibv_qp *qp;

	mqp = alloc_qp(pd->context);
	if (!mqp)
		return NULL;
	ctl_enter(pd->context);
	migr_qp_lower_attr(&lex, &attr_ex, mqp);
	lattr = (struct ibv_qp_init_attr){
		.qp_context = lex.qp_context,
		.send_cq = lex.send_cq,
		.recv_cq = lex.recv_cq,
		.srq = lex.srq,
		.cap = lex.cap,
		.qp_type = lex.qp_type,
		.sq_sig_all = lex.sq_sig_all,
	};
	reserve_own_wrs(mqp, &lattr.cap, lattr.qp_type);
	mqp->lower = ibv_create_qp(lex.pd, &lattr);
	if (!mqp->lower && unreserve_own_wrs(mqp, &lattr.cap))
		mqp->lower = ibv_create_qp(lex.pd, &lattr);
	if (!mqp->lower) {
		ctl_leave(pd->context);
		free(mqp);
		return NULL;
	}
	/* Providers report the capabilities they really allocated */
	migr_qp_cap_to_app(mqp, &lattr.cap);
	attr->cap = lattr.cap;
	qp = finish_qp(mqp, &attr_ex, &lattr.cap);
	ctl_leave(pd->context);
	return qp;
}

struct ibv_qp *migr_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex lattr, req = *attr;
	struct migr_qp *mqp;
	struct ibv_qp *qp;

	mqp = alloc_qp(context);
	if (!mqp)
		return NULL;
	ctl_enter(context);
	migr_qp_lower_attr(&lattr, attr, mqp);
	mqp->lower = migr_qp_create_lower(mqp, mqp->ctx->lower, &lattr);
	if (!mqp->lower) {
		ctl_leave(context);
		free(mqp);
		return NULL;
	}
	migr_qp_cap_to_app(mqp, &lattr.cap);
	attr->cap = lattr.cap;
	qp = finish_qp(mqp, &req, &lattr.cap);
	ctl_leave(context);
	return qp;
}

struct ibv_qp *migr_open_qp(struct ibv_context *context,
			    struct ibv_qp_open_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.qp_type = attr->qp_type,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = attr->xrcd,
	};
	struct ibv_qp_open_attr lattr = *attr;
	struct migr_qp *mqp;

	mqp = alloc_qp(context);
	if (!mqp)
		return NULL;
	lattr.xrcd = lower_xrcd(attr->xrcd);
	lattr.qp_context = mqp;
	lattr.qp_num = migr_remote_qpn_to_phys(&mqp->ctx->remote, attr->qp_num);
	mqp->lower = ibv_open_qp(mqp->ctx->lower, &lattr);
	if (!mqp->lower) {
		free(mqp);
		return NULL;
	}
	return finish_qp(mqp, &attr_ex, &attr_ex.cap);
}

/*
 * Is the partner named by attr a QP of this process (in peer, a context on
 * the same device)? Its GID is then one of our device's; its values are
 * then looked up in peer's tables.
 */
static bool partner_is_self(struct migr_qp *mqp, struct migr_context *peer,
			    const struct ibv_qp_attr *attr)
{
	/* IB without GRH counts as this device: same subnet, LID-routed */
	return peer && migr_ah_local(mqp->ctx, &attr->ah_attr);
}

/* The agent's hooks (verbs.h): a connect asks it of its peer */
const struct migr_agent_hooks *migr_agent;

/*
 * A connection to a QP in another process: what that process says of it
 * (the agent's fetch, partner_call.c), asked without our control path held, since it may be
 * asking us the same at once. NULL: the application's values hold.
 */
static struct migr_xlate *fetch_peer(struct migr_qp *mqp,
				     const struct ibv_qp_attr *attr,
				     uint32_t our_phys, union ibv_gid *gid)
{
	struct migr_xlate *x;
	char err[512];

	if (!migr_agent || (mqp->vqp.qp.qp_type != IBV_QPT_RC &&
			    mqp->vqp.qp.qp_type != IBV_QPT_UC))
		return NULL;
	ctl_leave(mqp->vqp.qp.context);
	x = migr_agent->fetch(mqp, attr, our_phys, gid, err, sizeof(err));
	if (!x && errno)
		verbs_debug(&mqp->ctx->vctx,
			    "QP 0x%x: nothing learned of its peer 0x%x: %s\n",
			    mqp->vqp.qp.qp_num, attr->dest_qp_num, err);
	ctl_enter(mqp->vqp.qp.context);
	return x;
}

/*
 * Our keys to the peer our QP now faces (the agent's give), if it asked for
 * them before we connected and was told to wait: without our control
 * path held, as fetch_peer()
 */
static void give_peer(struct migr_qp *mqp, uint32_t dest_qpn,
		      const union ibv_gid *dgid, uint32_t our_phys,
		      uint32_t partner_phys)
{
	char err[512];

	if (migr_agent && migr_agent->give(mqp, dest_qpn, dgid, our_phys,
					   partner_phys, err, sizeof(err)))
		verbs_info(
			&mqp->ctx->vctx,
			"QP 0x%x: could not give its keys to its peer 0x%x: %s\n",
			mqp->vqp.qp.qp_num, dest_qpn, err);
}

int migr_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct migr_qp *mqp = to_mqp(qp);
	struct ibv_qp_attr lattr = *attr, moved;
	struct migr_context *peer = NULL;
	bool connect = (attr_mask & IBV_QP_DEST_QPN) && (attr_mask & IBV_QP_AV);
	struct migr_xlate *fetched = NULL;
	uint32_t our_phys = 0;
	bool give = false;
	int ret;

	if (connect)
		peer = migr_agent ? migr_agent->local_peer(mqp->ctx,
							   attr->dest_qp_num) :
				    NULL;
	ctl_enter(qp->context);
	if (connect) {
		mqp->self = partner_is_self(mqp, peer, attr);
		/* a GID the peer gave out before it moved: the one it has now */
		if (!mqp->self && mqp->lower)
			fetched = fetch_peer(mqp, attr, mqp->lower->qp_num,
					     &lattr.ah_attr.grh.dgid);
		mqp->remote = mqp->self ? &peer->xlate :
			      fetched	? fetched :
					  &mqp->ctx->remote;
	}
	/* The application names its partner by the partner's virtual QPN */
	if (attr_mask & IBV_QP_DEST_QPN)
		lattr.dest_qp_num =
			migr_remote_qpn_to_phys(mqp->remote, attr->dest_qp_num);
	ret = ibv_modify_qp(mqp->lower, &lattr, attr_mask);
	if (!ret) {
		if (attr_mask & IBV_QP_DEST_QPN)
			mqp->partner.dest_phys = lattr.dest_qp_num;
		/*
		 * the record keeps the application's values (virtual QPN),
		 * but the partner's GID as it is now, as a partner's switch
		 * does (partner_serve.c)
		 */
		moved = *attr;
		if (attr_mask & IBV_QP_AV)
			moved.ah_attr.grh.dgid = lattr.ah_attr.grh.dgid;
		migr_record_modify_qp(mqp, &moved, attr_mask);
		migr_qp_update_slow(mqp);
		/* a peer that connected first could not fetch our keys */
		give = connect && !mqp->self &&
		       (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_UC);
		our_phys = mqp->lower->qp_num;
	}
	ctl_leave(qp->context);
	if (give)
		give_peer(mqp, attr->dest_qp_num, &lattr.ah_attr.grh.dgid,
			  our_phys, lattr.dest_qp_num);
	return ret;
}

int migr_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct migr_qp *mqp = to_mqp(qp);
	int ret;

	ret = ibv_query_qp(mqp->lower, attr, attr_mask, init_attr);
	if (ret)
		return ret;
	migr_qp_cap_to_app(mqp, &attr->cap);
	migr_qp_cap_to_app(mqp, &init_attr->cap);

	attr->dest_qp_num =
		migr_remote_qpn_to_virt(mqp->remote, attr->dest_qp_num);
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	return 0;
}

int migr_destroy_qp(struct ibv_qp *qp)
{
	struct migr_qp *mqp = to_mqp(qp);
	int ret;

	ctl_enter(qp->context);
	ret = ibv_destroy_qp(mqp->lower);
	if (ret) {
		ctl_leave(qp->context);
		return ret;
	}
	if (qp_switchable(mqp))
		migr_record_del(mqp->ctx, &mqp->entry);
	else
		migr_record_unsupported(mqp->ctx,
					mqp->lower_ex ? MIGR_UNSUP_QP_EX :
							MIGR_UNSUP_QP_TYPE,
					-1);
	migr_srq_forget_qp(mqp);
	migr_replay_untrack(mqp);
	migr_mw_qp_gone(mqp);
	migr_cq_sender_del(qp->send_cq);
	ctl_leave(qp->context);
	migr_xlate_gone(&mqp->ctx->xlate, MIGR_XLATE_QPN, qp->qp_num);
	migr_wait_acks(&qp->mutex, &qp->cond, &qp->events_completed,
		       mqp->async_events);
	while (mqp->hold.wrs) {
		struct migr_held_wr *h = mqp->hold.wrs;

		mqp->hold.wrs = h->next;
		free(h);
	}
	migr_ring_free(&mqp->rlog.ring);
	migr_ring_free(&mqp->slog.ring);
	free(mqp);
	return 0;
}

int migr_modify_qp_rate_limit(struct ibv_qp *qp,
			      struct ibv_qp_rate_limit_attr *attr)
{
	return ibv_modify_qp_rate_limit(lower_qp(qp), attr);
}

int migr_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
				uint32_t flags)
{
	return ibv_query_qp_data_in_order(lower_qp(qp), op, flags);
}

int migr_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return ibv_set_ece(lower_qp(qp), ece);
}

int migr_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return ibv_query_ece(lower_qp(qp), ece);
}

int migr_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return ibv_attach_mcast(lower_qp(qp), gid, lid);
}

int migr_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return ibv_detach_mcast(lower_qp(qp), gid, lid);
}
