// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rxe_methods: migr's rdma_rxe methods (kernel-uapi/rdma/migr_rxe_abi.h)
 * called as any process could, through the uverbs ioctl of a plain rxe
 * context: what they promise, and what they refuse. The re-point checks
 * use RC QPs of one device talking to each other (never rxe0 to rxe1).
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
 *        rxe_methods DEVICE --unprivileged
 *                                      as an ordinary user: the bounds on
 *                                      what it holds (exit 2 as root)
 */
#define _GNU_SOURCE /* strerrorname_np */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
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

/* One method call (up to 8 attributes) on the context of fd: 0 or -errno */
static int call_fd(int fd, uint16_t method, struct ib_uverbs_attr *attrs, int n)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[8];
	} req = {
		.hdr = { .object_id = MIGR_RXE_OBJECT_MIGR,
			 .method_id = method,
			 .driver_id = RDMA_DRIVER_RXE },
	};

	if (n > 8)
		n = 8;
	req.hdr.length = sizeof(req.hdr) + n * sizeof(*attrs);
	req.hdr.num_attrs = n;
	memcpy(req.attrs, attrs, n * sizeof(*attrs));
	return ioctl(fd, RDMA_VERBS_IOCTL, &req) ? -errno : 0;
}

static int call(uint16_t method, struct ib_uverbs_attr *attrs, int n)
{
	return call_fd(ctx->cmd_fd, method, attrs, n);
}

static int query_caps(uint32_t *abi, uint64_t *flags, uint32_t *ranges)
{
	struct ib_uverbs_attr a[] = {
		{ .attr_id = MIGR_RXE_ATTR_CAPS_ABI,
		  .len = sizeof(*abi),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)abi },
		{ .attr_id = MIGR_RXE_ATTR_CAPS_FLAGS,
		  .len = sizeof(*flags),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)flags },
		{ .attr_id = MIGR_RXE_ATTR_CAPS_RANGES,
		  .len = MIGR_RXE_RANGES * sizeof(*ranges),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)ranges },
	};

	return call(MIGR_RXE_METHOD_QUERY_CAPS, a, 3);
}

/* SET_NEXT on the context of fd */
static int set_next_fd(int fd, uint64_t kind, uint32_t value)
{
	struct ib_uverbs_attr a[] = {
		{ .attr_id = MIGR_RXE_ATTR_NEXT_KIND,
		  .len = sizeof(uint64_t),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = kind },
		{ .attr_id = MIGR_RXE_ATTR_NEXT_VALUE,
		  .len = sizeof(value),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = value },
	};

	return call_fd(fd, MIGR_RXE_METHOD_SET_NEXT, a, 2);
}

static int set_next(uint64_t kind, uint32_t value)
{
	return set_next_fd(ctx->cmd_fd, kind, value);
}

static struct ibv_qp *new_qp(void)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
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
	      "qpn_out_of_range_refused", "below 0x%x or above 0x%x", ranges[0],
	      ranges[1]);
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

/*
 * RESERVE, UNRESERVE or CLAIM of n values on fd's context: held (out)
 * and token (in) passed when not NULL
 */
static int numbers_call(int fd, uint16_t method, uint64_t kind,
			const uint32_t *values, int n, uint32_t *held,
			const uint64_t *token)
{
	struct ib_uverbs_attr a[4] = {
		{ .attr_id = MIGR_RXE_ATTR_RESERVE_KIND,
		  .len = sizeof(uint64_t),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = kind },
		{ .attr_id = MIGR_RXE_ATTR_RESERVE_VALUES,
		  .len = n * sizeof(*values),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)values },
	};
	int k = 2;

	/* values that fit are passed inline, as libibverbs passes them */
	if (n * sizeof(*values) <= sizeof(a[1].data)) {
		a[1].data = 0;
		memcpy(&a[1].data, values, n * sizeof(*values));
	}
	if (held)
		a[k++] = (struct ib_uverbs_attr){
			.attr_id = MIGR_RXE_ATTR_RESERVE_HELD,
			.len = sizeof(*held),
			.flags = UVERBS_ATTR_F_MANDATORY,
			.data = (uintptr_t)held
		};
	if (token)
		a[k++] = (struct ib_uverbs_attr){
			.attr_id = MIGR_RXE_ATTR_RESERVE_TOKEN,
			.len = sizeof(*token),
			.flags = UVERBS_ATTR_F_MANDATORY,
			.data = *token
		};
	return call_fd(fd, method, a, k);
}

/* RESERVE (held: out) or UNRESERVE (held NULL) of n values on fd's context */
static int reserve_fd(int fd, uint64_t kind, const uint32_t *values, int n,
		      uint32_t *held)
{
	return numbers_call(
		fd, held ? MIGR_RXE_METHOD_RESERVE : MIGR_RXE_METHOD_UNRESERVE,
		kind, values, n, held, NULL);
}

/* Another context on the same device: a second process, as far as rxe sees */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static bool side_open(struct side *o)
{
	o->ctx = ibv_open_device(ctx->device);
	o->pd = o->ctx ? ibv_alloc_pd(o->ctx) : NULL;
	o->cq = o->pd ? ibv_create_cq(o->ctx, 4, NULL, NULL, 0) : NULL;
	return o->cq;
}

static void side_close(struct side *o)
{
	if (o->cq)
		ibv_destroy_cq(o->cq);
	if (o->pd)
		ibv_dealloc_pd(o->pd);
	if (o->ctx)
		ibv_close_device(o->ctx);
	memset(o, 0, sizeof(*o));
}

/* A QP of o's asked for qpn: its number, or 0 (errno: why) */
static uint32_t side_qp_at(struct side *o, uint32_t qpn)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = o->cq,
		.recv_cq = o->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;
	int err = set_next_fd(o->ctx->cmd_fd, MIGR_RXE_KIND_QPN, qpn);

	if (err) {
		errno = -err;
		return 0;
	}
	qp = ibv_create_qp(o->pd, &attr);
	if (!qp)
		return 0;
	qpn = qp->qp_num;
	ibv_destroy_qp(qp);
	return qpn;
}

/*
 * Reservations: numbers held for one context are refused to another,
 * taken by a create of the holder, given back by UNRESERVE and by the
 * holder's close; the refusals name their reason
 */
