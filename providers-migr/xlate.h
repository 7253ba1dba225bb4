/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Translation of the identifiers the application sees (virtual) to those of
 * the lower device (physical): local lkeys/rkeys, QPNs, SRQ numbers, and the
 * remote rkeys/QPNs of partners. Until anything was ever remapped every
 * function is the identity behind one predictable branch; the tables are
 * filled by a live switch (see docs/architecture.md).
 */
#ifndef MIGR_XLATE_H
#define MIGR_XLATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* An open-addressing u32 -> u32 map: O(1), no lists, grows by rehash */
struct migr_u32map {
	uint32_t *keys;
	uint32_t *vals;
	uint32_t cap; /* power of two, 0 when empty */
	uint32_t used; /* live + deleted slots */
	uint32_t live;
	/* the two keys that double as slot markers, stored aside */
	uint32_t reserved_set;
	uint32_t reserved_val[2];
};

int migr_u32map_put(struct migr_u32map *m, uint32_t key, uint32_t val);
bool migr_u32map_get(const struct migr_u32map *m, uint32_t key, uint32_t *val);
bool migr_u32map_del(struct migr_u32map *m, uint32_t key);
void migr_u32map_free(struct migr_u32map *m);

enum migr_xlate_kind {
	MIGR_XLATE_LKEY, /* local lkey: virtual -> physical */
	MIGR_XLATE_RKEY, /* local rkey/MW rkey: virtual -> physical */
	MIGR_XLATE_QPN, /* local QPN: physical -> virtual */
	MIGR_XLATE_SRQN, /* local SRQ number: virtual -> physical */
	MIGR_XLATE_REMOTE_RKEY, /* a partner's rkey: virtual -> physical */
	MIGR_XLATE_REMOTE_QPN, /* a partner's QPN: virtual -> physical */
	MIGR_XLATE_REMOTE_QPN_VIRT, /* a partner's QPN: physical -> virtual */
	MIGR_XLATE_REMOTE_SRQN, /* a partner's XRC SRQ number: v -> p */
	MIGR_XLATE_NKINDS,
};

struct migr_xlate {
	/* false while nothing was ever remapped: identity fast path */
	bool active;
	struct migr_u32map map[MIGR_XLATE_NKINDS];
};

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif

static inline uint32_t migr_xlate_lookup(const struct migr_xlate *x,
					 enum migr_xlate_kind kind,
					 uint32_t value)
{
	uint32_t out;

	if (likely(!x->active))
		return value;
	return migr_u32map_get(&x->map[kind], value, &out) ? out : value;
}

static inline uint32_t migr_lkey_to_phys(const struct migr_xlate *x,
					 uint32_t lkey)
{
	return migr_xlate_lookup(x, MIGR_XLATE_LKEY, lkey);
}

static inline uint32_t migr_rkey_to_phys(const struct migr_xlate *x,
					 uint32_t rkey)
{
	return migr_xlate_lookup(x, MIGR_XLATE_RKEY, rkey);
}

static inline uint32_t migr_qpn_to_virt(const struct migr_xlate *x,
					uint32_t qpn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_QPN, qpn);
}

static inline uint32_t migr_srqn_to_phys(const struct migr_xlate *x,
					 uint32_t srqn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_SRQN, srqn);
}

static inline uint32_t migr_remote_rkey_to_phys(const struct migr_xlate *x,
						uint32_t rkey)
{
	return migr_xlate_lookup(x, MIGR_XLATE_REMOTE_RKEY, rkey);
}

static inline uint32_t migr_remote_qpn_to_phys(const struct migr_xlate *x,
					       uint32_t qpn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_REMOTE_QPN, qpn);
}

static inline uint32_t migr_remote_qpn_to_virt(const struct migr_xlate *x,
					       uint32_t qpn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_REMOTE_QPN_VIRT, qpn);
}

static inline uint32_t migr_remote_srqn_to_phys(const struct migr_xlate *x,
						uint32_t srqn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_REMOTE_SRQN, srqn);
}

/*
 * Virtual value for an identifier born on the lower device: the physical
 * one, unless that collides with a live virtual value after a remap.
 */
uint32_t migr_xlate_new_virt(struct migr_xlate *x, enum migr_xlate_kind kind,
			     uint32_t phys);
int migr_xlate_set(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t from, uint32_t to);
void migr_xlate_forget(struct migr_xlate *x, enum migr_xlate_kind kind,
		       uint32_t from);
void migr_xlate_destroy(struct migr_xlate *x);

#endif /* MIGR_XLATE_H */
