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

#include "migrate_bounds.h"

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