static void reserve_checks(const uint32_t *ranges, uint64_t flags)
{
	uint32_t x = ranges[1] - 21, y = ranges[1] - 23, z = ranges[1] - 25;
	uint32_t held = 0, got, vals[3], *many;
	struct side o = {}, h = {};
	struct ibv_qp *qp;
	int err, err2;

	if (!(flags & MIGR_RXE_CAP_RESERVE)) {
		check(false, "reserve_offered", "flags 0x%llx",
		      (unsigned long long)flags);
		return;
	}
	if (!side_open(&o)) {
		check(false, "second_context", "%s", strerror(errno));
		return;
	}
	err = reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_QPN, &x, 1, &held);
	check(!err && held == 1, "reserve_held", "0x%x: %d, held %u", x, err,
	      held);
	got = side_qp_at(&o, x);
	check(!got && errno == EBUSY, "reserved_refused_to_another",
	      "0x%x -> %s", x, got ? "taken" : strerror(errno));
	got = set_next(MIGR_RXE_KIND_QPN, x) ? 0 :
	      (qp = new_qp())		     ? qp->qp_num :
					       0;
	check(got == x, "reserved_taken_by_holder", "0x%x -> 0x%x", x, got);
	if (got)
		ibv_destroy_qp(qp);
	/* taken once: a destroyed QP's number is free for anyone again */
	got = side_qp_at(&o, x);
	check(got == x, "taken_then_free", "0x%x -> 0x%x", x, got);

	/* one in use is skipped, one twice counts once */
	qp = new_qp();
	vals[0] = y;
	vals[1] = qp ? qp->qp_num : y;
	vals[2] = y;
	err = reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_QPN, vals, 3, &held);
	check(!err && held == 2, "in_use_skipped_twice_once",
	      "%d, held %u of 3 (want 2: 0x%x twice, 0x%x in use)", err, held,
	      y, vals[1]);
	if (qp)
		ibv_destroy_qp(qp);
	err = reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_QPN, &y, 1, NULL);
	got = side_qp_at(&o, y);
	check(!err && got == y, "unreserve_gives_back", "%d, 0x%x -> 0x%x", err,
	      y, got);

	/* a holder's close gives back what it holds */
	if (side_open(&h)) {
		err = reserve_fd(h.ctx->cmd_fd, MIGR_RXE_KIND_QPN, &z, 1,
				 &held);
		got = side_qp_at(&o, z);
		err2 = errno;
		side_close(&h);
		check(!err && held == 1 && !got && err2 == EBUSY,
		      "held_until_close", "%d, held %u, 0x%x -> %s", err, held,
		      z, got ? "taken" : strerror(err2));
		got = side_qp_at(&o, z);
		check(got == z, "close_gives_back", "0x%x -> 0x%x", z, got);
	}

	/* an MR key: its index held, the key of the holder's choice taken */
	{
		static char buf[4096];
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
					       IBV_ACCESS_LOCAL_WRITE);
		uint32_t key = mr ? (mr->lkey ^ 0x33) : 0;

		if (mr)
			ibv_dereg_mr(mr);
		err = reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_MR_KEY, &key, 1,
				 &held);
		mr = !err && !set_next(MIGR_RXE_KIND_MR_KEY, key) ?
			     ibv_reg_mr(pd, buf, sizeof(buf),
					IBV_ACCESS_LOCAL_WRITE) :
			     NULL;
		check(mr && held == 1 && mr->lkey == key,
		      "reserved_mr_key_taken", "0x%x -> 0x%x", key,
		      mr ? mr->lkey : 0);
		if (mr)
			ibv_dereg_mr(mr);
	}

	/* refusals */
	vals[0] = ranges[1] + 1;
	check(reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_QPN, vals, 1, &held) ==
		      -ERANGE,
	      "reserve_out_of_range_refused", NULL);
	vals[0] = x;
	check(reserve_fd(ctx->cmd_fd, 0, vals, 1, &held) == -EINVAL &&
		      reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_MAX + 1, vals, 1,
				 &held) == -EINVAL,
	      "reserve_bad_kind_refused", NULL);
	many = calloc(MIGR_RXE_RESERVE_MAX + 1, sizeof(*many));
	if (many) {
		for (got = 0; got <= MIGR_RXE_RESERVE_MAX; got++)
			many[got] = x;
		err = reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_QPN, many,
				 MIGR_RXE_RESERVE_MAX + 1, &held);
		check(err == -EINVAL, "reserve_too_many_refused", "%d", err);
		free(many);
	}
	err = reserve_fd(ctx->cmd_fd, MIGR_RXE_KIND_QPN, vals, 0, &held);
	check(err == -EINVAL, "reserve_empty_refused", "%d", err);
	side_close(&o);
}

/*
 * Hand-over: numbers held under a token go to the context that presents
 * it (the process a destination restores), and to it alone; they outlive
 * their first holder and end with their new one
 */
static void claim_checks(const uint32_t *ranges, uint64_t flags)
{
	uint32_t q1 = ranges[1] - 31, q2 = ranges[1] - 33, q3 = ranges[1] - 35;
	uint64_t token = 0x6d6967722d31, other = token ^ 0x100, zero = 0;
	uint32_t vals[3] = { q1, q2, q3 }, held = 0, got;
	struct side h = {}, a = {}, b = {};
	int err, err2;

	if (!(flags & MIGR_RXE_CAP_CLAIM)) {
		check(false, "claim_offered", "flags 0x%llx",
		      (unsigned long long)flags);
		return;
	}
	if (!side_open(&h) || !side_open(&a) || !side_open(&b)) {
		check(false, "three_contexts", "%s", strerror(errno));
		goto out;
	}
	err = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, vals, 2, &held, &token);
	check(!err && held == 2, "reserve_under_token", "%d, held %u", err,
	      held);
	err = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, &q3, 1, &held, &other);
	check(err == -EINVAL, "second_token_refused", "%d", err);

	err = numbers_call(a.ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM,
			   MIGR_RXE_KIND_QPN, vals, 2, &held, &other);
	got = side_qp_at(&a, q1);
	err2 = errno;
	check(!err && !held && !got && err2 == EBUSY,
	      "claim_wrong_token_takes_nothing", "%d, held %u, 0x%x -> %s", err,
	      held, q1, got ? "taken" : strerror(err2));
	/* q3 is held by no one: passed by */
	err = numbers_call(a.ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM,
			   MIGR_RXE_KIND_QPN, vals, 3, &held, &token);
	check(!err && held == 2, "claim_takes_held",
	      "%d, held %u of 3 (want 2)", err, held);
	got = side_qp_at(&a, q1);
	check(got == q1, "claimed_taken_by_claimer", "0x%x -> 0x%x", q1, got);
	err = numbers_call(b.ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM,
			   MIGR_RXE_KIND_QPN, vals, 3, &held, &token);
	check(!err && !held, "claimed_once", "%d, held %u", err, held);

	/* the holder gone, the claimer keeps q2; its end gives it back */
	side_close(&h);
	got = side_qp_at(&b, q2);
	err2 = errno;
	check(!got && err2 == EBUSY, "claimed_outlives_holder", "0x%x -> %s",
	      q2, got ? "taken" : strerror(err2));
	side_close(&a);
	got = side_qp_at(&b, q2);
	check(got == q2, "claimer_close_gives_back", "0x%x -> 0x%x", q2, got);

	/* an MR key, claimed by this context and taken by its registration */
	if (side_open(&h)) {
		static char buf[4096];
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
					       IBV_ACCESS_LOCAL_WRITE);
		uint32_t key = mr ? (mr->lkey ^ 0x55) : 0, held2 = 0;

		if (mr)
			ibv_dereg_mr(mr);
		err = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
				   MIGR_RXE_KIND_MR_KEY, &key, 1, &held,
				   &token);
		err2 = numbers_call(ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM,
				    MIGR_RXE_KIND_MR_KEY, &key, 1, &held2,
				    &token);
		side_close(&h);
		mr = !err && !err2 && !set_next(MIGR_RXE_KIND_MR_KEY, key) ?
			     ibv_reg_mr(pd, buf, sizeof(buf),
					IBV_ACCESS_LOCAL_WRITE) :
			     NULL;
		check(mr && held == 1 && held2 == 1 && mr->lkey == key,
		      "claimed_mr_key_taken", "%d/%d, 0x%x -> 0x%x", err, err2,
		      key, mr ? mr->lkey : 0);
		if (mr)
			ibv_dereg_mr(mr);
	}

	/* refusals: a token of 0, a claim without one, a bad kind */
	err = numbers_call(b.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, &q3, 1, &held, &zero);
	err2 = numbers_call(b.ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM,
			    MIGR_RXE_KIND_QPN, &q3, 1, &held, &zero);
	check(err == -EINVAL && err2 == -EINVAL, "token_zero_refused",
	      "reserve %d, claim %d", err, err2);
	err = numbers_call(b.ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM,
			   MIGR_RXE_KIND_QPN, &q3, 1, &held, NULL);
	err2 = numbers_call(b.ctx->cmd_fd, MIGR_RXE_METHOD_CLAIM, 0, &q3, 1,
			    &held, &token);
	check(err == -EINVAL && err2 == -EINVAL,
	      "claim_without_token_or_kind_refused", "%d, %d", err, err2);
