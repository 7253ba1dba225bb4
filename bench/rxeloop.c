// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migr-bench-rxe: cycles per ibv_post_send, ibv_post_recv and ibv_poll_cq
 * on a real device (soft-RoCE in the test bed) against its migr twin, then
 * again after this process switched itself live to a second device through
 * its own control socket (migr/<pid>), against that device.
 *
 * Each side is an RC pair looping back inside one device: B keeps RECVs
 * posted, A SENDs 64 bytes to B, both CQs are polled one entry at a time.
 * Rounds alternate between the two sides. Every call is timed on its own;
 * polls that found an entry and polls that found none are told apart.
 *
 * usage: migr-bench-rxe [--rounds N] [--gid-index N] [--cpu N]
 *                       DEV MIGR_DEV TARGET_DEV     e.g. rxe0 migr_rxe0 rxe1
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_loop.h"

#include "bench.h"

#define PER_ROUND 16 /* SENDs (and RECVs) per round */
#define MSG 64

enum op { OP_SEND, OP_RECV, OP_POLL1, OP_POLL0, NOPS };

static const char *const op_name[NOPS] = {
	"post_send",
	"post_recv",
	"poll_cq(1)",
	"poll_cq(0)",
};

struct samples {
	double *v[NOPS];
	unsigned int n[NOPS], cap[NOPS];
};

struct pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *a, *b;
	char *buf;
};

static unsigned int rounds = 300;
static int gid_index = 1;
static double overhead;

static void die(const char *what)
{
	fprintf(stderr, "migr-bench-rxe: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "migr-bench-rxe: cannot open %s\n", name);
		exit(1);
	}
	return ctx;
}

