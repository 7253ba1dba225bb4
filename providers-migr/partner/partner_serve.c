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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "contexts.h"
#include "datapath.h"
#include "marker.h"
#include "migr_json.h"
#include "partner.h"
#include "partner_line.h"
#include "peer.h"
#include "qp_phase.h"
#include "replay.h"
#include "switch.h"
#include "switch_objects.h"
#include "verbs.h"

#define LOCK_MS 300

struct sess {
	struct migr_context *ctx;
	uint32_t qpn, peer_qpn;
	union ibv_gid gid;
	struct migr_marker_target peer_marker; /* where our marker goes */
	unsigned int lease_ms;
	double deadline;
	double t_suspended; /* its posts held since: the blackout it saw */
	bool suspended;
	/* its send queue did not drain in time; its old QP was replaced */
	bool undrained, reconnected;
	/* the SRQ it receives through, holding its RECVs for "recvs" */
	struct migr_srq *srq_held;
	struct list_node entry;
};

/* Under migr_contexts_lock_within() */
static LIST_HEAD(sessions);
static bool watchdog_started;

static struct sess *find_sess(struct migr_context *ctx, uint32_t qpn)
{
	struct sess *s;

	list_for_each (&sessions, s, entry)
		if (s->ctx == ctx && s->qpn == qpn)
			return s;
	return NULL;
}

/*
 * What never ran goes again before what was held, once the old QP is gone
 * (replaced by reconnect); else it is still on the old QP and goes on
 * there.
 */
static unsigned int resume_replay(struct sess *s, struct migr_qp *mqp)
{
	unsigned int n = 0, lost = 0;

	if (s->reconnected && mqp->replay.n) {
		n = migr_qp_replay(mqp, &lost);
		if (!lost)
			verbs_info(
				&s->ctx->vctx,
				"QP 0x%x: %u unfinished WRs posted again toward its moved peer\n",
				s->qpn, n);
	}
	mqp->replay.n = mqp->replay.consumers = mqp->replay.markers = 0;
	return n;
}

/* The SRQ a session held, if the application has not destroyed it */
static void release_srq(struct sess *s)
{
	struct migr_srq *msrq;

	if (!s->srq_held)
		return;
	list_for_each (&s->ctx->rec.srqs, msrq, entry)
		if (msrq == s->srq_held) {
			migr_srq_partner_release(msrq);
			break;
		}
	s->srq_held = NULL;
}

/*
 * Let the QP's posts through again; the session is over. The WRs posted
 * again toward the moved peer, for the mover's report.
 */
static unsigned int end_sess(struct sess *s, struct migr_qp *mqp)
{
	unsigned int replayed = 0;

	if (mqp) {
		if (s->suspended) {
			replayed = resume_replay(s, mqp);
			migr_qp_resume(mqp);
			release_srq(s);
			__atomic_sub_fetch(&s->ctx->partner.sessions, 1,
					   __ATOMIC_RELEASE);
			migr_qp_settle_cqs(mqp);
		}
		mqp->partner.session = false;
		migr_marker_ungrant(mqp);
	} else if (s->suspended) {
		release_srq(s);
		__atomic_sub_fetch(&s->ctx->partner.sessions, 1,
				   __ATOMIC_RELEASE);
	}
	list_del(&s->entry);
	free(s);
	return replayed;
}

