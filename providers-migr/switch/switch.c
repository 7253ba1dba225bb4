// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The live switch of one context, in the order of MigrRDMA's
 * wait-before-stop: check everything first (nothing is touched if the
 * switch cannot happen), suspend posting, let the send queues drain while
 * completions go to shadow CQs, release every lower object, rebuild the
 * record on the target, then post again what the old queues never used
 * and what was held meanwhile. A failure before release resumes on the
 * old objects; a failure in the rebuild rebuilds on the original device.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "datapath.h"
#include "marker.h"
#include "partner_call.h"
#include "partner_steps.h"
#include "qp_phase.h"
#include "rebuild.h"
#include "replay.h"
#include "switch.h"
#include "switch_objects.h"
#include "switch_set.h"
#include "ud_announce.h"
#include "verbs.h"

/* Post the held WRs in order, then let posts through again */
static unsigned int resume(struct migr_context *ctx)
{
	unsigned int held = 0;
	struct migr_qp *mqp;
	struct migr_cq *mcq;

	held += migr_srqs_resume(ctx);
	list_for_each (&ctx->rec.qps, mqp, entry) {
		migr_marker_ungrant(mqp);
		migr_ud_marker_drop(mqp);
		held += migr_qp_resume(mqp);
	}
	migr_dms_resume(ctx);
	__atomic_store_n(&ctx->switch_active, false, __ATOMIC_RELEASE);
	/* CQs with nothing left to hand out go back to the fast path */
	list_for_each (&ctx->rec.cqs, mcq, entry) {
		pthread_mutex_lock(&mcq->shadow_lock);
		migr_shadow_settle(mcq);
		pthread_mutex_unlock(&mcq->shadow_lock);
	}
	return held;
}

/* The unfinished WRs of the plan, on the rebuilt QPs */
static void replay_unfinished(struct migr_context *ctx,
			      struct migr_switch_report *rep)
{
	struct migr_qp *mqp;

	list_for_each (&ctx->rec.qps, mqp, entry)
		rep->replayed_wrs += migr_qp_replay(mqp, &rep->lost);
}

/* Post the unused RECVs again, in their order, on the rebuilt QPs */
static int repost_recvs(struct migr_context *ctx, const uint64_t *unused,
			struct migr_switch_report *rep)
{
	struct migr_qp *mqp;
	unsigned int q = 0;
	int ret;

	ret = migr_srqs_repost(ctx, &rep->reposted_recvs, rep->error,
			       sizeof(rep->error));
	if (ret)
		return ret;
	list_for_each (&ctx->rec.qps, mqp, entry) {
		ret = migr_repost_recvs(mqp, unused[q], rep->error,
					sizeof(rep->error));
		if (ret)
			return ret;
		rep->reposted_recvs += unused[q++];
	}
	return 0;
}

/* Arm again what the application had armed; owe events for the shadows */
static void rearm_cqs(struct migr_context *ctx)
{
	struct migr_cq *mcq;

	list_for_each (&ctx->rec.cqs, mcq, entry) {
		if (!mcq->armed)
			continue;
		ibv_req_notify_cq(mcq->lower, mcq->armed_solicited);
		pthread_mutex_lock(&mcq->shadow_lock);
		if (mcq->shadow.count && mcq->unsignalled && mcq->mch) {
			mcq->armed = false;
			mcq->unsignalled = 0;
			migr_channel_raise(mcq->mch, mcq);
		}
		pthread_mutex_unlock(&mcq->shadow_lock);
	}
}

/* Every partner elsewhere agrees to follow, or nothing happens */
static int partners_prepare(struct sw_set *set, unsigned int wait_ms,
			    struct migr_switch_report *rep)
{
	unsigned int lease = set->lease_ms ?: MIGR_PARTNER_LEASE_MS + wait_ms;

	return migr_partners_prepare(set->partners, set->npartners, lease,
				     rep->error, sizeof(rep->error));
}

/*
 * Each partner connects a new QP to our rebuilt one. On the way back
 * (rollback) a partner that cannot be reached is left behind: its QP here
 * is connected to its old number, as if it had died without a switch.
 */
