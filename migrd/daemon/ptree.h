/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* A process tree as CRIU dumps it: the process, its threads, its
 * children's, ... (/proc/<pid>/task/<tid>/children) */
#ifndef MIGRD_PTREE_H
#define MIGRD_PTREE_H

/*
 * The tree of pid: its processes (at most max, pid first) into pids and
 * every thread id of them (at most max) into tids. The counts, or -1 if
 * pid is gone or the tree is larger than max.
 */
int ptree_read(int pid, int *pids, int *npids, int *tids, int *ntids, int max);

/*
 * The first fd of the tree's processes open on target (a path), its
 * process in *pid; -1 if none
 */
int ptree_fd_to(const int *pids, int n, const char *target, int *pid);

/* sig to every process of the tree */
void ptree_signal(const int *pids, int n, int sig);

#endif
