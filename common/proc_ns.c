// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* NSpid and the uid, read once for migrd and the plugin (proc_ns.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_ns.h"

int migr_nspid_parse(const char *fields, int *depth)
{
	const char *p = fields;
	int last = -1, d = 0;
	char *end;
	long v;

	for (;;) {
		p += strspn(p, " \t\n");
		if (!*p)
			break;
		v = strtol(p, &end, 10);
		if (end == p || v <= 0 || v > 0x7fffffff) {
			last = -1;
			d = 0;
			break;
		}
		last = v;
		d++;
		p = end;
	}
	if (depth)
		*depth = d;
	return last;
}

int migr_nspid(int pid, int *depth)
{
	char path[64], *line = NULL;
	size_t size = 0;
	int last = -1;
	FILE *f;

	if (depth)
		*depth = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (getline(&line, &size, f) > 0) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		last = migr_nspid_parse(line + 6, depth);
		break;
	}
	free(line);
	fclose(f);
	return last;
}

int migr_proc_euid(int pid, unsigned int *uid)
{
	char path[64], line[256];
	unsigned int r, e;
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
			*uid = e;
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}