out:
	side_close(&h);
	side_close(&a);
	side_close(&b);
}

/*
 * RESERVE of n values in calls of up to MIGR_RXE_RESERVE_MAX (under
 * token if not NULL), or CLAIM of them (claim): 0 or the first call's
 * -errno; *held: the sum of the calls' HELD
 */
static int numbers_many(int fd, bool claim, uint64_t kind,
			const uint32_t *values, int n, uint32_t *held,
			const uint64_t *token)
{
	uint32_t one;
	int k, err;

	*held = 0;
	for (; n > 0; values += k, n -= k) {
		k = n < MIGR_RXE_RESERVE_MAX ? n : MIGR_RXE_RESERVE_MAX;
		one = 0;
		err = numbers_call(fd,
				   claim ? MIGR_RXE_METHOD_CLAIM :
					   MIGR_RXE_METHOD_RESERVE,
				   kind, values, k, &one, token);
		if (err)
			return err;
		*held += one;
	}
	return 0;
}

/* count QP numbers from first: first, first + 1, ... */
static uint32_t *qpn_run(uint32_t first, int count)
{
	uint32_t *v = calloc(count, sizeof(*v));
	int i;

	for (i = 0; v && i < count; i++)
		v[i] = first + i;
	return v;
}

/*
 * The restored process, as an ordinary user: a child that drops root
 * opens a context of its own and claims n numbers held under token (more
 * than an unprivileged context may hold itself), then takes the first;
 * its exit status says what went wrong (0: nothing)
 */
static int unprivileged_claim(const uint32_t *values, int n, uint64_t token)
{
	uint32_t held = 0;
	struct side c = {};
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (!side_open(&c))
			_exit(11);
		if (numbers_many(c.ctx->cmd_fd, true, MIGR_RXE_KIND_QPN, values,
				 n, &held, &token))
			_exit(12);
		if (held != (uint32_t)n)
			_exit(13);
		/* its own: the quota of RESERVE does not bound them */
		if (side_qp_at(&c, values[0]) != values[0])
			_exit(14);
		side_close(&c);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

/*
 * The bounds on held numbers (MIGR_RXE_HOLD_MAX): a privileged context
 * (this one runs as root) holds a migration's numbers, MIGR_RXE_HOLD_MAX,
 * and no more; a refused call holds none of its values; the hold is
 * claimed by an unprivileged context, whatever its own bound, and given
 * back at its end. The unprivileged bounds: rxe_methods --unprivileged.
 */
static void bound_checks(const uint32_t *ranges, uint64_t flags)
{
	/* far from the allocator and from every other check's numbers */
	uint32_t base = ranges[0] + (ranges[1] - ranges[0]) / 2;
	uint32_t *v = qpn_run(base, MIGR_RXE_HOLD_MAX + 16), held = 0, got;
	uint64_t token = 0x6d6967722d33;
	struct side h = {}, o = {};
	int err, err2;

	check(flags & MIGR_RXE_CAP_HOLD_BOUND, "hold_bound_offered",
	      "flags 0x%llx", (unsigned long long)flags);
	if (!v || !side_open(&h) || !side_open(&o)) {
		check(false, "bound_contexts", "%s", strerror(errno));
		goto out;
	}
	err = numbers_many(h.ctx->cmd_fd, false, MIGR_RXE_KIND_QPN, v,
			   MIGR_RXE_HOLD_MAX, &held, &token);
	check(!err && held == MIGR_RXE_HOLD_MAX, "privileged_holds_migration",
	      "%d, held %u of %d", err, held, MIGR_RXE_HOLD_MAX);
	err = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, &v[MIGR_RXE_HOLD_MAX], 1, &held,
			   &token);
	got = side_qp_at(&o, v[MIGR_RXE_HOLD_MAX]);
	check(err == -EDQUOT && got == v[MIGR_RXE_HOLD_MAX],
	      "privileged_bound_refused", "one more: %s, 0x%x -> 0x%x",
	      strerror(-err), v[MIGR_RXE_HOLD_MAX], got);
	/* room for 10: a call of 11 (10 new) holds none of them */
	err = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_UNRESERVE,
			   MIGR_RXE_KIND_QPN, v, 10, NULL, NULL);
	err2 = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			    MIGR_RXE_KIND_QPN, &v[MIGR_RXE_HOLD_MAX + 1], 11,
			    &held, &token);
	got = side_qp_at(&o, v[MIGR_RXE_HOLD_MAX + 1]);
	check(!err && err2 == -EDQUOT && got == v[MIGR_RXE_HOLD_MAX + 1],
	      "refused_call_holds_none", "%d, %s, 0x%x -> 0x%x", err,
	      strerror(-err2), v[MIGR_RXE_HOLD_MAX + 1], got);
	err = numbers_call(h.ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, v, 10, &held, &token);
	check(!err && held == 10, "bound_room_again", "%d, held %u of 10", err,
	      held);
	err = unprivileged_claim(v, MIGR_RXE_HOLD_MAX, token);
	got = side_qp_at(&o, v[1]);
	check(!err && got == v[1], "unprivileged_claims_migration",
	      "child %d (10 setuid, 11 open, 12 claim, 13 held, 14 create), 0x%x -> 0x%x",
	      err, v[1], got);
out:
	side_close(&h);
	side_close(&o);
	free(v);
}

/*
 * rxe_methods DEVICE --unprivileged, as an ordinary user: a context holds
 * MIGR_RXE_HOLD_MAX_UNPRIV numbers and no more (EDQUOT, and the refused
 * call holds none); contexts together hold MIGR_RXE_HOLD_MAX_DEV_UNPRIV
 * on the device and no more (ENOSPC); meanwhile creates succeed, and a
 * context's end gives its numbers back
 */
#define UNPRIV_CTXS                                                            \
	(MIGR_RXE_HOLD_MAX_DEV_UNPRIV / MIGR_RXE_HOLD_MAX_UNPRIV + 1)

