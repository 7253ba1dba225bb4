// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The checker. Requester side: each send-queue WR completes exactly once,
 * in posting order, with the right opcode; READ returns the bytes last
 * written there; CAS/FAA return the counter's known value. Responder side:
 * receives complete in order per QP, carry message number m in imm_data,
 * and data (in the receive buffer, or the WRITE_IMM slot) that checks out,
 * as does the plain WRITE a message names. At the end: counters and counts.
 *
 * Why slots are never overwritten before they are checked: message m of a
 * QP starts landing only after message m-1 consumed a receive; with R
 * receives (per QP, or in the SRQ) reposted only after their message was
 * checked, messages up to m-1-R are checked by then. Slot m % nslots with
 * nslots = R + 1 was last used by message m - nslots: checked.
 */
#include <stdio.h>

#include "traffic.h"

#define SEQ_MASK ((1ull << 48) - 1)
#define SRQ_SLOT_MASK ((1u << 20) - 1)

static const enum ibv_wc_opcode send_wc_opcode[OP_NUM] = {
	[OP_SEND] = IBV_WC_SEND,	[OP_SEND_IMM] = IBV_WC_SEND,
	[OP_WRITE] = IBV_WC_RDMA_WRITE, [OP_WRITE_IMM] = IBV_WC_RDMA_WRITE,
	[OP_READ] = IBV_WC_RDMA_READ,	[OP_CAS] = IBV_WC_COMP_SWAP,
	[OP_FAA] = IBV_WC_FETCH_ADD,
};

/*
 * What a wrong atomic result says. A success whose slot still holds the
 * post's poison never wrote its result (rxe does that when a duplicate's
 * plain ACK reaches a pending atomic; docs/testbed.md).
 */
static const char *atomic_why(const struct tr_pend *p, uint64_t got)
{
	if (got == tr_atomic_poison(p->atomic_old))
		return " (never written: the slot holds what the post put there)";
	return p->op == OP_CAS ? " (compare failed)" : "";
}

static void check_result(struct tr_ep *ep, struct tr_qp *q,
			 const struct tr_pend *p)
{
	const uint8_t *rs = q->res + (p->seq % ep->o->depth) * ep->o->size;
	const char *why;
	uint64_t got;

	switch (p->op) {
	case OP_READ:
		if (p->expect_seq == TR_NONE)
			why = tr_verify(rs, ep->o->size, KIND_PATTERN,
					ep->peer.id, q->idx, 0, 0, NULL);
		else
			why = tr_verify(rs, ep->o->size, OP_WRITE, ep->id,
					q->idx, p->expect_seq, p->expect_msg,
					NULL);
		if (why)
			tr_fail(ep, q, "seq %llu (read of %s seq %lld): %s",
				(unsigned long long)p->seq,
				p->expect_seq == TR_NONE ? "pattern" : "write",
				(long long)p->expect_seq, why);
		break;
	case OP_CAS:
	case OP_FAA:
		got = *(const volatile uint64_t *)rs;
		if (got != p->atomic_old)
			tr_fail(ep, q,
				"seq %llu (%s): returned %#llx, expected the counter's value %#llx%s",
				(unsigned long long)p->seq, tr_op_name(p->op),
				(unsigned long long)got,
				(unsigned long long)p->atomic_old,
				atomic_why(p, got));
		break;
	}
}

void tr_check_send(struct tr_ep *ep, const struct tr_wc *wc)
{
	unsigned int qi, op;
	struct tr_pend *p;
	struct tr_qp *q;
	uint64_t seq;

	tr_wrid_split(wc->wr_id, &qi, &op, &seq);
	if (qi >= ep->nall || op >= OP_NUM)
		tr_fail(ep, NULL,
			"send completion with a wr_id never posted (%#llx), status %s",
			(unsigned long long)wc->wr_id,
			ibv_wc_status_str(wc->status));
	q = &ep->qps[qi];
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		tr_flush_cause(ep);
	if (wc->status != IBV_WC_SUCCESS)
		tr_fail(ep, q,
			"seq %llu (%s): error completion: %s (vendor_err %#x)",
			(unsigned long long)seq, tr_op_name(op),
			ibv_wc_status_str(wc->status), wc->vendor_err);
	if (seq != (q->completed & SEQ_MASK))
		tr_fail(ep, q,
			"send completion seq %llu (%s), expected seq %llu: %s",
			(unsigned long long)seq, tr_op_name(op),
			(unsigned long long)q->completed,
			seq < q->completed ? "completed twice" :
					     "out of order or one lost");
	if (q->completed >= q->posted)
		tr_fail(ep, q, "seq %llu (%s) completed but was never posted",
			(unsigned long long)seq, tr_op_name(op));
	p = &q->pend[seq % ep->o->depth];
	if (p->seq != q->completed || p->op != op)
		tr_fail(ep, q, "seq %llu: completion says %s, %s was posted",
			(unsigned long long)seq, tr_op_name(op),
			tr_op_name(p->op));
	if (wc->qp_num != q->qp->qp_num)
		tr_fail(ep, q,
			"seq %llu: completion names QP number %#x, not %#x",
			(unsigned long long)seq, wc->qp_num, q->qp->qp_num);
	if (wc->opcode != send_wc_opcode[op])
		tr_fail(ep, q, "seq %llu (%s): completion opcode %d",
			(unsigned long long)seq, tr_op_name(op), wc->opcode);
	check_result(ep, q, p);
	q->completed++;
	q->op_done[op]++;
	ep->t_progress = tr_now();
}