static int partners_reconnect(struct sw_set *set, bool rollback,
			      struct migr_switch_report *rep)
{
	char why[256];
	unsigned int i;
	int ret;

	if (!set->npartners)
		return 0;
	ret = migr_partners_reconnect(set->partners, set->npartners, why,
				      sizeof(why));
	if (!ret) {
		for (i = 0; i < set->npartners; i++)
			if (set->partners[i].new_qpn == set->partners[i].qpn)
				rep->partners_kept++;
		return 0;
	}
	if (!rollback) {
		snprintf(rep->error, sizeof(rep->error), "%s", why);
		return ret;
	}
	verbs_err(&set->ctx[0]->vctx, "switch: rollback: %s\n", why);
	/* the rollback goes on, but whoever asked for it must know */
	if (!rep->partner_error[0])
		snprintf(rep->partner_error, sizeof(rep->partner_error), "%s",
			 why);
	return 0;
}

static void partners_resume(struct sw_set *set, bool abort,
			    struct migr_switch_report *rep)
{
	char why[256];

	if (migr_partners_resume(set->partners, set->npartners, abort, why,
				 sizeof(why)) &&
	    !rep->partner_error[0])
		snprintf(rep->partner_error, sizeof(rep->partner_error), "%s",
			 why);
}

/*
 * Build every context on the device named name: objects, then links. An
 * error goes at off in rep->error (after the one that made us roll back)
 */
static int rebuild_set_at(struct sw_set *set, const char *name,
			  const struct migr_gid_move *gids, bool rollback,
			  struct migr_switch_report *rep, size_t off)
{
	struct migr_context *c;
	struct ibv_context *to;
	unsigned int i;
	double t;
	int ret;

	/* what this try gave (a rollback's, after a failed one) */
	rep->numbers_kept = rep->numbers_translated = rep->partners_kept = 0;
	rep->numbers_claimed = 0;
	for_each_ctx (set, i, c) {
		to = migr_open_by_name(name, rep);
		if (!to)
			return ENODEV;
		ret = migr_rebuild_objects(c, to, rep->error + off,
					   sizeof(rep->error) - off);
		rep->numbers_kept += c->numbers.kept;
		rep->numbers_translated += c->numbers.moved;
		rep->numbers_claimed += c->numbers.claimed;
		if (ret)
			return ret;
	}
	t = now_ms();
	ret = partners_reconnect(set, rollback, rep);
	rep->ms_partner += now_ms() - t;
	if (ret)
		return ret;
	for_each_ctx (set, i, c) {
		ret = migr_reconnect_all(c, &gids[i], rep->error + off,
					 sizeof(rep->error) - off);
		if (ret)
			return ret;
	}
	if (migr_ud_publish(set->ctx, set->n)) {
		REPORT(rep, "out of memory");
		return ENOMEM;
	}
	/* UD peers elsewhere: before anything resumes, so none is missed */
	t = now_ms();
	for_each_ctx (set, i, c) {
		ret = migr_ud_announce(c, &set->moves[i], rollback,
				       rep->error + off,
				       sizeof(rep->error) - off);
		if (ret)
			break;
	}
	rep->ms_partner += now_ms() - t;
	return ret;
}

/* The same; an error after an earlier one follows it, "; back on X: ..." */
static int rebuild_set(struct sw_set *set, const char *name,
		       const struct migr_gid_move *gids, bool rollback,
		       struct migr_switch_report *rep)
{
	size_t at = strlen(rep->error), off = at;
	char sep[80];
	int ret, n = 0;

	if (at) {
		n = snprintf(sep, sizeof(sep), "; back on %s: ", name);
		if (at + n < sizeof(rep->error) - 1)
			off = at + n;
	}
	ret = rebuild_set_at(set, name, gids, rollback, rep, off);
	/* Written at off (not over all of it by REPORT()): joined */
	if (off != at && ret && strlen(rep->error) == at && rep->error[off])
		memcpy(rep->error + at, sep, n);
	return ret;
}

/*
 * What a released QP flushed beyond its unused RECVs (unused NULL on the
 * way back: nothing is expected then) never completes for the
 * application: it counts as lost.
 */
