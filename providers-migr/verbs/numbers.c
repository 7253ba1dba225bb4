// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Numbers a rebuilt object asks the lower device for. With migr's rdma_rxe
 * (migr_rxe(7)) a QP, MR or memory window created by a switch or after a
 * migration can take exactly the number the application knows, so nothing
 * needs translating and the data path stays the identity path. Any other
 * device, or the stock module, offers nothing here: objects get new
 * numbers and are translated, as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/cmd_ioctl.h>
#include <rdma/migr_rxe_abi.h>

#include "migr.h"
#include "verbs.h"

/* ctx->lower (of driver) was opened: can its objects be given numbers? */
void migr_numbers_probe(struct migr_context *ctx, const char *driver)
{
	DECLARE_COMMAND_BUFFER(cmd, MIGR_RXE_OBJECT_MIGR,
			       MIGR_RXE_METHOD_QUERY_CAPS, 3);
	struct migr_numbers *n = &ctx->numbers;
	uint32_t abi = 0, ranges[MIGR_RXE_RANGES];
	int saved = errno; /* a device open that succeeds leaves errno be */
	uint64_t flags = 0;
	bool ok;

	/* counts of this lower device's rebuilds */
	n->can_ask = n->can_repoint = n->can_claim = false;
	n->kept = n->moved = n->claimed = 0;
	/* driver-namespace ids mean something else to every other driver */
	if (!driver || strcmp(driver, "rxe") || getenv("MIGR_NO_NUMBERS"))
		return;
	fill_attr_out_ptr(cmd, MIGR_RXE_ATTR_CAPS_ABI, &abi);
	fill_attr_out_ptr(cmd, MIGR_RXE_ATTR_CAPS_FLAGS, &flags);
	fill_attr_out_ptr_array(cmd, MIGR_RXE_ATTR_CAPS_RANGES, ranges,
				MIGR_RXE_RANGES);
	/* the stock module has no such method: translation, as always */
	ok = !execute_ioctl(ctx->lower, cmd) && abi == MIGR_RXE_ABI &&
	     (flags & MIGR_RXE_CAP_SET_NEXT);
	errno = saved;
	if (!ok)
		return;
	memcpy(n->ranges, ranges, sizeof(n->ranges));
	n->can_ask = true;
	n->can_repoint = flags & MIGR_RXE_CAP_QP_REPOINT;
	n->can_claim = flags & MIGR_RXE_CAP_CLAIM;
}

/* CLAIM of n values of kind under token; how many are held here, or -1 */
static int claim(struct migr_context *ctx, enum migr_rxe_kind kind,
		 const uint32_t *values, unsigned int n)
{
	DECLARE_COMMAND_BUFFER(cmd, MIGR_RXE_OBJECT_MIGR, MIGR_RXE_METHOD_CLAIM,
			       4);
	uint64_t token = ctx->numbers.token;
	uint32_t held = 0;
	int saved = errno, ret;

	fill_attr_const_in(cmd, MIGR_RXE_ATTR_RESERVE_KIND, kind);
	fill_attr_in(cmd, MIGR_RXE_ATTR_RESERVE_VALUES, values,
		     n * sizeof(*values));
	fill_attr_out_ptr(cmd, MIGR_RXE_ATTR_RESERVE_HELD, &held);
	fill_attr_in_uint64(cmd, MIGR_RXE_ATTR_RESERVE_TOKEN, token);
	ret = execute_ioctl(ctx->lower, cmd);
	errno = saved;
	return ret ? -1 : (int)held;
}

/* values[0..*n) claimed when full, or when last says so */
static void claim_batch(struct migr_context *ctx, enum migr_rxe_kind kind,
			uint32_t *values, unsigned int *n, bool last)
{
	int held;

	if (!*n || (*n < MIGR_RXE_RESERVE_MAX && !last))
		return;
	held = claim(ctx, kind, values, *n);
	if (held < 0)
		verbs_warn(
			&ctx->vctx,
			"numbers held for this process on %s could not be claimed: %s\n",
			ibv_get_device_name(ctx->lower->device),
			strerror(errno));
	else
		ctx->numbers.claimed += held;
	*n = 0;
}

