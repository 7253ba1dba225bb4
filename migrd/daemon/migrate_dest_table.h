/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The destination of a migration (migrate.h), inside: its table of
 * migrations (migrate_dest_table.c), at the bottom of the files that
 * share it:
 *   migrate_dest.c        each mig-* request, the restore, the commit
 *   migrate_dest_keep.c   what the coming process keeps until its restore:
 *                         its partner grants, its numbers held
 *   migrate_dest_sweep.c  what outlives migrd: the commit's mark, and the
 *                         sweep at start of a copy never committed
 */
#ifndef MIGRD_MIGRATE_DEST_TABLE_H
#define MIGRD_MIGRATE_DEST_TABLE_H

#include <pthread.h>
#include <stdbool.h>

#include "migrate_bounds.h"
#include "netns.h"
#include "numhold.h"

#define DEST_MAX 8 /* migrations at once */
#define DEST_STALE_MS (30 * 60000) /* checked, never restored: dropped */
/*
 * Numbers one migration may have held here: a peer cannot hold a device's
 * every QP (rxe's pools count each held number as an object). At most what
 * migr's rdma_rxe lets one privileged holder hold (MIGR_RXE_HOLD_MAX,
 * checked in migrate_dest_keep.c)
 */
#define DEST_HOLD_MAX 16384

enum dest_state { D_FREE, D_CHECKED, D_RESTORING, D_RESTORED, D_DONE };

struct dest_mig {
	enum dest_state state;
	char id[REQ_MIG_ID_LEN + 1];
	char who[64]; /* the source, for logs */
	int pid; /* the tree's root */
	unsigned long long start; /* the restored root's start time */
	/* its migr processes, as its pid namespace numbers them; here */
	int movers[REQ_MOVERS_MAX], nmovers;
	int hpids[REQ_MOVERS_MAX];
	unsigned long long hstarts[REQ_MOVERS_MAX];
	long long born, deadline; /* io_now_ms() */
	bool committed;
	/* its partner sessions' grants, until they are given to it */
	struct req_grant *grants;
	int ngrants;
	char dev[REQ_NAME_MAX]; /* where it is restored */
	/* its numbers, held until the restore (mig-hold), or why not */
	struct numhold *hold;
	char why_not_held[300];
	unsigned int asked; /* numbers asked to hold, up to DEST_HOLD_MAX */
	struct req_ns ns; /* the tree's own namespaces */
	char netns[32]; /* the network namespace made for it, if any */
	int nsfd;
};

/* Guards every dest_mig; broadcast when one changes */
extern pthread_mutex_t dest_lock;
extern pthread_cond_t dest_changed;

/* migrate_dest_table.c; under dest_lock unless said */
struct dest_mig *dest_find(const char *id);
/* A free slot: stale checks and finished ones are reused */
struct dest_mig *dest_slot(void);
/* The numbers held for it given back (what its restore did not claim) */
void dest_drop_hold(struct dest_mig *m);
/* sig to the tree of pid as it is now (pid alone if it cannot be read) */
void dest_signal_tree(int pid, int sig);
/* The restored tree, if it is still the one restored: killed */
void dest_kill_copy(struct dest_mig *m);
/* A copy that did not stay: the network namespace made for it goes */
void dest_drop_netns(struct dest_mig *m);
/* The fence's thread: a restored copy without a commit by its deadline dies */
void *dest_fence(void *arg);
/* The migration id in state want, or an error reply (takes dest_lock) */
struct dest_mig *dest_get(const char *id, enum dest_state want,
			  struct sbuf *out);
/*
 * A resumed copy an earlier migrd left (its record in dir: dest_record.h)
 * back in the table, under its fence; false if it cannot be (takes
 * dest_lock)
 */
bool dest_take_back(const char *id, const char *dir);

#endif
