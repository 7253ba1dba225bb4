// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * selfpair: an ordinary verbs program whose two RC QPs talk to each other
 * inside one process, checking everything it gets back. Tests switch it
 * between devices from outside (migr's control socket) while it runs.
 *
 * usage: selfpair DEVICE SECONDS [--events] [--gid-index N] [--pairs N]
 *                 [--threads N] [--uc] [--stall S]
 *                 [--stall-read] [--mw2] [--mem MIB] [--idle-us N]
 * SECONDS 0: run until SIGTERM or SIGINT.
 *
 * With --idle-us N, a poll that finds nothing rests N microseconds before
 * the next: a WR is still in flight as often, but the process leaves the
 * CPU to others (a one-CPU test guest's migrd and CRIU) while it waits.
 *
 * SIGUSR1 (RC, polling): the first thread lets B's RECVs run out, posts
 * one more SEND (which the responder refuses, receiver not ready, and
 * retries), prints "selfpair: stalled", posts no RECV for S seconds
 * (default 4: an application slow to post) or until the next SIGUSR1,
 * then posts them and checks that SEND like any other. A switch meanwhile
 * cannot drain that QP.
 * With --stall-read an unsignaled READ goes just before that SEND (it
 * finishes with it, so it is unfinished too); its data is checked once
 * the SEND completed.
 *
 * With --mw2, A reaches B's area through a type 2 memory window that B
 * binds through its QP: every third round A's SEND invalidates it
 * (SEND_WITH_INV: B's completion must name its key), every third B posts
 * a LOCAL_INV; each time B binds it again with the next key
 * (ibv_inc_rkey()), and A's WRITE and READ use that key.
 *
 * With --mem MIB, MIB MiB more are registered (a migration's memory, for
 * benchmarks), filled with a pattern of their offsets; thread 0 writes
 * one page of it again each round (the pattern plus the round: pre-copy
 * sees a dirty set), and at the end every word is checked.
 *
 * With --pairs N there are N such pairs; with --threads T, T threads share
 * them out (each with its own CQs, channel and buffer) and run at once.
 * Each round: B keeps RECVs posted; A SENDs a numbered, checksummed
 * message, WRITEs a numbered pattern into B's buffer with immediate data,
 * then READs it back (--uc: UC QPs, which have no READ: B checks the
 * WRITE). Every completion must come exactly once, in order,
 * successful, with the right QPN, length and contents. Prints a progress
 * line each second and "selfpair: OK rounds=N" at the end; exits 1 with
 * one line naming the first violation.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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

#define SLOTS 16
#define MSG 64
#define DEPTH 64

struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch; /* with --events */
	uint8_t *base; /* the owning thread's buffer */
	uint64_t next_recv; /* the wr_id the next RECV completion must carry */
	uint64_t imm_expected;
	struct ibv_mw *mw; /* --mw2: B's window over its area, bound via B */
	uint32_t rkey; /* A: the key its WRITEs and READs name B's area by */
};

static struct ibv_context *ctx;
static unsigned int idle_us; /* --idle-us */
static struct ibv_mr *mr;
static uint8_t *buf;
static struct side *as, *bs;
static uint64_t *posted; /* RECVs posted to each B */
static int npairs = 1, nthreads = 1;
static uint64_t total_rounds;
/* --mem: the extra area, its words, and how often each page was written */
static uint64_t *mem, mem_words;
static uint32_t *mem_gen;

#define MEM_PAGE_WORDS (4096 / sizeof(uint64_t))

static uint64_t mem_word(uint64_t i, uint32_t gen)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ gen;
}

/* Page p of the area written again, one generation on */
static void mem_touch(uint64_t round)
{
	uint64_t pages = mem_words / MEM_PAGE_WORDS, p, i;
	uint32_t gen;

	if (!pages)
		return;
	p = round % pages;
	gen = ++mem_gen[p];
	for (i = p * MEM_PAGE_WORDS; i < (p + 1) * MEM_PAGE_WORDS; i++)
		mem[i] = mem_word(i, gen);
}

static double end;
static bool events;
static bool uc; /* UC QPs: no READ, no acks */
static volatile sig_atomic_t stop, stall, stalling;
static double stall_s = 4;
static bool stall_read;
static bool mw2; /* A's WRITEs and READs go through type 2 windows */

static void on_signal(int sig)
{
	if (sig == SIGUSR1 && stalling)
		stalling = 0; /* the stall ends early */
	else if (sig == SIGUSR1)
		stall = 1;
	else
		stop = 1;
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stdout, "selfpair: FAIL ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	va_end(ap);
	exit(1);
}

static void mem_check(void)
{
	uint64_t i;

	for (i = 0; i < mem_words; i++)
		if (mem[i] != mem_word(i, mem_gen[i / MEM_PAGE_WORDS]))
			fail("--mem word %llu is wrong", (unsigned long long)i);
}

/* Each thread's part of the buffer: [send][recv][write target][read back] */
#define SEND_AREA(b) (b)
#define RECV_AREA(b) ((b) + SLOTS * MSG)
#define WRITE_AREA(b) ((b) + 2 * SLOTS * MSG)
#define READ_AREA(b) ((b) + 3 * SLOTS * MSG)
#define BUF_LEN (4 * SLOTS * MSG)

static uint32_t checksum(const uint8_t *p, size_t n)
{
	uint32_t s = 2166136261u;

	while (n--)
		s = (s ^ *p++) * 16777619u;
	return s;
}

static void fill(uint8_t *p, uint64_t seq)
{
	size_t i;

	for (i = 8; i < MSG - 4; i++)
		p[i] = (uint8_t)(seq * 31 + i);
	memcpy(p, &seq, 8);
	*(uint32_t *)(p + MSG - 4) = checksum(p, MSG - 4);
}

static void check(const uint8_t *p, uint64_t seq, const char *what)
{
	uint64_t got;

	memcpy(&got, p, 8);
	if (got != seq)
		fail("%s: sequence %llu where %llu was due", what,
		     (unsigned long long)got, (unsigned long long)seq);
	if (*(uint32_t *)(p + MSG - 4) != checksum(p, MSG - 4))
		fail("%s %llu: checksum mismatch", what,
		     (unsigned long long)seq);
}

static void post_recv(struct side *s, uint64_t seq)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(RECV_AREA(s->base) +
						   (seq % SLOTS) * MSG),
			       .length = MSG,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		fail("post_recv %llu", (unsigned long long)seq);
}

