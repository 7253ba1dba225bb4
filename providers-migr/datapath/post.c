// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The legacy post path. While nothing was remapped and a WR carries no
 * pointer to a migr object, the application's WR list goes to the lower
 * provider untouched. Otherwise WRs are copied in bounded batches onto the
 * stack with translated keys and lower objects: no locks, no allocation,
 * no system call is added. Two things are kept for a switch on the way:
 * the number of SENDs posted (the RECVs they use up at the partner) and a
 * ring of the RECVs posted, so the unused ones can be posted again. A
 * queue's first poster keeps them without a lock; once a second thread
 * posts to it, every post takes the queue's lock (queue_owner.h). While a
 * switch has a QP suspended its posts are copied and held, and return 0.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "ud_redirect.h"

#define WR_BATCH 16
#define SGE_BATCH 256
/* A lone WR with at most this many SGEs is rewritten in one small copy */
#define ONE_WR_SGE 4
/* Flags as the short paths see them on a queue another thread owns */
#define NOT_OWNER 0xff

struct sge_pool {
	struct ibv_sge sge[SGE_BATCH];
	unsigned int used;
};

/*
 * Point *out at the scatter list to hand down: the caller's own while
 * nothing was remapped, else a copy with translated lkeys. False when the
 * batch's pool has no room left for it.
 */
static bool xlate_sges(const struct migr_xlate *x, struct sge_pool *pool,
		       struct ibv_sge *sg, int num_sge, struct ibv_sge **out)
{
	int i;

	*out = sg;
	if (!x->active || num_sge <= 0)
		return true;
	if (pool->used + num_sge > SGE_BATCH)
		return false;
	*out = &pool->sge[pool->used];
	pool->used += num_sge;
	for (i = 0; i < num_sge; i++) {
		(*out)[i] = sg[i];
		(*out)[i].lkey = migr_lkey_to_phys(x, sg[i].lkey);
	}
	return true;
}

static void xlate_send_wr(struct migr_qp *mqp, struct ibv_send_wr *lwr,
			  const struct ibv_send_wr *wr)
{
	const struct migr_xlate *x = &mqp->ctx->xlate, *r = mqp->remote;

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		lwr->wr.rdma.rkey =
			migr_remote_rkey_to_phys(r, wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		lwr->wr.atomic.rkey =
			migr_remote_rkey_to_phys(r, wr->wr.atomic.rkey);
		break;
	case IBV_WR_BIND_MW:
		/*
		 * Providers name a window by its current rkey, which the
		 * application keeps up to date on its own migr window.
		 */
		lwr->bind_mw.mw = lower_mw(wr->bind_mw.mw);
		lwr->bind_mw.mw->rkey =
			migr_rkey_to_phys(x, wr->bind_mw.mw->rkey);
		lwr->bind_mw.rkey = migr_rkey_to_phys(x, wr->bind_mw.rkey);
		lwr->bind_mw.bind_info.mr = lower_mr(wr->bind_mw.bind_info.mr);
		break;
	case IBV_WR_LOCAL_INV:
		lwr->invalidate_rkey =
			migr_rkey_to_phys(x, wr->invalidate_rkey);
		break;
	case IBV_WR_SEND_WITH_INV:
		lwr->invalidate_rkey =
			migr_remote_rkey_to_phys(r, wr->invalidate_rkey);
		break;
	default:
		break;
	}

	switch (mqp->vqp.qp.qp_type) {
	case IBV_QPT_UD:
		lwr->wr.ud.ah =
			migr_ud_dest(r, wr->wr.ud.ah, &lwr->wr.ud.remote_qpn);
		break;
	case IBV_QPT_XRC_SEND:
		lwr->qp_type.xrc.remote_srqn = migr_remote_srqn_to_phys(
			r, wr->qp_type.xrc.remote_srqn);
		break;
	default:
		break;
	}
}

/* A lone WR's SGEs (at most ONE_WR_SGE) with physical lkeys, into sge */
static inline __attribute__((always_inline)) struct ibv_sge *
one_wr_sges(const struct migr_xlate *x, struct ibv_sge *sge,
	    const struct ibv_sge *from, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sge[i] = from[i];
		sge[i].lkey = migr_lkey_to_phys(x, sge[i].lkey);
	}
	return sge;
}

