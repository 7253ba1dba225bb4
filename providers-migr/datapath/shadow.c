// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The CQ slow path, taken while a switch is under way and until the
 * completions it took off the lower CQ were handed out. Completions move
 * from the lower CQ to a shadow queue in order, translated, with the
 * switch's own markers taken out; polls hand out the shadow first. The
 * switch thread and application threads share this path under the CQ's
 * shadow lock, so order is kept whoever polls.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "cq_watch.h"
#include "datapath.h"
#include "marker.h"
#include "migr.h"

static int shadow_push(struct migr_shadow *sh, const struct ibv_wc *wc)
{
	if (sh->count == sh->cap) {
		uint32_t cap = sh->cap ? sh->cap * 2 : 64, i;
		struct ibv_wc *n = malloc(cap * sizeof(*n));

		if (!n)
			return ENOMEM;
		for (i = 0; i < sh->count; i++)
			n[i] = sh->wc[(sh->head + i) % sh->cap];
		free(sh->wc);
		sh->wc = n;
		sh->cap = cap;
		sh->head = 0;
	}
	sh->wc[(sh->head + sh->count) % sh->cap] = *wc;
	sh->count++;
	return 0;
}

/* A marker completion: tell its QP its send queue drained */
static void marker_seen(struct migr_context *ctx, const struct ibv_wc *wc)
{
	struct migr_qp *mqp;

	pthread_mutex_lock(&ctx->rec.lock);
	list_for_each (&ctx->rec.qps, mqp, entry) {
		if (mqp->lower && mqp->marker.pending &&
		    mqp->lower->qp_num == wc->qp_num) {
			mqp->marker.pending--;
			__atomic_sub_fetch(&ctx->markers_out, 1,
					   __ATOMIC_RELAXED);
			if (wc->status != IBV_WC_SUCCESS)
				mqp->marker.failed = true;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->rec.lock);
}

/* A lower QP is gone: the markers it still owed never complete */
void migr_markers_forget(struct migr_qp *mqp)
{
	struct migr_context *ctx = mqp->ctx;

	pthread_mutex_lock(&ctx->rec.lock);
	__atomic_sub_fetch(&ctx->markers_out, mqp->marker.pending,
			   __ATOMIC_RELAXED);
	mqp->marker.pending = 0;
	pthread_mutex_unlock(&ctx->rec.lock);
}

/* Move what the lower CQ holds into the shadow; shadow_lock held */
static int drain_locked(struct migr_cq *mcq)
{
	struct migr_context *ctx = to_mcontext(mcq->vcq.cq.context);
	struct ibv_wc wc[16];
	int n, i, total = 0;

	while (mcq->lower) {
		n = ibv_poll_cq(mcq->lower, 16, wc);
		if (n < 0)
			return n;
		migr_cq_watch(mcq, wc, n);
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == MIGR_MARKER_WRID) {
				marker_seen(ctx, &wc[i]);
				continue;
			}
			/* RECVs a partner's switch posts again elsewhere */
			if (ctx->partner.retiring &&
			    wc[i].qp_num == ctx->partner.retiring_qpn &&
			    wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				ctx->partner.retired_flushes++;
				continue;
			}
			migr_wc_to_virt(ctx, &wc[i], 1);
			if (shadow_push(&mcq->shadow, &wc[i]))
				return -ENOMEM;
			total++;
		}
		if (n < 16)
			break;
	}
	/*
	 * A poll that chose the slow path just before the switch settled the
	 * CQ still lands here: what it moved must be handed out before the
	 * lower CQ's newer entries, so polls keep coming to the shadow.
	 */
	if (total)
		__atomic_store_n(&mcq->switching, true, __ATOMIC_RELEASE);
	return total;
}

/*
 * A completion found while the switch empties a dying lower CQ that is the
 * application's (a datagram a UD QP took in after the drain): it goes out
 * after what the shadow holds. 0 or ENOMEM.
 */