static void post_wr(struct side *s, enum ibv_wr_opcode op, uint64_t seq,
		    uint8_t *local, uint8_t *remote, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local,
			       .length = MSG,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = seq,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = flags },
			   *bad;

	if (remote) {
		wr.wr.rdma.remote_addr = (uintptr_t)remote;
		wr.wr.rdma.rkey = s->rkey;
	}
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htobe32((uint32_t)seq);
	if (ibv_post_send(s->qp, &wr, &bad))
		fail("post_send op %d seq %llu", op, (unsigned long long)seq);
}

static void post_send(struct side *s, enum ibv_wr_opcode op, uint64_t seq,
		      uint8_t *local, uint8_t *remote)
{
	post_wr(s, op, seq, local, remote, IBV_SEND_SIGNALED);
}

/* Wait for completions on cq, the way the program was told to */
static int get_wc(struct ibv_cq *cq, struct ibv_comp_channel *channel,
		  struct ibv_wc *wc)
{
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		struct ibv_cq *ev_cq;
		struct pollfd pfd;
		void *ev_ctx;

		if (n)
			return n;
		if (!events) {
			if (idle_us)
				usleep(idle_us);
			continue;
		}
		pfd.fd = channel->fd;
		pfd.events = POLLIN;
		if (ibv_req_notify_cq(cq, 0))
			fail("req_notify_cq");
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		n = poll(&pfd, 1, 5000);
		if (n < 0 && errno == EINTR)
			continue; /* SIGTERM: finish the round, then stop */
		if (n <= 0)
			fail("no completion event within 5 s");
		if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
			fail("get_cq_event: %s", strerror(errno));
		ibv_ack_cq_events(ev_cq, 1);
	}
}

