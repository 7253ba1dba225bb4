// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Verbs resources of one endpoint: created in tr_setup(), connected to the
 * peer's in tr_connect(), released in tr_teardown() in dependency order.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "traffic.h"

#define TR_VERSION 2
#define REMOTE_ACCESS                                                          \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define TR_QKEY 0x11111111u

static void *zalloc(size_t len, const char *what)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 1))
		tr_die("cannot allocate %zu bytes for %s", len, what);
	memset(p, 0, len);
	return p;
}

static void open_device(struct tr_ep *ep)
{
	struct ibv_device **list;
	char names[256] = "";
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		tr_die("no RDMA device named '%s' (cannot list devices: %s)",
		       ep->o->dev, strerror(errno));
	for (i = 0; i < n; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), ep->o->dev))
			break;
		if (strlen(names) + strlen(ibv_get_device_name(list[i])) + 2 <
		    sizeof(names)) {
			strcat(names, " ");
			strcat(names, ibv_get_device_name(list[i]));
		}
	}
	if (i == n)
		tr_die("no RDMA device named '%s' (available:%s)", ep->o->dev,
		       n ? names : " none");
	ep->ctx = ibv_open_device(list[i]);
	if (!ep->ctx)
		tr_die("cannot open %s: %s", ep->o->dev, strerror(errno));
	ibv_free_device_list(list);
}

static void query_port(struct tr_ep *ep)
{
	const struct tr_opts *o = ep->o;
	int i;

	if (ibv_query_device(ep->ctx, &ep->dattr))
		tr_die("%s: ibv_query_device failed", o->dev);
	if (ibv_query_port(ep->ctx, o->ib_port, &ep->pattr))
		tr_die("%s: no port %d", o->dev, o->ib_port);
	if (ep->pattr.state != IBV_PORT_ACTIVE)
		tr_die("%s port %d is not active (state %s)", o->dev,
		       o->ib_port, ibv_port_state_str(ep->pattr.state));
	if ((o->ops_mask & (1u << OP_CAS | 1u << OP_FAA)) &&
	    ep->dattr.atomic_cap == IBV_ATOMIC_NONE)
		tr_die("%s has no atomics: leave cas and faa out of --ops",
		       o->dev);
	ep->gid_idx = o->gid_idx;
	if (ep->gid_idx < 0 &&
	    ep->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		/* RoCE: prefer the IPv4-mapped GID, as perftest's -x does. */
		ep->gid_idx = 0;
		for (i = 0; i < ep->pattr.gid_tbl_len; i++) {
			union ibv_gid g;
			static const uint8_t v4[12] = {
				[10] = 0xff, [11] = 0xff
			};

			if (!ibv_query_gid(ep->ctx, o->ib_port, i, &g) &&
			    !memcmp(g.raw, v4, sizeof(v4))) {
				ep->gid_idx = i;
				break;
			}
		}
	}
	if (ep->gid_idx >= 0 &&
	    ibv_query_gid(ep->ctx, o->ib_port, ep->gid_idx, &ep->gid))
		tr_die("%s: no GID at index %d", o->dev, ep->gid_idx);
}

static void create_cqs(struct tr_ep *ep)
{
	const struct tr_opts *o = ep->o;
	unsigned int scqe = ep->nall * o->depth;
	unsigned int rcqe = (o->srq ? ep->rdepth : ep->nqps * ep->rdepth) +
			    (o->ud ? ep->ud_depth : 0);

	if (o->mode == MODE_EVENT) {
		ep->ch = ibv_create_comp_channel(ep->ctx);
		if (!ep->ch)
			tr_die("%s: ibv_create_comp_channel failed: %s", o->dev,
			       strerror(errno));
		/* Drained until EAGAIN after each epoll wakeup. */
		if (fcntl(ep->ch->fd, F_SETFL,
			  fcntl(ep->ch->fd, F_GETFL) | O_NONBLOCK))
			tr_die("cannot make the completion channel non-blocking");
	}
	if ((int)scqe > ep->dattr.max_cqe || (int)rcqe > ep->dattr.max_cqe)
		tr_die("%s: CQs of %u/%u entries exceed the device's %d: lower --qps or --depth",
		       o->dev, scqe, rcqe, ep->dattr.max_cqe);
	if (o->cq == CQ_EX) {
		struct ibv_cq_init_attr_ex a = {
			.cq_context = ep,
			.channel = ep->ch,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
				    IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
				    IBV_WC_EX_WITH_SRC_QP,
		};

		a.cqe = scqe;
		ep->scqx = ibv_create_cq_ex(ep->ctx, &a);
		a.cqe = rcqe;
		ep->rcqx = ep->scqx ? ibv_create_cq_ex(ep->ctx, &a) : NULL;
		if (!ep->rcqx)
			tr_die("%s: ibv_create_cq_ex failed: %s", o->dev,
			       strerror(errno));
		ep->scq = ibv_cq_ex_to_cq(ep->scqx);
		ep->rcq = ibv_cq_ex_to_cq(ep->rcqx);
	} else {
		ep->scq = ibv_create_cq(ep->ctx, scqe, ep, ep->ch, 0);
		ep->rcq = ep->scq ?
				  ibv_create_cq(ep->ctx, rcqe, ep, ep->ch, 0) :
				  NULL;
		if (!ep->rcq)
			tr_die("%s: ibv_create_cq failed: %s", o->dev,
			       strerror(errno));
	}
}

