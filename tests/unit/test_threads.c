// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Several threads posting to one queue at once (verbs allows it): the
 * SENDs counted for a switch and the log of RECVs must match what the
 * lower provider took, in its order. The fake lower (tests/fake)
 * serializes its posts with a lock of its own, as real providers do.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "migr.h"
#include "unit.h"
#include "unit_qp.h"
#include "datapath.h"
#include "fake_lower.h"

#define THREADS 4
#define POSTS 100000
#define RING FAKE_SEEN /* the RECV log's size: what the fake remembers */

static struct ibv_context fake_ctx;
static struct ibv_qp fake_qp = { .context = &fake_ctx };
static struct ibv_srq fake_srq = { .context = &fake_ctx };
static struct migr_context mctx;
static struct migr_qp mqp;
static struct migr_srq msrq;
static pthread_barrier_t start;

static void setup(bool xlate)
{
	fake_lower_init(&fake_ctx, FAKE_BOOKS);
	unit_qp_init(&mqp, &mctx, &fake_qp, IBV_QPT_RC);
	memset(&msrq, 0, sizeof(msrq));
	migr_queue_owner_init(&mqp.sq);
	migr_queue_owner_init(&mqp.rq);
	msrq.lower = &fake_srq;
	msrq.vsrq.srq.context = &mctx.vctx.context;
	msrq.hold.tail = &msrq.hold.wrs;
	pthread_mutex_init(&msrq.hold.lock, NULL);
	migr_queue_owner_init(&msrq.owner);
	CHECK(migr_rlog_init(&mqp.rlog, RING, 1) == 0);
	CHECK(migr_rlog_init(&msrq.rlog, RING, 1) == 0);
	fake_books_reset();
	if (xlate) {
		/* as after a switch: every key and the QP's WRs translate */
		CHECK(migr_xlate_set(&mctx.xlate, MIGR_XLATE_LKEY, 0x11,
				     0xa11) == 0);
		mqp.slow |= MIGR_SLOW_XLATE;
	}
}

/* Lone WRs (the short paths) and lists of two (the general ones) */
static void *poster(void *arg)
{
	uint64_t t = (uintptr_t)arg, i;
	struct ibv_sge sge = { .addr = 1, .length = 8, .lkey = 0x11 };
	struct ibv_send_wr swr[2], *sbad;
	struct ibv_recv_wr rwr[2], *rbad;

	memset(swr, 0, sizeof(swr));
	memset(rwr, 0, sizeof(rwr));
	swr[0].opcode = IBV_WR_SEND;
	swr[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	for (i = 0; i < 2; i++) {
		swr[i].sg_list = rwr[i].sg_list = &sge;
		swr[i].num_sge = rwr[i].num_sge = 1;
	}
	pthread_barrier_wait(&start);
	for (i = 0; i < POSTS; i++) {
		bool list = i % 8 == 7;

		swr[0].next = list ? &swr[1] : NULL;
		rwr[0].next = list ? &rwr[1] : NULL;
		rwr[0].wr_id = t << 32 | i;
		rwr[1].wr_id = t << 32 | i | 1ull << 31;
		if (migr_post_send(&mqp.vqp.qp, swr, &sbad) ||
		    migr_post_recv(&mqp.vqp.qp, rwr, &rbad) ||
		    migr_post_srq_recv(&msrq.vsrq.srq, rwr, &rbad))
			return (void *)1;
	}
	return NULL;
}

/* The log's newest RING entries are the lower's last RING, in order */
static bool same_order(const struct migr_rlog *log,
		       const struct ibv_recv_wr *order, uint64_t n)
{
	uint64_t i;

	for (i = n - RING; i < n; i++)
		if (migr_rlog_at(log, i)->wr_id != order[i % RING].wr_id)
			return false;
	return true;
}

static void test_concurrent_posters(bool xlate)
{
	pthread_t th[THREADS];
	uint64_t total = 0;
	void *ret;
	int i;

	setup(xlate);
	pthread_barrier_init(&start, NULL, THREADS);
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, poster,
				     (void *)(uintptr_t)i) == 0);
	for (i = 0; i < THREADS; i++) {
		CHECK(pthread_join(th[i], &ret) == 0);
		CHECK(ret == NULL);
	}
	pthread_barrier_destroy(&start);
	/* each thread: POSTS lone SENDs or lists of a SEND and a WRITE_IMM */
	for (i = 0; i < POSTS; i++)
		total += i % 8 == 7 ? 2 : 1;
	total *= THREADS;
	CHECK(fake_books.sends == total && fake_books.recvs == total &&
	      fake_books.srq_recvs == total);
	CHECK(mqp.n_consumers == total);
	CHECK(mqp.rlog.head == total);
	CHECK(msrq.rlog.head == total);
	CHECK(same_order(&mqp.rlog, fake_books.recv, total));
	CHECK(same_order(&msrq.rlog, fake_books.srq_recv, total));
	migr_ring_free(&mqp.rlog.ring);
	migr_ring_free(&msrq.rlog.ring);
	migr_xlate_destroy(&mctx.xlate);
	migr_xlate_destroy(&mctx.remote);
}

/* One thread after another: the queue stays unlocked until two meet */
static void *one_post(void *arg)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad;

	return (void *)(uintptr_t)migr_post_send(&mqp.vqp.qp, &wr, &bad);
}

static void test_owner_claims(void)
{
	pthread_t th;
	void *ret;

	setup(false);
	CHECK(one_post(NULL) == NULL);
	CHECK(migr_queue_owner_mine(&mqp.sq));
	CHECK(pthread_create(&th, NULL, one_post, NULL) == 0);
	CHECK(pthread_join(th, &ret) == 0 && ret == NULL);
	/* another thread posted: every post now takes the queue's lock */
	CHECK(!migr_queue_owner_mine(&mqp.sq));
	CHECK(one_post(NULL) == NULL);
	CHECK(mqp.n_consumers == 3 && fake_books.sends == 3);
	migr_ring_free(&mqp.rlog.ring);
	migr_ring_free(&msrq.rlog.ring);
	migr_xlate_destroy(&mctx.xlate);
	migr_xlate_destroy(&mctx.remote);
}

int main(void)
{
	test_owner_claims();
	test_concurrent_posters(false);
	test_concurrent_posters(true);
	return unit_done("test_threads");
}
