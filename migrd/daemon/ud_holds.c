// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Does a process hold a UD QP (ud_holds.h)? A dump of each device */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locate.h"
#include "migrd.h"
#include "qpowner.h"
#include "registry.h"
#include "ud_holds.h"

#define UD_LIST_MAX 16384 /* QPs of one device, every process's */
#define UD_PLACES_MAX 64

/*
 * The places to list: the devices of this host, or the GIDs the test
 * stand-in names (its devices); how many, at most UD_PLACES_MAX
 */
static int places(char (*v)[LOCATE_NAME_MAX])
{
	char line[128], name[LOCATE_NAME_MAX];
	int n = 0, i;
	struct dirent *d;
	DIR *dir;
	FILE *f;

	if (!migrd.test_qp_owners) {
		dir = opendir(LOCATE_SYSFS);
		while (dir && (d = readdir(dir)) && n < UD_PLACES_MAX)
			if (d->d_name[0] != '.' &&
			    strlen(d->d_name) < LOCATE_NAME_MAX)
				snprintf(v[n++], LOCATE_NAME_MAX, "%s",
					 d->d_name);
		if (dir)
			closedir(dir);
		return n;
	}
	f = fopen(migrd.test_qp_owners, "re");
	while (f && fgets(line, sizeof(line), f) && n < UD_PLACES_MAX) {
		if (sscanf(line, "%63s", name) != 1)
			continue;
		for (i = 0; i < n && strcmp(v[i], name); i++)
			;
		if (i == n)
			snprintf(v[n++], LOCATE_NAME_MAX, "%s", name);
	}
	if (f)
		fclose(f);
	return n;
}

int ud_holds(int tgid, char *err, size_t errlen)
{
	char(*v)[LOCATE_NAME_MAX] = calloc(UD_PLACES_MAX, sizeof(*v));
	struct qp_holder *list = calloc(UD_LIST_MAX, sizeof(*list));
	int np, n, i, k, ret = 0;

	if (!v || !list) {
		snprintf(err, errlen, "out of memory");
		ret = -1;
		goto out;
	}
	np = places(v);
	for (k = 0; k < np && ret == 0; k++) {
		n = qpn_list(v[k], list, UD_LIST_MAX, err, errlen);
		if (n < 0)
			ret = -1;
		for (i = 0; i < n && !ret; i++)
			if (list[i].pid > 0 &&
			    (list[i].type == QPOWNER_TYPE_UD ||
			     list[i].type < 0) &&
			    proc_tgid(list[i].pid) == tgid)
				ret = 1;
	}
out:
	free(list);
	free(v);
	return ret;
}
