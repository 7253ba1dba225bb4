// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for migr's translation tables
 * (providers-migr/core/xlate.c)
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "xlate.h"

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
	CHECK(m.used * 2 <= migr_u32map_capacity(&m));
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
	cap = migr_u32map_capacity(&m);
	for (i = 64; i < 200000; i++) {
		migr_u32map_del(&m, i - 64);
		if (migr_u32map_put(&m, i, i))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(m.live == 64);
	CHECK(migr_u32map_capacity(&m) <= cap * 2);
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

static void test_identity_until_collision(void)
{
	struct migr_xlate x;
	uint32_t v = 0;

	migr_xlate_init(&x);
	/* Nothing remapped: every kind is the identity, maps stay empty */
	CHECK(migr_xlate_born(&x, MIGR_XLATE_LKEY, 0x1234, &v) == 0);
	CHECK(v == 0x1234);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_QPN, 17, &v) == 0 && v == 17);
	CHECK(!x.active);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x1234);
	CHECK(migr_qpn_to_virt(&x, 17) == 17);
	CHECK(migr_remote_rkey_to_phys(&x, 99) == 99);

	/* A switch moves the MR: its virtual key now names another one */
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_LKEY, 0x1234, 0x9999) == 0);
	CHECK(x.active);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x9999);
	CHECK(migr_lkey_to_phys(&x, 0x1334) == 0x1334);
	CHECK(migr_rkey_to_phys(&x, 0x1234) == 0x1234);

	/*
	 * A new MR whose physical key has that live virtual index: a fresh
	 * index, the same key byte
	 */
	CHECK(migr_xlate_born(&x, MIGR_XLATE_LKEY, 0x1277, &v) == 0);
	CHECK(v >> 8 != 0x12 && v >> 8 != 0x99 && (v & 0xff) == 0x77);
	CHECK(migr_lkey_to_phys(&x, v) == 0x1277);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x9999);

	/* Gone: the value is free again and maps to nothing */
	migr_xlate_gone(&x, MIGR_XLATE_LKEY, 0x1234);
	CHECK(migr_lkey_to_phys(&x, 0x1234) == 0x1234);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_LKEY, 0x1234, &v) == 0);
	CHECK(v == 0x1234);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_LKEY, 0xabcdef, 1) == ENOENT);
	migr_xlate_destroy(&x);
}

/*
 * Keys map by index: another key byte of a known index (a memory window
 * bound again, ibv_inc_rkey()) translates with no new entry, both ways
 * of filling a map (an own object remapped, a partner's pair set)
 */
