/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * UD peers in other processes. A UD QP names its peer in every send WR: an
 * address handle (the peer's GID) and a QPN. When a process on another
 * host (or device) moves its UD QPs, it tells every migr process of the
 * hosts its AHs name and its datagrams came from (migrd's udpeers relay):
 * "the QP that was FROM on FROMGID is now TO on TOGID" (and is KNOWN to
 * applications, its virtual number). Each of those
 * processes keeps a record per moved QP (the number its application
 * knows, where it is now, where it was), shows its datagrams under the
 * known number, and sends what its AHs address to that QP at any of its
 * places to the new one: per AH, a redirect table from the QPN the
 * application names to a lower AH naming the new GID and the new QPN.
 * The data path looks there only for AHs that have one (one pointer test
 * otherwise). New AHs follow the records too.
 *
 * Entries are never changed once published, so a post reads a consistent
 * one without a lock: a second move of the same peer adds an entry and
 * points the QPN at it. Lower AHs are kept until the AH is destroyed, and
 * replaced when this process moves itself (release and rebuild).
 */
#ifndef MIGR_UD_REDIRECT_H
#define MIGR_UD_REDIRECT_H

#include <stdio.h>

#include "migr.h"

#define MIGR_UD_REDIR_MAX 128 /* entries of one AH's table */
#define MIGR_UD_REDIR_AHS 16 /* distinct new GIDs one AH leads to */
#define MIGR_UD_MOVES_MAX 64 /* peer QPs elsewhere that moved */
#define MIGR_UD_PAST_MAX 8 /* GIDs one was at before */

/*
 * A UD QP elsewhere that moved, as a context heard: the number its
 * application knows (the one it had before its first move), where it is
 * now, and the GIDs it was at (AHs naming any of them lead to it)
 */
struct migr_ud_moved {
	uint32_t virt, now_qpn;
	union ibv_gid now_gid;
	unsigned int npast;
	union ibv_gid past[MIGR_UD_PAST_MAX];
};

struct migr_ud_moves {
	unsigned int n;
	struct migr_ud_moved e[MIGR_UD_MOVES_MAX];
};

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
 * AH, and *qpn as the lower device must see it: where a peer elsewhere
 * moved, or a QP of this process's after its switches (r: the QP's table
 * of its partners' numbers)
 */
static inline struct ibv_ah *migr_ud_dest(const struct migr_xlate *r,
					  struct ibv_ah *ah, uint32_t *qpn)
{
	struct migr_ah *mah = to_mah(ah);
	const struct migr_ud_redir *red;
	uint32_t i;

	if (!ah)
		return NULL;
	red = __atomic_load_n(&mah->redir, __ATOMIC_ACQUIRE);
	if (unlikely(red) && migr_u32map_get(&red->map, *qpn, &i)) {
		*qpn = red->e[i].qpn;
		return red->ahs[red->e[i].ah].lower;
	}
	if (mah->local)
		*qpn = migr_remote_qpn_to_phys(r, *qpn);
	return mah->lower;
}

/* ud_redirect.c: the tables, under the context's ctl_lock for writing */
int migr_ud_redirect(struct migr_context *ctx, const union ibv_gid *from_gid,
		     uint32_t from, const union ibv_gid *to_gid, uint32_t to,
		     uint32_t known, unsigned int *changed, char *why,
		     size_t why_len);
int migr_ud_redir_new_ah(struct migr_context *ctx, struct migr_ah *mah);
void migr_ud_redir_release(struct migr_ah *mah);
int migr_ud_redir_rebuild(struct migr_ah *mah);
void migr_ud_redir_free(struct migr_ah *mah);

#endif /* MIGR_UD_REDIRECT_H */
