// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What a replay after the wait bound needs, kept only when the process runs
 * with MIGR_REPLAY=1 (it costs every post a copy and every completion a
 * lookup): the send WRs each RC QP posted (the send log), and per QP how
 * many of its signaled WRs and RECVs completed. A send queue completes in
 * order, so the WRs after the last completed signaled one are those the
 * lower QP may still hold; switch.c decides whether they can run again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "marker.h"
#include "migr.h"

bool migr_replay_wanted(void)
{
	const char *env = getenv("MIGR_REPLAY");

	return env && env[0] == '1' && !env[1];
}

int migr_replay_init(struct migr_context *ctx)
{
	if (!migr_replay_wanted())
		return 0;
	ctx->replay = calloc(1, sizeof(*ctx->replay));
	if (!ctx->replay)
		return ENOMEM;
	pthread_mutex_init(&ctx->replay->lock, NULL);
	return 0;
}

void migr_replay_free(struct migr_context *ctx)
{
	if (!ctx->replay)
		return;
	migr_u32map_free(&ctx->replay->by_lower);
	pthread_mutex_destroy(&ctx->replay->lock);
	free(ctx->replay);
	ctx->replay = NULL;
}

/* Room for every WR a send queue with this capacity can hold */
int migr_slog_init(struct migr_slog *log, const struct ibv_qp_cap *cap,
		   bool sig_all)
{
	memset(log, 0, sizeof(*log));
	log->max_sge = cap->max_send_sge;
	log->max_inline = cap->max_inline_data;
	log->sig_all = sig_all;
	return migr_ring_init(&log->ring, cap->max_send_wr,
			      sizeof(struct migr_slog_entry) +
				      cap->max_send_sge *
					      sizeof(struct ibv_sge) +
				      cap->max_inline_data);
}

/* One WR into the next slot; false if it does not fit the log */
static bool slog_put(struct migr_slog *log, const struct ibv_send_wr *wr)
{
	struct migr_slog_entry *e = migr_slog_at(log, log->head);
	uint8_t *data = (uint8_t *)&e->sge[log->max_sge];
	size_t inl = 0;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > log->max_sge)
		return false;
	e->sig_before = log->nsig;
	e->wr = *wr;
	e->wr.next = NULL;
	e->wr.sg_list = e->sge;
	if (wr->num_sge)
		memcpy(e->sge, wr->sg_list, wr->num_sge * sizeof(e->sge[0]));
	/* the application may reuse an inline payload once the post returned */
	if (wr->send_flags & IBV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++) {
			if (inl + e->sge[i].length > log->max_inline)
				return false;
			memcpy(data + inl, (void *)(uintptr_t)e->sge[i].addr,
			       e->sge[i].length);
			e->sge[i].addr = (uintptr_t)(data + inl);
			inl += e->sge[i].length;
		}
	}
	log->head++;
	if (log->sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
		log->nsig++;
	return true;
}

/* Log the WRs the lower accepted (up to stop); one thread posts at a time */
void migr_slog_add(struct migr_slog *log, const struct ibv_send_wr *wr,
		   const struct ibv_send_wr *stop)
{
	for (; wr && wr != stop && log->ring.buf && !log->broken; wr = wr->next)
		if (!slog_put(log, wr))
			log->broken = true;
}

/*
 * How many of the newest logged WRs have not completed, when sig_done of
 * the signaled ones did: those after the sig_done-th signaled WR and after
 * log->done. ERANGE when the log no longer holds them all.
 */
int migr_slog_unfinished(const struct migr_slog *log, uint64_t sig_done,
			 uint64_t *n)
{
	uint64_t i = log->head;

	if (sig_done > log->nsig)
		return ERANGE;
	while (i > log->done &&
	       migr_slog_at(log, i - 1)->sig_before >= sig_done) {
		/* more than a send queue holds: the oldest were overwritten */
		if (log->head - i > log->ring.mask)
			return ERANGE;
		i--;
	}
	*n = log->head - i;
	return 0;
}

/* Map mqp's lower QPN to its slot (taken on first use) */
int migr_replay_track(struct migr_qp *mqp)
{
	struct migr_replay *rp = mqp->ctx->replay;
	int ret = 0, s;

	if (!rp || !mqp->slog.ring.buf)
		return 0;
	pthread_mutex_lock(&rp->lock);
	if (mqp->replay.slot < 0) {
		for (s = 0; s < MIGR_REPLAY_SLOTS && rp->used[s]; s++)
			;
		if (s == MIGR_REPLAY_SLOTS) {
			ret = ENOSPC;
			goto out;
		}
		rp->used[s] = 1;
		memset(&rp->count[s], 0, sizeof(rp->count[s]));
		mqp->replay.slot = s;
	}
	/* the old lower QP is gone by now: its number may come back */
	if (mqp->replay.mapped)
		migr_u32map_del(&rp->by_lower, mqp->replay.lqpn);
	ret = migr_u32map_put(&rp->by_lower, mqp->lower->qp_num,
			      mqp->replay.slot);
	mqp->replay.mapped = !ret;
	mqp->replay.lqpn = mqp->lower->qp_num;
out:
	pthread_mutex_unlock(&rp->lock);
	return ret;
}

void migr_replay_untrack(struct migr_qp *mqp)
{
	struct migr_replay *rp = mqp->ctx->replay;

	if (!rp || mqp->replay.slot < 0)
		return;
	pthread_mutex_lock(&rp->lock);
	if (mqp->replay.mapped)
		migr_u32map_del(&rp->by_lower, mqp->replay.lqpn);
	rp->used[mqp->replay.slot] = 0;
	mqp->replay.slot = -1;
	mqp->replay.mapped = false;
	pthread_mutex_unlock(&rp->lock);
}

/* A completion taken off a lower CQ (its QPN still the lower's) */
void migr_replay_seen(struct migr_context *ctx, enum ibv_wc_status status,
		      enum ibv_wc_opcode opcode, uint32_t qpn, uint64_t wr_id)
{
	struct migr_replay *rp = ctx->replay;
	uint32_t s;

	if (status != IBV_WC_SUCCESS || !rp ||
	    !migr_u32map_get(&rp->by_lower, qpn, &s))
		return;
	if (opcode & IBV_WC_RECV)
		__atomic_add_fetch(&rp->count[s].recvs, 1, __ATOMIC_RELAXED);
	else if (wr_id != MIGR_MARKER_WRID)
		__atomic_add_fetch(&rp->count[s].sends, 1, __ATOMIC_RELAXED);
}

/* mqp's counts, or NULL when it is not tracked */
const struct migr_replay_count *migr_replay_count_of(const struct migr_qp *mqp)
{
	if (!mqp->ctx->replay || mqp->replay.slot < 0 || !mqp->replay.mapped)
		return NULL;
	return &mqp->ctx->replay->count[mqp->replay.slot];
}
