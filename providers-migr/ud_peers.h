/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * UD peers in other processes. A UD QP names its peer in every send WR: an
 * address handle (the peer's GID) and a QPN. When a process on another
 * host (or device) moves its UD QPs, it tells every migr process of the
 * hosts its AHs name (migrd's udpeers relay): "the QP that was FROM on
 * FROMGID is now TO on TOGID". Each of those processes then sends what
 * its AHs address to FROM there to the new place instead: per AH, a
 * redirect table from the QPN the application names to a lower AH naming
 * the new GID and the new QPN. The data path looks there only for AHs
 * that have one (one pointer test otherwise).
 *
 * Entries are never changed once published, so a post reads a consistent
 * one without a lock: a second move of the same peer adds an entry and
 * points the QPN at it. Lower AHs are kept until the AH is destroyed, and
 * replaced when this process moves itself (release and rebuild).
 */
#ifndef MIGR_UD_PEERS_H
#define MIGR_UD_PEERS_H

#include <stdio.h>

#include "switch.h"

#define MIGR_UD_REDIR_MAX 128 /* entries of one AH's table */
#define MIGR_UD_REDIR_AHS 16 /* distinct new GIDs one AH leads to */

struct migr_ud_redir_entry {
	uint32_t key; /* the QPN as the application names it */
	uint32_t qpn; /* where it is now */
	uint8_t ah; /* index in ahs: the GID it is at now */
};

struct migr_ud_redir {
	struct migr_u32map map; /* key -> index in e */
	unsigned int n, nahs; /* writer side, under the context's ctl_lock */
	struct {
		union ibv_gid gid;
		struct ibv_ah *lower; /* mah's attributes, this dgid */
	} ahs[MIGR_UD_REDIR_AHS];
	struct migr_ud_redir_entry e[MIGR_UD_REDIR_MAX];
};

/*
 * Where a UD send WR with ah and *qpn goes on the lower device: the lower
 * AH, and *qpn rewritten when the peer moved (*moved then true).
 */
static inline struct ibv_ah *migr_ud_dest(struct ibv_ah *ah, uint32_t *qpn,
					  bool *moved)
{
	struct migr_ah *mah = to_mah(ah);
	const struct migr_ud_redir *r;
	uint32_t i;

	*moved = false;
	if (!ah)
		return NULL;
	r = __atomic_load_n(&mah->redir, __ATOMIC_ACQUIRE);
	if (likely(!r) || !migr_u32map_get(&r->map, *qpn, &i))
		return mah->lower;
	*moved = true;
	*qpn = r->e[i].qpn;
	return r->ahs[r->e[i].ah].lower;
}

/* ud_redirect.c: the tables, under the context's ctl_lock for writing */
int migr_ud_redirect(struct migr_context *ctx, const union ibv_gid *from_gid,
		     uint32_t from, const union ibv_gid *to_gid, uint32_t to,
		     unsigned int *changed, char *why, size_t why_len);
void migr_ud_redir_release(struct migr_ah *mah);
int migr_ud_redir_rebuild(struct migr_ah *mah);
void migr_ud_redir_free(struct migr_ah *mah);

/* ud_serve.c: "ud LINE" on the control socket, from migrd's relay */
void migr_ud_serve(FILE *out, const char *line);

/*
 * ud_announce.c, the moving side. Before anything is touched: the UD QPs
 * of the migr processes on the hosts ctx's AHs name (their lower numbers,
 * at most max, into known), and each UD QP's number now. After the
 * rebuild (or the rollback's): those hosts learn where each UD QP went.
 */
int migr_ud_probe(struct migr_context *ctx, uint32_t *known, unsigned int max,
		  unsigned int *n, char *why, size_t why_len);
int migr_ud_announce(struct migr_context *ctx,
		     const struct migr_gid_history *moves, bool rollback,
		     char *why, size_t why_len);

#endif /* MIGR_UD_PEERS_H */