static void *watchdog(void *arg)
{
	for (;;) {
		struct sess *s, *next;

		usleep(200000);
		if (!migr_contexts_lock_within(1000))
			continue;
		list_for_each_safe (&sessions, s, next, entry) {
			struct migr_context *ctx = s->ctx, *c2;
			struct migr_qp *mqp;

			if (now_ms() < s->deadline)
				continue;
			pthread_rwlock_wrlock(&ctx->ctl_lock);
			mqp = migr_contexts_find_qp(s->qpn, &s->gid, &c2);
			if (c2 != ctx)
				mqp = NULL;
			verbs_err(
				&ctx->vctx,
				"partner QP 0x%x: its peer 0x%x went quiet mid-switch; resuming on the QP it has\n",
				s->qpn, s->peer_qpn);
			end_sess(s, mqp);
			pthread_rwlock_unlock(&ctx->ctl_lock);
		}
		migr_contexts_unlock();
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

/* One QP of a request and what it answers */
struct entry {
	uint32_t qpn;
	const char *entry, *args; /* "QPN ARGS", and ARGS */
	struct migr_qp *mqp;
	struct migr_context *ctx;
	struct sess *s;
	uint32_t phys; /* its lower QP when it was found: migrd checks it */
	bool ok, notmine, busy;
	char res[2048]; /* its JSON object (fetch: MIGR_FETCH_KEYS pairs) */
};

#define RESULT(e, ok_, fmt, ...)                                               \
	do {                                                                   \
		(e)->ok = (ok_);                                               \
		snprintf((e)->res, sizeof((e)->res), fmt, ##__VA_ARGS__);      \
	} while (0)

/* A refusal: its reason escaped, so no text can add keys to the reply */
static void __attribute__((format(printf, 3, 4)))
result_error(struct entry *e, bool notmine, const char *fmt, ...)
{
	char msg[512], esc[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	migr_json_str_buf(esc, sizeof(esc), msg);
	e->ok = false;
	e->notmine = notmine;
	snprintf(e->res, sizeof(e->res), "{\"ok\":false,%s\"error\":%s}",
		 notmine ? "\"notmine\":true," : "", esc);
}

#define FAILED(e, fmt, ...) result_error(e, false, fmt, ##__VA_ARGS__)
/*
 * Not this process's: one request may name QPs of several processes (their
 * virtual numbers repeat), so the mover asks the others for this one
 */
#define NOT_MINE(e, fmt, ...) result_error(e, true, fmt, ##__VA_ARGS__)

/*
 * Virtual numbers repeat across processes: a QP is the one named only if
 * it faces the asker's QP by its virtual number and, as it is now, its
 * physical one, and (prepare, faces) it is the lower QP the asker's QP is
 * connected to. Else it answers notmine.
 */
static bool faces_other(struct entry *e, uint32_t peer_qpn, uint32_t peer_phys,
			uint32_t partner_phys)
{
	const struct migr_qp *mqp = e->mqp;

	if (mqp->attr.dest_qp_num == peer_qpn && mqp->partner.dest_phys == peer_phys &&
	    (!partner_phys ||
	     (mqp->lower && mqp->lower->qp_num == partner_phys)))
		return false;
	NOT_MINE(e, "QP 0x%x here faces QP 0x%x (0x%x now), not 0x%x (0x%x)",
		 mqp->vqp.qp.qp_num, mqp->attr.dest_qp_num, mqp->partner.dest_phys,
		 peer_qpn, peer_phys);
	return true;
}

/* A prepare's arguments (and those of faces, made of them) */
struct prepare_args {
	unsigned int peer_qpn, lease, mkey, peer_phys, partner_phys;
	int access;
	uint64_t maddr, peer_id;
};

static bool read_prepare(const char *entry, const char *args,
			 struct prepare_args *a)
{
	/* PARTNER_PHYS as migrd reads it (it asks that QP's holder only) */
	return sscanf(args, "%u %u %d %x %" SCNx64 " %u %" SCNx64, &a->peer_qpn,
		      &a->lease, &a->access, &a->mkey, &a->maddr, &a->peer_phys,
		      &a->peer_id) == 7 &&
	       !pline_word(entry, PLINE_PARTNER_PHYS_WORD, &a->partner_phys) &&
	       a->partner_phys;
}

static void do_prepare(struct entry *e, const union ibv_gid *gid)
{
	struct migr_qp *mqp = e->mqp;
	struct migr_context *ctx = e->ctx;
	struct migr_marker_target ours;
	struct sess *s = e->s;
	struct prepare_args a;

	if (!read_prepare(e->entry, e->args, &a) || a.lease < 100 ||
	    a.lease > MIGR_PARTNER_LEASE_MAX_MS) {
		FAILED(e, "bad prepare request");
		return;
	}
	if (faces_other(e, a.peer_qpn, a.peer_phys, a.partner_phys))
		return;
	/* A QP that only receives (RTR: a WRITE or READ target) follows too */
	if (mqp->attr.qp_state != IBV_QPS_RTS &&
	    mqp->attr.qp_state != IBV_QPS_RTR) {
		FAILED(e, "QP 0x%x is in state %d, not connected",
		       mqp->vqp.qp.qp_num, mqp->attr.qp_state);
		return;
	}
	if (ctx->switch_active) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	/* bound again through the new lower QP, their keys in one reply */
	if (migr_mw_bound_through(mqp) > MIGR_QP_MW_MAX) {
		FAILED(e,
		       "QP 0x%x has more than %u type 2 memory windows bound through it",
		       mqp->vqp.qp.qp_num, MIGR_QP_MW_MAX);
		return;
	}
	if (migr_marker_grant(mqp) || migr_marker_target(mqp, &ours)) {
		FAILED(e, "QP 0x%x: preparing for the drain marker failed",
		       mqp->vqp.qp.qp_num);
		return;
	}
	if (migr_peer_tie(mqp, a.peer_id)) {
		FAILED(e, "out of memory");
		return;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			FAILED(e, "out of memory");
			return;
		}
		s->ctx = ctx;
		s->qpn = mqp->vqp.qp.qp_num;
		s->gid = *gid;
		list_add_tail(&sessions, &s->entry);
		mqp->partner.session = true;
		start_watchdog();
		e->s = s;
	}
	s->peer_qpn = a.peer_qpn;
	s->peer_marker.access = a.access;
	s->peer_marker.rkey = a.mkey;
	s->peer_marker.addr = a.maddr;
	s->lease_ms = a.lease;
	s->deadline = now_ms() + a.lease;
	RESULT(e, true,
	       "{\"ok\":true,\"access\":%d,\"mkey\":\"%x\",\"maddr\":\"%" PRIx64
	       "\",\"peer\":\"%016" PRIx64 "\"}",
	       ours.access, ours.rkey, ours.addr, ctx->peers.id);
}

/*
 * Which QP its QP faces, as the kernel numbers it, and on which GID: migrd
 * checks that the process asking for a switch owns that QP before it
 * relays a prepare from it. Touches nothing, opens no session.
 */
static void do_faces(struct entry *e)
{
	struct migr_qp *mqp = e->mqp;
	struct prepare_args a;
	char hex[33];

	/* The prepare's arguments: is it the asker's QP this one faces? */
	if (!read_prepare(e->entry, e->args, &a)) {
		FAILED(e, "bad faces request");
		return;
	}
	if (faces_other(e, a.peer_qpn, a.peer_phys, a.partner_phys))
		return;

	if (e->ctx->switch_active || !mqp->lower) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	if (mqp->attr.qp_state < IBV_QPS_RTR ||
	    mqp->attr.qp_state > IBV_QPS_SQD || !mqp->attr.ah_attr.is_global) {
		FAILED(e, "QP 0x%x is not connected over a GID", e->qpn);
		return;
	}
	migr_gid_hex(&mqp->attr.ah_attr.grh.dgid, hex);
	RESULT(e, true, "{\"ok\":true,\"peer_phys\":%u,\"peer_gid\":\"%s\"}",
	       mqp->partner.dest_phys, hex);
}

/*
 * A QP of another process is being connected to this one (partner.h,
 * fetch): say which lower QP it must connect to, and, unless the asker
 * has them from generation GEN, our rkeys, MIGR_FETCH_KEYS at a time from the
 * START-th, if our QP faces it already. Asked at a GID this process had before a switch (the
 * application gave out the GID it read then), say the one that replaced
 * it. A QP connected to another QP answers notmine. Read only.
 */
static void do_fetch(struct entry *e, const union ibv_gid *gid)
{
	struct migr_qp *mqp = e->mqp;
	struct migr_context *ctx = e->ctx;
	unsigned int peer_qpn, peer_phys, k = 0;
	char keys[MIGR_FETCH_KEYS * 18 + 1] = "", from[16], *end;
	char moved[48] = "", hex[33];
	uint64_t peer_id, gen, ours;
	unsigned long start = 0;
	union ibv_gid now;
	bool probe, found, wanted, withheld;

	if (sscanf(e->args, "%u %u %" SCNx64 " %" SCNu64 " %15s", &peer_qpn,
		   &peer_phys, &peer_id, &gen, from) != 5) {
		FAILED(e, "bad fetch request");
		return;
	}
	/* FROM "-": no keys, only what the asker needs to know if it has them */
	probe = !strcmp(from, "-");
	if (!probe) {
		start = strtoul(from, &end, 10);
		if (*end || start > UINT32_MAX) {
			FAILED(e, "bad fetch request");
			return;
		}
	}
	if (mqp->attr.qp_state >= IBV_QPS_RTR &&
	    faces_other(e, peer_qpn, peer_phys, 0))
		return;
	if (mqp->vqp.qp.qp_type != IBV_QPT_RC &&
	    mqp->vqp.qp.qp_type != IBV_QPT_UC) {
		NOT_MINE(e, "QP 0x%x is not connected mode", e->qpn);
		return;
	}
	if (ctx->switch_active || !mqp->lower) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	ours = __atomic_load_n(&ctx->xlate.gen, __ATOMIC_ACQUIRE);
	/*
	 * Our rkeys grant access to our memory: only to the QP ours is
	 * connected to. Not connected yet, we give them when we connect
	 * (migr_partner_give()): anybody may ask a QP still in RESET or INIT.
	 */
	wanted = !probe && ours && ours != gen;
	withheld = wanted && mqp->attr.qp_state < IBV_QPS_RTR;
	if (wanted && !withheld)
		k = migr_rkey_pairs(ctx, start, MIGR_FETCH_KEYS, keys);
	pthread_mutex_lock(&ctx->rec.lock);
	found = migr_gid_history_find(&ctx->gid_history, gid, &now);
	pthread_mutex_unlock(&ctx->rec.lock);
	if (found) {
		migr_gid_hex(&now, hex);
		snprintf(moved, sizeof(moved), ",\"gid\":\"%s\"", hex);
	}
	/* "phys", its lower QP, is in every result (reply()) */
	RESULT(e, true,
	       "{\"ok\":true,\"peer\":\"%016" PRIx64 "\",\"gen\":%" PRIu64
	       ",\"keys\":\"%s\",\"next\":%lu%s%s}",
	       ctx->peers.id, ours, keys, k == MIGR_FETCH_KEYS ? start + k : 0,
	       moved, withheld ? ",\"withheld\":true" : "");
}

/*
 * Post the QP's marker unless it is out already. A full send queue
 * (ENOMEM: an application that keeps it full) is no failure: posts are
 * held now, completions make room, and do_suspend() tries again.
 */
static void post_marker(struct entry *e)
{
	struct migr_qp *mqp = e->mqp;
	int ret;

	ret = migr_qp_post_marker(e->ctx, mqp, &e->s->peer_marker);
	if (ret && ret != ENOMEM) {
		end_sess(e->s, mqp);
		e->s = NULL;
		FAILED(e, "posting the drain marker failed: %s", strerror(ret));
	}
}

/* Hold the QP's posts and post its marker; the drain is done for all */
static void suspend_one(struct entry *e)
{
	migr_qp_drain_begin(e->mqp);
	post_marker(e);
}

/*
 * Every QP of the request stops taking posts at once (one quiesce), gets
 * a marker behind what it sent, and the request waits for all of them.
 */
static void do_suspend(struct entry *v, unsigned int n)
{
	unsigned int i, wait_ms = 0, left;
	double deadline;

	for (i = 0; i < n; i++) {
		struct entry *e = &v[i];

		if (!e->mqp || !e->s)
			continue;
		if (sscanf(e->args, "%u", &wait_ms) != 1 || !wait_ms ||
		    wait_ms > 600000) {
			FAILED(e, "bad suspend request");
			continue;
		}
		e->ok = true;
		if (e->s->suspended)
			continue;
		migr_qp_suspend(e->mqp);
		__atomic_add_fetch(&e->ctx->partner.sessions, 1,
				   __ATOMIC_RELEASE);
		migr_qp_take_cqs(e->mqp);
	}
	if (migr_quiesce(QUIESCE_MS)) {
		for (i = 0; i < n; i++)
			if (v[i].ok) {
				v[i].s->suspended = true;
				end_sess(v[i].s, v[i].mqp);
				FAILED(&v[i],
				       "a thread stayed inside a post or poll");
			}
		return;
	}
	for (i = 0; i < n; i++)
		if (v[i].ok && !v[i].s->suspended) {
			v[i].s->suspended = true;
			v[i].s->t_suspended = now_ms();
			suspend_one(&v[i]);
		}
	/* Everything sent before the suspension is acked when it completes */
	deadline = now_ms() + wait_ms;
	do {
		left = 0;
		for (i = 0; i < n; i++) {
			if (!v[i].ok)
				continue;
			post_marker(&v[i]);
			if (!v[i].ok)
				continue;
			migr_qp_drain_cqs(v[i].mqp);
			if (!migr_qp_drained(v[i].mqp) &&
			    !v[i].mqp->marker.failed)
				left++;
		}
		if (left)
			usleep(50);
	} while (left && now_ms() < deadline);
	for (i = 0; i < n; i++) {
		struct entry *e = &v[i];

		if (!e->ok)
			continue;
		if (!migr_qp_drained(e->mqp)) {
			bool failed = e->mqp->marker.failed;

			migr_qp_log_state(e->mqp,
					  "not drained for its partner");
			/* the mover decides with our RECV counts (do_recvs) */
			if (!failed && e->ctx->replay) {
				e->s->undrained = true;
				RESULT(e, true,
				       "{\"ok\":true,\"undrained\":true,\"consumers\":%" PRIu64
				       "}",
				       e->mqp->n_consumers);
				continue;
			}
			end_sess(e->s, e->mqp);
			e->s = NULL;
			FAILED(e, "QP 0x%x: its send queue %s", e->qpn,
			       failed ? "failed while draining" :
					"did not drain in time");
			continue;
		}
		migr_replay_drained(e->mqp);
		RESULT(e, true, "{\"ok\":true,\"consumers\":%" PRIu64 "}",
		       e->mqp->n_consumers);
	}
}

/*
 * The mover's drain hit its bound and it would post its unfinished WRs
 * again (replay.c): from now on RECVs wait for the new QP, and the answer
 * says what this QP received and was given, counted (MIGR_REPLAY=1 here
 * too) or not; on an SRQ, given is what it took plus what the SRQ has
 * left. Final: nothing more can arrive without a RECV.
 */
static void do_recvs(struct entry *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!v[i].mqp || !v[i].s)
			continue;
		if (!v[i].s->suspended) {
			FAILED(&v[i], "QP 0x%x was not suspended", v[i].qpn);
			continue;
		}
		v[i].ok = true;
		migr_qp_hold_recvs(v[i].mqp);
		/* on an SRQ, what it has left counts: the SRQ holds too */
		if (v[i].mqp->init.srq && !v[i].s->srq_held) {
			v[i].s->srq_held = to_msrq(v[i].mqp->init.srq);
			migr_srq_partner_hold(v[i].s->srq_held);
		}
	}
	if (migr_quiesce(QUIESCE_MS)) {
		for (i = 0; i < n; i++)
			if (v[i].ok)
				FAILED(&v[i],
				       "a thread stayed inside a post or poll");
		return;
	}
	for (i = 0; i < n; i++) {
		struct migr_qp *mqp = v[i].mqp;
		struct migr_replay_peer me, mover;
		char why[200] = "", esc[1300];
		int counted = 0;
		bool replay;

		if (!v[i].ok)
			continue;
		migr_qp_drain_cqs(mqp);
		migr_replay_peer_of(mqp, &me);
		replay = !v[i].s->undrained;
		if (!replay) {
			/* the mover's RECVs are held and counted: decide */
			if (sscanf(v[i].args, "%d %" SCNu64 " %" SCNu64,
				   &counted, &mover.recvs, &mover.posted) != 3)
				snprintf(
					why, sizeof(why),
					"QP 0x%x: no RECV count of the mover's",
					v[i].qpn);
			mover.counted = counted;
			replay = !why[0] && !migr_replay_plan(mqp, &mover, why,
							      sizeof(why));
		}
		migr_json_str_buf(esc, sizeof(esc), why);
		RESULT(&v[i], true,
		       "{\"ok\":true,\"counted\":%s,\"recvs\":%" PRIu64
		       ",\"posted\":%" PRIu64
		       ",\"replay\":%s,\"replay_consumers\":%u,\"error\":%s}",
		       me.counted ? "true" : "false", me.recvs, me.posted,
		       replay ? "true" : "false", mqp->replay.consumers, esc);
	}
}

/*
 * The mover's rkeys, virtual:physical, into the replica of its context
 * (its QPs here were tied to it at prepare): our posts translate with them
 */
static int set_keys(struct migr_context *ctx, struct migr_xlate *x,
		    const char *pairs)
{
	const char *end;
	struct migr_qp *q;
	unsigned int n;

	if (x == &ctx->remote || x == &ctx->xlate)
		return EINVAL;
	if (migr_xlate_set_rkeys(x, pairs, &end, &n))
		return ENOMEM;
	if (*end && *end != ' ')
		return EINVAL;
	list_for_each (&ctx->rec.qps, q, entry)
		if (q->remote == x)
			migr_qp_update_slow(q);
	return 0;
}

/* Once per replica: the QPs facing one mover's context share it */
static void do_keys(struct entry *v, unsigned int n, const char *pairs)
{
	unsigned int i, j;
	int bad;

	for (i = 0; i < n; i++) {
		if (!v[i].mqp)
			continue;
		for (j = 0; j < i; j++)
			if (v[j].mqp && v[j].mqp->remote == v[i].mqp->remote)
				break;
		if (j < i)
			bad = !v[j].ok;
		else
			bad = set_keys(v[i].ctx, v[i].mqp->remote, pairs);
		if (bad)
			FAILED(&v[i], "bad keys request");
		else
			RESULT(&v[i], true, "{\"ok\":true}");
	}
}

/*
 * A process our QP connected to before its QP connected to ours withheld
 * its rkeys then (do_fetch()); now that it is connected, it gives them
 * (migrd checked, with the faces step, that it holds the QP ours faces):
 * into the replica of its tables our QP was tied to at connect.
 */
static void do_give(struct entry *e)
{
	struct migr_qp *mqp = e->mqp;
	struct prepare_args a;
	const char *pairs;
	uint64_t gen;
	int last, n;

	if (!read_prepare(e->entry, e->args, &a) ||
	    sscanf(e->args, "%*u %*u %*d %*x %*x %*u %*x %*u %" SCNu64 " %d %n",
		   &gen, &last, &n) != 2 ||
	    !gen || (last != 0 && last != 1)) {
		FAILED(e, "bad give request");
		return;
	}
	if (mqp->attr.qp_state < IBV_QPS_RTR ||
	    faces_other(e, a.peer_qpn, a.peer_phys, a.partner_phys))
		return;
	if (e->ctx->switch_active || !mqp->lower) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	if (!migr_peer_tables_are(e->ctx, mqp->remote, a.peer_id)) {
		FAILED(e,
		       "QP 0x%x did not learn of context %016" PRIx64
		       " at connect",
		       e->qpn, a.peer_id);
		return;
	}
	pairs = e->args + n;
	if (strcmp(pairs, "-") && set_keys(e->ctx, mqp->remote, pairs)) {
		FAILED(e, "bad give request");
		return;
	}
	if (last)
		__atomic_store_n(&mqp->remote->gen, gen, __ATOMIC_RELEASE);
	verbs_info(&e->ctx->vctx,
		   "QP 0x%x: its peer 0x%x, connected now, gave its keys%s\n",
		   mqp->vqp.qp.qp_num, a.peer_qpn, last ? "" : " (in part)");
	RESULT(e, true, "{\"ok\":true}");
}

/* Its replica says the moved peer's QP is new_qpn now */
static int learn_new_qpn(struct entry *e, unsigned int new_qpn)
{
	struct migr_xlate *x = e->mqp->remote;
	int ret;

	ret = migr_xlate_set(x, MIGR_XLATE_QPN_PHYS, e->s->peer_qpn, new_qpn);
	if (!ret)
		ret = migr_xlate_set(x, MIGR_XLATE_QPN, new_qpn,
				     e->s->peer_qpn);
	return ret;
}

/*
 * Where the device can (migr_rxe(7)): the lower QP, drained, pointed at
 * the moved peer in place; its number, its posted RECVs and the windows
 * bound through it stay. False if it could not: then it is as it was.
 */
static bool repoint_one(struct entry *e, const union ibv_gid *gid,
			unsigned int new_qpn)
{
	struct migr_qp *mqp = e->mqp;
	struct migr_context *ctx = e->ctx;
	int ret;

	ret = migr_qp_repoint(mqp, gid, new_qpn);
	if (ret) {
		if (ret != EOPNOTSUPP)
			verbs_info(
				&ctx->vctx,
				"QP 0x%x: re-pointing it in place failed (%s): a new QP instead\n",
				e->qpn, strerror(ret));
		return false;
	}
	if (learn_new_qpn(e, new_qpn)) {
		FAILED(e, "out of memory");
		return true;
	}
	migr_qp_update_slow(mqp);
	e->s->reconnected = true;
	verbs_info(
		&ctx->vctx,
		"QP 0x%x: re-pointed in place to its moved peer 0x%x (0x%x), its RECVs kept\n",
		e->qpn, e->s->peer_qpn, new_qpn);
	RESULT(e, true,
	       "{\"ok\":true,\"qpn\":%u,\"keys\":\"\",\"sq_psn\":%u,\"rq_psn\":%u}",
	       mqp->lower->qp_num, mqp->attr.sq_psn, mqp->attr.rq_psn);
	return true;
}

/*
 * The QP's lower QP is replaced: the old one goes to error (its unused
 * RECVs flush, and are dropped: they are posted again on the new one),
 * its last completions go to the shadows, and it is destroyed.
 */
static void replace_one(struct entry *e, const union ibv_gid *gid,
			unsigned int new_qpn, uint64_t unused)
{
	struct migr_qp *mqp = e->mqp;
	char why[256], keys[MIGR_QP_MW_MAX * 18 + 1];

	if (migr_qp_retire(mqp, unused, why, sizeof(why))) {
		FAILED(e, "%s", why);
		return;
	}
	mqp->attr.ah_attr.grh.dgid = *gid;
	if (learn_new_qpn(e, new_qpn)) {
		FAILED(e, "out of memory");
		return;
	}
	migr_qp_update_slow(mqp);
	if (migr_qp_replace(mqp, unused, keys, why, sizeof(why))) {
		FAILED(e, "%s", why);
		return;
	}
	e->s->reconnected = true;
	verbs_info(
		&e->ctx->vctx,
		"QP 0x%x: now 0x%x, connected to its moved peer 0x%x (0x%x); %" PRIu64
		" RECVs posted again\n",
		e->qpn, mqp->lower->qp_num, e->s->peer_qpn, new_qpn, unused);
	RESULT(e, true,
	       "{\"ok\":true,\"qpn\":%u,\"keys\":\"%s\",\"sq_psn\":%u,\"rq_psn\":%u}",
	       mqp->lower->qp_num, keys, mqp->attr.sq_psn, mqp->attr.rq_psn);
}

/*
 * Connected to the moved peer's new QP from the PSNs the old lower QP
 * holds now (the reply says them, for the mover's QP to match):
 * re-pointed in place, else replaced
 */
static void reconnect_one(struct entry *e)
{
	struct migr_qp *mqp = e->mqp;
	uint64_t consumers, unused;
	unsigned int new_qpn;
	union ibv_gid gid;
	char gidhex[33];
	int ret;

	if (sscanf(e->args, "%u %32s %" SCNu64, &new_qpn, gidhex, &consumers) !=
		    3 ||
	    migr_gid_parse(gidhex, &gid) || !new_qpn || new_qpn >> 24) {
		FAILED(e, "bad reconnect request");
		return;
	}
	if (!e->s->suspended) {
		FAILED(e, "QP 0x%x was not suspended", e->qpn);
		return;
	}
	if (migr_unused_recvs(mqp, consumers, &unused)) {
		FAILED(e, "QP 0x%x: its RECV count does not add up", e->qpn);
		return;
	}
	ret = migr_qp_keep_psns(mqp);
	if (ret) {
		FAILED(e, "QP 0x%x: reading its PSNs failed: %s", e->qpn,
		       strerror(ret));
		return;
	}
	if (!repoint_one(e, &gid, new_qpn))
		replace_one(e, &gid, new_qpn, unused);
}

static void do_reconnect(struct entry *v, unsigned int n)
{
	unsigned int i;

	/* RECVs wait for the new QPs from here; none is on its way in */
	for (i = 0; i < n; i++)
		if (v[i].mqp && v[i].s)
			migr_qp_hold_recvs(v[i].mqp);
	if (migr_quiesce(QUIESCE_MS)) {
		for (i = 0; i < n; i++)
			if (v[i].mqp && v[i].s)
				FAILED(&v[i],
				       "a thread stayed inside a post or poll");
		return;
	}
	for (i = 0; i < n; i++)
		if (v[i].mqp && v[i].s)
			reconnect_one(&v[i]);
}

/* The context's control path, for writing; briefly, or not at all */
bool migr_ctl_lock_briefly(struct migr_context *ctx)
{
	unsigned int i;

	for (i = 0; i < LOCK_MS; i++) {
		if (!pthread_rwlock_trywrlock(&ctx->ctl_lock))
			return true;
		usleep(1000);
	}
	return false;
}

#define MAX_ENTRIES PLINE_QPS_MAX

/*
 * The line as partner_line.c reads it (migrd reads it so too), its entries
 * and the keys' pairs cut at " . " in copy, the copy of line pl points in
 */
static unsigned int split(const struct pline *pl, char *copy, const char *line,
			  struct entry *v, char **pairs)
{
	int i;

	if (pl->pairs) {
		*pairs = copy + (pl->pairs - line);
		(*pairs)[pl->pairs_len] = 0;
	}
	for (i = 0; i < pl->nqp; i++) {
		char *at = copy + (pl->at[i] - line), *dot = strstr(at, " . ");

		if (dot)
			*dot = 0;
		v[i].qpn = pl->qpn[i];
		v[i].entry = at;
		v[i].args = at + strcspn(at, " ");
	}
	return pl->nqp;
}

/* Lock the control path of every context the entries are in, once */
static bool lock_ctxs(struct entry *v, unsigned int n,
		      struct migr_context **locked, unsigned int *nlocked)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		if (!v[i].ctx)
			continue;
		for (j = 0; j < *nlocked && locked[j] != v[i].ctx; j++)
			;
		if (j < *nlocked)
			continue;
		if (!migr_ctl_lock_briefly(v[i].ctx))
			return false;
		locked[(*nlocked)++] = v[i].ctx;
	}
	return true;
}