static struct ibv_wc expect(struct side *s, enum ibv_wc_opcode op, uint64_t seq,
			    const char *what)
{
	struct ibv_wc wc;

	if (get_wc(s->cq, s->ch, &wc) < 0)
		fail("poll_cq");
	if (wc.status != IBV_WC_SUCCESS)
		fail("%s %llu: completion status %s (wr_id %llu, QP 0x%x, vendor error 0x%x)",
		     what, (unsigned long long)seq,
		     ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
		     wc.qp_num, wc.vendor_err);
	if (wc.opcode != op || wc.wr_id != seq)
		fail("%s: got opcode %d wr_id %llu, expected opcode %d wr_id %llu",
		     what, wc.opcode, (unsigned long long)wc.wr_id, op,
		     (unsigned long long)seq);
	if (wc.qp_num != s->qp->qp_num)
		fail("%s %llu: completion names QP 0x%x, not 0x%x", what,
		     (unsigned long long)seq, wc.qp_num, s->qp->qp_num);
	if (op == IBV_WC_RECV_RDMA_WITH_IMM &&
	    be32toh(wc.imm_data) != (uint32_t)s->imm_expected)
		fail("%s %llu: immediate %u", what, (unsigned long long)seq,
		     be32toh(wc.imm_data));
	return wc;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = DEPTH,
			 .max_recv_wr = DEPTH,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = uc ? IBV_QPT_UC : IBV_QPT_RC,
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   (uc ? 0 : IBV_ACCESS_REMOTE_READ) |
				   IBV_ACCESS_LOCAL_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp || ibv_modify_qp(qp, &attr,
				 IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		fail("create or init QP: %s", strerror(errno));
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest, int gid_index,
		       const union ibv_gid *gid, uint32_t rq_psn,
		       uint32_t sq_psn)
{
	const char *state =
		rc_loop_connect(qp, dest, gid_index, gid, rq_psn, sq_psn, uc);

	if (state)
		fail("%s: %s", state, strerror(errno));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A posts message seq as a SEND */
static void send_message(int p, uint64_t seq, uint8_t *base)
{
	uint8_t *msg = SEND_AREA(base) + (seq % SLOTS) * MSG;

	fill(msg, seq);
	post_send(&as[p], IBV_WR_SEND, 3 * seq, msg, NULL);
}

/* Message seq completes at A and lands, intact, in B's oldest RECV */
static struct ibv_wc take_message(int p, uint64_t seq, uint8_t *base,
				  const char *what)
{
	struct side *a = &as[p], *b = &bs[p];
	struct ibv_wc wc;

	expect(a, IBV_WC_SEND, 3 * seq, "send");
	wc = expect(b, IBV_WC_RECV, b->next_recv, "recv");
	check(RECV_AREA(base) + (b->next_recv % SLOTS) * MSG, seq, what);
	b->next_recv++;
	return wc;
}

/* wr_ids of B's own WRs (--mw2), apart from its RECVs' */
#define BIND_WRID (1ull << 62)
#define INV_WRID (1ull << 61)

/*
 * --mw2: B binds its window over its area through its QP with the next
 * key, as an application does (it keeps the key in its ibv_mw); A names
 * B's area by that key from now on
 */
static void bind_window(int p, uint64_t seq, uint8_t *base)
{
	struct side *b = &bs[p];
	uint32_t rkey = ibv_inc_rkey(b->mw->rkey);
	struct ibv_send_wr wr = { .wr_id = BIND_WRID | seq,
				  .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.bind_mw.mw = b->mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)WRITE_AREA(base);
	wr.bind_mw.bind_info.length = SLOTS * MSG;
	wr.bind_mw.bind_info.mw_access_flags =
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_post_send(b->qp, &wr, &bad))
		fail("bind_mw %llu: %s", (unsigned long long)seq,
		     strerror(errno));
	expect(b, IBV_WC_BIND_MW, wr.wr_id, "bind");
	b->mw->rkey = rkey;
	as[p].rkey = rkey;
}

/* --mw2: A's SEND of message seq invalidates B's window on its way */
static void send_inv_message(int p, uint64_t seq, uint8_t *base)
{
	uint8_t *msg = SEND_AREA(base) + (seq % SLOTS) * MSG;
	uint32_t rkey = bs[p].mw->rkey;
	struct ibv_sge sge = { .addr = (uintptr_t)msg,
			       .length = MSG,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3 * seq,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey },
			   *bad;
	struct ibv_wc wc;

	fill(msg, seq);
	if (ibv_post_send(as[p].qp, &wr, &bad))
		fail("send_with_inv %llu: %s", (unsigned long long)seq,
		     strerror(errno));
	wc = take_message(p, seq, base, "received message");
	/*
	 * rxe shows the kernel's flag, which has IBV_WC_IP_CSUM_OK's value
	 * (providers-migr/verbs/quirks.c)
	 */
	if (!(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)) ||
	    wc.invalidated_rkey != rkey)
		fail("message %llu invalidated key 0x%x (flags 0x%x), not 0x%x",
		     (unsigned long long)seq, wc.invalidated_rkey, wc.wc_flags,
		     rkey);
}

