/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What a process holds of RDMA devices, read from /proc: uverbs files,
 * their event files and their mappings (none once a migr process is
 * parked), and whether it is a migr process (it serves "migr/<pid>").
 */
#ifndef MIGR_CRIU_PROC_SCAN_H
#define MIGR_CRIU_PROC_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Is rdev a uverbs character device (/sys/dev/char says so)? */
bool migr_is_uverbs(dev_t rdev);

/*
 * 1 if pid holds a uverbs file, an [infinibandevent] file or a uverbs
 * mapping, naming the first in what ("fd 5 /dev/infiniband/uverbs0");
 * 0 if none; -1 if /proc could not be read (errno)
 */
int migr_scan_rdma(pid_t pid, char *what, size_t len);

/* Does pid serve a migr control socket (it runs the migr provider)? */
bool migr_is_migr(pid_t pid);

#endif /* MIGR_CRIU_PROC_SCAN_H */
