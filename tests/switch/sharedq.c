// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sharedq: several threads post to one send queue and one SRQ at the same
 * time, as verbs allows, while tests switch the process between devices
 * from outside (migr's control socket).
 *
 * usage: sharedq DEVICE SECONDS [--threads T] [--gid-index N]
 * SECONDS 0: run until SIGTERM or SIGINT.
 *
 * RC QP A sends to RC QP B of the same process; B receives from an SRQ.
 * Each of T threads (default 4) posts numbered, checksummed SENDs on A,
 * now one, now a list of two, at most SLOTS of its own in flight, and
 * posts RECVs for its own SLOTS buffers to the SRQ again as they are
 * used. The main thread polls both CQs and checks: every completion
 * successful and on the right QP; each thread's SENDs complete once, in
 * its order, and arrive in its order with their contents intact; a RECV
 * buffer completes only while posted. A switch that miscounted the SENDs
 * or mislogged the RECVs posts a buffer twice or loses it, and the run
 * fails or stalls. Prints a progress line each second and "sharedq: OK
 * sends=N" at the end; exits 1 with one line naming the first violation.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_loop.h"

#define MAX_THREADS 16
#define SLOTS 16 /* a thread's RECV buffers; its SENDs in flight at most */
#define MSG 64
#define DRAIN_S 30 /* what the last completions may take at the end */

struct message {
	uint32_t thread;
	uint32_t sum; /* of thread and seq */
	uint64_t seq;
};

struct worker {
	pthread_t th;
	int id;
	uint8_t *send_area, *recv_area;
	uint64_t sent; /* SENDs posted (the worker's alone) */
	uint64_t send_done; /* SEND completions (the poller's, read by it) */
	uint64_t recv_next; /* the seq its next message must carry */
	uint32_t free_slots; /* RECV buffers to post again (bit per slot) */
	uint8_t posted[SLOTS]; /* a RECV for the buffer is posted */
};

static struct ibv_qp *qa, *qb;
static struct ibv_cq *cqa, *cqb;
static struct ibv_srq *srq;
static struct ibv_mr *mr;
static struct worker workers[MAX_THREADS];
static int nthreads = 4;
static volatile sig_atomic_t stop;
static int workers_stop;

static void on_signal(int sig)
{
	stop = 1;
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stdout, "sharedq: FAIL ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t message_sum(uint32_t thread, uint64_t seq)
{
	return (thread * 2654435761u) ^ (uint32_t)(seq * 40503u) ^
	       (uint32_t)(seq >> 32);
}

static void post_recv(struct worker *w, unsigned int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(w->recv_area + slot * MSG),
			       .length = MSG,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)w->id << 8 | slot,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	__atomic_store_n(&w->posted[slot], 1, __ATOMIC_RELEASE);
	if (ibv_post_srq_recv(srq, &wr, &bad))
		fail("thread %d: post SRQ RECV: %s", w->id, strerror(errno));
}

/* n SENDs (1 or 2) in one list, the next numbers of this thread */
static void post_sends(struct worker *w, int n)
{
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	int i;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		uint64_t seq = w->sent + i;
		struct message *m =
			(void *)(w->send_area + (seq % SLOTS) * MSG);

		m->thread = w->id;
		m->seq = seq;
		m->sum = message_sum(w->id, seq);
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)m,
					   .length = MSG,
					   .lkey = mr->lkey };
		wr[i].wr_id = (uint64_t)w->id << 48 | seq;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (ibv_post_send(qa, wr, &bad))
		fail("thread %d: post SEND: %s", w->id, strerror(errno));
	w->sent += n;
}

