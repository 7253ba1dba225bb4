/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * GIDs as text (partner requests and replies), and below: the GIDs a
 * context had before its switches, and the GID that replaced
 * each (same port and index on the device it is on now). An application
 * that read its GID before a switch hands the old one to a peer that
 * connects later; the peer's migr asks this process (fetch) and learns
 * the GID to connect to. Bounded: the oldest are forgotten.
 */
#ifndef MIGR_GID_H
#define MIGR_GID_H

#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

static inline bool migr_gid_same(const union ibv_gid *a, const union ibv_gid *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* 32 hex digits and a NUL */
void migr_gid_hex(const union ibv_gid *gid, char out[33]);
/* 0, or -1 if hex is not 32 hex digits */
int migr_gid_parse(const char *hex, union ibv_gid *gid);

#define MIGR_GID_HISTORY 16

struct migr_gid_history {
	unsigned int n;
	struct {
		union ibv_gid from, to;
	} e[MIGR_GID_HISTORY];
};

/*
 * A device's GID table, kept while the process holds no device (a park:
 * the destination's GIDs are compared with it at the resume)
 */
struct migr_gid_table {
	ssize_t n;
	struct ibv_gid_entry *e;
};

int migr_gid_table_read(struct ibv_context *ctx, struct migr_gid_table *t);
void migr_gid_table_free(struct migr_gid_table *t);
/* What each GID of table from becomes on to, into moves; 0 or errno */
int migr_gid_table_moves(const struct migr_gid_table *from,
			 struct ibv_context *to,
			 struct migr_gid_history *moves);
/* What each GID of from's ports becomes on to, into moves; 0 or errno */
int migr_gid_moves(struct ibv_context *from, struct ibv_context *to,
		   struct migr_gid_history *moves);
/* A switch that made moves succeeded: earlier GIDs lead where theirs went */
void migr_gid_history_add(struct migr_gid_history *h,
			  const struct migr_gid_history *moves);
/* The GID that replaced gid, if the context had gid before: into now */
bool migr_gid_history_find(const struct migr_gid_history *h,
			   const union ibv_gid *gid, union ibv_gid *now);

struct migr_context;
/* Does an AH lead to the device ctx is on (gid.c)? */
bool migr_ah_local(struct migr_context *ctx, const struct ibv_ah_attr *a);

#endif /* MIGR_GID_H */
