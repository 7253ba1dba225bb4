/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Which processes on this host run migr: those that registered (the migr
 * library tells migrd when it opens a device) and, as a fallback, those
 * whose control socket "@migr/<pid>" /proc/net/unix lists. Dead processes
 * (or a reused pid: another start time) are pruned.
 */
#ifndef MIGRD_REGISTRY_H
#define MIGRD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define REG_MAX 1024

/*
 * uid and comm are read from /proc again each time it is listed; start
 * tells the process from another with its pid later
 */
struct proc_info {
	int pid;
	uid_t uid;
	unsigned long long start; /* /proc/<pid>/stat starttime */
	char comm[32];
	char devs[128]; /* devices it registered, space separated */
	bool registered;
};

void registry_add(int pid, const char *dev);
/*
 * Prune the dead, then list every migr process (at most max), with its
 * credentials as they are now
 */
int registry_list(struct proc_info *out, int max);
/* The process pid, if it is a live migr process */
bool registry_find(int pid, struct proc_info *out);
void registry_prune(void);

/*
 * The process a thread belongs to: the kernel names the thread that created
 * an RDMA object (after a switch, migr's control thread), not its process.
 */
int proc_tgid(int tid);

/* The uid owning pid (its effective uid); -1 if it is gone */
int proc_uid(int pid, uid_t *uid);

/* Its start time (/proc/<pid>/stat field 22): 0, or -1 if it is gone */
int proc_start(int pid, unsigned long long *start);
/*
 * Has the process pid that started at start ended: gone, a zombie, or its
 * pid taken by another since?
 */
bool proc_ended(int pid, unsigned long long start);

/* Its command name (/proc/<pid>/comm); empty if it is gone */
void proc_comm(int pid, char *buf, size_t len);

#endif
