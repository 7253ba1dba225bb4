/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Objects that take their own steps through the phases of a switch: UD
 * QPs (ud_switch.c), SRQs (srq_switch.c), memory windows (mw_switch.c)
 * and device memory (dm_switch.c).
 */
#ifndef MIGR_SWITCH_OBJECTS_H
#define MIGR_SWITCH_OBJECTS_H

#include "migr.h"

/* ud_switch.c: UD QPs through the phases of a switch */
int migr_ud_precheck(struct migr_context *ctx, struct migr_context *const *v,
		     unsigned int n, char *why, size_t why_len);
int migr_ud_post_marker(struct migr_context *ctx, struct migr_qp *mqp);
void migr_ud_marker_drop(struct migr_qp *mqp);
int migr_ud_connect(struct migr_qp *mqp, char *why, size_t why_len);
int migr_ud_publish(struct migr_context **ctxs, unsigned int n);
void migr_ud_unused_from_flushes(struct migr_context *ctx, uint64_t *unused);

/* srq_switch.c: shared receive queues through the phases of a switch */
void migr_srqs_suspend(struct migr_context *ctx);
void migr_srqs_hold_recvs(struct migr_context *ctx);
int migr_srqs_count_unused(struct migr_context *ctx, char *why, size_t why_len);
void migr_srqs_release(struct migr_context *ctx);
int migr_srqs_rebuild(struct migr_context *ctx, char *why, size_t why_len);
int migr_srqs_repost(struct migr_context *ctx, unsigned int *reposted,
		     char *why, size_t why_len);
unsigned int migr_srqs_resume(struct migr_context *ctx);
void migr_srq_partner_hold(struct migr_srq *msrq);

/* The RECVs of msrq that the CQs it feeds saw used up */
static inline uint64_t migr_srq_used_total(const struct migr_context *ctx,
					   const struct migr_srq *msrq)
{
	const struct migr_cq *mcq;
	uint64_t used = 0;

	list_for_each (&ctx->rec.cqs, mcq, entry)
		if (mcq->srq_fed == msrq)
			used += __atomic_load_n(&mcq->srq_recvs,
						__ATOMIC_RELAXED);
	return used;
}
unsigned int migr_srq_partner_release(struct migr_srq *msrq);

/* mw_switch.c: type 1 memory windows bound again on the target */
int migr_mws_rebuild(struct migr_context *ctx, char *why, size_t why_len);
int migr_mws_bind_type2(struct migr_context *ctx, struct migr_qp *only,
			char *why, size_t why_len);
/* a partner's switch replaces a QP that type 2 windows are bound through */
#define MIGR_QP_MW_MAX 32
void migr_mws_release_qp(struct migr_context *ctx, struct migr_qp *mqp);
int migr_mws_rebind_qp(struct migr_context *ctx, struct migr_qp *mqp,
		       char *pairs, char *why, size_t why_len);
void migr_mws_release(struct migr_context *ctx);

/* dm_switch.c: device memory, its contents carried through host memory */
int migr_dms_precheck(struct migr_context *ctx, struct ibv_context *target,
		      char *why, size_t why_len);
int migr_dms_save(struct migr_context *ctx, char *why, size_t why_len);
void migr_dms_release(struct migr_context *ctx);
int migr_dms_rebuild(struct migr_context *ctx, char *why, size_t why_len);
void migr_dms_resume(struct migr_context *ctx);

#endif /* MIGR_SWITCH_OBJECTS_H */
