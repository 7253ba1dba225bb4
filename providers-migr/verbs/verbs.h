/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The verbs the provider answers (device.c's ops table puts them in the
 * application's context), by object: each wraps the lower provider's verb
 * and records what a switch rebuilds (record.c). Their data-path siblings
 * (posts, polls) are in datapath.h.
 */
#ifndef MIGR_VERBS_H
#define MIGR_VERBS_H

#include "datapath.h"
#include "migr.h"

/*
 * What the verbs ask of the in-process agent (agent.h), which installs it
 * (migr_agent_install(), when the first context opens): a context opened
 * or closing, and at a QP's connect whether its peer is in this process,
 * what a peer elsewhere says of its QP (fetch), and our keys for a peer
 * that connected first (give). Without an agent (unit tests, the
 * benchmark) none is set, and a verb does without.
 */
struct migr_agent_hooks {
	void (*opened)(struct migr_context *ctx);
	void (*closing)(struct migr_context *ctx);
	struct migr_context *(*local_peer)(struct migr_context *ctx,
					   uint32_t vqpn);
	struct migr_xlate *(*fetch)(struct migr_qp *mqp,
				    const struct ibv_qp_attr *attr,
				    uint32_t our_phys, union ibv_gid *gid,
				    char *err, size_t errlen);
	int (*give)(struct migr_qp *mqp, uint32_t dest_qpn,
		    const union ibv_gid *dgid, uint32_t our_phys,
		    uint32_t partner_phys, char *err, size_t errlen);
};

/* qp.c: the agent's hooks, NULL until one installed them (device.c) */
extern const struct migr_agent_hooks *migr_agent;

/* events.c: completion channels, async events, waits for acks */
int migr_event_fd_add(int epfd, int lower_fd);
void migr_event_fd_del(int epfd, int lower_fd);
struct ibv_comp_channel *migr_create_comp_channel(struct ibv_context *context);
int migr_destroy_comp_channel(struct ibv_comp_channel *channel);
int migr_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		      void **cq_context);
int migr_get_async_event(struct ibv_context *context,
			 struct ibv_async_event *event);
int migr_event_fd_init(int lower_fd);
int migr_event_read(int app_fd, int (*read_lower)(void *arg), void *arg);
/*
 * Destroying an object waits until the application acked every event it
 * was handed, as ibv_destroy_*() does for a real provider.
 */
void migr_wait_acks(pthread_mutex_t *mutex, pthread_cond_t *cond,
		    const uint32_t *completed, uint32_t delivered);

/* pd.c */
struct ibv_pd *migr_alloc_pd(struct ibv_context *context);
int migr_dealloc_pd(struct ibv_pd *pd);
struct ibv_td *migr_alloc_td(struct ibv_context *context,
			     struct ibv_td_init_attr *init_attr);
int migr_dealloc_td(struct ibv_td *td);
struct ibv_pd *
migr_alloc_parent_domain(struct ibv_context *context,
			 struct ibv_parent_domain_init_attr *attr);
struct ibv_xrcd *migr_open_xrcd(struct ibv_context *context,
				struct ibv_xrcd_init_attr *attr);
int migr_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_pd *migr_import_pd(struct ibv_context *context, uint32_t pd_handle);
void migr_unimport_pd(struct ibv_pd *pd);

/* mr.c */
struct ibv_mr *migr_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
struct ibv_mr *migr_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				  size_t length, uint64_t iova, int fd,
				  int access);
struct ibv_mr *migr_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			      uint64_t dm_offset, size_t length,
			      unsigned int access);
struct ibv_mr *migr_alloc_null_mr(struct ibv_pd *pd);
int migr_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
int migr_dereg_mr(struct verbs_mr *vmr);
/* mr_mark.c: every page of a writable MR marked written (pre-copy) */
void migr_mr_mark_written(const struct migr_mr *mmr);
int migr_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges);
struct ibv_mr *migr_import_mr(struct ibv_pd *pd, uint32_t mr_handle);
void migr_unimport_mr(struct ibv_mr *mr);
struct ibv_mw *migr_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int migr_dealloc_mw(struct ibv_mw *mw);
int migr_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
unsigned int migr_rkey_pairs(struct migr_context *ctx, unsigned int start,
			     unsigned int max, char *buf);
struct ibv_dm *migr_alloc_dm(struct ibv_context *context,
			     struct ibv_alloc_dm_attr *attr);
int migr_free_dm(struct ibv_dm *dm);
struct ibv_dm *migr_import_dm(struct ibv_context *context, uint32_t dm_handle);
void migr_unimport_dm(struct ibv_dm *dm);

/* quirks.c */
void migr_quirks_init(struct migr_context *ctx);

/* numbers.c: a rebuilt object asks for its number (migr's rdma_rxe) */
void migr_numbers_probe(struct migr_context *ctx, const char *driver);
/* how to create one object, and read the number it got */
struct migr_numbered {
	void *(*create)(void *arg); /* NULL and errno set on failure */
	uint32_t (*number)(const void *obj);
	void *arg;
};
/*
 * The object how creates, with number want of kind where the device can
 * give it (want 0: nothing to ask), else with a number of the device's
 * (translated); counted in ctx->numbers. NULL and errno as the create's.
 */
