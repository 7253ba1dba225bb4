/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The release and rebuild of a context's lower objects (rebuild.c), and
 * the GIDs a switch moves between.
 */
#ifndef MIGR_REBUILD_H
#define MIGR_REBUILD_H

#include "migr.h"

/*
 * The GIDs the process's own QPs and AHs address each other with, on the
 * old device and the new one: a partner in this process moves too.
 */
#define MIGR_MAX_GIDS 8
struct migr_gid_move {
	unsigned int n;
	struct {
		uint8_t port, index;
		union ibv_gid from, to;
	} e[MIGR_MAX_GIDS];
};

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
int migr_rebuild_lower_qp(struct migr_qp *mqp, char *why, size_t why_len);
int migr_connect_qp(struct migr_qp *mqp, const struct migr_gid_move *gids,
		    char *why, size_t why_len);
void migr_rewrite_gid(const struct migr_gid_move *gids, struct ibv_ah_attr *ah);
void migr_qp_flush(struct migr_qp *mqp);
void migr_count_device_holds(int *fds, int *maps);

/*
 * What a released QP flushes: its unused RECVs, and under a replay the WRs
 * and markers it never finished
 */
static inline uint64_t migr_expected_flushes(const struct migr_qp *mqp,
					     uint64_t unused)
{
	return unused + mqp->replay.n + mqp->replay.markers;
}

#endif /* MIGR_REBUILD_H */
