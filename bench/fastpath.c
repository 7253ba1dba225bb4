// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migr-bench-fastpath: the cycles migr adds to ibv_post_send, ibv_post_recv
 * and ibv_poll_cq, on the host, without a device. migr's own data-path code
 * (post.c, cq.c, xlate, u32map) runs over a fake lower provider of constant
 * cost (fake_lower.c); the same fake called directly is the baseline.
 * Both are called the way an application calls them (through the verbs
 * inlines and the context's ops), in alternating batches on one pinned CPU.
 *
 * Three states of the same objects: "identity", as migr leaves them when
 * nothing was ever remapped; "replay-log", the same with MIGR_REPLAY=1
 * (send log, completions counted per QP); and "translated", as a live switch leaves
 * them (keys and QPNs remapped by migr_xlate_remap() as rebuild.c does,
 * QPs connected to partners in the process, flags recomputed by
 * migr_qp_update_slow() as switch.c's resume does, CQs off the shadow).
 *
 * usage: migr-bench-fastpath [--batch N] [--batches N] [--cpu N]
 * Prints one line per op: per-call cycles (median and p99 of per-batch
 * means, timer overhead subtracted), added cycles and percent.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cq_watch.h"
#include "datapath.h"
#include "fake_lower.h"
#include "migr.h"
#include "verbs.h"

#define NMR 16 /* MRs the WRs use in turn */
#define NQP 8 /* QPs whose numbers completions carry */
#define NWR 16 /* prepared WRs, used in turn */
#define RECV_DEPTH 256

static unsigned int batch = 64, batches = 4000, warmup = 400;
static double overhead;

/* The lower side: the fake provider's objects, before and after a switch */
static struct ibv_context fake_ctx;
static struct ibv_qp fake_qp[2];
static struct fake_cq fake_cq1[2], fake_cq16[2], fake_cq0[2];
static uint32_t fake_qpn[2][NQP];

/* migr's objects over them */
static struct migr_context mctx;
static struct migr_qp mqp[NQP];
static struct migr_cq mcq1, mcq16, mcq0;
static uint32_t lkey[NMR], rkey[NMR];

/* What the application posts: virtual keys, as it got them from migr */
static struct ibv_sge ssge[NWR], rsge[NWR];
static struct ibv_send_wr swr[NWR];
static struct ibv_recv_wr rwr[NWR];
static struct ibv_wc wc[16];
static char buf[NWR][64];

struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq1, *cq16, *cq0;
};

enum op { OP_SEND, OP_RECV, OP_POLL1, OP_POLL16, OP_POLL0, NOPS };

static const char *const op_name[NOPS] = {
	"post_send", "post_recv", "poll_cq(1)", "poll_cq(16)", "poll_cq(0)",
};

/* rxe-like values: an index above 8 random key bits */
static uint32_t phys_key(int gen, int i)
{
	return (uint32_t)(0x200 * gen + 0x40 + i) << 8 |
	       ((i * 37 + gen) & 0xff);
}

static void fake_cq_init(struct fake_cq *f, int per_poll, const uint32_t *qpn)
{
	f->cq.context = &fake_ctx;
	f->per_poll = per_poll;
	f->qpn = qpn;
	f->nqpn_mask = NQP - 1;
}

/* As cq.c's create path leaves a CQ (fill_cq) */
static void migr_cq_init(struct migr_cq *mcq, struct fake_cq *lower)
{
	mcq->vcq.cq.context = &mctx.vctx.context;
	mcq->lower = &lower->cq;
	mcq->vcq.cq.cqe = 256;
	pthread_mutex_init(&mcq->shadow_lock, NULL);
}

/* As qp.c's finish_qp() (with alloc_rlog()) and modify_qp() leave a QP */
static int migr_qp_init(struct migr_qp *q, struct ibv_qp *lower, uint32_t pqpn)
{
	struct migr_rlog *log = &q->rlog;

	q->ctx = &mctx;
	q->lower = lower;
	q->vqp.qp.context = &mctx.vctx.context;
	q->vqp.qp.qp_type = IBV_QPT_RC;
	if (migr_xlate_born(&mctx.xlate, MIGR_XLATE_QPN, pqpn,
			    &q->vqp.qp.qp_num))
		return -1;
	if (migr_rlog_init(log, RECV_DEPTH, 1))
		return -1;
	pthread_mutex_init(&q->hold.lock, NULL);
	q->hold.tail = &q->hold.wrs;
	q->remote = &mctx.remote;
	migr_qp_update_slow(q);
	/* connected to a partner in this process (migr_modify_qp) */
	q->self = true;
	q->remote = &mctx.xlate;
	q->attr.qp_state = IBV_QPS_RTS;
	migr_qp_update_slow(q);
	return 0;
}

static int setup(void)
{
	int i;

	fake_lower_init(&fake_ctx, FAKE_BENCH);
	for (i = 0; i < 2; i++) {
		int j;

		fake_qp[i].context = &fake_ctx;
		for (j = 0; j < NQP; j++)
			fake_qpn[i][j] = 0x11 + 0x40 * i + j;
		fake_cq_init(&fake_cq1[i], 1, fake_qpn[i]);
		fake_cq_init(&fake_cq16[i], 16, fake_qpn[i]);
		fake_cq_init(&fake_cq0[i], 0, fake_qpn[i]);
	}

	mctx.vctx.context.ops.post_send = migr_post_send;
	mctx.vctx.context.ops.post_recv = migr_post_recv;
	mctx.vctx.context.ops.poll_cq = migr_poll_cq;
	migr_xlate_init(&mctx.xlate);
	migr_xlate_init(&mctx.remote);
	migr_record_init(&mctx.rec);
	pthread_rwlock_init(&mctx.ctl_lock, NULL);

	/* MRs as mr.c registers them: keys born from the lower's */
	for (i = 0; i < NMR; i++)
		if (migr_xlate_born(&mctx.xlate, MIGR_XLATE_LKEY,
				    phys_key(0, i), &lkey[i]) ||
		    migr_xlate_born(&mctx.xlate, MIGR_XLATE_RKEY,
				    phys_key(0, i), &rkey[i]))
			return -1;
	for (i = 0; i < NQP; i++)
		if (migr_qp_init(&mqp[i], &fake_qp[0], fake_qpn[0][i]))
			return -1;
	migr_cq_init(&mcq1, &fake_cq1[0]);
	migr_cq_init(&mcq16, &fake_cq16[0]);
	migr_cq_init(&mcq0, &fake_cq0[0]);

	for (i = 0; i < NWR; i++) {
		ssge[i] = (struct ibv_sge){ .addr = (uintptr_t)buf[i],
					    .length = 64,
					    .lkey = lkey[i % NMR] };
		rsge[i] = ssge[i];
		swr[i] =
			(struct ibv_send_wr){ .wr_id = i,
					      .sg_list = &ssge[i],
					      .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE,
					      .send_flags = IBV_SEND_SIGNALED };
		swr[i].wr.rdma.remote_addr = (uintptr_t)buf[(i + 1) % NWR];
		swr[i].wr.rdma.rkey = rkey[(i + 3) % NMR];
		rwr[i] = (struct ibv_recv_wr){ .wr_id = i,
					       .sg_list = &rsge[i],
					       .num_sge = 1 };
	}
	return 0;
}

/*
 * The state a live switch leaves: every lower object rebuilt with new
 * numbers (rebuild.c remaps keys and QPNs), then resume() clears the
 * suspension and recomputes each QP's flags; CQs whose shadow is empty
 * go back to the fast path.
 */
static int switch_state(void)
{
	int i;

	for (i = 0; i < NMR; i++)
		if (migr_xlate_remap(&mctx.xlate, MIGR_XLATE_LKEY, lkey[i],
				     phys_key(1, i)) ||
		    migr_xlate_remap(&mctx.xlate, MIGR_XLATE_RKEY, rkey[i],
				     phys_key(1, i)))
			return -1;
	for (i = 0; i < NQP; i++) {
		mqp[i].lower = &fake_qp[1];
		if (migr_xlate_remap(&mctx.xlate, MIGR_XLATE_QPN,
				     mqp[i].vqp.qp.qp_num, fake_qpn[1][i]))
			return -1;
	}
	mcq1.lower = &fake_cq1[1].cq;
	mcq16.lower = &fake_cq16[1].cq;
	mcq0.lower = &fake_cq0[1].cq;
	for (i = 0; i < NQP; i++) {
		__atomic_and_fetch(&mqp[i].slow, ~MIGR_SLOW_SUSPENDED,
				   __ATOMIC_RELEASE);
		migr_qp_update_slow(&mqp[i]);
	}
	__atomic_store_n(&mctx.switch_active, false, __ATOMIC_RELEASE);
	__atomic_store_n(&mcq1.switching, false, __ATOMIC_RELEASE);
	__atomic_store_n(&mcq16.switching, false, __ATOMIC_RELEASE);
	__atomic_store_n(&mcq0.switching, false, __ATOMIC_RELEASE);
	return mctx.xlate.active && mqp[0].slow == MIGR_SLOW_XLATE ? 0 : -1;
}

/*
 * MIGR_REPLAY=1 on the identity state: each QP keeps a send log (as
 * qp.c's log_sends() makes it), is tracked by its lower QPN, and the CQs
 * count every completion per QP. on false takes it all away again.
 */
static int replay_log(bool on)
{
	struct ibv_qp_cap cap = { .max_send_wr = RECV_DEPTH,
				  .max_send_sge = 1 };
	struct migr_cq *cqs[] = { &mcq1, &mcq16, &mcq0 };
	int i;

	if (on) {
		setenv("MIGR_REPLAY", "1", 1);
		if (migr_replay_init(&mctx) || !mctx.replay)
			return -1;
	}
	for (i = 0; i < NQP; i++) {
		struct migr_qp *q = &mqp[i];

		if (on) {
			q->replay.slot = -1;
			if (migr_slog_init(&q->slog, &cap, false))
				return -1;
			/* the completions name QP i by fake_qpn[0][i] */
			fake_qp[0].qp_num = fake_qpn[0][i];
			if (migr_replay_track(q))
				return -1;
		} else {
			migr_replay_untrack(q);
			migr_ring_free(&q->slog.ring);
		}
		migr_qp_update_slow(q);
	}
	fake_qp[0].qp_num = 0;
	for (i = 0; i < 3; i++)
		cqs[i]->watch = on ? MIGR_WATCH_REPLAY : 0;
	if (!on)
		migr_replay_free(&mctx);
	return 0;
}

/* The logging state really logs and counts */
static int check_logging(void)
{
	struct ibv_send_wr *bad;

	if (mqp[0].slow != MIGR_SLOW_LOG ||
	    ibv_post_send(&mqp[0].vqp.qp, &swr[5], &bad) ||
	    migr_slog_at(&mqp[0].slog, mqp[0].slog.head - 1)->wr.wr_id != 5)
		return -1;
	fake_cq1[0].seq = 0;
	if (ibv_poll_cq(&mcq1.vcq.cq, 1, wc) != 1 ||
	    migr_replay_count_of(&mqp[0])->sends != 1)
		return -1;
	return 0;
}

/* The switched state really translates: physical below, virtual above */
static int check_translated(void)
{
	struct ibv_send_wr *bad;
	uint32_t l, r;

	if (ibv_post_send(&mqp[0].vqp.qp, &swr[0], &bad))
		return -1;
	fake_last_send(&l, &r);
	if (l != phys_key(1, 0) || r != phys_key(1, 3) || l == lkey[0])
		return -1;
	fake_cq1[1].seq = 0;
	if (ibv_poll_cq(&mcq1.vcq.cq, 1, wc) != 1 ||
	    wc[0].qp_num != mqp[0].vqp.qp.qp_num ||
	    wc[0].qp_num == fake_qpn[1][0])
		return -1;
	return 0;
}

#define TIMED(stmt)                                                            \
	do {                                                                   \
		t0 = bench_t0();                                               \
		for (i = 0; i < batch; i++)                                    \
			stmt;                                                  \
		t1 = bench_t1();                                               \
	} while (0)

/* Mean cycles per call over one batch, the timer's own cost taken out */
static double run_batch(const struct side *s, enum op op, unsigned int base)
{
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	uint64_t t0, t1;
	unsigned int i;

	switch (op) {
	case OP_SEND:
		TIMED(ibv_post_send(s->qp, &swr[(base + i) & (NWR - 1)],
				    &sbad));
		break;
	case OP_RECV:
		TIMED(ibv_post_recv(s->qp, &rwr[(base + i) & (NWR - 1)],
				    &rbad));
		break;
	case OP_POLL1:
		TIMED(ibv_poll_cq(s->cq1, 1, wc));
		break;
	case OP_POLL16:
		TIMED(ibv_poll_cq(s->cq16, 16, wc));
		break;
	default:
		TIMED(ibv_poll_cq(s->cq0, 16, wc));
		break;
	}
	return ((double)(t1 - t0) - overhead) / batch;
}

static void measure(const char *path, const struct side *lower,
		    const struct side *migr)
{
	double *l = calloc(batches, sizeof(*l)),
	       *m = calloc(batches, sizeof(*m));
	unsigned int r;
	int op;

	if (!l || !m)
		exit(2);
	for (op = 0; op < NOPS; op++) {
		double lmed, mmed;

		for (r = 0; r < warmup; r++) {
			run_batch(lower, op, r);
			run_batch(migr, op, r);
		}
		/* alternate which side goes first, so drift hits both alike */
		for (r = 0; r < batches; r++) {
			if (r & 1) {
				l[r] = run_batch(lower, op, r);
				m[r] = run_batch(migr, op, r);
			} else {
				m[r] = run_batch(migr, op, r);
				l[r] = run_batch(lower, op, r);
			}
		}
		lmed = bench_quantile(l, batches, 0.5);
		mmed = bench_quantile(m, batches, 0.5);
		printf("%-10s %-12s %8.1f %8.1f %8.1f %8.1f %8.1f %7.1f%%\n",
		       path, op_name[op], lmed,
		       bench_quantile(l, batches, 0.99), mmed,
		       bench_quantile(m, batches, 0.99), mmed - lmed,
		       100.0 * (mmed - lmed) / lmed);
	}
	free(l);
	free(m);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "batches", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{}
	};
	struct side lower, migr;
	int c, cpu = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			batch = atoi(optarg);
			break;
		case 'n':
			batches = atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [--batch N] [--batches N] [--cpu N]\n",
				argv[0]);
			return 2;
		}
	}
	if (!batch || batches < 2) {
		fprintf(stderr, "--batch and --batches want positive counts\n");
		return 2;
	}
	bench_pin_cpu(cpu);
	if (setup()) {
		fprintf(stderr, "setting up migr's objects failed\n");
		return 1;
	}
	overhead = bench_timer_overhead();
	printf("# host, fake lower provider: %u batches of %u calls per op, timer overhead %.0f cycles per batch\n",
	       batches, batch, overhead);
	printf("# cycles per call (TSC); lower = the fake provider called directly\n");
	printf("%-10s %-12s %8s %8s %8s %8s %8s %8s\n", "path", "op", "lower",
	       "p99", "migr", "p99", "added", "%");

	lower = (struct side){ &fake_qp[0], &fake_cq1[0].cq, &fake_cq16[0].cq,
			       &fake_cq0[0].cq };
	migr = (struct side){ &mqp[0].vqp.qp, &mcq1.vcq.cq, &mcq16.vcq.cq,
			      &mcq0.vcq.cq };
	measure("identity", &lower, &migr);
	if (replay_log(true) || check_logging()) {
		fprintf(stderr, "turning MIGR_REPLAY's log on failed\n");
		return 1;
	}
	measure("replay-log", &lower, &migr);
	if (replay_log(false)) {
		fprintf(stderr, "turning MIGR_REPLAY's log off failed\n");
		return 1;
	}

	if (switch_state() || check_translated()) {
		fprintf(stderr,
			"putting migr's objects in the switched state failed\n");
		return 1;
	}
	lower = (struct side){ &fake_qp[1], &fake_cq1[1].cq, &fake_cq16[1].cq,
			       &fake_cq0[1].cq };
	measure("translated", &lower, &migr);
	return 0;
}
