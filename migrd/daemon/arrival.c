// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A restored tree's users checked before it runs (arrival.h) */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arrival.h"
#include "migrate_bounds.h"
#include "ptree.h"

/* What a status file says about whom the thread runs as */
struct creds {
	unsigned long uid[4], gid[4]; /* real, effective, saved, fs */
	char groups[512]; /* supplementary, as written */
	uint64_t cap_prm, cap_eff, cap_amb;
	int seen; /* Uid, Gid, Groups, CapPrm, CapEff (CapAmb may be absent) */
};

static void read_line(const char *line, struct creds *c)
{
	unsigned long *v = NULL;

	if (!strncmp(line, "Uid:", 4))
		v = c->uid;
	else if (!strncmp(line, "Gid:", 4))
		v = c->gid;
	if (v && sscanf(line + 4, "%lu %lu %lu %lu", &v[0], &v[1], &v[2],
			&v[3]) == 4)
		c->seen++;
	else if (!strncmp(line, "Groups:", 7) &&
		 snprintf(c->groups, sizeof(c->groups), "%s", line + 7) > 0)
		c->seen++;
	else if (sscanf(line, "CapPrm: %" SCNx64, &c->cap_prm) == 1 ||
		 sscanf(line, "CapEff: %" SCNx64, &c->cap_eff) == 1)
		c->seen++;
	else
		sscanf(line, "CapAmb: %" SCNx64, &c->cap_amb);
}

static int read_creds(const char *path, struct creds *c)
{
	char line[600];
	FILE *f = fopen(path, "re");

	memset(c, 0, sizeof(*c));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		read_line(line, c);
	fclose(f);
	return c->seen == 5 ? 0 : -1;
}

/* Is gid 0 among the supplementary groups, as written? */
static bool in_root_group(const char *groups)
{
	const char *p = groups;
	unsigned long g;
	int n;

	while (sscanf(p, "%lu%n", &g, &n) == 1) {
		if (!g)
			return true;
		p += n;
	}
	return false;
}

int arrival_check_status(const char *path, int tid,
			 const struct uid_ranges *allowed, char *err,
			 size_t errlen)
{
	bool root_ok = uid_ranges_has(allowed, 0);
	struct creds c;
	int i;

	if (read_creds(path, &c)) {
		snprintf(err, errlen, "cannot read who thread %d runs as", tid);
		return -1;
	}
	for (i = 0; i < 4; i++) {
		if (uid_ranges_has(allowed, c.uid[i]))
			continue;
		snprintf(
			err, errlen,
			"thread %d would run as uid %lu here, which arrive_uids does not allow (migrd(8) TRUST)",
			tid, c.uid[i]);
		return -1;
	}
	if (root_ok)
		return 0;
	for (i = 0; i < 4; i++)
		if (!c.gid[i])
			break;
	if (i < 4 || in_root_group(c.groups)) {
		snprintf(
			err, errlen,
			"thread %d would run in root's group (gid 0) here, which only root may (arrive_uids has no 0)",
			tid);
		return -1;
	}
	if (c.cap_prm || c.cap_eff || c.cap_amb) {
		snprintf(
			err, errlen,
			"thread %d would hold capabilities here (permitted %" PRIx64
			"), which only root may (arrive_uids has no 0)",
			tid, c.cap_prm | c.cap_eff | c.cap_amb);
		return -1;
	}
	return 0;
}

int arrival_check(int pid, const struct uid_ranges *allowed, char *err,
		  size_t errlen)
{
	int pids[MIG_TREE_MAX], tids[MIG_TREE_MAX], np, nt, i;
	char path[64];

	if (ptree_read(pid, pids, &np, tids, &nt, MIG_TREE_MAX) < 0) {
		snprintf(err, errlen, "cannot read the restored tree of pid %d",
			 pid);
		return -1;
	}
	/* every thread: credentials are a thread's own in Linux */
	for (i = 0; i < nt; i++) {
		snprintf(path, sizeof(path), "/proc/%d/status", tids[i]);
		if (arrival_check_status(path, tids[i], allowed, err, errlen))
			return -1;
	}
	return 0;
}
