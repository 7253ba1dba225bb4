/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Drain markers: the one-byte WRITE, READ or atomic (a UD QP's SEND) a
 * switch posts behind the application's WRs to learn that a send queue
 * drained, at a byte of a PD the other end may write. The switch posts
 * them, partners post theirs (partner_serve.c), and the data path keeps
 * their completions from the application.
 */
#ifndef MIGR_MARKER_H
#define MIGR_MARKER_H

#include "migr.h"

/* The marker this switch sent is in, and all before it (under rec.lock) */
static inline bool migr_marker_drained(const struct migr_qp *mqp)
{
	return mqp->marker.sent && !mqp->marker.pending && !mqp->marker.failed;
}

/* A byte of a PD's that markers from the other ends may write */
struct migr_marker_target {
	uint32_t rkey; /* physical: markers go to the lower QP directly */
	uint64_t addr;
	int access; /* the remote access its QP allows (given or granted) */
};

/* The access a marker into this QP can count on (see migr_marker_grant) */
static inline int migr_marker_access(const struct migr_qp *mqp)
{
	return mqp->attr.qp_access_flags |
	       (mqp->marker.granted ? IBV_ACCESS_REMOTE_WRITE : 0);
}

/* wr_id of the marker (a one-byte WRITE, READ or atomic; a UD QP's SEND)
 * a switch posts to learn that a send queue drained; its completion never
 * reaches the application */
#define MIGR_MARKER_WRID 0x6d6967722d6d726bull

/* Post mqp's marker toward the byte t names (the other end's) */
int migr_post_marker(struct migr_context *ctx, struct migr_qp *mqp,
		     const struct migr_marker_target *t);
/* Where the other end's marker lands in mqp's PD, and with what access */
int migr_marker_target(struct migr_qp *mqp, struct migr_marker_target *t);
/* Let markers write into mqp's PD (remote write granted for the switch) */
int migr_marker_grant(struct migr_qp *mqp);
void migr_marker_ungrant(struct migr_qp *mqp);
/* The PD's marker MR goes with it */
void migr_marker_mr_drop(struct migr_pd *mpd);
/* Post a marker WR (wr_id MIGR_MARKER_WRID), counted as pending */
int migr_send_marker(struct migr_context *ctx, struct migr_qp *mqp,
		     struct ibv_send_wr *wr);

#endif /* MIGR_MARKER_H */
