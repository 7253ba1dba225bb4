// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for migr's data path (providers-migr/datapath/post.c, cq.c
 * poll): the fake lower provider's books record what migr hands it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "migr.h"
#include "unit.h"
#include "unit_qp.h"
#include "datapath.h"
#include "fake_lower.h"
#include "marker.h"
#include "verbs.h"

/* The lower's completions: the second one a marker when fake_marker */
static bool fake_marker;

static void fill_wc(struct fake_cq *f, int i, struct ibv_wc *wc)
{
	wc->wr_id = fake_marker && i == 1 ? MIGR_MARKER_WRID : i;
	wc->qp_num = 0x100 + i;
	wc->src_qp = i == 2 ? 0x55 : 0;
}

static struct ibv_context fake_ctx;
static struct ibv_qp fake_qp = { .context = &fake_ctx };
static struct fake_cq fake_cq = { .cq = { .context = &fake_ctx },
				  .per_poll = 3,
				  .fill = fill_wc };
static struct ibv_ah fake_ah;
static struct migr_context mctx;
static struct migr_qp mqp;
static struct migr_ah mah = { .lower = &fake_ah };
static struct migr_cq mcq = { .lower = &fake_cq.cq };

static void setup(enum ibv_qp_type type)
{
	fake_lower_init(&fake_ctx, FAKE_BOOKS);
	unit_qp_init(&mqp, &mctx, &fake_qp, type);
	mqp.rewrite_sends = type == IBV_QPT_UD;
	mqp.slow = type == IBV_QPT_UD ? MIGR_SLOW_REWRITE : 0;
	mcq.vcq.cq.context = &mctx.vctx.context;
	fake_books_reset();
}

/* Identity path: the application's own list reaches the lower provider */
static void test_identity_passthrough(void)
{
	struct ibv_sge sge = { .addr = 1, .length = 8, .lkey = 0x11 };
	struct ibv_send_wr wr = { .wr_id = 7,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_send_wr *bad = NULL;

	setup(IBV_QPT_RC);
	wr.wr.rdma.rkey = 0x22;
	CHECK(migr_post_send(&mqp.vqp.qp, &wr, &bad) == 0);
	CHECK(fake_books.last_send_list == &wr);
	CHECK(fake_books.sends == 1 && fake_books.send_sge[0].lkey == 0x11);
}

/* After a remap, keys are translated in copies, the caller's WRs intact */
static void test_translated_keys(void)
{
	struct ibv_sge sge = { .addr = 1, .length = 8, .lkey = 0x11 };
	struct ibv_send_wr wr = { .wr_id = 7,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr *bad = NULL;
	struct ibv_recv_wr *rbad = NULL;

	setup(IBV_QPT_RC);
	wr.wr.rdma.rkey = 0x22;
	CHECK(migr_xlate_set(&mctx.xlate, MIGR_XLATE_LKEY, 0x11, 0xa11) == 0);
	CHECK(migr_xlate_set(&mctx.remote, MIGR_XLATE_RKEY, 0x22, 0xb22) == 0);
	mqp.slow |= MIGR_SLOW_XLATE; /* as a switch marks its QPs */
	CHECK(migr_post_send(&mqp.vqp.qp, &wr, &bad) == 0);
	CHECK(fake_books.last_send_list != &wr);
	CHECK(fake_books.sends == 1 && fake_books.send_sge[0].lkey == 0xa11);
	CHECK(fake_books.send[0].wr.rdma.rkey == 0xb22 &&
	      fake_books.send[0].wr_id == 7);
	CHECK(sge.lkey == 0x11 && wr.wr.rdma.rkey == 0x22);

	CHECK(migr_post_recv(&mqp.vqp.qp, &rwr, &rbad) == 0);
	CHECK(fake_books.recvs == 1 && fake_books.recv_sge[0].lkey == 0xa11 &&
	      fake_books.recv[0].wr_id == 9);
	migr_xlate_destroy(&mctx.xlate);
	migr_xlate_destroy(&mctx.remote);
}

/* Only a partner's move makes its rkeys translate: local maps untouched */
static void test_remote_only(void)
{
	struct ibv_sge sge = { .addr = 1, .length = 8, .lkey = 0x11 };
	struct ibv_send_wr wr = { .wr_id = 7,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	struct ibv_send_wr *bad = NULL;

	setup(IBV_QPT_RC);
	wr.wr.atomic.rkey = 0x22;
	CHECK(migr_xlate_set(&mctx.remote, MIGR_XLATE_RKEY, 0x22, 0xc22) == 0);
	mqp.slow |= MIGR_SLOW_XLATE;
	CHECK(!mctx.xlate.active);
	CHECK(migr_post_send(&mqp.vqp.qp, &wr, &bad) == 0);
	CHECK(fake_books.last_send_list != &wr);
	CHECK(fake_books.sends == 1 &&
	      fake_books.send[0].wr.atomic.rkey == 0xc22);
	CHECK(fake_books.send_sge[0].lkey == 0x11);
	migr_xlate_destroy(&mctx.xlate);
	migr_xlate_destroy(&mctx.remote);
}

/* UD WRs always carry the lower AH; long lists go in several batches */
static void test_ud_batches_and_bad_wr(void)
{
	struct ibv_send_wr wr[40], *bad = NULL;
	int i;

	setup(IBV_QPT_UD);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 40; i++) {
		wr[i].wr_id = i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].wr.ud.ah = &mah.ah;
		wr[i].wr.ud.remote_qpn = 0x55;
		wr[i].next = i < 39 ? &wr[i + 1] : NULL;
	}
	CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == 0);
	CHECK(fake_books.sends == 40);
	CHECK(fake_books.calls == 3);
	for (i = 0; i < 40; i++)
		if (fake_books.send[i].wr.ud.ah != &fake_ah ||
		    fake_books.send[i].wr_id != (uint64_t)i)
			break;
	CHECK(i == 40);

	/* A failure in the second batch names the caller's own WR */
	fake_books_reset();
	fake_books.fail_at = 20;
	CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == EINVAL);
	CHECK(bad == &wr[20]);
}

