// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The extended send path (ibv_wr_*()). The application builds WRs on our
 * ibv_qp_ex; every builder is replayed on the lower QP's ibv_qp_ex with the
 * identifiers translated. Nothing here locks, allocates or enters the
 * kernel: a builder costs one extra indirect call. A batch that begins
 * while a switch holds the QP's posts is recorded instead (qp_ex_hold.c);
 * each builder checks one flag for that.
 */
#include <errno.h>

#include "datapath.h"
#include "ud_redirect.h"

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

/*
 * A batch is one stretch inside (a counter of its own: a batch may be
 * built inside a poll session); a switch waits for it to complete. A QP
 * that a switch holds, or whose send WRs are logged (MIGR_REPLAY), has
 * the batch written down as legacy WRs instead (qp_ex_hold.c).
 */
static inline bool batch_recorded(struct migr_qp *mqp)
{
	return __atomic_load_n(&mqp->slow, __ATOMIC_RELAXED) &
	       (MIGR_SLOW_SUSPENDED | MIGR_SLOW_LOG);
}

/*
 * The send queue's lock is held from start to end of a batch when other
 * threads post to the queue too, and for a recorded batch (no batch
 * counter says it is under way).
 */
static void qpx_wr_start(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	migr_batch_enter();
	if (unlikely(!migr_queue_owner_mine(&mqp->sq) || batch_recorded(mqp))) {
		migr_batch_leave();
		migr_queue_owner_lock(&mqp->sq);
		mqp->wr.locked = true;
		migr_batch_enter();
	}
	mqp->wr.err = 0;
	mqp->wr.consumers = 0;
	if (unlikely(batch_recorded(mqp))) {
		migr_batch_leave();
		mqp->wr.recording = true;
		return;
	}
	mqp->lower_ex->wr_start(mqp->lower_ex);
}

/* The batch is over: the queue's lock goes, if it took it */
static inline void batch_unlock(struct migr_qp *mqp)
{
	if (unlikely(mqp->wr.locked)) {
		mqp->wr.locked = false;
		migr_queue_owner_unlock(&mqp->sq);
	}
}

static int qpx_wr_complete(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);
	int err = mqp->wr.err;

	if (unlikely(mqp->wr.recording)) {
		err = migr_wr_rec_complete(mqp);
		batch_unlock(mqp);
		return err;
	}
	/* Like a provider's own builder error: nothing of the batch is posted */
	if (unlikely(err)) {
		mqp->wr.err = 0;
		mqp->lower_ex->wr_abort(mqp->lower_ex);
		if (unlikely(mqp->wr.n_inv))
			migr_mw_batch_done(mqp, false);
		migr_batch_leave();
		batch_unlock(mqp);
		return err;
	}
	err = mqp->lower_ex->wr_complete(mqp->lower_ex);
	if (likely(!err))
		mqp->n_consumers += mqp->wr.consumers;
	if (unlikely(mqp->wr.n_inv))
		migr_mw_batch_done(mqp, !err);
	migr_batch_leave();
	batch_unlock(mqp);
	return err;
}

static void qpx_wr_abort(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	if (unlikely(mqp->wr.recording)) {
		migr_wr_rec_abort(mqp);
		batch_unlock(mqp);
		return;
	}
	mqp->wr.err = 0;
	mqp->lower_ex->wr_abort(mqp->lower_ex);
	if (unlikely(mqp->wr.n_inv))
		migr_mw_batch_done(mqp, false);
	migr_batch_leave();
	batch_unlock(mqp);
}

/* A WR of a recorded batch, or NULL when the batch goes to the lower QP */
static inline struct ibv_send_wr *rec_wr(struct ibv_qp_ex *qpx,
					 enum ibv_wr_opcode opcode)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	if (likely(!mqp->wr.recording))
		return NULL;
	/* the batch fails at wr_complete() if the WR could not be noted */
	return migr_wr_rec_new(mqp, opcode) ?: (struct ibv_send_wr *)-1;
}

