// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The fake lower provider of the host benchmark (see fake_lower.h) */
#include <stddef.h>
#include <string.h>

#include "fake_lower.h"

#define RING 256
#define WQE_SGE 2

struct fake_wqe {
	uint64_t wr_id, raddr;
	uint32_t opcode, flags, rkey, nsge;
	struct ibv_sge sge[WQE_SGE];
};

static struct fake_wqe sq[RING], rq[RING];
static unsigned int sq_head, rq_head;

static unsigned int copy_sges(struct fake_wqe *w, const struct ibv_sge *sg,
			      int num_sge)
{
	unsigned int i, n = num_sge < WQE_SGE ? num_sge : WQE_SGE;

	for (i = 0; i < n; i++)
		w->sge[i] = sg[i];
	return n;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		struct fake_wqe *w = &sq[sq_head++ & (RING - 1)];

		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->flags = wr->send_flags;
		w->raddr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		w->nsge = copy_sges(w, wr->sg_list, wr->num_sge);
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		struct fake_wqe *w = &rq[rq_head++ & (RING - 1)];

		w->wr_id = wr->wr_id;
		w->nsge = copy_sges(w, wr->sg_list, wr->num_sge);
	}
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct fake_cq *f =
		(struct fake_cq *)((char *)cq - offsetof(struct fake_cq, cq));
	int i, n = num_entries < f->per_poll ? num_entries : f->per_poll;

	for (i = 0; i < n; i++, f->seq++) {
		wc[i].wr_id = f->seq;
		wc[i].status = IBV_WC_SUCCESS;
		wc[i].opcode = IBV_WC_RDMA_WRITE;
		wc[i].vendor_err = 0;
		wc[i].byte_len = 64;
		wc[i].imm_data = 0;
		wc[i].qp_num = f->qpn[f->seq & f->nqpn_mask];
		wc[i].src_qp = 0;
		wc[i].wc_flags = 0;
		wc[i].pkey_index = 0;
		wc[i].slid = 0;
		wc[i].sl = 0;
		wc[i].dlid_path_bits = 0;
	}
	return n;
}

void fake_last_send(uint32_t *lkey, uint32_t *rkey)
{
	const struct fake_wqe *w = &sq[(sq_head - 1) & (RING - 1)];

	*lkey = w->sge[0].lkey;
	*rkey = w->rkey;
}

void fake_lower_init(struct ibv_context *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->ops.post_send = fake_post_send;
	ctx->ops.post_recv = fake_post_recv;
	ctx->ops.poll_cq = fake_poll_cq;
}
