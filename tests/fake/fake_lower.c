// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The fake lower provider of the unit tests and the benchmark (fake_lower.h) */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "libibverbs/ibverbs.h" /* the context's private part, for its ops */

#include "fake_lower.h"

/* FAKE_BENCH: posts write WQEs into rings, as a provider does */
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

static struct fake_cq *to_fake_cq(struct ibv_cq *cq)
{
	return (struct fake_cq *)((char *)cq - offsetof(struct fake_cq, cq));
}

static int fake_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct fake_cq *f = to_fake_cq(cq);
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

/* FAKE_BOOKS: every WR kept, one may be refused */
struct fake_books fake_books = {
	.fail_at = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

void fake_books_reset(void)
{
	pthread_mutex_lock(&fake_books.lock);
	fake_books.fail_at = -1;
	fake_books.calls = 0;
	fake_books.sends = fake_books.recvs = fake_books.srq_recvs = 0;
	fake_books.last_send_list = NULL;
	pthread_mutex_unlock(&fake_books.lock);
}

static int books_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct fake_books *b = &fake_books;
	int ret = 0;

	pthread_mutex_lock(&b->lock);
	b->calls++;
	b->last_send_list = wr;
	for (; wr; wr = wr->next) {
		unsigned int i = b->sends % FAKE_SEEN;

		if (b->fail_at >= 0 && b->sends == (uint64_t)b->fail_at) {
			*bad_wr = wr;
			ret = EINVAL;
			break;
		}
		b->send[i] = *wr;
		if (wr->num_sge)
			b->send_sge[i] = wr->sg_list[0];
		b->sends++;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int books_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct fake_books *b = &fake_books;
	int ret = 0;

	pthread_mutex_lock(&b->lock);
	b->calls++;
	for (; wr; wr = wr->next) {
		unsigned int i = b->recvs % FAKE_SEEN;

		if (b->fail_at >= 0 && b->recvs == (uint64_t)b->fail_at) {
			*bad_wr = wr;
			ret = EINVAL;
			break;
		}
		b->recv[i] = *wr;
		if (wr->num_sge)
			b->recv_sge[i] = wr->sg_list[0];
		b->recvs++;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

static int books_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	struct fake_books *b = &fake_books;

	pthread_mutex_lock(&b->lock);
	for (; wr; wr = wr->next)
		b->srq_recv[b->srq_recvs++ % FAKE_SEEN] = *wr;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* The test's script, or the benchmark's when it has none */
static int books_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct fake_cq *f = to_fake_cq(cq);
	int i;

	if (!f->fill)
		return fake_poll_cq(cq, num_entries, wc);
	for (i = 0; i < num_entries && i < f->per_poll; i++) {
		memset(&wc[i], 0, sizeof(wc[i]));
		f->fill(f, i, &wc[i]);
	}
	return i;
}

static int books_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return 0;
}

void fake_lower_init(struct ibv_context *ctx, enum fake_mode mode)
{
	memset(ctx, 0, sizeof(*ctx));
	if (mode == FAKE_BENCH) {
		ctx->ops.post_send = fake_post_send;
		ctx->ops.post_recv = fake_post_recv;
		ctx->ops.poll_cq = fake_poll_cq;
		return;
	}
	ctx->ops.post_send = books_post_send;
	ctx->ops.post_recv = books_post_recv;
	ctx->ops.post_srq_recv = books_post_srq_recv;
	ctx->ops.poll_cq = books_poll_cq;
	ctx->ops.req_notify_cq = books_req_notify_cq;
}

/* The device: DMs in host memory, AHs that remember their GID */
static struct fake_dev *dev_of(struct ibv_context *context)
{
	return container_of(context, struct fake_dev, vctx.context);
}

static int fake_to_dm(struct ibv_dm *dm, uint64_t off, const void *src,
		      size_t len)
{
	memcpy(((struct fake_dm *)dm)->mem + off, src, len);
	return 0;
}

static int fake_from_dm(void *dst, struct ibv_dm *dm, uint64_t off, size_t len)
{
	memcpy(dst, ((struct fake_dm *)dm)->mem + off, len);
	return 0;
}

static struct ibv_dm *fake_alloc_dm(struct ibv_context *context,
				    struct ibv_alloc_dm_attr *attr)
{
	struct fake_dev *d = dev_of(context);
	struct fake_dm *f = calloc(1, sizeof(*f));

	if (!f || attr->length > FAKE_DM_LEN) {
		free(f);
		return NULL;
	}
	f->dm.context = context;
	f->dm.memcpy_to_dm = fake_to_dm;
	f->dm.memcpy_from_dm = fake_from_dm;
	/* new memory is not the old: its contents must be copied in */
	memset(f->mem, 0xee, sizeof(f->mem));
	d->allocs++;
	return &f->dm;
}

static int fake_free_dm(struct ibv_dm *dm)
{
	dev_of(dm->context)->frees++;
	free(dm);
	return 0;
}

static int fake_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	memset(attr, 0, sizeof(*attr));
	attr->max_dm_size = dev_of(context)->max_dm_size;
	return 0;
}

struct ibv_ah *fake_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	struct fake_ah *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->ah.context = pd->context;
	f->ah.pd = pd;
	f->dgid = a->grh.dgid;
	dev_of(pd->context)->ah_creates++;
	return &f->ah;
}

static int fake_destroy_ah(struct ibv_ah *ah)
{
	dev_of(ah->context)->ah_destroys++;
	free(ah);
	return 0;
}

static const struct verbs_context_ops fake_dev_ops = {
	.alloc_dm = fake_alloc_dm,
	.free_dm = fake_free_dm,
	.query_device_ex = fake_query_device_ex,
	.create_ah = fake_create_ah,
	.destroy_ah = fake_destroy_ah,
	.post_send = books_post_send,
	.post_recv = books_post_recv,
	.post_srq_recv = books_post_srq_recv,
	.poll_cq = books_poll_cq,
	.req_notify_cq = books_req_notify_cq,
};

static struct verbs_device fake_vdev = { .device = { .name = "fake0" } };

int fake_dev_init(struct fake_dev *d, uint64_t max_dm_size)
{
	/* what verbs_init_context() does, as far as the verbs used look */
	memset(d, 0, sizeof(*d));
	d->vctx.sz = sizeof(d->vctx);
	d->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	d->vctx.context.device = &fake_vdev.device;
	d->vctx.priv = calloc(1, sizeof(*d->vctx.priv));
	if (!d->vctx.priv)
		return -1;
	verbs_set_ops(&d->vctx, &fake_dev_ops);
	d->max_dm_size = max_dm_size;
	return 0;
}
