// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mrdirty: what a device writes into registered memory must survive a
 * CRIU migration with pre-copy. A device's writes set no soft-dirty bit,
 * so an incremental dump that trusts those bits could take a page the
 * device changed after the last pre-dump from that pre-dump: stale. migr's
 * park marks every writable MR's pages written once the MRs are released.
 *
 * usage: mrdirty DEVICE [--gid-index N]
 *
 * Two target regions are registered: one backed by a transparent huge
 * page (2 MiB, the case the kernel leaves unprotected), one by 4 KiB
 * pages. Each round checks that both still hold the previous round's
 * pattern, then RDMA WRITEs the next pattern into each through a QP
 * connected to itself (the device writes them, not the CPU) and waits for
 * both completions. Prints "mrdirty: thp=0|1" once (1: the huge region is
 * a huge page), "mrdirty: rounds=N" each second, and at SIGTERM
 * "mrdirty: OK rounds=N"; exits 1 with "mrdirty: FAIL ..." at the first
 * word that differs or the first failed completion.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_loop.h"

#define HUGE_SIZE (2u << 20)
#define SMALL_SIZE (64u << 10)
/* a park, a dump and a restore lie between a post and its completion */
#define COMPLETION_WAIT_S 300

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	printf("mrdirty: FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t word(uint64_t round, size_t i)
{
	return round << 32 | i;
}

static void fill(uint64_t *p, size_t size, uint64_t round)
{
	size_t i;

	for (i = 0; i < size / 8; i++)
		p[i] = word(round, i);
}

/* 0, or exits naming the first word that is not round's */
static void check(const char *name, const volatile uint64_t *p, size_t size,
		  uint64_t round)
{
	size_t i;

	for (i = 0; i < size / 8; i++) {
		if (p[i] == word(round, i))
			continue;
		printf("mrdirty: FAIL %s region, word %zu: 0x%" PRIx64
		       " instead of 0x%" PRIx64 " (round %" PRIu64 ")\n",
		       name, i, p[i], word(round, i), round);
		exit(1);
	}
}

/* Is [p, p + size) backed by a huge page (AnonHugePages in smaps)? */
static int is_huge(void *p)
{
	unsigned long start, end;
	char line[256];
	int in = 0, huge = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long kb;

		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)p >= start && (uintptr_t)p < end;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			huge = kb >= HUGE_SIZE / 1024;
	}
	if (f)
		fclose(f);
	return huge;
}

static void *huge_region(void)
{
	/* twice the size, to cut a 2 MiB-aligned piece out of it */
	uint8_t *p = mmap(NULL, 2 * HUGE_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		die("mmap");
	a = (uint8_t *)(((uintptr_t)p + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
	if (madvise(a, HUGE_SIZE, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	return a;
}

static void *small_region(void)
{
	void *p = mmap(NULL, SMALL_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	if (madvise(p, SMALL_SIZE, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	return p;
}

static void post_write(struct ibv_qp *qp, struct ibv_mr *src,
		       struct ibv_mr *dst, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src->addr,
			       .length = len,
			       .lkey = src->lkey };
	struct ibv_send_wr wr = { .wr_id = id,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)dst->addr,
					       .rkey = dst->rkey } };
	struct ibv_send_wr *bad;

	errno = ibv_post_send(qp, &wr, &bad);
	if (errno)
		die("ibv_post_send");
}

static void wait_completions(struct ibv_cq *cq, int n)
{
	double end = now_s() + COMPLETION_WAIT_S;
	struct ibv_wc wc;
	int got;

	while (n > 0) {
		got = ibv_poll_cq(cq, 1, &wc);
		if (got < 0)
			die("ibv_poll_cq");
		if (!got) {
			if (now_s() > end) {
				printf("mrdirty: FAIL no completion in %d s\n",
				       COMPLETION_WAIT_S);
				exit(1);
			}
			usleep(100);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("mrdirty: FAIL completion %" PRIu64 ": %s\n",
			       wc.wr_id, ibv_wc_status_str(wc.status));
			exit(1);
		}
		n--;
	}
}

int main(int argc, char **argv)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *src_mr, *huge_mr, *small_mr;
	struct ibv_device **list, *dev = NULL;
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_context *ctx;
	uint64_t round = 0;
	int i, gid_index = 1;
	union ibv_gid gid;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	void *src, *huge, *small;
	double next_print;

	if (argc < 2) {
		fprintf(stderr, "usage: mrdirty DEVICE [--gid-index N]\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--gid-index") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);

	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			dev = list[i];
	if (!dev) {
		printf("mrdirty: FAIL no device %s\n", argv[1]);
		return 1;
	}
	ctx = ibv_open_device(dev);
	if (!ctx)
		die("ibv_open_device");
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		die("ibv_query_gid");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_alloc_pd/ibv_create_cq");
	src = huge_region();
	huge = huge_region();
	small = small_region();
	/* round 0's pattern, written by the CPU */
	fill(huge, HUGE_SIZE, 0);
	fill(small, SMALL_SIZE, 0);
	src_mr = ibv_reg_mr(pd, src, HUGE_SIZE, access);
	huge_mr = ibv_reg_mr(pd, huge, HUGE_SIZE, access);
	small_mr = ibv_reg_mr(pd, small, SMALL_SIZE, access);
	if (!src_mr || !huge_mr || !small_mr)
		die("ibv_reg_mr");
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		die("ibv_create_qp");
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1,
					 .qp_access_flags = access };
		const char *st;

		if (ibv_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("INIT");
		st = rc_loop_connect(qp, qp->qp_num, gid_index, &gid, 0x100,
				     0x100, false);
		if (st)
			die(st);
	}
	printf("mrdirty: thp=%d\n", is_huge(huge));

	next_print = now_s() + 1;
	while (!stop) {
		check("huge", huge, HUGE_SIZE, round);
		check("small", small, SMALL_SIZE, round);
		round++;
		fill(src, HUGE_SIZE, round);
		post_write(qp, src_mr, huge_mr, HUGE_SIZE, 2 * round);
		post_write(qp, src_mr, small_mr, SMALL_SIZE, 2 * round + 1);
		wait_completions(cq, 2);
		if (now_s() >= next_print) {
			printf("mrdirty: rounds=%" PRIu64 "\n", round);
			next_print = now_s() + 1;
		}
	}
	check("huge", huge, HUGE_SIZE, round);
	check("small", small, SMALL_SIZE, round);
	printf("mrdirty: OK rounds=%" PRIu64 "\n", round);
	return 0;
}