/*
 * The common post after a switch, one WR: what post_send_rewritten() does
 * for a list of one, without the batch arrays and their loop.
 */
static int post_send_one(struct migr_qp *mqp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr)
{
	const struct migr_xlate *x = &mqp->ctx->xlate;
	struct ibv_send_wr lwr = *wr, *lbad;
	struct ibv_sge sge[ONE_WR_SGE];
	int ret;

	if (x->active && wr->num_sge > 0)
		lwr.sg_list = one_wr_sges(x, sge, wr->sg_list, wr->num_sge);
	lwr.next = NULL;
	xlate_send_wr(mqp, &lwr, wr);
	ret = ibv_post_send(mqp->lower, &lwr, &lbad);
	if (ret)
		*bad_wr = wr;
	return ret;
}

static int post_send_rewritten(struct migr_qp *mqp, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad_wr)
{
	const struct migr_xlate *x = &mqp->ctx->xlate;
	struct ibv_send_wr lwr[WR_BATCH], *orig[WR_BATCH], *lbad;
	struct sge_pool pool;
	int n, ret;

	if (wr && !wr->next && wr->num_sge <= ONE_WR_SGE)
		return post_send_one(mqp, wr, bad_wr);
	while (wr) {
		pool.used = 0;
		for (n = 0; wr && n < WR_BATCH; n++, wr = wr->next) {
			struct ibv_sge *sg;

			if (!xlate_sges(x, &pool, wr->sg_list, wr->num_sge,
					&sg)) {
				if (n)
					break;
				*bad_wr = wr;
				return EINVAL;
			}
			lwr[n] = *wr;
			lwr[n].sg_list = sg;
			lwr[n].next = &lwr[n + 1];
			xlate_send_wr(mqp, &lwr[n], wr);
			orig[n] = wr;
		}
		lwr[n - 1].next = NULL;

		ret = ibv_post_send(mqp->lower, lwr, &lbad);
		if (ret) {
			*bad_wr = orig[lbad - lwr];
			return ret;
		}
	}
	return 0;
}

/* Opcodes that use up a RECV at the partner (see the RECV log) */
#define CONSUMER_OPCODES                                                       \
	(1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM |                      \
	 1u << IBV_WR_SEND_WITH_INV | 1u << IBV_WR_RDMA_WRITE_WITH_IMM)

/*
 * One walk over the list: how many WRs (up to stop) use a partner's RECV,
 * and whether one binds a window (a WR the lower must see rewritten) or
 * invalidates one (mw_track.c follows both).
 */
static inline unsigned int scan_sends(const struct ibv_send_wr *wr,
				      const struct ibv_send_wr *stop, bool *mw)
{
	unsigned int n = 0;

	for (; wr && wr != stop; wr = wr->next) {
		if ((unsigned int)wr->opcode < 32)
			n += !!((1u << wr->opcode) & CONSUMER_OPCODES);
		if (unlikely(wr->opcode == IBV_WR_BIND_MW ||
			     wr->opcode == IBV_WR_LOCAL_INV))
			*mw = true;
	}
	return n;
}

/*
 * Copy a WR list into held WRs at *tail (a QP's or SRQ's list); inline
 * payloads are copied too, since the application may reuse them once we
 * return.
 */
