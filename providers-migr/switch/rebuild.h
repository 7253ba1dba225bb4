/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The release and rebuild of a context's lower objects (rebuild.c); each
 * QP's part, and the GIDs a switch moves between, in qp_phase.h.
 */
#ifndef MIGR_REBUILD_H
#define MIGR_REBUILD_H

#include "migr.h"
#include "qp_phase.h"

/*
 * rebuild.c: the halves of the move, run with ctl_lock held for writing.
 * Release returns the completions it found lost; unused (per QP in record
 * order, or NULL) is what each QP is expected to flush.
 */
unsigned int migr_release_all(struct migr_context *ctx, const uint64_t *unused);
int migr_rebuild_objects(struct migr_context *ctx, struct ibv_context *lower,
			 char *why, size_t why_len);
int migr_reconnect_all(struct migr_context *ctx,
		       const struct migr_gid_move *gids, char *why,
		       size_t why_len);
void migr_count_device_holds(int *fds, int *maps);

#endif /* MIGR_REBUILD_H */
