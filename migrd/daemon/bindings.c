// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Whose a virtual QP number is (bindings.h): one table, scanned by number
 * first (a lookup is a fetch's, not a data path's).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bindings.h"
#include "log.h"
#include "registry.h"

struct bind_entry {
	bool used;
	uint32_t qpn;
	char dev[BIND_DEV_MAX];
	struct binding b;
};

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bind_entry table[BIND_MAX];
static int nused;

/* Gone for good: its owner ended, or its move is old enough (bind_lock) */
static bool stale(const struct bind_entry *e, long long now_ms)
{
	if (e->b.moved)
		return now_ms - e->b.since > BIND_MOVED_MS;
	return proc_ended(e->b.pid, e->b.start);
}

static void drop(struct bind_entry *e)
{
	e->used = false;
	nused--;
}

static struct bind_entry *lookup(const char *dev, uint32_t qpn)
{
	int i;

	for (i = 0; i < BIND_MAX; i++)
		if (table[i].used && table[i].qpn == qpn &&
		    !strcmp(table[i].dev, dev))
			return &table[i];
	return NULL;
}

/*
 * A free entry (bind_lock): when full, the stale go first, then the
 * oldest (logged: that number is unbound from now on)
 */
static struct bind_entry *slot(long long now_ms)
{
	struct bind_entry *old = NULL;
	int i;

	for (i = 0; nused == BIND_MAX && i < BIND_MAX; i++)
		if (stale(&table[i], now_ms))
			drop(&table[i]);
	for (i = 0; i < BIND_MAX; i++) {
		if (!table[i].used)
			return &table[i];
		if (!old || table[i].b.since < old->b.since)
			old = &table[i];
	}
	log_warn("QP number bindings full (%d): QP 0x%x on %s unbound",
		 BIND_MAX, old->qpn, old->dev);
	drop(old);
	return old;
}

static void put(const char *dev, uint32_t qpn, const struct binding *b)
{
	struct bind_entry *e;

	if (!dev[0] || strlen(dev) >= BIND_DEV_MAX)
		return;
	pthread_mutex_lock(&bind_lock);
	e = lookup(dev, qpn);
	if (!e) {
		e = slot(b->since);
		e->used = true;
		e->qpn = qpn;
		snprintf(e->dev, sizeof(e->dev), "%s", dev);
		nused++;
	}
	e->b = *b;
	pthread_mutex_unlock(&bind_lock);
}

void bind_owner(const char *dev, uint32_t qpn, int pid,
		unsigned long long start, long long now_ms)
{
	put(dev, qpn,
	    &(struct binding){ .pid = pid, .start = start, .since = now_ms });
}

void bind_moved(const char *dev, uint32_t qpn, const char *id, long long now_ms)
{
	struct binding b = { .moved = true, .since = now_ms };

	snprintf(b.id, sizeof(b.id), "%s", id);
	put(dev, qpn, &b);
}

bool bind_find(const char *dev, uint32_t qpn, struct binding *b,
	       long long now_ms)
{
	struct bind_entry *e;
	bool found = false;

	pthread_mutex_lock(&bind_lock);
	e = lookup(dev, qpn);
	if (e && stale(e, now_ms))
		drop(e);
	else if (e)
		found = true, *b = e->b;
	pthread_mutex_unlock(&bind_lock);
	return found;
}

void bind_drop(const char *dev, uint32_t qpn)
{
	struct bind_entry *e;

	pthread_mutex_lock(&bind_lock);
	e = lookup(dev, qpn);
	if (e)
		drop(e);
	pthread_mutex_unlock(&bind_lock);
}

int bind_count(void)
{
	int n;

	pthread_mutex_lock(&bind_lock);
	n = nused;
	pthread_mutex_unlock(&bind_lock);
	return n;
}