static void reply(FILE *out, struct entry *v, unsigned int n)
{
	bool ok = n > 0, notmine = n > 0, busy = false;
	const char *err = NULL;
	unsigned int i;

	for (i = 0; i < n; i++) {
		ok &= v[i].ok;
		notmine &= v[i].notmine;
		busy |= v[i].busy;
		if (!v[i].ok && !err)
			err = strstr(v[i].res, "\"error\":");
	}
	fprintf(out, "{\"ok\":%s%s%s", ok ? "true" : "false",
		notmine ? ",\"notmine\":true" : "",
		busy ? ",\"busy\":true" : "");
	if (err) {
		const char *end = strrchr(err, '}');

		fprintf(out, ",%.*s", (int)(end - err), err);
	}
	fprintf(out, ",\"results\":[");
	for (i = 0; i < n; i++) {
		uint32_t phys = v[i].mqp && v[i].mqp->lower ?
					v[i].mqp->lower->qp_num :
					v[i].phys;

		/* the lower QP it holds, for migrd to check with the kernel */
		if (!v[i].notmine && phys && v[i].res[0] == '{')
			fprintf(out, "%s{\"phys\":%u,%s", i ? "," : "", phys,
				v[i].res + 1);
		else
			fprintf(out, "%s%s", i ? "," : "", v[i].res);
	}
	fprintf(out, "]}\n");
}

