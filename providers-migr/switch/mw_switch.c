// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory windows in a live switch. A type 1 window belongs to a PD, not
 * to a QP, so the rebuild binds it again (same MR, range and access)
 * through an RC QP of its own, connected to itself on the target device
 * and destroyed after the binds. That happens before the application's
 * QPs are connected: the windows' new rkeys reach the partners together
 * with the MRs'. A type 2 window is reached only through the QP it was
 * bound through (mw_track.c follows its binds and invalidations): its new
 * rkey is chosen at allocation, so partners learn it with the others, and
 * the bind is posted on the rebuilt QP once that is connected, ahead of
 * everything the application posts there.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "datapath.h"
#include "marker.h"
#include "switch_objects.h"
#include "verbs.h"

#define BIND_WAIT_MS 2000

struct bind_qp {
	struct ibv_pd *pd; /* the lower PD it binds in */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

/* Where the loop goes: the port and source GID the application's QPs use */
static int loop_path(struct migr_context *ctx, struct ibv_ah_attr *ah,
		     enum ibv_mtu *mtu)
{
	struct ibv_port_attr pa;
	struct migr_qp *mqp;
	uint8_t port = 1, sgid = 0;

	list_for_each (&ctx->rec.qps, mqp, entry) {
		if (!(mqp->attr_mask & IBV_QP_AV))
			continue;
		port = mqp->attr.ah_attr.port_num;
		sgid = mqp->attr.ah_attr.grh.sgid_index;
		break;
	}
	if (ibv_query_port(ctx->lower, port, &pa))
		return errno ? errno : EIO;
	memset(ah, 0, sizeof(*ah));
	ah->port_num = port;
	ah->dlid = pa.lid;
	*mtu = pa.active_mtu;
	if (pa.link_layer != IBV_LINK_LAYER_ETHERNET &&
	    !(pa.flags & IBV_QPF_GRH_REQUIRED))
		return 0;
	ah->is_global = 1;
	ah->grh.sgid_index = sgid;
	ah->grh.hop_limit = 1;
	return ibv_query_gid(ctx->lower, port, sgid, &ah->grh.dgid) ? EIO : 0;
}

static void bind_qp_close(struct bind_qp *b)
{
	if (b->qp)
		ibv_destroy_qp(b->qp);
	if (b->cq)
		ibv_destroy_cq(b->cq);
	memset(b, 0, sizeof(*b));
}

static int bind_qp_open(struct migr_context *ctx, struct ibv_pd *pd,
			struct bind_qp *b)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 1,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 1,
	};
	enum ibv_qp_state last;
	int ret;

	b->pd = pd;
	b->cq = ibv_create_cq(ctx->lower, 2, NULL, NULL, 0);
	if (!b->cq)
		return errno ? errno : ENOMEM;
	init.send_cq = init.recv_cq = b->cq;
	b->qp = ibv_create_qp(pd, &init);
	if (!b->qp)
		return errno ? errno : ENOMEM;
	ret = loop_path(ctx, &a.ah_attr, &a.path_mtu);
	if (ret)
		return ret;
	a.port_num = a.ah_attr.port_num;
	return migr_lower_connect(b->qp, &a, b->qp->qp_num, &last);
}

/* Bind mmw's new lower window as the application last bound the old one */
static int bind_again(struct bind_qp *b, struct migr_mw *mmw, char *why,
		      size_t why_len)
{
	struct ibv_mw_bind bind = {
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mmw->mr->lower,
			       .addr = mmw->addr,
			       .length = mmw->length,
			       .mw_access_flags = mmw->access },
	};
	double deadline = now_ms() + BIND_WAIT_MS;
	struct ibv_wc wc;
	int ret, n;

	ret = ibv_bind_mw(b->qp, mmw->lower, &bind);
	if (ret) {
		snprintf(why, why_len,
			 "binding a memory window again failed: %s",
			 strerror(ret));
		return ret;
	}
	while (!(n = ibv_poll_cq(b->cq, 1, &wc)) && now_ms() < deadline)
		;
	if (n == 1 && wc.status == IBV_WC_SUCCESS)
		return 0;
	snprintf(why, why_len, "binding a memory window again failed: %s",
		 n == 1 ? ibv_wc_status_str(wc.status) :
			  "no completion within 2 s");
	return EIO;
}

/* key's index with the key byte before its own: what a bind turns into key */
static uint32_t key_before(uint32_t key)
{
	return (key & ~0xffu) | ((key - 1) & 0xffu);
}

struct mw_create {
	struct ibv_pd *pd;
	enum ibv_mw_type type;
};

static void *mw_create(void *arg)
{
	struct mw_create *c = arg;

	return ibv_alloc_mw(c->pd, c->type);
}

