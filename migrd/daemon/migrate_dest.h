/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The destination of a migration (migrate.h), inside: its table of
 * migrations, shared by
 *   migrate_dest.c        the table, its fence, each mig-* request, the
 *                         restore
 *   migrate_dest_keep.c   what the coming process keeps until its restore:
 *                         its partner grants, its numbers held
 *   migrate_dest_sweep.c  what outlives migrd: the commit's mark, and the
 *                         sweep at start of a copy never committed
 */
#ifndef MIGRD_MIGRATE_DEST_H
#define MIGRD_MIGRATE_DEST_H

#include <pthread.h>
#include <stdbool.h>

#include "migrate.h"
#include "netns.h"
#include "numhold.h"

#define DEST_MAX 8 /* migrations at once */
#define DEST_STALE_MS (30 * 60000) /* checked, never restored: dropped */
/*
 * Numbers one migration may have held here: a peer cannot hold a device's
 * every QP (rxe's pools count each held number as an object)
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

/* Guards every dest_mig */
extern pthread_mutex_t dest_lock;

/* migrate_dest.c */
/* The migration id in state want, or an error reply */
struct dest_mig *dest_get(const char *id, enum dest_state want,
			  struct sbuf *out);
/* sig to the tree of pid as it is now (pid alone if it cannot be read) */
void dest_signal_tree(int pid, int sig);
/*
 * A resumed copy an earlier migrd left (its record in dir: dest_record.h)
 * back in the table, under its fence; false if it cannot be
 */
bool dest_take_back(const char *id, const char *dir);

/* migrate_dest_keep.c */
void dest_grants(const struct req *r, struct sbuf *out);
void dest_give_grants(struct dest_mig *m, int k);
void dest_hold(const struct req *r, struct sbuf *out);

/* migrate_dest_sweep.c */
void dest_mark_committed(const struct dest_mig *m);
bool dest_was_committed(const char *id);

#endif
