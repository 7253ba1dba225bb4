// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The peer's side of a UD move (ud_peers.h): each AH's redirect table,
 * filled when a UD peer elsewhere says where its QP went, and its lower
 * AHs, which follow this process's own switches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "switch.h"
#include "ud_peers.h"

static bool same_gid(const union ibv_gid *a, const union ibv_gid *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* Unicast: a multicast group's members do not move with one sender */
static bool unicast(const struct migr_ah *mah)
{
	return mah->attr.is_global && mah->attr.grh.dgid.raw[0] != 0xff;
}

/* The entry the application's QPN key leads to now, or -1 */
static int current(const struct migr_ud_redir *r, uint32_t key)
{
	uint32_t i;

	return r && migr_u32map_get(&r->map, key, &i) ? (int)i : -1;
}

/* A lower AH as mah's with dgid gid, on mah's lower PD */
static struct ibv_ah *lower_ah_to(struct migr_ah *mah, const union ibv_gid *gid)
{
	struct ibv_ah_attr attr = mah->attr;

	attr.grh.dgid = *gid;
	return ibv_create_ah(lower_pd(mah->ah.pd), &attr);
}

/* The index of gid's lower AH in r, made on first use; -1 with why */
static int ah_index(struct migr_ah *mah, struct migr_ud_redir *r,
		    const union ibv_gid *gid, char *why, size_t why_len)
{
	unsigned int i;

	for (i = 0; i < r->nahs; i++)
		if (same_gid(&r->ahs[i].gid, gid))
			return i;
	if (r->nahs == MIGR_UD_REDIR_AHS) {
		snprintf(why, why_len,
			 "an address handle already leads to %d moved GIDs",
			 MIGR_UD_REDIR_AHS);
		return -1;
	}
	r->ahs[i].lower = lower_ah_to(mah, gid);
	if (!r->ahs[i].lower) {
		snprintf(why, why_len,
			 "creating an address handle to the new GID failed: %s",
			 strerror(errno));
		return -1;
	}
	r->ahs[i].gid = *gid;
	r->nahs++;
	return i;
}

/* key (the application's QPN) now goes to qpn on gid: a new entry */
static int point(struct migr_ah *mah, uint32_t key, const union ibv_gid *gid,
		 uint32_t qpn, char *why, size_t why_len)
{
	struct migr_ud_redir *r = mah->redir;
	struct migr_ud_redir_entry *e;
	int a;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			snprintf(why, why_len, "out of memory");
			return ENOMEM;
		}
	}
	if (r->n == MIGR_UD_REDIR_MAX) {
		snprintf(why, why_len,
			 "an address handle already had %d UD peer moves",
			 MIGR_UD_REDIR_MAX);
		return ENOSPC;
	}
	a = ah_index(mah, r, gid, why, why_len);
	if (a < 0)
		goto fail;
	e = &r->e[r->n];
	e->key = key;
	e->qpn = qpn;
	e->ah = a;
	/* The entry is whole before the map (a release store) names it */
	if (migr_u32map_put(&r->map, key, r->n)) {
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	r->n++;
	if (!mah->redir)
		__atomic_store_n(&mah->redir, r, __ATOMIC_RELEASE);
	return 0;
fail:
	if (!mah->redir) {
		for (a = 0; a < (int)r->nahs; a++)
			ibv_destroy_ah(r->ahs[a].lower);
		migr_u32map_free(&r->map);
		free(r);
	}
	return ENOMEM;
}

int migr_ud_redirect(struct migr_context *ctx, const union ibv_gid *from_gid,
		     uint32_t from, const union ibv_gid *to_gid, uint32_t to,
		     unsigned int *changed, char *why, size_t why_len)
{
	struct migr_ah *mah;
	unsigned int i, n;
	int ret;

	list_for_each (&ctx->rec.ahs, mah, entry) {
		struct migr_ud_redir *r = mah->redir;

		if (!unicast(mah))
			continue;
		/* QPNs already led to FROM, by an earlier move of the peer */
		n = r ? r->n : 0;
		for (i = 0; i < n; i++) {
			const struct migr_ud_redir_entry *e = &r->e[i];

			if (current(r, e->key) != (int)i || e->qpn != from ||
			    !same_gid(&r->ahs[e->ah].gid, from_gid))
				continue;
			ret = point(mah, e->key, to_gid, to, why, why_len);
			if (ret)
				return ret;
			(*changed)++;
		}
		/* The AH names FROMGID itself: datagrams it sends to FROM */
		if (!same_gid(&mah->attr.grh.dgid, from_gid) ||
		    current(mah->redir, from) >= 0)
			continue;
		ret = point(mah, from, to_gid, to, why, why_len);
		if (ret)
			return ret;
		(*changed)++;
	}
	return 0;
}

/* This process's own switch: its lower AHs go with the old device */
void migr_ud_redir_release(struct migr_ah *mah)
{
	struct migr_ud_redir *r = mah->redir;
	unsigned int i;

	for (i = 0; r && i < r->nahs; i++) {
		if (r->ahs[i].lower)
			ibv_destroy_ah(r->ahs[i].lower);
		r->ahs[i].lower = NULL;
	}
}

/* ... and come back on the new one, once mah's attributes are rewritten */
int migr_ud_redir_rebuild(struct migr_ah *mah)
{
	struct migr_ud_redir *r = mah->redir;
	unsigned int i;

	for (i = 0; r && i < r->nahs; i++) {
		r->ahs[i].lower = lower_ah_to(mah, &r->ahs[i].gid);
		if (!r->ahs[i].lower)
			return errno ? errno : EIO;
	}
	return 0;
}

void migr_ud_redir_free(struct migr_ah *mah)
{
	struct migr_ud_redir *r = mah->redir;

	if (!r)
		return;
	migr_ud_redir_release(mah);
	migr_u32map_free(&r->map);
	free(r);
	mah->redir = NULL;
}
