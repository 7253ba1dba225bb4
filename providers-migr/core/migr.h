/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * migr: a stacking verbs provider. Every object the application holds is a
 * migr object wrapping exactly one object of the lower (real) provider, so
 * the real objects can later be rebuilt underneath without the application
 * noticing. See migr(7) and docs/architecture.md.
 */
#ifndef MIGR_H
#define MIGR_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <ccan/list.h>
#include <infiniband/driver.h>
#include <rdma/migr_rxe_abi.h>
#include <util/util.h>

#include "gid.h"
#include "queue_owner.h"
#include "quiesce.h"
#include "xlate.h"

struct migr_partner;
struct migr_ud_redir;
struct migr_ud_moves;

/* Objects a live switch cannot rebuild yet: a switch is refused while any
 * of them exists (record.c names them in the error). */
enum migr_unsup {
	MIGR_UNSUP_SRQ,
	MIGR_UNSUP_SRQ_CQ,
	MIGR_UNSUP_XRCD,
	MIGR_UNSUP_TD,
	MIGR_UNSUP_PARENT_DOMAIN,
	MIGR_UNSUP_IMPORTED,
	MIGR_UNSUP_WQ,
	MIGR_UNSUP_FLOW,
	MIGR_UNSUP_COUNTERS,
	MIGR_UNSUP_CQ_EX,
	MIGR_UNSUP_QP_EX,
	MIGR_UNSUP_QP_TYPE,
	MIGR_UNSUP_MR_KIND,
	MIGR_UNSUP_NUM,
};

/* migr's in-process record of the control path: what a switch rebuilds */
struct migr_record {
	pthread_mutex_t lock;
	struct list_head pds, dms, mrs, mws, channels, cqs, srqs, qps, ahs;
	uint32_t unsupported[MIGR_UNSUP_NUM];
};

struct migr_device {
	struct verbs_device vdev;
};

#define MIGR_UD_SRC_MAX 16
#define MIGR_UD_HOSTS_MAX 8

/* Hosts of UD peers elsewhere, as addresses (ud_announce.c) */
struct migr_ud_hosts {
	unsigned int n;
	char h[MIGR_UD_HOSTS_MAX][46]; /* INET6_ADDRSTRLEN */
};

/* What the lower device lets a rebuilt object ask for (numbers.c) */
struct migr_numbers {
	bool can_ask; /* migr's rdma_rxe: the next create takes a number */
	bool can_repoint; /* ... and a drained QP changes peers in place */
	bool can_claim; /* ... and takes numbers held for it elsewhere */
	uint32_t ranges[MIGR_RXE_RANGES]; /* lowest, highest of each kind */
	/* objects rebuilt on this lower that asked: given it, or not */
	unsigned int kept, moved;
	/* a resume's: numbers migrd holds for it under this token (0: none) */
	uint64_t token;
	unsigned int claimed; /* of them, taken over by this lower */
};

/* The replicas of peer contexts' tables in other processes (peer.c) */
struct migr_ctx_peers {
	struct list_head list;
	pthread_mutex_t lock;
	uint64_t id; /* names this context to its partners */
};

/*
 * What the switches of partners in other processes hold of a context
 * (serve/partner_follow.c: the partner's side; the QP phases retire a QP
 * with it)
 */
struct migr_ctx_partner {
	unsigned int sessions; /* QPs of it a partner's switch holds */
	/* a lower QP a partner's switch replaces: its flushes are dropped */
	bool retiring;
	uint32_t retiring_qpn;
	unsigned int retired_flushes;
};

