// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for the send log and the completion counts a replay after the
 * wait bound stands on (providers-migr/datapath/slog.c), and for the
 * decision whether the unfinished WRs may run again (switch/replay.c).
 */
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "marker.h"
#include "rebuild.h"
#include "replay.h"
#include "unit.h"

static struct migr_context ctx;

static struct ibv_send_wr wr_of(enum ibv_wr_opcode op, uint64_t id,
				unsigned int flags, struct ibv_sge *sge)
{
	struct ibv_send_wr wr = {
		.wr_id = id,
		.opcode = op,
		.send_flags = flags,
		.sg_list = sge,
		.num_sge = 1,
	};
	return wr;
}

static void post(struct migr_qp *q, enum ibv_wr_opcode op, uint64_t id,
		 unsigned int flags)
{
	struct ibv_sge sge = { .addr = 0x1000 + id, .length = 8, .lkey = 7 };
	struct ibv_send_wr wr = wr_of(op, id, flags, &sge);

	migr_slog_add(&q->slog, &wr, NULL);
	if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	    op == IBV_WR_RDMA_WRITE_WITH_IMM)
		q->n_consumers++;
}

static void new_qp(struct migr_qp *q, struct ibv_qp *lower, uint32_t lqpn,
		   uint32_t max_wr, bool sig_all)
{
	struct ibv_qp_cap cap = { .max_send_wr = max_wr,
				  .max_send_sge = 2,
				  .max_inline_data = 16 };

	memset(q, 0, sizeof(*q));
	memset(lower, 0, sizeof(*lower));
	lower->qp_num = lqpn;
	q->ctx = &ctx;
	q->lower = lower;
	q->replay.slot = -1;
	CHECK(!migr_slog_init(&q->slog, &cap, sig_all));
	CHECK(!migr_replay_track(q));
}

static uint64_t unfinished(struct migr_qp *q)
{
	uint64_t n = ~0ull;

	CHECK(!migr_slog_unfinished(&q->slog, migr_replay_count_of(q)->sends,
				    &n));
	return n;
}

/* A completion of the lower QP, as a poll sees it */
static void complete(struct migr_qp *q, enum ibv_wc_opcode op, uint64_t id)
{
	migr_replay_seen(&ctx, IBV_WC_SUCCESS, op, q->lower->qp_num, id);
}

/* Unsignaled WRs finish with the next signaled one to complete */
static void test_unfinished(void)
{
	struct migr_qp q;
	struct ibv_qp lq;

	new_qp(&q, &lq, 0x11, 8, false);
	post(&q, IBV_WR_RDMA_WRITE, 1, 0);
	post(&q, IBV_WR_SEND, 2, IBV_SEND_SIGNALED);
	post(&q, IBV_WR_RDMA_WRITE, 3, 0);
	post(&q, IBV_WR_RDMA_READ, 4, IBV_SEND_SIGNALED);
	post(&q, IBV_WR_SEND, 5, 0);
	CHECK(q.slog.head == 5 && q.slog.nsig == 2);
	CHECK(unfinished(&q) == 5);
	complete(&q, IBV_WC_SEND, 2);
	CHECK(unfinished(&q) == 3);
	/* a failed completion, a marker's, another QP's: not counted */
	migr_replay_seen(&ctx, IBV_WC_RETRY_EXC_ERR, IBV_WC_RDMA_READ, 0x11, 4);
	complete(&q, IBV_WC_RDMA_WRITE, MIGR_MARKER_WRID);
	migr_replay_seen(&ctx, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0x99, 4);
	CHECK(unfinished(&q) == 3);
	complete(&q, IBV_WC_RDMA_READ, 4);
	CHECK(unfinished(&q) == 1);
	CHECK(migr_slog_at(&q.slog, q.slog.head - 1)->wr.wr_id == 5);
	/* a drain marker came back: everything before it finished */
	migr_replay_drained(&q);
	CHECK(unfinished(&q) == 0);
	migr_replay_untrack(&q);
	migr_ring_free(&q.slog.ring);
}

/* A QP that signals every WR; more unfinished than the ring: refused */
static void test_sig_all_and_overflow(void)
{
	struct migr_qp q;
	struct ibv_qp lq;
	uint64_t n, i;

	new_qp(&q, &lq, 0x12, 4, true);
	for (i = 0; i < 4; i++)
		post(&q, IBV_WR_SEND, i, 0);
	CHECK(q.slog.nsig == 4);
	complete(&q, IBV_WC_SEND, 0);
	CHECK(unfinished(&q) == 3);
	q.slog.sig_all = false;
	for (i = 4; i < 12; i++)
		post(&q, IBV_WR_RDMA_WRITE, i, 0);
	CHECK(migr_slog_unfinished(&q.slog, 1, &n) == ERANGE);
	CHECK(migr_slog_unfinished(&q.slog, 9, &n) == ERANGE);
	migr_replay_untrack(&q);
	migr_ring_free(&q.slog.ring);
}

