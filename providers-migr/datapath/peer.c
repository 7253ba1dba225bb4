// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Replicas of the tables of the contexts our QPs talk to in other
 * processes, one per such context. Virtual values are only unique within
 * the context that gave them out: a server's clients on two hosts
 * commonly have QPs with the same number and keys that collide, so what
 * one of them announces after it moved must not bend the other's.
 * A peer context is named by the random id it sends in the partner
 * protocol; a QP learns which replica is its partner's at the first
 * switch either side makes, and until then translates nothing (right
 * for a peer that never moved). The data path only follows mqp->remote.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "datapath.h"
#include "migr.h"
#include "peer.h"

struct migr_peer {
	struct list_node entry;
	uint64_t id;
	struct migr_xlate xlate;
};

static uint64_t new_id(const void *salt)
{
	struct timespec ts;
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) == sizeof(id) && id)
		return id;
	/* no entropy yet (early boot): unique enough among live processes */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^
	       ((uint64_t)ts.tv_sec << 20) ^ (uintptr_t)salt;
}

struct migr_xlate *migr_peer_tables(struct migr_context *ctx, uint64_t id)
{
	struct migr_peer *p;

	pthread_mutex_lock(&ctx->peers.lock);
	list_for_each (&ctx->peers.list, p, entry)
		if (p->id == id)
			goto found;
	p = calloc(1, sizeof(*p));
	if (!p) {
		pthread_mutex_unlock(&ctx->peers.lock);
		return NULL;
	}
	p->id = id;
	migr_xlate_init(&p->xlate);
	list_add_tail(&ctx->peers.list, &p->entry);
found:
	pthread_mutex_unlock(&ctx->peers.lock);
	return &p->xlate;
}

bool migr_peer_tables_are(struct migr_context *ctx, const struct migr_xlate *x,
			  uint64_t id)
{
	struct migr_peer *p;
	bool found = false;

	pthread_mutex_lock(&ctx->peers.lock);
	list_for_each (&ctx->peers.list, p, entry)
		if (p->id == id) {
			found = &p->xlate == x;
			break;
		}
	pthread_mutex_unlock(&ctx->peers.lock);
	return found;
}

int migr_peer_tie(struct migr_qp *mqp, uint64_t id)
{
	struct migr_xlate *x = migr_peer_tables(mqp->ctx, id);

	if (!x)
		return ENOMEM;
	if (mqp->remote != x) {
		__atomic_store_n(&mqp->remote, x, __ATOMIC_RELEASE);
		migr_qp_update_slow(mqp);
	}
	return 0;
}

void migr_peers_init(struct migr_context *ctx)
{
	list_head_init(&ctx->peers.list);
	pthread_mutex_init(&ctx->peers.lock, NULL);
	ctx->peers.id = new_id(ctx);
}

void migr_peers_free(struct migr_context *ctx)
{
	struct migr_peer *p, *next;

	list_for_each_safe (&ctx->peers.list, p, next, entry) {
		list_del(&p->entry);
		migr_xlate_destroy(&p->xlate);
		free(p);
	}
	pthread_mutex_destroy(&ctx->peers.lock);
}