static int unprivileged(const uint32_t *ranges)
{
	uint32_t base = ranges[0] + (ranges[1] - ranges[0]) / 4, held, got,
		 total = 0, *v;
	struct side c[UNPRIV_CTXS] = {}, o = {};
	int err = 0, err2, i;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	static char buf[4096];

	if (geteuid() == 0) {
		fprintf(stderr,
			"rxe_methods: --unprivileged runs as an ordinary user (setpriv --reuid=65534 ...)\n");
		return 2;
	}
	v = qpn_run(base, UNPRIV_CTXS * MIGR_RXE_HOLD_MAX_UNPRIV + 1);
	for (i = 0; i < UNPRIV_CTXS; i++)
		if (!v || !side_open(&c[i])) {
			check(false, "unprivileged_contexts", "%d: %s", i,
			      strerror(errno));
			goto out;
		}
	if (!side_open(&o)) {
		check(false, "unprivileged_contexts", "%s", strerror(errno));
		goto out;
	}
	err = numbers_call(c[0].ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, v, MIGR_RXE_HOLD_MAX_UNPRIV,
			   &held, NULL);
	check(!err && held == MIGR_RXE_HOLD_MAX_UNPRIV,
	      "unprivileged_holds_its_quota", "%d, held %u of %d", err, held,
	      MIGR_RXE_HOLD_MAX_UNPRIV);
	if (!err)
		total += held;
	err = numbers_call(c[0].ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, &v[MIGR_RXE_HOLD_MAX_UNPRIV], 1,
			   &held, NULL);
	got = side_qp_at(&o, v[MIGR_RXE_HOLD_MAX_UNPRIV]);
	check(err == -EDQUOT && got == v[MIGR_RXE_HOLD_MAX_UNPRIV],
	      "unprivileged_quota_refused", "one more: %s, 0x%x -> 0x%x",
	      strerror(-err), v[MIGR_RXE_HOLD_MAX_UNPRIV], got);
	if (!err)
		total++;
	/* a fresh context's call of one more than the quota: none held */
	err = numbers_call(c[1].ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
			   MIGR_RXE_KIND_QPN, &v[MIGR_RXE_HOLD_MAX_UNPRIV],
			   MIGR_RXE_HOLD_MAX_UNPRIV + 1, &held, NULL);
	got = side_qp_at(&o, v[MIGR_RXE_HOLD_MAX_UNPRIV + 1]);
	check(err == -EDQUOT && got == v[MIGR_RXE_HOLD_MAX_UNPRIV + 1],
	      "unprivileged_refused_call_holds_none", "%s, 0x%x -> 0x%x",
	      strerror(-err), v[MIGR_RXE_HOLD_MAX_UNPRIV + 1], got);
	if (!err)
		total += held;
	/* more contexts: the device's unprivileged holds fill, then refuse */
	for (i = 1, err = 0; i < UNPRIV_CTXS - 1 && !err; i++) {
		err = numbers_call(c[i].ctx->cmd_fd, MIGR_RXE_METHOD_RESERVE,
				   MIGR_RXE_KIND_QPN,
				   &v[i * MIGR_RXE_HOLD_MAX_UNPRIV],
				   MIGR_RXE_HOLD_MAX_UNPRIV, &held, NULL);
		if (!err)
			total += held;
	}
	err2 = numbers_call(c[UNPRIV_CTXS - 1].ctx->cmd_fd,
			    MIGR_RXE_METHOD_RESERVE, MIGR_RXE_KIND_QPN,
			    &v[(UNPRIV_CTXS - 1) * MIGR_RXE_HOLD_MAX_UNPRIV], 1,
			    &held, NULL);
	check(!err && total == MIGR_RXE_HOLD_MAX_DEV_UNPRIV && err2 == -ENOSPC,
	      "device_unprivileged_bound_refused",
	      "%d contexts hold %u (%s), one more: %s", UNPRIV_CTXS - 1, total,
	      strerror(-err), strerror(-err2));
	/* every other create succeeds meanwhile */
	qp = ibv_create_qp(o.pd, &(struct ibv_qp_init_attr){
					 .send_cq = o.cq,
					 .recv_cq = o.cq,
					 .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 1,
						  .max_recv_wr = 1,
						  .max_send_sge = 1,
						  .max_recv_sge = 1 } });
	got = side_qp_at(&o, ranges[1] - 41);
	mr = ibv_reg_mr(o.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	check(qp && got == ranges[1] - 41 && mr, "unprivileged_creates_succeed",
	      "QP %s, QP at 0x%x -> 0x%x, MR %s", qp ? "created" : "refused",
	      ranges[1] - 41, got, mr ? "registered" : "refused");
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	/*
	 * The holders' end gives all back, to the device's count too: as
	 * many contexts hold the device's whole unprivileged share again
	 */
	for (i = 0; i < UNPRIV_CTXS; i++)
		side_close(&c[i]);
	for (i = 0, total = 0, err = 0; i < UNPRIV_CTXS - 1 && !err; i++) {
		err = side_open(&c[i]) ?
			      numbers_call(c[i].ctx->cmd_fd,
					   MIGR_RXE_METHOD_RESERVE,
					   MIGR_RXE_KIND_QPN,
					   &v[i * MIGR_RXE_HOLD_MAX_UNPRIV],
					   MIGR_RXE_HOLD_MAX_UNPRIV, &held,
					   NULL) :
			      -errno;
		if (!err)
			total += held;
	}
	check(!err && total == MIGR_RXE_HOLD_MAX_DEV_UNPRIV,
	      "unprivileged_close_gives_back", "%d contexts hold %u again (%s)",
	      i, total, strerror(-err));
out:
	for (i = 0; i < UNPRIV_CTXS; i++)
		side_close(&c[i]);
	side_close(&o);
	free(v);
	printf("rxe_methods: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
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

/*
 * Re-point: RC QPs of their own CQ on this device, buffers in 64-byte
 * slots of one MR, addressed by the device's IPv4-mapped GIDs: gid, and
 * gid2 for the QP a re-pointed one is given (another address of the
 * device if it has one, kernel-methods.sh adds it; else gid again)
 */
static union ibv_gid gid, gid2;
static int gid_idx = -1, gid2_idx = -1;
static char tbuf[64 * 64];
static struct ibv_mr *tmr;

struct rc {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
};

static bool find_gid(void)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	union ibv_gid g;
	int i, tries;

	/* a second address may take a moment to appear in the GID table */
	for (tries = 0; tries < 30 && gid2_idx < 0; tries++) {
		if (tries)
			usleep(100000);
		for (i = 0; i < 16; i++) {
			if (ibv_query_gid(ctx, 1, i, &g) ||
			    memcmp(g.raw, v4, sizeof(v4)))
				continue;
			if (gid_idx < 0) {
				gid = g;
				gid_idx = i;
			} else if (i != gid_idx) {
				gid2 = g;
				gid2_idx = i;
				break;
			}
		}
		if (gid_idx < 0)
			return false;
	}
	if (gid2_idx < 0) {
		gid2 = gid;
		gid2_idx = gid_idx;
	}
	printf("rxe_methods: re-point on GID %d (%u.%u.%u.%u), peers on GID %d (%u.%u.%u.%u)\n",
	       gid_idx, gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15],
	       gid2_idx, gid2.raw[12], gid2.raw[13], gid2.raw[14],
	       gid2.raw[15]);
	return true;
}

static bool rc_new(struct rc *r, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = type,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	r->qp = NULL;
	r->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!r->cq)
		return false;
	attr.send_cq = attr.recv_cq = r->cq;
	r->qp = ibv_create_qp(pd, &attr);
	return r->qp;
}

static void rc_free(struct rc *r)
{
	if (r->qp)
		ibv_destroy_qp(r->qp);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	r->qp = NULL;
	r->cq = NULL;
}

/*
 * The retry count of the next RC QPs brought to RTS: 7, rxe's "retry for
 * ever"; less for a QP whose sends are to fail
 */
static int rc_retry_cnt = 7;

/*
 * An RC QP up to state upto (from RESET or INIT), from the device's GID
 * sidx to the QP dest at dgid
 */
static int rc_connect_at(struct ibv_qp *qp, int sidx, const union ibv_gid *dgid,
			 uint32_t dest, uint32_t sq_psn, uint32_t rq_psn,
			 enum ibv_qp_state upto)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int err;

	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS);
	if (err || upto == IBV_QPS_INIT)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = sidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	if (err || upto == IBV_QPS_RTR)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = rc_retry_cnt;
	a.rnr_retry = 7; /* an RNR wait lasts until a receive is posted */
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The same from and to gid */
static int rc_connect(struct ibv_qp *qp, uint32_t dest, uint32_t sq_psn,
		      uint32_t rq_psn, enum ibv_qp_state upto)
{
	return rc_connect_at(qp, gid_idx, &gid, dest, sq_psn, rq_psn, upto);
}

static int ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = 0x11111111 };

	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int post_recv(struct ibv_qp *qp, int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(tbuf + 64 * slot),
			       .length = 64,
			       .lkey = tmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	memset(tbuf + 64 * slot, 0, 64);
	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, int slot, const char *msg)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(tbuf + 64 * slot),
			       .length = strlen(msg) + 1,
			       .lkey = tmr->lkey };
	struct ibv_send_wr wr = { .wr_id = slot,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	snprintf(tbuf + 64 * slot, 64, "%s", msg);
	return ibv_post_send(qp, &wr, &bad);
}

/* One completion of cq within ms milliseconds: 0, or -1 */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	int i, n;

	for (i = 0; i < ms; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n > 0 ? 0 : -1;
		usleep(1000);
	}
	return -1;
}

