// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Connection slots by pool (slots.h) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "migrd.h"
#include "slots.h"

#define OWNERS_MAX 1024 /* max_clients and max_peers are at most 1024 */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int nlocal, nroot, npeers;
/* connections per local user (uid) or per peer address */
static struct {
	bool peer;
	uid_t uid;
	char addr[INET6_ADDRSTRLEN];
	unsigned int n;
} owners[OWNERS_MAX];

unsigned int slots_per_user(void)
{
	unsigned int n = migrd.conf.max_clients / 4;

	return n ? n : 1;
}

static bool same(int i, const struct slot_owner *o)
{
	if (!owners[i].n || owners[i].peer != o->peer)
		return false;
	return o->peer ? !strcmp(owners[i].addr, o->addr) :
			 owners[i].uid == o->uid;
}

/* o's entry, made if it has none; -1 if the table is full */
static int owner_of(const struct slot_owner *o)
{
	int i, free_slot = -1;

	for (i = 0; i < OWNERS_MAX; i++) {
		if (same(i, o))
			return i;
		if (!owners[i].n && free_slot < 0)
			free_slot = i;
	}
	if (free_slot >= 0) {
		owners[free_slot].peer = o->peer;
		owners[free_slot].uid = o->uid;
		snprintf(owners[free_slot].addr, sizeof(owners[free_slot].addr),
			 "%s", o->addr);
	}
	return free_slot;
}

/* A local client: the shared pool, its user's share of it; root's own */
static int local_get(struct slot_owner *o, int k, char *why, size_t len)
{
	if (o->uid == 0 && nlocal >= migrd.conf.max_clients) {
		if (nroot >= LOCAL_ROOT_SLOTS) {
			snprintf(why, len, "%u local connections busy",
				 nlocal + nroot);
			return -1;
		}
		nroot++;
		o->reserve = true;
		return 0;
	}
	if (nlocal >= migrd.conf.max_clients) {
		snprintf(why, len, "%u local connections busy", nlocal);
		return -1;
	}
	if (o->uid != 0 && owners[k].n >= slots_per_user()) {
		snprintf(why, len, "%u connections of uid %u busy", owners[k].n,
			 (unsigned int)o->uid);
		return -1;
	}
	nlocal++;
	return 0;
}

static int peer_get(int k, char *why, size_t len)
{
	if (npeers >= migrd.conf.max_peers) {
		snprintf(why, len, "%u peer connections busy", npeers);
		return -1;
	}
	if (owners[k].n >= PEERS_PER_ADDR) {
		snprintf(why, len, "%d connections from it busy",
			 PEERS_PER_ADDR);
		return -1;
	}
	npeers++;
	return 0;
}

int slot_get(struct slot_owner *o, char *why, size_t len)
{
	int k, ret = -1;

	pthread_mutex_lock(&lock);
	o->reserve = false;
	k = owner_of(o);
	if (k < 0)
		snprintf(why, len, "too many clients");
	else if (!(o->peer ? peer_get(k, why, len) : local_get(o, k, why, len)))
		ret = 0;
	if (!ret)
		owners[k].n++;
	pthread_mutex_unlock(&lock);
	return ret;
}

void slot_put(const struct slot_owner *o)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < OWNERS_MAX; i++)
		if (same(i, o)) {
			owners[i].n--;
			break;
		}
	if (o->peer)
		npeers--;
	else if (o->reserve)
		nroot--;
	else
		nlocal--;
	pthread_mutex_unlock(&lock);
}
