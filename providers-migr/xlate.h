/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Translation of the identifiers the application sees (virtual) to those of
 * the lower device (physical) and back. A context has one table set for its
 * own lkeys, rkeys, QPNs and SRQ numbers; remote rkeys and QPNs of a
 * partner are looked up in the table set the QP points at. Until anything
 * was remapped every lookup is the identity behind one predictable branch.
 *
 * Local kinds follow an object's life: migr_xlate_born() when the lower
 * object appears (it picks the virtual value, avoiding every live one),
 * migr_xlate_remap() when a switch rebuilt it, migr_xlate_gone() when it is
 * destroyed. Remote kinds are set by the switch protocol with
 * migr_xlate_set()/migr_xlate_forget(). Writers take x->lock; readers take
 * nothing (see u32map.h).
 */
#ifndef MIGR_XLATE_H
#define MIGR_XLATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "u32map.h"

enum migr_xlate_kind {
	MIGR_XLATE_LKEY, /* local lkey: virtual -> physical */
	MIGR_XLATE_RKEY, /* local rkey/MW rkey: virtual -> physical */
	MIGR_XLATE_QPN, /* local QPN (and WQ number): physical -> virtual */
	MIGR_XLATE_SRQN, /* local SRQ number: virtual -> physical */
	MIGR_XLATE_REMOTE_RKEY, /* a partner's rkey: virtual -> physical */
	MIGR_XLATE_REMOTE_QPN, /* a partner's QPN: virtual -> physical */
	MIGR_XLATE_REMOTE_QPN_VIRT, /* a partner's QPN: physical -> virtual */
	MIGR_XLATE_REMOTE_SRQN, /* a partner's XRC SRQ number: v -> p */
	MIGR_XLATE_NKINDS,
};

#define MIGR_XLATE_NLOCAL (MIGR_XLATE_SRQN + 1)

struct migr_xlate {
	/* false while no map has ever held an entry: identity fast path */
	bool active;
	struct migr_u32map map[MIGR_XLATE_NKINDS];
	/* writer side: serializes updates, knows every live virtual value */
	pthread_mutex_t lock;
	struct migr_u32map live[MIGR_XLATE_NLOCAL]; /* virtual -> physical */
	uint32_t next_fresh[MIGR_XLATE_NLOCAL];
};

static inline uint32_t migr_xlate_lookup(const struct migr_xlate *x,
					 enum migr_xlate_kind kind,
					 uint32_t value)
{
	uint32_t out;

	if (likely(!__atomic_load_n(&x->active, __ATOMIC_RELAXED)))
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

void migr_xlate_init(struct migr_xlate *x);
void migr_xlate_destroy(struct migr_xlate *x);

/* Local kinds: the life of an object's identifier */
int migr_xlate_born(struct migr_xlate *x, enum migr_xlate_kind kind,
		    uint32_t phys, uint32_t *virt);
int migr_xlate_remap(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt, uint32_t phys);
void migr_xlate_gone(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt);
bool migr_xlate_phys_of(struct migr_xlate *x, enum migr_xlate_kind kind,
			uint32_t virt, uint32_t *phys);

/* Remote kinds: mappings pushed by a partner's switch */
int migr_xlate_set(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t from, uint32_t to);
void migr_xlate_forget(struct migr_xlate *x, enum migr_xlate_kind kind,
		       uint32_t from);

#endif /* MIGR_XLATE_H */
