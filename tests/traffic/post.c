// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Posting: receives (per QP or SRQ), and send-queue work built from the op
 * cycle, each WR recorded for the completion check, posted with
 * ibv_post_send() or the ibv_wr_*() builders.
 */
#include <endian.h>
#include <string.h>

#include "traffic.h"

#define BATCH 16
#define SRQ_SLOT_BITS 20

struct tr_desc {
	uint64_t wr_id;
	unsigned int op;
	uint64_t laddr;
	uint32_t len, lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;
	uint64_t cmp, swp;
};

void tr_post_recv(struct tr_ep *ep, struct tr_qp *q)
{
	unsigned int depth = q->ud ? ep->ud_depth : ep->rdepth;
	uint32_t slot_len = q->ud ? ep->o->size + TR_UD_GRH : ep->o->size;
	uint8_t *buf = q->rbuf + (q->recv_posted % depth) * slot_len;
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = slot_len,
		.lkey = ep->rmr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = tr_wrid(q->idx, OP_RECV, q->recv_posted),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	memset(buf, 0, 64); /* no stale header survives a short receive */
	if (ibv_post_recv(q->qp, &wr, &bad))
		tr_fail(ep, q, "recv seq %llu: ibv_post_recv failed",
			(unsigned long long)q->recv_posted);
	q->recv_posted++;
}

/* SRQ slots are reposted as they complete, in no fixed order: the wr_id
 * names the slot and a post count, and the slot remembers it. */
void tr_post_srq_slot(struct tr_ep *ep, unsigned int slot)
{
	uint8_t *buf = ep->srq_buf + (size_t)slot * ep->o->size;
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = ep->o->size,
		.lkey = ep->rmr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = tr_wrid(0xff, OP_RECV,
				 ep->srq_posts++ << SRQ_SLOT_BITS | slot),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	memset(buf, 0, 64);
	ep->srq_wrid[slot] = wr.wr_id;
	if (ibv_post_srq_recv(ep->srq, &wr, &bad))
		tr_fail(ep, NULL, "SRQ slot %u: ibv_post_srq_recv failed",
			slot);
}

static bool may_post(struct tr_ep *ep, struct tr_qp *q)
{
	const struct tr_opts *o = ep->o;
	bool more = !ep->stopping && (!o->iters || q->posted < o->iters);

	if (q->posted - q->completed >= o->depth)
		return false;
	/* --rate: no more than rate a second since the start, and a queue */
	if (o->rate &&
	    q->posted >= o->depth + (tr_now() - ep->t_start) * o->rate)
		return false;
	if (!q->ud)
		return more;
	/* UD has no flow control: endpoint 0 leads with fewer than
	 * ud_window messages beyond those accounted for; endpoint 1 echoes
	 * one per message received, after reposting its receive. */
	if (ep->id)
		return q->posted < q->msgs_recv;
	if (!more)
		return false;
	if (q->msgs_posted < tr_ud_accounted(q) + ep->ud_window)
		return true;
	/* When loss is tolerated, echoes missing for TR_UD_GRACE will not
	 * come: go on (the receiver counts what was lost). */
	if (o->ud_max_loss > 0 && tr_now() - q->ud_last > TR_UD_GRACE) {
		q->ud_skip_to = q->msgs_posted;
		q->ud_last = tr_now();
		return true;
	}
	return false;
}

static bool inject(struct tr_ep *ep, struct tr_qp *q, enum tr_fault f)
{
	if (ep->o->fault != f || ep->fault_done || (q->idx && !q->ud) ||
	    q->posted < 8 || (ep->o->role == ROLE_LOOPBACK && ep->id))
		return false;
	ep->fault_done = true;
	return true;
}