#define REC_FAILED(wr) ((wr) == (struct ibv_send_wr *)-1)

/* Builders a recorded batch cannot carry; no QP using them is moved */
static inline bool rec_refuse(struct ibv_qp_ex *qpx)
{
	struct migr_qp *mqp = qp_ex_to_mqp(qpx);

	if (likely(!mqp->wr.recording))
		return false;
	mqp->wr.err = EOPNOTSUPP;
	return true;
}

static void qpx_wr_send(struct ibv_qp_ex *qpx)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_SEND);
	struct ibv_qp_ex *lower;

	if (unlikely(wr))
		return;
	qp_ex_to_mqp(qpx)->wr.consumers++;
	lower = start_wr(qpx);
	lower->wr_send(lower);
}

static void qpx_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_SEND_WITH_IMM);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		if (!REC_FAILED(wr))
			wr->imm_data = imm_data;
		return;
	}
	qp_ex_to_mqp(qpx)->wr.consumers++;
	lower = start_wr(qpx);
	lower->wr_send_imm(lower, imm_data);
}

/* Send with invalidate names an rkey of the partner's memory */
static void qpx_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_SEND_WITH_INV);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		if (!REC_FAILED(wr))
			wr->invalidate_rkey = invalidate_rkey;
		return;
	}
	qp_ex_to_mqp(qpx)->wr.consumers++;
	lower = start_wr(qpx);
	lower->wr_send_inv(lower, migr_remote_rkey_to_phys(qpx_remote(qpx),
							   invalidate_rkey));
}

static void qpx_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			    uint16_t mss)
{
	struct ibv_qp_ex *lower;

	if (unlikely(rec_refuse(qpx)))
		return;
	lower = start_wr(qpx);
	lower->wr_send_tso(lower, hdr, hdr_sz, mss);
}

/* Note an RDMA WR of a recorded batch; the replay translates its rkey */
static void rec_rdma(struct ibv_send_wr *wr, uint32_t rkey,
		     uint64_t remote_addr)
{
	if (REC_FAILED(wr))
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
}

static void qpx_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_RDMA_WRITE);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		rec_rdma(wr, rkey, remote_addr);
		return;
	}
	lower = start_wr(qpx);
	lower->wr_rdma_write(lower,
			     migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			     remote_addr);
}

static void qpx_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_RDMA_WRITE_WITH_IMM);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		rec_rdma(wr, rkey, remote_addr);
		if (!REC_FAILED(wr))
			wr->imm_data = imm_data;
		return;
	}
	qp_ex_to_mqp(qpx)->wr.consumers++;
	lower = start_wr(qpx);
	lower->wr_rdma_write_imm(
		lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
		remote_addr, imm_data);
}

static void qpx_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_RDMA_READ);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		rec_rdma(wr, rkey, remote_addr);
		return;
	}
	lower = start_wr(qpx);
	lower->wr_rdma_read(lower,
			    migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			    remote_addr);
}

/* Note an atomic WR of a recorded batch */
static void rec_atomic(struct ibv_send_wr *wr, uint32_t rkey,
		       uint64_t remote_addr, uint64_t compare_add,
		       uint64_t swap)
{
	if (REC_FAILED(wr))
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void qpx_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		rec_atomic(wr, rkey, remote_addr, compare, swap);
		return;
	}
	lower = start_wr(qpx);
	lower->wr_atomic_cmp_swp(
		lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
		remote_addr, compare, swap);
}

static void qpx_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		rec_atomic(wr, rkey, remote_addr, add, 0);
		return;
	}
	lower = start_wr(qpx);
	lower->wr_atomic_fetch_add(
		lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
		remote_addr, add);
}

static void qpx_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	struct ibv_qp_ex *lower;

	if (unlikely(rec_refuse(qpx)))
		return;
	lower = start_wr(qpx);
	lower->wr_atomic_write(lower,
			       migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			       remote_addr, atomic_wr);
}