struct migr_context {
	struct verbs_context vctx;
	struct ibv_context *lower;
	struct migr_numbers numbers;
	struct migr_xlate xlate; /* this process's own identifiers */
	/*
	 * Partners' identifiers for QPs not tied to a peer context yet (and
	 * UD QPNs published within the process); each peer context in
	 * another process has its own replica (peer.c)
	 */
	struct migr_xlate remote;
	struct migr_ctx_peers peers;
	int lower_async_fd; /* the lower context's, watched by our epoll fd */
	struct migr_record rec;
	/* GIDs it had before its switches (gid.h); under rec.lock */
	struct migr_gid_history gid_history;
	/* control verbs (read) against a switch (write) */
	pthread_rwlock_t ctl_lock;
	/*
	 * Event reads (read) against release and rebuild (write), which
	 * replace the lower channels: while a switch drains, applications
	 * must go on reading events, polling and posting RECVs.
	 */
	pthread_rwlock_t ev_lock;
	unsigned int switches;
	/* set from suspension to resumption; CQ shadows stay until drained */
	bool switch_active;
	unsigned int markers_out; /* drain markers not completed yet */
	struct migr_ctx_partner partner; /* partners' switches here */
	/*
	 * The lower QPNs UD datagrams came from since the last switch (polls
	 * of CQs with MIGR_WATCH_UD note them): a sender in another process
	 * would not learn where its peer went, so a switch refuses then.
	 */
	pthread_mutex_t ud_src_lock;
	uint32_t ud_src[MIGR_UD_SRC_MAX];
	unsigned int n_ud_src; /* MIGR_UD_SRC_MAX + 1: more than that */
	/* where a switch tells UD peers it moved: found by its precheck */
	struct migr_ud_hosts ud_hosts;
	/* UD peers elsewhere that moved (ud_redirect.h); under ctl_lock */
	struct migr_ud_moves *ud_moves;
	struct list_node entry; /* in the process's list of contexts */
	/* MIGR_REPLAY=1: what replaying after the wait bound needs (slog.c) */
	struct migr_replay *replay;
	/* type 2 memory windows allocated: CQs watch for invalidations */
	unsigned int mw2;
	/* the receive completion flags that say "invalidated" (quirks.c) */
	unsigned int wc_inv;
};

struct migr_pd {
	struct ibv_pd pd;
	struct ibv_pd *lower;
	struct list_node entry;
	int unsup; /* -1 for a plain PD in the record, else a MIGR_UNSUP_* */
	/* drain markers write a byte here; not in the record (switch.c) */
	struct ibv_mr *marker_mr;
	uint64_t marker_buf;
};

struct migr_td {
	struct ibv_td td;
	struct ibv_td *lower;
};

struct migr_xrcd {
	struct verbs_xrcd vxrcd;
	struct ibv_xrcd *lower;
};

struct migr_mr {
	struct verbs_mr vmr;
	struct ibv_mr *lower;
	struct list_node entry;
	/*
	 * How to register it again: ibv_reg_mr_iova2() arguments, or, over
	 * device memory, ibv_reg_dm_mr() ones (iova: the offset in dm)
	 */
	bool rebuildable;
	uint64_t iova;
	struct migr_dm *dm;
};

struct migr_mw {
	struct ibv_mw mw;
	struct ibv_mw *lower;
	struct list_node entry;
	/*
	 * The last bind, to bind again (under rec.lock). Type 1: what
	 * ibv_bind_mw() asked, mr NULL if unbound. Type 2 (mw_track.c): what
	 * the last bind WR the lower QP took asked, qp NULL while unbound
	 * (never bound, or invalidated since).
	 */
	struct migr_mr *mr;
	uint64_t addr, length;
	unsigned int access;
	struct migr_qp *qp;
	/* type 2: the rkey of its last bind (virtual), else what it had */
	uint32_t cur_rkey;
	uint32_t bind_rkey; /* a rebuild binds the new lower window so */
};

struct migr_dm {
	struct verbs_dm vdm;
	struct ibv_dm *lower;
	struct list_node entry;
	struct ibv_alloc_dm_attr attr; /* to allocate it again */
	/*
	 * A switch moves it (dm_switch.c): the application's copies to and
	 * from it wait, and its contents are kept in saved meanwhile
	 */
	bool moving;
	void *saved;
};

struct migr_comp_channel {
	struct ibv_comp_channel channel; /* fd: an epoll fd over lower->fd */
	struct ibv_comp_channel *lower;
	struct list_node entry;
	/*
	 * Events a switch owes the application (an armed CQ whose entries it
	 * moved to the shadow): CQs listed here, counted on an eventfd that
	 * sits in the channel's epoll set next to the lower fd.
	 */
	int synth_fd;
	pthread_mutex_t synth_lock;
	struct migr_cq **synth;
	unsigned int nsynth, synth_cap;
};

