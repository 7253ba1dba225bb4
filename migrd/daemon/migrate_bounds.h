/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The bounds of a migration's steps, which the source and the
 * destination keep alike (migrate.h says what each guards)
 */
#ifndef MIGRD_MIGRATE_BOUNDS_H
#define MIGRD_MIGRATE_BOUNDS_H

#include "migrd.h"

#define MIG_RESTORE_MS 120000 /* criu restore, then the resume */
#define MIG_LEASE_MS 30000 /* from then on, until the commit */
#define MIG_FENCE_MS (MIG_RESTORE_MS + MIG_LEASE_MS)
#define MIG_MARGIN_MS 15000 /* a request's way there, and clocks */
#define MIG_DUMP_MS 300000 /* one criu dump or pre-dump */
/*
 * Partners in other processes hold their posts toward a parked process
 * this long without news: its final dump, the restore there (or the
 * rollback here) and the way of the requests; at most 600 s (partner_call.h)
 */
#define MIG_PARTNER_HOLD_MS (MIG_DUMP_MS + MIG_FENCE_MS + MIG_MARGIN_MS)
#define MIG_TREE_MAX 512 /* processes, and threads, of a tree */
#define MIG_SETTLE_MS (3600 * 1000)
#define MIG_SETTLE_EVERY_MS 10000

#endif
