/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Who may relay which partner steps (partner.c). A local migr process that
 * is not root may only speak for partner QPs that face a QP of its own.
 * Before its "prepare" is relayed, migrd asks the partner, step "faces
 * GID QPN ARGS [. QPN ARGS]..." (the prepare's own arguments), which QP
 * each of those QPs is connected to (its answer per QP: "peer_phys", the
 * physical QP number, and "peer_gid"; or "notmine"); the
 * kernel must say the asker owns that QP on a device of this host with
 * that GID. Then the prepare goes to that partner process only, and the
 * QPs it prepared are granted to the asker (pid and start time) with that
 * partner pid and host for the later steps, under a lease each step
 * renews; a resume or abort that succeeds ends the grant.
 *
 * "fetch" (a QP being connected asks its peer for its lower QP and its
 * rkeys) needs no grant: it changes nothing, the peer answers only for a
 * QP that is unconnected or faces the asker's, and what it tells is of use
 * only over such a connection (an rkey is no capability without one).
 */
#ifndef MIGRD_PAUTH_H
#define MIGRD_PAUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "partner_line.h"
#include "req.h"

#define PAUTH_LEASE_MS 660000 /* a step may wait 600 s for a drain */
#define PAUTH_MAX 1024

/* Who asks, and which partner QP: the key of a grant */
struct pauth_key {
	int pid; /* the asker's process */
	unsigned long long start; /* its start time */
	/* the partner's host as the asker names it (an address, or empty) */
	char host[REQ_HOST_MAX];
	char gid[REQ_GID_LEN + 1];
	uint32_t qpn;
};

/* Grant (or renew) key for the partner process ppid (one of several) */
int pauth_grant(const struct pauth_key *k, int ppid, long long now_ms);
/* Is key granted for partner process ppid? Renews it if so. */
bool pauth_check(const struct pauth_key *k, int ppid, long long now_ms);
/* The grant of key for partner process ppid ends */
void pauth_drop(const struct pauth_key *k, int ppid);

/*
 * A migration moves the asker's grants with it: the live grants of the
 * asker (pid, start), at most max into v; how many there are. The
 * destination's migrd grants them to the restored process (its pid and
 * start time there) before it resumes: a peer daemon may relay any
 * partner step anyway, so they give it nothing it could not do.
 */
int pauth_list(int pid, unsigned long long start, struct req_grant *v, int max,
	       long long now_ms);

#endif
