// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Partner requests: the line's QPs, and the grants of prepare (pauth.h) */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pauth.h"

static const char *const steps[] = {
	[PAUTH_PREPARE] = "prepare", [PAUTH_SUSPEND] = "suspend",
	[PAUTH_KEYS] = "keys",	     [PAUTH_RECONNECT] = "reconnect",
	[PAUTH_RESUME] = "resume",   [PAUTH_ABORT] = "abort",
	[PAUTH_RECVS] = "recvs",     [PAUTH_FETCH] = "fetch",
	[PAUTH_FACES] = "faces",
};

static int parse_qpn(const char *s, uint32_t *qpn)
{
	unsigned long v = 0;
	size_t i, n = strcspn(s, " ");

	if (!n || n > 8)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > 0xffffff)
		return -1;
	*qpn = v;
	return 0;
}

/*
 * Read the way the library's partner_serve.c reads it (entries split at
 * " . ", each starting with its QPN), only stricter: single spaces, QPNs
 * of 24 bits in decimal. A line read differently there is refused here.
 */
int pline_parse(const char *line, const char *gid, struct pline *pl, char *err,
		size_t errlen)
{
	const char *p = line, *dot;
	unsigned int i;
	size_t n;

	memset(pl, 0, sizeof(*pl));
	n = strcspn(p, " ");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (n == strlen(steps[i]) && !strncmp(p, steps[i], n))
			break;
	if (i == sizeof(steps) / sizeof(steps[0]) || p[n] != ' ')
		return req_fail(err, errlen, "partner line has no known step");
	pl->step = i;
	p += n + 1;
	if (strlen(p) <= REQ_GID_LEN || strncmp(p, gid, REQ_GID_LEN) ||
	    p[REQ_GID_LEN] != ' ')
		return req_fail(
			err, errlen,
			"partner line names another GID than the request");
	p += REQ_GID_LEN + 1;
	if (pl->step == PAUTH_KEYS) {
		/* the pairs, then " . " before the first QP */
		dot = strstr(p, " . ");
		if (!dot)
			return req_fail(err, errlen,
					"partner keys line without QPs");
		p = dot + 3;
	}
	for (;;) {
		if (pl->nqp == PAUTH_QPS_MAX)
			return req_fail(err, errlen,
					"partner line names more than %d QPs",
					PAUTH_QPS_MAX);
		pl->at[pl->nqp] = p;
		if (parse_qpn(p, &pl->qpn[pl->nqp]))
			return req_fail(
				err, errlen,
				"partner line has an invalid QP number");
		pl->nqp++;
		dot = strstr(p, " . ");
		if (!dot)
			break;
		p = dot + 3;
	}
	return 0;
}

int pline_reconnect(const char *at, uint32_t *qpn, char *gid)
{
	const char *p = at + strcspn(at, " ");
	size_t n;

	if (*p++ != ' ' || parse_qpn(p, qpn) || !*qpn)
		return -1;
	p += strcspn(p, " ");
	if (*p++ != ' ')
		return -1;
	n = strspn(p, "0123456789abcdef");
	if (n != REQ_GID_LEN || (p[n] && p[n] != ' '))
		return -1;
	memcpy(gid, p, n);
	gid[n] = 0;
	return 0;
}

int pline_word(const char *at, int k, uint32_t *v)
{
	const char *p = at;

	/* an entry ends at " . " or the end of the line */
	while (k--) {
		p += strcspn(p, " ");
		if (*p++ != ' ' || *p == '.')
			return -1;
	}
	return parse_qpn(p, v);
}

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

void pauth_drop(const struct pauth_key *k, int ppid)
{
	struct grant *g;

	pthread_mutex_lock(&lock);
	g = find(k, ppid, 0);
	if (g)
		*g = grants[--ngrants];
	pthread_mutex_unlock(&lock);
}
