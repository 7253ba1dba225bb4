/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Partners in other processes, on this host or another: the process at the
 * other end of an RC connection follows a switch. The moving process asks
 * it, through migrd (which relays to the partner's host and process), to
 * prepare, suspend and drain the one QP that faces it, take the moved
 * process's new keys, replace that QP's lower QP by one connected to the
 * rebuilt QP, and resume. See docs/switch.md, "Partners in other processes".
 *
 * This is the asking side: a step is one request line per partner process
 * to this host's migrd, which relays it (partner_call.c); the switch's
 * steps (switch/partner_steps.c) and a connect's fetch and give
 * (partner_fetch.c) are made of it. The answering side is serve/partner.h.
 *
 * Requests to the partner process (its control socket): "partner OP GID
 * QPN ARGS [. QPN ARGS]...", each QPN one of its QPs as we know it, GID
 * their port's GID in hex; one JSON line back with a result per QP:
 *
 *   faces GID QPN ARGS . QPN ARGS ...  (asked by migrd, not by the
 *       mover; ARGS a prepare's) which QP, physical "peer_phys" and
 *       "peer_gid" in hex, its QP is connected to, or "notmine" if that
 *       is not the QP ARGS name; changes nothing
 *   prepare GID QPN PEER_QPN LEASE_MS ACCESS MKEY MADDR PEER_PHYS PEER_ID
 *           PARTNER_PHYS ...
 *       its QP faces PEER_QPN (ours, virtual; PEER_PHYS on our device)
 *       of our context PEER_ID (hex), and is the lower QP PARTNER_PHYS
 *       ours is connected to; opens a session that ends by itself
 *       after LEASE_MS without news. Its drain marker goes to MADDR,
 *       MKEY (hex), as the remote ACCESS of our QP allows. Answers the
 *       same for ours: "access", "mkey", "maddr", and its context, "peer".
 *   suspend GID QPN WAIT_MS ...  hold its posts, drain its send queue;
 *                            answers "consumers" (its SENDs ever posted);
 *                            "undrained" if it did not drain in time and
 *                            may replay (MIGR_REPLAY=1), else it fails
 *   recvs GID QPN COUNTED RECVS POSTED ...  (a replay's: a drain hit its
 *                            bound) hold its RECVs; answers "recvs" (its
 *                            RECVs completed), "posted" (RECVs ever
 *                            posted), "counted" (false: it does not count
 *                            them). ARGS: the same of the mover's QP, for
 *                            an undrained one's decision: "replay" (its
 *                            unfinished WRs go again at resume, of them
 *                            "replay_consumers" SENDs) or "why" not
 *   keys GID V:P,V:P,... . QPN . QPN ...
 *                            our rkeys, virtual:physical, hex, for the
 *                            contexts of those QPs
 *   reconnect GID QPN NEW_QPN NEW_GID CONSUMERS ...
 *                            a new lower QP on the same CQs and PD,
 *                            connected to NEW_QPN; answers its "qpn"
 *   resume GID QPN . QPN ... post what it held; the session ends
 *   abort GID QPN . QPN ...  the same, whatever state it reached
 *
 * And when a QP of ours is connected to a QP in another process (any time,
 * not only in a switch), so that a peer that moved before is reached at
 * its lower QP and its rkeys translate from our first post:
 *
 *   fetch GID QPN PEER_QPN PEER_PHYS PEER_ID GEN START
 *       its QP QPN, unconnected or facing ours (PEER_QPN, PEER_PHYS on
 *       our device, context PEER_ID): its lower QP "phys", its context
 *       "peer" and the generation "gen" of its tables (0: never moved);
 *       unless GEN is that generation, "keys" (V:P,..., hex) of its MRs
 *       from the START-th, MIGR_FETCH_KEYS at most, and "next" (0: all).
 *       Keys only from a QP connected to the asker's: one not connected
 *       yet ("withheld":true) gives them when it connects:
 *   give GID QPN PEER_QPN 0 0 0 0 PEER_PHYS PEER_ID PARTNER_PHYS GEN LAST PAIRS
 *       our rkeys (PAIRS V:P,... hex, or "-"), to its QP QPN facing ours;
 *       LAST 1: they are all of generation GEN
 *
 * A process that does not own QPN replies "notmine"; one that is switching
 * itself replies "busy" (the mover backs off and tries again). Every other
 * result names the lower QP it holds, "phys": migrd takes a result as the
 * process's claim to the QP only if the kernel says the process owns that
 * QP (and, for prepare, faces and give, it is PARTNER_PHYS).
 */
#ifndef MIGR_PARTNER_CALL_H
#define MIGR_PARTNER_CALL_H

#include <jansson.h>

#include "marker.h"
#include "migr.h"

/* rkey pairs per fetch reply (each up to 18 characters) */
#define MIGR_FETCH_KEYS 96

/* How long a partner waits for news, beyond the mover's drain bound */
#define MIGR_PARTNER_LEASE_MS 10000
/* The longest lease a partner grants (a park's, across a migration) */
#define MIGR_PARTNER_LEASE_MAX_MS 600000

/* The moving side's view of one partner QP */
struct migr_partner {
	struct migr_qp *mqp; /* our QP that faces it */
	char host[64]; /* its address, from its GID */
	int pid; /* 0 until the first reply named it */
	uint32_t qpn; /* its QP number as our application knows it */
	union ibv_gid gid;
	struct migr_marker_target marker; /* where our marker goes */
	uint64_t consumers; /* its SENDs posted, at suspension */
	/* its send queue did not drain in time (it answered "undrained") */
	bool undrained;
	/* a replay's question: RECVs it took from us and was given, counted */
	uint64_t recvs, recvs_posted;
	bool recvs_counted;
	/* of its SENDs, those it will post again after the switch */
	uint64_t replay_consumers;
	/* of its WRs, those it posted again toward us at resume */
	uint64_t replayed;
	/* how long it held its posts toward us (its view of the blackout) */
	double held_ms;
	bool prepared, suspended;
	uint32_t new_qpn; /* its new lower QP, after reconnect */
};

/*
 * Before mqp (our lower QP our_phys) is connected by attr to a QP in
 * another process: ask that process (through migrd) for its lower QP and,
 * once per change of its tables, its rkeys. The replica of its tables that
 * now has them; NULL if it never moved (errno 0), or on failure (errno,
 * err set): then the application's values are used as they are, right
 * for a peer that never moved or has no migr. If the peer's GID in attr
 * is one it had before a switch, *gid is set to the one it has now.
 */
struct migr_xlate *migr_partner_fetch(struct migr_qp *mqp,
				      const struct ibv_qp_attr *attr,
				      uint32_t our_phys, union ibv_gid *gid,
				      char *err, size_t errlen);

/*
 * After mqp (our lower QP our_phys) was connected to QP dest_qpn with GID
 * dgid in another process (its lower QP partner_phys): if our tables ever
 * changed, give that QP our rkeys, which its process could not fetch
 * while ours was not connected yet (when it connected first). Called
 * without our control path held. 0, or an errno with err.
 */
int migr_partner_give(struct migr_qp *mqp, uint32_t dest_qpn,
		      const union ibv_gid *dgid, uint32_t our_phys,
		      uint32_t partner_phys, char *err, size_t errlen);

/* rkey pairs per "keys" request: well under migrd's line limit */
#define KEYS_PER_LINE 160
/* A connect waits this long at most for what its peer says (fetch) */
#define FETCH_TIMEOUT_S 3

/* What a step sends per QP, and takes from its answer */
struct migr_pcall_step {
	const char *op;
	const char *head; /* keys: the pairs, before the QPs */
	int (*args)(struct migr_partner *p, char *buf, size_t len, void *arg);
	int (*take)(struct migr_partner *p, const json_t *res, void *arg,
		    char *err, size_t errlen);
	void *arg;
	bool prepare; /* QPs a process disowns are looked for elsewhere */
	bool only_prepared; /* resume, abort: partners that said yes */
	unsigned int timeout_s; /* 0: migrd_call()'s default */
};

/*
 * A step for every partner in v[] (those st->args accepts), one request
 * per partner process and at most 24 QPs. 0, EBUSY, or an errno with err.
 */
int migr_pcall_step(struct migr_partner *v, unsigned int n,
		    const struct migr_pcall_step *st, char *err, size_t errlen);
/* The same, again every 100 ms up to tries times while a partner is busy */
int migr_pcall_patient(struct migr_partner *v, unsigned int n,
		       const struct migr_pcall_step *st, unsigned int tries,
		       char *err, size_t errlen);

#endif /* MIGR_PARTNER_CALL_H */
