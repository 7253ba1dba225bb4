/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Replicas of the translation tables of peer contexts in other processes
 * (peer.c): a QP connected to one translates its numbers and rkeys there.
 */
#ifndef MIGR_PEER_H
#define MIGR_PEER_H

#include "migr.h"

void migr_peers_init(struct migr_context *ctx);
void migr_peers_free(struct migr_context *ctx);
/* The replica for peer context id, made on first use; NULL without memory */
struct migr_xlate *migr_peer_tables(struct migr_context *ctx, uint64_t id);
/* Is x the replica of peer context id? (none is made to tell) */
bool migr_peer_tables_are(struct migr_context *ctx, const struct migr_xlate *x,
			  uint64_t id);
/* mqp's partner is peer context id: it translates with that replica */
int migr_peer_tie(struct migr_qp *mqp, uint64_t id);

#endif /* MIGR_PEER_H */
