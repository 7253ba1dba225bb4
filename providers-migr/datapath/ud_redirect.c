// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The peer's side of a UD move (ud_redirect.h): each AH's redirect table,
 * filled when a UD peer elsewhere says where its QP went, and its lower
 * AHs, which follow this process's own switches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "migr.h"
#include "ud_redirect.h"

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
		if (migr_gid_same(&r->ahs[i].gid, gid))
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

static bool at(const struct migr_ud_moved *mv, const union ibv_gid *gid,
	       uint32_t qpn)
{
	return mv->now_qpn == qpn && migr_gid_same(&mv->now_gid, gid);
}

/*
 * The record of the peer QP known as known that is at (from_gid, from)
 * now, or already at (to_gid, to) (told twice, or told by a rollback from
 * both places it may be known at); else a new one
 */
static struct migr_ud_moved *find_moved(struct migr_context *ctx,
					const union ibv_gid *from_gid,
					uint32_t from,
					const union ibv_gid *to_gid,
					uint32_t to, uint32_t known)
{
	struct migr_ud_moves *m = ctx->ud_moves;
	unsigned int i;

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		ctx->ud_moves = m;
	}
	for (i = 0; i < m->n; i++)
		if (m->e[i].virt == known &&
		    (at(&m->e[i], from_gid, from) || at(&m->e[i], to_gid, to)))
			return &m->e[i];
	if (m->n == MIGR_UD_MOVES_MAX)
		return NULL;
	m->e[m->n].virt = known;
	return &m->e[m->n++];
}

/* Does mah address the peer mv is, at one of its places? */
static bool names(const struct migr_ah *mah, const struct migr_ud_moved *mv)
{
	unsigned int i;

	if (!unicast(mah))
		return false;
	if (migr_gid_same(&mah->attr.grh.dgid, &mv->now_gid))
		return true;
	for (i = 0; i < mv->npast; i++)
		if (migr_gid_same(&mah->attr.grh.dgid, &mv->past[i]))
			return true;
	return false;
}

/* mah's datagrams to mv's QPN (as the application knows it) go there */
static int follow(struct migr_ah *mah, const struct migr_ud_moved *mv,
		  unsigned int *changed, char *why, size_t why_len)
{
	const struct migr_ud_redir *r = mah->redir;
	int i = current(r, mv->virt);
	int ret;

	if (!names(mah, mv))
		return 0;
	if (i >= 0 && r->e[i].qpn == mv->now_qpn &&
	    migr_gid_same(&r->ahs[r->e[i].ah].gid, &mv->now_gid))
		return 0;
	ret = point(mah, mv->virt, &mv->now_gid, mv->now_qpn, why, why_len);
	if (!ret)
		(*changed)++;
	return ret;
}

/*
 * Completions name the peer's lower QP: the application is shown the
 * number it knows, unless that number is one of this process's own
 * (published by its switches): two hosts number their QPs alike.
 */
static void show_as_known(struct migr_context *ctx, uint32_t was,
			  const struct migr_ud_moved *mv)
{
	uint32_t v = migr_remote_qpn_to_virt(&ctx->remote, mv->now_qpn);

	if (was != mv->now_qpn &&
	    migr_remote_qpn_to_virt(&ctx->remote, was) == mv->virt)
		migr_xlate_forget(&ctx->remote, MIGR_XLATE_QPN, was);
	if (v != mv->now_qpn && v != mv->virt) {
		verbs_debug(
			&ctx->vctx,
			"UD peer QP 0x%x: its new number 0x%x is known here as 0x%x; its datagrams keep their number\n",
			mv->virt, mv->now_qpn, v);
		return;
	}
	if (mv->now_qpn != mv->virt &&
	    migr_xlate_set(&ctx->remote, MIGR_XLATE_QPN, mv->now_qpn, mv->virt))
		verbs_debug(&ctx->vctx, "UD peer QP 0x%x: out of memory\n",
			    mv->virt);
}

int migr_ud_redirect(struct migr_context *ctx, const union ibv_gid *from_gid,
		     uint32_t from, const union ibv_gid *to_gid, uint32_t to,
		     uint32_t known, unsigned int *changed, char *why,
		     size_t why_len)
{
	struct migr_ud_moved *mv =
		find_moved(ctx, from_gid, from, to_gid, to, known);
	struct migr_ah *mah;
	unsigned int i;
	uint32_t was;
	int ret;

	if (!mv) {
		snprintf(why, why_len, "more than %d UD peer QPs moved",
			 MIGR_UD_MOVES_MAX);
		return ENOSPC;
	}
	was = mv->now_qpn ? mv->now_qpn : from;
	for (i = 0; i < mv->npast && !migr_gid_same(&mv->past[i], from_gid);
	     i++)
		;
	if (i == mv->npast && i < MIGR_UD_PAST_MAX)
		mv->past[mv->npast++] = *from_gid;
	mv->now_gid = *to_gid;
	mv->now_qpn = to;
	show_as_known(ctx, was, mv);
	list_for_each (&ctx->rec.ahs, mah, entry) {
		ret = follow(mah, mv, changed, why, why_len);
		if (ret)
			return ret;
	}
	return 0;
}

/* A new AH that names a moved peer leads where it is now */
int migr_ud_redir_new_ah(struct migr_context *ctx, struct migr_ah *mah)
{
	struct migr_ud_moves *m = ctx->ud_moves;
	unsigned int i, changed = 0;
	char why[128];

	for (i = 0; m && i < m->n; i++)
		if (follow(mah, &m->e[i], &changed, why, sizeof(why)))
			return ENOMEM;
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