/*
 * from sends msg (slot sslot) to to, into its receive at slot rslot: both
 * ends complete, the bytes arrive; "" or what went wrong
 */
static const char *transfer(struct rc *from, struct rc *to, int sslot,
			    int rslot, const char *msg)
{
	static char why[128];
	struct ibv_wc wc;

	if (post_send(from->qp, sslot, msg))
		return "post_send failed";
	if (wait_wc(from->cq, &wc, 5000))
		return "no send completion";
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND) {
		snprintf(why, sizeof(why), "send completed with %s",
			 ibv_wc_status_str(wc.status));
		return why;
	}
	if (wait_wc(to->cq, &wc, 5000))
		return "no receive completion";
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.wr_id != (uint64_t)rslot || wc.qp_num != to->qp->qp_num ||
	    strcmp(tbuf + 64 * rslot, msg)) {
		snprintf(why, sizeof(why),
			 "receive %s, wr_id %llu (want %d), qp 0x%x, \"%.20s\"",
			 ibv_wc_status_str(wc.status),
			 (unsigned long long)wc.wr_id, rslot, wc.qp_num,
			 tbuf + 64 * rslot);
		return why;
	}
	return "";
}

/* qp (its own peer) sends to itself: a send and a receive complete */
static const char *self_transfer(struct rc *q)
{
	struct ibv_wc wc[2];
	int i, n = 0, sends = 0, recvs = 0;

	if (post_recv(q->qp, 50) || post_send(q->qp, 51, "to itself"))
		return "post failed";
	for (i = 0; i < 5000 && n < 2; i++) {
		int got = ibv_poll_cq(q->cq, 2 - n, wc + n);

		if (got < 0)
			return "poll_cq failed";
		n += got;
		if (n < 2)
			usleep(1000);
	}
	for (i = 0; i < n; i++) {
		sends += wc[i].status == IBV_WC_SUCCESS &&
			 wc[i].opcode == IBV_WC_SEND;
		recvs += wc[i].status == IBV_WC_SUCCESS &&
			 wc[i].opcode == IBV_WC_RECV && wc[i].wr_id == 50;
	}
	return sends == 1 && recvs == 1 &&
			       !strcmp(tbuf + 64 * 50, "to itself") ?
		       "" :
		       "no send and receive completions";
}

static int repoint(uint64_t handle, const union ibv_gid *dgid, uint32_t qpn,
		   uint32_t sq_psn, uint32_t rq_psn)
{
	struct ib_uverbs_attr a[] = {
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_QP,
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = handle },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_DGID,
		  .len = sizeof(*dgid),
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = (uintptr_t)dgid->raw },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_DEST_QPN,
		  .len = 4,
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = qpn },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_SQ_PSN,
		  .len = 4,
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = sq_psn },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_RQ_PSN,
		  .len = 4,
		  .flags = UVERBS_ATTR_F_MANDATORY,
		  .data = rq_psn },
	};

	return call(MIGR_RXE_METHOD_QP_REPOINT, a, 5);
}

/* qp's peer and PSNs as the device reports them (sq_psn ~0: any) */
static bool peer_is(struct ibv_qp *qp, const union ibv_gid *dgid, uint32_t dest,
		    uint32_t sq_psn, uint32_t rq_psn, char *why, size_t n)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &a,
			 IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN |
				 IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
			 &init)) {
		snprintf(why, n, "query_qp: %s", strerror(errno));
		return false;
	}
	snprintf(
		why, n,
		"state %d, dest 0x%x (0x%x), sq_psn 0x%x (0x%x), rq_psn 0x%x (0x%x), dgid ..%u.%u (..%u.%u), sgid %u, port %u",
		a.qp_state, a.dest_qp_num, dest, a.sq_psn, sq_psn, a.rq_psn,
		rq_psn, a.ah_attr.grh.dgid.raw[14], a.ah_attr.grh.dgid.raw[15],
		dgid->raw[14], dgid->raw[15], a.ah_attr.grh.sgid_index,
		a.ah_attr.port_num);
	return a.qp_state == IBV_QPS_RTS && a.dest_qp_num == dest &&
	       (sq_psn == ~0u || a.sq_psn == sq_psn) && a.rq_psn == rq_psn &&
	       !memcmp(a.ah_attr.grh.dgid.raw, dgid->raw, sizeof(*dgid)) &&
	       a.ah_attr.grh.sgid_index == gid_idx && a.ah_attr.port_num == 1;
}

/*
 * A connected to B, traffic both ways, then A re-pointed to C (on gid2,
 * brought up to A with matching PSNs): a receive A posted before still
 * completes, with what C sends; A's number and queues are the same, B's
 * sends no longer reach it (when gid2 is another address). Then a second
 * re-point of A (twice) and of C, and the refusals on A, drained
 */