static uint32_t mw_key(const void *mw)
{
	return ((const struct ibv_mw *)mw)->rkey;
}

/*
 * A new lower window of type, with the rkey it had where the device can:
 * want, the key it must have once allocated (a bind makes the next one)
 */
static struct ibv_mw *alloc_mw_again(struct migr_context *ctx,
				     struct migr_mw *mmw, enum ibv_mw_type type,
				     uint32_t want)
{
	struct mw_create c = { lower_pd(mmw->mw.pd), type };
	const struct migr_numbered how = { mw_create, mw_key, &c };

	return migr_numbers_create(ctx, MIGR_RXE_KIND_MW_KEY, want, &how);
}

/* A type 1 window anew, bound as the application last bound it */
static int type1_rebuild(struct migr_context *ctx, struct bind_qp *b,
			 struct migr_mw *mmw, char *why, size_t why_len)
{
	struct ibv_pd *pd = lower_pd(mmw->mw.pd);
	int ret;

	mmw->lower = alloc_mw_again(ctx, mmw, IBV_MW_TYPE_1,
				    mmw->mr ? key_before(mmw->mw.rkey) :
					      mmw->mw.rkey);
	if (!mmw->lower) {
		ret = errno ? errno : ENOMEM;
		snprintf(why, why_len, "allocating a memory window failed: %s",
			 strerror(ret));
		return ret;
	}
	mmw->mw.handle = mmw->lower->handle;
	if (mmw->mr) {
		if (b->pd != pd) {
			bind_qp_close(b);
			ret = bind_qp_open(ctx, pd, b);
			if (ret) {
				snprintf(
					why, why_len,
					"a QP to bind memory windows with failed: %s",
					strerror(ret));
				return ret;
			}
		}
		/*
		 * The application's own bind may have failed (its completion
		 * is not watched): then the window stays unbound here too,
		 * and the switch goes on.
		 */
		if (bind_again(b, mmw, why, why_len)) {
			verbs_warn(&ctx->vctx, "switch: %s; left unbound\n",
				   why);
			why[0] = 0;
			mmw->mr = NULL;
			bind_qp_close(b);
		}
	}
	ret = migr_xlate_remap(&ctx->xlate, MIGR_XLATE_RKEY, mmw->mw.rkey,
			       mmw->lower->rkey);
	if (ret)
		snprintf(why, why_len,
			 "remapping a memory window's rkey failed");
	return ret;
}

/*
 * A type 2 window anew. Its current key stands for the new window's key,
 * or for the next one if it was bound: the bind through its QP
 * (migr_mws_bind_type2()) gives it that one, chosen here, so partners
 * can be told it before.
 */
static int type2_alloc(struct migr_context *ctx, struct migr_mw *mmw, char *why,
		       size_t why_len)
{
	int ret;

	mmw->lower = alloc_mw_again(ctx, mmw, IBV_MW_TYPE_2,
				    mmw->qp ? key_before(mmw->cur_rkey) :
					      mmw->cur_rkey);
	if (!mmw->lower) {
		ret = errno ? errno : ENOMEM;
		snprintf(why, why_len, "allocating a memory window failed: %s",
			 strerror(ret));
		return ret;
	}
	mmw->mw.handle = mmw->lower->handle;
	if (mmw->qp)
		mmw->bind_rkey = ibv_inc_rkey(mmw->lower->rkey);
	ret = migr_xlate_remap(&ctx->xlate, MIGR_XLATE_RKEY, mmw->cur_rkey,
			       mmw->qp ? mmw->bind_rkey : mmw->lower->rkey);
	if (ret)
		snprintf(why, why_len,
			 "remapping a memory window's rkey failed");
	return ret;
}

/*
 * New lower windows for the record's, bound again where the application
 * had them bound (type 2 ones once their QPs are connected); their
 * virtual rkeys now stand for the new ones. After the MRs, before the QPs.
 */
int migr_mws_rebuild(struct migr_context *ctx, char *why, size_t why_len)
{
	struct bind_qp b = {};
	struct migr_mw *mmw;
	int ret = 0;

	list_for_each (&ctx->rec.mws, mmw, entry) {
		if (mmw->mw.type == IBV_MW_TYPE_2)
			ret = type2_alloc(ctx, mmw, why, why_len);
		else
			ret = type1_rebuild(ctx, &b, mmw, why, why_len);
		if (ret)
			break;
	}
	bind_qp_close(&b);
	return ret;
}

/* Before their MRs and PDs go */
void migr_mws_release(struct migr_context *ctx)
{
	struct migr_mw *mmw;

	list_for_each (&ctx->rec.mws, mmw, entry) {
		if (mmw->lower)
			ibv_dealloc_mw(mmw->lower);
		mmw->lower = NULL;
	}
}