static void serve_each(struct entry *v, unsigned int n, const char *pairs,
		       const union ibv_gid *gid,
		       void (*fn)(struct entry *e, const union ibv_gid *gid))
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i].mqp)
			fn(&v[i], gid);
}

static void serve_prepare(struct entry *v, unsigned int n, const char *pairs,
			  const union ibv_gid *gid)
{
	serve_each(v, n, pairs, gid, do_prepare);
}

static void faces_one(struct entry *e, const union ibv_gid *gid)
{
	do_faces(e);
}

static void serve_faces(struct entry *v, unsigned int n, const char *pairs,
			const union ibv_gid *gid)
{
	serve_each(v, n, pairs, gid, faces_one);
}

static void serve_fetch(struct entry *v, unsigned int n, const char *pairs,
			const union ibv_gid *gid)
{
	serve_each(v, n, pairs, gid, do_fetch);
}

static void serve_suspend(struct entry *v, unsigned int n, const char *pairs,
			  const union ibv_gid *gid)
{
	do_suspend(v, n);
}

static void serve_reconnect(struct entry *v, unsigned int n, const char *pairs,
			    const union ibv_gid *gid)
{
	do_reconnect(v, n);
}

static void serve_recvs(struct entry *v, unsigned int n, const char *pairs,
			const union ibv_gid *gid)
{
	do_recvs(v, n);
}

