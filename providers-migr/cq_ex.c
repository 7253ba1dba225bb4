// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The extended poll path (ibv_start_poll() and ibv_wc_read_*()). Polling
 * happens on the lower CQ; our ibv_cq_ex mirrors the fields the
 * application reads directly and translates the QP numbers it reads.
 */
#include "migr.h"

static inline struct ibv_cq_ex *lower_cqx(struct ibv_cq_ex *cq)
{
	return cq_ex_to_mcq(cq)->lower_ex;
}

/* The application reads status and wr_id straight from our cq_ex */
static int cqx_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);
	int ret;

	ret = lower->start_poll(lower, attr);
	if (likely(!ret)) {
		cq->status = lower->status;
		cq->wr_id = lower->wr_id;
	}
	return ret;
}

static int cqx_next_poll(struct ibv_cq_ex *cq)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);
	int ret;

	ret = lower->next_poll(lower);
	if (likely(!ret)) {
		cq->status = lower->status;
		cq->wr_id = lower->wr_id;
	}
	return ret;
}

static void cqx_end_poll(struct ibv_cq_ex *cq)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);

	lower->end_poll(lower);
}

/* The lower reports its own QPN; the application knows the virtual one */
static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cq)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);

	return migr_qpn_to_virt(&to_mcontext(cq->context)->xlate,
				lower->read_qp_num(lower));
}

/* A UD sender's QPN is a partner's: show the number the partner shows */
static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cq)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);

	return migr_remote_qpn_to_virt(&to_mcontext(cq->context)->remote,
				       lower->read_src_qp(lower));
}

static void cqx_read_tm_info(struct ibv_cq_ex *cq,
			     struct ibv_wc_tm_info *tm_info)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);

	lower->read_tm_info(lower, tm_info);
}

#define CQX_FORWARD(type, name)                                                \
	static type cqx_##name(struct ibv_cq_ex *cq)                           \
	{                                                                      \
		struct ibv_cq_ex *lower = lower_cqx(cq);                       \
                                                                               \
		return lower->name(lower);                                     \
	}

CQX_FORWARD(enum ibv_wc_opcode, read_opcode)
CQX_FORWARD(uint32_t, read_vendor_err)
CQX_FORWARD(uint32_t, read_byte_len)
CQX_FORWARD(__be32, read_imm_data)
CQX_FORWARD(unsigned int, read_wc_flags)
CQX_FORWARD(uint32_t, read_slid)
CQX_FORWARD(uint8_t, read_sl)
CQX_FORWARD(uint8_t, read_dlid_path_bits)
CQX_FORWARD(uint64_t, read_completion_ts)
CQX_FORWARD(uint16_t, read_cvlan)
CQX_FORWARD(uint32_t, read_flow_tag)
CQX_FORWARD(uint64_t, read_completion_wallclock_ns)

/* Offer exactly the readers the lower CQ offers (per its wc_flags) */
#define CQX_SET(name) (v->name = l->name ? cqx_##name : NULL)

void migr_cq_ex_set_ops(struct migr_cq *mcq)
{
	struct ibv_cq_ex *v = &mcq->vcq.cq_ex;
	const struct ibv_cq_ex *l = mcq->lower_ex;

	CQX_SET(start_poll);
	CQX_SET(next_poll);
	CQX_SET(end_poll);
	CQX_SET(read_opcode);
	CQX_SET(read_vendor_err);
	CQX_SET(read_byte_len);
	CQX_SET(read_imm_data);
	CQX_SET(read_qp_num);
	CQX_SET(read_src_qp);
	CQX_SET(read_wc_flags);
	CQX_SET(read_slid);
	CQX_SET(read_sl);
	CQX_SET(read_dlid_path_bits);
	CQX_SET(read_completion_ts);
	CQX_SET(read_cvlan);
	CQX_SET(read_flow_tag);
	CQX_SET(read_tm_info);
	CQX_SET(read_completion_wallclock_ns);
}