/* A bound type 2 window, bound through only if that is given */
static bool bound_through(const struct migr_mw *mmw, const struct migr_qp *only)
{
	return mmw->mw.type == IBV_MW_TYPE_2 && mmw->qp &&
	       (!only || mmw->qp == only);
}

/* Each type 2 window bound again is one marker of its QP, awaited here */
static bool type2_binds_done(struct migr_context *ctx,
			     const struct migr_qp *only, bool *failed)
{
	struct migr_mw *mmw;
	bool done = true;

	list_for_each (&ctx->rec.mws, mmw, entry) {
		if (!bound_through(mmw, only))
			continue;
		*failed |= mmw->qp->marker.failed;
		done &= !mmw->qp->marker.pending;
	}
	return done;
}

/*
 * After the QPs are connected: each type 2 window bound when the switch
 * began (through only, if given) is bound again through its rebuilt QP,
 * with the key chosen at allocation. The bind's completion is the
 * switch's (a marker), taken off the CQ before the application sees
 * anything there.
 */
int migr_mws_bind_type2(struct migr_context *ctx, struct migr_qp *only,
			char *why, size_t why_len)
{
	double deadline = now_ms() + BIND_WAIT_MS;
	struct migr_cq *mcq;
	struct migr_mw *mmw;
	bool failed = false;
	int ret;

	if (!ctx->mw2)
		return 0;
	list_for_each (&ctx->rec.mws, mmw, entry) {
		struct ibv_send_wr wr = {
			.wr_id = MIGR_MARKER_WRID,
			.opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
		};

		if (!bound_through(mmw, only))
			continue;
		wr.bind_mw.mw = mmw->lower;
		wr.bind_mw.rkey = mmw->bind_rkey;
		wr.bind_mw.bind_info.mr = mmw->mr->lower;
		wr.bind_mw.bind_info.addr = mmw->addr;
		wr.bind_mw.bind_info.length = mmw->length;
		wr.bind_mw.bind_info.mw_access_flags = mmw->access;
		mmw->qp->marker.failed = false;
		ret = migr_send_marker(ctx, mmw->qp, &wr);
		if (ret) {
			snprintf(
				why, why_len,
				"binding a type 2 memory window through QP 0x%x failed: %s",
				mmw->qp->vqp.qp.qp_num, strerror(ret));
			return ret;
		}
		mmw->lower->rkey = mmw->bind_rkey;
	}
	while (!type2_binds_done(ctx, only, &failed) && !failed &&
	       now_ms() < deadline)
		list_for_each (&ctx->rec.cqs, mcq, entry)
			migr_cq_drain(mcq);
	if (!failed && type2_binds_done(ctx, only, &failed))
		return 0;
	snprintf(why, why_len, "binding type 2 memory windows again failed: %s",
		 failed ? "a bind completed with an error" :
			  "no completion within 2 s");
	return EIO;
}

/*
 * A partner's switch replaces mqp's lower QP (partner_serve.c): the type 2
 * windows bound through it go first (the old QP is held by them), and
 * come again bound through the new one, their new keys in pairs
 * ("V:P,...", what the mover puts in its replica of our tables; pairs
 * holds MIGR_QP_MW_MAX * 18 + 1 bytes).
 */
void migr_mws_release_qp(struct migr_context *ctx, struct migr_qp *mqp)
{
	struct migr_mw *mmw;

	list_for_each (&ctx->rec.mws, mmw, entry) {
		if (!bound_through(mmw, mqp) || !mmw->lower)
			continue;
		ibv_dealloc_mw(mmw->lower);
		mmw->lower = NULL;
	}
}

int migr_mws_rebind_qp(struct migr_context *ctx, struct migr_qp *mqp,
		       char *pairs, char *why, size_t why_len)
{
	struct migr_mw *mmw;
	unsigned int k = 0;
	size_t len = 0;
	uint32_t p;
	int ret;

	pairs[0] = 0;
	list_for_each (&ctx->rec.mws, mmw, entry) {
		if (!bound_through(mmw, mqp))
			continue;
		ret = type2_alloc(ctx, mmw, why, why_len);
		if (ret)
			return ret;
	}
	ret = migr_mws_bind_type2(ctx, mqp, why, why_len);
	list_for_each (&ctx->rec.mws, mmw, entry) {
		if (ret || !bound_through(mmw, mqp) || k == MIGR_QP_MW_MAX)
			continue;
		if (!migr_xlate_phys_of(&ctx->xlate, MIGR_XLATE_RKEY,
					mmw->mw.rkey, &p))
			p = mmw->lower->rkey;
		len += sprintf(pairs + len, "%s%x:%x", k++ ? "," : "",
			       mmw->mw.rkey, p);
	}
	return ret;
}