static void account_flushes(struct migr_context *c, const uint64_t *unused,
			    struct migr_switch_report *rep)
{
	struct migr_qp *mqp;
	unsigned int q = 0;

	list_for_each (&c->rec.qps, mqp, entry) {
		uint64_t expect =
			unused ? migr_expected_flushes(mqp, unused[q]) : 0;

		q++;
		rep->flushed += mqp->release_flushes;
		verbs_debug(&c->vctx,
			    "switch: QP 0x%x released: RECVs posted %" PRIu64
			    ", unused %" PRIu64 ", flushed %u\n",
			    mqp->vqp.qp.qp_num, mqp->rlog.head, expect,
			    mqp->release_flushes);
		if (mqp->release_flushes <= expect)
			continue;
		migr_qp_log_state(mqp, "flushed more than its unused RECVs");
		rep->lost += mqp->release_flushes - expect;
	}
}

static void release_set(const struct sw_set *set, uint64_t **unused,
			struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;

	for_each_ctx (set, i, c) {
		rep->lost += migr_release_all(c, unused ? unused[i] : NULL);
		if (unused)
			migr_ud_unused_from_flushes(c, unused[i]);
		account_flushes(c, unused ? unused[i] : NULL, rep);
	}
	if (rep->lost)
		verbs_err(&set->ctx[0]->vctx,
			  "switch: %u completions were lost in the release\n",
			  rep->lost);
}

/* Prepare: markers may enter our QPs; every partner elsewhere agrees */
static int prepare_set(struct sw_set *set, unsigned int wait_ms,
		       struct migr_switch_report *rep)
{
	migr_sw_grant_markers(set);
	rep->partners = set->npartners;
	return partners_prepare(set, wait_ms, rep);
}

/* Save: device memory's contents, with nothing in flight toward it */
static int save_set(struct sw_set *set, struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;
	int ret;

	for_each_ctx (set, i, c) {
		ret = migr_dms_save(c, rep->error, sizeof(rep->error));
		if (ret)
			return ret;
	}
	return 0;
}

/* Release: the lower objects go; event reads wait meanwhile */
static void release_phase(struct sw_set *set, struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;

	for_each_ctx (set, i, c)
		pthread_rwlock_wrlock(&c->ev_lock);
	release_set(set, set->unused, rep);
	migr_count_device_holds(&rep->device_fds, &rep->device_maps);
}

/* The GIDs each context moves between, the other way round */
static void reverse_gids(struct sw_set *set)
{
	struct migr_context *c;
	unsigned int i, q;

	for_each_ctx (set, i, c) {
		struct migr_gid_move *g = &set->gids[i];

		for (q = 0; q < g->n; q++) {
			union ibv_gid tmp = g->e[q].from;

			g->e[q].from = g->e[q].to;
			g->e[q].to = tmp;
		}
	}
}

/*
 * Rebuild every object on the new device, or, failing that, back on the
 * original one (rolled back). *stuck: not even that: nothing to run on.
 */
static int rebuild_phase(struct sw_set *set, struct migr_switch_report *rep,
			 bool *stuck)
{
	struct migr_context *c;
	unsigned int i;
	int ret;

	*stuck = false;
	ret = rebuild_set(set, rep->to, set->gids, set->way_back, rep);
	if (ret && set->no_way_back) {
		/* Released by the caller; where it goes is the caller's call */
		*stuck = true;
	} else if (ret) {
		/* Back where we were: the original device, same record */
		rep->rolled_back = true;
		release_set(set, NULL, rep);
		reverse_gids(set);
		if (rebuild_set(set, rep->from, set->gids, true, rep)) {
			/* QPs stay suspended; say it */
			verbs_err(&set->ctx[0]->vctx,
				  "switch: rollback to %s failed: %s\n",
				  rep->from, rep->error);
			*stuck = true;
		}
	}
	for_each_ctx (set, i, c)
		pthread_rwlock_unlock(&c->ev_lock);
	if (*stuck || rep->rolled_back)
		return ret;
	for_each_ctx (set, i, c) {
		pthread_mutex_lock(&c->rec.lock);
		migr_gid_history_add(&c->gid_history, &set->moves[i]);
		pthread_mutex_unlock(&c->rec.lock);
	}
	return 0;
}

