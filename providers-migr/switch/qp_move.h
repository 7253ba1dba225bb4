/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The steps of a switch for one QP (qp_move.c): the switch takes them for
 * each of its QPs, a partner's side for the QP it moves along.
 */
#ifndef MIGR_QP_MOVE_H
#define MIGR_QP_MOVE_H

#include "migr.h"

/* RECVs posted from now on wait for the new lower QP */
void migr_qp_hold_recvs(struct migr_qp *mqp);
/* Post the QP's held WRs in order, let its posts through; how many */
unsigned int migr_qp_resume(struct migr_qp *mqp);
/* RECVs posted but never used, the other end having used `used` */
int migr_unused_recvs(const struct migr_qp *mqp, uint64_t used,
		      uint64_t *unused);
/* Post the QP's n newest logged RECVs again, in their order */
int migr_repost_recvs(struct migr_qp *mqp, uint64_t n, char *why,
		      size_t why_len);
/*
 * Take a new lower RC QP through INIT and RTR to RTS (or the state r names,
 * if earlier), connected to lower QP dest; *last: the last state tried
 */
int migr_lower_connect(struct ibv_qp *lower, const struct ibv_qp_attr *r,
		       uint32_t dest, enum ibv_qp_state *last);
/*
 * A released QP's last word: its flushes come on the provider's time,
 * later under load. Call poll(arg) (true: it took completions) until it
 * stayed quiet for quiet_ms once enough(arg) says the expected flushes are
 * in, or for wait_ms if they never come: a flush left behind would reach
 * the application.
 */
void migr_await_flushes(bool (*poll)(void *arg), bool (*enough)(void *arg),
			void *arg, double quiet_ms, double wait_ms);
/* Log what an operator needs to see of a QP that would not drain */
void migr_qp_log_state(struct migr_qp *mqp, const char *why);

#endif /* MIGR_QP_MOVE_H */
