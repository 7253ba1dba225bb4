// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Unit tests for GIDs as text and a context's GID history (gid.c) */
#include <string.h>

#include "gid.h"
#include "unit.h"

static union ibv_gid gid_of(uint8_t last)
{
	union ibv_gid g = {
		.raw = { [10] = 0xff, [11] = 0xff, 10, 9, 0, last }
	};

	return g;
}

static struct migr_gid_history one_move(uint8_t from, uint8_t to)
{
	struct migr_gid_history m = { .n = 1 };

	m.e[0].from = gid_of(from);
	m.e[0].to = gid_of(to);
	return m;
}

static bool leads(const struct migr_gid_history *h, uint8_t from, uint8_t to)
{
	union ibv_gid a = gid_of(from), now, want = gid_of(to);

	return migr_gid_history_find(h, &a, &now) &&
	       !memcmp(&now, &want, sizeof(now));
}

static void test_hex(void)
{
	union ibv_gid g = gid_of(11), back;
	char hex[33];

	migr_gid_hex(&g, hex);
	CHECK(!strcmp(hex, "00000000000000000000ffff0a09000b"));
	CHECK(!migr_gid_parse(hex, &back) && !memcmp(&g, &back, sizeof(g)));
	CHECK(!migr_gid_parse("00000000000000000000FFFF0a09000b", &back) &&
	      !memcmp(&g, &back, sizeof(g)));
	/* JSON strings are read whole (migr_json.c): nothing may follow */
	CHECK(migr_gid_parse("00000000000000000000ffff0a09000b\"", &back));
	CHECK(migr_gid_parse("00000000000000000000ffff0a09000", &back));
	CHECK(migr_gid_parse("00000000000000000000ffff0a09000b0", &back));
	CHECK(migr_gid_parse("00000000000000000000ffff0a09000x", &back));
}

static void test_history(void)
{
	struct migr_gid_history h = { 0 }, m;
	union ibv_gid now, g;
	int i;

	/* .1 -> .11: the old GID leads to the new one */
	m = one_move(1, 11);
	migr_gid_history_add(&h, &m);
	CHECK(h.n == 1 && leads(&h, 1, 11));
	g = gid_of(11);
	CHECK(!migr_gid_history_find(&h, &g, &now));
	/* .11 -> .21: both earlier GIDs lead to .21 */
	m = one_move(11, 21);
	migr_gid_history_add(&h, &m);
	CHECK(h.n == 2 && leads(&h, 1, 21) && leads(&h, 11, 21));
	/* back to .1: .1 is its own again, the others lead there */
	m = one_move(21, 1);
	migr_gid_history_add(&h, &m);
	CHECK(h.n == 2 && leads(&h, 11, 1) && leads(&h, 21, 1));
	g = gid_of(1);
	CHECK(!migr_gid_history_find(&h, &g, &now));
	/* bounded: the oldest go first */
	for (i = 0; i < 2 * MIGR_GID_HISTORY; i++) {
		m = one_move(100 + i, 101 + i);
		migr_gid_history_add(&h, &m);
	}
	CHECK(h.n == MIGR_GID_HISTORY);
	CHECK(leads(&h, 100 + 2 * MIGR_GID_HISTORY - 1,
		    100 + 2 * MIGR_GID_HISTORY));
	CHECK(leads(&h, 100 + MIGR_GID_HISTORY, 100 + 2 * MIGR_GID_HISTORY));
	g = gid_of(11);
	CHECK(!migr_gid_history_find(&h, &g, &now));
}

int main(void)
{
	test_hex();
	test_history();
	return unit_done("test_gid");
}