/*
 * Replay: RECVs posted again, partners resumed, what never ran, then what
 * was held meanwhile, and posts let through again
 */
static int replay_phase(struct sw_set *set, int ret,
			struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;

	/*
	 * Armed before anything can complete on the new CQs: an event-driven
	 * application waits for the event a completion raises on an armed
	 * CQ, and completions that came before the arm raise none.
	 */
	for_each_ctx (set, i, c)
		rearm_cqs(c);
	for_each_ctx (set, i, c)
		if (repost_recvs(c, set->unused[i], rep) && !ret)
			ret = EIO;
	/* Partners first: our RECVs are posted, and they are further away */
	partners_resume(set, false, rep);
	for (i = 0; i < set->npartners; i++) {
		rep->partner_replayed_wrs += set->partners[i].replayed;
		if (set->partners[i].held_ms > rep->ms_partner_held)
			rep->ms_partner_held = set->partners[i].held_ms;
	}
	/* What never ran goes before what was held meanwhile */
	for_each_ctx (set, i, c)
		replay_unfinished(c, rep);
	for_each_ctx (set, i, c) {
		rep->held_wrs += resume(c);
		if (!ret)
			c->switches++;
	}
	return ret;
}

/* How far a switch got before it failed: what undoing it takes */
enum sw_reached {
	SW_PREPARED, /* markers granted, partners asked */
	SW_SUSPENDED, /* posts held, partners suspended */
};

/*
 * The one way back before the release: everything resumes on the lower
 * objects it has, partners abort. Returns ret.
 */
static int roll_back(struct sw_set *set, enum sw_reached reached, int ret,
		     struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;

	if (reached == SW_PREPARED) {
		partners_resume(set, true, rep);
		migr_sw_ungrant_markers(set);
		return ret;
	}
	rep->rolled_back = true;
	for_each_ctx (set, i, c) {
		migr_replay_forget(c);
		rep->held_wrs += resume(c);
	}
	partners_resume(set, true, rep);
	return ret;
}

/*
 * The switch's first half: check, prepare, suspend, drain, count, save,
 * release. 0 when the set holds no device any more; a failure has rolled
 * back (everything runs on its lower objects again).
 */
int migr_set_park(struct sw_set *set, const char *target, unsigned int wait_ms,
		  struct migr_switch_report *rep)
{
	double t = now_ms();
	struct ibv_context *to;
	int ret;

	to = migr_sw_open_target(set, target, rep, &ret);
	if (!to)
		return ret;
	ret = migr_sw_check_set(set, to, rep);
	if (!ret)
		ret = prepare_set(set, wait_ms, rep);
	if (ret)
		return roll_back(set, SW_PREPARED, ret, rep);

	ret = migr_sw_suspend_set(set, wait_ms, rep);
	rep->ms_suspend = now_ms() - t;
	if (ret)
		return roll_back(set, SW_SUSPENDED, ret, rep);

	t = now_ms();
	ret = migr_sw_drain_set(set, wait_ms, rep);
	if (!ret)
		ret = migr_sw_count_set(set, rep);
	if (!ret)
		ret = save_set(set, rep);
	rep->ms_drain = now_ms() - t;
	if (ret)
		return roll_back(set, SW_SUSPENDED, ret, rep);

	t = now_ms();
	release_phase(set, rep);
	rep->ms_release = now_ms() - t;
	return 0;
}

/* The second half: rebuild on rep->to (or back on rep->from), replay */
int migr_set_unpark(struct sw_set *set, struct migr_switch_report *rep)
{
	double t = now_ms();
	bool stuck;
	int ret;

	ret = rebuild_phase(set, rep, &stuck);
	if (stuck) {
		/* Nothing half built stays: a later try starts released */
		release_set(set, NULL, rep);
		return EIO;
	}
	rep->ms_rebuild = now_ms() - t - rep->ms_partner;

	t = now_ms();
	ret = replay_phase(set, ret, rep);
	rep->ms_replay = now_ms() - t;
	return ret;
}

