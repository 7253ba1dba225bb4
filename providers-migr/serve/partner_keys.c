// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner's side of the rkeys (partner.h): a moving partner's keys into
 * our replica of its tables ("keys"), and at connect, our QP's lower QP and
 * keys for a peer connecting to it ("fetch"), a connected peer's keys it
 * withheld before ("give").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "partner_call.h"
#include "partner_serve.h"
#include "peer.h"
#include "verbs.h"

/*
 * The mover's rkeys, virtual:physical, into the replica of its context
 * (its QPs here were tied to it at prepare): our posts translate with them
 */
static int set_keys(struct migr_context *ctx, struct migr_xlate *x,
		    const char *pairs)
{
	const char *end;
	struct migr_qp *q;
	unsigned int n;

	if (x == &ctx->remote || x == &ctx->xlate)
		return EINVAL;
	if (migr_xlate_set_rkeys(x, pairs, &end, &n))
		return ENOMEM;
	if (*end && *end != ' ')
		return EINVAL;
	list_for_each (&ctx->rec.qps, q, entry)
		if (q->remote == x)
			migr_qp_update_slow(q);
	return 0;
}

/* Once per replica: the QPs facing one mover's context share it */
void migr_pserve_keys(struct serve_entry *v, unsigned int n, const char *pairs,
		      const union ibv_gid *gid)
{
	unsigned int i, j;
	int bad;

	for (i = 0; i < n; i++) {
		if (!v[i].mqp)
			continue;
		for (j = 0; j < i; j++)
			if (v[j].mqp && v[j].mqp->remote == v[i].mqp->remote)
				break;
		if (j < i)
			bad = !v[j].ok;
		else
			bad = set_keys(v[i].ctx, v[i].mqp->remote, pairs);
		if (bad)
			FAILED(&v[i], "bad keys request");
		else
			RESULT(&v[i], true, "{\"ok\":true}");
	}
}

/* The GID that replaced gid, if ours before a switch: a key of the reply */
static void gid_moved(struct migr_context *ctx, const union ibv_gid *gid,
		      char *moved, size_t len)
{
	union ibv_gid now;
	char hex[33];
	bool found;

	pthread_mutex_lock(&ctx->rec.lock);
	found = migr_gid_history_find(&ctx->gid_history, gid, &now);
	pthread_mutex_unlock(&ctx->rec.lock);
	if (found) {
		migr_gid_hex(&now, hex);
		snprintf(moved, len, ",\"gid\":\"%s\"", hex);
	}
}

/*
 * A connected QP says which lower QP, on which GID, it is connected to, as
 * in the faces step: migrd relays its answer to a fetch only to the process
 * the kernel says holds that QP (the asker's own word is not enough)
 */
static void faces_of(const struct migr_qp *mqp, char *out, size_t len)
{
	char hex[33];

	*out = 0;
	if (mqp->attr.qp_state < IBV_QPS_RTR)
		return;
	/* no GID (a path by LID): migrd cannot check it, and refuses */
	if (!mqp->attr.ah_attr.is_global) {
		snprintf(out, len, ",\"peer_phys\":%u", mqp->partner.dest_phys);
		return;
	}
	migr_gid_hex(&mqp->attr.ah_attr.grh.dgid, hex);
	snprintf(out, len, ",\"peer_phys\":%u,\"peer_gid\":\"%s\"",
		 mqp->partner.dest_phys, hex);
}

/*
 * A QP of another process is being connected to this one (partner.h,
 * fetch): say which lower QP it must connect to, and, unless the asker
 * has them from generation GEN, our rkeys, MIGR_FETCH_KEYS at a time from
 * the START-th, if our QP faces it already. Asked at a GID this process
 * had before a switch (the application gave out the GID it read then),
 * say the one that replaced it. A QP connected to another QP answers
 * notmine. Read only.
 */
