// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "migrd.h"
#include "netns.h"
#include "proc_ns.h"
#include "registry.h"

struct entry {
	struct proc_info info;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry regs[REG_MAX];
static int nregs;

/*
 * /proc/<pid>/stat read once: its state (field 3) and start time (field
 * 22, which tells a reused pid from the one we knew); -1 if it is gone
 */
static int read_stat(int pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	*state = p[2];
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", start) != 1)
		return -1;
	return 0;
}

int proc_start(int pid, unsigned long long *start)
{
	char state;

	return read_stat(pid, &state, start);
}

bool proc_ended(int pid, unsigned long long start)
{
	unsigned long long now;
	char state;

	return read_stat(pid, &state, &now) || now != start || state == 'Z' ||
	       state == 'X';
}

int proc_uid(int pid, uid_t *uid)
{
	unsigned int u;

	if (migr_proc_euid(pid, &u))
		return -1;
	*uid = u;
	return 0;
}

int proc_tgid(int tid)
{
	char path[64], line[256];
	int tgid = tid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return tid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

void proc_comm(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	buf[0] = 0;
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

static bool fill(int pid, struct entry *e)
{
	memset(e, 0, sizeof(*e));
	e->info.pid = pid;
	if (proc_start(pid, &e->info.start) || proc_uid(pid, &e->info.uid))
		return false;
	proc_comm(pid, e->info.comm, sizeof(e->info.comm));
	return true;
}

void registry_add(int pid, const char *dev)
{
	struct entry e, *r = NULL;
	int i;

	if (!fill(pid, &e))
		return;
	pthread_mutex_lock(&lock);
	for (i = 0; i < nregs; i++)
		if (regs[i].info.pid == pid) {
			r = &regs[i];
			/* a new process, same pid */
			if (r->info.start != e.info.start)
				*r = e;
			break;
		}
	if (!r && nregs < REG_MAX) {
		r = &regs[nregs++];
		*r = e;
	}
	if (r) {
		size_t n = strlen(r->info.devs);

		r->info.registered = true;
		if (!strstr(r->info.devs, dev) &&
		    n + strlen(dev) + 2 < sizeof(r->info.devs))
			snprintf(r->info.devs + n, sizeof(r->info.devs) - n,
				 "%s%s", n ? " " : "", dev);
	} else {
		log_warn("registry full (%d processes), pid %d not recorded",
			 REG_MAX, pid);
	}
	pthread_mutex_unlock(&lock);
	log_info("pid %d (%s) registered %s", pid, e.info.comm, dev);
}

static bool alive(const struct entry *r)
{
	unsigned long long start;

	return !proc_start(r->info.pid, &start) && start == r->info.start;
}

void registry_prune(void)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nregs;) {
		if (alive(&regs[i])) {
			i++;
			continue;
		}
		log_info("pid %d (%s) is gone, pruned", regs[i].info.pid,
			 regs[i].info.comm);
		regs[i] = regs[--nregs];
	}
	pthread_mutex_unlock(&lock);
}

/*
 * The numbers in the "@migr/<n>" names of the unix socket table at path
 * (/proc/net/unix: migrd's network namespace; /proc/<pid>/net/unix:
 * pid's), each once, added to pids[n, max); the new count
 */
static int scan_unix(const char *path, int *pids, int n, int max)
{
	char line[512], name[256];
	int pid, i, first = n;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return n;
	while (fgets(line, sizeof(line), f) && n < max) {
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %255s", name) !=
			    1 ||
		    sscanf(name, "@migr/%d", &pid) != 1 || pid <= 0)
			continue;
		for (i = first; i < n && pids[i] != pid; i++)
			;
		if (i == n)
			pids[n++] = pid;
	}
	fclose(f);
	return n;
}

static bool has(const int *v, int n, int x)
{
	while (n--)
		if (v[n] == x)
			return true;
	return false;
}

/* The inode of pid's network namespace (0: self), or 0 if it is gone */
static unsigned long netns_ino(int pid)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/net");
	return stat(path, &st) ? 0 : st.st_ino;
}

/* The host pids of /proc, up to max; how many */
static int proc_pids(int *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && n < max && (e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]))
			pids[n++] = atoi(e->d_name);
	if (d)
		closedir(d);
	return n;
}

#define SCAN_PROCS 32768

/*
 * Migr processes in the other network namespaces of this host: a socket
 * name there is only valid there, and names the process by its pid in
 * its own pid namespace (a container's init binds "@migr/1"). A migrd
 * restarted under them has no registration of theirs, so each namespace's
 * table is read (/proc/<pid>/net/unix, once per namespace) and matched to
 * its processes' own pids. Who really holds a name is checked when it is
 * asked (proc.c: SO_PEERCRED). Adds host pids to pids[n, max).
 */
static int scan_netns(int *pids, int n, int max)
{
	unsigned long own = netns_ino(0), *inos;
	int *all, nall, i, k, nnames, names[REG_MAX];
	char path[64];

	all = calloc(SCAN_PROCS, sizeof(*all));
	inos = calloc(SCAN_PROCS, sizeof(*inos));
	nall = all && inos ? proc_pids(all, SCAN_PROCS) : 0;
	for (i = 0; i < nall; i++)
		inos[i] = netns_ino(all[i]);
	for (i = 0; i < nall && n < max; i++) {
		if (!inos[i] || inos[i] == own)
			continue;
		/* the first process of a namespace reads its table */
		for (k = 0; k < i && inos[k] != inos[i]; k++)
			;
		if (k < i)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/net/unix", all[i]);
		nnames = scan_unix(path, names, 0, REG_MAX);
		for (k = i; k < nall && nnames && n < max; k++)
			if (inos[k] == inos[i] &&
			    has(names, nnames, ns_pid(all[k])))
				pids[n++] = all[k];
	}
	free(all);
	free(inos);
	return n;
}

int registry_list(struct proc_info *out, int max)
{
	static int pids[REG_MAX];
	static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
	struct entry e;
	int n = 0, np, i, k;

	registry_prune();
	pthread_mutex_lock(&lock);
	for (i = 0; i < nregs && n < max; i++)
		out[n++] = regs[i].info;
	pthread_mutex_unlock(&lock);
	/*
	 * What registration read may be stale (a set-uid execve changes the
	 * uid, an exec the comm): read them again, keep the same process only
	 */
	for (i = 0, k = 0; i < n; i++) {
		unsigned long long start = out[i].start;

		if (!fill(out[i].pid, &e) || e.info.start != start)
			continue;
		out[i].uid = e.info.uid;
		memcpy(out[i].comm, e.info.comm, sizeof(out[i].comm));
		out[k++] = out[i];
	}
	n = k;

	pthread_mutex_lock(&scan_lock);
	np = scan_unix("/proc/net/unix", pids, 0, REG_MAX);
	if (!migrd.test_own_netns)
		np = scan_netns(pids, np, REG_MAX);
	for (i = 0; i < np && n < max; i++) {
		for (k = 0; k < n && out[k].pid != pids[i]; k++)
			;
		if (k == n && fill(pids[i], &e))
			out[n++] = e.info;
	}
	pthread_mutex_unlock(&scan_lock);
	return n;
}

bool registry_find(int pid, struct proc_info *out)
{
	static struct proc_info all[REG_MAX];
	static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;
	bool found = false;
	int n, i;

	pthread_mutex_lock(&find_lock);
	n = registry_list(all, REG_MAX);
	for (i = 0; i < n; i++)
		if (all[i].pid == pid) {
			*out = all[i];
			found = true;
			break;
		}
	pthread_mutex_unlock(&find_lock);
	return found;
}
