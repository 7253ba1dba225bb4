/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Moving a migr process tree to another host (migrctl migrate): the
 * source's migrd drives it (migrate.c), the destination's answers
 * (migrate_dest.c), over their TLS link:
 *
 *   mig-check    destination: CRIU (same version), migr's plugin, the
 *                device, every pid and tid of the tree free
 *   mig-put      pre-copy rounds (criu pre-dump --track-mem), then the
 *                final dump of the parked, stopped tree (images.h)
 *   mig-restore  criu restore there; the plugin queues the resume on
 *                DEVICE; the reply carries the process's resume report
 *   mig-end      commit (the source kills its stopped copy), abort
 *
 * Never two live copies: the source is stopped from its final dump on;
 * the destination's copy runs only from its restore, and is killed unless
 * a commit comes within MIG_FENCE_MS of the restore request. A source
 * that lost the restore's answer resumes only when an abort was confirmed
 * or once that bound (and MIG_MARGIN_MS) has passed. A source that lost
 * the commit's answer asks the destination's state until that bound; if
 * it cannot, the tree stays stopped and a thread asks on, every
 * MIG_SETTLE_EVERY_MS for MIG_SETTLE_MS: committed there, the tree here
 * goes; its copy gone, it runs here again.
 */
#ifndef MIGRD_MIGRATE_H
#define MIGRD_MIGRATE_H

#include "migrd.h"

#define MIG_RESTORE_MS 120000 /* criu restore, then the resume */
#define MIG_LEASE_MS 30000 /* from then on, until the commit */
#define MIG_FENCE_MS (MIG_RESTORE_MS + MIG_LEASE_MS)
#define MIG_MARGIN_MS 15000 /* a request's way there, and clocks */
#define MIG_DUMP_MS 300000 /* one criu dump or pre-dump */
/*
 * Partners in other processes hold their posts toward a parked process
 * this long without news: its final dump, the restore there (or the
 * rollback here) and the way of the requests; at most 600 s (partner.h)
 */
#define MIG_PARTNER_HOLD_MS (MIG_DUMP_MS + MIG_FENCE_MS + MIG_MARGIN_MS)
#define MIG_TREE_MAX 512 /* processes, and threads, of a tree */
#define MIG_SETTLE_MS (3600 * 1000)
#define MIG_SETTLE_EVERY_MS 10000

/* migrate.c: the source; progress lines to c->fd, then the reply */
void migrate_run(const struct req *r, const struct client *c, struct sbuf *out);
/*
 * At start, for each migration an earlier migrd left (images.h,
 * img_sweep()): the copy it restored but never saw committed is killed,
 * with the network namespace made for it, unless it had resumed (then it
 * waits for its commit again, under its fence: dest_record.h); true if
 * it stays
 */
bool migrate_dest_sweep(const char *id);

/* migrate_dest.c: the destination's side of each mig-* request */
void migrate_dest_run(const struct req *r, const struct client *c,
		      struct sbuf *out);

#endif
