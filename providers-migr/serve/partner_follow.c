// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner follows a mover's switch (partner.h): the process at the
 * other end of a moving process's RC connection suspends, drains and
 * reconnects only the QP that faces it, through the QP's phases
 * (qp_phase.h); its other QPs and CQs keep running. A new lower QP is
 * created on the same lower CQs, PD and SRQ and keeps the QP's virtual
 * number. Steps: prepare, suspend, recvs, reconnect, resume and abort.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "marker.h"
#include "migr_json.h"
#include "partner_call.h"
#include "partner_serve.h"
#include "peer.h"
#include "qp_phase.h"
#include "replay.h"
#include "switch.h"
#include "switch_objects.h"
#include "verbs.h"

/* Can the QP follow a switch of the QP it faces? Else its result says why */
static bool can_follow(struct serve_entry *e, const struct prepare_args *a)
{
	struct migr_qp *mqp = e->mqp;

	if (migr_pserve_faces_other(e, a->peer_qpn, a->peer_phys,
				    a->partner_phys))
		return false;
	/* A QP that only receives (RTR: a WRITE or READ target) follows too */
	if (mqp->attr.qp_state != IBV_QPS_RTS &&
	    mqp->attr.qp_state != IBV_QPS_RTR) {
		FAILED(e, "QP 0x%x is in state %d, not connected",
		       mqp->vqp.qp.qp_num, mqp->attr.qp_state);
		return false;
	}
	if (e->ctx->switch_active) {
		e->busy = true;
		FAILED(e, "switching itself");
		return false;
	}
	/* bound again through the new lower QP, their keys in one reply */
	if (migr_mw_bound_through(mqp) > MIGR_QP_MW_MAX) {
		FAILED(e,
		       "QP 0x%x has more than %u type 2 memory windows bound through it",
		       mqp->vqp.qp.qp_num, MIGR_QP_MW_MAX);
		return false;
	}
	return true;
}

/*
 * The QP's session opens (or goes on): markers may enter it, it is tied
 * to the replica of the mover's context, and the answer says where the
 * mover's marker lands
 */
static void prepare_one(struct serve_entry *e, const union ibv_gid *gid)
{
	struct migr_qp *mqp = e->mqp;
	struct migr_marker_target ours;
	struct prepare_args a;

	if (!migr_pserve_read_prepare(e->entry, e->args, &a) || a.lease < 100 ||
	    a.lease > MIGR_PARTNER_LEASE_MAX_MS) {
		FAILED(e, "bad prepare request");
		return;
	}
	if (!can_follow(e, &a))
		return;
	if (migr_marker_grant(mqp) || migr_marker_target(mqp, &ours)) {
		FAILED(e, "QP 0x%x: preparing for the drain marker failed",
		       mqp->vqp.qp.qp_num);
		return;
	}
	if (migr_peer_tie(mqp, a.peer_id)) {
		FAILED(e, "out of memory");
		return;
	}
	if (!e->s) {
		e->s = migr_psess_open(e->ctx, mqp, gid);
		if (!e->s) {
			FAILED(e, "out of memory");
			return;
		}
	}
	e->s->peer_qpn = a.peer_qpn;
	e->s->peer_marker.access = a.access;
	e->s->peer_marker.rkey = a.mkey;
	e->s->peer_marker.addr = a.maddr;
	migr_psess_renew(e->s, a.lease);
	RESULT(e, true,
	       "{\"ok\":true,\"access\":%d,\"mkey\":\"%x\",\"maddr\":\"%" PRIx64
	       "\",\"peer\":\"%016" PRIx64 "\"}",
	       ours.access, ours.rkey, ours.addr, e->ctx->peers.id);
}

void migr_pserve_prepare(struct serve_entry *v, unsigned int n,
			 const char *pairs, const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i].mqp)
			prepare_one(&v[i], gid);
}

/*
 * Post the QP's marker unless it is out already. A full send queue
 * (ENOMEM: an application that keeps it full) is no failure: posts are
 * held now, completions make room, and do_suspend() tries again.
 */
static void post_marker(struct serve_entry *e)
{
	struct migr_qp *mqp = e->mqp;
	int ret;

	ret = migr_qp_post_marker(e->ctx, mqp, &e->s->peer_marker);
	if (ret && ret != ENOMEM) {
		migr_psess_end(e->s, mqp);
		e->s = NULL;
		FAILED(e, "posting the drain marker failed: %s", strerror(ret));
	}
}

/* Hold the QP's posts and post its marker; the drain is done for all */
static void suspend_one(struct serve_entry *e)
{
	migr_qp_drain_begin(e->mqp);
	post_marker(e);
}

/*
 * Every QP of the request stops taking posts (one quiesce for all, by the
 * caller); the drain's bound, as the last entry read said it
 */