static void test_poll_translates_qpn(void)
{
	struct ibv_wc wc[4];
	uint32_t v;

	setup(IBV_QPT_RC);
	CHECK(migr_poll_cq(&mcq.vcq.cq, 4, wc) == 3);
	CHECK(wc[1].qp_num == 0x101);
	CHECK(migr_xlate_born(&mctx.xlate, MIGR_XLATE_QPN, 0x7, &v) == 0);
	CHECK(migr_xlate_remap(&mctx.xlate, MIGR_XLATE_QPN, 0x7, 0x101) == 0);
	CHECK(migr_poll_cq(&mcq.vcq.cq, 4, wc) == 3);
	CHECK(wc[0].qp_num == 0x100 && wc[1].qp_num == 0x7);
	CHECK(wc[2].src_qp == 0x55);
	/* A UD sender that moved is shown by the number it had */
	CHECK(migr_xlate_set(&mctx.remote, MIGR_XLATE_QPN, 0x55, 0x44) == 0);
	CHECK(migr_poll_cq(&mcq.vcq.cq, 4, wc) == 3);
	CHECK(wc[2].src_qp == 0x44 && wc[0].src_qp == 0);
	migr_xlate_destroy(&mctx.xlate);
	migr_xlate_destroy(&mctx.remote);
}

/*
 * Suspended: sends are held (inline data copied) and return 0; RECVs go
 * on to the lower QP while the queues drain (a partner's SENDs need
 * them) and are held too once the lower QP is about to go.
 */
