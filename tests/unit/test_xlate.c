// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Unit tests for migr's translation tables (providers-migr/xlate.c) */
#include <stdlib.h>

#include "xlate.h"
#include "unit.h"

static void test_map_basic(void)
{
	struct migr_u32map m = {};
	uint32_t v = 0;

	CHECK(!migr_u32map_get(&m, 1, &v));
	CHECK(migr_u32map_put(&m, 1, 100) == 0);
	CHECK(migr_u32map_get(&m, 1, &v) && v == 100);
	CHECK(migr_u32map_put(&m, 1, 101) == 0);
	CHECK(migr_u32map_get(&m, 1, &v) && v == 101);
	CHECK(m.live == 1);
	CHECK(migr_u32map_del(&m, 1));
	CHECK(!migr_u32map_get(&m, 1, &v));
	CHECK(!migr_u32map_del(&m, 1));
	CHECK(m.live == 0);
	migr_u32map_free(&m);
}

/* Many keys, sequential and spread, survive growth and deletion */
static void test_map_growth(void)
{
	struct migr_u32map m = {};
	uint32_t i, v, bad = 0;

	for (i = 0; i < 100000; i++)
		if (migr_u32map_put(&m, i * 2654435761u, i))
			bad++;
	CHECK(bad == 0);
	CHECK(m.live == 100000);
	/* load stays under one half */
	CHECK(m.used * 2 <= m.cap);
	for (i = 0; i < 100000; i++)
		if (!migr_u32map_get(&m, i * 2654435761u, &v) || v != i)
			bad++;
	CHECK(bad == 0);
	for (i = 0; i < 100000; i += 2)
		if (!migr_u32map_del(&m, i * 2654435761u))
			bad++;
	CHECK(bad == 0);
	for (i = 0; i < 100000; i++) {
		bool found = migr_u32map_get(&m, i * 2654435761u, &v);

		if (found != (i % 2 == 1) || (found && v != i))
			bad++;
	}
	CHECK(bad == 0);
	migr_u32map_free(&m);
}

/* Churn of insert/delete must not fill the table with tombstones */
static void test_map_churn(void)
{
	struct migr_u32map m = {};
	uint32_t i, v, bad = 0, cap;

	for (i = 0; i < 64; i++)
		migr_u32map_put(&m, i, i);
	cap = m.cap;
	for (i = 64; i < 200000; i++) {
		migr_u32map_del(&m, i - 64);
		if (migr_u32map_put(&m, i, i))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(m.live == 64);
	CHECK(m.cap <= cap * 2);
	for (i = 200000 - 64; i < 200000; i++)
		if (!migr_u32map_get(&m, i, &v) || v != i)
			bad++;
	CHECK(bad == 0);
	migr_u32map_free(&m);
}

/* The two keys used as slot markers are stored like any other */
static void test_map_reserved_keys(void)
{
	struct migr_u32map m = {};
	uint32_t v;

	CHECK(migr_u32map_put(&m, 0xffffffffu, 7) == 0);
	CHECK(migr_u32map_put(&m, 0xfffffffeu, 8) == 0);
	CHECK(migr_u32map_put(&m, 0, 9) == 0);
	CHECK(migr_u32map_get(&m, 0xffffffffu, &v) && v == 7);
	CHECK(migr_u32map_get(&m, 0xfffffffeu, &v) && v == 8);
	CHECK(migr_u32map_get(&m, 0, &v) && v == 9);
	CHECK(migr_u32map_del(&m, 0xffffffffu));
	CHECK(!migr_u32map_get(&m, 0xffffffffu, &v));
	CHECK(migr_u32map_get(&m, 0xfffffffeu, &v) && v == 8);
	migr_u32map_free(&m);
}

static void test_xlate_identity_then_remap(void)
{
	struct migr_xlate x = {};

	/* Nothing remapped: every kind is the identity */
	CHECK(!x.active);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x1234);
	CHECK(migr_qpn_to_virt(&x, 17) == 17);
	CHECK(migr_remote_rkey_to_phys(&x, 99) == 99);
	CHECK(migr_xlate_new_virt(&x, MIGR_XLATE_LKEY, 0x55) == 0x55);

	CHECK(migr_xlate_set(&x, MIGR_XLATE_LKEY, 0x1234, 0x9999) == 0);
	CHECK(x.active);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x9999);
	/* Unmapped values and other kinds are untouched */
	CHECK(migr_lkey_to_phys(&x, 0x1235) == 0x1235);
	CHECK(migr_rkey_to_phys(&x, 0x1234) == 0x1234);

	migr_xlate_forget(&x, MIGR_XLATE_LKEY, 0x1234);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x1234);
	migr_xlate_destroy(&x);
	CHECK(!x.active);
}

int main(void)
{
	test_map_basic();
	test_map_growth();
	test_map_churn();
	test_map_reserved_keys();
	test_xlate_identity_then_remap();
	return unit_done("test_xlate");
}
