// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for what binds and invalidations leave type 2 memory windows
 * as (providers-migr/datapath/mw_track.c): the state a switch binds them
 * again from.
 */
#include <string.h>

#include "migr.h"
#include "unit.h"
#include "datapath.h"

static struct migr_context ctx;
static struct migr_qp qp1, qp2;
static struct migr_mr mr;
static struct migr_mw w1, w2;
static struct ibv_mw lower1, lower2;

static void add_window(struct migr_mw *m, struct ibv_mw *lower, uint32_t virt,
		       uint32_t phys)
{
	uint32_t v;

	m->mw.type = IBV_MW_TYPE_2;
	m->mw.context = &ctx.vctx.context;
	lower->rkey = phys;
	m->lower = lower;
	CHECK(!migr_xlate_born(&ctx.xlate, MIGR_XLATE_RKEY, virt, &v));
	CHECK(!migr_xlate_remap(&ctx.xlate, MIGR_XLATE_RKEY, virt, phys));
	m->mw.rkey = m->cur_rkey = virt;
	migr_record_add(&ctx, &ctx.rec.mws, &m->entry);
	migr_mw2_added(&ctx);
}

static struct ibv_send_wr bind_wr(struct migr_mw *m, uint32_t rkey,
				  uint64_t length)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };

	wr.bind_mw.mw = &m->mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = &mr.vmr.ibv_mr;
	wr.bind_mw.bind_info.addr = 0x1000;
	wr.bind_mw.bind_info.length = length;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	return wr;
}

/* Binds and local invalidations, as the lower QPs took them */
static void test_bind_and_local_inv(void)
{
	struct ibv_send_wr b1 = bind_wr(&w1, 0x4106, 64), b2,
			   inv = {
				   .opcode = IBV_WR_LOCAL_INV,
			   };

	/* a list: the bind of w1 taken, the one after it refused (stop) */
	b2 = bind_wr(&w2, 0x5202, 64);
	b1.next = &b2;
	migr_mw_track_sends(&qp1, &b1, &b2);
	CHECK(w1.qp == &qp1 && w1.cur_rkey == 0x4106 && w1.mr == &mr);
	CHECK(w1.addr == 0x1000 && w1.length == 64 &&
	      w1.access == IBV_ACCESS_REMOTE_WRITE);
	CHECK(!w2.qp && w2.cur_rkey == 0x5201);
	CHECK(migr_mw_bound_through(&qp1) && !migr_mw_bound_through(&qp2));

	/* any key byte of the window's index names it */
	inv.invalidate_rkey = 0x41ff;
	migr_mw_track_sends(&qp2, &inv, NULL);
	CHECK(!w1.qp && !migr_mw_bound_through(&qp1));
	/* a zero-length bind binds nothing */
	b1 = bind_wr(&w1, 0x4107, 0);
	migr_mw_track_sends(&qp1, &b1, NULL);
	CHECK(!w1.qp && w1.cur_rkey == 0x4107);
}

/* ibv_wr_local_inv() counts once its batch is posted, not if aborted */
static void test_batch(void)
{
	struct ibv_send_wr b = bind_wr(&w2, 0x5203, 64);

	migr_mw_track_sends(&qp2, &b, NULL);
	CHECK(w2.qp == &qp2);
	CHECK(!migr_mw_batch_inv(&qp2, 0x5203));
	migr_mw_batch_done(&qp2, false);
	CHECK(w2.qp == &qp2 && qp2.wr.n_inv == 0);
	CHECK(!migr_mw_batch_inv(&qp2, 0x1234)); /* not a window: ignored */
	CHECK(!migr_mw_batch_inv(&qp2, 0x5203));
	migr_mw_batch_done(&qp2, true);
	CHECK(!w2.qp);
}

/*
 * The other end's SEND_WITH_INV names the lower key: the window is
 * unbound, and the application sees its own key (same byte relation)
 */
static void test_remote_inv(void)
{
	struct ibv_send_wr b = bind_wr(&w1, 0x4108, 64);
	uint32_t k = 0x7a3c ^ 0x05 ^ 0x08; /* 0x4108's lower key */

	migr_mw_track_sends(&qp1, &b, NULL);
	CHECK(w1.qp == &qp1);
	migr_mw_remote_inv(&ctx, &k, false);
	CHECK(k == 0x4108 && w1.qp == &qp1);
	k = 0x7a3c ^ 0x05 ^ 0x08;
	migr_mw_remote_inv(&ctx, &k, true);
	CHECK(k == 0x4108 && !w1.qp);
	/* a key that is no window of ours is left alone */
	k = 0x9900;
	migr_mw_remote_inv(&ctx, &k, true);
	CHECK(k == 0x9900);
}

/* A destroyed QP takes its bindings along */
static void test_qp_gone(void)
{
	struct ibv_send_wr b = bind_wr(&w2, 0x5204, 64);

	migr_mw_track_sends(&qp1, &b, NULL);
	CHECK(w2.qp == &qp1);
	migr_mw_qp_gone(&qp1);
	CHECK(!w2.qp && !migr_mw_bound_through(&qp1));
}

int main(void)
{
	migr_record_init(&ctx.rec);
	migr_xlate_init(&ctx.xlate);
	qp1.ctx = qp2.ctx = &ctx;
	add_window(&w1, &lower1, 0x4105, 0x7a3c);
	add_window(&w2, &lower2, 0x5201, 0x5201);
	CHECK(ctx.mw2 == 2);
	test_bind_and_local_inv();
	test_batch();
	test_remote_inv();
	test_qp_gone();
	return unit_done("mw");
}