static void repoint_works(uint64_t flags)
{
	struct rc a = {}, b = {}, c = {};
	struct ibv_wc wc;
	uint32_t aqpn;
	const char *r;
	char why[200];
	int err, i;

	check(flags & MIGR_RXE_CAP_QP_REPOINT, "repoint_cap", "flags 0x%llx",
	      (unsigned long long)flags);
	if (!rc_new(&a, IBV_QPT_RC) || !rc_new(&b, IBV_QPT_RC) ||
	    !rc_new(&c, IBV_QPT_RC)) {
		check(false, "repoint_qps_created", "%s", strerror(errno));
		goto out;
	}
	aqpn = a.qp->qp_num;
	err = rc_connect(a.qp, b.qp->qp_num, 0x100, 0x200, IBV_QPS_RTS);
	rc_retry_cnt = 2; /* B's late send fails once A is re-pointed */
	if (!err)
		err = rc_connect(b.qp, a.qp->qp_num, 0x200, 0x100, IBV_QPS_RTS);
	rc_retry_cnt = 7;
	for (i = 10; i < 13 && !err; i++) /* A's receives: 10, 11, 12 */
		err = post_recv(a.qp, i);
	if (!err)
		err = post_recv(b.qp, 20);
	if (err) {
		check(false, "repoint_setup", "%s", strerror(errno));
		goto out;
	}
	r = transfer(&a, &b, 0, 20, "A to B");
	check(!*r, "repoint_traffic_a_to_b", "%s", r);
	r = transfer(&b, &a, 1, 10, "B to A");
	check(!*r, "repoint_traffic_b_to_a", "%s", r);

	/* drained: every completion seen. A to C, then C up to A */
	err = repoint(a.qp->handle, &gid2, c.qp->qp_num, 0x300, 0x400);
	check(!err, "repoint_a_to_c", "%s", err ? strerror(-err) : "0");
	check(peer_is(a.qp, &gid2, c.qp->qp_num, 0x300, 0x400, why,
		      sizeof(why)),
	      "repoint_a_reports_c", "%s", why);
	err = rc_connect_at(c.qp, gid2_idx, &gid, aqpn, 0x400, 0x300,
			    IBV_QPS_RTS);
	if (!err)
		err = post_recv(c.qp, 30);
	if (err) {
		check(false, "repoint_c_setup", "%s", strerror(errno));
		goto out;
	}
	/* A's receive 11, posted before the re-point, takes C's message */
	r = transfer(&c, &a, 2, 11, "C to A");
	check(!*r, "repoint_recv_posted_before_completes", "%s", r);
	r = transfer(&a, &c, 3, 30, "A to C");
	check(!*r, "repoint_traffic_a_to_c", "%s", r);
	check(a.qp->qp_num == aqpn && peer_is(a.qp, &gid2, c.qp->qp_num, 0x301,
					      0x401, why, sizeof(why)),
	      "repoint_a_keeps_its_number", "0x%x: %s", aqpn, why);
	if (gid2_idx != gid_idx) {
		/* B, on A's old peer address: dropped, never taken by A */
		err = post_send(b.qp, 7, "B to A, late");
		err = err || wait_wc(b.cq, &wc, 10000);
		check(!err && wc.status == IBV_WC_RETRY_EXC_ERR &&
			      ibv_poll_cq(a.cq, 1, &wc) == 0,
		      "repoint_old_peer_cut_off", "B's send: %s",
		      err ? "no completion" : ibv_wc_status_str(wc.status));
	}

	/* a second request, twice, and the partner re-pointed too */
	err = repoint(a.qp->handle, &gid2, c.qp->qp_num, 0x500, 0x600);
	if (!err)
		err = repoint(a.qp->handle, &gid2, c.qp->qp_num, 0x500, 0x600);
	if (!err)
		err = repoint(c.qp->handle, &gid, aqpn, 0x600, 0x500);
	check(!err, "repoint_again_both_ends", "%s",
	      err ? strerror(-err) : "0");
	err = post_recv(c.qp, 31);
	r = err ? "post_recv failed" : transfer(&a, &c, 4, 31, "A to C again");
	check(!*r, "repoint_again_a_to_c", "%s", r);
	r = transfer(&c, &a, 5, 12, "C to A again");
	check(!*r, "repoint_again_c_to_a", "%s", r);

	/* refused on A, drained, in RTS: out of range, bad GIDs */
	err = repoint(a.qp->handle, &gid, 1 << 24, 0x700, 0x700);
	check(err == -ERANGE, "repoint_qpn_out_of_range_refused", "%s",
	      strerror(-err));
	err = repoint(a.qp->handle, &gid, c.qp->qp_num, 1 << 24, 0x700);
	i = repoint(a.qp->handle, &gid, c.qp->qp_num, 0x700, 0xffffffff);
	check(err == -ERANGE && i == -ERANGE,
	      "repoint_psn_out_of_range_refused", "sq %s, rq %s",
	      strerror(-err), strerror(-i));
	{
		union ibv_gid g = { .raw = { 0xff, 0x0e, [15] = 1 } };

		err = repoint(a.qp->handle, &g, c.qp->qp_num, 0x700, 0x700);
		check(err == -EINVAL, "repoint_multicast_gid_refused", "%s",
		      strerror(-err));
		/* an IPv6 GID from the QP's IPv4 source GID */
		g.raw[0] = 0xfe;
		g.raw[1] = 0x80;
		err = repoint(a.qp->handle, &g, c.qp->qp_num, 0x700, 0x700);
		check(err == -EINVAL, "repoint_other_family_gid_refused", "%s",
		      strerror(-err));
		/* an address of the subnet nobody answers for */
		g = gid;
		g.raw[15] ^= 0x80;
		err = repoint(a.qp->handle, &g, c.qp->qp_num, 0x700, 0x700);
		check(err && err != -EBUSY, "repoint_unresolved_gid_refused",
		      "%s", strerror(-err));
	}
	/* none of these changed A: traffic with C goes on */
	check(peer_is(a.qp, &gid2, c.qp->qp_num, 0x501, 0x601, why,
		      sizeof(why)),
	      "repoint_refusals_changed_nothing", "%s", why);
	err = post_recv(c.qp, 32);
	r = err ? "post_recv failed" : transfer(&a, &c, 6, 32, "A to C last");
	check(!*r, "repoint_traffic_after_refusals", "%s", r);
out:
	rc_free(&a);
	rc_free(&b);
	rc_free(&c);
}

struct racer {
	uint64_t handle;
	uint32_t dest;
	int ok, busy, other;
};

static void *race(void *arg)
{
	struct racer *t = arg;
	int i, err;

	for (i = 0; i < 100; i++) {
		err = repoint(t->handle, &gid, t->dest, 0x9000, 0xa000);
		err ? err == -EBUSY ? t->busy++ : t->other++ : t->ok++;
	}
	return NULL;
}

/*
 * Two threads re-point E to F at once, 100 times each: each call is done
 * or EBUSY (the QP locked by the other), never anything else; then F to
 * E, and traffic
 */
static void repoint_concurrent(struct rc *e, struct rc *f)
{
	struct racer t[2] = { { e->qp->handle, f->qp->qp_num },
			      { e->qp->handle, f->qp->qp_num } };
	pthread_t th;
	const char *r = "";
	int err;

	if (pthread_create(&th, NULL, race, &t[1])) {
		check(false, "repoint_concurrent", "no thread");
		return;
	}
	race(&t[0]);
	pthread_join(th, NULL);
	err = repoint(f->qp->handle, &gid, e->qp->qp_num, 0xa000, 0x9000);
	if (err || post_recv(f->qp, 48))
		r = "re-point or post_recv failed";
	else
		r = transfer(e, f, 49, 48, "E to F after the race");
	check(!t[0].other && !t[1].other && t[0].ok + t[1].ok > 0 && !*r,
	      "repoint_concurrent", "done %d, EBUSY %d, other %d; %s",
	      t[0].ok + t[1].ok, t[0].busy + t[1].busy, t[0].other + t[1].other,
	      *r ? r : "traffic after");
}

/*
 * An RDMA read to a QP that drops it (in INIT): EBUSY while it waits (a
 * read credit out, PSNs not acknowledged); once the retries are spent,
 * the QP is in ERR: EINVAL
 */
static void repoint_read_in_flight(struct rc *d)
{
	struct rc g = {};
	struct ibv_sge sge = { .addr = (uintptr_t)tbuf,
			       .length = 64,
			       .lkey = tmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 60,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)tbuf,
					       .rkey = tmr->rkey } },
			   *bad;
	struct ibv_qp *dq = d->qp;
	struct ibv_wc wc;
	int busy = 0, i, err;

	/* d is in RTR: back to RESET, then INIT, where it drops requests */
	rc_retry_cnt = 2;
	if (!rc_new(&g, IBV_QPT_RC) ||
	    ibv_modify_qp(dq,
			  &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET },
			  IBV_QP_STATE) ||
	    rc_connect(dq, g.qp->qp_num, 1, 1, IBV_QPS_INIT) ||
	    rc_connect(g.qp, dq->qp_num, 0x30, 0x40, IBV_QPS_RTS) ||
	    ibv_post_send(g.qp, &wr, &bad)) {
		rc_retry_cnt = 7;
		check(false, "repoint_read_setup", "%s", strerror(errno));
		goto out;
	}
	rc_retry_cnt = 7;
	for (i = 0; i < 5; i++, usleep(10000))
		busy += repoint(g.qp->handle, &gid, dq->qp_num, 0x77, 0x77) ==
			-EBUSY;
	err = wait_wc(g.cq, &wc, 10000);
	check(busy == 5, "repoint_read_in_flight_refused", "%d of 5 EBUSY",
	      busy);
	err = err ? -1 :
	      wc.status != IBV_WC_RETRY_EXC_ERR ?
		    -2 :
		    repoint(g.qp->handle, &gid, dq->qp_num, 0x77, 0x77);
	check(err == -EINVAL, "repoint_qp_in_error_refused", "%s",
	      err == -1 ? "no completion" :
	      err == -2 ? ibv_wc_status_str(wc.status) :
			  strerror(-err));
out:
	rc_free(&g);
}

/*
 * Refusals: a QP not in RTS (EINVAL: only the owner's modify_qp makes it
 * RTS, waiting does not), a UD QP (EINVAL), a bad or wrong handle (ENOENT,
 * EINVAL: the uverbs lookup), a send not completed (EBUSY: E waits on
 * F's RNR NAKs, F has no receive; once F has one, E's send completes as
 * if nothing happened, and E and F are re-pointed to each other)
 */