static int hold_wrs(struct migr_held_wr ***tail, struct ibv_send_wr *swr,
		    struct ibv_recv_wr *rwr, void **bad)
{
	while (swr || rwr) {
		int nsge = swr ? swr->num_sge : rwr->num_sge;
		size_t inl = 0, len;
		struct migr_held_wr *h;
		int i;

		if (nsge < 0) {
			*bad = swr ? (void *)swr : (void *)rwr;
			return EINVAL;
		}
		if (swr && (swr->send_flags & IBV_SEND_INLINE))
			for (i = 0; i < nsge; i++)
				inl += swr->sg_list[i].length;
		len = sizeof(*h) + nsge * sizeof(h->sge[0]) + inl;
		h = calloc(1, len);
		if (!h) {
			*bad = swr ? (void *)swr : (void *)rwr;
			return ENOMEM;
		}
		h->recv = !swr;
		if (nsge)
			memcpy(h->sge, swr ? swr->sg_list : rwr->sg_list,
			       nsge * sizeof(h->sge[0]));
		if (swr) {
			uint8_t *data = (uint8_t *)&h->sge[nsge];

			h->send = *swr;
			h->send.sg_list = h->sge;
			for (i = 0; inl && i < nsge; i++) {
				memcpy(data, (void *)(uintptr_t)h->sge[i].addr,
				       h->sge[i].length);
				h->sge[i].addr = (uintptr_t)data;
				data += h->sge[i].length;
			}
			h->send.next = NULL;
			swr = swr->next;
		} else {
			h->recv_wr = *rwr;
			h->recv_wr.sg_list = h->sge;
			h->recv_wr.next = NULL;
			rwr = rwr->next;
		}
		**tail = h;
		*tail = &h->next;
	}
	return 0;
}

/* One RECV into the next slot of a log that has a ring */
static inline __attribute__((always_inline)) void
rlog_put(struct migr_rlog *log, const struct ibv_recv_wr *wr)
{
	struct migr_rlog_entry *e = migr_rlog_at(log, log->head);
	uint32_t n = wr->num_sge > 0 ? wr->num_sge : 0;

	e->wr_id = wr->wr_id;
	/* one SGE is the common case: tested first, no memcpy for it */
	if (likely(n == 1 && log->max_sge)) {
		e->num_sge = 1;
		e->sge[0] = wr->sg_list[0];
	} else {
		if (n > log->max_sge)
			n = log->max_sge;
		e->num_sge = n;
		if (n)
			memcpy(e->sge, wr->sg_list, n * sizeof(e->sge[0]));
	}
	log->head++;
}

/* Remember RECVs the lower accepted, up to stop, for a switch to repost */
static inline __attribute__((always_inline)) void
rlog_add(struct migr_rlog *log, const struct ibv_recv_wr *wr,
	 const struct ibv_recv_wr *stop)
{
	for (; wr && wr != stop && log->ring.buf; wr = wr->next)
		rlog_put(log, wr);
}

/* Hold send WRs of an ibv_wr_*() batch (qp_ex_hold.c); hold_lock held */
int migr_hold_sends(struct migr_qp *mqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	return hold_wrs(&mqp->hold.tail, wr, NULL, (void **)bad_wr);
}

/* Posts that met a flag: held while suspended, else rewritten */
static int post_send_slow(struct migr_qp *mqp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	bool mw = false;
	int ret;

	if (mqp->slow & MIGR_SLOW_SUSPENDED) {
		pthread_mutex_lock(&mqp->hold.lock);
		if (mqp->slow & MIGR_SLOW_SUSPENDED) {
			ret = hold_wrs(&mqp->hold.tail, wr, NULL,
				       (void **)bad_wr);
			pthread_mutex_unlock(&mqp->hold.lock);
			return ret;
		}
		pthread_mutex_unlock(&mqp->hold.lock);
	}
	ret = post_send_rewritten(mqp, wr, bad_wr);
	mqp->n_consumers += scan_sends(wr, ret ? *bad_wr : NULL, &mw);
	migr_slog_add(&mqp->slog, wr, ret ? *bad_wr : NULL);
	if (mw)
		migr_mw_track_sends(mqp, wr, ret ? *bad_wr : NULL);
	return ret;
}

/* The count of a WR list's SENDs from wr up to stop, after a failed post */
static unsigned int __attribute__((noinline))
unposted_sends(const struct ibv_send_wr *wr, const struct ibv_send_wr *stop)
{
	bool mw = false;

	return scan_sends(wr, NULL, &mw) - scan_sends(wr, stop, &mw);
}

