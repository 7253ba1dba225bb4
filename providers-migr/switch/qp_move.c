// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The steps of a switch for one QP, which the partner's side takes too for
 * the QP it moves along (partner_serve.c): RECVs held for the new lower
 * QP, held WRs posted in order, unused RECVs posted again, and what an
 * operator needs to see of a QP that would not drain.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "qp_move.h"
#include "rebuild.h"
#include "verbs.h"

/* What an operator needs to see of a QP that would not drain */
void migr_qp_log_state(struct migr_qp *mqp, const char *why)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a = {};
	unsigned int held = 0;
	struct migr_held_wr *h;

	pthread_mutex_lock(&mqp->hold.lock);
	for (h = mqp->hold.wrs; h; h = h->next)
		held++;
	pthread_mutex_unlock(&mqp->hold.lock);
	if (mqp->lower)
		ibv_query_qp(mqp->lower, &a, IBV_QP_STATE | IBV_QP_SQ_PSN,
			     &init);
	verbs_err(
		&mqp->ctx->vctx,
		"QP 0x%x %s: lower 0x%x state %d sq_psn 0x%x, markers pending %u sent %d failed %d, sends %" PRIu64
		", RECVs posted %" PRIu64
		", held %u, recv_hold %d, slow 0x%x, flushed at the last release %u\n",
		mqp->vqp.qp.qp_num, why, mqp->lower ? mqp->lower->qp_num : 0,
		a.qp_state, a.sq_psn, mqp->marker.pending, mqp->marker.sent,
		mqp->marker.failed, mqp->n_consumers, mqp->rlog.head, held,
		mqp->hold.recvs, mqp->slow, mqp->release_flushes);
}

/* RECVs posted from now on wait for the new lower QP */
void migr_qp_hold_recvs(struct migr_qp *mqp)
{
	pthread_mutex_lock(&mqp->hold.lock);
	mqp->hold.recvs = true;
	pthread_mutex_unlock(&mqp->hold.lock);
}

/* Post a QP's held WRs in order, then let its posts through again */
unsigned int migr_qp_resume(struct migr_qp *mqp)
{
	unsigned int held = 0;

	pthread_mutex_lock(&mqp->hold.lock);
	while (mqp->hold.wrs) {
		struct migr_held_wr *h = mqp->hold.wrs;
		struct ibv_send_wr *sbad;
		struct ibv_recv_wr *rbad;
		int ret;

		mqp->hold.wrs = h->next;
		ret = h->recv ? migr_post_recv_replay(mqp, &h->recv_wr, &rbad) :
				migr_post_send_replay(mqp, &h->send, &sbad);
		if (ret)
			verbs_err(&mqp->ctx->vctx,
				  "QP 0x%x: replaying a held WR failed: %s\n",
				  mqp->vqp.qp.qp_num, strerror(ret));
		free(h);
		held++;
	}
	mqp->hold.tail = &mqp->hold.wrs;
	mqp->hold.recvs = false;
	migr_qp_unsuspend(mqp);
	pthread_mutex_unlock(&mqp->hold.lock);
	return held;
}

/*
 * RECVs posted but never used: the partner's SENDs used the oldest ones. A
 * QP on an SRQ has none of its own (the SRQ's are counted apart).
 */
int migr_unused_recvs(const struct migr_qp *mqp, uint64_t used,
		      uint64_t *unused)
{
	/* A UD QP's are known once it flushed them (migr_release_all()) */
	if (mqp->init.srq || mqp->vqp.qp.qp_type == IBV_QPT_UD) {
		*unused = 0;
		return 0;
	}
	if (mqp->attr.qp_state < IBV_QPS_RTR)
		used = 0;
	return migr_rlog_unused(&mqp->rlog, used, unused);
}

static int repost_qp_recv(void *mqp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	return migr_post_recv_replay(mqp, wr, bad_wr);
}

/* Post a QP's n newest logged RECVs again, in their order */
int migr_repost_recvs(struct migr_qp *mqp, uint64_t n, char *why,
		      size_t why_len)
{
	int ret = migr_rlog_repost(&mqp->rlog, n, repost_qp_recv, mqp);

	if (ret)
		snprintf(why, why_len,
			 "QP 0x%x: posting a RECV again failed: %s",
			 mqp->vqp.qp.qp_num, strerror(ret));
	return ret;
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

void migr_await_flushes(bool (*poll)(void *arg), bool (*enough)(void *arg),
			void *arg, double quiet_ms, double wait_ms)
{
	double last = now_ms();

	for (;;) {
		if (poll(arg)) {
			last = now_ms();
			continue;
		}
		if (now_ms() - last > (enough(arg) ? quiet_ms : wait_ms))
			return;
		usleep(100);
	}
}
