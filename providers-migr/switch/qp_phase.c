// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A QP's own phases in a move (qp_phase.h), in their order: suspend,
 * drain, retire, reconnect, repost, replay, resume. A switch takes them
 * for each QP of its contexts (switch.c, rebuild.c), a partner's side for
 * the one QP that faces the mover (serve/partner_follow.c). Knows nothing of either.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "marker.h"
#include "qp_phase.h"
#include "replay.h"
#include "switch_objects.h"
#include "verbs.h"

/* Suspend: its posts are held (threads see it after a quiesce) */
void migr_qp_suspend(struct migr_qp *mqp)
{
	pthread_mutex_lock(&mqp->hold.lock);
	__atomic_or_fetch(&mqp->slow, MIGR_SLOW_SUSPENDED, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mqp->hold.lock);
}

/* The CQs the QP completes on: polls there take the shadow path */
void migr_qp_take_cqs(struct migr_qp *mqp)
{
	struct ibv_cq *cqs[2] = { mqp->vqp.qp.send_cq, mqp->vqp.qp.recv_cq };
	unsigned int i;

	for (i = 0; i < 2; i++)
		if (cqs[i])
			migr_shadow_take(to_mcq(cqs[i]));
}

/* RECVs posted from now on wait for the new lower QP */
void migr_qp_hold_recvs(struct migr_qp *mqp)
{
	pthread_mutex_lock(&mqp->hold.lock);
	mqp->hold.recvs = true;
	pthread_mutex_unlock(&mqp->hold.lock);
}

/* Drain: no marker of this drain is out yet */
void migr_qp_drain_begin(struct migr_qp *mqp)
{
	mqp->marker.sent = mqp->marker.failed = false;
}

/*
 * Post the QP's marker toward t unless it is out already (or the QP only
 * receives). ENOMEM, a full send queue, is no failure: posts are held,
 * completions make room, and the caller tries again.
 */
int migr_qp_post_marker(struct migr_context *ctx, struct migr_qp *mqp,
			const struct migr_marker_target *t)
{
	if (mqp->attr.qp_state == IBV_QPS_RTR || mqp->marker.sent)
		return 0;
	return migr_post_marker(ctx, mqp, t);
}

/* An RTR QP cannot send: nothing of its own is in flight to drain */
bool migr_qp_drained(const struct migr_qp *mqp)
{
	return mqp->attr.qp_state == IBV_QPS_RTR || migr_marker_drained(mqp);
}

/* Its CQs' completions into their shadows; how many moved */
unsigned int migr_qp_drain_cqs(struct migr_qp *mqp)
{
	struct ibv_cq *scq = mqp->vqp.qp.send_cq, *rcq = mqp->vqp.qp.recv_cq;
	unsigned int moved = 0;
	int n;

	n = migr_cq_drain(to_mcq(scq));
	moved += n > 0 ? n : 0;
	if (rcq && rcq != scq) {
		n = migr_cq_drain(to_mcq(rcq));
		moved += n > 0 ? n : 0;
	}
	return moved;
}

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

/*
 * Put a lower QP in error so that what it still holds flushes. Not a QP on
 * an SRQ: there some devices (mlx5) raise IBV_EVENT_QP_LAST_WQE_REACHED,
 * which nobody would read, and destroying the QP waits for its ack. Such a
 * QP has no RECVs of its own, and its send queue drained.
 */