static void repoint_refusals(void)
{
	struct rc d = {}, u = {}, e = {}, f = {};
	uint32_t other = 0x1234;
	const char *r;
	char why[200];
	int err, busy, i;
	struct ibv_wc wc;
	bool ok;

	if (!rc_new(&d, IBV_QPT_RC) || !rc_new(&u, IBV_QPT_UD) ||
	    !rc_new(&e, IBV_QPT_RC) || !rc_new(&f, IBV_QPT_RC)) {
		check(false, "repoint_refusal_qps_created", "%s",
		      strerror(errno));
		goto out;
	}
	err = repoint(d.qp->handle, &gid, other, 1, 1);
	i = rc_connect(d.qp, other, 1, 1, IBV_QPS_INIT) ?
		    -1 :
		    repoint(d.qp->handle, &gid, other, 1, 1);
	busy = rc_connect(d.qp, other, 1, 1, IBV_QPS_RTR) ?
		       -1 :
		       repoint(d.qp->handle, &gid, other, 1, 1);
	check(err == -EINVAL && i == -EINVAL && busy == -EINVAL,
	      "repoint_not_rts_refused", "RESET %s, INIT %s, RTR %s",
	      strerror(-err), strerror(-i), strerror(-busy));
	err = ud_up(u.qp) ? -1 : repoint(u.qp->handle, &gid, other, 1, 1);
	check(err == -EINVAL, "repoint_ud_refused", "%s", strerror(-err));
	err = repoint(0x7fffffff, &gid, other, 1, 1);
	i = repoint(e.cq->handle, &gid, other, 1, 1);
	check(err == -ENOENT && i == -EINVAL, "repoint_bad_handle_refused",
	      "none %s, a CQ's %s", strerror(-err), strerror(-i));

	err = rc_connect(e.qp, f.qp->qp_num, 0x10, 0x20, IBV_QPS_RTS);
	if (!err)
		err = rc_connect(f.qp, e.qp->qp_num, 0x20, 0x10, IBV_QPS_RTS);
	if (!err)
		err = post_send(e.qp, 40, "E to F");
	if (err) {
		check(false, "repoint_busy_setup", "%s", strerror(errno));
		goto out;
	}
	/* sent, RNR NAKed, sent again...: busy every time, for 200 ms */
	for (busy = 0, i = 0; i < 20; i++, usleep(10000))
		busy += repoint(e.qp->handle, &gid, d.qp->qp_num, 0x77, 0x77) ==
			-EBUSY;
	check(busy == 20, "repoint_send_not_completed_refused",
	      "%d of 20 EBUSY", busy);
	/* (its sq_psn moves between 0x10 and 0x11 with each retry) */
	check(ibv_poll_cq(e.cq, 1, &wc) == 0 &&
		      peer_is(e.qp, &gid, f.qp->qp_num, ~0u, 0x20, why,
			      sizeof(why)),
	      "repoint_busy_changed_nothing", "%s", why);
	/* F gets a receive: the send completes, to F */
	err = post_recv(f.qp, 41);
	ok = !err && !wait_wc(e.cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	     !wait_wc(f.cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	     !strcmp(tbuf + 64 * 41, "E to F");
	check(ok, "repoint_busy_send_completes_after", "%s",
	      err ? strerror(errno) : ibv_wc_status_str(wc.status));
	/* drained now: both ends re-pointed to each other */
	err = repoint(e.qp->handle, &gid, f.qp->qp_num, 0xfffffe, 0x8000);
	if (!err)
		err = repoint(f.qp->handle, &gid, e.qp->qp_num, 0x8000,
			      0xfffffe);
	check(!err, "repoint_after_busy", "%s", err ? strerror(-err) : "0");
	/* three messages: E's PSNs wrap past 0xffffff */
	for (i = 0, r = ""; i < 3 && !*r; i++)
		r = post_recv(f.qp, 42 + i) ?
			    "post_recv failed" :
			    transfer(&e, &f, 45, 42 + i, "E to F, wrapping");
	check(!*r, "repoint_traffic_psn_wrap", "%s", r);
	err = post_recv(e.qp, 46);
	r = err ? "post_recv failed" : transfer(&f, &e, 47, 46, "F to E");
	check(!*r, "repoint_traffic_f_to_e", "%s", r);
	repoint_concurrent(&e, &f);
	repoint_read_in_flight(&d);
out:
	rc_free(&d);
	rc_free(&u);
	rc_free(&e);
	rc_free(&f);
}

static void repoint_checks(uint64_t flags)
{
	tmr = ibv_reg_mr(pd, tbuf, sizeof(tbuf), IBV_ACCESS_LOCAL_WRITE);
	if (!tmr || !find_gid()) {
		check(false, "repoint_setup", "%s",
		      tmr ? "no IPv4-mapped GID" : strerror(errno));
		return;
	}
	repoint_works(flags);
	repoint_refusals();
}

/*
 * A random re-point call: a valid one (the handle of an RC QP in RTS, its
 * own peer, or one in RESET, a UD QP, a CQ; this device's GID, 24-bit
 * values) with up to 3 changes: an attribute's id, flags, size or value
 * (anything, out of range, a bad pointer), the GID (none, multicast, an
 * IPv6 one, random bytes), the handle, an attribute left out or twice,
 * the method's id; the attributes in any order. Results by errno
 */
static long fuzz_result[200];

static void fuzz_repoint(const uint64_t *handles, int nh)
{
	union ibv_gid g = gid;
	struct ib_uverbs_attr a[6] = {
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_QP,
		  .data = handles[random() % nh] },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_DGID,
		  .len = 16,
		  .data = (uintptr_t)g.raw },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_DEST_QPN,
		  .len = 4,
		  .data = random() & 0xffffff },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_SQ_PSN,
		  .len = 4,
		  .data = random() & 0xffffff },
		{ .attr_id = MIGR_RXE_ATTR_REPOINT_RQ_PSN,
		  .len = 4,
		  .data = random() & 0xffffff },
	};
	int i, k, n = 5, changes = random() % 4,
		  method = MIGR_RXE_METHOD_QP_REPOINT;
	int ret;

	for (i = 0; i < 5; i++)
		a[i].flags = UVERBS_ATTR_F_MANDATORY;
	while (changes--) {
		k = random() % 5;
		switch (random() % 10) {
		case 0:
			a[k].attr_id += random() % 7 - 3;
			break;
		case 1:
			a[k].flags = random() % 8;
			break;
		case 2:
			a[k].len = random() % 32;
			break;
		case 3:
			a[k].data = random() % 2 ? (uint32_t)random() :
						   ((uint64_t)random() << 32) |
							   (uint32_t)random();
			break;
		case 4:
			a[k].data = 0x1000000 + random() % 4;
			break;
		case 5:
			memset(&g, 0, sizeof(g));
			if (random() % 3 == 0)
				g.raw[0] = 0xff; /* multicast */
			else if (random() % 2)
				g.raw[0] = 0xfe, g.raw[1] = 0x80, g.raw[15] = 1;
			else
				for (i = 0; i < 16; i++)
					g.raw[i] = random();
			break;
		case 6:
			a[0].data = random() % 2 ? (uint64_t)random() % 64 :
						   ((uint64_t)random() << 32) |
							   (uint32_t)random();
			break;
		case 7:
			n = random() % 5; /* one or more left out */
			break;
		case 8:
			a[5] = a[k]; /* twice */
			n = 6;
			break;
		default:
			method += random() % 3 - 1;
		}
	}
	for (i = n - 1; i > 0; i--) {
		struct ib_uverbs_attr t = a[i];

		k = random() % (i + 1);
		a[i] = a[k];
		a[k] = t;
	}
	ret = -call(method, a, n);
	__atomic_fetch_add(&fuzz_result[ret >= 0 && ret < 200 ? ret : 199], 1,
			   __ATOMIC_RELAXED);
}

