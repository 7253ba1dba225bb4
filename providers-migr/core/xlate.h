/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Translation of the identifiers the application sees (virtual) to those of
 * the lower device (physical) and back. A context has one table set for its
 * own lkeys, rkeys, QPNs and SRQ numbers. A QP looks its partner's values
 * up in the table set it points at: the context's own when the partner is
 * in this process, else a replica of the partner's tables (empty, that is
 * the identity, until the partner moves). Until anything was remapped every
 * lookup is the identity behind one predictable branch.
 *
 * Identifiers follow an object's life: migr_xlate_born() when the lower
 * object appears (it picks the virtual value, avoiding every live one),
 * migr_xlate_remap() when a switch rebuilt it, migr_xlate_gone() when it is
 * destroyed. A replica is filled with migr_xlate_set()/migr_xlate_forget().
 * Writers take x->lock; readers take nothing (see u32map.h).
 *
 * Keys (lkeys, rkeys, MW rkeys) are, as InfiniBand defines them, an index
 * above an 8-bit key the consumer may change: a memory window bound again
 * gets the same index with another key byte (ibv_inc_rkey()). So key maps
 * are keyed by the virtual index, and an entry, the physical index above
 * the XOR of the two key bytes, stands for every key byte of its index: a
 * window bound again after a switch translates here and in a partner's
 * replica with no update. QPNs and SRQ numbers map whole.
 */
#ifndef MIGR_XLATE_H
#define MIGR_XLATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "u32map.h"

enum migr_xlate_kind {
	MIGR_XLATE_LKEY, /* lkey: virtual -> physical */
	MIGR_XLATE_RKEY, /* rkey or MW rkey: virtual -> physical */
	MIGR_XLATE_QPN, /* QPN (and WQ number): physical -> virtual */
	MIGR_XLATE_QPN_PHYS, /* QPN: virtual -> physical, kept with QPN */
	MIGR_XLATE_SRQN, /* XRC SRQ number: virtual -> physical */
	MIGR_XLATE_NKINDS,
};

struct migr_xlate {
	/* false while no map has ever held an entry: identity fast path */
	bool active;
	struct migr_u32map map[MIGR_XLATE_NKINDS];
	/* writer side: serializes updates, knows every live virtual value */
	pthread_mutex_t lock;
	struct migr_u32map live[MIGR_XLATE_NKINDS]; /* virtual -> physical */
	uint32_t next_fresh[MIGR_XLATE_NKINDS];
	/*
	 * A process's own tables: bumped by every value that stops being the
	 * identity, so zero while they never differed from it. A replica:
	 * the partner's generation it was last fetched at (partner_fetch.c).
	 */
	uint64_t gen;
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

/* The index of a key: what key maps are keyed by (never the spare key) */
static inline uint32_t migr_key_index(uint32_t key)
{
	return key >> 8;
}

/* A key map's entry for the pair virt -> phys */
static inline uint32_t migr_key_entry(uint32_t virt, uint32_t phys)
{
	return (phys & ~0xffu) | ((phys ^ virt) & 0xffu);
}

static inline uint32_t migr_key_lookup(const struct migr_xlate *x,
				       enum migr_xlate_kind kind, uint32_t key)
{
	uint32_t e;

	if (likely(!__atomic_load_n(&x->active, __ATOMIC_RELAXED)))
		return key;
	if (migr_u32tab_get(migr_u32map_tab(&x->map[kind]), migr_key_index(key),
			    &e))
		return e ^ (key & 0xffu);
	return key;
}

static inline uint32_t migr_lkey_to_phys(const struct migr_xlate *x,
					 uint32_t lkey)
{
	return migr_key_lookup(x, MIGR_XLATE_LKEY, lkey);
}

static inline uint32_t migr_rkey_to_phys(const struct migr_xlate *x,
					 uint32_t rkey)
{
	return migr_key_lookup(x, MIGR_XLATE_RKEY, rkey);
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
	return migr_key_lookup(x, MIGR_XLATE_RKEY, rkey);
}

static inline uint32_t migr_remote_qpn_to_phys(const struct migr_xlate *x,
					       uint32_t qpn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_QPN_PHYS, qpn);
}

static inline uint32_t migr_remote_qpn_to_virt(const struct migr_xlate *x,
					       uint32_t qpn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_QPN, qpn);
}

static inline uint32_t migr_remote_srqn_to_phys(const struct migr_xlate *x,
						uint32_t srqn)
{
	return migr_xlate_lookup(x, MIGR_XLATE_SRQN, srqn);
}

void migr_xlate_init(struct migr_xlate *x);
void migr_xlate_destroy(struct migr_xlate *x);

/* The life of an object's identifier in its own process's tables */
int migr_xlate_born(struct migr_xlate *x, enum migr_xlate_kind kind,
		    uint32_t phys, uint32_t *virt);
int migr_xlate_remap(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt, uint32_t phys);
void migr_xlate_gone(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt);
bool migr_xlate_phys_of(struct migr_xlate *x, enum migr_xlate_kind kind,
			uint32_t virt, uint32_t *phys);
/*
 * The virtual key that stands for phys, a key of the same object as the
 * live key virt with another key byte (a window bound again): virt's
 * index, phys's key byte as translated. False if phys has another index.
 */
bool migr_xlate_rekey(struct migr_xlate *x, enum migr_xlate_kind kind,
		      uint32_t virt, uint32_t phys, uint32_t *out);

/* A replica of a partner's tables: entries as the partner sent them */
int migr_xlate_set(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t from, uint32_t to);
void migr_xlate_forget(struct migr_xlate *x, enum migr_xlate_kind kind,
		       uint32_t from);
/*
 * A partner's rkeys as it sends them, "V:P,V:P,..." in hex, into a
 * replica; *end: the first character after the list, *n: how many
 */
int migr_xlate_set_rkeys(struct migr_xlate *x, const char *pairs,
			 const char **end, unsigned int *n);

#endif /* MIGR_XLATE_H */