static struct ibv_mr *reg(struct tr_ep *ep, void *p, size_t len, int access)
{
	struct ibv_mr *mr =
		ibv_reg_mr(ep->pd, p, len, IBV_ACCESS_LOCAL_WRITE | access);

	if (!mr)
		tr_die("%s: ibv_reg_mr of %zu bytes failed: %s", ep->o->dev,
		       len, strerror(errno));
	return mr;
}

/* Local buffers in three MRs (send sources, READ/atomic results, receive
 * slots), plus one remote-accessible MR per RC QP. */
static void create_buffers(struct tr_ep *ep)
{
	const struct tr_opts *o = ep->o;
	size_t rc_recv = (size_t)(o->srq ? 1 : ep->nqps) * ep->rdepth * o->size;
	size_t ud_slot = o->size + TR_UD_GRH, off;
	unsigned int i;

	ep->slen = (size_t)ep->nall * o->depth * o->size;
	ep->reslen = (size_t)ep->nqps * o->depth * o->size;
	ep->rlen = rc_recv + (o->ud ? ep->ud_depth * ud_slot : 0);
	ep->sbase = zalloc(ep->slen, "send buffers");
	ep->resbase = zalloc(ep->reslen, "result buffers");
	ep->rbase = zalloc(ep->rlen, "receive buffers");
	ep->smr = reg(ep, ep->sbase, ep->slen, 0);
	ep->resmr = reg(ep, ep->resbase, ep->reslen, 0);
	ep->rmr = reg(ep, ep->rbase, ep->rlen, 0);
	if (o->srq)
		ep->srq_buf = ep->rbase;

	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];

		q->sbuf = ep->sbase + (size_t)i * o->depth * o->size;
		q->pend = zalloc(o->depth * sizeof(*q->pend), "WR records");
		q->write_since_msg = q->last_write_seq = TR_NONE;
		if (q->ud) {
			q->rbuf = ep->rbase + rc_recv;
			continue;
		}
		q->res = ep->resbase + (size_t)i * o->depth * o->size;
		if (!o->srq)
			q->rbuf = ep->rbase + (size_t)i * ep->rdepth * o->size;
		off = tr_remote_len(o->size, ep->nslots);
		q->remote = zalloc(off, "remote region");
		q->remote_mr =
			reg(ep, q->remote, off,
			    REMOTE_ACCESS | (o->mw ? IBV_ACCESS_MW_BIND : 0));
		/* The counter the peer's atomics act on, and the block its
		 * READs see before it wrote anything. */
		*(uint64_t *)q->remote = tr_atomic_init(ep->id, i);
		tr_fill(q->remote + tr_off_pattern(), o->size, KIND_PATTERN,
			ep->id, i, 0, 0, TR_NONE);
	}
}

