// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptree.h"

/* Add the threads of pid and queue its children; -1 when full or gone */
static int add_proc(int pid, int *pids, int *npids, int *tids, int *ntids,
		    int max)
{
	char path[64];
	struct dirent *d;
	FILE *f;
	DIR *dir;
	int tid, child, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while (!ret && (d = readdir(dir))) {
		if (sscanf(d->d_name, "%d", &tid) != 1)
			continue;
		if (*ntids == max) {
			ret = -1;
			break;
		}
		tids[(*ntids)++] = tid;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid,
			 tid);
		f = fopen(path, "re");
		while (f && fscanf(f, "%d", &child) == 1) {
			if (*npids == max) {
				ret = -1;
				break;
			}
			pids[(*npids)++] = child;
		}
		if (f)
			fclose(f);
	}
	closedir(dir);
	return ret;
}

int ptree_read(int pid, int *pids, int *npids, int *tids, int *ntids, int max)
{
	int i;

	*npids = *ntids = 0;
	if (max < 1)
		return -1;
	pids[(*npids)++] = pid;
	/* pids[] is the queue: children are appended as they are found */
	for (i = 0; i < *npids; i++)
		if (add_proc(pids[i], pids, npids, tids, ntids, max))
			return -1;
	return 0;
}

void ptree_signal(const int *pids, int n, int sig)
{
	int i;

	for (i = 0; i < n; i++)
		kill(pids[i], sig);
}

int ptree_fd_to(const int *pids, int n, const char *target, int *pid)
{
	char path[300], link[256];
	struct dirent *d;
	int i, fd = -1;
	DIR *dir;

	for (i = 0; i < n && fd < 0; i++) {
		snprintf(path, sizeof(path), "/proc/%d/fd", pids[i]);
		dir = opendir(path);
		while (dir && fd < 0 && (d = readdir(dir))) {
			ssize_t l;

			snprintf(path, sizeof(path), "/proc/%d/fd/%s", pids[i],
				 d->d_name);
			l = readlink(path, link, sizeof(link) - 1);
			if (l <= 0)
				continue;
			link[l] = 0;
			if (!strcmp(link, target)) {
				fd = atoi(d->d_name);
				*pid = pids[i];
			}
		}
		if (dir)
			closedir(dir);
	}
	return fd;
}