/* Any post; the caller is inside migr_enter() and may keep the books */
static int post_send_inside(struct migr_qp *mqp, struct ibv_send_wr *wr,
			    struct ibv_send_wr **bad_wr)
{
	unsigned int consumers;
	bool mw = false;
	int ret;

	/* only logged (MIGR_REPLAY): the list goes down as it is */
	if (likely(!(mqp->slow & ~MIGR_SLOW_LOG))) {
		consumers = scan_sends(wr, NULL, &mw);
		if (likely(!mw)) {
			mqp->n_consumers += consumers;
			ret = ibv_post_send(mqp->lower, wr, bad_wr);
			if (unlikely(ret))
				mqp->n_consumers -= unposted_sends(wr, *bad_wr);
			/* before migr_leave(): a switch reads the log after */
			if (mqp->slow & MIGR_SLOW_LOG)
				migr_slog_add(&mqp->slog, wr,
					      ret ? *bad_wr : NULL);
			return ret;
		}
	}
	return post_send_slow(mqp, wr, bad_wr);
}

/* A send queue that several threads post to, or its first post */
static int __attribute__((noinline))
post_send_locked(struct migr_qp *mqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr)
{
	int ret;

	migr_queue_owner_lock(&mqp->sq);
	migr_enter();
	ret = post_send_inside(mqp, wr, bad_wr);
	migr_leave();
	migr_queue_owner_unlock(&mqp->sq);
	return ret;
}

/* A list, a bind or a flag: the general path */
static int __attribute__((noinline))
post_send_list(struct migr_qp *mqp, struct ibv_send_wr *wr,
	       struct ibv_send_wr **bad_wr)
{
	int ret;

	migr_enter();
	if (unlikely(!migr_queue_owner_mine(&mqp->sq))) {
		migr_leave();
		return post_send_locked(mqp, wr, bad_wr);
	}
	ret = post_send_inside(mqp, wr, bad_wr);
	migr_leave();
	return ret;
}

/* Opcodes a lone WR takes down untouched on the identity path */
#define PLAIN_OPCODES (~(1u << IBV_WR_BIND_MW | 1u << IBV_WR_LOCAL_INV))
/* Opcodes a lone WR gets translated for inline after a switch */
#define RDMA_OPCODES                                                           \
	(1u << IBV_WR_RDMA_WRITE | 1u << IBV_WR_RDMA_WRITE_WITH_IMM |          \
	 1u << IBV_WR_RDMA_READ)
#define ATOMIC_OPCODES                                                         \
	(1u << IBV_WR_ATOMIC_CMP_AND_SWP | 1u << IBV_WR_ATOMIC_FETCH_AND_ADD)
#define XLATED_OPCODES                                                         \
	(RDMA_OPCODES | ATOMIC_OPCODES | 1u << IBV_WR_SEND |                   \
	 1u << IBV_WR_SEND_WITH_IMM)

/*
 * A lone WR after a switch, on a connected QP with no other flag (the
 * caller is inside migr_enter()): what post_send_one() does, with only
 * the rkey this opcode carries looked up.
 */
static int __attribute__((noinline))
post_send_one_xlated(struct migr_qp *mqp, unsigned int op,
		     struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr lwr, *lbad;
	struct ibv_sge sge[ONE_WR_SGE];
	int ret;

	/* these opcodes use nothing from the window/TSO union on */
	memcpy(&lwr, wr, offsetof(struct ibv_send_wr, bind_mw));
	if (wr->num_sge > 0)
		lwr.sg_list = one_wr_sges(&mqp->ctx->xlate, sge, wr->sg_list,
					  wr->num_sge);
	if (RDMA_OPCODES >> op & 1)
		lwr.wr.rdma.rkey =
			migr_remote_rkey_to_phys(mqp->remote, wr->wr.rdma.rkey);
	else if (ATOMIC_OPCODES >> op & 1)
		lwr.wr.atomic.rkey = migr_remote_rkey_to_phys(
			mqp->remote, wr->wr.atomic.rkey);
	mqp->n_consumers += CONSUMER_OPCODES >> op & 1;
	ret = ibv_post_send(mqp->lower, &lwr, &lbad);
	if (unlikely(ret)) {
		mqp->n_consumers -= CONSUMER_OPCODES >> op & 1;
		*bad_wr = wr;
	}
	return ret;
}