/* --mw2: B invalidates its window itself */
static void local_inv(int p, uint64_t seq)
{
	struct side *b = &bs[p];
	struct ibv_send_wr wr = { .wr_id = INV_WRID | seq,
				  .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = b->mw->rkey },
			   *bad;

	if (ibv_post_send(b->qp, &wr, &bad))
		fail("local_inv %llu: %s", (unsigned long long)seq,
		     strerror(errno));
	expect(b, IBV_WC_LOCAL_INV, wr.wr_id, "local invalidation");
}

/* One round on pair p: SEND, WRITE_WITH_IMM, READ back; all checked */
static void round_on(int p, uint64_t seq, uint8_t *base)
{
	struct side *a = &as[p], *b = &bs[p];
	uint8_t *msg = SEND_AREA(base) + (seq % SLOTS) * MSG;
	uint8_t *target = WRITE_AREA(base) + (seq % SLOTS) * MSG;

	/*
	 * --mw2: every third SEND invalidates B's window, every third B
	 * does; B binds it again with the next key before A writes
	 */
	if (mw2 && seq % 3 == 1) {
		send_inv_message(p, seq, base);
	} else {
		send_message(p, seq, base);
		take_message(p, seq, base, "received message");
	}
	post_recv(b, posted[p]++);
	if (mw2 && seq % 3 == 2)
		local_inv(p, seq);
	if (mw2 && seq % 3)
		bind_window(p, seq, base);

	/* WRITE_WITH_IMM into B's area, then READ it back */
	post_send(a, IBV_WR_RDMA_WRITE_WITH_IMM, 3 * seq + 1, msg, target);
	expect(a, IBV_WC_RDMA_WRITE, 3 * seq + 1, "write");
	b->imm_expected = 3 * seq + 1;
	expect(b, IBV_WC_RECV_RDMA_WITH_IMM, b->next_recv++, "write-imm recv");
	check(target, seq, "written data");
	post_recv(b, posted[p]++);
	if (uc)
		return;
	post_send(a, IBV_WR_RDMA_READ, 3 * seq + 2,
		  READ_AREA(base) + (seq % SLOTS) * MSG, target);
	expect(a, IBV_WC_RDMA_READ, 3 * seq + 2, "read");
	check(READ_AREA(base) + (seq % SLOTS) * MSG, seq, "read-back data");
}