int migr_shadow_add(struct migr_cq *mcq, struct ibv_wc *wc)
{
	int ret;

	pthread_mutex_lock(&mcq->shadow_lock);
	/* watched as polls watch: with the lower's QPN */
	migr_cq_watch(mcq, wc, 1);
	migr_wc_to_virt(to_mcontext(mcq->vcq.cq.context), wc, 1);
	ret = shadow_push(&mcq->shadow, wc);
	if (!ret) {
		mcq->unsignalled++;
		__atomic_store_n(&mcq->switching, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mcq->shadow_lock);
	return ret;
}

int migr_cq_drain(struct migr_cq *mcq)
{
	int n;

	pthread_mutex_lock(&mcq->shadow_lock);
	n = drain_locked(mcq);
	if (n > 0)
		mcq->unsignalled += n;
	pthread_mutex_unlock(&mcq->shadow_lock);
	return n;
}

/* The shadow's head entry was handed out; shadow_lock held */
void migr_shadow_pop(struct migr_cq *mcq)
{
	struct migr_shadow *sh = &mcq->shadow;

	sh->head = (sh->head + 1) % sh->cap;
	if (!--sh->count)
		mcq->unsignalled = 0;
}

/* What the shadow holds after taking the lower's news; shadow_lock held */
unsigned int migr_shadow_fill(struct migr_cq *mcq)
{
	drain_locked(mcq);
	return mcq->shadow.count;
}

/*
 * Polls of mcq take the slow path from now on. Under the shadow lock: a
 * settle in progress (an application poll that saw no switch yet) must
 * not store its "back to the fast path" after this; once the lock is
 * ours, any later settle sees why the CQ is taken (the caller set it
 * before: switch_active, partner.sessions).
 */
void migr_shadow_take(struct migr_cq *mcq)
{
	pthread_mutex_lock(&mcq->shadow_lock);
	__atomic_store_n(&mcq->switching, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mcq->shadow_lock);
}

/* Back to the fast path once the switch is over and all was said */
void migr_shadow_settle(struct migr_cq *mcq)
{
	struct migr_context *ctx = to_mcontext(mcq->vcq.cq.context);

	if (!mcq->shadow.count &&
	    !__atomic_load_n(&ctx->switch_active, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&ctx->partner.sessions, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&ctx->markers_out, __ATOMIC_RELAXED))
		__atomic_store_n(&mcq->switching, false, __ATOMIC_RELEASE);
}

/*
 * A poll that found nothing while a switch or a partner's holds the CQ
 * (the drain, the release and the rebuild; a migration's park and
 * resume) gives its CPU away: what it waits for comes from the thread
 * that switches, and an application that polls in a loop on that thread's
 * core would take half of it (a guest of one vCPU: a switch and a
 * resume twice as long). Where the poller has a core of its own, this is
 * one system call per empty poll, for the switch's length only.
 */
void migr_poll_idle(void)
{
	sched_yield();
}

int migr_poll_slow(struct migr_cq *mcq, int num_entries, struct ibv_wc *wc)
{
	struct migr_shadow *sh = &mcq->shadow;
	int n = 0, ret;

	pthread_mutex_lock(&mcq->shadow_lock);
	ret = drain_locked(mcq);
	while (n < num_entries && sh->count) {
		wc[n++] = sh->wc[sh->head];
		migr_shadow_pop(mcq);
	}
	migr_shadow_settle(mcq);
	pthread_mutex_unlock(&mcq->shadow_lock);
	if (!n && !ret)
		migr_poll_idle();
	return n ? n : (ret < 0 ? ret : 0);
}

/* Owe the application an event for mcq on this channel (after a switch) */
int migr_channel_raise(struct migr_comp_channel *mch, struct migr_cq *mcq)
{
	uint64_t one = 1;
	int ret;

	pthread_mutex_lock(&mch->synth_lock);
	if (mch->nsynth == mch->synth_cap) {
		unsigned int cap = mch->synth_cap ? mch->synth_cap * 2 : 8;
		struct migr_cq **n = realloc(mch->synth, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&mch->synth_lock);
			return ENOMEM;
		}
		mch->synth = n;
		mch->synth_cap = cap;
	}
	mch->synth[mch->nsynth++] = mcq;
	/* Under the lock: the eventfd is readable exactly while owed */
	ret = write(mch->synth_fd, &one, sizeof(one)) == sizeof(one) ? 0 :
								       errno;
	pthread_mutex_unlock(&mch->synth_lock);
	return ret;
}

int migr_req_notify_slow(struct migr_cq *mcq, int solicited_only)
{
	int ret = 0;

	pthread_mutex_lock(&mcq->shadow_lock);
	/* Without a lower CQ the switch arms the new one for us */
	if (mcq->lower)
		ret = ibv_req_notify_cq(mcq->lower, solicited_only);
	/* Entries moved to the shadow and never announced: due now */
	if (!ret && mcq->shadow.count && mcq->unsignalled && mcq->mch) {
		mcq->armed = false;
		mcq->unsignalled = 0;
		ret = migr_channel_raise(mcq->mch, mcq);
	}
	pthread_mutex_unlock(&mcq->shadow_lock);
	return ret;
}

void migr_shadow_free(struct migr_cq *mcq)
{
	free(mcq->shadow.wc);
	mcq->shadow.wc = NULL;
	mcq->shadow.cap = mcq->shadow.count = 0;
}
