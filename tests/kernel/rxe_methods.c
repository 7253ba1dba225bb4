// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rxe_methods: migr's rdma_rxe methods (kernel-uapi/rdma/migr_rxe_abi.h)
 * called as any process could, through the uverbs ioctl of a plain rxe
 * context: what they promise, and what they refuse.
 *
 * usage: rxe_methods DEVICE            checks, one line each; exit 1 if
 *                                      any failed, 77 if DEVICE's rxe has
 *                                      no migr methods (the stock module)
 *        rxe_methods DEVICE --fuzz N   N calls with random kinds, values,
 *                                      sizes and flags, then the checks
 *        rxe_methods DEVICE --hold QPN holds a QP numbered QPN (hex) until
 *                                      killed: a number taken on a device
 *                                      a process moves to ("holding" once
 *                                      it has it; exit 1 if it cannot)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/migr_rxe_abi.h>
#include <rdma/rdma_user_ioctl.h>

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int failed, passed;

static void check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s", ok ? "PASS" : "FAIL", name);
	if (fmt) {
		printf(": ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	ok ? passed++ : failed++;
}

/* One method call: 0 or -errno */
static int call(uint16_t method, struct ib_uverbs_attr *attrs, int n)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[4];
	} req = {
		.hdr = { .length = sizeof(req.hdr) + n * sizeof(*attrs),
			 .object_id = MIGR_RXE_OBJECT_MIGR,
			 .method_id = method,
			 .num_attrs = n,
			 .driver_id = RDMA_DRIVER_RXE },
	};

	memcpy(req.attrs, attrs, n * sizeof(*attrs));
	return ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &req) ? -errno : 0;
}

static int query_caps(uint32_t *abi, uint64_t *flags, uint32_t *ranges)
{
	struct ib_uverbs_attr a[] = {
		{ .attr_id = MIGR_RXE_ATTR_CAPS_ABI, .len = sizeof(*abi),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)abi },
		{ .attr_id = MIGR_RXE_ATTR_CAPS_FLAGS, .len = sizeof(*flags),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)flags },
		{ .attr_id = MIGR_RXE_ATTR_CAPS_RANGES,
		  .len = MIGR_RXE_RANGES * sizeof(*ranges),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)ranges },
	};

	return call(MIGR_RXE_METHOD_QUERY_CAPS, a, 3);
}

static int set_next(uint64_t kind, uint32_t value)
{
	struct ib_uverbs_attr a[] = {
		{ .attr_id = MIGR_RXE_ATTR_NEXT_KIND, .len = sizeof(uint64_t),
		  .flags = UVERBS_ATTR_F_MANDATORY, .data = kind },
		{ .attr_id = MIGR_RXE_ATTR_NEXT_VALUE, .len = sizeof(value),
		  .flags = UVERBS_ATTR_F_MANDATORY, .data = value },
	};

	return call(MIGR_RXE_METHOD_SET_NEXT, a, 2);
}

static struct ibv_qp *new_qp(void)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &attr);
}

static void qp_checks(const uint32_t *ranges)
{
	struct ibv_qp *qp = new_qp(), *again, *other;
	uint32_t qpn;
	int err;

	if (!qp) {
		check(false, "qp_created", "%s", strerror(errno));
		return;
	}
	qpn = qp->qp_num;
	/* in use: refused, never another number */
	err = set_next(MIGR_RXE_KIND_QPN, qpn);
	other = new_qp();
	check(!err && !other && errno == EBUSY, "qpn_in_use_refused",
	      "set_next %d, create %s", err,
	      other ? "gave another number" : strerror(errno));
	if (other)
		ibv_destroy_qp(other);
	/* the refusal consumed it: the next create is an ordinary one */
	other = new_qp();
	check(other && other->qp_num != qpn, "qpn_consumed_by_refusal", NULL);
	if (other)
		ibv_destroy_qp(other);
	ibv_destroy_qp(qp);
	err = set_next(MIGR_RXE_KIND_QPN, qpn);
	again = new_qp();
	check(!err && again && again->qp_num == qpn, "qpn_taken_again",
	      "0x%x -> %s0x%x", qpn, again ? "" : "none, ",
	      again ? again->qp_num : 0);
	if (again)
		ibv_destroy_qp(again);
	/* a free number far from the allocator's */
	err = set_next(MIGR_RXE_KIND_QPN, ranges[1] - 7);
	again = new_qp();
	check(!err && again && again->qp_num == ranges[1] - 7,
	      "qpn_chosen_anywhere_in_range", "0x%x", ranges[1] - 7);
	if (again)
		ibv_destroy_qp(again);
	/* 0 takes a number back: the next create is an ordinary one */
	err = set_next(MIGR_RXE_KIND_QPN, ranges[1] - 9);
	if (!err)
		err = set_next(MIGR_RXE_KIND_QPN, 0);
	again = new_qp();
	check(!err && again && again->qp_num != ranges[1] - 9, "qpn_taken_back",
	      "set_next %d, QP 0x%x", err, again ? again->qp_num : 0);
	if (again)
		ibv_destroy_qp(again);
	check(set_next(MIGR_RXE_KIND_QPN, ranges[0] - 1) == -ERANGE &&
		      set_next(MIGR_RXE_KIND_QPN, ranges[1] + 1) == -ERANGE,
	      "qpn_out_of_range_refused", "below 0x%x or above 0x%x",
	      ranges[0], ranges[1]);
}