static void serve_keys(struct entry *v, unsigned int n, const char *pairs,
		       const union ibv_gid *gid)
{
	do_keys(v, n, pairs);
}

static void give_one(struct entry *e, const union ibv_gid *gid)
{
	do_give(e);
}

static void serve_give(struct entry *v, unsigned int n, const char *pairs,
		       const union ibv_gid *gid)
{
	serve_each(v, n, pairs, gid, give_one);
}

/* resume and abort: the session ends, whatever state it reached */
static void end_one(struct entry *e, const union ibv_gid *gid)
{
	double held = e->s->suspended ? now_ms() - e->s->t_suspended : 0;
	unsigned int replayed = end_sess(e->s, e->mqp);

	RESULT(e, true, "{\"ok\":true,\"replayed\":%u,\"held_ms\":%.1f}",
	       replayed, held);
}

static void serve_end(struct entry *v, unsigned int n, const char *pairs,
		      const union ibv_gid *gid)
{
	serve_each(v, n, pairs, gid, end_one);
}

/* What each step does with the entries it found; need_sess: a prepare's */
static const struct {
	void (*fn)(struct entry *v, unsigned int n, const char *pairs,
		   const union ibv_gid *gid);
	bool need_sess;
} steps[] = {
	[PLINE_PREPARE] = { serve_prepare, false },
	[PLINE_FACES] = { serve_faces, false },
	[PLINE_FETCH] = { serve_fetch, false },
	[PLINE_GIVE] = { serve_give, false },
	[PLINE_SUSPEND] = { serve_suspend, true },
	[PLINE_RECONNECT] = { serve_reconnect, true },
	[PLINE_RECVS] = { serve_recvs, true },
	[PLINE_KEYS] = { serve_keys, true },
	[PLINE_RESUME] = { serve_end, true },
	[PLINE_ABORT] = { serve_end, true },
};