static void test_key_bytes(void)
{
	struct migr_xlate x, replica;
	uint32_t v = 0, p = 0;

	migr_xlate_init(&x);
	migr_xlate_init(&replica);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_RKEY, 0x4105, &v) == 0);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_RKEY, 0x4105, 0x7a3c) == 0);
	CHECK(migr_rkey_to_phys(&x, 0x4105) == 0x7a3c);
	/* key byte 0x06 (0x05 + 1): the index's other byte, the same XOR */
	CHECK(migr_rkey_to_phys(&x, 0x4106) == 0x7a3f);
	CHECK(migr_xlate_phys_of(&x, MIGR_XLATE_RKEY, 0x4106, &p) &&
	      p == 0x7a3f);
	/* every byte of the index maps to a distinct byte of the other */
	for (v = 0; v < 256; v++)
		CHECK((migr_rkey_to_phys(&x, 0x4100 | v) & ~0xffu) == 0x7a00);
	CHECK(migr_rkey_to_phys(&x, 0x4100) != migr_rkey_to_phys(&x, 0x41ff));

	/* a type 1 window bound again: the lower gave it key byte 0x9d */
	CHECK(migr_xlate_rekey(&x, MIGR_XLATE_RKEY, 0x4105, 0x7a9d, &v));
	CHECK((v & ~0xffu) == 0x4100 && migr_rkey_to_phys(&x, v) == 0x7a9d);
	CHECK(!migr_xlate_rekey(&x, MIGR_XLATE_RKEY, 0x4105, 0x7b9d, &v));
	CHECK(!migr_xlate_rekey(&x, MIGR_XLATE_RKEY, 0x5105, 0x7a9d, &v));

	/* a partner's pair in a replica covers every byte of its index */
	CHECK(migr_xlate_set(&replica, MIGR_XLATE_RKEY, 0x4105, 0x7a3c) == 0);
	CHECK(migr_remote_rkey_to_phys(&replica, 0x4105) == 0x7a3c);
	CHECK(migr_remote_rkey_to_phys(&replica, 0x4106) == 0x7a3f);
	CHECK(migr_remote_rkey_to_phys(&replica, 0x4205) == 0x4205);
	migr_xlate_forget(&replica, MIGR_XLATE_RKEY, 0x41aa);
	CHECK(migr_remote_rkey_to_phys(&replica, 0x4106) == 0x4106);

	/* pairs as a partner sends them, up to what follows the list */
	{
		const char *end;
		unsigned int n;

		CHECK(!migr_xlate_set_rkeys(&replica, "4105:7a3c,5201:9902 x",
					    &end, &n));
		CHECK(n == 2 && !strcmp(end, " x"));
		CHECK(migr_remote_rkey_to_phys(&replica, 0x5201) == 0x9902);
		CHECK(migr_remote_rkey_to_phys(&replica, 0x4106) == 0x7a3f);
		CHECK(!migr_xlate_set_rkeys(&replica, "zz", &end, &n));
		CHECK(n == 0 && !strcmp(end, "zz"));
	}
	migr_xlate_destroy(&replica);
	migr_xlate_destroy(&x);
}

/* Two QPs swap physical numbers on the new device: completions follow */
static void test_qpn_swap(void)
{
	struct migr_xlate x;
	uint32_t a, b, p;

	migr_xlate_init(&x);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_QPN, 5, &a) == 0 && a == 5);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_QPN, 7, &b) == 0 && b == 7);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, a, 7) == 0);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, b, 5) == 0);
	CHECK(migr_qpn_to_virt(&x, 7) == 5);
	CHECK(migr_qpn_to_virt(&x, 5) == 7);
	CHECK(migr_xlate_phys_of(&x, MIGR_XLATE_QPN, 5, &p) && p == 7);
	/* a partner in this process names them by their virtual numbers */
	CHECK(migr_remote_qpn_to_phys(&x, 5) == 7);
	CHECK(migr_remote_qpn_to_phys(&x, 7) == 5);
	CHECK(migr_remote_qpn_to_virt(&x, 7) == 5);
	/* Switch back: identity again, and no stale entry lies */
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, b, 7) == 0);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, a, 5) == 0);
	CHECK(migr_qpn_to_virt(&x, 7) == 7);
	CHECK(migr_qpn_to_virt(&x, 5) == 5);
	CHECK(x.map[MIGR_XLATE_QPN].live == 0);
	CHECK(x.map[MIGR_XLATE_QPN_PHYS].live == 0);
	CHECK(migr_remote_qpn_to_phys(&x, 5) == 5);
	migr_xlate_destroy(&x);
}

/*
 * Objects rebuilt with their own numbers (migr_rxe(7)): the tables empty
 * again and lookups back on the fast path; a partner that learns of it
 * fetches again (gen moved); a replica told "same number" holds nothing.
 */
