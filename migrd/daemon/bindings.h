/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Whose a virtual QP number is (issue 34): the kernel names who holds a
 * number on a device now, but a QP that moved keeps the number its peers
 * know while the device may give that number to anyone (SET_NEXT on rxe,
 * or churning creates). So at each move migrd relays, it records where
 * the number went: (device, virtual QPN) to its owner (pid and start
 * time) at a switch and at a restore's resume here, or "moved away" at a
 * migration's commit from here. A fetch asks the owner only, or is
 * refused; it never asks whoever holds the number now.
 *
 * An owner's entries go when it ends (another start time); a move away is
 * kept BIND_MOVED_MS, long enough for clients that still have the old
 * address to be refused rather than steered to whoever takes the number,
 * after which the number is the device's again. At most BIND_MAX entries:
 * when full, the ended and the expired go first, then the oldest.
 */
#ifndef MIGRD_BINDINGS_H
#define MIGRD_BINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "req.h"

#define BIND_MAX 16384 /* a migration moves at most 16,384 numbers */
#define BIND_MOVED_MS (60 * 60 * 1000LL)
#define BIND_DEV_MAX 64 /* a device name; the test stand-in's: a GID */

struct binding {
	bool moved; /* left this host with its process */
	int pid; /* the owner, if not moved */
	unsigned long long start;
	char id[REQ_MIG_ID_LEN + 1]; /* moved: by this migration */
	long long since; /* io_now_ms() when recorded */
};

/* QP qpn on device dev is process pid's (started at start) from now on */
void bind_owner(const char *dev, uint32_t qpn, int pid,
		unsigned long long start, long long now_ms);
/* QP qpn on device dev left this host with its process (migration id) */
void bind_moved(const char *dev, uint32_t qpn, const char *id,
		long long now_ms);
/*
 * What is recorded for QP qpn on dev: true with *b. An owner that ended,
 * or a move older than BIND_MOVED_MS, is dropped and not found.
 */
bool bind_find(const char *dev, uint32_t qpn, struct binding *b,
	       long long now_ms);
/* QP qpn on dev is bound no more (its owner let it go) */
void bind_drop(const char *dev, uint32_t qpn);
/* How many entries there are (tests) */
int bind_count(void);

/*
 * bind_record.c, where the moves are learnt. After a switch migrd relayed
 * (reply: the process's): pid's QPs bound to it on the devices it had and
 * has, read from its status.
 */
void bind_switched(int pid, unsigned long long start, const char *reply);
/* A restored process resumed here: its QPs bound to it */
void bind_resumed(int pid, unsigned long long start);
/* A migration's commit from here: its numbers left, from each of devs */
void bind_left(const char *const *devs, int ndev, const uint32_t *qpns,
	       size_t n, const char *id);

#endif
