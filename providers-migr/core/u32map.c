// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The writer side of the u32 map (see u32map.h for the concurrency rules) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "u32map.h"

static uint64_t slot_of(uint32_t key, uint32_t val)
{
	return (uint64_t)key << 32 | val;
}

static bool is_marker(uint64_t s)
{
	return (uint32_t)(s >> 32) == MIGR_U32MAP_SPARE_KEY;
}

static void store_slot(uint64_t *slot, uint64_t s)
{
	__atomic_store_n(slot, s, __ATOMIC_RELEASE);
}

/*
 * The slot holding key, or NULL. With for_insert, the slot where key
 * would go instead: the first tombstone on its probe path, else the empty
 * slot ending it. The whole path is walked so a key is never stored twice.
 */
static uint64_t *find_slot(struct migr_u32tab *t, uint32_t key, bool for_insert)
{
	uint32_t i = migr_u32tab_home(t, key);
	uint64_t *tomb = NULL;

	for (;; i = (i + 1) & t->mask) {
		uint64_t s = t->slot[i];

		if (!is_marker(s) && (uint32_t)(s >> 32) == key)
			return &t->slot[i];
		if (s == MIGR_U32MAP_EMPTY)
			return for_insert ? (tomb ? tomb : &t->slot[i]) : NULL;
		if (s == MIGR_U32MAP_DELETED && for_insert && !tomb)
			tomb = &t->slot[i];
	}
}

/* Build a table of cap slots holding the live entries, then publish it */
static int rehash(struct migr_u32map *m, uint32_t cap)
{
	struct migr_u32tab *old = m->tab, *t;
	uint32_t i;

	t = malloc(sizeof(*t) + sizeof(t->slot[0]) * cap);
	if (!t)
		return ENOMEM;
	t->mask = cap - 1;
	t->shift = 32 - __builtin_ctz(cap);
	t->retired = old;
	memset(t->slot, 0xff, sizeof(t->slot[0]) * cap);
	m->used = 0;
	for (i = 0; old && i <= old->mask; i++) {
		if (is_marker(old->slot[i]))
			continue;
		*find_slot(t, old->slot[i] >> 32, true) = old->slot[i];
		m->used++;
	}
	__atomic_store_n(&m->tab, t, __ATOMIC_RELEASE);
	return 0;
}

int migr_u32map_put(struct migr_u32map *m, uint32_t key, uint32_t val)
{
	uint64_t *slot;

	if (key == MIGR_U32MAP_SPARE_KEY) {
		__atomic_store_n(&m->spare, MIGR_U32MAP_SPARE_SET | val,
				 __ATOMIC_RELEASE);
		return 0;
	}
	if (m->tab) {
		slot = find_slot(m->tab, key, false);
		if (slot) {
			store_slot(slot, slot_of(key, val));
			return 0;
		}
	}
	/* Keep live + tombstone slots at most half; a rehash drops tombstones */
	if (!m->tab || (m->used + 1) * 2 > m->tab->mask + 1) {
		uint32_t cap = m->tab ? m->tab->mask + 1 : 16;

		while ((m->live + 1) * 4 > cap)
			cap *= 2;
		if (rehash(m, cap))
			return ENOMEM;
	}
	slot = find_slot(m->tab, key, true);
	if (*slot == MIGR_U32MAP_EMPTY)
		m->used++;
	m->live++;
	store_slot(slot, slot_of(key, val));
	return 0;
}

bool migr_u32map_del(struct migr_u32map *m, uint32_t key)
{
	uint64_t *slot;

	if (key == MIGR_U32MAP_SPARE_KEY) {
		bool had = m->spare & MIGR_U32MAP_SPARE_SET;

		__atomic_store_n(&m->spare, 0, __ATOMIC_RELEASE);
		return had;
	}
	if (!m->tab)
		return false;
	slot = find_slot(m->tab, key, false);
	if (!slot)
		return false;
	store_slot(slot, MIGR_U32MAP_DELETED);
	m->live--;
	return true;
}

uint32_t migr_u32map_capacity(const struct migr_u32map *m)
{
	return m->tab ? m->tab->mask + 1 : 0;
}

void migr_u32map_free(struct migr_u32map *m)
{
	struct migr_u32tab *t = m->tab;

	while (t) {
		struct migr_u32tab *next = t->retired;

		free(t);
		t = next;
	}
	memset(m, 0, sizeof(*m));
}