static void mr_checks(void)
{
	static char buf[8192];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_WRITE),
		      *again;
	uint32_t key, want;
	int err;

	if (!mr) {
		check(false, "mr_registered", "%s", strerror(errno));
		return;
	}
	key = mr->lkey;
	ibv_dereg_mr(mr);
	/* the same index, another low byte: exactly that key */
	want = key ^ 0x5a;
	err = set_next(MIGR_RXE_KIND_MR_KEY, want);
	again = ibv_reg_mr(pd, buf, sizeof(buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	check(!err && again && again->lkey == want && again->rkey == want,
	      "mr_key_taken", "0x%x -> 0x%x/0x%x", want,
	      again ? again->lkey : 0, again ? again->rkey : 0);
	if (again)
		ibv_dereg_mr(again);
}

static void mw_checks(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1), *again;
	uint32_t key;
	int err;

	if (!mw) {
		check(false, "mw_allocated", "%s", strerror(errno));
		return;
	}
	key = mw->rkey;
	ibv_dealloc_mw(mw);
	err = set_next(MIGR_RXE_KIND_MW_KEY, key);
	again = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	check(!err && again && again->rkey == key, "mw_key_taken",
	      "0x%x -> 0x%x", key, again ? again->rkey : 0);
	if (again)
		ibv_dealloc_mw(again);
}

/* Random calls: whatever they return, the kernel must take them */
static void fuzz(long n, const uint32_t *ranges)
{
	uint32_t abi, big[64];
	uint64_t flags;
	long i;

	srandom(n);
	for (i = 0; i < n; i++) {
		struct ib_uverbs_attr a[3] = {};
		int k = random() % 6;

		a[0].attr_id = MIGR_RXE_ATTR_NEXT_KIND + random() % 3;
		a[0].len = (random() % 3) * 4;
		a[0].flags = random() % 4;
		a[0].data = random() % 6;
		a[1].attr_id = MIGR_RXE_ATTR_NEXT_VALUE + random() % 2 - 1;
		a[1].len = random() % 2 ? 4 : random() % 16;
		a[1].data = random() % 2 ? (uint32_t)random() :
					   ranges[random() % MIGR_RXE_RANGES];
		a[2].attr_id = MIGR_RXE_ATTR_CAPS_RANGES;
		a[2].len = random() % sizeof(big);
		a[2].data = (uintptr_t)big;
		call(random() % 2 ? MIGR_RXE_METHOD_SET_NEXT :
				    MIGR_RXE_METHOD_QUERY_CAPS + random() % 3,
		     a, k % 4);
		if (k == 5) {
			struct ibv_qp *qp = new_qp();

			if (qp)
				ibv_destroy_qp(qp);
		}
	}
	check(!query_caps(&abi, &flags, big), "fuzz_survived", "%ld calls",
	      n);
}

static int hold(uint32_t qpn)
{
	struct ibv_qp *qp;
	int err = set_next(MIGR_RXE_KIND_QPN, qpn);

	qp = err ? NULL : new_qp();
	if (!qp || qp->qp_num != qpn) {
		fprintf(stderr, "rxe_methods: cannot hold QP 0x%x: %s\n", qpn,
			err ? strerror(-err) : strerror(errno));
		return 1;
	}
	printf("rxe_methods: holding QP 0x%x\n", qpn);
	fflush(stdout);
	pause();
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t abi = 0, ranges[MIGR_RXE_RANGES];
	struct ibv_device **list;
	uint64_t flags = 0;
	int i, err;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [--fuzz N]\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "rxe_methods: cannot open device %s\n", argv[1]);
		return 2;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq) {
		fprintf(stderr, "rxe_methods: no PD or CQ on %s\n", argv[1]);
		return 2;
	}
	if (argc > 3 && !strcmp(argv[2], "--hold"))
		return hold(strtoul(argv[3], NULL, 16));
	err = query_caps(&abi, &flags, ranges);
	if (err == -EPROTONOSUPPORT) {
		printf("rxe_methods: %s has no migr methods (the stock rdma_rxe)\n",
		       argv[1]);
		return 77;
	}
	check(!err && abi == MIGR_RXE_ABI && (flags & MIGR_RXE_CAP_SET_NEXT),
	      "caps", "abi %u flags 0x%llx: qpn 0x%x-0x%x, mr 0x%x-0x%x, mw 0x%x-0x%x",
	      abi, (unsigned long long)flags, ranges[0], ranges[1], ranges[2],
	      ranges[3], ranges[4], ranges[5]);
	if (err)
		return 1;
	check(set_next(0, ranges[0]) == -EINVAL &&
		      set_next(MIGR_RXE_KIND_MAX + 1, ranges[0]) == -EINVAL,
	      "bad_kind_refused", NULL);
	qp_checks(ranges);
	mr_checks();
	mw_checks();
	/* last: the values it leaves named are for creates no check makes */
	if (argc > 3 && !strcmp(argv[2], "--fuzz"))
		fuzz(atol(argv[3]), ranges);
	printf("rxe_methods: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