static void build_rc(struct tr_ep *ep, struct tr_qp *q, struct tr_desc *d)
{
	const struct tr_opts *o = ep->o;
	uint64_t seq = q->posted, m;
	unsigned int slot = seq % o->depth;
	uint8_t *sb = q->sbuf + (size_t)slot * o->size;
	uint8_t *rs = q->res + (size_t)slot * o->size;
	struct tr_pend *p = &q->pend[slot];
	unsigned int op = ep->ops[(seq + q->idx) % ep->nops];

	*p = (struct tr_pend){ .seq = seq, .op = op, .expect_seq = TR_NONE };
	*d = (struct tr_desc){
		.wr_id = tr_wrid(q->idx, op, seq),
		.op = op,
		.laddr = (uintptr_t)sb,
		.len = o->size,
		.lkey = ep->smr->lkey,
		.rkey = q->peer_rkey,
	};
	switch (op) {
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_WRITE_IMM:
		/* A message: consumes a receive, names the last plain WRITE
		 * for the peer to check, carries its number in imm_data. */
		m = q->msgs_posted++;
		tr_fill(sb, o->size, op, ep->id, q->idx, seq, m,
			q->write_since_msg);
		q->write_since_msg = TR_NONE;
		d->imm = m;
		d->raddr = q->peer_addr +
			   tr_off_wimm(o->size, m % ep->peer_nslots);
		if (inject(ep, q, FAULT_PAYLOAD))
			sb[o->size - 1] ^= 0x5a;
		if (op != OP_SEND && inject(ep, q, FAULT_IMM))
			d->imm++;
		break;
	case OP_WRITE:
		/* Slot of the next message, which names this WRITE. */
		m = q->msgs_posted;
		tr_fill(sb, o->size, op, ep->id, q->idx, seq, m, TR_NONE);
		d->raddr = q->peer_addr + tr_off_write(o->size, ep->peer_nslots,
						       m % ep->peer_nslots);
		q->write_since_msg = q->last_write_seq = seq;
		q->last_write_msg = m;
		if (inject(ep, q, FAULT_WRITE))
			sb[o->size / 2] ^= 0x01;
		break;
	case OP_READ:
		/* Back the bytes of our last WRITE on this QP (executed
		 * before this READ on an RC QP), or the owner's pattern. */
		memset(rs, 0, o->size);
		d->laddr = (uintptr_t)rs;
		d->lkey = ep->resmr->lkey;
		if (q->last_write_seq != TR_NONE) {
			p->expect_seq = q->last_write_seq;
			p->expect_msg = q->last_write_msg;
			d->raddr = q->peer_addr +
				   tr_off_write(o->size, ep->peer_nslots,
						q->last_write_msg %
							ep->peer_nslots);
		} else {
			d->raddr = q->peer_addr + tr_off_pattern();
		}
		break;
	case OP_CAS:
	case OP_FAA:
		/* Only this QP touches its counter on the peer: each result
		 * is known in advance, so every CAS must succeed. */
		d->laddr = (uintptr_t)rs;
		d->lkey = ep->resmr->lkey;
		d->len = 8;
		d->raddr = q->peer_addr;
		p->atomic_old = q->atomic_val;
		*(uint64_t *)rs = tr_atomic_poison(q->atomic_val);
		if (op == OP_CAS) {
			d->cmp = q->atomic_val;
			d->swp = q->atomic_val * 3 + seq + 1;
			q->atomic_val = d->swp;
		} else {
			d->cmp = (seq & 0xff) + 1;
			q->atomic_val += d->cmp;
			if (inject(ep, q, FAULT_FAA))
				d->cmp++;
		}
		break;
	}
	q->posted++;
}

static void build_ud(struct tr_ep *ep, struct tr_qp *q, struct tr_desc *d)
{
	uint64_t seq = q->posted, m;
	unsigned int slot = seq % ep->o->depth;
	uint8_t *sb = q->sbuf + (size_t)slot * ep->o->size;
	unsigned int op = ep->ud_ops[seq % ep->ud_nops];

	if (inject(ep, q, FAULT_UDLOSS))
		q->msgs_posted++; /* as if that datagram had been lost */
	m = q->msgs_posted++;
	q->pend[slot] = (struct tr_pend){ .seq = seq, .op = op };
	/* An echo tells the leader how many of its datagrams were lost. */
	tr_fill(sb, ep->ud_size, op, ep->id, q->idx, seq, m,
		ep->id ? q->lost : TR_NONE);
	*d = (struct tr_desc){
		.wr_id = tr_wrid(q->idx, op, seq),
		.op = op,
		.laddr = (uintptr_t)sb,
		.len = ep->ud_size,
		.lkey = ep->smr->lkey,
		.imm = m,
	};
	q->posted++;
}

