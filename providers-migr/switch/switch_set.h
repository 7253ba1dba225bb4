/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The contexts a switch moves together, and its two halves: a switch is
 * migr_set_park() then migr_set_unpark() at once; a migration between
 * hosts (park.c) keeps the set parked in between, while CRIU moves the
 * process.
 */
#ifndef MIGR_SWITCH_SET_H
#define MIGR_SWITCH_SET_H

#include "gid.h"
#include "migr.h"
#include "switch.h"

struct migr_partner;

/* The contexts a switch moves together, and what it keeps per context */
struct sw_set {
	struct migr_context **ctx;
	unsigned int n;
	struct migr_gid_move *gids; /* per context */
	/* per context: every GID of the old device's and its successor */
	struct migr_gid_history *moves;
	uint64_t **unused; /* per context, per QP in record order */
	struct migr_partner *partners; /* QPs whose partner is elsewhere */
	unsigned int npartners;
	/* a park's: per context, the GIDs of the device it left */
	struct migr_gid_table *tables;
	/*
	 * How long partners elsewhere hold their posts for us without news
	 * (0: MIGR_PARTNER_LEASE_MS beyond the drain bound); a park's covers
	 * the dump, the transfer and the restore on another host
	 */
	unsigned int lease_ms;
	/*
	 * A resume's: a rebuild that fails leaves it parked, its partners
	 * still holding; no way back to the device of the same name here
	 * (the one it left may be on another host: the source resumes it)
	 */
	bool no_way_back;
	/*
	 * A resume with no device named: back where it left, as after a
	 * failed migration. A partner that cannot be reached (it died
	 * meanwhile) is left behind, as on a switch's way back, not the
	 * reason to stay parked.
	 */
	bool way_back;
};

/*
 * A set of the n contexts in ctxs, their control locks taken (nothing
 * else changes their objects until migr_set_done()); NULL with rep->error
 */
struct sw_set *migr_set_new(struct migr_context **ctxs, unsigned int n,
			    struct migr_switch_report *rep);
/* The locks let go, the set freed */
void migr_set_done(struct sw_set *set);
void migr_set_free(struct sw_set *set);

/*
 * Check, prepare, suspend, drain, count, save and release, for a move to
 * target (NULL: the device the set is on). 0 when no context holds a
 * device; on failure everything runs on its lower objects again.
 */
int migr_set_park(struct sw_set *set, const char *target, unsigned int wait_ms,
		  struct migr_switch_report *rep);
/*
 * Rebuild on rep->to (back on rep->from if that fails), then replay.
 * EIO: not even the way back worked; the set stays released.
 */
int migr_set_unpark(struct sw_set *set, struct migr_switch_report *rep);

/*
 * The lower device named name (a migr device's lower, or a device itself)
 * opened; NULL with rep->error
 */
struct ibv_context *migr_open_by_name(const char *name,
				      struct migr_switch_report *rep);

#define REPORT(rep, fmt, ...)                                                  \
	snprintf((rep)->error, sizeof((rep)->error), fmt, ##__VA_ARGS__)

#define for_each_ctx(set, i, c)                                                \
	for ((i) = 0; (i) < (set)->n && ((c) = (set)->ctx[(i)]); (i)++)

/* Every QP of every context of the set */
#define for_each_set_qp(set, i, c, mqp)                                        \
	for_each_ctx (set, i, c)                                               \
		list_for_each (&(c)->rec.qps, mqp, entry)

/*
 * The phases' parts in their own files, for switch.c. switch_check.c:
 * the target the set moves to (NULL, *ret: none, or the set is on it),
 * and the check that every context can move there (nothing touched).
 */
struct ibv_context *migr_sw_open_target(struct sw_set *set, const char *target,
					struct migr_switch_report *rep,
					int *ret);
int migr_sw_check_set(struct sw_set *set, struct ibv_context *to,
		      struct migr_switch_report *rep);
/*
 * switch_drain.c: markers allowed into the set's QPs (or no more), then
 * suspend (posts held, partners suspended), drain (send queues empty, or
 * a replay planned; RECVs held) and count (the RECVs each QP holds unused)
 */
void migr_sw_grant_markers(const struct sw_set *set);
void migr_sw_ungrant_markers(const struct sw_set *set);
int migr_sw_suspend_set(struct sw_set *set, unsigned int wait_ms,
			struct migr_switch_report *rep);
int migr_sw_drain_set(struct sw_set *set, unsigned int wait_ms,
		      struct migr_switch_report *rep);
int migr_sw_count_set(struct sw_set *set, struct migr_switch_report *rep);

#endif /* MIGR_SWITCH_SET_H */
