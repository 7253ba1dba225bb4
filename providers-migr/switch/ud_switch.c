// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UD QPs in a live switch. A UD QP has no partner to ask: its send queue is
 * seen to drain by a zero-length SEND to itself with a Q_Key it does not
 * accept (dropped by the receiving port, completed by the sending one, in
 * order behind the application's WRs), and its unused RECVs are the ones
 * its lower QP flushes when put in error. Datagrams in flight while the
 * switch releases are lost, as UD allows. Senders in other processes
 * learn the new address through migrd (ud_announce.h); a switch is refused
 * while a datagram came, since the last switch, from a QP that would not
 * learn it (polls note the senders: migr_cq_watch()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cq_watch.h"
#include "datapath.h"
#include "marker.h"
#include "switch_objects.h"
#include "ud_announce.h"
#include "ud_redirect.h"
#include "verbs.h"

static bool is_ud(const struct migr_qp *mqp)
{
	return mqp->vqp.qp.qp_type == IBV_QPT_UD;
}

/* The GID a UD QP's marker goes to: the one its AHs send from, or index 0 */
static uint8_t marker_gid_index(struct migr_context *ctx, uint8_t port)
{
	struct migr_ah *mah;

	list_for_each (&ctx->rec.ahs, mah, entry)
		if (mah->attr.is_global && mah->attr.port_num == port)
			return mah->attr.grh.sgid_index;
	return 0;
}

/*
 * qpn is the lower number of a UD QP of one of the n contexts in v that
 * has sent datagrams, or of a migr process on a host our AHs name (known,
 * nk of them: those hear where we went). A completion names no sender
 * GID, and two hosts number their QPs alike: a QP of ours that never sent
 * cannot be the sender, whatever its number.
 */
static bool ud_told(struct migr_context *const *v, unsigned int n,
		    const uint32_t *known, unsigned int nk, uint32_t qpn)
{
	struct migr_qp *mqp;
	unsigned int i;

	for (i = 0; i < n; i++)
		list_for_each (&v[i]->rec.qps, mqp, entry)
			if (is_ud(mqp) && mqp->lower &&
			    mqp->lower->qp_num == qpn &&
			    __atomic_load_n(&mqp->n_consumers,
					    __ATOMIC_RELAXED))
				return true;
	for (i = 0; i < nk; i++)
		if (known[i] == qpn)
			return true;
	return false;
}

/* Every datagram since the last switch came from a QP that will be told */
static int ud_senders_told(struct migr_context *ctx,
			   struct migr_context *const *v, unsigned int nv,
			   const uint32_t *known, unsigned int nk, char *why,
			   size_t why_len)
{
	uint32_t foreign = 0;
	unsigned int i, n;

	pthread_mutex_lock(&ctx->ud_src_lock);
	n = ctx->n_ud_src;
	for (i = 0; i < n && i < MIGR_UD_SRC_MAX && !foreign; i++)
		if (!ud_told(v, nv, known, nk, ctx->ud_src[i]))
			foreign = ctx->ud_src[i];
	pthread_mutex_unlock(&ctx->ud_src_lock);
	if (foreign) {
		snprintf(
			why, why_len,
			"a UD QP received datagrams from QP 0x%x, which is neither this process's nor a migr process's on a host its address handles name: that peer could not follow a switch",
			foreign);
		return EOPNOTSUPP;
	}
	if (n > MIGR_UD_SRC_MAX) {
		snprintf(
			why, why_len,
			"UD QPs received datagrams from more than %d QPs since the last switch: not all of them can be checked to follow a switch",
			MIGR_UD_SRC_MAX);
		return EOPNOTSUPP;
	}
	return 0;
}

#define UD_KNOWN_MAX 1024

/*
 * Before anything is touched: the hosts ctx's AHs name answer (their migr
 * processes will be told where the UD QPs went), and its UD QPs heard
 * only from QPs of the set (the n contexts in v) or of those processes.
 */
int migr_ud_precheck(struct migr_context *ctx, struct migr_context *const *v,
		     unsigned int n, char *why, size_t why_len)
{
	unsigned int nk = 0;
	struct migr_qp *mqp;
	uint32_t *known;
	bool ud = false;
	int ret;

	ctx->ud_hosts.n = 0;
	list_for_each (&ctx->rec.qps, mqp, entry)
		ud |= is_ud(mqp);
	if (!ud)
		return 0;
	known = calloc(UD_KNOWN_MAX, sizeof(*known));
	if (!known)
		return ENOMEM;
	ret = migr_ud_probe(ctx, known, UD_KNOWN_MAX, &nk, why, why_len);
	if (!ret)
		ret = ud_senders_told(ctx, v, n, known, nk, why, why_len);
	free(known);
	return ret;
}

/* A zero-length SEND to itself that its own Q_Key check drops */
int migr_ud_post_marker(struct migr_context *ctx, struct migr_qp *mqp)
{
	uint8_t port = mqp->attr.port_num ? mqp->attr.port_num : 1;
	struct ibv_ah_attr ah = {
		.is_global = 1,
		.port_num = port,
		.grh = { .sgid_index = marker_gid_index(ctx, port),
			 .hop_limit = 1 },
	};
	struct ibv_send_wr wr = {
		.wr_id = MIGR_MARKER_WRID,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};

	if (!mqp->marker.ah) {
		if (ibv_query_gid(ctx->lower, port, ah.grh.sgid_index,
				  &ah.grh.dgid))
			return errno ? errno : EIO;
		mqp->marker.ah = ibv_create_ah(lower_pd(mqp->vqp.qp.pd), &ah);
		if (!mqp->marker.ah)
			return errno ? errno : EIO;
	}
	wr.wr.ud.ah = mqp->marker.ah;
	wr.wr.ud.remote_qpn = mqp->lower->qp_num;
	/* Never its own (a key with the top bit set would mean its own) */
	wr.wr.ud.remote_qkey = (mqp->attr.qkey + 1) & 0x7fffffff;
	if (wr.wr.ud.remote_qkey == mqp->attr.qkey)
		wr.wr.ud.remote_qkey++;
	return migr_send_marker(ctx, mqp, &wr);
}

/* The marker's AH, on the lower PD: gone before the PD, or after a resume */
void migr_ud_marker_drop(struct migr_qp *mqp)
{
	if (mqp->marker.ah)
		ibv_destroy_ah(mqp->marker.ah);
	mqp->marker.ah = NULL;
}

/* A rebuilt UD QP to the state the application had it in */
int migr_ud_connect(struct migr_qp *mqp, char *why, size_t why_len)
{
	const struct ibv_qp_attr *r = &mqp->attr;
	struct ibv_qp_attr a = {};
	int ret;

	if (r->qp_state == IBV_QPS_RESET)
		return 0;
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = r->pkey_index;
	a.port_num = r->port_num;
	a.qkey = r->qkey;
	ret = ibv_modify_qp(mqp->lower, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_QKEY);
	if (!ret && r->qp_state >= IBV_QPS_RTR) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		ret = ibv_modify_qp(mqp->lower, &a, IBV_QP_STATE);
	}
	if (!ret && r->qp_state >= IBV_QPS_RTS) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = r->sq_psn;
		ret = ibv_modify_qp(mqp->lower, &a,
				    IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	if (ret)
		snprintf(why, why_len,
			 "bringing UD QP 0x%x to state %d failed: %s",
			 mqp->vqp.qp.qp_num, a.qp_state, strerror(ret));
	return ret;
}

/*
 * Tell the replica x a UD QP's number now: for WRs (to an AH that leads
 * to this device) and, unless the context has UD peers elsewhere
 * (src_seen), for completions. A completion names no sender GID, and a
 * peer elsewhere may well have the number our QP has here: then its
 * datagrams keep the number they came with.
 */
static int publish_one(struct migr_xlate *x, const struct migr_qp *mqp,
		       bool src_seen)
{
	uint32_t virt = mqp->vqp.qp.qp_num, old;
	int ret;

	old = migr_remote_qpn_to_phys(x, virt);
	if (old != virt && migr_remote_qpn_to_virt(x, old) == virt)
		migr_xlate_forget(x, MIGR_XLATE_QPN, old);
	ret = migr_xlate_set(x, MIGR_XLATE_QPN_PHYS, virt, mqp->lower->qp_num);
	if (!ret && src_seen)
		ret = migr_xlate_set(x, MIGR_XLATE_QPN, mqp->lower->qp_num,
				     virt);
	return ret;
}

/*
 * UD peers name each other by virtual QPN in every WR: after a rebuild,
 * each context of the set learns every UD QP's new number (its replica,
 * as for partners elsewhere), and its QPs translate from then on.
 */
int migr_ud_publish(struct migr_context **ctxs, unsigned int n)
{
	struct migr_qp *mqp, *q;
	unsigned int i, j;
	int ret;

	for (i = 0; i < n; i++) {
		bool any = false;

		for (j = 0; j < n; j++) {
			list_for_each (&ctxs[j]->rec.qps, mqp, entry) {
				if (!is_ud(mqp) || !mqp->lower)
					continue;
				ret = publish_one(&ctxs[i]->remote, mqp,
						  !ctxs[i]->ud_hosts.n);
				if (ret)
					return ret;
				any = true;
			}
		}
		if (!any)
			continue;
		list_for_each (&ctxs[i]->rec.qps, q, entry)
			if (q->remote == &ctxs[i]->remote)
				migr_qp_update_slow(q);
	}
	return 0;
}

/* A UD QP's unused RECVs are what it flushed: the drain cannot count them */
void migr_ud_unused_from_flushes(struct migr_context *ctx, uint64_t *unused)
{
	struct migr_qp *mqp;
	unsigned int q = 0;

	list_for_each (&ctx->rec.qps, mqp, entry) {
		if (is_ud(mqp))
			unused[q] = mqp->release_flushes;
		q++;
	}
}