static unsigned int hold_posts(struct serve_entry *v, unsigned int n)
{
	unsigned int i, wait_ms = 0;

	for (i = 0; i < n; i++) {
		struct serve_entry *e = &v[i];

		if (!e->mqp || !e->s)
			continue;
		if (!migr_pserve_read_suspend(e->args, &wait_ms)) {
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
	return wait_ms;
}

/* Everything sent before the suspension is acked when it completes */
static void drain_all(struct serve_entry *v, unsigned int n,
		      unsigned int wait_ms)
{
	double deadline = now_ms() + wait_ms;
	unsigned int i, left;

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
}

/* Its send count, or why it did not drain (the mover may replay, then) */
static void answer_suspend(struct serve_entry *e)
{
	bool failed = e->mqp->marker.failed;

	if (migr_qp_drained(e->mqp)) {
		migr_replay_drained(e->mqp);
		RESULT(e, true, "{\"ok\":true,\"consumers\":%" PRIu64 "}",
		       e->mqp->n_consumers);
		return;
	}
	migr_qp_log_state(e->mqp, "not drained for its partner");
	/* the mover decides with our RECV counts (recvs_one()) */
	if (!failed && e->ctx->replay) {
		e->s->undrained = true;
		RESULT(e, true,
		       "{\"ok\":true,\"undrained\":true,\"consumers\":%" PRIu64
		       "}",
		       e->mqp->n_consumers);
		return;
	}
	migr_psess_end(e->s, e->mqp);
	e->s = NULL;
	FAILED(e, "QP 0x%x: its send queue %s", e->qpn,
	       failed ? "failed while draining" : "did not drain in time");
}

/*
 * Every QP of the request stops taking posts at once (one quiesce), gets
 * a marker behind what it sent, and the request waits for all of them.
 */
void migr_pserve_suspend(struct serve_entry *v, unsigned int n,
			 const char *pairs, const union ibv_gid *gid)
{
	unsigned int i, wait_ms = hold_posts(v, n);

	if (migr_quiesce(QUIESCE_MS)) {
		for (i = 0; i < n; i++)
			if (v[i].ok) {
				v[i].s->suspended = true;
				migr_psess_end(v[i].s, v[i].mqp);
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
	drain_all(v, n, wait_ms);
	for (i = 0; i < n; i++)
		if (v[i].ok)
			answer_suspend(&v[i]);
}

/*
 * What the QP received and was given, counted or not; if it did not drain,
 * whether it replays, decided from the mover's counts
 */
static void recvs_one(struct serve_entry *e)
{
	struct migr_qp *mqp = e->mqp;
	struct migr_replay_peer me, mover;
	char why[200] = "", esc[1300];
	int counted = 0;
	bool replay;

	migr_qp_drain_cqs(mqp);
	migr_replay_peer_of(mqp, &me);
	replay = !e->s->undrained;
	if (!replay) {
		/* the mover's RECVs are held and counted: decide */
		if (!migr_pserve_read_recvs(e->args, &counted, &mover.recvs,
					    &mover.posted))
			snprintf(why, sizeof(why),
				 "QP 0x%x: no RECV count of the mover's",
				 e->qpn);
		mover.counted = counted;
		replay = !why[0] &&
			 !migr_replay_plan(mqp, &mover, why, sizeof(why));
	}
	migr_json_str_buf(esc, sizeof(esc), why);
	RESULT(e, true,
	       "{\"ok\":true,\"counted\":%s,\"recvs\":%" PRIu64
	       ",\"posted\":%" PRIu64
	       ",\"replay\":%s,\"replay_consumers\":%u,\"error\":%s}",
	       me.counted ? "true" : "false", me.recvs, me.posted,
	       replay ? "true" : "false", mqp->replay.consumers, esc);
}

/*
 * The mover's drain hit its bound and it would post its unfinished WRs
 * again (replay.c): from now on RECVs wait for the new QP, and the answer
 * says what this QP received and was given, counted (MIGR_REPLAY=1 here
 * too) or not; on an SRQ, given is what it took plus what the SRQ has
 * left. Final: nothing more can arrive without a RECV.
 */
void migr_pserve_recvs(struct serve_entry *v, unsigned int n, const char *pairs,
		       const union ibv_gid *gid)
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
	for (i = 0; i < n; i++)
		if (v[i].ok)
			recvs_one(&v[i]);
}

/* Its replica says the moved peer's QP is new_qpn now */
static int learn_new_qpn(struct serve_entry *e, unsigned int new_qpn)
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
static bool repoint_one(struct serve_entry *e, const union ibv_gid *gid,
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
static void replace_one(struct serve_entry *e, const union ibv_gid *gid,
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
static void reconnect_one(struct serve_entry *e)
{
	struct migr_qp *mqp = e->mqp;
	uint64_t consumers, unused;
	unsigned int new_qpn;
	union ibv_gid gid;
	char gidhex[33];
	int ret;

	if (!migr_pserve_read_reconnect(e->args, &new_qpn, gidhex,
					&consumers) ||
	    migr_gid_parse(gidhex, &gid)) {
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

/* Every QP of the request reconnected to its moved peer's new QP */
void migr_pserve_reconnect(struct serve_entry *v, unsigned int n,
			   const char *pairs, const union ibv_gid *gid)
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

/* resume and abort: the session ends, whatever state it reached */
static void end_one(struct serve_entry *e)
{
	double held = e->s->suspended ? now_ms() - e->s->t_suspended : 0;
	unsigned int replayed = migr_psess_end(e->s, e->mqp);

	RESULT(e, true, "{\"ok\":true,\"replayed\":%u,\"held_ms\":%.1f}",
	       replayed, held);
}

void migr_pserve_end(struct serve_entry *v, unsigned int n, const char *pairs,
		     const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i].mqp)
			end_one(&v[i]);
}
