// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner's side of a switch (partner.h): the process at the other end
 * of a moving process's RC connection suspends, drains and replaces only
 * the QP that faces it; its other QPs and CQs keep running. The new lower
 * QP is created on the same lower CQs, PD and SRQ and keeps the QP's
 * virtual number. A session per QP, from prepare to resume, ends by itself
 * when the mover goes quiet for longer than its lease (it died).
 *
 * Every step holds the process's list of contexts (against a switch of
 * this process: then it answers busy) and the context's ctl_lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "partner.h"
#include "switch.h"

#define LOCK_MS 300
#define QUIESCE_MS 2000

struct sess {
	struct migr_context *ctx;
	uint32_t qpn, peer_qpn;
	union ibv_gid gid;
	int peer_access;
	unsigned int lease_ms;
	double deadline;
	bool suspended;
	struct list_node entry;
};

/* Under migr_control_lock() */
static LIST_HEAD(sessions);
static bool watchdog_started;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int parse_gid(const char *hex, union ibv_gid *gid)
{
	unsigned int i, b;

	if (strlen(hex) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -1;
		gid->raw[i] = b;
	}
	return 0;
}

static struct sess *find_sess(struct migr_context *ctx, uint32_t qpn)
{
	struct sess *s;

	list_for_each (&sessions, s, entry)
		if (s->ctx == ctx && s->qpn == qpn)
			return s;
	return NULL;
}

/* The CQs the QP completes on: polls there take the shadow path */
static void cqs_switching(struct migr_qp *mqp)
{
	struct ibv_cq *cqs[2] = { mqp->vqp.qp.send_cq, mqp->vqp.qp.recv_cq };
	unsigned int i;

	for (i = 0; i < 2; i++)
		if (cqs[i])
			__atomic_store_n(&to_mcq(cqs[i])->switching, true,
					 __ATOMIC_RELEASE);
}

static unsigned int drain_cqs(struct migr_qp *mqp)
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

/* Completions may trail the acks the mover saw: wait until none come */
static void drain_quiet(struct migr_qp *mqp)
{
	unsigned int quiet = 0;

	while (quiet < 3) {
		usleep(500);
		quiet = drain_cqs(mqp) ? 0 : quiet + 1;
	}
}

