// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The moving side's steps of a switch (partner_call.h), for all its partners
 * at once: prepare, suspend, recvs, keys and reconnect, resume or abort.
 * Each is a request and a reply per partner process (partner_call.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "marker.h"
#include "migrd_call.h"
#include "partner_steps.h"
#include "peer.h"
#include "replay.h"
#include "verbs.h"

int migr_partner_init(struct migr_partner *p, struct migr_qp *mqp, char *err,
		      size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->mqp = mqp;
	p->qpn = mqp->attr.dest_qp_num;
	p->gid = mqp->attr.ah_attr.grh.dgid;
	if (!mqp->attr.ah_attr.is_global ||
	    migr_gid_host(&p->gid, p->host, sizeof(p->host))) {
		snprintf(
			err, errlen,
			"QP 0x%x: its partner is in another process but has no routable GID (RoCE v2 with an IP address is needed to find it)",
			mqp->vqp.qp.qp_num);
		return EOPNOTSUPP;
	}
	return 0;
}

static int prepare_args(struct migr_partner *p, char *buf, size_t len,
			void *arg)
{
	struct migr_marker_target t;
	int ret;

	/* Where the partner's marker lands in our QP */
	ret = migr_marker_target(p->mqp, &t);
	if (ret)
		return ret;
	/* its lower QP as ours is connected to it: migrd checks its claim */
	snprintf(buf, len, "%u %u %d %x %" PRIx64 " %u %016" PRIx64 " %u",
		 p->mqp->vqp.qp.qp_num, *(unsigned int *)arg, t.access, t.rkey,
		 t.addr, p->mqp->lower->qp_num, p->mqp->ctx->peers.id,
		 p->mqp->partner.dest_phys);
	return 0;
}

static int prepare_take(struct migr_partner *p, const json_t *res, void *arg,
			char *err, size_t errlen)
{
	uint64_t v, mkey, maddr;

	if (!migr_json_hex(res, "peer", &v) ||
	    !migr_json_hex(res, "mkey", &mkey) ||
	    !migr_json_hex(res, "maddr", &maddr)) {
		snprintf(err, errlen,
			 "its reply lacks its context or marker target");
		return EPROTO;
	}
	/* Its numbers and keys are its context's own: our QP keeps them apart */
	if (migr_peer_tie(p->mqp, v)) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	p->prepared = true;
	p->marker.access = migr_json_u64(res, "access", &v) ? (int)v : 0;
	p->marker.rkey = mkey;
	p->marker.addr = maddr;
	return 0;
}

int migr_partners_prepare(struct migr_partner *v, unsigned int n,
			  unsigned int lease_ms, char *err, size_t errlen)
{
	struct migr_pcall_step st = { .op = "prepare",
				      .args = prepare_args,
				      .take = prepare_take,
				      .arg = &lease_ms,
				      .prepare = true };

	return migr_pcall_step(v, n, &st, err, errlen);
}

static int suspend_args(struct migr_partner *p, char *buf, size_t len,
			void *arg)
{
	snprintf(buf, len, "%u", *(unsigned int *)arg);
	return 0;
}

static int suspend_take(struct migr_partner *p, const json_t *res, void *arg,
			char *err, size_t errlen)
{
	if (!migr_json_u64(res, "consumers", &p->consumers)) {
		snprintf(err, errlen, "no send count in its reply");
		return EPROTO;
	}
	p->suspended = true;
	p->undrained = migr_json_true(res, "undrained");
	p->replay_consumers = 0;
	return 0;
}

int migr_partners_suspend(struct migr_partner *v, unsigned int n,
			  unsigned int wait_ms, char *err, size_t errlen)
{
	struct migr_pcall_step st = { .op = "suspend",
				      .args = suspend_args,
				      .take = suspend_take,
				      .arg = &wait_ms };

	return migr_pcall_step(v, n, &st, err, errlen);
}

/* What our QP facing it received: for its own decision, if undrained */
static int recvs_args(struct migr_partner *p, char *buf, size_t len, void *arg)
{
	struct migr_replay_peer me;

	migr_replay_peer_of(p->mqp, &me);
	snprintf(buf, len, "%d %" PRIu64 " %" PRIu64, me.counted, me.recvs,
		 me.posted);
	return 0;
}

static int recvs_take(struct migr_partner *p, const json_t *res, void *arg,
		      char *err, size_t errlen)
{
	if (!migr_json_u64(res, "recvs", &p->recvs) ||
	    !migr_json_u64(res, "posted", &p->recvs_posted)) {
		snprintf(err, errlen, "no RECV count in its reply");
		return EPROTO;
	}
	p->recvs_counted = migr_json_true(res, "counted");
	if (!p->undrained)
		return 0;
	if (!migr_json_true(res, "replay")) {
		migr_json_error(res, err, errlen);
		return EAGAIN;
	}
	if (!migr_json_u64(res, "replay_consumers", &p->replay_consumers)) {
		snprintf(err, errlen, "no replay count in its reply");
		return EPROTO;
	}
	return 0;
}

int migr_partners_recvs(struct migr_partner *v, unsigned int n, char *err,
			size_t errlen)
{
	struct migr_pcall_step st = { .op = "recvs",
				      .args = recvs_args,
				      .take = recvs_take };

	return migr_pcall_step(v, n, &st, err, errlen);
}

/* Our rkeys, virtual:physical, for the partners' contexts, in chunks */
static int push_keys(struct migr_partner *v, unsigned int n, char *err,
		     size_t errlen)
{
	struct migr_context *ctx = v[0].mqp->ctx;
	char pairs[KEYS_PER_LINE * 18 + 1];
	struct migr_pcall_step st = { .op = "keys", .head = pairs };
	unsigned int start = 0, k;
	int ret;

	do {
		k = migr_rkey_pairs(ctx, start, KEYS_PER_LINE, pairs);
		if (!k)
			break;
		ret = migr_pcall_step(v, n, &st, err, errlen);
		if (ret)
			return ret;
		start += k;
	} while (k == KEYS_PER_LINE);
	return 0;
}

static int reconnect_args(struct migr_partner *p, char *buf, size_t len,
			  void *arg)
{
	struct migr_qp *mqp = p->mqp;
	union ibv_gid ours;
	char gid[33];

	if (ibv_query_gid(mqp->ctx->lower, mqp->attr.ah_attr.port_num,
			  mqp->attr.ah_attr.grh.sgid_index, &ours))
		return ENOENT;
	migr_gid_hex(&ours, gid);
	/* the SENDs a replay posts again have not used its RECVs */
	snprintf(buf, len, "%u %s %" PRIu64, mqp->lower->qp_num, gid,
		 mqp->n_consumers - mqp->replay.consumers);
	return 0;
}

/*
 * The keys of the type 2 windows it bound again through its new QP, into
 * our replica of its tables: every QP of ours that uses the replica now
 * translates
 */
static int reconnect_keys(struct migr_partner *p, struct migr_xlate *x,
			  const json_t *res)
{
	const char *k = json_string_value(json_object_get(res, "keys")), *end;
	struct migr_qp *q;
	unsigned int n = 0;

	if (k && (migr_xlate_set_rkeys(x, k, &end, &n) || *end))
		return EPROTO;
	if (!n) {
		migr_qp_update_slow(p->mqp);
		return 0;
	}
	list_for_each (&p->mqp->ctx->rec.qps, q, entry)
		if (q->remote == x)
			migr_qp_update_slow(q);
	return 0;
}

/*
 * The PSNs its QP goes on from: ours is connected to send the one it
 * expects next and to expect the one it sends next. A partner that does
 * not say them reset its QP to the PSNs of the first connect, as ours is
 * by default (the record).
 */
static int take_psns(struct migr_partner *p, const json_t *res, char *err,
		     size_t errlen)
{
	uint64_t sq, rq;
	bool has_sq = migr_json_u64(res, "sq_psn", &sq),
	     has_rq = migr_json_u64(res, "rq_psn", &rq);

	if (!has_sq && !has_rq)
		return 0;
	if (!has_sq || !has_rq || sq >> 24 || rq >> 24) {
		snprintf(err, errlen, "bad PSNs in its reply");
		return EPROTO;
	}
	p->mqp->attr.sq_psn = rq;
	p->mqp->attr.rq_psn = sq;
	return 0;
}

static int reconnect_take(struct migr_partner *p, const json_t *res, void *arg,
			  char *err, size_t errlen)
{
	struct migr_xlate *x = p->mqp->remote;
	uint64_t v;
	int ret;

	if (!migr_json_u64(res, "qpn", &v) || !v || v >> 24) {
		snprintf(err, errlen, "no QP number in its reply");
		return EPROTO;
	}
	p->new_qpn = v;
	ret = take_psns(p, res, err, errlen);
	if (ret)
		return ret;
	/* Our QP connects to its new QP under the number we know it by */
	ret = migr_xlate_set(x, MIGR_XLATE_QPN_PHYS, p->qpn, p->new_qpn);
	if (!ret)
		ret = migr_xlate_set(x, MIGR_XLATE_QPN, p->new_qpn, p->qpn);
	if (!ret)
		ret = reconnect_keys(p, x, res);
	if (ret)
		snprintf(err, errlen,
			 "recording its new number or keys failed");
	return ret;
}

/* Partners of the contexts in v[] (grouped by context by the caller) */
int migr_partners_reconnect(struct migr_partner *v, unsigned int n, char *err,
			    size_t errlen)
{
	struct migr_pcall_step st = { .op = "reconnect",
				      .args = reconnect_args,
				      .take = reconnect_take };
	unsigned int i, j;
	int ret;

	/* Keys per context of ours: a run of partners of one context */
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && v[j].mqp->ctx == v[i].mqp->ctx; j++)
			;
		ret = push_keys(v + i, j - i, err, errlen);
		if (ret)
			return ret;
	}
	return migr_pcall_step(v, n, &st, err, errlen);
}

static int resume_take(struct migr_partner *p, const json_t *res, void *arg,
		       char *err, size_t errlen)
{
	p->prepared = p->suspended = false;
	/* a partner from before the count says nothing: none counted */
	if (!migr_json_u64(res, "replayed", &p->replayed))
		p->replayed = 0;
	p->held_ms = migr_json_num(res, "held_ms", 0);
	return 0;
}

int migr_partners_resume(struct migr_partner *v, unsigned int n, bool abort,
			 char *err, size_t errlen)
{
	struct migr_pcall_step st = { .op = abort ? "abort" : "resume",
				      .take = resume_take,
				      .only_prepared = true };
	unsigned int i;
	int ret;

	if (!n)
		return 0;
	ret = migr_pcall_patient(v, n, &st, 20, err, errlen);
	if (ret)
		verbs_err(&v[0].mqp->ctx->vctx, "partners did not %s: %s\n",
			  abort ? "abort" : "resume", err);
	for (i = 0; i < n; i++)
		v[i].prepared = v[i].suspended = false;
	return ret;
}