static void test_suspended_posts_held(void)
{
	char payload[8] = "abcdefg";
	struct ibv_sge sge = { .addr = (uintptr_t)payload,
			       .length = 8,
			       .lkey = 0x11 };
	struct ibv_send_wr wr[2] = {
		{ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
		  .next = &wr[1] },
		{ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE },
	}, *bad = NULL;
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr rwr2 = { .wr_id = 4, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *rbad = NULL;
	struct migr_held_wr *h;

	setup(IBV_QPT_RC);
	mqp.slow |= MIGR_SLOW_SUSPENDED;
	CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == 0);
	CHECK(migr_post_recv(&mqp.vqp.qp, &rwr, &rbad) == 0);
	/* the RECV went down; the sends did not (and were not counted) */
	CHECK(fake_books.sends == 0 && fake_books.recvs == 1);
	CHECK(mqp.n_consumers == 0);
	mqp.hold.recvs = true;
	CHECK(migr_post_recv(&mqp.vqp.qp, &rwr2, &rbad) == 0);
	CHECK(fake_books.recvs == 1);
	payload[0] = 'X'; /* the application reuses its inline buffer */
	h = mqp.hold.wrs;
	CHECK(h && !h->recv && h->send.wr_id == 1);
	CHECK(h && !memcmp((void *)(uintptr_t)h->send.sg_list[0].addr,
			   "abcdefg", 8));
	CHECK(h && h->next && h->next->send.wr_id == 2 &&
	      h->next->send.sg_list[0].addr == (uintptr_t)payload);
	CHECK(h && h->next && h->next->next && h->next->next->recv &&
	      h->next->next->recv_wr.wr_id == 4);
	while (mqp.hold.wrs) {
		h = mqp.hold.wrs;
		mqp.hold.wrs = h->next;
		free(h);
	}
	mqp.hold.recvs = false;
}

/* SENDs are counted and RECVs logged only as far as the lower took them */
static void test_counts_and_recv_log(void)
{
	struct ibv_sge sge = { .addr = 1, .length = 8, .lkey = 0x11 };
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_recv_wr rwr[2], *rbad = NULL;
	struct migr_rlog_entry *e;
	int i;

	setup(IBV_QPT_RC);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[0].opcode = IBV_WR_SEND;
	wr[1].opcode = IBV_WR_RDMA_WRITE; /* uses no RECV */
	wr[2].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == 0);
	CHECK(mqp.n_consumers == 2);
	fake_books_reset();
	fake_books.fail_at = 2; /* the lower refuses the WRITE_WITH_IMM */
	CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == EINVAL);
	CHECK(bad == &wr[2] && mqp.n_consumers == 3);

	fake_books_reset();
	CHECK(migr_rlog_init(&mqp.rlog, 4, 2) == 0);
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 6; i++) {
		rwr[0].wr_id = 100 + i;
		rwr[0].sg_list = &sge;
		rwr[0].num_sge = 1;
		CHECK(migr_post_recv(&mqp.vqp.qp, rwr, &rbad) == 0);
	}
	CHECK(mqp.rlog.head == 6);
	/* a ring of 4: the newest four are there, oldest first from head-4 */
	e = migr_rlog_at(&mqp.rlog, 2);
	CHECK(e->wr_id == 102 && e->num_sge == 1 && e->sge[0].lkey == 0x11);
	e = migr_rlog_at(&mqp.rlog, 5);
	CHECK(e->wr_id == 105);

	/* a lone WR the lower refuses is neither counted nor logged */
	for (i = 0; i < 2; i++) {
		fake_books_reset();
		mqp.n_consumers = 0;
		wr[0].next = NULL;
		fake_books.fail_at = 0;
		CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == EINVAL);
		CHECK(bad == &wr[0] && mqp.n_consumers == 0);
		CHECK(migr_post_recv(&mqp.vqp.qp, rwr, &rbad) == EINVAL);
		CHECK(rbad == &rwr[0] && mqp.rlog.head == 6);
		fake_books.fail_at = -1;
		CHECK(migr_post_send(&mqp.vqp.qp, wr, &bad) == 0);
		CHECK(mqp.n_consumers == 1);
		CHECK(migr_post_recv(&mqp.vqp.qp, rwr, &rbad) == 0);
		CHECK(mqp.rlog.head == 7);
		e = migr_rlog_at(&mqp.rlog, 6);
		CHECK(e->wr_id == 105 && e->sge[0].lkey == 0x11);
		mqp.rlog.head = 6;
		/* the same after a switch: translated, logged as posted */
		CHECK(migr_xlate_set(&mctx.xlate, MIGR_XLATE_LKEY, 0x11,
				     0xa11) == 0);
		mqp.slow |= MIGR_SLOW_XLATE;
	}
	CHECK(fake_books.send_sge[0].lkey == 0xa11 &&
	      fake_books.recv_sge[0].lkey == 0xa11);
	migr_xlate_destroy(&mctx.xlate);
	migr_ring_free(&mqp.rlog.ring);
	memset(&mqp.rlog, 0, sizeof(mqp.rlog));
}