/* Completions a switch took off a lower CQ, handed out before new ones */
struct migr_shadow {
	struct ibv_wc *wc;
	uint32_t cap, head, count;
};

struct migr_cq {
	struct verbs_cq vcq;
	struct ibv_cq *lower;
	struct ibv_cq_ex *lower_ex; /* set for CQs made by create_cq_ex */
	/* events handed to the application; destroy waits for their acks */
	uint32_t comp_events;
	uint32_t async_events;
	/* data path: polls take the slow path (shadow.c) while set */
	bool switching;
	struct ibv_cq *dying; /* the old lower CQ while a switch releases */
	/* an extended CQ's creation attributes, for a rebuild */
	struct ibv_cq_init_attr_ex ex_attr;
	pthread_mutex_t shadow_lock;
	struct migr_shadow shadow;
	/*
	 * Shadow entries the switch moved that no event has announced yet:
	 * an arm owes one event for them, once, never again for the same ones
	 * (an application that re-arms before polling must not spin).
	 */
	uint32_t unsignalled;
	/* record */
	struct list_node entry;
	int cqe_req, comp_vector;
	/*
	 * QPs that send completions here: each may carry a completion of
	 * migr's own (a drain marker, a window bound again) on top of what
	 * the application sized the CQ for, so the lower CQ has room for
	 * cqe_req + senders (migr_cq_sender_add())
	 */
	unsigned int senders;
	struct migr_comp_channel *mch;
	bool armed, armed_solicited;
	/*
	 * The SRQ this CQ receives for: the RECV completions taken off the
	 * lower CQ for QPs on it are what the SRQ used up (srq_recvs). When
	 * QPs with queues of their own receive here too (recv_plain), a
	 * completion is the SRQ's if its QP is in srq_qps (lower QPNs). A CQ
	 * receiving for two SRQs cannot count (srq_mixed).
	 */
	struct migr_srq *srq_fed;
	/* what polls look at in its completions (MIGR_WATCH_*); 0: nothing */
	uint8_t watch;
	bool recv_plain, srq_mixed;
	uint64_t srq_recvs;
	struct migr_u32map srq_qps;
};

/*
 * A ring of fixed-size entries, a power of two of them, each 1 << shift
 * bytes: the post path finds a slot with a mask and a shift (ring.c)
 */
struct migr_ring {
	uint8_t *buf; /* NULL: none kept */
	uint32_t mask, shift;
};

/* The slot of the i-th entry ever written */
static inline void *migr_ring_at(const struct migr_ring *r, uint64_t i)
{
	return r->buf + ((i & r->mask) << r->shift);
}

/* Room for at least n entries of entry bytes (none for n 0); 0 or ENOMEM */
int migr_ring_init(struct migr_ring *r, uint32_t n, size_t entry);
void migr_ring_free(struct migr_ring *r);

/* The RECVs posted to a QP or SRQ, newest last: a switch reposts those unused */
struct migr_rlog {
	struct migr_ring ring;
	uint32_t max_sge;
	uint64_t head; /* RECVs ever posted */
};

/*
 * The send WRs posted to an RC QP, newest last, kept only with MIGR_REPLAY
 * (slog.c): after the wait bound, those the lower QP never completed are
 * posted again on the rebuilt one. An entry: the WR, its SGEs, then its
 * inline payload.
 */
struct migr_slog {
	struct migr_ring ring;
	uint32_t max_sge, max_inline;
	bool sig_all; /* the QP signals every WR */
	bool broken; /* it posted what the log does not hold: no replay */
	uint64_t head; /* WRs ever posted (the lower accepted) */
	uint64_t nsig; /* of them signaled */
	uint64_t done; /* WRs known complete (a drain marker came back) */
};

struct migr_slog_entry {
	uint64_t sig_before; /* signaled WRs posted before this one */
	struct ibv_send_wr wr; /* sg_list points at sge */
	struct ibv_sge sge[];
};

static inline struct migr_slog_entry *migr_slog_at(const struct migr_slog *log,
						   uint64_t i)
{
	return migr_ring_at(&log->ring, i);
}

/*
 * Per tracked QP (slot): its successful completions taken off lower CQs,
 * counted by polls and drains of CQs with MIGR_WATCH_REPLAY. Not in the
 * QP: a poll may run into a QP being destroyed.
 */
