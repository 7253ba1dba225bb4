/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Park and resume: a live switch split in two around a move between
 * hosts (docs/migration.md). A parked
 * process holds no device file or mapping, so an unmodified CRIU dumps
 * it; it keeps running meanwhile (posts held, polls served from the
 * shadow CQs) until CRIU freezes it. Both run on one thread (the control
 * socket's mover): the park's locks are that thread's until the resume.
 */
#ifndef MIGR_PARK_H
#define MIGR_PARK_H

#include <stdbool.h>

#include "switch.h"

/*
 * Park the n contexts in ctxs (the process's all): drain within wait_ms
 * and release every lower object. Partners in other processes hold their
 * posts toward us until the resume, or lease_ms without news (0: a
 * switch's lease). 0, or an errno with rep->error set and everything
 * running as before (EALREADY: parked already).
 */
int migr_park(struct migr_context **ctxs, unsigned int n, unsigned int wait_ms,
	      unsigned int lease_ms, struct migr_switch_report *rep);

/*
 * Rebuild the parked contexts on the device named target (NULL: the one
 * they left) and let them run. 0, or an errno with rep->error set: ENOENT
 * when nothing is parked or was resumed since the last park (a second
 * resume gets the first's outcome); ENODEV, ENOENT or EIO with the
 * process still parked, and a resume on the device it left can follow.
 * token: the one under which the destination's migrd holds the numbers
 * of the process's objects (migr_rxe(7)), 0 if none.
 */
int migr_resume(const char *target, uint64_t token,
		struct migr_switch_report *rep);

/* Parked now? Then the report of the park, into rep if not NULL */
bool migr_parked(struct migr_switch_report *rep);

#endif /* MIGR_PARK_H */