/* While switching, polls come from the shadow; markers never show */
static void test_shadow_poll(void)
{
	struct ibv_wc wc[8];
	int n;

	setup(IBV_QPT_RC);
	migr_record_init(&mctx.rec);
	pthread_mutex_init(&mcq.shadow_lock, NULL);
	mcq.lower = &fake_cq.cq;
	fake_marker = true; /* the lower's second entry is a marker */
	mcq.switching = true;
	mctx.switch_active = true;
	CHECK(migr_cq_drain(&mcq) == 2);
	CHECK(mcq.shadow.count == 2);
	n = migr_poll_cq(&mcq.vcq.cq, 1, wc);
	CHECK(n == 1 && wc[0].wr_id == 0);
	/* each poll moves the lower's new entries behind the shadow's */
	n = migr_poll_cq(&mcq.vcq.cq, 8, wc);
	CHECK(n == 5 && wc[0].wr_id == 2 && wc[1].wr_id == 0 &&
	      wc[2].wr_id == 2 && wc[3].wr_id == 0 && wc[4].wr_id == 2);
	CHECK(mcq.switching); /* the switch is still on */
	mctx.switch_active = false;
	fake_marker = false;
	n = migr_poll_cq(&mcq.vcq.cq, 8, wc);
	CHECK(n == 3 && !mcq.switching);
	migr_shadow_free(&mcq);
}

/*
 * An arm owes one event for entries the switch moved to the shadow, once:
 * an application that re-arms on each event before polling must not spin.
 */
static void test_owed_events_once(void)
{
	struct migr_comp_channel mch = {};
	struct ibv_wc wc[8];

	setup(IBV_QPT_RC);
	migr_record_init(&mctx.rec);
	pthread_mutex_init(&mch.synth_lock, NULL);
	mch.synth_fd = eventfd(0, EFD_NONBLOCK);
	CHECK(mch.synth_fd >= 0);
	pthread_mutex_init(&mcq.shadow_lock, NULL);
	mcq.lower = &fake_cq.cq;
	mcq.mch = &mch;
	mcq.unsignalled = 0;
	mcq.switching = true;
	mctx.switch_active = true;
	CHECK(migr_cq_drain(&mcq) == 3);
	CHECK(migr_req_notify_cq(&mcq.vcq.cq, 0) == 0);
	CHECK(mch.nsynth == 1);
	/* re-armed before polling: the same entries owe nothing more */
	CHECK(migr_req_notify_cq(&mcq.vcq.cq, 0) == 0);
	CHECK(migr_req_notify_cq(&mcq.vcq.cq, 0) == 0);
	CHECK(mch.nsynth == 1);
	/* polled empty, then new entries moved: one more event is owed */
	mctx.switch_active = false;
	CHECK(migr_poll_cq(&mcq.vcq.cq, 8, wc) == 6);
	CHECK(mcq.shadow.count == 0 && mcq.unsignalled == 0);
	mcq.switching = true;
	CHECK(migr_cq_drain(&mcq) == 3);
	CHECK(migr_req_notify_cq(&mcq.vcq.cq, 0) == 0);
	CHECK(mch.nsynth == 2);
	close(mch.synth_fd);
	free(mch.synth);
	mcq.mch = NULL;
	migr_shadow_free(&mcq);
}

