// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mrdirty: what a device writes into registered memory must survive a
 * CRIU migration with pre-copy. A device's writes set no soft-dirty bit
 * (rxe copies through the kernel's mapping of the page, not the process's
 * page table), so an incremental dump that trusts those bits takes a page
 * the device changed after the last pre-dump from that pre-dump: stale.
 * migr's park marks every writable MR's pages written once the MRs are
 * released.
 *
 * usage: mrdirty DEVICE [--gid-index N] [--dereg]
 *
 * Two target regions are registered: one backed by a transparent huge
 * page (2 MiB: clear_refs write-protects and cleans a huge PMD whether
 * pinned or not), one by 4 KiB pages (which the kernel leaves soft-dirty
 * while they are pinned for DMA: clear_refs skips writable pinned PTEs of
 * private mappings). Each round checks that both still hold the previous
 * round's pattern, then RDMA WRITEs the next pattern into each through a
 * QP connected to itself (the device writes them, never the CPU) and
 * waits for both completions. Prints "mrdirty: thp=0|1" once (1: the huge
 * region is a huge page), "mrdirty: rounds=N" each second.
 *
 * The test drives it with signals around a migration:
 * SIGUSR1 (after the pre-dump, before the park): one more round, then no
 *   more writes and no CPU access to the regions; prints "mrdirty: quiet
 *   round=N huge_soft_dirty=D/P small_soft_dirty=D/P thp=0|1" from
 *   /proc/self/pagemap (bit 55), the premise: a huge page the device
 *   wrote after the pre-dump is not soft-dirty. With --dereg the two
 *   target MRs are deregistered here (the park then knows nothing to
 *   mark: the negative control, tests/guest/criu-neg.sh).
 * SIGHUP: prints the same reading again ("mrdirty: look ...", after the
 *   park: the marking made the pages soft-dirty).
 * SIGUSR2 (after the restore): checks every word of both regions against
 *   the quiet round's pattern, prints "mrdirty: restored words intact
 *   round=N" or, per region, how many words are wrong and which round the
 *   first holds, and "mrdirty: FAIL ..." (exit 1); then the rounds go on
 *   (with --dereg, on MRs registered anew).
 * At SIGTERM: "mrdirty: OK rounds=N"; "mrdirty: FAIL ..." (exit 1) at the
 * first word that differs or the first failed completion.
 */
#include <errno.h>
#include <fcntl.h>
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

static volatile sig_atomic_t stop, quiet_asked, look_asked, check_asked;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		quiet_asked = 1;
	else if (sig == SIGHUP)
		look_asked = 1;
	else if (sig == SIGUSR2)
		check_asked = 1;
	else
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

/*
 * The words of [p, p + size) that are not round's: 0, or how many, the
 * first of them and the round it holds printed
 */
static size_t verify(const char *name, const volatile uint64_t *p, size_t size,
		     uint64_t round)
{
	size_t i, bad = 0, first = 0;

	for (i = 0; i < size / 8; i++)
		if (p[i] != word(round, i) && !bad++)
			first = i;
	if (bad)
		printf("mrdirty: %s region: %zu of %zu words wrong; word %zu holds 0x%" PRIx64
		       " (round %" PRIu64 ") instead of round %" PRIu64 "'s\n",
		       name, bad, size / 8, first, p[first], p[first] >> 32,
		       round);
	return bad;
}

/*
 * Of the pages of [p, p + size): how many /proc/self/pagemap says are
 * soft-dirty (bit 55), in *dirty, and present (bit 63), in *present
 */