static void create_qp(struct tr_ep *ep, struct tr_qp *q)
{
	const struct tr_opts *o = ep->o;
	struct ibv_qp_init_attr_ex a = {
		.qp_type = q->ud ? IBV_QPT_UD : IBV_QPT_RC,
		.send_cq = ep->scq,
		.recv_cq = ep->rcq,
		.srq = q->ud ? NULL : ep->srq,
		.cap = {
			.max_send_wr = o->depth,
			.max_recv_wr = q->ud ? ep->ud_depth :
				       ep->srq ? 0 : ep->rdepth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ep->pd,
		.qp_context = q,
	};
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT,
		.port_num = o->ib_port,
		.qkey = ep->ud_qkey,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (o->api == API_LEGACY) {
		/* The plain entry point, as most applications use it; its
		 * attributes are the prefix of the extended ones. */
		q->qp = ibv_create_qp(ep->pd, (struct ibv_qp_init_attr *)&a);
	} else {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags =
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
		if (!q->ud)
			a.send_ops_flags |= IBV_QP_EX_WITH_RDMA_WRITE |
					    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
					    IBV_QP_EX_WITH_RDMA_READ |
					    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
					    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		q->qp = ibv_create_qp_ex(ep->ctx, &a);
		if (q->qp)
			q->qpx = ibv_qp_to_qp_ex(q->qp);
	}
	if (!q->qp)
		tr_die("%s: creating %s QP %u failed: %s", o->dev,
		       q->ud ? "UD" : "RC", q->idx, strerror(errno));
	if (ibv_modify_qp(q->qp, &init,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  (q->ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		tr_die("%s: QP %u to INIT failed: %s", o->dev, q->idx,
		       strerror(errno));
	q->psn = lrand48() & 0xffffff;
}

void tr_setup(struct tr_ep *ep)
{
	const struct tr_opts *o = ep->o;
	unsigned int i, mtu;

	srand48(time(NULL) ^ getpid() ^ ep->id << 16);
	if (!ep->ctx)
		open_device(ep);
	query_port(ep);
	ep->nqps = o->nqps;
	ep->nall = o->nqps + (o->ud ? 1 : 0);
	ep->rdepth = o->depth;
	if (o->srq) {
		ep->rdepth = o->depth * o->nqps;
		if ((int)ep->rdepth > ep->dattr.max_srq_wr)
			ep->rdepth = ep->dattr.max_srq_wr;
	}
	/* More slots than receives: a slot is rewritten only after the
	 * peer verified its previous content (see check.c). */
	ep->nslots = ep->rdepth + 1;
	mtu = 128u << ep->pattr.active_mtu;
	ep->ud_size = o->size < mtu ? o->size : mtu;
	ep->ud_depth = o->depth;
	ep->ud_qkey = TR_QKEY;
	for (i = 0; i < ep->nall; i++) {
		ep->qps[i].idx = i;
		ep->qps[i].ud = i == o->nqps;
	}

	ep->pd = ibv_alloc_pd(ep->ctx);
	if (!ep->pd)
		tr_die("%s: ibv_alloc_pd failed: %s", o->dev, strerror(errno));
	create_cqs(ep);
	create_buffers(ep);
	if (o->srq) {
		struct ibv_srq_init_attr sa = {
			.srq_context = ep,
			.attr = { .max_wr = ep->rdepth, .max_sge = 1 },
		};

		ep->srq = ibv_create_srq(ep->pd, &sa);
		if (!ep->srq)
			tr_die("%s: ibv_create_srq failed: %s", o->dev,
			       strerror(errno));
		ep->srq_wrid = zalloc(ep->rdepth * sizeof(uint64_t), "SRQ");
		ep->srq_owed = zalloc(ep->rdepth * sizeof(unsigned int), "SRQ");
	}
	for (i = 0; i < ep->nall; i++)
		create_qp(ep, &ep->qps[i]);
}

void tr_hello_fill(struct tr_ep *ep, struct tr_hello *h)
{
	unsigned int i;

	memset(h, 0, sizeof(*h));
	h->version = TR_VERSION;
	h->id = ep->id;
	h->nqps = ep->nqps;
	h->ud = ep->o->ud;
	h->size = ep->o->size;
	h->nslots = ep->nslots;
	h->ud_size = ep->ud_size;
	h->ud_depth = ep->ud_depth;
	h->ud_qkey = ep->ud_qkey;
	h->mw = ep->o->mw;
	h->lid = ep->pattr.lid;
	/* As it is now: a live switch since setup may have moved us */
	if (ep->gid_idx >= 0 &&
	    ibv_query_gid(ep->ctx, ep->o->ib_port, ep->gid_idx, &ep->gid))
		tr_die("%s: no GID at index %d", ep->o->dev, ep->gid_idx);
	memcpy(h->gid, ep->gid.raw, 16);
	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];

		h->qp[i].qpn = q->qp->qp_num;
		h->qp[i].psn = q->psn;
		if (q->remote_mr) {
			h->qp[i].rkey = q->remote_mr->rkey;
			h->qp[i].addr = (uintptr_t)q->remote;
		}
	}
}

static void check_peer(struct tr_ep *ep)
{
	const struct tr_hello *p = &ep->peer;

	if (p->version != TR_VERSION || p->id == (uint32_t)ep->id)
		tr_die("%s: the peer is not a matching migr-traffic (version %u, id %u)",
		       ep->name, p->version, p->id);
	if (p->nqps != ep->nqps || p->ud != ep->o->ud ||
	    p->size != ep->o->size || p->mw != ep->o->mw)
		tr_die("%s: both sides need the same --qps, --ud, --mw and --size (peer: %u QPs, ud %u, mw %u, size %u)",
		       ep->name, p->nqps, p->ud, p->mw, p->size);
}

static void rc_to_rts(struct tr_ep *ep, struct tr_qp *q, struct ibv_ah_attr *ah)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = ep->pattr.active_mtu,
		.dest_qp_num = q->peer_qpn,
		.rq_psn = q->peer_psn,
		.max_dest_rd_atomic = ep->dattr.max_qp_rd_atom < 16 ?
					      ep->dattr.max_qp_rd_atom :
					      16,
		.min_rnr_timer = 12,
		.ah_attr = *ah,
	};

	if (ibv_modify_qp(q->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		tr_die("%s: RC QP %u to RTR failed: %s", ep->name, q->idx,
		       strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = q->psn;
	/* ~0.5 s ack timeout: soft-RoCE under emulation is slow, and a
	 * live switch pauses the peer. RNR retries forever (7). */
	a.timeout = 17;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = ep->dattr.max_qp_init_rd_atom < 16 ?
				  ep->dattr.max_qp_init_rd_atom :
				  16;
	if (ibv_modify_qp(q->qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		tr_die("%s: RC QP %u to RTS failed: %s", ep->name, q->idx,
		       strerror(errno));
}

static void ud_to_rts(struct tr_ep *ep, struct tr_qp *q, struct ibv_ah_attr *ah)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		tr_die("%s: UD QP to RTR failed: %s", ep->name,
		       strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = q->psn;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		tr_die("%s: UD QP to RTS failed: %s", ep->name,
		       strerror(errno));
	q->ah = ibv_create_ah(ep->pd, ah);
	if (!q->ah)
		tr_die("%s: ibv_create_ah failed: %s", ep->name,
		       strerror(errno));
}

/*
 * A type 2 window is bound by a WR on the QP, under the next key, which
 * the application keeps in its ibv_mw (providers do not)
 */
static int post_bind(struct ibv_qp *qp, struct ibv_mw *mw,
		     const struct ibv_mw_bind *b)
{
	struct ibv_send_wr wr = { .wr_id = b->wr_id,
				  .opcode = IBV_WR_BIND_MW,
				  .send_flags = b->send_flags },
			   *bad;
	int ret;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = b->bind_info;
	ret = ibv_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

/* --mw: a window over the remote region, bound on the RTS QP */
static void bind_window(struct tr_ep *ep, struct tr_qp *q)
{
	struct ibv_mw_bind b = {
		.wr_id = TR_BIND_WRID,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = q->remote_mr,
			       .addr = (uintptr_t)q->remote,
			       .length = q->remote_mr->length,
			       .mw_access_flags = REMOTE_ACCESS },
	};
	struct tr_wc wc;
	unsigned int spins = 0;

	q->mw = ibv_alloc_mw(ep->pd,
			     ep->o->mw == 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
	if (!q->mw)
		tr_die("%s: ibv_alloc_mw failed: %s", ep->name,
		       strerror(errno));
	errno = ep->o->mw == 2 ? post_bind(q->qp, q->mw, &b) :
				 ibv_bind_mw(q->qp, q->mw, &b);
	if (errno)
		tr_die("%s: binding a type %u window failed: %s", ep->name,
		       ep->o->mw, strerror(errno));
	/* Nothing else completes yet: the peer sends after READY */
	while (!tr_poll(ep, true, &wc, 1)) {
		if (++spins > 100000000)
			tr_die("%s: no completion for ibv_bind_mw", ep->name);
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != TR_BIND_WRID ||
	    wc.opcode != IBV_WC_BIND_MW)
		tr_die("%s: ibv_bind_mw completed with %s (opcode %d)",
		       ep->name, ibv_wc_status_str(wc.status), wc.opcode);
}

void tr_ready_fill(struct tr_ep *ep, struct tr_ready *r)
{
	unsigned int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < ep->nall; i++)
		if (ep->qps[i].mw)
			r->rkey[i] = ep->qps[i].mw->rkey;
}

/* The peer's windows replace its MRs' rkeys */
void tr_ready_take(struct tr_ep *ep, const struct tr_ready *r)
{
	unsigned int i;

	for (i = 0; i < ep->nall; i++)
		if (ep->o->mw && !ep->qps[i].ud)
			ep->qps[i].peer_rkey = r->rkey[i];
}

/* After HELLO: bring every QP to RTS towards the peer's QP and post all
 * receives. The peer sends only after READY, so none is missed. */
void tr_connect(struct tr_ep *ep)
{
	struct ibv_ah_attr ah = {
		.dlid = ep->peer.lid,
		.port_num = ep->o->ib_port,
	};
	unsigned int i;

	check_peer(ep);
	if (ep->gid_idx >= 0) {
		ah.is_global = 1;
		memcpy(ah.grh.dgid.raw, ep->peer.gid, 16);
		ah.grh.sgid_index = ep->gid_idx;
		ah.grh.hop_limit = 64;
	}
	ep->peer_nslots = ep->peer.nslots;
	if (ep->ud_size > ep->peer.ud_size)
		ep->ud_size = ep->peer.ud_size;
	ep->ud_window = ep->o->depth < ep->peer.ud_depth ? ep->o->depth :
							   ep->peer.ud_depth;
	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];

		q->peer_qpn = ep->peer.qp[i].qpn;
		q->peer_psn = ep->peer.qp[i].psn;
		q->peer_rkey = ep->peer.qp[i].rkey;
		q->peer_addr = ep->peer.qp[i].addr;
		q->atomic_val = tr_atomic_init(ep->peer.id, i);
		if (q->ud)
			ud_to_rts(ep, q, &ah);
		else
			rc_to_rts(ep, q, &ah);
		if (!q->ud && ep->o->mw)
			bind_window(ep, q);
		if (!ep->srq || q->ud)
			while (q->recv_posted - q->recv_done <
			       (q->ud ? ep->ud_depth : ep->rdepth))
				tr_post_recv(ep, q);
	}
	if (ep->srq)
		for (i = 0; i < ep->rdepth; i++)
			tr_post_srq_slot(ep, i);
}

void tr_teardown(struct tr_ep *ep)
{
	unsigned int i;

	tr_ack_events(ep);
	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];

		/* a type 2 window holds the QP it is bound through */
		if (q->mw)
			ibv_dealloc_mw(q->mw);
		if (q->qp && ibv_destroy_qp(q->qp))
			tr_die("%s: ibv_destroy_qp failed", ep->name);
		if (q->ah)
			ibv_destroy_ah(q->ah);
		if (q->remote_mr)
			ibv_dereg_mr(q->remote_mr);
		free(q->remote);
		free(q->pend);
	}
	if (ep->srq && ibv_destroy_srq(ep->srq))
		tr_die("%s: ibv_destroy_srq failed", ep->name);
	if (ep->scq && ibv_destroy_cq(ep->scq))
		tr_die("%s: ibv_destroy_cq failed", ep->name);
	if (ep->rcq && ibv_destroy_cq(ep->rcq))
		tr_die("%s: ibv_destroy_cq failed", ep->name);
	if (ep->ch && ibv_destroy_comp_channel(ep->ch))
		tr_die("%s: ibv_destroy_comp_channel failed", ep->name);
	if (ep->smr)
		ibv_dereg_mr(ep->smr);
	if (ep->resmr)
		ibv_dereg_mr(ep->resmr);
	if (ep->rmr)
		ibv_dereg_mr(ep->rmr);
	if (ep->pd && ibv_dealloc_pd(ep->pd))
		tr_die("%s: ibv_dealloc_pd failed", ep->name);
	if (ep->ctx && !ep->ctx_shared && ibv_close_device(ep->ctx))
		tr_die("%s: ibv_close_device failed", ep->name);
	free(ep->sbase);
	free(ep->resbase);
	free(ep->rbase);
	free(ep->srq_wrid);
	free(ep->srq_owed);
}
