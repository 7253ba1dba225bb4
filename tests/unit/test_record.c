// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for migr's record of the control path (providers-migr/
 * record.c) and the rkey list partners get from it (mr.c,
 * migr_rkey_pairs()): what a switch rebuilds and announces.
 */
#include <string.h>

#include "migr.h"
#include "unit.h"
#include "verbs.h"

static struct migr_context ctx;

/* The attributes of every modify merge; a reset forgets the connection */
static void test_modify_merges(void)
{
	struct migr_qp mqp = {};
	struct ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	migr_record_modify_qp(&mqp, &a,
			      IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = 0x42;
	a.rq_psn = 0x100;
	a.path_mtu = IBV_MTU_1024;
	a.ah_attr.grh.sgid_index = 1;
	a.port_num = 9; /* not in the mask: must not be taken */
	migr_record_modify_qp(&mqp, &a,
			      IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_PATH_MTU | IBV_QP_AV);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x200;
	a.rnr_retry = 7;
	migr_record_modify_qp(&mqp, &a,
			      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY);

	CHECK(mqp.attr.qp_state == IBV_QPS_RTS);
	CHECK(mqp.attr.port_num == 1);
	CHECK(mqp.attr.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
	CHECK(mqp.attr.dest_qp_num == 0x42);
	CHECK(mqp.attr.rq_psn == 0x100 && mqp.attr.sq_psn == 0x200);
	CHECK(mqp.attr.path_mtu == IBV_MTU_1024);
	CHECK(mqp.attr.ah_attr.grh.sgid_index == 1);
	CHECK(mqp.attr.rnr_retry == 7);
	CHECK(mqp.attr_mask & IBV_QP_AV);
	CHECK(mqp.attr_mask & IBV_QP_ACCESS_FLAGS);
	CHECK(!(mqp.attr_mask & IBV_QP_TIMEOUT));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	migr_record_modify_qp(&mqp, &a, IBV_QP_STATE);
	CHECK(mqp.attr.qp_state == IBV_QPS_RESET);
	CHECK(mqp.attr_mask == IBV_QP_STATE);
}

/* Objects a switch cannot rebuild are counted; the first one is named */
static void test_blockers(void)
{
	CHECK(migr_record_blocker(&ctx) == NULL);
	migr_record_unsupported(&ctx, MIGR_UNSUP_XRCD, 1);
	migr_record_unsupported(&ctx, MIGR_UNSUP_XRCD, 1);
	migr_record_unsupported(&ctx, MIGR_UNSUP_XRCD, -1);
	CHECK(migr_record_blocker(&ctx) &&
	      !strcmp(migr_record_blocker(&ctx), "an XRC domain"));
	migr_record_unsupported(&ctx, MIGR_UNSUP_XRCD, -1);
	CHECK(migr_record_blocker(&ctx) == NULL);
}

static struct migr_mr mrs[3];
static struct ibv_mr lower_mrs[3];
static struct migr_mw mws[2];
static struct ibv_mw lower_mws[2];

/* MRs then windows, paged by start and max; objects without a lower skip */
static void test_rkey_pairs(void)
{
	char buf[4 * 18 + 1];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		mrs[i].vmr.ibv_mr.rkey = 0x10 + i;
		lower_mrs[i].rkey = 0xa0 + i;
		/* the second MR is between release and rebuild */
		mrs[i].lower = i == 1 ? NULL : &lower_mrs[i];
		migr_record_add(&ctx, &ctx.rec.mrs, &mrs[i].entry);
	}
	for (i = 0; i < 2; i++) {
		mws[i].mw.rkey = 0x20 + i;
		lower_mws[i].rkey = 0xb0 + i;
		mws[i].lower = &lower_mws[i];
		migr_record_add(&ctx, &ctx.rec.mws, &mws[i].entry);
	}

	CHECK(migr_rkey_pairs(&ctx, 0, 4, buf) == 4);
	CHECK(!strcmp(buf, "10:a0,12:a2,20:b0,21:b1"));
	CHECK(migr_rkey_pairs(&ctx, 0, 3, buf) == 3);
	CHECK(!strcmp(buf, "10:a0,12:a2,20:b0"));
	CHECK(migr_rkey_pairs(&ctx, 3, 3, buf) == 1);
	CHECK(!strcmp(buf, "21:b1"));
	CHECK(migr_rkey_pairs(&ctx, 4, 3, buf) == 0);
	CHECK(!strcmp(buf, ""));

	/* A window deallocated leaves the list, and the pairs */
	migr_record_del(&ctx, &mws[0].entry);
	CHECK(migr_rkey_pairs(&ctx, 1, 4, buf) == 2);
	CHECK(!strcmp(buf, "12:a2,21:b1"));

	/*
	 * A window's pair comes from the table: a type 2 window moved by a
	 * switch, whose application went on to the next key byte while the
	 * lower window still holds the key of the rebuild
	 */
	CHECK(!migr_xlate_born(&ctx.xlate, MIGR_XLATE_RKEY, 0x4105, &i));
	CHECK(!migr_xlate_remap(&ctx.xlate, MIGR_XLATE_RKEY, 0x4105, 0x7a3c));
	mws[1].mw.rkey = 0x4106;
	lower_mws[1].rkey = 0x7a3c;
	CHECK(migr_rkey_pairs(&ctx, 2, 4, buf) == 1);
	CHECK(!strcmp(buf, "4106:7a3f"));
}

int main(void)
{
	migr_record_init(&ctx.rec);
	migr_xlate_init(&ctx.xlate);
	test_modify_merges();
	test_blockers();
	test_rkey_pairs();
	return unit_done("record");
}
