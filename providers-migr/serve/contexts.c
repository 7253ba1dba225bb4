// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The process's migr contexts (contexts.h): one list under one lock, the
 * lookups the agent's steps make in it, and the QPs of this process a
 * connect finds as its partners.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "contexts.h"
#include "verbs.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(ctxs);

void migr_contexts_add(struct migr_context *ctx)
{
	pthread_mutex_lock(&lock);
	list_add_tail(&ctxs, &ctx->entry);
	pthread_mutex_unlock(&lock);
}

void migr_contexts_remove(struct migr_context *ctx)
{
	struct migr_context *c;
	struct migr_qp *mqp;

	list_del(&ctx->entry);
	/* QPs left connected to this context's QPs stop using its tables */
	list_for_each (&ctxs, c, entry) {
		pthread_mutex_lock(&c->rec.lock);
		list_for_each (&c->rec.qps, mqp, entry) {
			if (mqp->remote != &ctx->xlate)
				continue;
			mqp->remote = &c->remote;
			mqp->self = false;
			migr_qp_update_slow(mqp);
		}
		pthread_mutex_unlock(&c->rec.lock);
	}
}

/*
 * The context of this process that holds the live QP numbered vqpn on the
 * device ctx is on, if any: a partner in this process, whose table the QP
 * can use. Call it without ctx's ctl_lock (lock order: ctxs, then ctl).
 */
struct migr_context *migr_local_peer(struct migr_context *ctx, uint32_t vqpn)
{
	struct migr_context *c, *found = NULL;
	uint32_t phys;

	pthread_mutex_lock(&lock);
	list_for_each (&ctxs, c, entry) {
		if (c->lower && ctx->lower &&
		    c->lower->device == ctx->lower->device &&
		    migr_xlate_phys_of(&c->xlate, MIGR_XLATE_QPN, vqpn,
				       &phys)) {
			found = c;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}

bool migr_contexts_lock_within(unsigned int timeout_ms)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, timeout_ms);

	return !pthread_mutex_timedlock(&lock, &ts);
}

void migr_contexts_lock(void)
{
	pthread_mutex_lock(&lock);
}

void migr_contexts_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

unsigned int migr_contexts_get(struct migr_context **v, unsigned int max)
{
	struct migr_context *c;
	unsigned int n = 0;

	list_for_each (&ctxs, c, entry) {
		if (n < max)
			v[n] = c;
		n++;
	}
	return max && n > max ? max : n;
}

/* Does port have gid? One query of the whole table where the kernel can */
static bool port_has_gid(struct ibv_context *lower, uint8_t port,
			 const union ibv_gid *gid)
{
	struct ibv_gid_entry *t;
	struct ibv_port_attr pa;
	union ibv_gid g;
	ssize_t n, i;
	bool found = false;

	if (ibv_query_port(lower, port, &pa) || !pa.gid_tbl_len)
		return false;
	t = calloc(pa.gid_tbl_len, sizeof(*t));
	n = t ? ibv_query_gid_table(lower, t, pa.gid_tbl_len, 0) : -1;
	for (i = 0; i < n && !found; i++)
		found = t[i].port_num == port &&
			!memcmp(&t[i].gid, gid, sizeof(*gid));
	free(t);
	if (n >= 0)
		return found;
	/* No table query: the first entries, where RoCE puts an address's */
	for (i = 0; i < 16 && i < pa.gid_tbl_len && !found; i++)
		found = !ibv_query_gid(lower, port, i, &g) &&
			!memcmp(&g, gid, sizeof(g));
	return found;
}

/*
 * Is QP on gid: its own GID once connected, else one of its port's, or
 * one its port had before a switch (a peer that read it then connects)
 */
static bool qp_on_gid(struct migr_context *c, const struct migr_qp *mqp,
		      const union ibv_gid *gid)
{
	const struct ibv_ah_attr *ah = &mqp->attr.ah_attr;
	union ibv_gid g, now;

	if (!c->lower)
		return false;
	if (migr_gid_history_find(&c->gid_history, gid, &now))
		gid = &now;
	if (ah->is_global)
		return !ibv_query_gid(c->lower, ah->port_num,
				      ah->grh.sgid_index, &g) &&
		       !memcmp(&g, gid, sizeof(g));
	return port_has_gid(c->lower,
			    mqp->attr.port_num ? mqp->attr.port_num : 1, gid);
}

struct migr_qp *migr_contexts_find_qp(uint32_t vqpn, const union ibv_gid *gid,
				      struct migr_context **ctx)
{
	struct migr_context *c;
	struct migr_qp *mqp, *found = NULL;

	*ctx = NULL;
	list_for_each (&ctxs, c, entry) {
		pthread_mutex_lock(&c->rec.lock);
		list_for_each (&c->rec.qps, mqp, entry) {
			if (mqp->vqp.qp.qp_num != vqpn ||
			    !qp_on_gid(c, mqp, gid))
				continue;
			found = mqp;
			*ctx = c;
			break;
		}
		pthread_mutex_unlock(&c->rec.lock);
		if (found)
			break;
	}
	return found;
}