struct migr_replay_count {
	uint64_t sends; /* signaled send WRs of the application */
	uint64_t recvs; /* RECVs of its own receive queue */
};

#define MIGR_REPLAY_SLOTS 4096

struct migr_replay {
	struct migr_u32map by_lower; /* lower QPN -> slot */
	pthread_mutex_t lock; /* writers of by_lower and used */
	uint8_t used[MIGR_REPLAY_SLOTS];
	struct migr_replay_count count[MIGR_REPLAY_SLOTS];
};

struct migr_held_wr;

/*
 * Posts held while a switch holds the queue, in order. RECVs go through
 * to the lower queue until recvs (set once the queues drained, before the
 * lower one goes): a partner's SENDs in flight need them.
 */
struct migr_hold {
	pthread_mutex_t lock;
	struct migr_held_wr *wrs, **tail;
	bool recvs;
};

struct migr_srq {
	struct verbs_srq vsrq;
	struct ibv_srq *lower;
	uint32_t async_events;
	uint8_t slow; /* MIGR_SLOW_SUSPENDED while a switch holds its posts */
	struct migr_queue_owner owner; /* who posts RECVs: the log's guard */
	struct migr_rlog rlog;
	struct migr_hold hold; /* RECVs held from hold.recvs on */
	/* partner sessions that hold its RECVs for a replay's count */
	unsigned int partner_holds;
	/* record: a basic SRQ with a PD, unless unsup (a MIGR_UNSUP_*) */
	struct list_node entry;
	int unsup;
	uint32_t max_wr, max_sge;
	uint32_t limit; /* the armed limit; the limit event disarms it */
	uint64_t unused; /* a switch's count of RECVs posted and not used */
};

struct migr_rlog_entry {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge sge[];
};

/* The slot of the i-th RECV ever posted */
static inline struct migr_rlog_entry *migr_rlog_at(const struct migr_rlog *log,
						   uint64_t i)
{
	return migr_ring_at(&log->ring, i);
}

/* A WR posted while its QP was suspended, replayed after the switch */
struct migr_held_wr {
	struct migr_held_wr *next;
	bool recv;
	union {
		struct ibv_send_wr send;
		struct ibv_recv_wr recv_wr;
	};
	struct ibv_sge sge[];
};

/* Why a QP's posts leave the pass-through path (migr_qp.slow) */
enum {
	MIGR_SLOW_REWRITE = 1 << 0, /* UD: WRs carry AH pointers */
	MIGR_SLOW_XLATE = 1 << 1, /* keys or QPNs translate */
	MIGR_SLOW_SUSPENDED = 1 << 2, /* a switch holds posts */
	MIGR_SLOW_LOG = 1 << 3, /* send WRs go into the send log */
};

/* A QP's part in a replay (slog.c, replay.c: MIGR_REPLAY=1) */
struct migr_qp_replay {
	/* its slot in ctx->replay (tracked), and the lower QPN mapped to it */
	int slot;
	uint32_t lqpn;
	bool mapped;
	/*
	 * Set by a switch that replays: the newest n logged WRs (of them
	 * consumers use a RECV) never ran on the other end, and the lower QP
	 * flushes them and markers markers.
	 */
	unsigned int n, consumers, markers;
};

/* A QP's drain markers (marker.h) */
struct migr_qp_marker {
	/*
	 * Posted and not completed (an earlier, abandoned switch may have
	 * left one), one sent by this switch, one failed. Completions come in
	 * order: none pending means the last one is in.
	 */
	unsigned int pending;
	bool sent, failed;
	/* remote write allowed on the lower QP for the other end's marker */
	bool granted;
	struct ibv_ah *ah; /* a UD QP's marker goes to itself */
};

/* The open ibv_wr_*() batch of a QP (qp_ex.c, qp_ex_hold.c) */
struct migr_qp_batch {
	/* a builder failed before reaching the lower QP */
	int err;
	/* SENDs, SEND_IMMs and WRITE_IMMs of the batch */
	unsigned int consumers;
	/* the batch began while suspended: it is recorded (qp_ex_hold.c) */
	bool recording;
	/* the batch holds the send queue's lock (qp_ex.c) */
	bool locked;
	struct migr_held_wr *rec, **rec_tail;
	/* rkeys the batch invalidates (LOCAL_INV), noted at complete */
	uint32_t *inv;
	unsigned int n_inv, cap_inv;
};

