// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* See proc_scan.h */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc_ns.h"
#include "proc_scan.h"

bool migr_is_uverbs(dev_t rdev)
{
	char path[64], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u", major(rdev),
		 minor(rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = 0;
	return strstr(link, "/infiniband_verbs/uverbs") != NULL;
}

static bool is_rdma_file(const char *target)
{
	return !strncmp(target, "/dev/infiniband/uverbs", 22) ||
	       !strcmp(target, "anon_inode:[infinibandevent]");
}

/* A uverbs file among pid's descriptors: 1 (named in what), 0, -1 */
static int scan_fds(pid_t pid, char *what, size_t len)
{
	char dir[64], path[320], target[256];
	struct dirent *e;
	int found = 0;
	ssize_t n;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (is_rdma_file(target)) {
			snprintf(what, len, "fd %s %s", e->d_name, target);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/* A uverbs mapping of pid's: 1 (named in what), 0, -1 */
static int scan_maps(pid_t pid, char *what, size_t len)
{
	char path[64], *line = NULL;
	size_t size = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && getline(&line, &size, f) > 0) {
		char *p = strstr(line, "/dev/infiniband/uverbs");

		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		snprintf(what, len, "a mapping of %s at %.*s", p,
			 (int)strcspn(line, " "), line);
		found = 1;
	}
	free(line);
	fclose(f);
	return found;
}

int migr_scan_rdma(pid_t pid, char *what, size_t len)
{
	int ret = scan_fds(pid, what, len);

	if (!ret)
		ret = scan_maps(pid, what, len);
	return ret;
}

bool migr_is_migr(pid_t pid)
{
	char path[64], name[32], *line = NULL;
	pid_t ns = migr_nspid(pid, NULL);
	size_t size = 0;
	bool found = false;
	FILE *f;

	if (ns <= 0)
		return false;
	/* the socket table of pid's network namespace */
	snprintf(path, sizeof(path), "/proc/%d/net/unix", pid);
	snprintf(name, sizeof(name), " @migr/%d\n", ns);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && getline(&line, &size, f) > 0) {
		size_t n = strlen(line), m = strlen(name);

		found = n >= m && !strcmp(line + n - m, name);
	}
	free(line);
	fclose(f);
	return found;
}