/* Inline payloads are copied; a WR the log cannot hold breaks the log */
static void test_inline_and_broken(void)
{
	uint8_t payload[12] = "hello, log!";
	struct ibv_sge sge[3] = {
		{ .addr = (uintptr_t)payload, .length = 6 },
		{ .addr = (uintptr_t)payload + 6, .length = 6 },
	};
	struct ibv_send_wr wr = wr_of(IBV_WR_SEND, 9, IBV_SEND_INLINE, sge);
	struct migr_slog_entry *e;
	struct migr_qp q;
	struct ibv_qp lq;

	new_qp(&q, &lq, 0x13, 4, false);
	wr.num_sge = 2;
	migr_slog_add(&q.slog, &wr, NULL);
	memset(payload, 0, sizeof(payload));
	e = migr_slog_at(&q.slog, 0);
	CHECK(e->wr.num_sge == 2 && e->wr.sg_list == e->sge);
	CHECK(!memcmp((void *)(uintptr_t)e->sge[0].addr, "hello,", 6));
	CHECK(!memcmp((void *)(uintptr_t)e->sge[1].addr, " log!", 6));
	CHECK(!q.slog.broken);
	wr.num_sge = 3; /* more SGEs than the QP has */
	migr_slog_add(&q.slog, &wr, NULL);
	CHECK(q.slog.broken && q.slog.head == 1);
	migr_replay_untrack(&q);
	migr_ring_free(&q.slog.ring);
}

/* A peer that received n RECVs out of posted */
static void peer_received(struct migr_qp *p, uint64_t posted, uint64_t n)
{
	uint64_t i;

	p->rlog.head = posted;
	for (i = 0; i < n; i++)
		complete(p, IBV_WC_RECV, i);
}

static int plan(struct migr_qp *q, struct migr_qp *p, char *why)
{
	struct migr_replay_peer peer;

	migr_replay_peer_of(p, &peer);
	return migr_replay_plan(q, &peer, why, 256);
}

/*
 * The same peer p receiving through an SRQ (its own RECV log unused): what
 * the SRQ has left is what the CQs it feeds did not count as used. q's
 * third SEND is unfinished and p took the first 2.
 */
static void test_plan_srq(struct migr_qp *q, struct migr_qp *p, char *why)
{
	struct migr_srq srq = {};
	struct migr_cq cq = {}, other = {};
	uint64_t own = p->rlog.head;

	CHECK(!migr_rlog_init(&srq.rlog, 8, 1));
	p->init.srq = &srq.vsrq.srq;
	p->rlog.head = 0;
	cq.srq_fed = &srq;
	list_add_tail(&ctx.rec.cqs, &cq.entry);
	list_add_tail(&ctx.rec.cqs, &other.entry);

	/* 5 posted to the SRQ, 4 used (2 by p, 2 by other QPs): one left */
	srq.rlog.head = 5;
	cq.srq_recvs = 4;
	CHECK(plan(q, p, why) == EAGAIN);
	CHECK(strstr(why, "still has 1 RECVs posted") && q->replay.n == 0);
	/* all used: p's SENDs wait on RNR */
	cq.srq_recvs = 5;
	CHECK(!plan(q, p, why) && q->replay.n == 2);
	/* more used than posted: the count does not add up */
	cq.srq_recvs = 6;
	CHECK(plan(q, p, why) == EAGAIN && strstr(why, "does not count"));
	/* a CQ receiving for two SRQs cannot tell whose RECVs it counted */
	cq.srq_recvs = 5;
	other.srq_mixed = true;
	CHECK(plan(q, p, why) == EAGAIN && strstr(why, "does not count"));

	list_del(&other.entry);
	list_del(&cq.entry);
	migr_ring_free(&srq.rlog.ring);
	p->init.srq = NULL;
	p->rlog.head = own;
}