static struct tr_qp *qp_by_num(struct tr_ep *ep, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < ep->nall; i++)
		if (ep->qps[i].qp->qp_num == qpn)
			return &ep->qps[i];
	return NULL;
}

/* The receive buffer this completion consumed, checked to be the next one
 * of the QP (or a posted SRQ slot). */
static uint8_t *consume(struct tr_ep *ep, struct tr_qp *q,
			const struct tr_wc *wc, unsigned int *slot)
{
	unsigned int qi, op;
	uint64_t seq;

	tr_wrid_split(wc->wr_id, &qi, &op, &seq);
	if (ep->srq && !q->ud) {
		*slot = seq & SRQ_SLOT_MASK;
		if (qi != 0xff || op != OP_RECV || *slot >= ep->rdepth ||
		    ep->srq_wrid[*slot] != wc->wr_id)
			tr_fail(ep, q,
				"SRQ receive completion with wr_id %#llx: not posted, or completed twice",
				(unsigned long long)wc->wr_id);
		ep->srq_wrid[*slot] = 0;
		return ep->srq_buf + (size_t)*slot * ep->o->size;
	}
	if (qi != q->idx || op != OP_RECV || seq != (q->recv_done & SEQ_MASK)) {
		/* Which message the buffer got tells a receive never posted
		 * (it holds the one expected) from a completion lost. */
		const uint8_t *b = q->rbuf +
				   (seq % (q->ud ? ep->ud_depth : ep->rdepth)) *
					   (q->ud ? ep->o->size + TR_UD_GRH :
						    ep->o->size) +
				   (q->ud ? TR_UD_GRH : 0);

		tr_fail(ep, q,
			"receive completion for wr_id %#llx (QP %u seq %llu), expected receive seq %llu; its buffer holds message %llu",
			(unsigned long long)wc->wr_id, qi,
			(unsigned long long)seq,
			(unsigned long long)q->recv_done,
			(unsigned long long)(qi == q->idx ? tr_hdr_msg(b) : 0));
	}
	q->recv_done++;
	return q->rbuf +
	       (seq % (q->ud ? ep->ud_depth : ep->rdepth)) *
		       (q->ud ? ep->o->size + TR_UD_GRH : ep->o->size);
}

/* A datagram: from the peer's UD QP, intact, numbered after the last one.
 * Lost ones (a gap) are counted, and fail unless --ud-max-loss. */
static void check_ud(struct tr_ep *ep, struct tr_qp *q, const struct tr_wc *wc,
		     unsigned int kind, const uint8_t *buf)
{
	const uint8_t *data = buf + TR_UD_GRH;
	const char *why;
	uint64_t m, ack;

	if (wc->src_qp != q->peer_qpn)
		tr_fail(ep, q,
			"datagram from QP number %#x, not the peer's %#x",
			wc->src_qp, q->peer_qpn);
	if (wc->byte_len != ep->ud_size + TR_UD_GRH)
		tr_fail(ep, q, "datagram of %u bytes, expected %u + GRH",
			wc->byte_len, ep->ud_size);
	why = tr_verify(data, ep->ud_size, kind, ep->peer.id, q->idx, TR_NONE,
			TR_NONE, &ack);
	if (why)
		tr_fail(ep, q, "datagram after message %llu (%s): %s",
			(unsigned long long)q->msgs_next, tr_op_name(kind),
			why);
	m = tr_hdr_msg(data);
	if (m < q->msgs_next)
		tr_fail(ep, q,
			"message %llu after %llu: duplicated or reordered",
			(unsigned long long)m,
			(unsigned long long)q->msgs_next - 1);
	if (kind != OP_SEND && wc->imm != (uint32_t)m)
		tr_fail(ep, q, "message %llu (%s): imm_data %u, expected %u",
			(unsigned long long)m, tr_op_name(kind), wc->imm,
			(uint32_t)m);
	if (m > q->msgs_next && !ep->o->ud_max_loss)
		tr_fail(ep, q,
			"message %llu arrived, expected %llu: %llu datagrams lost (--ud-max-loss tolerates some)",
			(unsigned long long)m, (unsigned long long)q->msgs_next,
			(unsigned long long)(m - q->msgs_next));
	q->lost += m - q->msgs_next;
	q->msgs_next = m + 1;
	if (ep->id == 0 && ack != TR_NONE && ack > q->peer_lost)
		q->peer_lost = ack;
	q->ud_last = tr_now();
}

/* An RC message: number m is the next one; its data (receive buffer or
 * WRITE_IMM slot) and the plain WRITE it names check out. */