int migr_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct migr_qp *mqp = to_mqp(qp);
	unsigned int op;
	uint8_t slow;
	int ret;

	/*
	 * One WR: what most posts are, kept short, on a QP nothing was ever
	 * remapped for and on one only translated, from the thread that owns
	 * the queue. The flags are read inside, after migr_enter().
	 */
	if (likely(wr && !wr->next && (unsigned int)wr->opcode < 32)) {
		op = wr->opcode;
		migr_enter();
		slow = migr_queue_owner_mine(&mqp->sq) ? mqp->slow : NOT_OWNER;
		if (likely(!slow && (PLAIN_OPCODES >> op & 1))) {
			mqp->n_consumers += CONSUMER_OPCODES >> op & 1;
			ret = ibv_post_send(mqp->lower, wr, bad_wr);
			/* inside: a switch reads the count once we are out */
			if (unlikely(ret))
				mqp->n_consumers -= CONSUMER_OPCODES >> op & 1;
			migr_leave();
			return ret;
		}
		if (slow == MIGR_SLOW_XLATE && (XLATED_OPCODES >> op & 1) &&
		    wr->num_sge <= ONE_WR_SGE &&
		    mqp->vqp.qp.qp_type != IBV_QPT_XRC_SEND) {
			ret = post_send_one_xlated(mqp, op, wr, bad_wr);
			migr_leave();
			return ret;
		}
		migr_leave();
	}
	return post_send_list(mqp, wr, bad_wr);
}

/* Repost held or logged WRs through the normal paths, after a switch */
int migr_post_send_replay(struct migr_qp *mqp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	bool mw = false;
	int ret = post_send_rewritten(mqp, wr, bad_wr);

	mqp->n_consumers += scan_sends(wr, ret ? *bad_wr : NULL, &mw);
	migr_slog_add(&mqp->slog, wr, ret ? *bad_wr : NULL);
	if (mw)
		migr_mw_track_sends(mqp, wr, ret ? *bad_wr : NULL);
	return ret;
}

/*
 * Post again, on the rebuilt lower QP, the n newest logged WRs that never
 * ran on the other end: already logged and counted once.
 */
int migr_slog_repost(struct migr_qp *mqp, uint64_t n, unsigned int *posted)
{
	struct migr_slog *log = &mqp->slog;
	uint64_t i;
	int ret;

	for (i = log->head - n; i < log->head; i++) {
		struct migr_slog_entry *e = migr_slog_at(log, i);
		struct ibv_send_wr wr = e->wr, *bad;

		wr.sg_list = e->sge;
		wr.next = NULL;
		ret = post_send_rewritten(mqp, &wr, &bad);
		if (ret)
			return ret;
		(*posted)++;
	}
	return 0;
}

/* Flags of a QP that concern only its send WRs */
#define RECV_FAST_FLAGS (MIGR_SLOW_REWRITE | MIGR_SLOW_LOG)

