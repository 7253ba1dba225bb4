/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What a coming process keeps here until its restore
 * (migrate_dest_keep.c): its partner sessions' grants (mig-grants), its
 * numbers held (mig-hold)
 */
#ifndef MIGRD_MIGRATE_DEST_KEEP_H
#define MIGRD_MIGRATE_DEST_KEEP_H

#include "migrate_dest_table.h"

void dest_grants(const struct req *r, struct sbuf *out);
void dest_give_grants(struct dest_mig *m, int k);
void dest_hold(const struct req *r, struct sbuf *out);

#endif