/* Post RECVs again for the worker's buffers the poller saw used */
static void repost(struct worker *w)
{
	uint32_t free =
		__atomic_exchange_n(&w->free_slots, 0, __ATOMIC_ACQ_REL);
	unsigned int slot;

	for (slot = 0; free; slot++, free >>= 1)
		if (free & 1)
			post_recv(w, slot);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int slot;

	for (slot = 0; slot < SLOTS; slot++)
		post_recv(w, slot);
	while (!__atomic_load_n(&workers_stop, __ATOMIC_ACQUIRE)) {
		uint64_t room =
			SLOTS - (w->sent - __atomic_load_n(&w->send_done,
							   __ATOMIC_ACQUIRE));

		repost(w);
		if (room >= 2 && w->sent % 8 == 6)
			post_sends(w, 2);
		else if (room)
			post_sends(w, 1);
		else
			sched_yield();
	}
	return NULL;
}

static void send_done(const struct ibv_wc *wc)
{
	unsigned int t = wc->wr_id >> 48;
	uint64_t seq = wc->wr_id & ((1ull << 48) - 1);

	if (wc->opcode != IBV_WC_SEND || wc->qp_num != qa->qp_num)
		fail("A: completion opcode %d on QP %u, not a SEND on %u",
		     wc->opcode, wc->qp_num, qa->qp_num);
	if (t >= (unsigned int)nthreads || seq != workers[t].send_done)
		fail("thread %u: SEND %llu completed, expected %llu", t,
		     (unsigned long long)seq,
		     (unsigned long long)workers[t < MAX_THREADS ? t : 0]
			     .send_done);
	__atomic_store_n(&workers[t].send_done, seq + 1, __ATOMIC_RELEASE);
}

static void recv_done(const struct ibv_wc *wc)
{
	unsigned int owner = wc->wr_id >> 8, slot = wc->wr_id & 0xff;
	const struct message *m;
	struct worker *w;

	if (wc->opcode != IBV_WC_RECV || wc->qp_num != qb->qp_num ||
	    wc->byte_len != MSG)
		fail("B: completion opcode %d on QP %u of %u bytes", wc->opcode,
		     wc->qp_num, wc->byte_len);
	if (owner >= (unsigned int)nthreads || slot >= SLOTS)
		fail("B: RECV wr_id %#llx names no buffer",
		     (unsigned long long)wc->wr_id);
	if (!__atomic_exchange_n(&workers[owner].posted[slot], 0,
				 __ATOMIC_ACQ_REL))
		fail("B: RECV buffer %u/%u completed while not posted", owner,
		     slot);
	m = (const void *)(workers[owner].recv_area + slot * MSG);
	if (m->thread >= (unsigned int)nthreads ||
	    m->sum != message_sum(m->thread, m->seq))
		fail("B: message in buffer %u/%u corrupt", owner, slot);
	w = &workers[m->thread];
	if (m->seq != w->recv_next)
		fail("thread %u: message %llu arrived, expected %llu",
		     m->thread, (unsigned long long)m->seq,
		     (unsigned long long)w->recv_next);
	w->recv_next++;
	__atomic_or_fetch(&workers[owner].free_slots, 1u << slot,
			  __ATOMIC_RELEASE);
}

/* Take what both CQs hold; the number of completions */
static int poll_both(void)
{
	struct ibv_wc wc[16];
	int n, i, total = 0;

	n = ibv_poll_cq(cqa, 16, wc);
	if (n < 0)
		fail("poll A: %d", n);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			fail("A: completion status %s",
			     ibv_wc_status_str(wc[i].status));
		send_done(&wc[i]);
	}
	total = n;
	n = ibv_poll_cq(cqb, 16, wc);
	if (n < 0)
		fail("poll B: %d", n);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			fail("B: completion status %s",
			     ibv_wc_status_str(wc[i].status));
		recv_done(&wc[i]);
	}
	return total + n;
}

static uint64_t sum_of(size_t offset)
{
	uint64_t s = 0;
	int t;

	for (t = 0; t < nthreads; t++)
		s += *(uint64_t *)((uint8_t *)&workers[t] + offset);
	return s;
}

static bool all_done(void)
{
	int t;

	for (t = 0; t < nthreads; t++)
		if (workers[t].send_done != workers[t].sent ||
		    workers[t].recv_next != workers[t].sent)
			return false;
	return true;
}

