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
#include "partner.h"
#include "qp_phase.h"
#include "rebuild.h"
#include "replay.h"
#include "switch.h"
#include "switch_objects.h"
#include "switch_set.h"
#include "u32map.h"
#include "ud_peers.h"
#include "verbs.h"

#define REPORT(rep, fmt, ...)                                                  \
	snprintf((rep)->error, sizeof((rep)->error), fmt, ##__VA_ARGS__)

/* The real device named name (or the one under the migr twin of that name) */
static struct ibv_device *find_device(struct ibv_device **list,
				      const char *name)
{
	int i;

	for (i = 0; list && list[i]; i++) {
		struct verbs_device *vdev = verbs_get_device(list[i]);

		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		return vdev->lower ? &vdev->lower->device : list[i];
	}
	return NULL;
}

#define for_each_ctx(set, i, c)                                                \
	for ((i) = 0; (i) < (set)->n && ((c) = (set)->ctx[(i)]); (i)++)

/* Every QP of every context of the set */
#define for_each_set_qp(set, i, c, mqp)                                        \
	for_each_ctx (set, i, c)                                               \
		list_for_each (&(c)->rec.qps, mqp, entry)

/*
 * Each QP's peer in this process (its table is its context's), found once
 * for the set: looked up for every QP in several phases, a walk of the
 * QPs for each grew with their square (a thousand QPs and more).
 */
static int link_peers(struct sw_set *set)
{
	struct migr_u32map *by_qpn; /* per context: QP number -> index */
	struct migr_qp **qps, *mqp, *p;
	struct migr_context *c;
	unsigned int i, j, n = 0;
	uint32_t q;
	int ret = 0;

	for_each_set_qp(set, i, c, mqp)
	{
		mqp->partner.sw_peer = NULL;
		mqp->partner.sw_partner = NULL;
		n++;
	}
	qps = calloc(n + 1, sizeof(*qps));
	by_qpn = calloc(set->n, sizeof(*by_qpn));
	if (!qps || !by_qpn) {
		ret = ENOMEM;
		goto out;
	}
	n = 0;
	for_each_set_qp(set, i, c, mqp)
	{
		ret = migr_u32map_put(&by_qpn[i], mqp->vqp.qp.qp_num, n);
		if (ret)
			goto out;
		qps[n++] = mqp;
	}
	for_each_set_qp(set, i, c, mqp)
	{
		if (!mqp->self)
			continue;
		for (j = 0; j < set->n; j++) {
			if (mqp->remote != &set->ctx[j]->xlate ||
			    !migr_u32map_get(&by_qpn[j], mqp->attr.dest_qp_num,
					     &q))
				continue;
			p = qps[q];
			mqp->partner.sw_peer = p;
			break;
		}
	}
out:
	for (i = 0; by_qpn && i < set->n; i++)
		migr_u32map_free(&by_qpn[i]);
	free(by_qpn);
	free(qps);
	return ret;
}

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

static int add_gid(struct migr_gid_move *g, struct ibv_context *from,
		   struct ibv_context *to, const struct ibv_ah_attr *ah)
{
	unsigned int i;

	if (!ah->is_global)
		return 0;
	for (i = 0; i < g->n; i++)
		if (g->e[i].port == ah->port_num &&
		    g->e[i].index == ah->grh.sgid_index)
			return 0;
	if (g->n == MIGR_MAX_GIDS)
		return E2BIG;
	g->e[i].port = ah->port_num;
	g->e[i].index = ah->grh.sgid_index;
	if (ibv_query_gid(from, ah->port_num, ah->grh.sgid_index,
			  &g->e[i].from) ||
	    ibv_query_gid(to, ah->port_num, ah->grh.sgid_index, &g->e[i].to))
		return ENOENT;
	g->n++;
	return 0;
}

/* Everything that must hold for one context before anything is touched */
static int precheck(struct sw_set *set, struct migr_context *ctx,
		    struct ibv_context *target, struct migr_gid_move *gids,
		    struct migr_switch_report *rep)
{
	const char *blocker = migr_record_blocker(ctx);
	struct migr_qp *mqp;
	struct migr_ah *mah;

	if (!blocker)
		blocker = migr_mw2_blocker(ctx);
	if (blocker) {
		REPORT(rep,
		       "the process holds %s, which a switch cannot rebuild yet",
		       blocker);
		return EOPNOTSUPP;
	}
	if (migr_dms_precheck(ctx, target, rep->error, sizeof(rep->error)))
		return EOPNOTSUPP;
	list_for_each (&ctx->rec.qps, mqp, entry) {
		enum ibv_qp_state st = mqp->attr.qp_state;

		if (st == IBV_QPS_ERR || st == IBV_QPS_SQE ||
		    st == IBV_QPS_SQD) {
			REPORT(rep,
			       "QP 0x%x is in state %d; only healthy QPs can move",
			       mqp->vqp.qp.qp_num, st);
			return EINVAL;
		}
		if (st < IBV_QPS_RTR || mqp->vqp.qp.qp_type == IBV_QPT_UD)
			continue;
		if (mqp->partner.session) {
			REPORT(rep,
			       "QP 0x%x is held by its partner's switch; try again",
			       mqp->vqp.qp.qp_num);
			return EBUSY;
		}
		if (!mqp->partner.sw_peer) {
			struct migr_partner *p = &set->partners[set->npartners];
			int ret = migr_partner_init(p, mqp, rep->error,
						    sizeof(rep->error));

			if (ret)
				return ret;
			mqp->partner.sw_partner = p;
			set->npartners++;
		}
		if (add_gid(gids, ctx->lower, target, &mqp->attr.ah_attr)) {
			REPORT(rep, "GID index %u of port %u missing on %s",
			       mqp->attr.ah_attr.grh.sgid_index,
			       mqp->attr.ah_attr.port_num,
			       ibv_get_device_name(target->device));
			return ENOENT;
		}
	}
	list_for_each (&ctx->rec.ahs, mah, entry) {
		if (add_gid(gids, ctx->lower, target, &mah->attr)) {
			REPORT(rep, "GID index %u of port %u missing on %s",
			       mah->attr.grh.sgid_index, mah->attr.port_num,
			       ibv_get_device_name(target->device));
			return ENOENT;
		}
	}
	return migr_ud_precheck(ctx, set->ctx, set->n, rep->error,
				sizeof(rep->error));
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

static void hold_recvs(struct migr_context *ctx)
{
	struct migr_qp *mqp;

	list_for_each (&ctx->rec.qps, mqp, entry)
		migr_qp_hold_recvs(mqp);
	migr_srqs_hold_recvs(ctx);
}

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
	struct migr_replay_peer peer;
	struct migr_context *c;
	struct migr_qp *mqp, *p;
	bool ask = pp;
	unsigned int i;
	char why[200];
	size_t len;

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
		goto no_replay;
	for_each_set_qp(set, i, c, mqp)
	{
		if (mqp->attr.qp_state != IBV_QPS_RTS ||
		    migr_marker_drained(mqp))
			continue;
		p = mqp->partner.sw_peer;
		pp = mqp->partner.sw_partner;
		if (p)
			migr_replay_peer_of(p, &peer);
		else if (pp)
			peer = (struct migr_replay_peer){
				.counted = pp->recvs_counted,
				.recvs = pp->recvs,
				.posted = pp->recvs_posted,
			};
		if (migr_replay_plan(mqp, p || pp ? &peer : NULL, why,
				     sizeof(why)))
			goto no_replay;
	}
	verbs_warn(&set->ctx[0]->vctx, "switch: %s; replaying what never ran\n",
		   rep->error[0] ?
			   rep->error :
			   "a partner's send queue did not drain in time");
	rep->error[0] = 0;
	return 0;

no_replay:
	len = strlen(rep->error);
	snprintf(rep->error + len, sizeof(rep->error) - len, "%sno replay: %s",
		 len ? "; " : "", why);
	for_each_ctx (set, i, c)
		migr_replay_forget(c);
	return ETIMEDOUT;
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

static void count_objects(struct migr_context *ctx,
			  struct migr_switch_report *rep)
{
	struct migr_comp_channel *mch;
	struct migr_srq *msrq;
	struct migr_qp *mqp;
	struct migr_cq *mcq;
	struct migr_mr *mmr;
	struct migr_mw *mmw;
	struct migr_pd *mpd;
	struct migr_ah *mah;
	struct migr_dm *mdm;

	list_for_each (&ctx->rec.pds, mpd, entry)
		rep->pds++;
	list_for_each (&ctx->rec.dms, mdm, entry)
		rep->dms++;
	list_for_each (&ctx->rec.srqs, msrq, entry)
		rep->srqs++;
	list_for_each (&ctx->rec.mrs, mmr, entry)
		rep->mrs++;
	list_for_each (&ctx->rec.mws, mmw, entry)
		rep->mws++;
	list_for_each (&ctx->rec.channels, mch, entry)
		rep->channels++;
	list_for_each (&ctx->rec.cqs, mcq, entry)
		rep->cqs++;
	list_for_each (&ctx->rec.qps, mqp, entry)
		rep->qps++;
	list_for_each (&ctx->rec.ahs, mah, entry)
		rep->ahs++;
}

/* Every partner elsewhere agrees to follow, or nothing happens */
static int partners_prepare(struct sw_set *set, unsigned int wait_ms,
			    struct migr_switch_report *rep)
{
	unsigned int lease = set->lease_ms ?: MIGR_PARTNER_LEASE_MS + wait_ms;

	return migr_partners_prepare(set->partners, set->npartners, lease,
				     rep->error, sizeof(rep->error));
}

/* Each partner holds its posts and drains the QPs that face us */
static int partners_suspend(struct sw_set *set, unsigned int wait_ms,
			    struct migr_switch_report *rep)
{
	return migr_partners_suspend(set->partners, set->npartners, wait_ms,
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

/* Open the device called name, or NULL with rep->error set */
struct ibv_context *migr_open_by_name(const char *name,
				      struct migr_switch_report *rep)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;
	struct ibv_device *dev;

	dev = find_device(list, name);
	if (!dev)
		REPORT(rep, "no RDMA device named %s", name);
	else if (!(c = verbs_open_device(dev, NULL)))
		REPORT(rep, "opening %s failed: %s", name, strerror(errno));
	if (list)
		ibv_free_device_list(list);
	return c;
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

/* Markers from the other ends (partners' or our own) can enter every QP */
static void grant_markers(const struct sw_set *set)
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
static void ungrant_markers(const struct sw_set *set)
{
	struct migr_context *c;
	struct migr_qp *mqp;
	unsigned int i;

	for_each_set_qp(set, i, c, mqp) migr_marker_ungrant(mqp);
}

/*
 * The device named target (the one the set is on, for a rebuild), open;
 * NULL with *ret: none of that name, or the set is on it already
 */
static struct ibv_context *open_target(struct sw_set *set, const char *target,
				       struct migr_switch_report *rep, int *ret)
{
	struct ibv_context *to;

	snprintf(rep->from, sizeof(rep->from), "%s",
		 ibv_get_device_name(set->ctx[0]->lower->device));
	to = migr_open_by_name(target ? target : rep->from, rep);
	if (!to) {
		*ret = ENODEV;
		return NULL;
	}
	snprintf(rep->to, sizeof(rep->to), "%s",
		 ibv_get_device_name(to->device));
	if (target && !strcmp(rep->from, rep->to)) {
		REPORT(rep, "already on %s", rep->to);
		ibv_close_device(to);
		*ret = EALREADY;
		return NULL;
	}
	return to;
}

/* Check: every context can move to device to, which is closed after */
static int check_set(struct sw_set *set, struct ibv_context *to,
		     struct migr_switch_report *rep)
{
	struct migr_context *c;
	unsigned int i;
	int ret;

	ret = link_peers(set);
	if (ret)
		REPORT(rep, "out of memory");
	for_each_ctx (set, i, c) {
		if (ret)
			break;
		if (strcmp(ibv_get_device_name(c->lower->device), rep->from)) {
			REPORT(rep,
			       "the process uses %s and %s; a switch moves one device's contexts",
			       rep->from,
			       ibv_get_device_name(c->lower->device));
			ret = EINVAL;
		}
		if (!ret)
			ret = precheck(set, c, to, &set->gids[i], rep);
		/* none known: a peer that read an old GID is not told */
		if (!ret && migr_gid_moves(c->lower, to, &set->moves[i]))
			set->moves[i].n = 0;
		count_objects(c, rep);
		if (!ret) {
			set->unused[i] = calloc(rep->qps + 1, sizeof(uint64_t));
			if (!set->unused[i])
				ret = ENOMEM;
		}
		if (ret)
			break;
	}
	/* Between release and rebuild the process holds no device at all */
	ibv_close_device(to);
	return ret;
}

/* Prepare: markers may enter our QPs; every partner elsewhere agrees */
static int prepare_set(struct sw_set *set, unsigned int wait_ms,
		       struct migr_switch_report *rep)
{
	grant_markers(set);
	rep->partners = set->npartners;
	return partners_prepare(set, wait_ms, rep);
}

/* Suspend: from here on, posts are held and polls see the shadows */
static int suspend_set(struct sw_set *set, unsigned int wait_ms,
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

/*
 * Drain: every send queue empties (or what did not complete is planned
 * for a replay); then RECVs are held too, and none is on its way in
 */
static int drain_set(struct sw_set *set, unsigned int wait_ms,
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
static int count_set(struct sw_set *set, struct migr_switch_report *rep)
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
		ungrant_markers(set);
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

	to = open_target(set, target, rep, &ret);
	if (!to)
		return ret;
	ret = check_set(set, to, rep);
	if (!ret)
		ret = prepare_set(set, wait_ms, rep);
	if (ret)
		return roll_back(set, SW_PREPARED, ret, rep);

	ret = suspend_set(set, wait_ms, rep);
	rep->ms_suspend = now_ms() - t;
	if (ret)
		return roll_back(set, SW_SUSPENDED, ret, rep);

	t = now_ms();
	ret = drain_set(set, wait_ms, rep);
	if (!ret)
		ret = count_set(set, rep);
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
 * The switch, phase after phase (docs/architecture.md, "Live switch"):
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
