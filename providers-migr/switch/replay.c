// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Replay after the wait bound (MIGR_REPLAY=1). When a send queue does not
 * drain in time, MigrRDMA goes on and posts the unfinished WRs again on the
 * new QP. Posted again, a WR the other end already ran would run twice (a
 * second message, a second atomic), so migr replays only when it can tell
 * that none of them ran: the oldest unfinished WR uses a RECV, the other
 * end (a QP of this process, or a partner's that answered "recvs") has no
 * RECV left (each posted to its queue, or to its SRQ, completed) and may
 * post none (RECVs are held), and it took exactly the SENDs that
 * completed here. That
 * oldest WR then waits on RNR, and the responder runs nothing behind it.
 * READs ahead of it (or all the unfinished WRs being READs) change nothing:
 * a READ leaves the other end as it was, and its data lands in a buffer
 * the application has not been given back, so running it twice is the
 * same as running it once, late. Anything else rolls back, as without
 * replay.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cq_watch.h"
#include "datapath.h"
#include "replay.h"
#include "switch_objects.h"

static bool uses_recv(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* Opcodes a replay posts again as they were logged */
static bool replayable(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return true;
	default:
		return false;
	}
}

#define WHY(fmt, ...)                                                          \
	do {                                                                   \
		snprintf(why, why_len, fmt, ##__VA_ARGS__);                    \
		return EAGAIN;                                                 \
	} while (0)

/*
 * The RECVs an SRQ holds that no completion has used up, counted by the
 * CQs it feeds. False when they cannot tell: a CQ that receives for two
 * SRQs mixes their counts; a count that does not add up. A RECV used
 * whose completion was not polled yet counts as left, which only ever
 * stops a replay.
 */
static bool srq_left(const struct migr_context *ctx,
		     const struct migr_srq *msrq, uint64_t *left)
{
	const struct migr_cq *mcq;

	if (!msrq->rlog.ring.buf)
		return false;
	list_for_each (&ctx->rec.cqs, mcq, entry)
		if (mcq->srq_mixed)
			return false;
	return !migr_rlog_unused(&msrq->rlog, migr_srq_used_total(ctx, msrq),
				 left);
}

/*
 * What QP p of this process received, as a replay's decision reads it.
 * On an SRQ, "posted" is what it took plus what the SRQ has left: the
 * RECVs its SENDs could still have used.
 */
void migr_replay_peer_of(const struct migr_qp *p, struct migr_replay_peer *out)
{
	const struct migr_replay_count *c = migr_replay_count_of(p);
	uint64_t left = 0;

	out->counted = c;
	out->recvs = c ? c->recvs : 0;
	out->posted = p->rlog.head;
	if (p->init.srq) {
		out->counted = c &&
			       srq_left(p->ctx, to_msrq(p->init.srq), &left);
		out->posted = out->recvs + left;
	}
}

int migr_replay_plan(struct migr_qp *q, const struct migr_replay_peer *peer,
		     char *why, size_t why_len)
{
	const struct migr_replay_count *qc = migr_replay_count_of(q);
	uint32_t qpn = q->vqp.qp.qp_num;
	uint64_t n, i, head, cons = 0, completed;

	q->replay.n = q->replay.consumers = 0;
	q->replay.markers = q->marker.pending;
	if (!qc || !q->slog.ring.buf || q->slog.broken)
		WHY("QP 0x%x: its send WRs are not logged (it was created without MIGR_REPLAY=1, posts through ibv_wr_*() or binds windows)",
		    qpn);
	if (migr_slog_unfinished(&q->slog, qc->sends, &n))
		WHY("QP 0x%x: more WRs are unfinished than its send log holds",
		    qpn);
	/* only the switch's marker is left: nothing of the application */
	if (!n)
		return 0;
	for (i = q->slog.head - n; i < q->slog.head; i++) {
		enum ibv_wr_opcode op = migr_slog_at(&q->slog, i)->wr.opcode;

		if (!replayable(op))
			WHY("QP 0x%x: an unfinished WR (opcode %d) cannot be posted again",
			    qpn, op);
		cons += uses_recv(op);
	}
	/* the oldest unfinished WR that is not a READ */
	for (head = q->slog.head - n; head < q->slog.head; head++)
		if (migr_slog_at(&q->slog, head)->wr.opcode != IBV_WR_RDMA_READ)
			break;
	if (head == q->slog.head)
		goto replay;
	if (!uses_recv(migr_slog_at(&q->slog, head)->wr.opcode))
		WHY("QP 0x%x: its oldest unfinished WR that is not a READ uses no RECV, so whether the other end ran it is unknown",
		    qpn);
	if (!peer || !peer->counted)
		WHY("QP 0x%x: its peer does not count its RECVs (it runs without MIGR_REPLAY=1, or its SRQ's CQs cannot tell what it used)",
		    qpn);
	if (peer->recvs != peer->posted)
		WHY("QP 0x%x: its peer still has %" PRIu64
		    " RECVs posted, so the stalled WR may yet arrive",
		    qpn, peer->posted - peer->recvs);
	completed = q->n_consumers - cons;
	if (peer->recvs != completed)
		WHY("QP 0x%x: its peer took %" PRIu64
		    " of its SENDs and %" PRIu64 " completed here",
		    qpn, peer->recvs, completed);
replay:
	q->replay.n = n;
	q->replay.consumers = cons;
	return 0;
}

/* Nothing is replayed: the lower QPs were not released after all */
void migr_replay_forget(struct migr_context *ctx)
{
	struct migr_qp *mqp;

	list_for_each (&ctx->rec.qps, mqp, entry)
		mqp->replay.n = mqp->replay.consumers = mqp->replay.markers = 0;
}

/*
 * The unfinished WRs on the rebuilt QP, before what was held meanwhile.
 * *n: how many were posted again; 0 or the error of a post (the WRs from
 * there on are lost).
 */
int migr_replay_post(struct migr_qp *mqp, unsigned int *n)
{
	unsigned int todo = mqp->replay.n;
	int ret;

	*n = 0;
	if (!todo)
		return 0;
	mqp->replay.n = mqp->replay.consumers = mqp->replay.markers = 0;
	ret = migr_slog_repost(mqp, todo, n);
	if (ret)
		verbs_err(
			&mqp->ctx->vctx,
			"switch: QP 0x%x: posting unfinished WR %u of %u again failed: %s\n",
			mqp->vqp.qp.qp_num, *n + 1, todo, strerror(ret));
	else
		verbs_debug(&mqp->ctx->vctx,
			    "switch: QP 0x%x: %u unfinished WRs posted again\n",
			    mqp->vqp.qp.qp_num, todo);
	return ret;
}

/* A drained send queue: every logged WR completed */
void migr_replay_drained(struct migr_qp *mqp)
{
	mqp->slog.done = mqp->slog.head;
}