static const enum ibv_wr_opcode wr_opcode[OP_NUM] = {
	[OP_SEND] = IBV_WR_SEND,
	[OP_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
	[OP_WRITE] = IBV_WR_RDMA_WRITE,
	[OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[OP_READ] = IBV_WR_RDMA_READ,
	[OP_CAS] = IBV_WR_ATOMIC_CMP_AND_SWP,
	[OP_FAA] = IBV_WR_ATOMIC_FETCH_AND_ADD,
};

static void post_legacy(struct tr_ep *ep, struct tr_qp *q,
			const struct tr_desc *d, unsigned int n)
{
	struct ibv_send_wr wr[BATCH], *bad;
	struct ibv_sge sge[BATCH];
	unsigned int i;

	memset(wr, 0, sizeof(wr[0]) * n);
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ d[i].laddr, d[i].len, d[i].lkey };
		wr[i].wr_id = d[i].wr_id;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = wr_opcode[d[i].op];
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].imm_data = htobe32(d[i].imm);
		if (q->ud) {
			wr[i].wr.ud.ah = q->ah;
			wr[i].wr.ud.remote_qpn = q->peer_qpn;
			wr[i].wr.ud.remote_qkey = ep->peer.ud_qkey;
		} else if (d[i].op == OP_CAS || d[i].op == OP_FAA) {
			wr[i].wr.atomic.remote_addr = d[i].raddr;
			wr[i].wr.atomic.rkey = d[i].rkey;
			wr[i].wr.atomic.compare_add = d[i].cmp;
			wr[i].wr.atomic.swap = d[i].swp;
		} else {
			wr[i].wr.rdma.remote_addr = d[i].raddr;
			wr[i].wr.rdma.rkey = d[i].rkey;
		}
	}
	if (ibv_post_send(q->qp, wr, &bad))
		tr_fail(ep, q, "seq %llu (%s): ibv_post_send failed",
			(unsigned long long)(q->posted - n + (bad - wr)),
			tr_op_name(d[bad - wr].op));
}

static void post_wr(struct tr_ep *ep, struct tr_qp *q, const struct tr_desc *d,
		    unsigned int n)
{
	struct ibv_qp_ex *x = q->qpx;
	unsigned int i;
	int rc;

	ibv_wr_start(x);
	for (i = 0; i < n; i++) {
		x->wr_id = d[i].wr_id;
		x->wr_flags = IBV_SEND_SIGNALED;
		switch (d[i].op) {
		case OP_SEND:
			ibv_wr_send(x);
			break;
		case OP_SEND_IMM:
			ibv_wr_send_imm(x, htobe32(d[i].imm));
			break;
		case OP_WRITE:
			ibv_wr_rdma_write(x, d[i].rkey, d[i].raddr);
			break;
		case OP_WRITE_IMM:
			ibv_wr_rdma_write_imm(x, d[i].rkey, d[i].raddr,
					      htobe32(d[i].imm));
			break;
		case OP_READ:
			ibv_wr_rdma_read(x, d[i].rkey, d[i].raddr);
			break;
		case OP_CAS:
			ibv_wr_atomic_cmp_swp(x, d[i].rkey, d[i].raddr,
					      d[i].cmp, d[i].swp);
			break;
		case OP_FAA:
			ibv_wr_atomic_fetch_add(x, d[i].rkey, d[i].raddr,
						d[i].cmp);
			break;
		}
		if (q->ud)
			ibv_wr_set_ud_addr(x, q->ah, q->peer_qpn,
					   ep->peer.ud_qkey);
		ibv_wr_set_sge(x, d[i].lkey, d[i].laddr, d[i].len);
	}
	rc = ibv_wr_complete(x);
	if (rc)
		tr_fail(ep, q, "seq %llu..%llu: ibv_wr_complete failed: %s",
			(unsigned long long)(q->posted - n),
			(unsigned long long)(q->posted - 1), strerror(rc));
}

/* Post what the QP may take now, in one batch; returns how many. */
unsigned int tr_refill(struct tr_ep *ep, struct tr_qp *q)
{
	struct tr_desc d[BATCH];
	unsigned int n = 0;
	bool wr_api;

	while (n < BATCH && may_post(ep, q)) {
		if (q->ud)
			build_ud(ep, q, &d[n]);
		else
			build_rc(ep, q, &d[n]);
		n++;
	}
	if (!n)
		return 0;
	wr_api = ep->o->api == API_WR ||
		 (ep->o->api == API_MIXED && (q->batches & 1));
	q->batches++;
	if (wr_api)
		post_wr(ep, q, d, n);
	else
		post_legacy(ep, q, d, n);
	return n;
}
