// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The legacy poll and notify path of a CQ (ibv_poll_cq, ibv_req_notify_cq) */
#include "cq_watch.h"
#include "datapath.h"

int migr_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct migr_context *ctx = to_mcontext(cq->context);
	struct migr_cq *mcq = to_mcq(cq);
	int n;

	migr_enter();
	if (unlikely(__atomic_load_n(&mcq->switching, __ATOMIC_RELAXED))) {
		/* entries come out of the shadow already translated */
		n = migr_poll_slow(mcq, num_entries, wc);
		migr_leave();
		return n;
	}
	n = ibv_poll_cq(mcq->lower, num_entries, wc);
	migr_cq_watch(mcq, wc, n);
	migr_leave();
	if (n <= 0 || likely(!ctx->xlate.active && !ctx->remote.active))
		return n;
	migr_wc_to_virt_fast(ctx, wc, n);
	return n;
}

int migr_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct migr_cq *mcq = to_mcq(cq);
	int ret;

	/* A switch arms the rebuilt CQ again and owes an event meanwhile */
	mcq->armed_solicited = solicited_only;
	mcq->armed = true;
	migr_enter();
	if (unlikely(__atomic_load_n(&mcq->switching, __ATOMIC_RELAXED)))
		ret = migr_req_notify_slow(mcq, solicited_only);
	else
		ret = ibv_req_notify_cq(mcq->lower, solicited_only);
	migr_leave();
	return ret;
}