static void check_rc(struct tr_ep *ep, struct tr_qp *q, const struct tr_wc *wc,
		     unsigned int kind, const uint8_t *data)
{
	const struct tr_opts *o = ep->o;
	uint64_t m = q->msgs_recv, wseq, seq;
	const char *why;

	if (kind != OP_SEND && wc->imm != (uint32_t)m)
		tr_fail(ep, q, "message %llu (%s): imm_data %u, expected %u",
			(unsigned long long)m, tr_op_name(kind), wc->imm,
			(uint32_t)m);
	if (kind == OP_WRITE_IMM)
		data = q->remote + tr_off_wimm(o->size, m % ep->nslots);
	else if (wc->byte_len != o->size)
		tr_fail(ep, q,
			"message %llu (%s): %u bytes received, expected %u",
			(unsigned long long)m, tr_op_name(kind), wc->byte_len,
			o->size);
	why = tr_verify(data, o->size, kind, ep->peer.id, q->idx, TR_NONE, m,
			&wseq);
	if (why)
		tr_fail(ep, q, "message %llu (%s, seq %llu): %s",
			(unsigned long long)m, tr_op_name(kind),
			(unsigned long long)tr_hdr_seq(data), why);
	seq = tr_hdr_seq(data);
	if (m && seq <= q->peer_last_seq)
		tr_fail(ep, q, "message %llu: sender seq %llu after %llu",
			(unsigned long long)m, (unsigned long long)seq,
			(unsigned long long)q->peer_last_seq);
	q->peer_last_seq = seq;
	if (wseq != TR_NONE) {
		why = tr_verify(q->remote + tr_off_write(o->size, ep->nslots,
							 m % ep->nslots),
				o->size, OP_WRITE, ep->peer.id, q->idx, wseq, m,
				NULL);
		if (why)
			tr_fail(ep, q,
				"write seq %llu (named by message %llu): %s",
				(unsigned long long)wseq, (unsigned long long)m,
				why);
	}
}

void tr_check_recv(struct tr_ep *ep, const struct tr_wc *wc)
{
	unsigned int kind, slot = 0;
	uint8_t *data;
	struct tr_qp *q;

	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		tr_flush_cause(ep);
	if (wc->status != IBV_WC_SUCCESS)
		tr_fail(ep, NULL,
			"receive error completion (wr_id %#llx): %s (vendor_err %#x)",
			(unsigned long long)wc->wr_id,
			ibv_wc_status_str(wc->status), wc->vendor_err);
	q = qp_by_num(ep, wc->qp_num);
	if (!q)
		tr_fail(ep, NULL,
			"receive completion for unknown QP number %#x",
			wc->qp_num);
	data = consume(ep, q, wc, &slot);
	if (wc->opcode == IBV_WC_RECV)
		kind = wc->wc_flags & IBV_WC_WITH_IMM ? OP_SEND_IMM : OP_SEND;
	else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM && !q->ud)
		kind = OP_WRITE_IMM;
	else
		tr_fail(ep, q, "message %llu: receive completion opcode %d",
			(unsigned long long)q->msgs_recv, wc->opcode);
	if (kind == OP_WRITE_IMM && !(wc->wc_flags & IBV_WC_WITH_IMM))
		tr_fail(ep, q,
			"message %llu (write_imm): completion without IBV_WC_WITH_IMM",
			(unsigned long long)q->msgs_recv);
	if (q->ud)
		check_ud(ep, q, wc, kind, data);
	else
		check_rc(ep, q, wc, kind, data);
	q->msgs_recv++;
	ep->t_progress = tr_now();
	/* Only now may the peer reuse what this message occupied. */
	if (ep->srq && !q->ud && tr_recvs_held())
		ep->srq_owed[ep->n_srq_owed++] = slot;
	else if (ep->srq && !q->ud)
		tr_post_srq_slot(ep, slot);
	else if (!q->ud && tr_recvs_held())
		q->recv_owed++;
	else
		tr_post_recv(ep, q);
}

/* The peer's DONE: all its atomics completed, so our counters are final. */
void tr_check_done(struct tr_ep *ep)
{
	unsigned int i;
	uint64_t have;

	for (i = 0; i < ep->nqps; i++) {
		struct tr_qp *q = &ep->qps[i];

		have = *(volatile uint64_t *)q->remote;
		if (have != q->peer_atomic)
			tr_fail(ep, q,
				"counter holds %#llx after the peer's atomics, the peer expects %#llx",
				(unsigned long long)have,
				(unsigned long long)q->peer_atomic);
	}
}

/* The peer's FINAL: it received exactly what we sent, on every QP (UD:
 * no more; the peer judged its losses against --ud-max-loss). */
void tr_check_final(struct tr_ep *ep, const struct tr_final *f)
{
	unsigned int i;

	for (i = 0; i < ep->nall; i++)
		if (f->msgs_recv[i] != ep->qps[i].msgs_posted &&
		    (!ep->qps[i].ud || !ep->o->ud_max_loss ||
		     f->msgs_recv[i] > ep->qps[i].msgs_posted))
			tr_fail(ep, &ep->qps[i],
				"sent %llu messages, the peer received %llu",
				(unsigned long long)ep->qps[i].msgs_posted,
				(unsigned long long)f->msgs_recv[i]);
}
