/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A migration's images: on both hosts in <state_dir>/migrations/<id>/,
 * one directory per CRIU run (pre-1, pre-2, ..., final; a pre-copy
 * round's "parent" link names the one before). The source sends one
 * directory after its "mig-put ID NAME" request, as frames of at most
 * WIRE_DATA_MAX bytes on the same connection:
 *
 *   "file NAME SIZE"     then SIZE bytes in frames of their own (SIZE in
 *                        decimal, at most 2^63 - 1, what a file can hold)
 *   "link NAME ../DIR"   a symlink to another directory of the migration
 *   "end FILES BYTES"    then the destination answers (one JSON reply)
 *
 * Each line is three words apart by single spaces. NAME is one file name
 * of CRIU's ([A-Za-z0-9._-], not starting with a dot); files are
 * created, never replaced or followed. CRIU's logs stay where they were
 * written.
 */
#ifndef MIGRD_IMAGES_H
#define MIGRD_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct peer_conn;
struct peer_link;

/* <state_dir>/migrations/<id>[/sub] into path; create makes it (0700) */
int img_path(const char *id, const char *sub, bool create, char *path,
	     size_t len, char *err, size_t errlen);
/*
 * Remove a migration's images; with keep_logs its directories stay with
 * CRIU's logs in them (for whoever looks into how it went), else all
 */
void img_remove(const char *id, bool keep_logs);
/*
 * At start: the images an earlier migrd left (it died mid-migration) go,
 * their logs stay; no migration of this one's has begun yet. each(id)
 * first, for each migration found: all of it stays if it returns true
 */
void img_sweep(bool (*each)(const char *id));
/*
 * A restore's mark in its migration's directory dir, written before
 * anything is made for it (its network namespace, the restore) and gone
 * with the images (commit, abort, fence, failure): this boot and when it
 * began. A migrd that stopped before that finds it at its next start
 * (migrate_dest_sweep()). 0, or -1 with err.
 */
int img_mark_restoring(const char *dir, char *err, size_t errlen);
/* Has dir a mark of this boot's? *t0: when the restore began (ticks) */
bool img_restoring(const char *dir, unsigned long long *t0);

/* Bytes of memory pages in a CRIU directory (its pages-*.img) */
uint64_t img_pages_bytes(const char *dir);

/* Send directory sub of migration id; *bytes: what was sent */
int img_send(struct peer_conn *pc, const char *id, const char *sub,
	     uint64_t *bytes, char *err, size_t errlen);
/* Receive it (the request line was read); *bytes: what was written */
int img_recv(struct peer_link *l, const char *id, const char *sub,
	     uint64_t *bytes, char *err, size_t errlen);

#endif