static void fetch_one(struct serve_entry *e, const union ibv_gid *gid)
{
	struct migr_qp *mqp = e->mqp;
	struct migr_context *ctx = e->ctx;
	char keys[MIGR_FETCH_KEYS * 18 + 1] = "", moved[48] = "",
					 faces[96] = "";
	bool wanted, withheld;
	struct fetch_args f;
	unsigned int k = 0;
	uint64_t ours;

	if (!migr_pserve_read_fetch(e->args, &f)) {
		FAILED(e, "bad fetch request");
		return;
	}
	if (mqp->attr.qp_state >= IBV_QPS_RTR &&
	    migr_pserve_faces_other(e, f.peer_qpn, f.peer_phys, 0))
		return;
	if (mqp->vqp.qp.qp_type != IBV_QPT_RC &&
	    mqp->vqp.qp.qp_type != IBV_QPT_UC) {
		NOT_MINE(e, "QP 0x%x is not connected mode", e->qpn);
		return;
	}
	if (ctx->switch_active || !mqp->lower) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	ours = __atomic_load_n(&ctx->xlate.gen, __ATOMIC_ACQUIRE);
	/*
	 * Our rkeys grant access to our memory: only to the QP ours is
	 * connected to. Not connected yet, we give them when we connect
	 * (migr_partner_give()): anybody may ask a QP still in RESET or INIT.
	 */
	wanted = !f.probe && ours && ours != f.gen;
	withheld = wanted && mqp->attr.qp_state < IBV_QPS_RTR;
	if (wanted && !withheld)
		k = migr_rkey_pairs(ctx, f.start, MIGR_FETCH_KEYS, keys);
	gid_moved(ctx, gid, moved, sizeof(moved));
	faces_of(mqp, faces, sizeof(faces));
	/* "phys", its lower QP, is in every result (reply()) */
	RESULT(e, true,
	       "{\"ok\":true,\"peer\":\"%016" PRIx64 "\",\"gen\":%" PRIu64
	       ",\"keys\":\"%s\",\"next\":%lu%s%s%s}",
	       ctx->peers.id, ours, keys,
	       k == MIGR_FETCH_KEYS ? f.start + k : 0, moved, faces,
	       withheld ? ",\"withheld\":true" : "");
}

void migr_pserve_fetch(struct serve_entry *v, unsigned int n, const char *pairs,
		       const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i].mqp)
			fetch_one(&v[i], gid);
}

/*
 * A process our QP connected to before its QP connected to ours withheld
 * its rkeys then (fetch_one()); now that it is connected, it gives them
 * (migrd checked, with the faces step, that it holds the QP ours faces):
 * into the replica of its tables our QP was tied to at connect.
 */
static void give_one(struct serve_entry *e)
{
	struct migr_qp *mqp = e->mqp;
	struct prepare_args a;
	const char *pairs;
	uint64_t gen;
	int last;

	if (!migr_pserve_read_give(e->entry, e->args, &a, &gen, &last,
				   &pairs)) {
		FAILED(e, "bad give request");
		return;
	}
	if (mqp->attr.qp_state < IBV_QPS_RTR ||
	    migr_pserve_faces_other(e, a.peer_qpn, a.peer_phys, a.partner_phys))
		return;
	if (e->ctx->switch_active || !mqp->lower) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	if (!migr_peer_tables_are(e->ctx, mqp->remote, a.peer_id)) {
		FAILED(e,
		       "QP 0x%x did not learn of context %016" PRIx64
		       " at connect",
		       e->qpn, a.peer_id);
		return;
	}
	if (strcmp(pairs, "-") && set_keys(e->ctx, mqp->remote, pairs)) {
		FAILED(e, "bad give request");
		return;
	}
	if (last)
		__atomic_store_n(&mqp->remote->gen, gen, __ATOMIC_RELEASE);
	verbs_info(&e->ctx->vctx,
		   "QP 0x%x: its peer 0x%x, connected now, gave its keys%s\n",
		   mqp->vqp.qp.qp_num, a.peer_qpn, last ? "" : " (in part)");
	RESULT(e, true, "{\"ok\":true}");
}

void migr_pserve_give(struct serve_entry *v, unsigned int n, const char *pairs,
		      const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i].mqp)
			give_one(&v[i]);
}