static void test_numbers_kept(void)
{
	struct migr_xlate x, r;
	uint32_t q, k;
	uint64_t gen;

	migr_xlate_init(&x);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_QPN, 0x11, &q) == 0 && q == 0x11);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_LKEY, 0x1234, &k) == 0 &&
	      k == 0x1234);
	CHECK(!x.active);
	/* a move without the module: translated */
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, q, 0x19) == 0);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_LKEY, k, 0x5634) == 0);
	CHECK(x.active && migr_lkey_to_phys(&x, 0x1234) == 0x5634);
	/* the next one with it: each number its own again */
	gen = x.gen;
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, q, 0x11) == 0);
	CHECK(x.active && x.gen > gen); /* the key is still translated */
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_LKEY, k, 0x1234) == 0);
	CHECK(!x.active);
	CHECK(migr_qpn_to_virt(&x, 0x11) == 0x11 &&
	      migr_lkey_to_phys(&x, 0x1234) == 0x1234);
	/* a later translated move turns it on again */
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, q, 0x21) == 0);
	CHECK(x.active && migr_qpn_to_virt(&x, 0x21) == 0x11);
	migr_xlate_destroy(&x);

	migr_xlate_init(&r);
	CHECK(migr_xlate_set(&r, MIGR_XLATE_RKEY, 0x1234, 0x1234) == 0);
	CHECK(!r.active && r.map[MIGR_XLATE_RKEY].live == 0);
	CHECK(migr_xlate_set(&r, MIGR_XLATE_QPN_PHYS, 0x11, 0x19) == 0);
	CHECK(r.active && migr_remote_qpn_to_phys(&r, 0x11) == 0x19);
	CHECK(migr_xlate_set(&r, MIGR_XLATE_QPN_PHYS, 0x11, 0x11) == 0);
	CHECK(!r.active && migr_remote_qpn_to_phys(&r, 0x11) == 0x11);
	migr_xlate_destroy(&r);
}

/* A fresh QPN stays a 24-bit number other than 0 and 1 */
static void test_fresh_qpn_range(void)
{
	struct migr_xlate x;
	uint32_t v, i, bad = 0;

	migr_xlate_init(&x);
	CHECK(migr_xlate_born(&x, MIGR_XLATE_QPN, 0x10, &v) == 0);
	CHECK(migr_xlate_remap(&x, MIGR_XLATE_QPN, 0x10, 0x20) == 0);
	for (i = 0; i < 1000; i++) {
		/* the new device keeps handing out 0x10 (a live virtual) */
		if (migr_xlate_born(&x, MIGR_XLATE_QPN, 0x10, &v) ||
		    v > 0xffffff || v < 2 || v == 0x10)
			bad++;
		migr_xlate_gone(&x, MIGR_XLATE_QPN, v);
	}
	CHECK(bad == 0);
	migr_xlate_destroy(&x);
}

#define NOBJ 300
#define NSWITCH 25

/*
 * Objects live through many switches, each onto a device that numbers them
 * differently, while others are born and die: every live object always
 * translates to its current physical value and virtual values stay unique.
 */