static int fake_cqx_start(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *a)
{
	return ENOENT;
}

static int fake_cqx_next(struct ibv_cq_ex *cq)
{
	return ENOENT;
}

static void fake_cqx_end(struct ibv_cq_ex *cq)
{
}

static uint32_t fake_cqx_u32(struct ibv_cq_ex *cq)
{
	return 0xdead;
}

/*
 * While switching, an extended poll session reads the shadow: entries in
 * order, virtual QPNs, each handed out once, then back to the fast path.
 */
static void test_cq_ex_shadow_session(void)
{
	struct ibv_cq_ex fake_cqx = {
		.start_poll = fake_cqx_start,
		.next_poll = fake_cqx_next,
		.end_poll = fake_cqx_end,
		.read_qp_num = fake_cqx_u32,
		.read_byte_len = fake_cqx_u32,
	};
	struct ibv_cq_ex *cq = &mcq.vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};

	setup(IBV_QPT_RC);
	migr_record_init(&mctx.rec);
	pthread_mutex_init(&mcq.shadow_lock, NULL);
	mcq.lower = &fake_cq.cq;
	mcq.lower_ex = &fake_cqx;
	migr_cq_ex_set_ops(&mcq);
	CHECK(cq->read_qp_num && cq->read_byte_len && !cq->read_sl);
	mcq.switching = true;
	mctx.switch_active = true;
	CHECK(migr_cq_drain(&mcq) == 3);
	mcq.lower = NULL; /* released: only the shadow is left */
	CHECK(ibv_start_poll(cq, &attr) == 0);
	CHECK(cq->wr_id == 0 && ibv_wc_read_qp_num(cq) == 0x100);
	CHECK(ibv_next_poll(cq) == 0);
	CHECK(cq->wr_id == 1 && ibv_wc_read_qp_num(cq) == 0x101);
	ibv_end_poll(cq);
	CHECK(mcq.shadow.count == 1);
	mctx.switch_active = false;
	CHECK(ibv_start_poll(cq, &attr) == 0);
	CHECK(cq->wr_id == 2 && ibv_wc_read_byte_len(cq) == 0);
	CHECK(ibv_next_poll(cq) == ENOENT);
	ibv_end_poll(cq);
	CHECK(mcq.shadow.count == 0 && !mcq.switching);
	/* the fast path again: the lower's readers */
	mcq.lower = &fake_cq.cq;
	CHECK(ibv_start_poll(cq, &attr) == ENOENT);
	CHECK(ibv_wc_read_byte_len(cq) == 0xdead);
	mcq.lower_ex = NULL;
	migr_shadow_free(&mcq);
}

/*
 * An ibv_wr_*() batch begun while suspended is recorded with the
 * application's values and held at wr_complete(); inline data is copied
 * at once; an aborted batch leaves nothing.
 */