static void qpx_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level)
{
	struct ibv_qp_ex *lower;

	if (unlikely(rec_refuse(qpx)))
		return;
	lower = start_wr(qpx);
	lower->wr_flush(lower, migr_remote_rkey_to_phys(qpx_remote(qpx), rkey),
			remote_addr, len, type, level);
}

static void qpx_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	const struct migr_xlate *x = qpx_xlate(qpx);
	struct ibv_mw_bind_info linfo = *bind_info;
	struct ibv_mw *lmw = lower_mw(mw);
	struct ibv_qp_ex *lower;

	if (unlikely(rec_refuse(qpx)))
		return;
	lower = start_wr(qpx);

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
	struct ibv_send_wr *wr = rec_wr(qpx, IBV_WR_LOCAL_INV);
	struct ibv_qp_ex *lower;

	if (unlikely(wr)) {
		if (!REC_FAILED(wr))
			wr->invalidate_rkey = invalidate_rkey;
		return;
	}
	lower = start_wr(qpx);
	lower->wr_local_inv(lower,
			    migr_rkey_to_phys(qpx_xlate(qpx), invalidate_rkey));
	/* a type 2 window it unbinds is noted once the batch is posted */
	if (qp_ex_to_mqp(qpx)->ctx->mw2 &&
	    migr_mw_batch_inv(qp_ex_to_mqp(qpx), invalidate_rkey))
		qp_ex_to_mqp(qpx)->wr.err = ENOMEM;
}

static void qpx_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);
	struct ibv_ah *lah;

	/* Recorded as the application named it: the replay translates */
	if (unlikely(qp_ex_to_mqp(qpx)->wr.recording)) {
		struct ibv_send_wr *wr = migr_wr_rec_cur(qp_ex_to_mqp(qpx));

		if (wr) {
			wr->wr.ud.ah = ah;
			wr->wr.ud.remote_qpn = remote_qpn;
			wr->wr.ud.remote_qkey = remote_qkey;
		}
		return;
	}
	lah = migr_ud_dest(qpx_remote(qpx), ah, &remote_qpn);
	lower->wr_set_ud_addr(lower, lah, remote_qpn, remote_qkey);
}

static void qpx_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	if (unlikely(rec_refuse(qpx)))
		return;
	lower->wr_set_xrc_srqn(lower, migr_remote_srqn_to_phys(qpx_remote(qpx),
							       remote_srqn));
}

static void qpx_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				   size_t length)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	if (unlikely(qp_ex_to_mqp(qpx)->wr.recording)) {
		struct ibv_data_buf buf = { .addr = addr, .length = length };

		migr_wr_rec_inline(qp_ex_to_mqp(qpx), 1, &buf);
		return;
	}
	lower->wr_set_inline_data(lower, addr, length);
}

static void qpx_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	if (unlikely(qp_ex_to_mqp(qpx)->wr.recording)) {
		migr_wr_rec_inline(qp_ex_to_mqp(qpx), num_buf, buf_list);
		return;
	}
	lower->wr_set_inline_data_list(lower, num_buf, buf_list);
}

static void qpx_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
			   uint32_t length)
{
	struct ibv_qp_ex *lower = lower_qpx(qpx);

	if (unlikely(qp_ex_to_mqp(qpx)->wr.recording)) {
		struct ibv_sge sge = { .addr = addr,
				       .length = length,
				       .lkey = lkey };

		migr_wr_rec_sges(qp_ex_to_mqp(qpx), 1, &sge);
		return;
	}
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
		mqp->wr.err = EINVAL;
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

	if (unlikely(mqp->wr.recording)) {
		migr_wr_rec_sges(mqp, num_sge, sg_list);
		return;
	}
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

	mqp->vqp.comp_mask |= VERBS_QP_EX;
}

/* The builders a recorded batch can carry (qp_ex_hold.c) */
bool migr_qp_ex_movable(uint64_t send_ops_flags)
{
	const uint64_t recordable =
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
		IBV_QP_EX_WITH_SEND_WITH_INV;

	return !(send_ops_flags & ~recordable);
}
