/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Who may arrive here: a restored tree, still stopped, runs only if every
 * thread of it runs as users arrive_uids allows (real, effective, saved,
 * file system ids). Root's group, and capabilities, count as root: they
 * arrive only where uid 0 may. Read from the kernel (/proc), not from the
 * images a peer sent: what is checked is what would run.
 */
#ifndef MIGRD_ARRIVAL_H
#define MIGRD_ARRIVAL_H

#include <stddef.h>

#include "conf_peer.h"

/*
 * Every thread of the tree of pid (ptree.h) checked against allowed: 0,
 * or -1 with a one-line err naming the first that may not run here
 */
int arrival_check(int pid, const struct uid_ranges *allowed, char *err,
		  size_t errlen);

/* One thread's status file (/proc/<pid>/task/<tid>/status), as above */
int arrival_check_status(const char *path, int tid,
			 const struct uid_ranges *allowed, char *err,
			 size_t errlen);

#endif
