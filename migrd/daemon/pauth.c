// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The grants of prepare (pauth.h) */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pauth.h"

struct grant {
	struct pauth_key k;
	int ppid;
	long long expires;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct grant grants[PAUTH_MAX];
static int ngrants;

static bool same(const struct pauth_key *a, const struct pauth_key *b)
{
	return a->pid == b->pid && a->start == b->start && a->qpn == b->qpn &&
	       !strcmp(a->gid, b->gid) && !strcmp(a->host, b->host);
}

/*
 * The live grant for k with partner ppid, or NULL; expired ones are
 * dropped (lock held). One key may be granted for several partners: QP
 * numbers repeat across the processes of a host.
 */
static struct grant *find(const struct pauth_key *k, int ppid, long long now)
{
	struct grant *found = NULL;
	int i;

	for (i = 0; i < ngrants;) {
		if (grants[i].expires <= now) {
			grants[i] = grants[--ngrants];
			continue;
		}
		if (same(&grants[i].k, k) && grants[i].ppid == ppid)
			found = &grants[i];
		i++;
	}
	return found;
}

int pauth_grant(const struct pauth_key *k, int ppid, long long now_ms)
{
	struct grant *g;
	int ret = 0;

	pthread_mutex_lock(&lock);
	g = find(k, ppid, now_ms);
	if (!g && ngrants < PAUTH_MAX)
		g = &grants[ngrants++];
	if (g) {
		g->k = *k;
		g->ppid = ppid;
		g->expires = now_ms + PAUTH_LEASE_MS;
	} else {
		ret = -ENOSPC;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

bool pauth_check(const struct pauth_key *k, int ppid, long long now_ms)
{
	struct grant *g;
	bool ok;

	pthread_mutex_lock(&lock);
	g = find(k, ppid, now_ms);
	ok = g != NULL;
	if (ok)
		g->expires = now_ms + PAUTH_LEASE_MS;
	pthread_mutex_unlock(&lock);
	return ok;
}

int pauth_list(int pid, unsigned long long start, struct req_grant *v, int max,
	       long long now_ms)
{
	int i, n = 0;

	pthread_mutex_lock(&lock);
	for (i = 0; i < ngrants; i++) {
		const struct grant *g = &grants[i];

		if (g->expires <= now_ms || g->k.pid != pid ||
		    g->k.start != start)
			continue;
		if (n < max) {
			v[n].ppid = g->ppid;
			v[n].qpn = g->k.qpn;
			memcpy(v[n].gid, g->k.gid, sizeof(v[n].gid));
			snprintf(v[n].host, sizeof(v[n].host), "%s", g->k.host);
		}
		n++;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

void pauth_drop(const struct pauth_key *k, int ppid)
{
	struct grant *g;

	pthread_mutex_lock(&lock);
	g = find(k, ppid, 0);
	if (g)
		*g = grants[--ngrants];
	pthread_mutex_unlock(&lock);
}
