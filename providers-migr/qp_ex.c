// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The extended send path (ibv_wr_*()). The application builds WRs on our
 * ibv_qp_ex; every builder is replayed on the lower QP's ibv_qp_ex with the
 * identifiers translated. Nothing here locks, allocates or enters the
 * kernel: a builder costs one extra indirect call.
 */
#include <errno.h>

#include "migr.h"

/*
 * A scatter list must reach the lower QP in one wr_set_sge_list() call (a
 * second call replaces the first), so it cannot be translated in chunks.
 * This bound is above the send SGE limit of every known device.
 */
#define QPX_MAX_SGE 256

static inline struct ibv_qp_ex *lower_qpx(struct ibv_qp_ex *qpx)
{
	return qp_ex_to_mqp(qpx)->lower_ex;
}

static inline const struct migr_xlate *qpx_xlate(struct ibv_qp_ex *qpx)
{
	return &qp_ex_to_mqp(qpx)->ctx->xlate;
}

/* The partner's values, as it last told us */
static inline const struct migr_xlate *qpx_remote(struct ibv_qp_ex *qpx)
{
	return qp_ex_to_mqp(qpx)->remote;
}

/* The application set wr_id/wr_flags on our qp_ex for the WR it starts */
static inline struct ibv_qp_ex *start_wr(struct ibv_qp_ex *qpx)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	lower->wr_id = qpx->wr_id;
	lower->wr_flags = qpx->wr_flags;
	return lower;
}

static void qpx_wr_start(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	mqp->wr_err = 0;
	mqp->lower_ex->wr_start(mqp->lower_ex);
}

static int qpx_wr_complete(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);
	int err = mqp->wr_err;

	/* Like a provider's own builder error: nothing of the batch is posted */
	if (unlikely(err)) {
		mqp->wr_err = 0;
		mqp->lower_ex->wr_abort(mqp->lower_ex);
		return err;
	}
	return mqp->lower_ex->wr_complete(mqp->lower_ex);
}

static void qpx_wr_abort(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	mqp->wr_err = 0;
	mqp->lower_ex->wr_abort(mqp->lower_ex);
}

static void qpx_wr_send(struct ibv_qp_ex *qpx)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_send(lower);
}

static void qpx_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_send_imm(lower, imm_data);
}

/* Send with invalidate names an rkey of the partner's memory */
static void qpx_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_send_inv(lower, migr_remote_rkey_to_phys(qpx_remote(qpx),
							   invalidate_rkey));
}

static void qpx_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			    uint16_t mss)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_send_tso(lower, hdr, hdr_sz, mss);
}

static void qpx_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_rdma_write(lower,
			     migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			     remote_addr);
}

static void qpx_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_rdma_write_imm(
		lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
		remote_addr, imm_data);
}

static void qpx_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_rdma_read(lower,
			    migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			    remote_addr);
}

static void qpx_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_atomic_cmp_swp(
		lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
		remote_addr, compare, swap);
}

static void qpx_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_atomic_fetch_add(
		lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
		remote_addr, add);
}

static void qpx_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_atomic_write(lower,
			       migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			       remote_addr, atomic_wr);
}

static void qpx_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_flush(lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			remote_addr, len, type, level);
}

static void qpx_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	const struct migr_xlate *x = qpx_xlate(qpx);
	struct ibv_qp_ex *lower = start_wr(qpx);
	struct ibv_mw_bind_info linfo = *bind_info;
	struct ibv_mw *lmw = lower_mw(mw);

	/*
	 * Providers do not move a type 2 window's rkey on a bind; the
	 * application does, on our window. The lower one names the window by
	 * its current rkey, so show it the rkey the application left in ours.
	 */
	if (lmw)
		lmw->rkey = migr_rkey_to_phys(x, mw->rkey);
	linfo.mr = lower_mr(bind_info->mr);
	lower->wr_bind_mw(lower, lmw, migr_rkey_to_phys(x, rkey), &linfo);
}

static void qpx_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_qp_ex *lower = start_wr(qpx);

	lower->wr_local_inv(lower,
			    migr_rkey_to_phys(qpx_xlate(qpx), invalidate_rkey));
}

static void qpx_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	lower->wr_set_ud_addr(lower, lower_ah(ah),
			      migr_remote_qpn_to_phys(qpx_remote(qpx),
						      remote_qpn),
			      remote_qkey);
}

static void qpx_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	lower->wr_set_xrc_srqn(lower, migr_remote_srqn_to_phys(qpx_remote(qpx),
							       remote_srqn));
}

static void qpx_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				   size_t length)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	lower->wr_set_inline_data(lower, addr, length);
}

static void qpx_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	lower->wr_set_inline_data_list(lower, num_buf, buf_list);
}

static void qpx_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
			   uint32_t length)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	lower->wr_set_sge(lower, migr_lkey_to_phys(qpx_xlate(qpx), lkey), addr,
			  length);
}

/* Kept out of line so the identity path does not set up the big frame */
static void __attribute__((noinline))
set_sge_list_xlated(struct migr_qp *mqp, size_t num_sge,
		    const struct ibv_sge *sg_list)
{
	const struct migr_xlate *x = &mqp->ctx->xlate;
	struct ibv_sge sge[QPX_MAX_SGE];
	size_t i;

	/* No device takes this many; fail the batch at wr_complete() */
	if (unlikely(num_sge > QPX_MAX_SGE)) {
		mqp->wr_err = EINVAL;
		return;
	}
	for (i = 0; i < num_sge; i++) {
		sge[i] = sg_list[i];
		sge[i].lkey = migr_lkey_to_phys(x, sg_list[i].lkey);
	}
	mqp->lower_ex->wr_set_sge_list(mqp->lower_ex, num_sge, sge);
}

static void qpx_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	if (likely(!mqp->ctx->xlate.active)) {
		mqp->lower_ex->wr_set_sge_list(mqp->lower_ex, num_sge, sg_list);
		return;
	}
	set_sge_list_xlated(mqp, num_sge, sg_list);
}

/* Offer exactly the builders the lower QP offers */
#define QPX_SET(name) (v->name = l->name ? qpx_##name : NULL)

void migr_qp_ex_set_ops(struct migr_qp *mqp)
{
	struct ibv_qp_ex *v = &mqp->vqp.qp_ex;
	const struct ibv_qp_ex *l = mqp->lower_ex;

	QPX_SET(wr_atomic_cmp_swp);
	QPX_SET(wr_atomic_fetch_add);
	QPX_SET(wr_bind_mw);
	QPX_SET(wr_local_inv);
	QPX_SET(wr_rdma_read);
	QPX_SET(wr_rdma_write);
	QPX_SET(wr_rdma_write_imm);
	QPX_SET(wr_send);
	QPX_SET(wr_send_imm);
	QPX_SET(wr_send_inv);
	QPX_SET(wr_send_tso);
	QPX_SET(wr_set_ud_addr);
	QPX_SET(wr_set_xrc_srqn);
	QPX_SET(wr_set_inline_data);
	QPX_SET(wr_set_inline_data_list);
	QPX_SET(wr_set_sge);
	QPX_SET(wr_set_sge_list);
	QPX_SET(wr_start);
	QPX_SET(wr_complete);
	QPX_SET(wr_abort);
	QPX_SET(wr_atomic_write);
	QPX_SET(wr_flush);

	mqp->wr_err = 0;
	mqp->vqp.comp_mask |= VERBS_QP_EX;
}
