// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A resumed copy's record (dest_record.h): one JSON object in a file */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dest_record.h"
#include "migr_json.h"
#include "registry.h"

#define RECORD "resumed"
#define RECORD_MAX 8192

static int write_ns(FILE *f, const struct req_ns *ns)
{
	fprintf(f, "\"ns\":{\"own_pidns\":%s,\"own_netns\":%s,\"ifname\":",
		ns->own_pidns ? "true" : "false",
		ns->own_netns ? "true" : "false");
	migr_json_str(f, ns->ifname);
	fputs(",\"mac\":", f);
	migr_json_str(f, ns->mac);
	fputs(",\"addr\":", f);
	migr_json_str(f, ns->addr);
	return fprintf(f, ",\"prefix\":%u}", ns->prefix) < 0 ? -1 : 0;
}

int dest_record_write(const char *dir, const struct dest_record *rec, char *err,
		      size_t errlen)
{
	char tmp[600], path[600];
	FILE *f;
	int k;

	snprintf(tmp, sizeof(tmp), "%s/.%s", dir, RECORD);
	snprintf(path, sizeof(path), "%s/%s", dir, RECORD);
	f = fopen(tmp, "we");
	if (!f)
		goto fail;
	fputs("{\"who\":", f);
	migr_json_str(f, rec->who);
	fprintf(f, ",\"pid\":%d,\"start\":%llu,\"deadline\":%lld,\"netns\":",
		rec->pid, rec->start, rec->deadline);
	migr_json_str(f, rec->netns);
	fputc(',', f);
	write_ns(f, &rec->ns);
	fputs(",\"movers\":[", f);
	for (k = 0; k < rec->nmovers; k++)
		fprintf(f, "%s{\"pid\":%d,\"start\":%llu}", k ? "," : "",
			rec->hpids[k], rec->hstarts[k]);
	/* whole, or not at all: a reader never sees half of one */
	if (fputs("]}\n", f) < 0 || fflush(f) || fsync(fileno(f))) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) || rename(tmp, path))
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "cannot write %.400s: %s", path,
		 strerror(errno ?: EIO));
	remove(tmp);
	return -1;
}

static bool read_ns(const json_t *o, struct req_ns *ns)
{
	ns->own_pidns = migr_json_true(o, "own_pidns");
	ns->own_netns = migr_json_true(o, "own_netns");
	ns->prefix = migr_json_int(o, "prefix", 0, 32, 0);
	return migr_json_text(o, "ifname", ns->ifname, sizeof(ns->ifname)) &&
	       migr_json_text(o, "mac", ns->mac, sizeof(ns->mac)) &&
	       migr_json_text(o, "addr", ns->addr, sizeof(ns->addr));
}

/* pid alive and the one started at start */
static bool same_process(int pid, unsigned long long start)
{
	unsigned long long now;

	return pid > 0 && !proc_start(pid, &now) && now == start;
}

static bool read_movers(const json_t *a, struct dest_record *rec)
{
	const json_t *one;
	uint64_t start;
	size_t i;

	if (!json_is_array(a) || !json_array_size(a) ||
	    json_array_size(a) > REQ_MOVERS_MAX)
		return false;
	json_array_foreach (a, i, one) {
		rec->hpids[i] = migr_json_int(one, "pid", 1, INT32_MAX, 0);
		if (!migr_json_u64(one, "start", &start) ||
		    !same_process(rec->hpids[i], start))
			return false;
		rec->hstarts[i] = start;
	}
	rec->nmovers = i;
	return true;
}

static json_t *load(const char *dir)
{
	char path[600], buf[RECORD_MAX];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, RECORD);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n < sizeof(buf) ? migr_json_parse(buf, n) : NULL;
}

bool dest_record_alive(const char *dir, struct dest_record *rec)
{
	json_t *j = load(dir);
	uint64_t start = 0;
	bool ok;

	if (!j)
		return false;
	memset(rec, 0, sizeof(*rec));
	rec->pid = migr_json_int(j, "pid", 1, INT32_MAX, 0);
	rec->deadline = migr_json_int(j, "deadline", 1, INT64_MAX, 0);
	ok = migr_json_text(j, "who", rec->who, sizeof(rec->who)) &&
	     migr_json_text(j, "netns", rec->netns, sizeof(rec->netns)) &&
	     read_ns(json_object_get(j, "ns"), &rec->ns) &&
	     migr_json_u64(j, "start", &start) && rec->deadline &&
	     same_process(rec->pid, start) &&
	     read_movers(json_object_get(j, "movers"), rec);
	rec->start = start;
	json_decref(j);
	return ok;
}
