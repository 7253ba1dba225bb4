// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A switch's suspend, drain and count (switch_set.h), MigrRDMA's
 * wait-before-stop: the set's QPs hold their posts, each connected send
 * queue drains behind a marker while completions go to the shadows (or
 * what did not complete is planned for a replay), then RECVs are held
 * and each QP's unused ones counted. Each QP through its phases
 * (qp_phase.h), partners elsewhere through their steps (partner_call.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "marker.h"
#include "partner_call.h"
#include "partner_steps.h"
#include "qp_phase.h"
#include "replay.h"
#include "switch_objects.h"
#include "switch_set.h"
#include "verbs.h"

/* Where mqp's marker goes: its peer's bytes here, or its partner's */
static int marker_target(struct migr_qp *mqp, struct migr_marker_target *t)
{
	const struct migr_partner *p = mqp->partner.sw_partner;
	struct migr_qp *peer = mqp->partner.sw_peer;

	if (peer)
		return migr_marker_target(peer, t);
	if (!p)
		return ENOENT;
	*t = p->marker;
	return 0;
}

/* The SENDs the other end ever posted to mqp: they used its RECVs */
static uint64_t peer_consumers(const struct migr_qp *mqp)
{
	const struct migr_partner *p = mqp->partner.sw_partner;
	const struct migr_qp *peer = mqp->partner.sw_peer;

	/* a replay posts the peer's unfinished ones again: they used none */
	return peer ? peer->n_consumers - peer->replay.consumers :
	       p    ? p->consumers - p->replay_consumers :
		      0;
}

/* Markers from the other ends (partners' or our own) can enter every QP */
void migr_sw_grant_markers(const struct sw_set *set)
{
	struct migr_context *c;
	struct migr_qp *mqp;
	unsigned int i;

	for_each_set_qp(set, i, c, mqp)
	{
		if (mqp->vqp.qp.qp_type == IBV_QPT_RC && migr_marker_grant(mqp))
			verbs_debug(
				&c->vctx,
				"QP 0x%x: remote write for markers refused\n",
				mqp->vqp.qp.qp_num);
	}
}

/* Before anything was suspended: the QPs' own access flags again */
void migr_sw_ungrant_markers(const struct sw_set *set)
{
	struct migr_context *c;
	struct migr_qp *mqp;
	unsigned int i;

	for_each_set_qp(set, i, c, mqp) migr_marker_ungrant(mqp);
}

static void suspend(struct migr_context *ctx)
{
	struct migr_qp *mqp;
	struct migr_cq *mcq;

	__atomic_store_n(&ctx->switch_active, true, __ATOMIC_RELEASE);
	list_for_each (&ctx->rec.cqs, mcq, entry)
		migr_shadow_take(mcq);
	migr_srqs_suspend(ctx);
	list_for_each (&ctx->rec.qps, mqp, entry) {
		migr_qp_drain_begin(mqp);
		migr_qp_suspend(mqp);
	}
}

/* Each partner holds its posts and drains the QPs that face us */
static int partners_suspend(struct sw_set *set, unsigned int wait_ms,
			    struct migr_switch_report *rep)
{
	return migr_partners_suspend(set->partners, set->npartners, wait_ms,
				     rep->error, sizeof(rep->error));
}

/* Suspend: from here on, posts are held and polls see the shadows */
int migr_sw_suspend_set(struct sw_set *set, unsigned int wait_ms,
			struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;
	int ret;

	for_each_ctx (set, i, c)
		suspend(c);
	ret = migr_quiesce(QUIESCE_MS);
	if (ret) {
		REPORT(rep, ret == ENOSYS ?
				    "membarrier() is not available" :
				    "a thread stayed inside a post or poll");
		return ret;
	}
	return partners_suspend(set, wait_ms, rep);
}

static void hold_recvs(struct migr_context *ctx)
{
	struct migr_qp *mqp;

	list_for_each (&ctx->rec.qps, mqp, entry)
		migr_qp_hold_recvs(mqp);
	migr_srqs_hold_recvs(ctx);
}

static void drain_cqs(const struct sw_set *set, unsigned int *moved)
{
	struct migr_context *c;
	struct migr_cq *mcq;
	unsigned int i;
	int n;

	for_each_ctx (set, i, c) {
		list_for_each (&c->rec.cqs, mcq, entry) {
			n = migr_cq_drain(mcq);
			if (n > 0)
				*moved += n;
		}
	}
}

/* QPs whose send queue has not been seen to drain yet; the first one */
static unsigned int undrained(const struct sw_set *set, uint32_t *first)
{
	struct migr_context *c;
	struct migr_qp *mqp;
	unsigned int i, n = 0;

	for_each_ctx (set, i, c)
		list_for_each (&c->rec.qps, mqp, entry)
			if (mqp->attr.qp_state == IBV_QPS_RTS &&
			    !migr_qp_drained(mqp) && !n++)
				*first = mqp->vqp.qp.qp_num;
	return n;
}

/*
 * mqp's marker, unless out already: toward itself (UD), its peer here or
 * its partner elsewhere. ENOMEM, a full send queue, is tried again.
 */
static int post_marker(struct migr_context *c, struct migr_qp *mqp)
{
	struct migr_marker_target t;
	int ret;

	if (mqp->attr.qp_state != IBV_QPS_RTS || mqp->marker.sent)
		return 0;
	if (mqp->vqp.qp.qp_type == IBV_QPT_UD)
		return migr_ud_post_marker(c, mqp);
	ret = marker_target(mqp, &t);
	return ret ? ret : migr_qp_post_marker(c, mqp, &t);
}

/*
 * Wait until every connected send queue drained: each RTS QP gets a marker
 * behind the application's WRs; completions meanwhile go to the shadows.
 */
static int drain(const struct sw_set *set, unsigned int wait_ms,
		 struct migr_switch_report *rep)
{
	double deadline = now_ms() + wait_ms;
	unsigned int quiet = 0, i;
	struct migr_context *c;
	struct migr_qp *mqp;
	uint32_t first = 0;
	int ret;

	for (;;) {
		for_each_ctx (set, i, c) {
			list_for_each (&c->rec.qps, mqp, entry) {
				ret = post_marker(c, mqp);
				if (ret == EOPNOTSUPP) {
					REPORT(rep,
					       "QP 0x%x: its partner allows no remote write, read or atomic (or this QP no READ), so its send queue cannot be seen to drain",
					       mqp->vqp.qp.qp_num);
					return ret;
				}
			}
		}
		drain_cqs(set, &rep->shadowed);
		for_each_ctx (set, i, c) {
			list_for_each (&c->rec.qps, mqp, entry) {
				if (mqp->marker.failed) {
					REPORT(rep,
					       "QP 0x%x failed while draining",
					       mqp->vqp.qp.qp_num);
					return EIO;
				}
			}
		}
		if (!undrained(set, &first))
			break;
		if (now_ms() > deadline) {
			REPORT(rep,
			       "the send queues did not drain within %u ms (%u QPs pending, first 0x%x)",
			       wait_ms, undrained(set, &first), first);
			for_each_ctx (set, i, c) {
				list_for_each (&c->rec.qps, mqp, entry)
					if (!migr_marker_drained(mqp))
						migr_qp_log_state(
							mqp, "not drained");
			}
			return ETIMEDOUT;
		}
		usleep(50);
	}

	/* Receive completions may trail the acks that completed the markers */
	while (quiet < 3) {
		unsigned int before = rep->shadowed;

		usleep(500);
		drain_cqs(set, &rep->shadowed);
		quiet = rep->shadowed == before ? quiet + 1 : 0;
	}
	return 0;
}

/* A partner whose send queue facing us did not drain in time, or NULL */
static const struct migr_partner *partner_undrained(const struct sw_set *set)
{
	unsigned int i;

	for (i = 0; i < set->npartners; i++)
		if (set->partners[i].undrained)
			return &set->partners[i];
	return NULL;
}

/* The plan for a QP that did not drain, from what its other end received */
static int plan_qp(struct migr_qp *mqp, char *why, size_t why_len)
{
	const struct migr_partner *pp = mqp->partner.sw_partner;
	struct migr_qp *p = mqp->partner.sw_peer;
	struct migr_replay_peer peer;

	if (p)
		migr_replay_peer_of(p, &peer);
	else if (pp)
		peer = (struct migr_replay_peer){
			.counted = pp->recvs_counted,
			.recvs = pp->recvs,
			.posted = pp->recvs_posted,
		};
	return migr_replay_plan(mqp, p || pp ? &peer : NULL, why, why_len);
}

/* No replay after all: why, after the reason the drain gave */
static int no_replay(const struct sw_set *set, const char *why,
		     struct migr_switch_report *rep)
{
	size_t len = strlen(rep->error);
	struct migr_context *c;
	unsigned int i;

	snprintf(rep->error + len, sizeof(rep->error) - len, "%sno replay: %s",
		 len ? "; " : "", why);
	for_each_ctx (set, i, c)
		migr_replay_forget(c);
	return ETIMEDOUT;
}

/*
 * A drain hit its bound: ours, or a partner's (it said "undrained"). With
 * MIGR_REPLAY=1 the switch goes on if every QP that did not drain can have
 * its unfinished WRs posted again on the new one (replay.c says when). Our
 * RECVs are held by now, the partners' from their "recvs" step on: once
 * the CQs are emptied, the counts no longer change.
 */
static int plan_replay(const struct sw_set *set, struct migr_switch_report *rep)
{
	const struct migr_partner *pp = partner_undrained(set);
	struct migr_context *c;
	struct migr_qp *mqp;
	bool ask = pp;
	unsigned int i;
	char why[200];

	for_each_ctx (set, i, c) {
		if (!c->replay) {
			if (!rep->error[0])
				REPORT(rep,
				       "the partner's send queue facing QP 0x%x did not drain in time (replay needs MIGR_REPLAY=1 here too)",
				       pp->mqp->vqp.qp.qp_num);
			return ETIMEDOUT;
		}
		list_for_each (&c->rec.qps, mqp, entry)
			if (!migr_marker_drained(mqp) &&
			    mqp->partner.sw_partner)
				ask = true;
	}
	drain_cqs(set, &rep->shadowed);
	/* partners hold their RECVs, say what they received, and decide */
	if (ask && migr_partners_recvs(set->partners, set->npartners, why,
				       sizeof(why)))
		return no_replay(set, why, rep);
	for_each_set_qp(set, i, c, mqp)
	{
		if (mqp->attr.qp_state != IBV_QPS_RTS ||
		    migr_marker_drained(mqp))
			continue;
		if (plan_qp(mqp, why, sizeof(why)))
			return no_replay(set, why, rep);
	}
	verbs_warn(&set->ctx[0]->vctx, "switch: %s; replaying what never ran\n",
		   rep->error[0] ?
			   rep->error :
			   "a partner's send queue did not drain in time");
	rep->error[0] = 0;
	return 0;
}

/* Every WR logged so far on a QP that drained has completed */
static void mark_drained(const struct sw_set *set)
{
	struct migr_context *c;
	struct migr_qp *mqp;
	unsigned int i;

	for_each_set_qp(set, i, c, mqp)
	{
		if (migr_marker_drained(mqp))
			migr_replay_drained(mqp);
	}
}

/*
 * Drain: every send queue empties (or what did not complete is planned
 * for a replay); then RECVs are held too, and none is on its way in
 */
int migr_sw_drain_set(struct sw_set *set, unsigned int wait_ms,
		      struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;
	int ret;

	for_each_ctx (set, i, c)
		migr_replay_forget(c);
	ret = drain(set, wait_ms, rep);
	for_each_ctx (set, i, c)
		hold_recvs(c);
	if ((!ret || ret == ETIMEDOUT) && migr_quiesce(QUIESCE_MS)) {
		REPORT(rep, "a thread stayed inside a post or poll");
		ret = EBUSY;
	}
	if (ret == ETIMEDOUT || (!ret && partner_undrained(set)))
		ret = plan_replay(set, rep);
	if (!ret)
		mark_drained(set);
	return ret;
}

/* Count: the RECVs each QP (and SRQ) holds unused, to post them again */
int migr_sw_count_set(struct sw_set *set, struct migr_switch_report *rep)
{
	struct migr_context *c;
	struct migr_qp *mqp;
	unsigned int i, q;
	int ret;

	for_each_ctx (set, i, c) {
		q = 0;
		list_for_each (&c->rec.qps, mqp, entry) {
			if (migr_unused_recvs(mqp, peer_consumers(mqp),
					      &set->unused[i][q])) {
				REPORT(rep,
				       "QP 0x%x: its RECV count does not add up",
				       mqp->vqp.qp.qp_num);
				return EPROTO;
			}
			q++;
		}
		ret = migr_srqs_count_unused(c, rep->error, sizeof(rep->error));
		if (ret)
			return ret;
	}
	return 0;
}
