// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The extended poll path (ibv_start_poll() and ibv_wc_read_*()). Polling
 * happens on the lower CQ; our ibv_cq_ex mirrors the fields the
 * application reads directly and translates the QP numbers it reads.
 *
 * While a switch is under way a poll session runs on the CQ's shadow
 * instead (shadow.c): the session holds the shadow lock from start to end,
 * and the readers answer from the shadow entry at its head. A thread knows
 * its own session is such a one (a thread-local pointer), so sessions that
 * began on the lower CQ just before the switch end there undisturbed.
 */
#include <errno.h>

#include "cq_watch.h"
#include "datapath.h"
#include "migr.h"

static __thread struct migr_cq *shadow_session
	__attribute__((tls_model("initial-exec")));

static inline struct ibv_cq_ex *lower_cqx(struct ibv_cq_ex *cq)
{
	return cq_ex_to_mcq(cq)->lower_ex;
}

/* The entry a shadow session reads, or NULL in a session on the lower */
static inline const struct ibv_wc *shadow_wc(struct ibv_cq_ex *cq)
{
	struct migr_cq *mcq = cq_ex_to_mcq(cq);

	if (likely(shadow_session != mcq))
		return NULL;
	return &mcq->shadow.wc[mcq->shadow.head];
}

/* The entry the lower CQ shows, as migr_cq_watch() looks at a wc */
static void watch_ex(struct migr_cq *mcq, struct ibv_cq_ex *lower)
{
	if (mcq->srq_fed &&
	    migr_srq_used(mcq, lower->status, ibv_wc_read_opcode(lower),
			  mcq->recv_plain ? ibv_wc_read_qp_num(lower) : 0))
		__atomic_add_fetch(&mcq->srq_recvs, 1, __ATOMIC_RELAXED);
	if ((mcq->watch & MIGR_WATCH_UD) && lower->status == IBV_WC_SUCCESS)
		migr_ud_src_seen(to_mcontext(mcq->vcq.cq.context),
				 lower->status, ibv_wc_read_src_qp(lower));
	/* the lower CQ reads QPNs when replay is on (migr_create_cq_ex()) */
	if ((mcq->watch & MIGR_WATCH_REPLAY) && lower->status == IBV_WC_SUCCESS)
		migr_replay_seen(to_mcontext(mcq->vcq.cq.context),
				 lower->status, ibv_wc_read_opcode(lower),
				 ibv_wc_read_qp_num(lower), lower->wr_id);
	/* without read_imm_data, a switch refuses (migr_mw2_blocker()) */
	if ((mcq->watch & MIGR_WATCH_INV) && lower->status == IBV_WC_SUCCESS &&
	    lower->read_imm_data && ibv_wc_read_opcode(lower) == IBV_WC_RECV &&
	    (ibv_wc_read_wc_flags(lower) &
	     to_mcontext(mcq->vcq.cq.context)->wc_inv)) {
		uint32_t rkey = ibv_wc_read_invalidated_rkey(lower);

		migr_mw_remote_inv(to_mcontext(mcq->vcq.cq.context), &rkey,
				   true);
	}
}

static void show_head(struct ibv_cq_ex *cq, struct migr_cq *mcq)
{
	const struct ibv_wc *wc = &mcq->shadow.wc[mcq->shadow.head];

	cq->status = wc->status;
	cq->wr_id = wc->wr_id;
}

/* Entries (drained from the lower CQ as by migr_poll_cq) to hand out */
static int shadow_start(struct ibv_cq_ex *cq, struct migr_cq *mcq)
{
	pthread_mutex_lock(&mcq->shadow_lock);
	if (!migr_shadow_fill(mcq)) {
		pthread_mutex_unlock(&mcq->shadow_lock);
		migr_poll_idle();
		return ENOENT;
	}
	shadow_session = mcq;
	show_head(cq, mcq);
	return 0;
}

/* The application reads status and wr_id straight from our cq_ex */
static int cqx_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct migr_cq *mcq = cq_ex_to_mcq(cq);
	struct ibv_cq_ex *lower;
	int ret;

	/* Inside from start to end: a switch waits for the session to end */
	migr_session_enter();
	if (unlikely(__atomic_load_n(&mcq->switching, __ATOMIC_RELAXED))) {
		migr_session_leave();
		return shadow_start(cq, mcq);
	}
	lower = mcq->lower_ex;
	ret = lower->start_poll(lower, attr);
	if (likely(!ret)) {
		cq->status = lower->status;
		cq->wr_id = lower->wr_id;
		if (unlikely(mcq->watch))
			watch_ex(mcq, lower);
	} else {
		migr_session_leave();
	}
	return ret;
}

static int cqx_next_poll(struct ibv_cq_ex *cq)
{
	struct migr_cq *mcq = cq_ex_to_mcq(cq);
	struct ibv_cq_ex *lower;
	int ret;

	if (unlikely(shadow_session == mcq)) {
		migr_shadow_pop(mcq);
		if (!migr_shadow_fill(mcq))
			return ENOENT;
		show_head(cq, mcq);
		return 0;
	}
	lower = mcq->lower_ex;
	ret = lower->next_poll(lower);
	if (likely(!ret)) {
		cq->status = lower->status;
		cq->wr_id = lower->wr_id;
		if (unlikely(mcq->watch))
			watch_ex(mcq, lower);
	}
	return ret;
}