static void soft_dirty(const void *p, size_t size, unsigned int *dirty,
		       unsigned int *present)
{
	size_t page = sysconf(_SC_PAGESIZE), i;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e;

	*dirty = *present = 0;
	if (fd < 0)
		die("open /proc/self/pagemap");
	for (i = 0; i < size / page; i++) {
		if (pread(fd, &e, sizeof(e),
			  ((uintptr_t)p / page + i) * sizeof(e)) != sizeof(e))
			die("read /proc/self/pagemap");
		*dirty += e >> 55 & 1;
		*present += e >> 63 & 1;
	}
	close(fd);
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
	a = (uint8_t *)(((uintptr_t)p + HUGE_SIZE - 1) &
			~(uintptr_t)(HUGE_SIZE - 1));
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
				  .wr.rdma = { .remote_addr =
						       (uintptr_t)dst->addr,
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

struct target {
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *src_mr, *huge_mr, *small_mr;
	void *src, *huge, *small;
};

#define MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static void register_targets(struct target *t)
{
	t->huge_mr = ibv_reg_mr(t->pd, t->huge, HUGE_SIZE, MR_ACCESS);
	t->small_mr = ibv_reg_mr(t->pd, t->small, SMALL_SIZE, MR_ACCESS);
	if (!t->huge_mr || !t->small_mr)
		die("ibv_reg_mr");
}

/* Check round's words, then have the device write round + 1's */
static uint64_t one_round(struct target *t, uint64_t round)
{
	check("huge", t->huge, HUGE_SIZE, round);
	check("small", t->small, SMALL_SIZE, round);
	round++;
	fill(t->src, HUGE_SIZE, round);
	post_write(t->qp, t->src_mr, t->huge_mr, HUGE_SIZE, 2 * round);
	post_write(t->qp, t->src_mr, t->small_mr, SMALL_SIZE, 2 * round + 1);
	wait_completions(t->cq, 2);
	return round;
}

/* "mrdirty: WHEN huge_soft_dirty=D/P small_soft_dirty=D/P thp=0|1" */
static void report(const struct target *t, const char *when)
{
	unsigned int hd, hp, sd, sp;

	soft_dirty(t->huge, HUGE_SIZE, &hd, &hp);
	soft_dirty(t->small, SMALL_SIZE, &sd, &sp);
	printf("mrdirty: %s huge_soft_dirty=%u/%u small_soft_dirty=%u/%u thp=%d\n",
	       when, hd, hp, sd, sp, is_huge(t->huge));
}

int main(int argc, char **argv)
{
	struct ibv_device **list, *dev = NULL;
	struct ibv_qp_init_attr qa = { 0 };
	struct target t = { 0 };
	struct ibv_context *ctx;
	uint64_t round = 0;
	int i, gid_index = 1;
	bool dereg = false, quiet = false;
	union ibv_gid gid;
	double next_print;
	char when[64];

	if (argc < 2) {
		fprintf(stderr,
			"usage: mrdirty DEVICE [--gid-index N] [--dereg]\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--gid-index") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dereg"))
			dereg = true;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	signal(SIGHUP, on_signal);
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
	t.pd = ibv_alloc_pd(ctx);
	t.cq = t.pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!t.cq)
		die("ibv_alloc_pd/ibv_create_cq");
	t.src = huge_region();
	t.huge = huge_region();
	t.small = small_region();
	/* round 0's pattern, written by the CPU */
	fill(t.huge, HUGE_SIZE, 0);
	fill(t.small, SMALL_SIZE, 0);
	t.src_mr = ibv_reg_mr(t.pd, t.src, HUGE_SIZE, MR_ACCESS);
	if (!t.src_mr)
		die("ibv_reg_mr");
	register_targets(&t);
	qa.send_cq = qa.recv_cq = t.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	t.qp = ibv_create_qp(t.pd, &qa);
	if (!t.qp)
		die("ibv_create_qp");
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1,
					 .qp_access_flags = MR_ACCESS };
		const char *st;

		if (ibv_modify_qp(t.qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("INIT");
		st = rc_loop_connect(t.qp, t.qp->qp_num, gid_index, &gid, 0x100,
				     0x100, false);
		if (st)
			die(st);
	}
	printf("mrdirty: thp=%d\n", is_huge(t.huge));

	next_print = now_s() + 1;
	while (!stop) {
		if (quiet_asked && !quiet) {
			/*
			 * The last words the device writes: from here on
			 * neither it nor the CPU touches the two regions
			 * until the check
			 */
			round = one_round(&t, round);
			quiet = true;
			if (dereg) {
				if (ibv_dereg_mr(t.huge_mr) ||
				    ibv_dereg_mr(t.small_mr))
					die("ibv_dereg_mr");
				t.huge_mr = t.small_mr = NULL;
			}
			snprintf(when, sizeof(when),
				 "quiet round=%" PRIu64 "%s", round,
				 dereg ? " (target MRs deregistered)" : "");
			report(&t, when);
		}
		if (look_asked) {
			look_asked = 0;
			report(&t, "look");
		}
		if (check_asked && quiet) {
			check_asked = 0;
			if (verify("huge", t.huge, HUGE_SIZE, round) +
			    verify("small", t.small, SMALL_SIZE, round)) {
				printf("mrdirty: FAIL words the device wrote before the park are wrong after the restore\n");
				exit(1);
			}
			printf("mrdirty: restored words intact round=%" PRIu64
			       "\n",
			       round);
			if (dereg)
				register_targets(&t);
			quiet = false;
			quiet_asked = 0;
		} else if (check_asked) {
			check_asked = 0;
			printf("mrdirty: a check asked while the device writes: ignored\n");
		}
		if (quiet) {
			usleep(10000);
			continue;
		}
		round = one_round(&t, round);
		if (now_s() >= next_print) {
			printf("mrdirty: rounds=%" PRIu64 "\n", round);
			next_print = now_s() + 1;
		}
	}
	check("huge", t.huge, HUGE_SIZE, round);
	check("small", t.small, SMALL_SIZE, round);
	printf("mrdirty: OK rounds=%" PRIu64 "\n", round);
	return 0;
}