static void test_wr_batch_recorded(void)
{
	struct ibv_qp_ex lqx = {};
	struct ibv_qp_ex *qx = &mqp.vqp.qp_ex;
	char payload[8] = "abcdefg";
	struct migr_held_wr *h;

	setup(IBV_QPT_RC);
	lqx.wr_send = (void *)1; /* the builders the lower offers */
	lqx.wr_rdma_write = (void *)1;
	lqx.wr_set_sge = (void *)1;
	lqx.wr_set_inline_data = (void *)1;
	lqx.wr_start = (void *)1;
	lqx.wr_complete = (void *)1;
	lqx.wr_abort = (void *)1;
	mqp.lower_ex = &lqx;
	mqp.wr.rec_tail = &mqp.wr.rec;
	migr_qp_ex_set_ops(&mqp);
	mqp.slow |= MIGR_SLOW_SUSPENDED;

	ibv_wr_start(qx);
	CHECK(mqp.wr.recording);
	qx->wr_id = 7;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, 0x1234, 0x5000);
	ibv_wr_set_sge(qx, 0x11, 0x6000, 64);
	qx->wr_id = 8;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, payload, sizeof(payload));
	memcpy(payload, "XXXXXXX", 8); /* reused at once, as allowed */
	CHECK(ibv_wr_complete(qx) == 0);
	CHECK(!mqp.wr.recording && !mqp.wr.rec);
	h = mqp.hold.wrs;
	CHECK(h && h->send.opcode == IBV_WR_RDMA_WRITE && h->send.wr_id == 7 &&
	      h->send.wr.rdma.rkey == 0x1234 &&
	      h->send.wr.rdma.remote_addr == 0x5000 && h->send.num_sge == 1 &&
	      h->send.sg_list[0].lkey == 0x11 &&
	      h->send.send_flags == IBV_SEND_SIGNALED);
	h = h ? h->next : NULL;
	CHECK(h && h->send.opcode == IBV_WR_SEND && h->send.wr_id == 8 &&
	      (h->send.send_flags & IBV_SEND_INLINE) && h->send.num_sge == 1 &&
	      !memcmp((void *)(uintptr_t)h->send.sg_list[0].addr, "abcdefg",
		      8));
	CHECK(h && !h->next);
	while (mqp.hold.wrs) {
		h = mqp.hold.wrs;
		mqp.hold.wrs = h->next;
		free(h);
	}
	mqp.hold.tail = &mqp.hold.wrs;

	/* aborted: nothing held, nothing leaks into the next batch */
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_abort(qx);
	CHECK(!mqp.hold.wrs && !mqp.wr.rec && !mqp.wr.recording);
	/* a setter before any WR fails the batch */
	ibv_wr_start(qx);
	ibv_wr_set_sge(qx, 0x11, 0x6000, 64);
	CHECK(ibv_wr_complete(qx) == EINVAL && !mqp.hold.wrs);
	mqp.lower_ex = NULL;
}

/* The library's calls land here first (a definition of the test's own) */
static unsigned int yields;
int sched_yield(void)
{
	yields++;
	return 0;
}

/*
 * An empty poll while a switch holds the CQ gives the CPU away (to the
 * thread that switches); one that hands out entries does not
 */
static void test_empty_switch_poll_yields(void)
{
	struct ibv_cq_ex fake_cqx = { .start_poll = fake_cqx_start };
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc[8];

	setup(IBV_QPT_RC);
	migr_record_init(&mctx.rec);
	pthread_mutex_init(&mcq.shadow_lock, NULL);
	mcq.lower = &fake_cq.cq;
	mcq.switching = true;
	mctx.switch_active = true;
	yields = 0;
	CHECK(migr_poll_cq(&mcq.vcq.cq, 8, wc) > 0);
	CHECK(yields == 0);
	mcq.lower = NULL; /* released: nothing can come */
	while (mcq.shadow.count)
		CHECK(migr_poll_cq(&mcq.vcq.cq, 8, wc) > 0);
	CHECK(yields == 0);
	CHECK(migr_poll_cq(&mcq.vcq.cq, 8, wc) == 0);
	CHECK(yields == 1);
	/* an extended poll session that finds nothing: the same */
	mcq.lower_ex = &fake_cqx;
	migr_cq_ex_set_ops(&mcq);
	CHECK(ibv_start_poll(&mcq.vcq.cq_ex, &attr) == ENOENT);
	CHECK(yields == 2);
	mcq.lower_ex = NULL;
	mctx.switch_active = false;
	mcq.switching = false;
	mcq.lower = &fake_cq.cq;
	migr_shadow_free(&mcq);
}

int main(void)
{
	test_identity_passthrough();
	test_translated_keys();
	test_remote_only();
	test_ud_batches_and_bad_wr();
	test_poll_translates_qpn();
	test_suspended_posts_held();
	test_counts_and_recv_log();
	test_shadow_poll();
	test_owed_events_once();
	test_cq_ex_shadow_session();
	test_empty_switch_poll_yields();
	test_wr_batch_recorded();
	return unit_done("test_post");
}
