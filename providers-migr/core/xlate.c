// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Translation tables, writer side. Maps only hold what differs from the
 * identity: an object keeps its physical value as its virtual one unless
 * that is already the virtual value of a live object, so a process that
 * never switched has empty maps and takes the fast path. Keys are mapped
 * by index (xlate.h): "value" below is then the index, and a map's
 * value the entry migr_key_entry() makes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "xlate.h"

static bool is_key(enum migr_xlate_kind kind)
{
	return kind == MIGR_XLATE_LKEY || kind == MIGR_XLATE_RKEY;
}

/* QPNs, SRQ numbers and key indexes are 24-bit */
#define VALUE_MAX 0xffffffu

/* What a map is keyed by for the value v of this kind */
static uint32_t key_of(enum migr_xlate_kind kind, uint32_t v)
{
	return is_key(kind) ? migr_key_index(v) : v;
}

/* What a virtual -> physical map holds for virt -> phys */
static uint32_t value_of(enum migr_xlate_kind kind, uint32_t virt,
			 uint32_t phys)
{
	return is_key(kind) ? migr_key_entry(virt, phys) : phys;
}

/* Physical -> virtual maps are keyed by the physical value */
static bool keyed_by_phys(enum migr_xlate_kind kind)
{
	return kind == MIGR_XLATE_QPN;
}

static void mark_active(struct migr_xlate *x)
{
	/* Entries are in place before a reader may leave the fast path */
	__atomic_store_n(&x->active, true, __ATOMIC_RELEASE);
}

/*
 * No data map holds an entry any more (every object has its number again,
 * migr_rxe(7)): readers go back to the fast path, where every lookup
 * answers what the empty maps would. Writer lock held.
 */
static void settle(struct migr_xlate *x)
{
	int i;

	for (i = 0; i < MIGR_XLATE_NKINDS; i++)
		if (x->map[i].live || (x->map[i].spare & MIGR_U32MAP_SPARE_SET))
			return;
	__atomic_store_n(&x->active, false, __ATOMIC_RELEASE);
}

void migr_xlate_init(struct migr_xlate *x)
{
	memset(x, 0, sizeof(*x));
	pthread_mutex_init(&x->lock, NULL);
}

void migr_xlate_destroy(struct migr_xlate *x)
{
	int i;

	for (i = 0; i < MIGR_XLATE_NKINDS; i++)
		migr_u32map_free(&x->map[i]);
	for (i = 0; i < MIGR_XLATE_NKINDS; i++)
		migr_u32map_free(&x->live[i]);
	pthread_mutex_destroy(&x->lock);
	x->active = false;
}

/*
 * A virtual value (a key's index) no live object holds, counting down from
 * the top of the 24-bit range (physical values are usually small and
 * count up). QPNs 0 and 1 are special on every device and never handed
 * out.
 */
static uint32_t fresh_virt(struct migr_xlate *x, enum migr_xlate_kind kind)
{
	uint32_t max = VALUE_MAX, v, unused;

	for (;;) {
		v = x->next_fresh[kind];
		if (v < 2 || v > max)
			v = max;
		x->next_fresh[kind] = v - 1;
		if (!migr_u32map_get(&x->live[kind], v, &unused))
			return v;
	}
}

static int map_one(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t virt, uint32_t phys);

/* Make the data maps say virt <-> phys; a QPN is mapped both ways */
static int map_local(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt, uint32_t phys)
{
	int ret = map_one(x, kind, virt, phys);

	if (!ret && kind == MIGR_XLATE_QPN) {
		ret = map_one(x, MIGR_XLATE_QPN_PHYS, virt, phys);
		if (ret && virt != phys)
			migr_u32map_del(&x->map[kind], phys);
	}
	return ret;
}

static int map_one(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t virt, uint32_t phys)
{
	struct migr_u32map *m = &x->map[kind];
	uint32_t key = keyed_by_phys(kind) ? phys : key_of(kind, virt);
	int ret;

	if (virt == phys) {
		/* Identity needs no entry; a stale one for the key would lie */
		migr_u32map_del(m, key);
		return 0;
	}
	ret = migr_u32map_put(m, key,
			      keyed_by_phys(kind) ? virt :
						    value_of(kind, virt, phys));
	if (!ret) {
		__atomic_add_fetch(&x->gen, 1, __ATOMIC_RELEASE);
		mark_active(x);
	}
	return ret;
}

/* Drop what the data map says about virt, whose physical value was phys */
static void unmap_local(struct migr_xlate *x, enum migr_xlate_kind kind,
			uint32_t virt, uint32_t phys)
{
	struct migr_u32map *m = &x->map[kind];
	uint32_t cur;

	if (!keyed_by_phys(kind)) {
		migr_u32map_del(m, key_of(kind, virt));
		return;
	}
	migr_u32map_del(&x->map[MIGR_XLATE_QPN_PHYS], virt);
	/* During a rebuild the key may already be another object's new value */
	if (migr_u32map_get(m, phys, &cur) && cur == virt)
		migr_u32map_del(m, phys);
}

