/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The moving side of UD peers (datapath/ud_redirect.h says what they
 * are). Before anything is touched: the UD QPs of the migr processes on
 * the hosts ctx's AHs name (their lower numbers, at most max, into known),
 * and each UD QP's number now. After the rebuild (or the rollback's):
 * those hosts learn where each UD QP went, through migrd's relay.
 */
#ifndef MIGR_UD_ANNOUNCE_H
#define MIGR_UD_ANNOUNCE_H

#include "migr.h"

int migr_ud_probe(struct migr_context *ctx, uint32_t *known, unsigned int max,
		  unsigned int *n, char *why, size_t why_len);
int migr_ud_announce(struct migr_context *ctx,
		     const struct migr_gid_history *moves, bool rollback,
		     char *why, size_t why_len);

#endif /* MIGR_UD_ANNOUNCE_H */