void migr_numbers_claim(struct migr_context *ctx)
{
	uint32_t *v = NULL;
	struct migr_mr *mmr;
	struct migr_mw *mmw;
	struct migr_qp *mqp;
	unsigned int n = 0;

	if (!ctx->numbers.token || !ctx->numbers.can_claim)
		return;
	v = malloc(MIGR_RXE_RESERVE_MAX * sizeof(*v));
	if (!v)
		return; /* the creates then ask for numbers held elsewhere */
	list_for_each (&ctx->rec.qps, mqp, entry) {
		v[n++] = mqp->vqp.qp.qp_num;
		claim_batch(ctx, MIGR_RXE_KIND_QPN, v, &n, false);
	}
	claim_batch(ctx, MIGR_RXE_KIND_QPN, v, &n, true);
	list_for_each (&ctx->rec.mrs, mmr, entry) {
		/* the keys rxe gives: one for both (reg_mr_again() asks so) */
		if (mmr->vmr.ibv_mr.lkey != mmr->vmr.ibv_mr.rkey)
			continue;
		v[n++] = mmr->vmr.ibv_mr.lkey;
		claim_batch(ctx, MIGR_RXE_KIND_MR_KEY, v, &n, false);
	}
	claim_batch(ctx, MIGR_RXE_KIND_MR_KEY, v, &n, true);
	/* a window is held by its index: a bind changes only the key byte */
	list_for_each (&ctx->rec.mws, mmw, entry) {
		v[n++] = mmw->mw.rkey;
		claim_batch(ctx, MIGR_RXE_KIND_MW_KEY, v, &n, false);
	}
	claim_batch(ctx, MIGR_RXE_KIND_MW_KEY, v, &n, true);
	free(v);
	verbs_info(&ctx->vctx,
		   "%u numbers held for this process taken over on %s\n",
		   ctx->numbers.claimed,
		   ibv_get_device_name(ctx->lower->device));
}

/* 0 or an errno; errno itself as it was (the create after it sets it) */
static int set_next(struct migr_context *ctx, enum migr_rxe_kind kind,
		    uint32_t value)
{
	DECLARE_COMMAND_BUFFER(cmd, MIGR_RXE_OBJECT_MIGR,
			       MIGR_RXE_METHOD_SET_NEXT, 2);
	int saved = errno, ret;

	fill_attr_const_in(cmd, MIGR_RXE_ATTR_NEXT_KIND, kind);
	fill_attr_in_uint32(cmd, MIGR_RXE_ATTR_NEXT_VALUE, value);
	ret = execute_ioctl(ctx->lower, cmd);
	errno = saved;
	return ret;
}

static bool ask(struct migr_context *ctx, enum migr_rxe_kind kind,
		uint32_t value)
{
	struct migr_numbers *n = &ctx->numbers;

	if (!n->can_ask || kind < MIGR_RXE_KIND_QPN ||
	    kind > MIGR_RXE_KIND_MAX || value < n->ranges[2 * (kind - 1)] ||
	    value > n->ranges[2 * (kind - 1) + 1])
		return false;
	return !set_next(ctx, kind, value);
}

static void count(struct migr_context *ctx, uint32_t want, uint32_t got)
{
	if (want == got) {
		ctx->numbers.kept++;
		return;
	}
	ctx->numbers.moved++;
	verbs_info(&ctx->vctx, "0x%x is taken on %s: translated (0x%x there)\n",
		   want, ibv_get_device_name(ctx->lower->device), got);
}

void *migr_numbers_create(struct migr_context *ctx, enum migr_rxe_kind kind,
			  uint32_t want, const struct migr_numbered *how)
{
	bool asked = want && ask(ctx, kind, want);
	void *obj = how->create(how->arg);
	int err;

	if (!obj && asked) {
		err = errno;
		/* a create that failed before the device took the number */
		set_next(ctx, kind, 0);
		/* the number is another object's here: a new one, translated */
		if (err == EBUSY || err == ERANGE)
			obj = how->create(how->arg);
		else
			errno = err;
	}
	if (obj && asked)
		count(ctx, want, how->number(obj));
	return obj;
}

int migr_numbers_repoint(struct migr_context *ctx, struct ibv_qp *qp,
			 const union ibv_gid *dgid, uint32_t dest_qpn,
			 uint32_t sq_psn, uint32_t rq_psn)
{
	DECLARE_COMMAND_BUFFER(cmd, MIGR_RXE_OBJECT_MIGR,
			       MIGR_RXE_METHOD_QP_REPOINT, 5);

	if (!ctx->numbers.can_repoint)
		return EOPNOTSUPP;
	fill_attr_in_obj(cmd, MIGR_RXE_ATTR_REPOINT_QP, qp->handle);
	fill_attr_in(cmd, MIGR_RXE_ATTR_REPOINT_DGID, dgid->raw,
		     sizeof(dgid->raw));
	fill_attr_in_uint32(cmd, MIGR_RXE_ATTR_REPOINT_DEST_QPN, dest_qpn);
	fill_attr_in_uint32(cmd, MIGR_RXE_ATTR_REPOINT_SQ_PSN, sq_psn);
	fill_attr_in_uint32(cmd, MIGR_RXE_ATTR_REPOINT_RQ_PSN, rq_psn);
	return execute_ioctl(ctx->lower, cmd);
}
