// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* See gid.h */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migr.h"

void migr_gid_hex(const union ibv_gid *gid, char out[33])
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", gid->raw[i]);
}

int migr_gid_parse(const char *hex, union ibv_gid *gid)
{
	unsigned int i, b;

	for (i = 0; i < 32; i++)
		if (!hex[i] || !strchr("0123456789abcdefABCDEF", hex[i]))
			return -1;
	if (hex[32])
		return -1;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -1;
		gid->raw[i] = b;
	}
	return 0;
}

/* The valid GID entries of a device, all ports, in one query */
static ssize_t gid_table(struct ibv_context *ctx, struct ibv_gid_entry **t)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	size_t len = 0;
	uint8_t port;
	ssize_t n;

	*t = NULL;
	if (ibv_query_device(ctx, &da))
		return -1;
	for (port = 1; port <= da.phys_port_cnt; port++)
		if (!ibv_query_port(ctx, port, &pa))
			len += pa.gid_tbl_len;
	if (!len)
		return 0;
	*t = calloc(len, sizeof(**t));
	if (!*t)
		return -1;
	n = ibv_query_gid_table(ctx, *t, len, 0);
	if (n < 0) {
		free(*t);
		*t = NULL;
	}
	return n;
}

int migr_gid_table_read(struct ibv_context *ctx, struct migr_gid_table *t)
{
	t->n = gid_table(ctx, &t->e);
	if (t->n >= 0)
		return 0;
	t->n = 0;
	return errno ? errno : EIO;
}

void migr_gid_table_free(struct migr_gid_table *t)
{
	free(t->e);
	t->e = NULL;
	t->n = 0;
}

int migr_gid_table_moves(const struct migr_gid_table *from,
			 struct ibv_context *to, struct migr_gid_history *moves)
{
	struct migr_gid_table tt;
	ssize_t i, j;
	int ret;

	moves->n = 0;
	ret = migr_gid_table_read(to, &tt);
	if (ret)
		return ret;
	for (i = 0; i < from->n && moves->n < MIGR_GID_HISTORY; i++) {
		const struct ibv_gid_entry *f = &from->e[i];

		for (j = 0; j < tt.n; j++) {
			if (tt.e[j].port_num != f->port_num ||
			    tt.e[j].gid_index != f->gid_index ||
			    tt.e[j].gid_type != f->gid_type)
				continue;
			if (!migr_gid_same(&f->gid, &tt.e[j].gid)) {
				moves->e[moves->n].from = f->gid;
				moves->e[moves->n].to = tt.e[j].gid;
				moves->n++;
			}
			break;
		}
	}
	migr_gid_table_free(&tt);
	return 0;
}

int migr_gid_moves(struct ibv_context *from, struct ibv_context *to,
		   struct migr_gid_history *moves)
{
	struct migr_gid_table tf;
	int ret;

	moves->n = 0;
	ret = migr_gid_table_read(from, &tf);
	if (ret)
		return ret;
	ret = migr_gid_table_moves(&tf, to, moves);
	migr_gid_table_free(&tf);
	return ret;
}

/* Make room at the end by forgetting the oldest */
static void drop_oldest(struct migr_gid_history *h)
{
	memmove(&h->e[0], &h->e[1], (h->n - 1) * sizeof(h->e[0]));
	h->n--;
}

void migr_gid_history_add(struct migr_gid_history *h,
			  const struct migr_gid_history *moves)
{
	unsigned int i, j;
	bool known;

	/* a GID of before an earlier switch leads where its successor went */
	for (i = 0; i < h->n; i++)
		for (j = 0; j < moves->n; j++)
			if (migr_gid_same(&h->e[i].to, &moves->e[j].from)) {
				h->e[i].to = moves->e[j].to;
				break;
			}
	for (j = 0; j < moves->n; j++) {
		known = false;
		for (i = 0; i < h->n && !known; i++)
			known = migr_gid_same(&h->e[i].from, &moves->e[j].from);
		if (known)
			continue;
		if (h->n == MIGR_GID_HISTORY)
			drop_oldest(h);
		h->e[h->n++] = moves->e[j];
	}
	/* back where it was: that GID is the context's own again */
	for (i = 0; i < h->n;) {
		if (migr_gid_same(&h->e[i].from, &h->e[i].to)) {
			memmove(&h->e[i], &h->e[i + 1],
				(h->n - i - 1) * sizeof(h->e[0]));
			h->n--;
		} else {
			i++;
		}
	}
}

bool migr_gid_history_find(const struct migr_gid_history *h,
			   const union ibv_gid *gid, union ibv_gid *now)
{
	unsigned int i;

	for (i = 0; i < h->n; i++) {
		if (migr_gid_same(&h->e[i].from, gid)) {
			*now = h->e[i].to;
			return true;
		}
	}
	return false;
}

/*
 * Does an AH lead to this device (a peer in this process, or another on
 * this device), as far as it can tell? LID-routed ones are taken as such.
 */
bool migr_ah_local(struct migr_context *ctx, const struct ibv_ah_attr *a)
{
	union ibv_gid gid;

	return !a->is_global || (!ibv_query_gid(ctx->lower, a->port_num,
						a->grh.sgid_index, &gid) &&
				 migr_gid_same(&gid, &a->grh.dgid));
}
