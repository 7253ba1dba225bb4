// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A switch's check (switch_set.h): the target device opened, each QP's
 * peer in the process and partner elsewhere found once, and everything
 * that must hold before anything is touched; the objects counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "partner_call.h"
#include "partner_steps.h"
#include "qp_phase.h"
#include "switch_objects.h"
#include "switch_set.h"
#include "u32map.h"
#include "verbs.h"

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

/* What must hold for one QP: healthy, its partner found, its GIDs there */
static int precheck_qp(struct sw_set *set, struct migr_context *ctx,
		       struct migr_qp *mqp, struct ibv_context *target,
		       struct migr_gid_move *gids,
		       struct migr_switch_report *rep)
{
	enum ibv_qp_state st = mqp->attr.qp_state;

	if (st == IBV_QPS_ERR || st == IBV_QPS_SQE || st == IBV_QPS_SQD) {
		REPORT(rep, "QP 0x%x is in state %d; only healthy QPs can move",
		       mqp->vqp.qp.qp_num, st);
		return EINVAL;
	}
	if (st < IBV_QPS_RTR || mqp->vqp.qp.qp_type == IBV_QPT_UD)
		return 0;
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
		int ret = precheck_qp(set, ctx, mqp, target, gids, rep);

		if (ret)
			return ret;
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
 * The device named target (the one the set is on, for a rebuild), open;
 * NULL with *ret: none of that name, or the set is on it already
 */
struct ibv_context *migr_sw_open_target(struct sw_set *set, const char *target,
					struct migr_switch_report *rep,
					int *ret)
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
int migr_sw_check_set(struct sw_set *set, struct ibv_context *to,
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
