// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completions: polled with ibv_poll_cq() or an extended CQ's
 * ibv_start_poll()/ibv_next_poll(), and, in event mode, the completion
 * channel protocol (arm, get event, re-arm, poll, ack).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "traffic.h"

static void convert(const struct ibv_wc *w, struct tr_wc *wc)
{
	*wc = (struct tr_wc){
		.wr_id = w->wr_id,
		.status = w->status,
		.opcode = w->opcode,
		.vendor_err = w->vendor_err,
		.byte_len = w->byte_len,
		.qp_num = w->qp_num,
		.src_qp = w->src_qp,
		.imm = be32toh(w->imm_data),
		.wc_flags = w->wc_flags,
	};
}

static unsigned int poll_legacy(struct tr_ep *ep, struct ibv_cq *cq,
				struct tr_wc *wc, unsigned int max)
{
	struct ibv_wc w[16];
	unsigned int got = 0;
	int n, i;

	/* Up to max: the caller takes fewer than max as "CQ empty". */
	do {
		n = ibv_poll_cq(cq, max - got < 16 ? max - got : 16, w);
		if (n < 0)
			tr_fail(ep, NULL, "ibv_poll_cq failed (%d)", n);
		for (i = 0; i < n; i++)
			convert(&w[i], &wc[got++]);
	} while (n == 16 && got < max);
	return got;
}

static void read_ex(struct ibv_cq_ex *cq, struct tr_wc *wc)
{
	*wc = (struct tr_wc){ .wr_id = cq->wr_id, .status = cq->status };
	wc->vendor_err = ibv_wc_read_vendor_err(cq);
	if (cq->status != IBV_WC_SUCCESS)
		return; /* the other fields are undefined */
	wc->opcode = ibv_wc_read_opcode(cq);
	wc->byte_len = ibv_wc_read_byte_len(cq);
	wc->qp_num = ibv_wc_read_qp_num(cq);
	wc->src_qp = ibv_wc_read_src_qp(cq);
	wc->wc_flags = ibv_wc_read_wc_flags(cq);
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		wc->imm = be32toh(ibv_wc_read_imm_data(cq));
}

static unsigned int poll_ex(struct tr_ep *ep, struct ibv_cq_ex *cq,
			    struct tr_wc *wc, unsigned int max)
{
	struct ibv_poll_cq_attr attr = {};
	unsigned int n = 0;
	int rc;

	rc = ibv_start_poll(cq, &attr);
	if (rc == ENOENT)
		return 0;
	if (rc)
		tr_fail(ep, NULL, "ibv_start_poll failed: %s", strerror(rc));
	do {
		read_ex(cq, &wc[n++]);
		if (n == max)
			break;
		rc = ibv_next_poll(cq);
	} while (!rc);
	ibv_end_poll(cq);
	if (rc && rc != ENOENT)
		tr_fail(ep, NULL, "ibv_next_poll failed: %s", strerror(rc));
	return n;
}

unsigned int tr_poll(struct tr_ep *ep, bool send, struct tr_wc *wc,
		     unsigned int max)
{
	if (ep->o->cq == CQ_EX)
		return poll_ex(ep, send ? ep->scqx : ep->rcqx, wc, max);
	return poll_legacy(ep, send ? ep->scq : ep->rcq, wc, max);
}

/*
 * A flushed WR only says its QP is in error: name the completion that put
 * it there, if it waits on either CQ. For the failure message; the run
 * ends right after.
 */
void tr_flush_cause(struct tr_ep *ep)
{
	struct tr_wc wc[16];
	unsigned int n, i, seen = 0, side;

	for (side = 0; side < 2; side++) {
		while (seen < 4096 && (n = tr_poll(ep, !side, wc, 16))) {
			for (i = 0; i < n; i++, seen++) {
				if (wc[i].status == IBV_WC_SUCCESS ||
				    wc[i].status == IBV_WC_WR_FLUSH_ERR)
					continue;
				fprintf(stderr,
					"migr-traffic: %s: the first error pending on the %s CQ: %s (wr_id %#llx, QP 0x%x, vendor_err %#x)\n",
					ep->name, side ? "receive" : "send",
					ibv_wc_status_str(wc[i].status),
					(unsigned long long)wc[i].wr_id,
					wc[i].qp_num, wc[i].vendor_err);
				return;
			}
		}
	}
	fprintf(stderr,
		"migr-traffic: %s: no error completion pending besides flushes (%u completions looked at)\n",
		ep->name, seen);
}

static void arm(struct tr_ep *ep, struct ibv_cq *cq)
{
	if (ibv_req_notify_cq(cq, 0))
		tr_fail(ep, NULL, "ibv_req_notify_cq failed");
}

void tr_arm(struct tr_ep *ep)
{
	arm(ep, ep->scq);
	arm(ep, ep->rcq);
}

/* Take every pending event (the channel fd is non-blocking) and re-arm
 * its CQ before the caller polls, so no completion slips between. */
void tr_get_events(struct tr_ep *ep)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(ep->ch, &cq, &ctx)) {
		if (ctx != ep || (cq != ep->scq && cq != ep->rcq))
			tr_fail(ep, NULL,
				"completion event for an unknown CQ %p (context %p)",
				(void *)cq, ctx);
		if (cq == ep->scq) {
			ep->scq_unacked++;
			ep->scq_evt = true;
		} else {
			ep->rcq_unacked++;
			ep->rcq_evt = true;
		}
		ep->events++;
		arm(ep, cq);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		tr_fail(ep, NULL, "ibv_get_cq_event failed: %s",
			strerror(errno));
	/* Acked in batches; every event is acked before its CQ goes. */
	if (ep->scq_unacked + ep->rcq_unacked >= 64)
		tr_ack_events(ep);
}

void tr_ack_events(struct tr_ep *ep)
{
	if (ep->scq_unacked)
		ibv_ack_cq_events(ep->scq, ep->scq_unacked);
	if (ep->rcq_unacked)
		ibv_ack_cq_events(ep->rcq, ep->rcq_unacked);
	ep->scq_unacked = ep->rcq_unacked = 0;
}