int migr_xlate_born(struct migr_xlate *x, enum migr_xlate_kind kind,
		    uint32_t phys, uint32_t *virt)
{
	uint32_t v = phys, unused;
	int ret;

	if (kind == MIGR_XLATE_QPN_PHYS || kind >= MIGR_XLATE_NKINDS)
		return EINVAL;
	pthread_mutex_lock(&x->lock);
	if (migr_u32map_get(&x->live[kind], key_of(kind, phys), &unused) ||
	    key_of(kind, phys) > VALUE_MAX) {
		v = fresh_virt(x, kind);
		/* a key keeps its key byte: only its index is another */
		if (is_key(kind))
			v = v << 8 | (phys & 0xffu);
	}
	ret = migr_u32map_put(&x->live[kind], key_of(kind, v),
			      value_of(kind, v, phys));
	if (!ret) {
		ret = map_local(x, kind, v, phys);
		if (ret)
			migr_u32map_del(&x->live[kind], key_of(kind, v));
	}
	pthread_mutex_unlock(&x->lock);
	if (!ret)
		*virt = v;
	return ret;
}

int migr_xlate_remap(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt, uint32_t phys)
{
	uint32_t old;
	int ret;

	if (kind == MIGR_XLATE_QPN_PHYS || kind >= MIGR_XLATE_NKINDS)
		return EINVAL;
	pthread_mutex_lock(&x->lock);
	if (!migr_u32map_get(&x->live[kind], key_of(kind, virt), &old)) {
		ret = ENOENT;
		goto out;
	}
	ret = migr_u32map_put(&x->live[kind], key_of(kind, virt),
			      value_of(kind, virt, phys));
	if (ret)
		goto out;
	unmap_local(x, kind, virt, old);
	ret = map_local(x, kind, virt, phys);
	/* back to the identity too: partners' replicas must learn it */
	if (old != value_of(kind, virt, phys))
		__atomic_add_fetch(&x->gen, 1, __ATOMIC_RELEASE);
	settle(x);
out:
	pthread_mutex_unlock(&x->lock);
	return ret;
}

void migr_xlate_gone(struct migr_xlate *x, enum migr_xlate_kind kind,
		     uint32_t virt)
{
	uint32_t phys;

	if (kind == MIGR_XLATE_QPN_PHYS || kind >= MIGR_XLATE_NKINDS)
		return;
	pthread_mutex_lock(&x->lock);
	if (migr_u32map_get(&x->live[kind], key_of(kind, virt), &phys)) {
		migr_u32map_del(&x->live[kind], key_of(kind, virt));
		unmap_local(x, kind, virt, phys);
		settle(x);
	}
	pthread_mutex_unlock(&x->lock);
}

/* live[kind]'s value for virt as a physical value; lock held */
static bool live_phys(struct migr_xlate *x, enum migr_xlate_kind kind,
		      uint32_t virt, uint32_t *phys)
{
	if (!migr_u32map_get(&x->live[kind], key_of(kind, virt), phys))
		return false;
	if (is_key(kind))
		*phys ^= virt & 0xffu;
	return true;
}

bool migr_xlate_phys_of(struct migr_xlate *x, enum migr_xlate_kind kind,
			uint32_t virt, uint32_t *phys)
{
	bool found;

	if (kind == MIGR_XLATE_QPN_PHYS || kind >= MIGR_XLATE_NKINDS)
		return false;
	pthread_mutex_lock(&x->lock);
	found = live_phys(x, kind, virt, phys);
	pthread_mutex_unlock(&x->lock);
	return found;
}

bool migr_xlate_rekey(struct migr_xlate *x, enum migr_xlate_kind kind,
		      uint32_t virt, uint32_t phys, uint32_t *out)
{
	uint32_t e;
	bool found;

	if (!is_key(kind))
		return false;
	pthread_mutex_lock(&x->lock);
	found = migr_u32map_get(&x->live[kind], key_of(kind, virt), &e) &&
		migr_key_index(e) == migr_key_index(phys);
	pthread_mutex_unlock(&x->lock);
	if (found)
		*out = (virt & ~0xffu) | ((phys ^ e) & 0xffu);
	return found;
}

int migr_xlate_set(struct migr_xlate *x, enum migr_xlate_kind kind,
		   uint32_t from, uint32_t to)
{
	int ret;

	pthread_mutex_lock(&x->lock);
	if (from == to) {
		/* the partner's object has its number: no entry */
		migr_u32map_del(&x->map[kind], key_of(kind, from));
		settle(x);
		pthread_mutex_unlock(&x->lock);
		return 0;
	}
	ret = migr_u32map_put(&x->map[kind], key_of(kind, from),
			      is_key(kind) ? migr_key_entry(from, to) : to);
	if (!ret)
		mark_active(x);
	pthread_mutex_unlock(&x->lock);
	return ret;
}

int migr_xlate_set_rkeys(struct migr_xlate *x, const char *pairs,
			 const char **end, unsigned int *n)
{
	unsigned int v, p;
	int used;

	*n = 0;
	while (sscanf(pairs, "%x:%x%n", &v, &p, &used) == 2) {
		if (migr_xlate_set(x, MIGR_XLATE_RKEY, v, p))
			return ENOMEM;
		(*n)++;
		pairs += used;
		if (*pairs != ',')
			break;
		pairs++;
	}
	*end = pairs;
	return 0;
}

void migr_xlate_forget(struct migr_xlate *x, enum migr_xlate_kind kind,
		       uint32_t from)
{
	pthread_mutex_lock(&x->lock);
	migr_u32map_del(&x->map[kind], key_of(kind, from));
	settle(x);
	pthread_mutex_unlock(&x->lock);
}