static void cqx_end_poll(struct ibv_cq_ex *cq)
{
	struct migr_cq *mcq = cq_ex_to_mcq(cq);
	struct ibv_cq_ex *lower;

	if (unlikely(shadow_session == mcq)) {
		/* the entry shown last, unless next_poll found none */
		if (mcq->shadow.count)
			migr_shadow_pop(mcq);
		migr_shadow_settle(mcq);
		shadow_session = NULL;
		pthread_mutex_unlock(&mcq->shadow_lock);
		return;
	}
	lower = mcq->lower_ex;
	lower->end_poll(lower);
	migr_session_leave();
}

/* The lower reports its own QPN; the application knows the virtual one */
static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cq)
{
	const struct ibv_wc *wc = shadow_wc(cq);
	struct ibv_cq_ex *lower = lower_cqx(cq);

	if (unlikely(wc))
		return wc->qp_num; /* translated when it entered the shadow */
	return migr_qpn_to_virt(&to_mcontext(cq->context)->xlate,
				lower->read_qp_num(lower));
}

/* A UD sender's QPN is a partner's: show the number the partner shows */
static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cq)
{
	const struct ibv_wc *wc = shadow_wc(cq);
	struct ibv_cq_ex *lower = lower_cqx(cq);

	if (unlikely(wc))
		return wc->src_qp;
	return migr_remote_qpn_to_virt(&to_mcontext(cq->context)->remote,
				       lower->read_src_qp(lower));
}

static void cqx_read_tm_info(struct ibv_cq_ex *cq,
			     struct ibv_wc_tm_info *tm_info)
{
	struct ibv_cq_ex *lower = lower_cqx(cq);

	lower->read_tm_info(lower, tm_info);
}

/* Readers of what a struct ibv_wc holds: from the shadow in its session */
#define CQX_FORWARD_WC(type, name, field)                                      \
	static type cqx_##name(struct ibv_cq_ex *cq)                           \
	{                                                                      \
		const struct ibv_wc *wc = shadow_wc(cq);                       \
		struct ibv_cq_ex *lower = lower_cqx(cq);                       \
                                                                               \
		if (unlikely(wc))                                              \
			return wc->field;                                      \
		return lower->name(lower);                                     \
	}

/* Fields a switch cannot carry over (migr_cq_ex_movable() says so) */
#define CQX_FORWARD(type, name)                                                \
	static type cqx_##name(struct ibv_cq_ex *cq)                           \
	{                                                                      \
		struct ibv_cq_ex *lower = lower_cqx(cq);                       \
                                                                               \
		return lower->name(lower);                                     \
	}

CQX_FORWARD_WC(enum ibv_wc_opcode, read_opcode, opcode)
CQX_FORWARD_WC(uint32_t, read_vendor_err, vendor_err)
CQX_FORWARD_WC(uint32_t, read_byte_len, byte_len)

/* An invalidated rkey shares the field: one of ours, shown virtual */
static __be32 cqx_read_imm_data(struct ibv_cq_ex *cq)
{
	const struct ibv_wc *wc = shadow_wc(cq);
	struct migr_cq *mcq = cq_ex_to_mcq(cq);
	struct ibv_cq_ex *lower = mcq->lower_ex;
	uint32_t rkey;

	if (unlikely(wc))
		return wc->imm_data; /* translated when it entered the shadow */
	if (likely(!(mcq->watch & MIGR_WATCH_INV)) ||
	    ibv_wc_read_opcode(lower) != IBV_WC_RECV ||
	    !(ibv_wc_read_wc_flags(lower) & to_mcontext(cq->context)->wc_inv))
		return lower->read_imm_data(lower);
	rkey = ibv_wc_read_invalidated_rkey(lower);
	migr_mw_remote_inv(to_mcontext(cq->context), &rkey, false);
	return (__force __be32)rkey;
}
CQX_FORWARD_WC(unsigned int, read_wc_flags, wc_flags)
CQX_FORWARD_WC(uint32_t, read_slid, slid)
CQX_FORWARD_WC(uint8_t, read_sl, sl)
CQX_FORWARD_WC(uint8_t, read_dlid_path_bits, dlid_path_bits)
CQX_FORWARD(uint64_t, read_completion_ts)
CQX_FORWARD(uint16_t, read_cvlan)
CQX_FORWARD(uint32_t, read_flow_tag)
CQX_FORWARD(uint64_t, read_completion_wallclock_ns)

/* A switch rebuilds an extended CQ whose fields all fit a struct ibv_wc */
bool migr_cq_ex_movable(const struct ibv_cq_init_attr_ex *attr)
{
	const uint64_t wc_fields = IBV_WC_EX_WITH_BYTE_LEN |
				   IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
				   IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID |
				   IBV_WC_EX_WITH_SL |
				   IBV_WC_EX_WITH_DLID_PATH_BITS;

	return !(attr->wc_flags & ~wc_fields) &&
	       !(attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD);
}

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