void migr_qp_flush(struct migr_qp *mqp)
{
	struct ibv_qp_attr err_attr = { .qp_state = IBV_QPS_ERR };

	if (mqp->lower && !mqp->init.srq)
		ibv_modify_qp(mqp->lower, &err_attr, IBV_QP_STATE);
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

/* A partner's retiring QP: its flushes, counted apart by the shadow path */
struct retired {
	struct migr_qp *mqp;
	uint64_t expect;
};

static bool poll_retired(void *arg)
{
	return migr_qp_drain_cqs(((struct retired *)arg)->mqp);
}

static bool retired_all(void *arg)
{
	struct retired *r = arg;

	return r->mqp->ctx->partner.retired_flushes >= r->expect;
}

/*
 * Retire the QP's lower QP alone, its CQs running on: in error, its
 * flushes (the unused RECVs, and what a replay posts again) dropped once
 * in, the type 2 windows bound through it released, destroyed. 0, or an
 * errno with why (the lower QP is kept then).
 */
int migr_qp_retire(struct migr_qp *mqp, uint64_t unused, char *why,
		   size_t why_len)
{
	struct migr_context *ctx = mqp->ctx;
	struct retired r = { .mqp = mqp, .expect = unused + mqp->replay.n };
	int ret;

	if (!mqp->lower)
		return 0;
	ctx->partner.retiring_qpn = mqp->lower->qp_num;
	ctx->partner.retired_flushes = 0;
	ctx->partner.retiring = true;
	migr_qp_flush(mqp);
	migr_await_flushes(poll_retired, retired_all, &r,
			   MIGR_RETIRE_FLUSH_QUIET_MS,
			   MIGR_RETIRE_FLUSH_WAIT_MS);
	ctx->partner.retiring = false;
	if (ctx->partner.retired_flushes != unused)
		verbs_debug(&ctx->vctx,
			    "QP 0x%x: %u RECVs flushed, %" PRIu64
			    " unused by the count\n",
			    mqp->vqp.qp.qp_num, ctx->partner.retired_flushes,
			    unused);
	/* type 2 windows bound through it hold it */
	migr_mws_release_qp(ctx, mqp);
	ret = ibv_destroy_qp(mqp->lower);
	if (ret) {
		snprintf(why, why_len, "destroying the old QP failed: %s",
			 strerror(ret));
		return ret;
	}
	mqp->lower = NULL;
	migr_markers_forget(mqp);
	return 0;
}

void migr_rewrite_gid(const struct migr_gid_move *gids, struct ibv_ah_attr *ah)
{
	unsigned int i;

	if (!ah->is_global)
		return;
	for (i = 0; i < gids->n; i++) {
		if (gids->e[i].port == ah->port_num &&
		    gids->e[i].index == ah->grh.sgid_index &&
		    !memcmp(&gids->e[i].from, &ah->grh.dgid,
			    sizeof(ah->grh.dgid))) {
			ah->grh.dgid = gids->e[i].to;
			return;
		}
	}
}

#define FAIL(fmt, ...)                                                         \
	do {                                                                   \
		snprintf(why, why_len, fmt, ##__VA_ARGS__);                    \
		return errno ? errno : EIO;                                    \
	} while (0)

struct qp_create {
	struct migr_qp *mqp;
	struct ibv_qp_init_attr_ex *attr;
};

static void *qp_create(void *arg)
{
	struct qp_create *c = arg;

	return migr_qp_create_lower(c->mqp, c->mqp->ctx->lower, c->attr);
}

static uint32_t qp_number(const void *qp)
{
	return ((const struct ibv_qp *)qp)->qp_num;
}

/* A new lower QP for mqp on the lower objects it has now, not connected */
int migr_rebuild_lower_qp(struct migr_qp *mqp, char *why, size_t why_len)
{
	struct ibv_qp_init_attr_ex lattr;
	struct qp_create c = { mqp, &lattr };
	const struct migr_numbered how = { qp_create, qp_number, &c };

	errno = 0;
	migr_qp_lower_attr(&lattr, &mqp->init, mqp);
	lattr.comp_mask |= IBV_QP_INIT_ATTR_PD;
	lattr.pd = lower_pd(mqp->vqp.qp.pd);
	mqp->lower = migr_numbers_create(mqp->ctx, MIGR_RXE_KIND_QPN,
					 mqp->vqp.qp.qp_num, &how);
	if (!mqp->lower)
		FAIL("creating QP 0x%x failed: %s", mqp->vqp.qp.qp_num,
		     strerror(errno));
	mqp->vqp.qp.handle = mqp->lower->handle;
	mqp->marker.granted = false;
	migr_srq_rekey_qp(mqp);
	/* The builders of ibv_wr_*() now go to the new QP's */
	if (mqp->lower_ex) {
		mqp->lower_ex = ibv_qp_to_qp_ex(mqp->lower);
		if (!mqp->lower_ex)
			FAIL("QP 0x%x lost its ibv_wr_*() interface",
			     mqp->vqp.qp.qp_num);
		migr_qp_ex_set_ops(mqp);
	}
	errno = migr_xlate_remap(&mqp->ctx->xlate, MIGR_XLATE_QPN,
				 mqp->vqp.qp.qp_num, mqp->lower->qp_num);
	if (errno)
		FAIL("remapping QP 0x%x failed", mqp->vqp.qp.qp_num);
	/* its completions are counted under the new number from now on */
	if (migr_replay_track(mqp))
		mqp->slog.broken = true;
	return 0;
}

/*
 * Bring a rebuilt RC QP to the state the application had it in. gids moves
 * the address of a partner in this process; a partner elsewhere keeps its
 * own (or told us its new one, in the record).
 */
int migr_connect_qp(struct migr_qp *mqp, const struct migr_gid_move *gids,
		    char *why, size_t why_len)
{
	enum ibv_qp_state last;
	uint32_t dest;
	int ret;

	if (mqp->vqp.qp.qp_type == IBV_QPT_UD)
		return migr_ud_connect(mqp, why, why_len);
	if (mqp->attr.qp_state == IBV_QPS_RESET)
		return 0;
	/* The record follows: the next switch moves from where it is now */
	if (mqp->attr.qp_state != IBV_QPS_INIT && mqp->self && gids)
		migr_rewrite_gid(gids, &mqp->attr.ah_attr);
	/* The partner was rebuilt too: its new number */
	dest = migr_remote_qpn_to_phys(mqp->remote, mqp->attr.dest_qp_num);
	ret = migr_lower_connect(mqp->lower, &mqp->attr, dest, &last);
	if (ret) {
		snprintf(why, why_len,
			 "bringing QP 0x%x to state %d failed: %s",
			 mqp->vqp.qp.qp_num, last, strerror(ret));
		return ret;
	}
	if (last >= IBV_QPS_RTR)
		mqp->partner.dest_phys = dest;
	return 0;
}

/*
 * The PSNs its lower QP holds now, the next it sends and the next it
 * expects, into the record: a QP reconnected alone (a partner's) goes on
 * from them, and its peer is told them. Resetting both ends to the PSNs
 * of the first connect would need both resets to come before either end
 * sends again, which nothing guarantees.
 */
int migr_qp_keep_psns(struct migr_qp *mqp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a = {};
	int ret;

	if (!mqp->lower)
		return 0;
	ret = ibv_query_qp(mqp->lower, &a, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
			   &init);
	if (ret)
		return ret;
	mqp->attr.sq_psn = a.sq_psn;
	mqp->attr.rq_psn = a.rq_psn;
	return 0;
}

/*
 * Where the device can (migr_rxe(7)): the drained lower QP pointed in
 * place at lower QP new_qpn at gid, from the PSNs in the record; its
 * number, its posted RECVs and the windows bound through it stay. 0, or
 * an errno with the QP as it was (EOPNOTSUPP: not this device or QP).
 */
int migr_qp_repoint(struct migr_qp *mqp, const union ibv_gid *gid,
		    uint32_t new_qpn)
{
	int ret;

	if (!mqp->lower || mqp->vqp.qp.qp_type != IBV_QPT_RC ||
	    mqp->attr.qp_state != IBV_QPS_RTS)
		return EOPNOTSUPP;
	ret = migr_numbers_repoint(mqp->ctx, mqp->lower, gid, new_qpn,
				   mqp->attr.sq_psn, mqp->attr.rq_psn);
	if (ret)
		return ret;
	mqp->attr.ah_attr.grh.dgid = *gid;
	mqp->partner.dest_phys = new_qpn;
	return 0;
}

/*
 * A retired QP's new lower QP, connected as the record says (its peer's
 * number from its remote table), its n unused RECVs posted again and the
 * type 2 windows that were bound through the old one bound again (their
 * keys into keys, MIGR_QP_MW_MAX pairs at most)
 */
int migr_qp_replace(struct migr_qp *mqp, uint64_t unused, char *keys, char *why,
		    size_t why_len)
{
	int ret = migr_rebuild_lower_qp(mqp, why, why_len);

	if (!ret)
		ret = migr_connect_qp(mqp, NULL, why, why_len);
	if (!ret)
		ret = migr_repost_recvs(mqp, unused, why, why_len);
	if (!ret)
		ret = migr_mws_rebind_qp(mqp->ctx, mqp, keys, why, why_len);
	return ret;
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
 * Replay: the unfinished WRs of a replay's plan posted again on the new
 * lower QP, before what was held; how many, *lost counting those that
 * failed
 */
unsigned int migr_qp_replay(struct migr_qp *mqp, unsigned int *lost)
{
	unsigned int todo = mqp->replay.n, n;

	if (migr_replay_post(mqp, &n))
		*lost += todo - n;
	return n;
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

/* Its CQs back to the fast path, unless something else holds them */
void migr_qp_settle_cqs(struct migr_qp *mqp)
{
	struct ibv_cq *cqs[2] = { mqp->vqp.qp.send_cq, mqp->vqp.qp.recv_cq };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct migr_cq *mcq;

		if (!cqs[i])
			continue;
		mcq = to_mcq(cqs[i]);
		pthread_mutex_lock(&mcq->shadow_lock);
		migr_shadow_settle(mcq);
		pthread_mutex_unlock(&mcq->shadow_lock);
	}
}