/* One RECV: what recv_rewritten() does for a list of one, in a small copy */
static inline __attribute__((always_inline)) int
post_recv_one(const struct migr_xlate *x, void *lower, post_recv_fn post,
	      struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr lwr = *wr, *lbad;
	struct ibv_sge sge[ONE_WR_SGE];
	int ret;

	if (x->active && wr->num_sge > 0)
		lwr.sg_list = one_wr_sges(x, sge, wr->sg_list, wr->num_sge);
	lwr.next = NULL;
	ret = post(lower, &lwr, &lbad);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* Inlined where post is a known function, so it is called directly */
static inline __attribute__((always_inline)) int
recv_rewritten(const struct migr_xlate *x, void *lower, post_recv_fn post,
	       struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr lwr[WR_BATCH], *orig[WR_BATCH], *lbad;
	struct sge_pool pool;
	int n, ret;

	if (wr && !wr->next && wr->num_sge <= ONE_WR_SGE)
		return post_recv_one(x, lower, post, wr, bad_wr);
	while (wr) {
		pool.used = 0;
		for (n = 0; wr && n < WR_BATCH; n++, wr = wr->next) {
			struct ibv_sge *sg;

			if (!xlate_sges(x, &pool, wr->sg_list, wr->num_sge,
					&sg)) {
				if (n)
					break;
				*bad_wr = wr;
				return EINVAL;
			}
			lwr[n] = *wr;
			lwr[n].sg_list = sg;
			lwr[n].next = &lwr[n + 1];
			orig[n] = wr;
		}
		lwr[n - 1].next = NULL;

		ret = post(lower, lwr, &lbad);
		if (ret) {
			*bad_wr = orig[lbad - lwr];
			return ret;
		}
	}
	return 0;
}

int migr_post_recv_rewritten(const struct migr_xlate *x, void *lower,
			     post_recv_fn post, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	return recv_rewritten(x, lower, post, wr, bad_wr);
}

static int post_qp_recv(void *lower, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return ibv_post_recv(lower, wr, bad_wr);
}

static int post_srq_recv(void *lower, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	return ibv_post_srq_recv(lower, wr, bad_wr);
}

int migr_post_recv_replay(struct migr_qp *mqp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	int ret = recv_rewritten(&mqp->ctx->xlate, mqp->lower, post_qp_recv, wr,
				 bad_wr);

	rlog_add(&mqp->rlog, wr, ret ? *bad_wr : NULL);
	return ret;
}

static int post_recv_slow(struct migr_qp *mqp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	int ret;

	if (mqp->slow & MIGR_SLOW_SUSPENDED) {
		pthread_mutex_lock(&mqp->hold.lock);
		if (mqp->hold.recvs) {
			ret = hold_wrs(&mqp->hold.tail, NULL, wr,
				       (void **)bad_wr);
			pthread_mutex_unlock(&mqp->hold.lock);
			return ret;
		}
		pthread_mutex_unlock(&mqp->hold.lock);
	}
	return migr_post_recv_replay(mqp, wr, bad_wr);
}

/*
 * A lone RECV into the log before the lower sees it: a switch reads the
 * log only once this thread is out, and a refused RECV takes its entry
 * back. Only the log and the lower object stay live across the lower's
 * call. x: translate its keys (after a switch), else NULL.
 */
static inline __attribute__((always_inline)) int
recv_logged(const struct migr_xlate *x, struct migr_rlog *log, void *lower,
	    post_recv_fn post, struct ibv_recv_wr *wr,
	    struct ibv_recv_wr **bad_wr)
{
	int ret;

	if (log->ring.buf)
		rlog_put(log, wr);
	if (x)
		ret = post_recv_one(x, lower, post, wr, bad_wr);
	else
		ret = post(lower, wr, bad_wr);
	if (unlikely(ret) && log->ring.buf)
		log->head--;
	return ret;
}

/* A lone RECV after a switch; the caller is inside migr_enter() */
static int __attribute__((noinline))
post_recv_xlated(struct migr_qp *mqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	return recv_logged(&mqp->ctx->xlate, &mqp->rlog, mqp->lower,
			   post_qp_recv, wr, bad_wr);
}

/* Any RECV list; the caller is inside migr_enter() and keeps the log */
static int post_recv_inside(struct migr_qp *mqp, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr)
{
	int ret;

	if (!(mqp->slow & ~RECV_FAST_FLAGS)) {
		ret = ibv_post_recv(mqp->lower, wr, bad_wr);
		rlog_add(&mqp->rlog, wr, ret ? *bad_wr : NULL);
		return ret;
	}
	return post_recv_slow(mqp, wr, bad_wr);
}

/* A receive queue that several threads post to, or its first post */
static int __attribute__((noinline))
post_recv_locked(struct migr_qp *mqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	int ret;

	migr_queue_owner_lock(&mqp->rq);
	migr_enter();
	ret = post_recv_inside(mqp, wr, bad_wr);
	migr_leave();
	migr_queue_owner_unlock(&mqp->rq);
	return ret;
}

/* Lists, and QPs a switch holds */
static int __attribute__((noinline))
post_recv_general(struct migr_qp *mqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	int ret;

	migr_enter();
	if (unlikely(!migr_queue_owner_mine(&mqp->rq))) {
		migr_leave();
		return post_recv_locked(mqp, wr, bad_wr);
	}
	ret = post_recv_inside(mqp, wr, bad_wr);
	migr_leave();
	return ret;
}

int migr_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct migr_qp *mqp = to_mqp(qp);
	uint8_t slow;
	int ret;

	/* a lone RECV, untranslated or only translated: kept short */
	if (likely(wr && !wr->next)) {
		migr_enter();
		slow = migr_queue_owner_mine(&mqp->rq) ?
			       mqp->slow & ~RECV_FAST_FLAGS :
			       NOT_OWNER;
		if (likely(!slow)) {
			ret = recv_logged(NULL, &mqp->rlog, mqp->lower,
					  post_qp_recv, wr, bad_wr);
			migr_leave();
			return ret;
		}
		if (slow == MIGR_SLOW_XLATE && wr->num_sge <= ONE_WR_SGE) {
			ret = post_recv_xlated(mqp, wr, bad_wr);
			migr_leave();
			return ret;
		}
		migr_leave();
	}
	return post_recv_general(mqp, wr, bad_wr);
}

