// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The flag the fast path tests (mqp->slow): zero while a post can pass
 * through to the lower QP as it is; otherwise why it cannot. Owned here,
 * where the posts that test it are: the verbs, the switch and the partner
 * side only say that a reason may have changed.
 */
#include "datapath.h"

/* Why posts leave the pass-through path, suspension aside */
static uint8_t slow_reasons(const struct migr_qp *mqp)
{
	uint8_t slow = 0;

	if (mqp->rewrite_sends)
		slow |= MIGR_SLOW_REWRITE;
	if (mqp->ctx->xlate.active || mqp->remote->active)
		slow |= MIGR_SLOW_XLATE;
	if (mqp->slog.ring.buf)
		slow |= MIGR_SLOW_LOG;
	return slow;
}

/* Recompute why posts leave the pass-through path (all but suspension) */
void migr_qp_update_slow(struct migr_qp *mqp)
{
	__atomic_store_n(&mqp->slow,
			 (mqp->slow & MIGR_SLOW_SUSPENDED) | slow_reasons(mqp),
			 __ATOMIC_RELEASE);
}

/*
 * End a suspension: in one store, so that no post finds neither the
 * suspension nor the translation a switch has just made necessary (it
 * would reach the new lower QP with the old device's keys and numbers).
 */
void migr_qp_unsuspend(struct migr_qp *mqp)
{
	__atomic_store_n(&mqp->slow, slow_reasons(mqp), __ATOMIC_RELEASE);
}