void *migr_numbers_create(struct migr_context *ctx, enum migr_rxe_kind kind,
			  uint32_t want, const struct migr_numbered *how);
/*
 * The numbers of ctx's QPs and MRs that a destination's migrd holds under
 * ctx->numbers.token, taken over by ctx->lower before its objects are
 * created again there (migr_rxe(7), CLAIM); counted in numbers.claimed
 */
void migr_numbers_claim(struct migr_context *ctx);
/*
 * A drained RC QP in RTS pointed at another peer in place, its number,
 * queues and posted RECVs kept (migr_rxe(7)): 0, or an errno and the QP
 * as it was (EOPNOTSUPP: the device cannot)
 */
int migr_numbers_repoint(struct migr_context *ctx, struct ibv_qp *qp,
			 const union ibv_gid *dgid, uint32_t dest_qpn,
			 uint32_t sq_psn, uint32_t rq_psn);

/* cq.c */
struct ibv_cq *migr_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_cq_ex *migr_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr);
int migr_destroy_cq(struct ibv_cq *cq);
int migr_resize_cq(struct ibv_cq *cq, int cqe);
void migr_cq_sender_add(struct ibv_cq *cq);
void migr_cq_sender_del(struct ibv_cq *cq);
int migr_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);

/* qp.c */
struct ibv_qp *migr_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *migr_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *migr_open_qp(struct ibv_context *context,
			    struct ibv_qp_open_attr *attr);
int migr_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int migr_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		  struct ibv_qp_init_attr *init_attr);
int migr_destroy_qp(struct ibv_qp *qp);
int migr_modify_qp_rate_limit(struct ibv_qp *qp,
			      struct ibv_qp_rate_limit_attr *attr);
int migr_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
				uint32_t flags);
int migr_set_ece(struct ibv_qp *qp, struct ibv_ece *ece);
int migr_query_ece(struct ibv_qp *qp, struct ibv_ece *ece);
int migr_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid);
int migr_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid);
struct ibv_qp *migr_qp_create_lower(struct migr_qp *mqp,
				    struct ibv_context *lower_ctx,
				    struct ibv_qp_init_attr_ex *lattr);
void migr_qp_cap_to_app(const struct migr_qp *mqp, struct ibv_qp_cap *cap);
void migr_qp_lower_attr(struct ibv_qp_init_attr_ex *lattr,
			const struct ibv_qp_init_attr_ex *attr,
			struct migr_qp *mqp);
/*
 * Take a new lower RC QP through INIT and RTR to RTS (or the state r names,
 * if earlier), connected to lower QP dest; *last: the last state tried
 */
int migr_lower_connect(struct ibv_qp *lower, const struct ibv_qp_attr *r,
		       uint32_t dest, enum ibv_qp_state *last);

/* srq.c */
struct ibv_srq *migr_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
struct ibv_srq *migr_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr);
int migr_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		    int attr_mask);
int migr_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int migr_destroy_srq(struct ibv_srq *srq);
int migr_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
int migr_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
		      struct ibv_ops_wr **bad_op);
void migr_srq_note_qp(struct migr_qp *mqp);
void migr_srq_forget_qp(struct migr_qp *mqp);
void migr_srq_rekey_qp(struct migr_qp *mqp);

/* The limit event fired: the device disarmed the limit */
static inline void migr_srq_limit_reached(struct migr_srq *msrq)
{
	__atomic_store_n(&msrq->limit, 0, __ATOMIC_RELAXED);
}

/* ah.c */
struct ibv_ah *migr_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int migr_destroy_ah(struct ibv_ah *ah);

/* flow.c */
struct ibv_flow *migr_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *flow_attr);
int migr_destroy_flow(struct ibv_flow *flow);
struct ibv_flow_action *
migr_create_flow_action_esp(struct ibv_context *context,
			    struct ibv_flow_action_esp_attr *attr);
int migr_modify_flow_action_esp(struct ibv_flow_action *action,
				struct ibv_flow_action_esp_attr *attr);
int migr_destroy_flow_action(struct ibv_flow_action *action);
struct ibv_counters *
migr_create_counters(struct ibv_context *context,
		     struct ibv_counters_init_attr *init_attr);
int migr_destroy_counters(struct ibv_counters *counters);
int migr_attach_counters_point_flow(struct ibv_counters *counters,
				    struct ibv_counter_attach_attr *attr,
				    struct ibv_flow *flow);
int migr_read_counters(struct ibv_counters *counters, uint64_t *counters_value,
		       uint32_t ncounters, uint32_t flags);

/* wq.c */
struct ibv_wq *migr_create_wq(struct ibv_context *context,
			      struct ibv_wq_init_attr *attr);
int migr_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int migr_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *
migr_create_rwq_ind_table(struct ibv_context *context,
			  struct ibv_rwq_ind_table_init_attr *init_attr);
int migr_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);

#endif /* MIGR_VERBS_H */