/* A second thread of re-point calls while the fuzz runs */
static bool fuzz_stop;
static const uint64_t *fuzz_handles;
static long fuzz_thread_calls;

static void *fuzz_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&fuzz_stop, __ATOMIC_RELAXED)) {
		fuzz_repoint(fuzz_handles, 5);
		fuzz_thread_calls++;
	}
	return NULL;
}

/* "done N, EINVAL N, ..." */
static const char *fuzz_results(void)
{
	static char buf[400];
	size_t len = 0;
	int i;

	for (i = 0; i < 200 && len < sizeof(buf) - 40; i++)
		if (fuzz_result[i])
			len += snprintf(buf + len, sizeof(buf) - len,
					"%s%s %ld", len ? ", " : "",
					!i		   ? "done" :
					i == 199	   ? "other" :
					strerrorname_np(i) ?:
							     "?",
					fuzz_result[i]);
	return buf;
}

#define FUZZ_SIDES 6 /* contexts at once besides this one */

/*
 * The fuzz's seed: MIGR_FUZZ_SEED to replay a run, else a new one each
 * run (printed), so that runs do not replay the same inputs forever
 */
static unsigned int fuzz_seed(void)
{
	const char *e = getenv("MIGR_FUZZ_SEED");
	unsigned int seed;

	if (e && *e)
		return strtoul(e, NULL, 0);
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = time(NULL) ^ getpid();
	return seed;
}

/*
 * Random reservations: kinds, counts and values (in a kind's range; in
 * one call of four, anything too), given back or not, held under one of a
 * few tokens (0 among them) or claimed with one, on this context or on one
 * of FUZZ_SIDES others, each closed with what it holds now and then; this one
 * fills up to its bound, MIGR_RXE_HOLD_MAX, and is refused from then on
 */
static void fuzz_reserve(const uint32_t *ranges, struct side *sides)
{
	/* one of a few other contexts, each opened and closed at random */
	struct side *o = &sides[random() % FUZZ_SIDES];
	static uint32_t vals[MIGR_RXE_RESERVE_MAX + 2];
	uint64_t kind = random() % 5;
	int i, n = random() % 4 ? random() % 9 :
				  random() % (MIGR_RXE_RESERVE_MAX + 2);
	int k = kind >= 1 && kind <= MIGR_RXE_KIND_MAX ? kind - 1 : 0;
	static const uint64_t tokens[] = { 0, 1, 0x6d6967722d32, ~0ULL };
	const uint64_t *token = random() % 3 ? NULL : &tokens[random() % 4];
	uint16_t method = random() % 3 ? MIGR_RXE_METHOD_RESERVE :
			  random() % 2 ? MIGR_RXE_METHOD_UNRESERVE :
					 MIGR_RXE_METHOD_CLAIM;
	/* a call of values in range, or one of anything now and then */
	bool wild = random() % 4 == 0;
	uint32_t held;
	int fd;

	if (!o->ctx && random() % 8 == 0)
		side_open(o);
	else if (o->ctx && random() % 16 == 0)
		side_close(o);
	fd = o->ctx && random() % 2 ? o->ctx->cmd_fd : ctx->cmd_fd;
	for (i = 0; i < n; i++)
		vals[i] =
			!wild || random() % 8 ?
				ranges[2 * k] + random() % (ranges[2 * k + 1] -
							    ranges[2 * k] + 1) :
				(uint32_t)random();
	i = -numbers_call(fd, method, kind, vals, n,
			  random() % 3 ? &held : NULL, token);
	__atomic_fetch_add(&fuzz_result[i >= 0 && i < 200 ? i : 199], 1,
			   __ATOMIC_RELAXED);
	if (random() % 4 == 0 && o->ctx)
		side_qp_at(o, vals[0]);
}

/* Random calls: whatever they return, the kernel must take them */
static void fuzz(long n, const uint32_t *ranges)
{
	struct rc rts = {}, reset = {}, ud = {};
	uint32_t abi, big[64];
	uint64_t flags, handles[5] = { 0, 1, 0x7fffffff };
	unsigned int seed = fuzz_seed();
	struct side o[FUZZ_SIDES] = {};
	long i, nrepoint = 0;
	const char *r = "no QPs";
	pthread_t th;

	printf("fuzz: seed %u (MIGR_FUZZ_SEED=%u replays it)\n", seed, seed);
	srandom(seed);
	/* for the re-point calls: an RC QP in RTS, its own peer, and others */
	if (gid_idx >= 0 && rc_new(&rts, IBV_QPT_RC) &&
	    rc_new(&reset, IBV_QPT_RC) && rc_new(&ud, IBV_QPT_UD) &&
	    !rc_connect(rts.qp, rts.qp->qp_num, 0x50, 0x50, IBV_QPS_RTS) &&
	    !ud_up(ud.qp)) {
		handles[0] = rts.qp->handle;
		handles[1] = reset.qp->handle;
		handles[2] = ud.qp->handle;
		handles[3] = rts.cq->handle;
		handles[4] = rts.qp->handle;
		r = "";
	}
	fuzz_handles = handles;
	if (!*r && pthread_create(&th, NULL, fuzz_thread, NULL))
		r = "no thread";
	for (i = 0; i < n; i++) {
		struct ib_uverbs_attr a[3] = {};
		int k = random() % 6;

		if (random() % 5 == 0) {
			fuzz_reserve(ranges, o);
			continue;
		}

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
		if (!*r && random() % 3 == 0) {
			fuzz_repoint(handles, 5);
			nrepoint++;
		}
	}
	if (!*r) {
		__atomic_store_n(&fuzz_stop, true, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		nrepoint += fuzz_thread_calls;
	}
	for (i = 0; i < FUZZ_SIDES; i++)
		side_close(&o[i]);
	check(!query_caps(&abi, &flags, big), "fuzz_survived",
	      "%ld calls, %ld of them re-point (%ld from a second thread), seed %u: %s",
	      n + nrepoint, nrepoint, fuzz_thread_calls, seed, fuzz_results());
	/* the RC QP, re-pointed to itself again, still carries traffic */
	if (!*r) {
		int err = repoint(rts.qp->handle, &gid, rts.qp->qp_num, 0x60,
				  0x60);

		r = err ? strerror(-err) : self_transfer(&rts);
	}
	check(!*r, "fuzz_qp_still_works", "%s", r);
	rc_free(&rts);
	rc_free(&reset);
	rc_free(&ud);
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
		fprintf(stderr,
			"usage: %s DEVICE [--fuzz N | --hold QPN | --unprivileged]\n",
			argv[0]);
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "rxe_methods: cannot open device %s\n",
			argv[1]);
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
	      "caps",
	      "abi %u flags 0x%llx: qpn 0x%x-0x%x, mr 0x%x-0x%x, mw 0x%x-0x%x",
	      abi, (unsigned long long)flags, ranges[0], ranges[1], ranges[2],
	      ranges[3], ranges[4], ranges[5]);
	if (err)
		return 1;
	if (argc > 2 && !strcmp(argv[2], "--unprivileged"))
		return unprivileged(ranges);
	check(set_next(0, ranges[0]) == -EINVAL &&
		      set_next(MIGR_RXE_KIND_MAX + 1, ranges[0]) == -EINVAL,
	      "bad_kind_refused", NULL);
	qp_checks(ranges);
	mr_checks();
	mw_checks();
	repoint_checks(flags);
	reserve_checks(ranges, flags);
	claim_checks(ranges, flags);
	bound_checks(ranges, flags);
	/* last: the values it leaves named are for creates no check makes */
	if (argc > 3 && !strcmp(argv[2], "--fuzz"))
		fuzz(atol(argv[3]), ranges);
	printf("rxe_methods: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