static struct ibv_qp *make_qp(struct pair *p)
{
	struct ibv_qp_init_attr init = {
		.send_cq = p->scq,
		.recv_cq = p->rcq,
		.cap = { .max_send_wr = 2 * PER_ROUND,
			 .max_recv_wr = 2 * PER_ROUND,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		/* a switch drains a send queue with a zero-length WRITE */
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(p->pd, &init);

	if (!qp || ibv_modify_qp(qp, &attr,
				 IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("creating a QP");
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest,
		       const union ibv_gid *gid)
{
	const char *state =
		rc_loop_connect(qp, dest, gid_index, gid, 0x10, 0x10, false);

	if (state)
		die(state);
}

static void pair_open(struct pair *p, const char *dev)
{
	union ibv_gid gid;

	p->ctx = open_dev(dev);
	p->buf = calloc(2 * PER_ROUND, MSG);
	p->pd = ibv_alloc_pd(p->ctx);
	if (!p->buf || !p->pd)
		die("allocating");
	p->mr = ibv_reg_mr(p->pd, p->buf, 2 * PER_ROUND * MSG,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	p->scq = ibv_create_cq(p->ctx, 4 * PER_ROUND, NULL, NULL, 0);
	p->rcq = ibv_create_cq(p->ctx, 4 * PER_ROUND, NULL, NULL, 0);
	if (!p->mr || !p->scq || !p->rcq)
		die("registering or creating CQs");
	p->a = make_qp(p);
	p->b = make_qp(p);
	if (ibv_query_gid(p->ctx, 1, gid_index, &gid))
		die("query_gid");
	connect_qp(p->a, p->b->qp_num, &gid);
	connect_qp(p->b, p->a->qp_num, &gid);
}

static void pair_close(struct pair *p)
{
	if (ibv_destroy_qp(p->a) || ibv_destroy_qp(p->b) ||
	    ibv_destroy_cq(p->scq) || ibv_destroy_cq(p->rcq) ||
	    ibv_dereg_mr(p->mr) || ibv_dealloc_pd(p->pd) ||
	    ibv_close_device(p->ctx))
		die("tearing down");
	free(p->buf);
}

static void add(struct samples *s, enum op op, uint64_t t0, uint64_t t1)
{
	if (s->n[op] == s->cap[op]) {
		s->cap[op] = s->cap[op] ? 2 * s->cap[op] : 4096;
		s->v[op] = realloc(s->v[op], s->cap[op] * sizeof(double));
		if (!s->v[op])
			die("realloc");
	}
	s->v[op][s->n[op]++] = (double)(t1 - t0) - overhead;
}

/* Poll cq until want entries came, every call timed; checks each one */
static void reap(struct pair *p, struct ibv_cq *cq, struct ibv_qp *qp,
		 unsigned int want, struct samples *s)
{
	unsigned int got = 0;
	struct ibv_wc wc;

	while (got < want) {
		uint64_t t0 = bench_t0();
		int n = ibv_poll_cq(cq, 1, &wc);
		uint64_t t1 = bench_t1();

		if (n < 0)
			die("poll_cq");
		add(s, n ? OP_POLL1 : OP_POLL0, t0, t1);
		if (!n)
			continue;
		if (wc.status != IBV_WC_SUCCESS || wc.qp_num != qp->qp_num) {
			fprintf(stderr,
				"migr-bench-rxe: bad completion: status %d qpn 0x%x (want 0x%x)\n",
				wc.status, wc.qp_num, qp->qp_num);
			exit(1);
		}
		got++;
	}
}

static void round_trip(struct pair *p, struct samples *s)
{
	struct ibv_sge sge[PER_ROUND];
	struct ibv_send_wr swr, *sbad;
	struct ibv_recv_wr rwr, *rbad;
	unsigned int i;

	for (i = 0; i < PER_ROUND; i++) {
		uint64_t t0, t1;

		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)p->buf + (PER_ROUND + i) * MSG,
			.length = MSG,
			.lkey = p->mr->lkey,
		};
		rwr = (struct ibv_recv_wr){ .wr_id = i,
					    .sg_list = &sge[i],
					    .num_sge = 1 };
		t0 = bench_t0();
		if (ibv_post_recv(p->b, &rwr, &rbad))
			die("post_recv");
		t1 = bench_t1();
		add(s, OP_RECV, t0, t1);
	}
	for (i = 0; i < PER_ROUND; i++) {
		struct ibv_sge ssge = { .addr = (uintptr_t)p->buf + i * MSG,
					.length = MSG,
					.lkey = p->mr->lkey };
		uint64_t t0, t1;

		swr = (struct ibv_send_wr){ .wr_id = i,
					    .sg_list = &ssge,
					    .num_sge = 1,
					    .opcode = IBV_WR_SEND,
					    .send_flags = IBV_SEND_SIGNALED };
		t0 = bench_t0();
		if (ibv_post_send(p->a, &swr, &sbad))
			die("post_send");
		t1 = bench_t1();
		add(s, OP_SEND, t0, t1);
	}
	reap(p, p->scq, p->a, PER_ROUND, s);
	reap(p, p->rcq, p->b, PER_ROUND, s);
}

static void report(const char *path, struct samples *l, struct samples *m)
{
	int op;

	for (op = 0; op < NOPS; op++) {
		double lmed, mmed;

		if (l->n[op] < 2 || m->n[op] < 2) {
			printf("%-10s %-12s (too few samples)\n", path,
			       op_name[op]);
			continue;
		}
		lmed = bench_quantile(l->v[op], l->n[op], 0.5);
		mmed = bench_quantile(m->v[op], m->n[op], 0.5);
		printf("%-10s %-12s %8.0f %8.0f %8.0f %8.0f %8.0f %7.1f%%  (n=%u/%u)\n",
		       path, op_name[op], lmed,
		       bench_quantile(l->v[op], l->n[op], 0.99), mmed,
		       bench_quantile(m->v[op], m->n[op], 0.99), mmed - lmed,
		       100.0 * (mmed - lmed) / lmed, l->n[op], m->n[op]);
		l->n[op] = m->n[op] = 0;
	}
}

static void measure(const char *path, struct pair *lower, struct pair *migr)
{
	static struct samples sl, sm;
	unsigned int r;

	for (r = 0; r < rounds / 10; r++) { /* warm up */
		round_trip(lower, &sl);
		round_trip(migr, &sm);
	}
	memset(sl.n, 0, sizeof(sl.n));
	memset(sm.n, 0, sizeof(sm.n));
	for (r = 0; r < rounds; r++) {
		if (r & 1) {
			round_trip(lower, &sl);
			round_trip(migr, &sm);
		} else {
			round_trip(migr, &sm);
			round_trip(lower, &sl);
		}
	}
	report(path, &sl, &sm);
}

/*
 * Ask this process's own control socket for a live switch; the label of
 * the rows after it: "kept" if every rebuilt object got its number back
 * (migr's rdma_rxe, migr_rxe(7)), else "translated"
 */
static const char *switch_self(const char *target)
{
	unsigned int kept = 0, translated = 1;
	const char *nums;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char req[128], reply[8192];
	size_t len = 0;
	socklen_t slen;
	ssize_t n;
	int fd;

	snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "migr/%d",
		 getpid());
	slen = offsetof(struct sockaddr_un, sun_path) + 1 +
	       strlen(sun.sun_path + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, slen))
		die("connecting to the control socket");
	snprintf(req, sizeof(req), "switch %s\n", target);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		die("writing the switch request");
	while (len < sizeof(reply) - 1 &&
	       (n = read(fd, reply + len, sizeof(reply) - 1 - len)) > 0) {
		len += n;
		if (memchr(reply, '\n', len))
			break;
	}
	reply[len] = 0;
	close(fd);
	if (!strstr(reply, "],\"ok\":true}")) {
		fprintf(stderr, "migr-bench-rxe: switch failed: %s\n", reply);
		exit(1);
	}
	nums = strstr(reply, "\"numbers\":{");
	if (nums)
		sscanf(nums, "\"numbers\":{\"kept\":%u,\"translated\":%u",
		       &kept, &translated);
	printf("# switched to %s: %u objects on their own numbers, %u translated\n",
	       target, kept, translated);
	return kept && !translated ? "kept" : "translated";
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "cpu", required_argument, NULL, 'c' },
		{}
	};
	struct pair lower, migr;
	const char *after;
	int c, cpu = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 3 || !rounds)
		goto usage;
	bench_pin_cpu(cpu);
	overhead = bench_timer_overhead();
	printf("# %s vs %s, then both on %s after a live switch: %u rounds of %d SENDs, timer overhead %.0f cycles\n",
	       argv[optind], argv[optind + 1], argv[optind + 2], rounds,
	       PER_ROUND, overhead);
	printf("# cycles per call (TSC, medians of single calls); lower = the device called directly\n");
	printf("%-10s %-12s %8s %8s %8s %8s %8s %8s\n", "path", "op", "lower",
	       "p99", "migr", "p99", "added", "%");
	fflush(stdout);

	pair_open(&lower, argv[optind]);
	pair_open(&migr, argv[optind + 1]);
	measure("identity", &lower, &migr);
	fflush(stdout);
	/* never traffic on two devices at once: the old pair goes first */
	pair_close(&lower);
	after = switch_self(argv[optind + 2]);
	pair_open(&lower, argv[optind + 2]);
	measure(after, &lower, &migr);
	pair_close(&lower);
	pair_close(&migr);
	return 0;
usage:
	fprintf(stderr,
		"usage: %s [--rounds N] [--gid-index N] [--cpu N] DEV MIGR_DEV TARGET_DEV\n",
		argv[0]);
	return 2;
}
