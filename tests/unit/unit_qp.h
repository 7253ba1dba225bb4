/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* A migr QP of a bare migr context, over a lower QP of the fake provider */
#ifndef MIGR_UNIT_QP_H
#define MIGR_UNIT_QP_H

#include <string.h>

#include "migr.h"

/* mqp zeroed, the context's translation tables empty (identity) */
static inline void unit_qp_init(struct migr_qp *mqp, struct migr_context *mctx,
				struct ibv_qp *lower, enum ibv_qp_type type)
{
	memset(mqp, 0, sizeof(*mqp));
	migr_xlate_init(&mctx->xlate);
	migr_xlate_init(&mctx->remote);
	mqp->lower = lower;
	mqp->ctx = mctx;
	mqp->remote = &mctx->remote;
	mqp->vqp.qp.context = &mctx->vctx.context;
	mqp->vqp.qp.qp_type = type;
	mqp->hold.tail = &mqp->hold.wrs;
	pthread_mutex_init(&mqp->hold.lock, NULL);
}

#endif /* MIGR_UNIT_QP_H */
