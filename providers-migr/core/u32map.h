/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * An open-addressing u32 -> u32 map whose lookups are lock-free and safe
 * against one concurrent writer: the data path reads it while a live switch
 * or a control verb updates it. Each slot holds key and value in one 64-bit
 * word, so a reader never sees a key with another key's value. Writers are
 * serialized by the caller. A rehash publishes a new table; the old one is
 * kept until the map is freed, since a reader may still be walking it
 * (rehashes only happen when the table grows or fills with tombstones).
 */
#ifndef MIGR_U32MAP_H
#define MIGR_U32MAP_H

#include <stdbool.h>
#include <stdint.h>

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

/* Slot markers have key 0xffffffff, which therefore lives in map->spare */
#define MIGR_U32MAP_SPARE_KEY 0xffffffffu
#define MIGR_U32MAP_EMPTY 0xffffffffffffffffull
#define MIGR_U32MAP_DELETED 0xfffffffffffffffeull
#define MIGR_U32MAP_SPARE_SET (1ull << 32)

struct migr_u32tab {
	uint32_t mask; /* capacity - 1, capacity a power of two */
	uint32_t shift; /* 32 - log2(capacity) */
	struct migr_u32tab *retired; /* tables this one replaced */
	uint64_t slot[]; /* key << 32 | value, or a marker */
};

struct migr_u32map {
	struct migr_u32tab *tab; /* published with release; NULL when empty */
	uint64_t spare; /* MIGR_U32MAP_SPARE_SET | value for the spare key */
	/* writer side only */
	uint32_t used; /* live + deleted slots */
	uint32_t live;
};

/*
 * A key's home slot: Fibonacci hashing, the top bits of one multiply by
 * 2^32 / phi. It spreads sequential QPNs and index-above-key-byte lkeys
 * evenly and costs a few cycles on the post and poll paths.
 */
static inline uint32_t migr_u32tab_home(const struct migr_u32tab *t,
					uint32_t key)
{
	return (key * 0x9e3779b9u) >> t->shift;
}

/* The table readers walk now; NULL while the map is empty */
static inline const struct migr_u32tab *
migr_u32map_tab(const struct migr_u32map *m)
{
	return __atomic_load_n(&m->tab, __ATOMIC_ACQUIRE);
}

/*
 * A lookup in a table taken once with migr_u32map_tab(), for a run of
 * keys that are never the spare key (QPNs are 24 bits).
 */
static inline bool migr_u32tab_get(const struct migr_u32tab *t, uint32_t key,
				   uint32_t *val)
{
	uint32_t i;

	if (!t)
		return false;
	/* Terminates: at least half of the slots are always empty */
	for (i = migr_u32tab_home(t, key);; i = (i + 1) & t->mask) {
		uint64_t s = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);

		if ((uint32_t)(s >> 32) == key) {
			*val = (uint32_t)s;
			return true;
		}
		if (s == MIGR_U32MAP_EMPTY)
			return false;
	}
}

static inline bool migr_u32map_get(const struct migr_u32map *m, uint32_t key,
				   uint32_t *val)
{
	if (unlikely(key == MIGR_U32MAP_SPARE_KEY)) {
		uint64_t s = __atomic_load_n(&m->spare, __ATOMIC_ACQUIRE);

		*val = (uint32_t)s;
		return s & MIGR_U32MAP_SPARE_SET;
	}
	return migr_u32tab_get(migr_u32map_tab(m), key, val);
}

int migr_u32map_put(struct migr_u32map *m, uint32_t key, uint32_t val);
bool migr_u32map_del(struct migr_u32map *m, uint32_t key);
uint32_t migr_u32map_capacity(const struct migr_u32map *m);
void migr_u32map_free(struct migr_u32map *m);

#endif /* MIGR_U32MAP_H */