/*
 * The other end of a connected QP: in this process (sw_peer) or in another
 * one (sw_partner), found once while a switch's set holds the QP
 * (switch.c); and whether a moving partner elsewhere holds it
 */
struct migr_qp_partner {
	uint32_t dest_phys; /* its QPN as the lower QP has it */
	struct migr_qp *sw_peer;
	struct migr_partner *sw_partner;
	bool session; /* a moving partner holds this QP (partner_serve.c) */
};

struct migr_qp {
	struct verbs_qp vqp;
	struct ibv_qp *lower;
	struct ibv_qp_ex *lower_ex; /* set when created with send_ops_flags */
	struct migr_context *ctx;
	uint8_t slow; /* MIGR_SLOW_*: zero on the fast path */
	/* send WRs of room the lower QP has for migr's own (qp.c) */
	uint8_t own_wrs;
	/* who posts sends and RECVs: the guards of what follows */
	struct migr_queue_owner sq, rq;
	/* SENDs and WRITE_IMMs posted: RECVs they use up at the partner */
	uint64_t n_consumers;
	struct migr_rlog rlog;
	struct migr_slog slog;
	struct migr_qp_replay replay;
	struct migr_hold hold; /* posts held while suspended */
	/* record */
	struct list_node entry;
	struct ibv_qp_init_attr_ex init; /* as the application asked */
	struct ibv_qp_attr attr; /* every attribute it set, merged */
	int attr_mask;
	/* the partner is a QP of this process (its remote table is ours) */
	bool self;
	/* switch state */
	struct migr_qp_marker marker;
	struct migr_qp_partner partner; /* the other end of its connection */
	/*
	 * A UD QP's lower number before this switch, and on the target once
	 * rebuilt there: where UD peers elsewhere may still send (ud_announce.c)
	 */
	uint32_t ud_was, ud_target;
	uint32_t srq_lower_qpn; /* its key in its receive CQ's srq_qps */
	/* WRs its lower QP flushed when a switch released it */
	unsigned int release_flushes;
	/* the partner's identifiers: the context's until it is known */
	struct migr_xlate *remote;
	/* UD QPs carry AH pointers and must always rewrite send WRs */
	bool rewrite_sends;
	uint32_t async_events;
	struct migr_qp_batch wr; /* the open ibv_wr_*() batch */
};

struct migr_ah {
	struct ibv_ah ah;
	struct ibv_ah *lower;
	struct list_node entry;
	struct ibv_ah_attr attr;
	/* UD peers elsewhere that moved (ud_redirect.h); NULL while none did */
	struct migr_ud_redir *redir;
	/*
	 * It leads to this device: the QPN a UD WR names may be a QP of this
	 * process, whose number moves with it; elsewhere, numbers are theirs
	 */
	bool local;
};

struct migr_wq {
	struct ibv_wq wq;
	struct ibv_wq *lower;
	uint32_t async_events;
};

struct migr_rwq_ind_table {
	struct ibv_rwq_ind_table tbl;
	struct ibv_rwq_ind_table *lower;
};

struct migr_flow {
	struct ibv_flow flow;
	struct ibv_flow *lower;
};

struct migr_flow_action {
	struct verbs_flow_action vaction;
	struct ibv_flow_action *lower;
};

struct migr_counters {
	struct verbs_counters vcounters;
	struct ibv_counters *lower;
};

