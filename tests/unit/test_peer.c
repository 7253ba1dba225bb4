// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for the replicas of peer contexts' tables
 * (providers-migr/datapath/peer.c): two partners whose virtual numbers
 * collide must not translate through each other's announcements.
 */
#include <stdlib.h>

#include "migr.h"
#include "unit.h"
#include "peer.h"
#include "verbs.h"

/* peer.c tells a QP whose tables changed; counted here */
static unsigned int updates;

void migr_qp_update_slow(struct migr_qp *mqp)
{
	(void)mqp;
	updates++;
}

static void init_ctx(struct migr_context *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	migr_xlate_init(&ctx->remote);
	migr_peers_init(ctx);
}

static void fini_ctx(struct migr_context *ctx)
{
	migr_peers_free(ctx);
	migr_xlate_destroy(&ctx->remote);
}

/* Each peer context gets its own tables, found again by its id */
static void test_one_per_peer(void)
{
	struct migr_context ctx;
	struct migr_xlate *a, *b;

	init_ctx(&ctx);
	a = migr_peer_tables(&ctx, 0x1111);
	b = migr_peer_tables(&ctx, 0x2222);
	CHECK(a && b && a != b);
	CHECK(a != &ctx.remote && b != &ctx.remote);
	CHECK(migr_peer_tables(&ctx, 0x1111) == a);
	CHECK(migr_peer_tables(&ctx, 0x2222) == b);
	/* told apart without making one (a give's check) */
	CHECK(migr_peer_tables_are(&ctx, a, 0x1111));
	CHECK(!migr_peer_tables_are(&ctx, a, 0x2222));
	CHECK(!migr_peer_tables_are(&ctx, &ctx.remote, 0x1111));
	CHECK(!migr_peer_tables_are(&ctx, a, 0x3333));
	fini_ctx(&ctx);
}

/*
 * The case the replicas exist for: clients A and B both have QP 0x11 and
 * rkey 0x400; A moved (0x11 -> 0x15, 0x400 -> 0x900). B's stay the same.
 */
static void test_collision(void)
{
	struct migr_context ctx;
	struct migr_xlate *a, *b;

	init_ctx(&ctx);
	a = migr_peer_tables(&ctx, 0xa);
	b = migr_peer_tables(&ctx, 0xb);
	CHECK(migr_xlate_set(a, MIGR_XLATE_QPN_PHYS, 0x11, 0x15) == 0);
	CHECK(migr_xlate_set(a, MIGR_XLATE_QPN, 0x15, 0x11) == 0);
	CHECK(migr_xlate_set(a, MIGR_XLATE_RKEY, 0x400, 0x900) == 0);
	CHECK(migr_remote_qpn_to_phys(a, 0x11) == 0x15);
	CHECK(migr_remote_rkey_to_phys(a, 0x400) == 0x900);
	CHECK(migr_remote_qpn_to_phys(b, 0x11) == 0x11);
	CHECK(migr_remote_rkey_to_phys(b, 0x400) == 0x400);
	/* nor do QPs not yet tied to a peer (the context's own default) */
	CHECK(migr_remote_qpn_to_phys(&ctx.remote, 0x11) == 0x11);
	CHECK(!b->active && !ctx.remote.active);
	fini_ctx(&ctx);
}

/* A QP is tied to its partner's replica once, and told when it changes */
static void test_tie(void)
{
	struct migr_context ctx;
	struct migr_qp qp = {};

	init_ctx(&ctx);
	qp.ctx = &ctx;
	qp.remote = &ctx.remote;
	updates = 0;
	CHECK(migr_peer_tie(&qp, 0xa) == 0);
	CHECK(qp.remote == migr_peer_tables(&ctx, 0xa) && updates == 1);
	CHECK(migr_peer_tie(&qp, 0xa) == 0 && updates == 1);
	fini_ctx(&ctx);
}

/* Contexts name themselves with ids that differ */
static void test_ids(void)
{
	struct migr_context c1, c2;

	init_ctx(&c1);
	init_ctx(&c2);
	CHECK(c1.peers.id && c2.peers.id && c1.peers.id != c2.peers.id);
	fini_ctx(&c1);
	fini_ctx(&c2);
}

int main(void)
{
	test_one_per_peer();
	test_collision();
	test_tie();
	test_ids();
	return unit_done("peer");
}
