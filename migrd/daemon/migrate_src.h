/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The source of a migration (migrate.h), one file per step, all sharing
 * one struct mig:
 *   migrate.c           the request: claim, the steps in order, the report
 *   migrate_check.c     said before anything is touched: the tree, its migr
 *                       processes, the destination's mig-check
 *   migrate_precopy.c   the numbers held there, pre-copy rounds, criu dump
 *   migrate_final.c     park, grants, the final dump and its transfer
 *   migrate_commit.c    restore there and commit, or settle it later
 *   migrate_rollback.c  back to work here when it failed before the commit
 */
#ifndef MIGRD_MIGRATE_SRC_H
#define MIGRD_MIGRATE_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migr_json.h"
#include "migrate_bounds.h"
#include "netns.h"
#include "peer.h"

struct round {
	uint64_t pages; /* bytes of pages this round dumped */
	uint64_t sent;
	double ms_dump, ms_send;
};

struct mig {
	const struct req *r;
	const struct client *c;
	struct req r_kept; /* r, once a settle thread outlives the request */
	char id[REQ_MIG_ID_LEN + 1];
	char dir[512]; /* <state_dir>/migrations/<id> */
	char dev[REQ_NAME_MAX]; /* where it resumes on the destination */
	char from[REQ_NAME_MAX]; /* the device it runs on here */
	char twin[REQ_NAME_MAX]; /* the device its numbers were given on */
	char criu_ver[REQ_NAME_MAX];
	int pids[MIG_TREE_MAX], npids, tids[MIG_TREE_MAX], ntids;
	/* its migr processes: host pids, and as its pid namespace numbers them */
	int movers[REQ_MOVERS_MAX], nsmovers[REQ_MOVERS_MAX], nmovers;
	int nparked; /* movers[0, nparked) parked */
	struct peer_conn *pc;
	struct round rounds[REQ_PRECOPY_MAX];
	unsigned int nrounds;
	double ms_check, ms_precopy, ms_park, ms_dump, ms_send, ms_restore,
		ms_rebuild, ms_partner, ms_blackout;
	/* the longest any partner elsewhere held its posts: its blackout */
	double ms_partner_blackout;
	unsigned int partners; /* QPs whose partner is in another process */
	unsigned int partners_kept; /* of them, on their own numbers still */
	/* objects rebuilt there on the numbers they had (migr_rxe(7)), or not */
	unsigned int numbers_kept, numbers_translated;
	/*
	 * The numbers its migr processes have (REQ_HOLD_*), held there during
	 * the pre-copy (mig-hold), and how many of them the restore claimed
	 */
	uint32_t *hold[REQ_HOLD_KINDS];
	size_t nhold[REQ_HOLD_KINDS];
	unsigned int numbers_held, numbers_claimed;
	uint64_t final_pages, final_sent;
	long long t_park; /* io_now_ms(): the application stopped */
	bool answered; /* the last ask() had a reply, ok or not */
	bool park_unknown; /* movers[nparked] had no answer: it may be parked */
	bool checked; /* the destination took the migration */
	struct req_ns ns; /* its own namespaces, told to the destination */
	int nsfd; /* its own network namespace, or -1 */
	unsigned long netns_ino;
	bool link_down; /* its interface, down from the final dump on */
	int pid_there; /* its root's pid on the destination (host's) */
	char err[512];
};

/* migrate_state.c */
/* One process may be moved at a time: false if it is being moved */
bool mig_claim(int pid);
void mig_unclaim(int pid);
/* m->err, formatted; -1 */
int mig_fail(struct mig *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A line for migrctl's terminal; a client that went away misses it */
void mig_progress(struct mig *m, const char *phase, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
double mig_mib_s(uint64_t bytes, double ms);
struct peer_conn *mig_conn(struct mig *m);
json_t *mig_ask(struct mig *m, struct req *q, int timeout_ms);
int mig_end(struct mig *m, const char *what, char *state, size_t len);
void mig_free(struct mig *m);

/* migrate_check.c */
int mig_checks(struct mig *m);

/* migrate_precopy.c */
void mig_hold_numbers(struct mig *m);
int mig_precopy(struct mig *m);
int mig_dump(struct mig *m, const char *sub, const char *prev, bool final);
int mig_send_dir(struct mig *m, const char *sub, uint64_t *sent, double *ms);
uint64_t mig_pages_of(const struct mig *m, const char *sub);

/* migrate_final.c */
int mig_park(struct mig *m);
int mig_send_grants(struct mig *m);
int mig_final(struct mig *m);

/* migrate_commit.c */
int mig_restore_commit(struct mig *m);
void mig_committed_here(struct mig *m);
bool mig_settle_later(struct mig *m);

/* migrate_rollback.c */
void mig_rollback(struct mig *m);
void mig_fence_wait(struct mig *m, long long sent);

#endif