static void test_many_switches(void)
{
	enum migr_xlate_kind kinds[] = { MIGR_XLATE_LKEY, MIGR_XLATE_QPN };
	uint32_t virt[NOBJ], phys[NOBJ], bad = 0, dup = 0;
	unsigned int seed = 1, k, s, i, j;
	bool alive[NOBJ];

	for (k = 0; k < 2; k++) {
		enum migr_xlate_kind kind = kinds[k];
		struct migr_xlate x;
		uint32_t base = 0x100;

		migr_xlate_init(&x);
		for (i = 0; i < NOBJ; i++) {
			phys[i] = base + i;
			alive[i] =
				!migr_xlate_born(&x, kind, phys[i], &virt[i]);
		}
		for (s = 0; s < NSWITCH; s++) {
			/* the new device numbers from a small, shifting base */
			base = 0x100 + (rand_r(&seed) % 64);
			for (i = 0; i < NOBJ; i++) {
				if (!alive[i])
					continue;
				phys[i] = base + (i * 7 + s) % (NOBJ * 2);
				/* physical values are unique on one device */
				for (j = 0; j < i; j++)
					if (alive[j] && phys[j] == phys[i])
						phys[i] += NOBJ * 4 + i;
				if (migr_xlate_remap(&x, kind, virt[i],
						     phys[i]))
					bad++;
			}
			/* churn: some die, their slots are born again */
			for (i = s % 7; i < NOBJ; i += 7) {
				uint32_t p = 0x100000 + s * NOBJ + i;

				migr_xlate_gone(&x, kind, virt[i]);
				phys[i] = p & 0xffffff;
				if (migr_xlate_born(&x, kind, phys[i],
						    &virt[i]))
					bad++;
			}
			for (i = 0; i < NOBJ; i++) {
				uint32_t got =
					kind == MIGR_XLATE_QPN ?
						migr_qpn_to_virt(&x, phys[i]) :
						migr_lkey_to_phys(&x, virt[i]);

				if (got != (kind == MIGR_XLATE_QPN ? virt[i] :
								     phys[i]))
					bad++;
				if (kind == MIGR_XLATE_QPN &&
				    migr_remote_qpn_to_phys(&x, virt[i]) !=
					    phys[i])
					bad++;
				for (j = 0; j < i; j++)
					if (virt[j] == virt[i])
						dup++;
			}
		}
		migr_xlate_destroy(&x);
	}
	CHECK(bad == 0);
	CHECK(dup == 0);
}

/*
 * Readers look up stable keys while a writer churns the same map through
 * many rehashes: a reader must never miss a stable key or see another
 * key's value.
 */
#define STABLE 512
#define READERS 2

static struct migr_u32map shared;
static volatile bool stop;
static unsigned long reader_errors, reader_lookups;

static void *reader(void *arg)
{
	unsigned long err = 0, n = 0;
	uint32_t i, v;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		for (i = 0; i < STABLE; i++, n++)
			if (!migr_u32map_get(&shared, i * 3 + 1, &v) ||
			    v != i * 3 + 1 + 0x40000000u)
				err++;
	}
	__atomic_add_fetch(&reader_errors, err, __ATOMIC_RELAXED);
	__atomic_add_fetch(&reader_lookups, n, __ATOMIC_RELAXED);
	return NULL;
}

static void test_concurrent_readers(void)
{
	pthread_t th[READERS];
	struct migr_u32tab *tab = NULL;
	uint32_t i, round, rehashes = 0;
	int r;

	for (i = 0; i < STABLE; i++)
		migr_u32map_put(&shared, i * 3 + 1, i * 3 + 1 + 0x40000000u);
	for (r = 0; r < READERS; r++)
		pthread_create(&th[r], NULL, reader, NULL);
	for (round = 0; round < 400; round++) {
		/* churn keys that interleave with the stable ones */
		for (i = 0; i < 2000; i++)
			migr_u32map_put(&shared,
					0x10000000u + round * 6000 + i * 3,
					round);
		for (i = 0; i < 2000; i++)
			migr_u32map_del(&shared,
					0x10000000u + round * 6000 + i * 3);
		/* rewrite stable values in place with the same value */
		for (i = 0; i < STABLE; i += 17)
			migr_u32map_put(&shared, i * 3 + 1,
					i * 3 + 1 + 0x40000000u);
		if (shared.tab != tab) {
			tab = shared.tab;
			rehashes++;
		}
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (r = 0; r < READERS; r++)
		pthread_join(th[r], NULL);
	printf("concurrent: %lu lookups across %u tables\n", reader_lookups,
	       rehashes);
	CHECK(reader_lookups > 0);
	CHECK(rehashes > 50);
	CHECK(reader_errors == 0);
	migr_u32map_free(&shared);
}

int main(void)
{
	test_map_basic();
	test_map_growth();
	test_map_churn();
	test_map_reserved_keys();
	test_identity_until_collision();
	test_key_bytes();
	test_qpn_swap();
	test_numbers_kept();
	test_fresh_qpn_range();
	test_many_switches();
	test_concurrent_readers();
	return unit_done("test_xlate");
}