/* SIGUSR1: a SEND stays in flight (RNR) while B posts no RECV */
static void stall_round(int p, uint64_t *seq, uint8_t *base)
{
	struct side *b = &bs[p];
	uint8_t *target, *back = NULL;
	double until;

	/* B's RECVs run out: SENDs as many as it has, none posted again */
	do {
		send_message(p, *seq, base);
		take_message(p, *seq, base, "received message");
		(*seq)++;
	} while (b->next_recv < posted[p]);

	if (stall_read) {
		target = WRITE_AREA(base) + (*seq % SLOTS) * MSG;
		back = READ_AREA(base) + (*seq % SLOTS) * MSG;
		fill(target, *seq);
		memset(back, 0, MSG);
		post_wr(&as[p], IBV_WR_RDMA_READ, 3 * *seq + 2, back, target,
			0);
	}
	stalling = 1;
	send_message(p, *seq, base);
	printf("selfpair: stalled\n");
	fflush(stdout);
	for (until = now_s() + stall_s; stalling && now_s() < until;)
		usleep(10000);
	stalling = 0;
	while (posted[p] < b->next_recv + SLOTS / 2)
		post_recv(b, posted[p]++);
	take_message(p, *seq, base, "stalled message");
	/* the SEND completed after the READ: its data is in */
	if (stall_read)
		check(back, *seq, "stalled read-back data");
	post_recv(b, posted[p]++);
	(*seq)++;
	printf("selfpair: stall over\n");
	fflush(stdout);
}