#define MIGR_CONVERTER(name, ibtype, member)                                   \
	static inline struct migr_##name *to_m##name(ibtype *obj)              \
	{                                                                      \
		return container_of(obj, struct migr_##name, member);          \
	}

MIGR_CONVERTER(context, struct ibv_context, vctx.context)
MIGR_CONVERTER(pd, struct ibv_pd, pd)
MIGR_CONVERTER(td, struct ibv_td, td)
MIGR_CONVERTER(xrcd, struct ibv_xrcd, vxrcd.xrcd)
MIGR_CONVERTER(mr, struct ibv_mr, vmr.ibv_mr)
MIGR_CONVERTER(mw, struct ibv_mw, mw)
MIGR_CONVERTER(dm, struct ibv_dm, vdm.dm)
MIGR_CONVERTER(comp_channel, struct ibv_comp_channel, channel)
MIGR_CONVERTER(cq, struct ibv_cq, vcq.cq)
MIGR_CONVERTER(srq, struct ibv_srq, vsrq.srq)
MIGR_CONVERTER(qp, struct ibv_qp, vqp.qp)
MIGR_CONVERTER(ah, struct ibv_ah, ah)
MIGR_CONVERTER(wq, struct ibv_wq, wq)
MIGR_CONVERTER(rwq_ind_table, struct ibv_rwq_ind_table, tbl)
MIGR_CONVERTER(flow, struct ibv_flow, flow)
MIGR_CONVERTER(flow_action, struct ibv_flow_action, vaction.action)
MIGR_CONVERTER(counters, struct ibv_counters, vcounters.counters)

static inline struct migr_cq *cq_ex_to_mcq(struct ibv_cq_ex *cq)
{
	return container_of(cq, struct migr_cq, vcq.cq_ex);
}

static inline struct migr_qp *qp_ex_to_mqp(struct ibv_qp_ex *qp)
{
	return container_of(qp, struct migr_qp, vqp.qp_ex);
}

/* NULL-safe lookups of the lower object behind an application pointer */
static inline struct ibv_pd *lower_pd(struct ibv_pd *pd)
{
	return pd ? to_mpd(pd)->lower : NULL;
}

static inline struct ibv_cq *lower_cq(struct ibv_cq *cq)
{
	return cq ? to_mcq(cq)->lower : NULL;
}

static inline struct ibv_srq *lower_srq(struct ibv_srq *srq)
{
	return srq ? to_msrq(srq)->lower : NULL;
}

static inline struct ibv_qp *lower_qp(struct ibv_qp *qp)
{
	return qp ? to_mqp(qp)->lower : NULL;
}

static inline struct ibv_mr *lower_mr(struct ibv_mr *mr)
{
	return mr ? to_mmr(mr)->lower : NULL;
}

static inline struct ibv_mw *lower_mw(struct ibv_mw *mw)
{
	return mw ? to_mmw(mw)->lower : NULL;
}

static inline struct ibv_ah *lower_ah(struct ibv_ah *ah)
{
	return ah ? to_mah(ah)->lower : NULL;
}

static inline struct ibv_xrcd *lower_xrcd(struct ibv_xrcd *xrcd)
{
	return xrcd ? to_mxrcd(xrcd)->lower : NULL;
}

static inline struct ibv_wq *lower_wq(struct ibv_wq *wq)
{
	return wq ? to_mwq(wq)->lower : NULL;
}

static inline struct ibv_dm *lower_dm(struct ibv_dm *dm)
{
	return dm ? to_mdm(dm)->lower : NULL;
}

static inline struct ibv_comp_channel *
lower_channel(struct ibv_comp_channel *channel)
{
	return channel ? to_mcomp_channel(channel)->lower : NULL;
}

/* Control verbs run outside a switch (which holds the lock for writing) */
static inline void ctl_enter(struct ibv_context *context)
{
	pthread_rwlock_rdlock(&to_mcontext(context)->ctl_lock);
}

static inline void ctl_leave(struct ibv_context *context)
{
	pthread_rwlock_unlock(&to_mcontext(context)->ctl_lock);
}

/* Return NULL with errno set, the way verbs report failed creation */
static inline void *migr_fail(int err)
{
	errno = err;
	return NULL;
}

/* record.c */
void migr_record_init(struct migr_record *rec);
void migr_record_add(struct migr_context *ctx, struct list_head *list,
		     struct list_node *node);
void migr_record_del(struct migr_context *ctx, struct list_node *node);
void migr_record_unsupported(struct migr_context *ctx, enum migr_unsup what,
			     int delta);
const char *migr_record_blocker(struct migr_context *ctx);
void migr_record_modify_qp(struct migr_qp *mqp, const struct ibv_qp_attr *attr,
			   int attr_mask);

#endif /* MIGR_H */