static void setup(const char *device, int gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_srq_init_attr sattr = {
		.attr = { .max_wr = MAX_THREADS * SLOTS, .max_sge = 1 },
	};
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = MAX_THREADS * SLOTS,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   IBV_QP_ACCESS_FLAGS;
	struct ibv_context *ctx = NULL;
	const char *state;
	union ibv_gid gid;
	struct ibv_pd *pd;
	uint8_t *buf;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), device))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		fail("no device %s", device);
	ibv_free_device_list(list);
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		fail("GID %d of %s: %s", gid_index, device, strerror(errno));
	pd = ibv_alloc_pd(ctx);
	buf = calloc(nthreads, 2 * SLOTS * MSG);
	mr = pd && buf ? ibv_reg_mr(pd, buf, nthreads * 2 * SLOTS * MSG,
				    IBV_ACCESS_LOCAL_WRITE) :
			 NULL;
	cqa = ibv_create_cq(ctx, MAX_THREADS * SLOTS, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, MAX_THREADS * SLOTS, NULL, NULL, 0);
	srq = pd ? ibv_create_srq(pd, &sattr) : NULL;
	if (!mr || !cqa || !cqb || !srq)
		fail("PD, MR, CQs or SRQ: %s", strerror(errno));
	init.send_cq = init.recv_cq = cqa;
	qa = ibv_create_qp(pd, &init);
	init.send_cq = init.recv_cq = cqb;
	init.srq = srq;
	qb = ibv_create_qp(pd, &init);
	if (!qa || !qb || ibv_modify_qp(qa, &attr, mask) ||
	    ibv_modify_qp(qb, &attr, mask))
		fail("create or init QPs: %s", strerror(errno));
	state = rc_loop_connect(qa, qb->qp_num, gid_index, &gid, 0x300, 0x400,
				false);
	if (!state)
		state = rc_loop_connect(qb, qa->qp_num, gid_index, &gid, 0x400,
					0x300, false);
	if (state)
		fail("%s: %s", state, strerror(errno));
	for (i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].send_area = buf + i * 2 * SLOTS * MSG;
		workers[i].recv_area = workers[i].send_area + SLOTS * MSG;
	}
}

int main(int argc, char **argv)
{
	double seconds, end, next_line;
	int i, gid_index = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: sharedq DEVICE SECONDS [--threads T] "
				"[--gid-index N]\n");
		return 2;
	}
	seconds = atof(argv[2]);
	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gid-index") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
		else
			fail("unknown option %s", argv[i]);
	}
	if (nthreads < 1 || nthreads > MAX_THREADS)
		fail("--threads: 1 to %d", MAX_THREADS);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup(argv[1], gid_index);

	for (i = 0; i < nthreads; i++)
		if (pthread_create(&workers[i].th, NULL, work, &workers[i]))
			fail("thread: %s", strerror(errno));
	end = seconds > 0 ? now_s() + seconds : 0;
	next_line = now_s() + 1;
	while (!stop && (!end || now_s() < end)) {
		if (!poll_both())
			sched_yield();
		if (now_s() >= next_line) {
			printf("sharedq: sends=%llu threads=%d\n",
			       (unsigned long long)sum_of(
				       offsetof(struct worker, send_done)),
			       nthreads);
			next_line += 1;
		}
	}
	__atomic_store_n(&workers_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i].th, NULL);
	end = now_s() + DRAIN_S;
	while (!all_done()) {
		if (now_s() > end)
			fail("%llu of %llu SENDs completed, %llu arrived in %d s",
			     (unsigned long long)sum_of(
				     offsetof(struct worker, send_done)),
			     (unsigned long long)sum_of(
				     offsetof(struct worker, sent)),
			     (unsigned long long)sum_of(
				     offsetof(struct worker, recv_next)),
			     DRAIN_S);
		/* the workers are gone: their SENDs still need RECVs */
		for (i = 0; i < nthreads; i++)
			repost(&workers[i]);
		if (!poll_both())
			sched_yield();
	}
	printf("sharedq: OK sends=%llu threads=%d\n",
	       (unsigned long long)sum_of(offsetof(struct worker, sent)),
	       nthreads);
	return 0;
}