/*
 * The switch, phase after phase (docs/architecture.md, "A switch, phase by phase"):
 * check, prepare, suspend, drain, count, save, release, rebuild, replay.
 * A failure before the release rolls back (roll_back()); after it, the
 * rebuild goes back to the original device.
 */
static int switch_locked(struct sw_set *set, const char *target,
			 unsigned int wait_ms, struct migr_switch_report *rep)
{
	int ret = migr_set_park(set, target, wait_ms, rep);

	return ret ? ret : migr_set_unpark(set, rep);
}

/* QPs of the set: at most that many partners */
static unsigned int count_qps(struct migr_context **ctxs, unsigned int n)
{
	unsigned int i, qps = 0;
	struct migr_qp *mqp;

	for (i = 0; i < n; i++)
		list_for_each (&ctxs[i]->rec.qps, mqp, entry)
			qps++;
	return qps;
}

struct sw_set *migr_set_new(struct migr_context **ctxs, unsigned int n,
			    struct migr_switch_report *rep)
{
	struct sw_set *set = calloc(1, sizeof(*set));
	unsigned int i;

	memset(rep, 0, sizeof(*rep));
	rep->device_fds = rep->device_maps = -1;
	rep->contexts = n;
	if (!set)
		goto nomem;
	set->n = n;
	set->ctx = calloc(n, sizeof(*set->ctx));
	set->gids = calloc(n, sizeof(*set->gids));
	set->moves = calloc(n, sizeof(*set->moves));
	set->unused = calloc(n, sizeof(*set->unused));
	set->tables = calloc(n, sizeof(*set->tables));
	set->partners = calloc(count_qps(ctxs, n) + 1, sizeof(*set->partners));
	if (!set->ctx || !set->gids || !set->moves || !set->unused ||
	    !set->tables || !set->partners) {
		migr_set_free(set);
		goto nomem;
	}
	memcpy(set->ctx, ctxs, n * sizeof(*ctxs));
	for (i = 0; i < n; i++)
		pthread_rwlock_wrlock(&set->ctx[i]->ctl_lock);
	return set;
nomem:
	REPORT(rep, "out of memory");
	return NULL;
}

void migr_set_free(struct sw_set *set)
{
	unsigned int i;

	if (!set)
		return;
	for (i = 0; set->unused && i < set->n; i++)
		free(set->unused[i]);
	for (i = 0; set->tables && i < set->n; i++)
		migr_gid_table_free(&set->tables[i]);
	free(set->partners);
	free(set->tables);
	free(set->unused);
	free(set->moves);
	free(set->gids);
	free(set->ctx);
	free(set);
}

void migr_set_done(struct sw_set *set)
{
	unsigned int i;

	for (i = set->n; i-- > 0;)
		pthread_rwlock_unlock(&set->ctx[i]->ctl_lock);
	migr_set_free(set);
}

int migr_switch(struct migr_context **ctxs, unsigned int n, const char *target,
		unsigned int wait_ms, struct migr_switch_report *rep)
{
	double t0 = now_ms();
	struct sw_set *set;
	int ret = ENOMEM;

	if (!n) {
		memset(rep, 0, sizeof(*rep));
		REPORT(rep, "the process has no migr device open");
		return ENODEV;
	}
	set = migr_set_new(ctxs, n, rep);
	if (set) {
		ret = switch_locked(set, target, wait_ms, rep);
		migr_set_done(set);
	}
	rep->ms_total = now_ms() - t0;
	if (ret == EBUSY)
		verbs_info(&ctxs[0]->vctx, "switch put off: %s\n", rep->error);
	else if (ret)
		verbs_err(&ctxs[0]->vctx, "switch to %s failed: %s\n",
			  target ? target : "the same device", rep->error);
	else
		verbs_info(
			&ctxs[0]->vctx,
			"switched %s -> %s: %u contexts, %u QPs, %u partners, %.2f ms\n",
			rep->from, rep->to, n, rep->qps, rep->partners,
			rep->ms_total);
	return ret;
}
