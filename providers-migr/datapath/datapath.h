/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What runs on the application's own posts and polls: WR rewriting
 * (post.c), completions read back to virtual values and the shadows a
 * switch leaves (shadow.c), the logs a replay needs (slog.c, rlog.c),
 * ibv_wr_*() batches held while suspended (qp_ex_hold.c), type 2 windows'
 * state (mw_track.c); what CQs watch for is cq_watch.h.
 */
#ifndef MIGR_DATAPATH_H
#define MIGR_DATAPATH_H

#include "migr.h"

/* slow.c: the flag the fast path tests, recomputed after a change */
void migr_qp_update_slow(struct migr_qp *mqp);
/* a suspension ends, in the same store */
void migr_qp_unsuspend(struct migr_qp *mqp);

/* cq_poll.c: ibv_poll_cq(), ibv_req_notify_cq() */
int migr_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int migr_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* cq_ex.c, qp_ex.c: the extended CQ and QP ops, and which a switch carries */
void migr_cq_ex_set_ops(struct migr_cq *mcq);
bool migr_cq_ex_movable(const struct ibv_cq_init_attr_ex *attr);
void migr_qp_ex_set_ops(struct migr_qp *mqp);
bool migr_qp_ex_movable(uint64_t send_ops_flags);

/* slog.c: the send log and the completion counts replay needs */
bool migr_replay_wanted(void);
int migr_replay_init(struct migr_context *ctx);
void migr_replay_free(struct migr_context *ctx);
int migr_slog_init(struct migr_slog *log, const struct ibv_qp_cap *cap,
		   bool sig_all);
void migr_slog_add(struct migr_slog *log, const struct ibv_send_wr *wr,
		   const struct ibv_send_wr *stop);
int migr_slog_unfinished(const struct migr_slog *log, uint64_t sig_done,
			 uint64_t *n);
int migr_replay_track(struct migr_qp *mqp);
void migr_replay_untrack(struct migr_qp *mqp);
void migr_replay_seen(struct migr_context *ctx, enum ibv_wc_status status,
		      enum ibv_wc_opcode opcode, uint32_t qpn, uint64_t wr_id);
const struct migr_replay_count *migr_replay_count_of(const struct migr_qp *mqp);

/* rlog.c: the ring of posted RECVs */
int migr_rlog_init(struct migr_rlog *log, uint32_t max_wr, uint32_t max_sge);
typedef int (*post_recv_fn)(void *lower, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr);
int migr_rlog_repost(struct migr_rlog *log, uint64_t n, post_recv_fn post,
		     void *obj);
int migr_rlog_unused(const struct migr_rlog *log, uint64_t used,
		     uint64_t *unused);

/* shadow.c; migr_channel_raise(): an event owed on mch for mcq */
int migr_channel_raise(struct migr_comp_channel *mch, struct migr_cq *mcq);
int migr_poll_slow(struct migr_cq *mcq, int num_entries, struct ibv_wc *wc);
void migr_poll_idle(void);
void migr_shadow_pop(struct migr_cq *mcq);
unsigned int migr_shadow_fill(struct migr_cq *mcq);
void migr_shadow_settle(struct migr_cq *mcq);
void migr_shadow_take(struct migr_cq *mcq);
int migr_req_notify_slow(struct migr_cq *mcq, int solicited_only);
int migr_cq_drain(struct migr_cq *mcq);
int migr_shadow_add(struct migr_cq *mcq, struct ibv_wc *wc);
void migr_shadow_free(struct migr_cq *mcq);
void migr_markers_forget(struct migr_qp *mqp);

/* mw_track.c: what binds and invalidations left type 2 windows as */
void migr_mw2_added(struct migr_context *ctx);
void migr_mw_track_sends(struct migr_qp *mqp, const struct ibv_send_wr *wr,
			 const struct ibv_send_wr *stop);
void migr_mw_local_inv(struct migr_context *ctx, uint32_t rkey);
int migr_mw_batch_inv(struct migr_qp *mqp, uint32_t rkey);
void migr_mw_batch_done(struct migr_qp *mqp, bool posted);
void migr_mw_remote_inv(struct migr_context *ctx, uint32_t *rkey, bool unbind);
void migr_mw_qp_gone(struct migr_qp *mqp);
unsigned int migr_mw_bound_through(struct migr_qp *mqp);
const char *migr_mw2_blocker(struct migr_context *ctx);

/* qp_ex_hold.c: an ibv_wr_*() batch begun while the QP is suspended */
struct ibv_send_wr *migr_wr_rec_new(struct migr_qp *mqp,
				    enum ibv_wr_opcode opcode);
struct ibv_send_wr *migr_wr_rec_cur(struct migr_qp *mqp);
void migr_wr_rec_sges(struct migr_qp *mqp, size_t n, const struct ibv_sge *sge);
void migr_wr_rec_inline(struct migr_qp *mqp, size_t n,
			const struct ibv_data_buf *buf);
int migr_wr_rec_complete(struct migr_qp *mqp);
void migr_wr_rec_abort(struct migr_qp *mqp);

/* post.c */
int migr_hold_sends(struct migr_qp *mqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int migr_post_recv_rewritten(const struct migr_xlate *x, void *lower,
			     post_recv_fn post, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
int migr_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int migr_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int migr_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
int migr_slog_repost(struct migr_qp *mqp, uint64_t n, unsigned int *posted);
int migr_post_send_replay(struct migr_qp *mqp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr);
int migr_post_recv_replay(struct migr_qp *mqp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);
int migr_post_srq_recv_replay(struct migr_srq *msrq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr);

#endif /* MIGR_DATAPATH_H */