/* Let the QP's posts through again; the session is over */
static void end_sess(struct sess *s, struct migr_qp *mqp)
{
	struct ibv_cq *cqs[2];
	unsigned int i;

	if (mqp) {
		if (s->suspended) {
			migr_qp_resume(mqp);
			__atomic_sub_fetch(&s->ctx->partner_sessions, 1,
					   __ATOMIC_RELEASE);
			cqs[0] = mqp->vqp.qp.send_cq;
			cqs[1] = mqp->vqp.qp.recv_cq;
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
		mqp->partner_session = false;
	} else if (s->suspended) {
		__atomic_sub_fetch(&s->ctx->partner_sessions, 1,
				   __ATOMIC_RELEASE);
	}
	list_del(&s->entry);
	free(s);
}

static void *watchdog(void *arg)
{
	for (;;) {
		struct sess *s, *next;

		usleep(200000);
		if (!migr_control_lock(1000))
			continue;
		list_for_each_safe (&sessions, s, next, entry) {
			struct migr_context *ctx = s->ctx, *c2;
			struct migr_qp *mqp;

			if (now_ms() < s->deadline)
				continue;
			pthread_rwlock_wrlock(&ctx->ctl_lock);
			mqp = migr_control_find_qp(s->qpn, &s->gid, &c2);
			if (c2 != ctx)
				mqp = NULL;
			verbs_err(
				&ctx->vctx,
				"partner QP 0x%x: its peer 0x%x went quiet mid-switch; resuming on the QP it has\n",
				s->qpn, s->peer_qpn);
			end_sess(s, mqp);
			pthread_rwlock_unlock(&ctx->ctl_lock);
		}
		migr_control_unlock();
	}
	return arg;
}

static void start_watchdog(void)
{
	pthread_attr_t attr;
	pthread_t th;

	if (watchdog_started)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	watchdog_started = !pthread_create(&th, &attr, watchdog, NULL);
	pthread_attr_destroy(&attr);
}

void migr_partner_forget_ctx(struct migr_context *ctx)
{
	struct sess *s, *next;

	list_for_each_safe (&sessions, s, next, entry)
		if (s->ctx == ctx) {
			list_del(&s->entry);
			free(s);
		}
}

#define REPLY_ERR(fmt, ...)                                                    \
	fprintf(out, "{\"ok\":false,\"error\":\"" fmt "\"}\n", ##__VA_ARGS__)

static void do_prepare(FILE *out, struct migr_qp *mqp, struct sess *s,
		       const union ibv_gid *gid, const char *args)
{
	struct migr_context *ctx = mqp->ctx;
	unsigned int peer_qpn, lease, rd_atomic;
	int access;

	if (sscanf(args, "%u %u %d %u", &peer_qpn, &lease, &access,
		   &rd_atomic) != 4 ||
	    lease < 100 || lease > 600000) {
		REPLY_ERR("bad prepare request");
		return;
	}
	if (mqp->attr.dest_qp_num != peer_qpn) {
		fprintf(out,
			"{\"ok\":false,\"notmine\":true,\"error\":\"QP 0x%x here faces QP 0x%x, not 0x%x\"}\n",
			mqp->vqp.qp.qp_num, mqp->attr.dest_qp_num, peer_qpn);
		return;
	}
	if (mqp->attr.qp_state != IBV_QPS_RTS) {
		REPLY_ERR("QP 0x%x is in state %d, not ready to send",
			  mqp->vqp.qp.qp_num, mqp->attr.qp_state);
		return;
	}
	if (ctx->switch_active) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"switching itself\"}\n");
		return;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			REPLY_ERR("out of memory");
			return;
		}
		s->ctx = ctx;
		s->qpn = mqp->vqp.qp.qp_num;
		s->gid = *gid;
		list_add_tail(&sessions, &s->entry);
		mqp->partner_session = true;
		start_watchdog();
	}
	s->peer_qpn = peer_qpn;
	s->peer_access = access;
	s->lease_ms = lease;
	s->deadline = now_ms() + lease;
	fprintf(out, "{\"ok\":true,\"access\":%d,\"rd_atomic\":%u}\n",
		mqp->attr.qp_access_flags, mqp->attr.max_rd_atomic);
}

static void do_suspend(FILE *out, struct migr_qp *mqp, struct sess *s,
		       const char *args)
{
	struct migr_context *ctx = mqp->ctx;
	unsigned int wait_ms;
	double deadline;
	int ret;

	if (sscanf(args, "%u", &wait_ms) != 1 || !wait_ms || wait_ms > 600000) {
		REPLY_ERR("bad suspend request");
		return;
	}
	if (!s->suspended) {
		pthread_mutex_lock(&mqp->hold_lock);
		__atomic_or_fetch(&mqp->slow, MIGR_SLOW_SUSPENDED,
				  __ATOMIC_RELEASE);
		pthread_mutex_unlock(&mqp->hold_lock);
		__atomic_add_fetch(&ctx->partner_sessions, 1, __ATOMIC_RELEASE);
		s->suspended = true;
		cqs_switching(mqp);
		if (migr_quiesce(QUIESCE_MS)) {
			end_sess(s, mqp);
			REPLY_ERR("a thread stayed inside a post or poll");
			return;
		}
		mqp->marker_sent = mqp->marker_failed = false;
		ret = migr_post_marker(ctx, mqp, s->peer_access);
		if (ret) {
			end_sess(s, mqp);
			REPLY_ERR("posting the drain marker failed: %s",
				  strerror(ret));
			return;
		}
	}
	/* Everything sent before the suspension is acked when it completes */
	deadline = now_ms() + wait_ms;
	while (!migr_marker_drained(mqp) && !mqp->marker_failed &&
	       now_ms() < deadline) {
		drain_cqs(mqp);
		usleep(50);
	}
	if (!migr_marker_drained(mqp)) {
		bool failed = mqp->marker_failed;

		end_sess(s, mqp);
		REPLY_ERR("its send queue %s", failed ?
						       "failed while draining" :
						       "did not drain in time");
		return;
	}
	fprintf(out, "{\"ok\":true,\"consumers\":%" PRIu64 "}\n",
		mqp->n_consumers);
}