/* Replayed only when nothing unfinished can have run on the other end */
static void test_plan(void)
{
	struct migr_qp q, p;
	struct ibv_qp lq, lp;
	char why[256];

	/* q sent 3 SENDs, p took the first 2: the third waits on RNR */
	new_qp(&q, &lq, 0x21, 8, false);
	new_qp(&p, &lp, 0x22, 8, false);
	post(&q, IBV_WR_SEND, 1, IBV_SEND_SIGNALED);
	post(&q, IBV_WR_SEND, 2, IBV_SEND_SIGNALED);
	complete(&q, IBV_WC_SEND, 1);
	complete(&q, IBV_WC_SEND, 2);
	post(&q, IBV_WR_SEND, 3, IBV_SEND_SIGNALED);
	post(&q, IBV_WR_RDMA_WRITE, 4, 0);
	q.marker.pending = 1;
	peer_received(&p, 2, 2);
	CHECK(!plan(&q, &p, why));
	CHECK(q.replay.n == 2 && q.replay.consumers == 1);
	CHECK(migr_expected_flushes(&q, 0) == 3);
	/* nothing known of the peer: not counted */
	CHECK(migr_replay_plan(&q, NULL, why, sizeof(why)) == EAGAIN);
	CHECK(strstr(why, "does not count") && q.replay.n == 0);
	test_plan_srq(&q, &p, why);

	/* p still has a RECV: the SEND may be on its way; no replay */
	p.rlog.head = 3;
	CHECK(plan(&q, &p, why) == EAGAIN);
	CHECK(strstr(why, "1 RECVs posted") && q.replay.n == 0);

	/* p took the SEND but its ack never came: it would run twice */
	complete(&p, IBV_WC_RECV, 3);
	CHECK(plan(&q, &p, why) == EAGAIN);
	CHECK(strstr(why, "took 3 of its SENDs and 2 completed"));

	/* the oldest unfinished WR uses no RECV: nothing proves it did not run */
	post(&q, IBV_WR_RDMA_WRITE, 5, IBV_SEND_SIGNALED);
	complete(&q, IBV_WC_SEND, 3);
	post(&q, IBV_WR_SEND, 6, IBV_SEND_SIGNALED);
	CHECK(plan(&q, &p, why) == EAGAIN);
	CHECK(strstr(why, "uses no RECV"));

	/*
	 * READs ahead of the stalled SEND change nothing at the other end:
	 * an unsignaled READ, then a SEND p has no RECV for
	 */
	complete(&q, IBV_WC_RDMA_WRITE, 5);
	complete(&q, IBV_WC_SEND, 6);
	post(&q, IBV_WR_RDMA_READ, 7, 0);
	post(&q, IBV_WR_SEND, 8, IBV_SEND_SIGNALED);
	p.rlog.head = 4;
	complete(&p, IBV_WC_RECV, 4);
	CHECK(!plan(&q, &p, why));
	CHECK(q.replay.n == 2 && q.replay.consumers == 1);
	/* all of them READs: no peer count is needed */
	complete(&q, IBV_WC_SEND, 8);
	post(&q, IBV_WR_RDMA_READ, 9, 0);
	post(&q, IBV_WR_RDMA_READ, 10, IBV_SEND_SIGNALED);
	CHECK(!migr_replay_plan(&q, NULL, why, sizeof(why)));
	CHECK(q.replay.n == 2 && q.replay.consumers == 0);
	/* a WRITE behind a READ: whether it ran is unknown */
	complete(&q, IBV_WC_RDMA_READ, 10);
	post(&q, IBV_WR_RDMA_READ, 11, 0);
	post(&q, IBV_WR_RDMA_WRITE, 12, IBV_SEND_SIGNALED);
	CHECK(plan(&q, &p, why) == EAGAIN);
	CHECK(strstr(why, "not a READ uses no RECV"));

	/* a log that missed a WR */
	q.slog.broken = true;
	CHECK(plan(&q, &p, why) == EAGAIN);
	CHECK(strstr(why, "not logged"));
	migr_replay_untrack(&q);
	migr_replay_untrack(&p);
	migr_ring_free(&q.slog.ring);
	migr_ring_free(&p.slog.ring);
}

/* A rebuilt QP is counted under its new lower number, in the same slot */
static void test_track(void)
{
	struct migr_qp q;
	struct ibv_qp lq, lq2 = { .qp_num = 0x31 };

	new_qp(&q, &lq, 0x30, 4, false);
	post(&q, IBV_WR_SEND, 1, IBV_SEND_SIGNALED);
	post(&q, IBV_WR_SEND, 2, IBV_SEND_SIGNALED);
	complete(&q, IBV_WC_SEND, 1);
	q.lower = &lq2;
	CHECK(!migr_replay_track(&q));
	migr_replay_seen(&ctx, IBV_WC_SUCCESS, IBV_WC_SEND, 0x30, 2);
	CHECK(migr_replay_count_of(&q)->sends == 1);
	complete(&q, IBV_WC_SEND, 2);
	CHECK(migr_replay_count_of(&q)->sends == 2 && unfinished(&q) == 0);
	migr_replay_untrack(&q);
	CHECK(!migr_replay_count_of(&q));
	migr_ring_free(&q.slog.ring);
}

int main(void)
{
	setenv("MIGR_REPLAY", "1", 1);
	CHECK(migr_replay_wanted());
	CHECK(!migr_replay_init(&ctx));
	list_head_init(&ctx.rec.qps);
	list_head_init(&ctx.rec.cqs);
	test_unfinished();
	test_sig_all_and_overflow();
	test_inline_and_broken();
	test_plan();
	test_track();
	migr_replay_free(&ctx);
	setenv("MIGR_REPLAY", "yes", 1);
	CHECK(!migr_replay_wanted());
	return unit_done("slog");
}
