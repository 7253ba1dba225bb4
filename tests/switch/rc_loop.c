// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* See rc_loop.h */
#include <string.h>

#include "rc_loop.h"

/* What RC sets on the way to RTR and RTS and UC must not */
#define RC_RTR_MASK (IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RC_RTS_MASK                                                            \
	(IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |                \
	 IBV_QP_MAX_QP_RD_ATOMIC)

const char *rc_loop_connect(struct ibv_qp *qp, uint32_t dest, int gid_index,
			    const union ibv_gid *gid, uint32_t rq_psn,
			    uint32_t sq_psn, bool uc)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest,
		.rq_psn = rq_psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1,
			     .port_num = 1,
			     .grh = { .dgid = *gid,
				      .sgid_index = gid_index,
				      .hop_limit = 1 } },
	};

	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  (uc ? 0 : RC_RTR_MASK)))
		return "RTR";
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = sq_psn;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7; /* receiver not ready: retry for ever */
	attr.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_SQ_PSN |
				  (uc ? 0 : RC_RTS_MASK)))
		return "RTS";
	return NULL;
}