/* The mover's rkeys, virtual:physical: our posts translate with them */
static void do_keys(FILE *out, struct migr_qp *mqp, const char *args)
{
	struct migr_context *ctx = mqp->ctx;
	unsigned int v, p, n = 0;
	struct migr_qp *q;
	int used;

	while (sscanf(args, "%x:%x%n", &v, &p, &used) == 2) {
		if (migr_xlate_set(&ctx->remote, MIGR_XLATE_RKEY, v, p)) {
			REPLY_ERR("out of memory");
			return;
		}
		n++;
		args += used;
		if (*args != ',')
			break;
		args++;
	}
	if (*args && *args != ' ') {
		REPLY_ERR("bad keys request");
		return;
	}
	list_for_each (&ctx->rec.qps, q, entry)
		if (q->remote == &ctx->remote)
			migr_qp_update_slow(q);
	fprintf(out, "{\"ok\":true,\"keys\":%u}\n", n);
}

/*
 * The QP's lower QP is replaced: the old one goes to error (its unused
 * RECVs flush, and are dropped: they are posted again on the new one),
 * its last completions go to the shadows, and it is destroyed.
 */
static void do_reconnect(FILE *out, struct migr_qp *mqp, struct sess *s,
			 const char *args)
{
	struct migr_context *ctx = mqp->ctx;
	struct ibv_qp_attr err_attr = { .qp_state = IBV_QPS_ERR };
	char gidhex[33], why[256];
	unsigned int new_qpn;
	union ibv_gid gid;
	uint64_t consumers, unused;
	int ret;

	if (sscanf(args, "%u %32s %" SCNu64, &new_qpn, gidhex, &consumers) !=
		    3 ||
	    parse_gid(gidhex, &gid) || !new_qpn || new_qpn >> 24) {
		REPLY_ERR("bad reconnect request");
		return;
	}
	if (!s->suspended) {
		REPLY_ERR("QP 0x%x was not suspended", mqp->vqp.qp.qp_num);
		return;
	}
	/* RECVs wait for the new QP from here; none is on its way in */
	migr_qp_hold_recvs(mqp);
	if (migr_quiesce(QUIESCE_MS)) {
		REPLY_ERR("a thread stayed inside a post or poll");
		return;
	}
	if (migr_unused_recvs(mqp, consumers, &unused)) {
		REPLY_ERR("QP 0x%x: its RECV count does not add up",
			  mqp->vqp.qp.qp_num);
		return;
	}
	if (mqp->lower) {
		ctx->retiring_qpn = mqp->lower->qp_num;
		ctx->retired_flushes = 0;
		ctx->retiring = true;
		ibv_modify_qp(mqp->lower, &err_attr, IBV_QP_STATE);
		drain_quiet(mqp);
		ctx->retiring = false;
		if (ctx->retired_flushes != unused)
			verbs_debug(&ctx->vctx,
				    "QP 0x%x: %u RECVs flushed, %" PRIu64
				    " unused by the count\n",
				    mqp->vqp.qp.qp_num, ctx->retired_flushes,
				    unused);
		ret = ibv_destroy_qp(mqp->lower);
		if (ret) {
			REPLY_ERR("destroying the old QP failed: %s",
				  strerror(ret));
			return;
		}
		mqp->lower = NULL;
		migr_markers_forget(mqp);
	}
	mqp->attr.ah_attr.grh.dgid = gid;
	ret = migr_xlate_set(&ctx->remote, MIGR_XLATE_QPN_PHYS, s->peer_qpn,
			     new_qpn);
	if (!ret)
		ret = migr_xlate_set(&ctx->remote, MIGR_XLATE_QPN, new_qpn,
				     s->peer_qpn);
	if (ret) {
		REPLY_ERR("out of memory");
		return;
	}
	migr_qp_update_slow(mqp);
	if (migr_create_lower_qp(mqp, why, sizeof(why)) ||
	    migr_connect_qp(mqp, NULL, why, sizeof(why)) ||
	    migr_repost_recvs(mqp, unused, why, sizeof(why))) {
		REPLY_ERR("%s", why);
		return;
	}
	verbs_info(
		&ctx->vctx,
		"QP 0x%x: now 0x%x, connected to its moved peer 0x%x (0x%x); %" PRIu64
		" RECVs posted again\n",
		mqp->vqp.qp.qp_num, mqp->lower->qp_num, s->peer_qpn, new_qpn,
		unused);
	fprintf(out, "{\"ok\":true,\"qpn\":%u}\n", mqp->lower->qp_num);
}