/* The SRQ's RECVs, logged like a QP's; what it posts is logged again */
int migr_post_srq_recv_replay(struct migr_srq *msrq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	const struct migr_xlate *x =
		&to_mcontext(msrq->vsrq.srq.context)->xlate;
	int ret = recv_rewritten(x, msrq->lower, post_srq_recv, wr, bad_wr);

	rlog_add(&msrq->rlog, wr, ret ? *bad_wr : NULL);
	return ret;
}

/* Held once a switch stops RECVs (recv_hold), as on a QP */
static int post_srq_recv_slow(struct migr_srq *msrq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	int ret;

	if (msrq->slow & MIGR_SLOW_SUSPENDED) {
		pthread_mutex_lock(&msrq->hold.lock);
		if (msrq->hold.recvs) {
			ret = hold_wrs(&msrq->hold.tail, NULL, wr,
				       (void **)bad_wr);
			pthread_mutex_unlock(&msrq->hold.lock);
			return ret;
		}
		pthread_mutex_unlock(&msrq->hold.lock);
	}
	return migr_post_srq_recv_replay(msrq, wr, bad_wr);
}

/* Any RECV list; the caller is inside migr_enter() and keeps the log */
static inline __attribute__((always_inline)) int
srq_recv_inside(struct migr_srq *msrq, const struct migr_xlate *x,
		struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret;

	if (likely(!msrq->slow && !x->active)) {
		if (likely(wr && !wr->next))
			return recv_logged(NULL, &msrq->rlog, msrq->lower,
					   post_srq_recv, wr, bad_wr);
		ret = ibv_post_srq_recv(msrq->lower, wr, bad_wr);
		rlog_add(&msrq->rlog, wr, ret ? *bad_wr : NULL);
		return ret;
	}
	return post_srq_recv_slow(msrq, wr, bad_wr);
}

/* An SRQ that several threads post to, or its first post */
static int __attribute__((noinline))
post_srq_recv_locked(struct migr_srq *msrq, const struct migr_xlate *x,
		     struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret;

	migr_queue_owner_lock(&msrq->owner);
	migr_enter();
	ret = srq_recv_inside(msrq, x, wr, bad_wr);
	migr_leave();
	migr_queue_owner_unlock(&msrq->owner);
	return ret;
}

int migr_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	const struct migr_xlate *x = &to_mcontext(srq->context)->xlate;
	struct migr_srq *msrq = to_msrq(srq);
	int ret;

	migr_enter();
	if (unlikely(!migr_queue_owner_mine(&msrq->owner))) {
		migr_leave();
		return post_srq_recv_locked(msrq, x, wr, bad_wr);
	}
	ret = srq_recv_inside(msrq, x, wr, bad_wr);
	migr_leave();
	return ret;
}
