/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What outlives migrd (migrate_dest_sweep.c): the mark of a commit; the
 * sweep at start is migrate_dest_sweep() (migrate.h)
 */
#ifndef MIGRD_MIGRATE_DEST_SWEEP_H
#define MIGRD_MIGRATE_DEST_SWEEP_H

#include "migrate_dest_table.h"

void dest_mark_committed(const struct dest_mig *m);
bool dest_was_committed(const char *id);

#endif