/* The context's control path, for writing; briefly, or not at all */
static bool lock_ctl(struct migr_context *ctx)
{
	unsigned int i;

	for (i = 0; i < LOCK_MS; i++) {
		if (!pthread_rwlock_trywrlock(&ctx->ctl_lock))
			return true;
		usleep(1000);
	}
	return false;
}

void migr_partner_serve(FILE *out, const char *line)
{
	char op[16], gidhex[33];
	struct migr_context *ctx, *c2;
	struct migr_qp *mqp;
	unsigned int qpn;
	union ibv_gid gid;
	struct sess *s;
	int used = 0;

	if (sscanf(line, "%15s %u %32s%n", op, &qpn, gidhex, &used) != 3 ||
	    parse_gid(gidhex, &gid)) {
		REPLY_ERR("bad partner request");
		return;
	}
	line += used;
	if (!migr_control_lock(LOCK_MS)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"switching itself\"}\n");
		return;
	}
	mqp = migr_control_find_qp(qpn, &gid, &ctx);
	if (!mqp) {
		fprintf(out,
			"{\"ok\":false,\"notmine\":true,\"error\":\"no QP 0x%x here\"}\n",
			qpn);
		goto out;
	}
	if (!lock_ctl(ctx)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"its control path is busy\"}\n");
		goto out;
	}
	/* Found again: the application may have destroyed it meanwhile */
	mqp = migr_control_find_qp(qpn, &gid, &c2);
	s = find_sess(ctx, qpn);
	if (s)
		s->deadline = now_ms() + s->lease_ms;
	if (!mqp || c2 != ctx)
		REPLY_ERR("QP 0x%x was destroyed", qpn);
	else if (!strcmp(op, "prepare"))
		do_prepare(out, mqp, s, &gid, line);
	else if (!s && !strcmp(op, "abort"))
		fprintf(out, "{\"ok\":true,\"ended\":true}\n");
	else if (!s)
		REPLY_ERR("QP 0x%x has no partner session (it ended)", qpn);
	else if (!strcmp(op, "suspend"))
		do_suspend(out, mqp, s, line);
	else if (!strcmp(op, "keys"))
		do_keys(out, mqp, line);
	else if (!strcmp(op, "reconnect"))
		do_reconnect(out, mqp, s, line);
	else if (!strcmp(op, "resume") || !strcmp(op, "abort")) {
		end_sess(s, mqp);
		fprintf(out, "{\"ok\":true}\n");
	} else
		REPLY_ERR("unknown partner request %s", op);
	pthread_rwlock_unlock(&ctx->ctl_lock);
out:
	migr_control_unlock();
}