/* A thread runs rounds on the pairs t, t + nthreads, ... in turn */
static void *worker(void *arg)
{
	int t = (intptr_t)arg, p = t;
	uint8_t *base = buf + (size_t)t * BUF_LEN;
	double next_report = now_s() + 1;
	uint64_t seq = 0;

	for (;;) {
		double now;

		if (t == 0 && stall && !uc && !events) {
			stall = 0;
			stall_round(p, &seq, base);
		}
		round_on(p, seq, base);
		if (t == 0)
			mem_touch(seq);
		seq++;
		p += nthreads;
		if (p >= npairs)
			p = t;
		__atomic_add_fetch(&total_rounds, 1, __ATOMIC_RELAXED);
		now = now_s();
		if (t == 0 && now >= next_report) {
			printf("selfpair: rounds=%llu\n",
			       (unsigned long long)__atomic_load_n(
				       &total_rounds, __ATOMIC_RELAXED));
			fflush(stdout);
			next_report = now + 1;
		}
		if (stop || (end > 0 && now >= end))
			return NULL;
	}
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int i, gid_index = 1;
	union ibv_gid gid;
	pthread_t *th;
	struct ibv_pd *pd;

	if (argc < 3) {
		fprintf(stderr,
			"usage: %s DEVICE SECONDS [--events] [--gid-index N] [--pairs N] [--threads N] [--uc] [--stall S] [--stall-read] [--mw2] [--mem MIB] [--idle-us N]\n",
			argv[0]);
		return 2;
	}
	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--events"))
			events = true;
		else if (!strcmp(argv[i], "--gid-index") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			npairs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--uc"))
			uc = true;
		else if (!strcmp(argv[i], "--stall") && i + 1 < argc)
			stall_s = atof(argv[++i]);
		else if (!strcmp(argv[i], "--stall-read"))
			stall_read = true;
		else if (!strcmp(argv[i], "--mw2"))
			mw2 = true;
		else if (!strcmp(argv[i], "--idle-us") && i + 1 < argc)
			idle_us = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mem") && i + 1 < argc)
			mem_words = (strtoull(argv[++i], NULL, 10) << 20) /
				    sizeof(uint64_t);
	}
	if (npairs < 1 || nthreads < 1 || nthreads > npairs)
		fail("need 1 <= threads <= pairs");
	if (mw2 && uc)
		fail("--mw2 wants RC QPs (A READs through the window)");
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		fail("cannot open device %s", argv[1]);
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		fail("query_gid");
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, (size_t)nthreads * BUF_LEN);
	if (!pd || !buf)
		fail("pd/buffer: %s", strerror(errno));
	memset(buf, 0, (size_t)nthreads * BUF_LEN);
	mr = ibv_reg_mr(pd, buf, (size_t)nthreads * BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ |
				(mw2 ? IBV_ACCESS_MW_BIND : 0));
	as = calloc(npairs, sizeof(*as));
	bs = calloc(npairs, sizeof(*bs));
	posted = calloc(npairs, sizeof(*posted));
	th = calloc(nthreads, sizeof(*th));
	if (!mr || !as || !bs || !posted || !th)
		fail("mr/arrays: %s", strerror(errno));
	if (mem_words) {
		uint64_t w;

		mem = aligned_alloc(4096, mem_words * sizeof(uint64_t));
		mem_gen = calloc(mem_words / MEM_PAGE_WORDS + 1,
				 sizeof(*mem_gen));
		if (!mem || !mem_gen)
			fail("--mem: %s", strerror(errno));
		for (w = 0; w < mem_words; w++)
			mem[w] = mem_word(w, 0);
		if (!ibv_reg_mr(pd, mem, mem_words * sizeof(uint64_t),
				IBV_ACCESS_LOCAL_WRITE))
			fail("--mem reg_mr: %s", strerror(errno));
	}

	/* Per thread: a channel (--events), one CQ for its A QPs, one for B */
	for (i = 0; i < nthreads; i++) {
		struct ibv_comp_channel *ch = NULL;
		int mine = (npairs - i + nthreads - 1) / nthreads;

		if (events && !(ch = ibv_create_comp_channel(ctx)))
			fail("comp channel");
		as[i].ch = bs[i].ch = ch;
		as[i].cq = ibv_create_cq(ctx, 4 * DEPTH, NULL, ch, 0);
		bs[i].cq = ibv_create_cq(ctx, mine * 2 * SLOTS, NULL, ch, 0);
		if (!as[i].cq || !bs[i].cq)
			fail("create_cq: %s", strerror(errno));
	}
	for (i = 0; i < npairs; i++) {
		int t = i % nthreads;

		as[i].cq = as[t].cq;
		bs[i].cq = bs[t].cq;
		as[i].ch = bs[i].ch = as[t].ch;
		as[i].base = bs[i].base = buf + (size_t)t * BUF_LEN;
		as[i].qp = make_qp(pd, as[i].cq);
		bs[i].qp = make_qp(pd, bs[i].cq);
		connect_qp(as[i].qp, bs[i].qp->qp_num, gid_index, &gid, 0x100,
			   0x200);
		connect_qp(bs[i].qp, as[i].qp->qp_num, gid_index, &gid, 0x200,
			   0x100);
		for (posted[i] = 0; posted[i] < SLOTS / 2; posted[i]++)
			post_recv(&bs[i], posted[i]);
		as[i].rkey = mr->rkey;
		if (mw2) {
			bs[i].mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
			if (!bs[i].mw)
				fail("alloc_mw: %s", strerror(errno));
			bind_window(i, 0, bs[i].base);
		}
	}

	end = atof(argv[2]) > 0 ? now_s() + atof(argv[2]) : 0;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_signal);
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i))
			fail("pthread_create");
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/*
	 * A bound type 2 window holds its QP: rxe gives up destroying the
	 * QP at exit only after 50 s. Windows go first, as they should.
	 */
	for (i = 0; mw2 && i < npairs; i++)
		if (ibv_dealloc_mw(bs[i].mw))
			fail("dealloc_mw: %s", strerror(errno));
	mem_check();
	printf("selfpair: OK rounds=%llu threads=%d pairs=%d\n",
	       (unsigned long long)total_rounds, nthreads, npairs);
	return 0;
}