/*
 * "OP GID QPN ARGS [. QPN ARGS]...", or for keys "keys GID PAIRS . QPN
 * [. QPN]...": every QP named has GID. Answered with one JSON line, a
 * result per QP in order.
 */
void migr_partner_serve(FILE *out, const char *line)
{
	struct migr_context *locked[MAX_ENTRIES], *c2;
	char *copy, *pairs = NULL, why[128];
	unsigned int i, n, nlocked = 0;
	struct entry *v;
	union ibv_gid gid;
	struct pline pl;

	copy = strdup(line);
	v = calloc(MAX_ENTRIES, sizeof(*v));
	if (!copy || !v) {
		fprintf(out, "{\"ok\":false,\"error\":\"out of memory\"}\n");
		goto out_free;
	}
	if (pline_parse(line, NULL, &pl, why, sizeof(why)) ||
	    pl.step >= sizeof(steps) / sizeof(steps[0]) || !steps[pl.step].fn ||
	    migr_gid_parse(pl.gid, &gid)) {
		fprintf(out,
			"{\"ok\":false,\"error\":\"bad partner request\"}\n");
		goto out_free;
	}
	n = split(&pl, copy, line, v, &pairs);
	if (!migr_contexts_lock_within(LOCK_MS)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"switching itself\"}\n");
		goto out_free;
	}
	for (i = 0; i < n; i++)
		v[i].mqp = migr_contexts_find_qp(v[i].qpn, &gid, &v[i].ctx);
	if (!lock_ctxs(v, n, locked, &nlocked)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"its control path is busy\"}\n");
		goto out_unlock;
	}
	for (i = 0; i < n; i++) {
		struct entry *e = &v[i];

		/* Found again: the application may have destroyed it */
		if (e->ctx)
			e->mqp = migr_contexts_find_qp(e->qpn, &gid, &c2);
		if (!e->ctx) {
			NOT_MINE(e, "no QP 0x%x here", e->qpn);
			continue;
		}
		if (!e->mqp || c2 != e->ctx) {
			e->mqp = NULL;
			FAILED(e, "QP 0x%x was destroyed", e->qpn);
			continue;
		}
		if (e->mqp->lower)
			e->phys = e->mqp->lower->qp_num;
		e->s = find_sess(e->ctx, e->qpn);
		if (e->s)
			e->s->deadline = now_ms() + e->s->lease_ms;
		if (steps[pl.step].need_sess && !e->s) {
			e->mqp = NULL;
			if (pl.step == PLINE_ABORT)
				RESULT(e, true, "{\"ok\":true,\"ended\":true}");
			else
				FAILED(e,
				       "QP 0x%x has no partner session (it ended)",
				       e->qpn);
		}
	}
	steps[pl.step].fn(v, n, pairs, &gid);
	reply(out, v, n);
out_unlock:
	for (i = 0; i < nlocked; i++)
		pthread_rwlock_unlock(&locked[i]->ctl_lock);
	migr_contexts_unlock();
out_free:
	free(copy);
	free(v);
}
