// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Translation tables. The data path only reaches this file once something
 * was remapped (see xlate.h); everything here is O(1) expected.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xlate.h"

/* Slot states live in the key array; the two marker keys are kept aside */
#define SLOT_EMPTY 0xffffffffu
#define SLOT_DELETED 0xfffffffeu

static uint32_t hash32(uint32_t k)
{
	/* Murmur3's finalizer: cheap and spreads sequential keys */
	k ^= k >> 16;
	k *= 0x85ebca6bu;
	k ^= k >> 13;
	k *= 0xc2b2ae35u;
	k ^= k >> 16;
	return k;
}

/* Keys equal to a slot marker are stored in the map's reserved_* fields */
static bool key_is_reserved(uint32_t key)
{
	return key == SLOT_EMPTY || key == SLOT_DELETED;
}

static uint32_t *find_slot(const struct migr_u32map *m, uint32_t key,
			   bool for_insert)
{
	uint32_t mask = m->cap - 1, i = hash32(key) & mask;
	uint32_t *tomb = NULL;

	for (;;) {
		uint32_t k = m->keys[i];

		if (k == key)
			return &m->keys[i];
		if (k == SLOT_EMPTY)
			return for_insert ? (tomb ? tomb : &m->keys[i]) : NULL;
		if (k == SLOT_DELETED && for_insert && !tomb)
			tomb = &m->keys[i];
		i = (i + 1) & mask;
	}
}

static int rehash(struct migr_u32map *m, uint32_t new_cap)
{
	struct migr_u32map n = {
		.cap = new_cap,
		.reserved_set = m->reserved_set,
		.reserved_val = { m->reserved_val[0], m->reserved_val[1] },
	};
	uint32_t i;

	n.keys = malloc(sizeof(*n.keys) * new_cap);
	n.vals = malloc(sizeof(*n.vals) * new_cap);
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return ENOMEM;
	}
	memset(n.keys, 0xff, sizeof(*n.keys) * new_cap);

	for (i = 0; i < m->cap; i++) {
		uint32_t *slot;

		if (m->keys[i] == SLOT_EMPTY || m->keys[i] == SLOT_DELETED)
			continue;
		slot = find_slot(&n, m->keys[i], true);
		*slot = m->keys[i];
		n.vals[slot - n.keys] = m->vals[i];
		n.used++;
		n.live++;
	}
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int migr_u32map_put(struct migr_u32map *m, uint32_t key, uint32_t val)
{
	uint32_t *slot;

	if (key_is_reserved(key)) {
		m->reserved_set |= 1u << (key - SLOT_DELETED);
		m->reserved_val[key - SLOT_DELETED] = val;
		return 0;
	}
	/* keep live + tombstone slots under half; a rehash drops tombstones */
	if ((m->used + 1) * 2 > m->cap) {
		uint32_t cap = m->cap ? m->cap : 16;

		while ((m->live + 1) * 2 > cap)
			cap *= 2;
		if (rehash(m, cap))
			return ENOMEM;
	}
	slot = find_slot(m, key, true);
	if (*slot != key) {
		if (*slot == SLOT_EMPTY)
			m->used++;
		m->live++;
		*slot = key;
	}
	m->vals[slot - m->keys] = val;
	return 0;
}

bool migr_u32map_get(const struct migr_u32map *m, uint32_t key, uint32_t *val)
{
	uint32_t *slot;

	if (key_is_reserved(key)) {
		if (!(m->reserved_set & (1u << (key - SLOT_DELETED))))
			return false;
		*val = m->reserved_val[key - SLOT_DELETED];
		return true;
	}
	if (!m->cap)
		return false;
	slot = find_slot(m, key, false);
	if (!slot)
		return false;
	*val = m->vals[slot - m->keys];
	return true;
}

bool migr_u32map_del(struct migr_u32map *m, uint32_t key)
{
	uint32_t *slot;

	if (key_is_reserved(key)) {
		uint32_t bit = 1u << (key - SLOT_DELETED);
		bool had = m->reserved_set & bit;

		m->reserved_set &= ~bit;
		return had;
	}
	if (!m->cap)
		return false;
	slot = find_slot(m, key, false);
	if (!slot)
		return false;
	*slot = SLOT_DELETED;
	m->live--;
	return true;
}

void migr_u32map_free(struct migr_u32map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

int migr_xlate_set(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t from, uint32_t to)
{
	int ret = migr_u32map_put(&x->map[kind], from, to);

	/* Publish only after the entry is in place */
	if (!ret && !x->active)
		__atomic_store_n(&x->active, true, __ATOMIC_RELEASE);
	return ret;
}

void migr_xlate_forget(struct migr_xlate *x, enum migr_xlate_kind kind,
		       uint32_t from)
{
	migr_u32map_del(&x->map[kind], from);
}

uint32_t migr_xlate_new_virt(struct migr_xlate *x __attribute__((unused)),
			     enum migr_xlate_kind kind __attribute__((unused)),
			     uint32_t phys)
{
	/*
	 * While nothing was remapped the virtual value is the physical one.
	 * Choosing fresh values that avoid live virtual ones after a remap is
	 * part of the live switch.
	 */
	return phys;
}

void migr_xlate_destroy(struct migr_xlate *x)
{
	int i;

	for (i = 0; i < MIGR_XLATE_NKINDS; i++)
		migr_u32map_free(&x->map[i]);
	x->active = false;
}
