// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Where migrd learns that a process's virtual numbers changed place
 * (bindings.h): after a switch it relayed and a resume of a restored
 * process here, the process's status lists its QPs by the numbers its
 * peers know; a migration's commit from here takes the numbers it held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindings.h"
#include "locate.h"
#include "log.h"
#include "migr_json.h"
#include "migrd.h"
#include "sockio.h"

#define BIND_STATUS_MS 5000

/* The QPs of one context of a status bound to pid on dev */
static int bind_qps(const json_t *ctx, const char *dev, int pid,
		    unsigned long long start, long long now)
{
	const json_t *qp;
	size_t i;
	int n = 0;
	long long q;

	json_array_foreach (json_object_get(ctx, "qps"), i, qp) {
		q = migr_json_int(qp, "qpn", 1, 0xffffff, 0);
		if (q && dev[0]) {
			bind_owner(dev, q, pid, start, now);
			n++;
		}
	}
	return n;
}

/*
 * Every QP of pid's status bound to it on each device a context had: its
 * twin's (the numbers its peers were given), where it runs now, and from
 * (a device it left, or NULL); how many bindings were made
 */
static int bind_status(int pid, unsigned long long start, const char *from)
{
	char *reply, err[256], twin[BIND_DEV_MAX], lower[BIND_DEV_MAX];
	long long now = io_now_ms();
	const json_t *ctx;
	json_t *j;
	size_t i;
	int n = 0;

	if (proc_ask(pid, &(struct ctl_req){ .op = CTL_STATUS }, BIND_STATUS_MS,
		     &reply, err, sizeof(err))) {
		log_warn("pid %d moved, but its QPs are not bound to it: %s",
			 pid, err);
		return 0;
	}
	j = migr_json_parse(reply, strlen(reply));
	free(reply);
	json_array_foreach (json_object_get(j, "contexts"), i, ctx) {
		if (!migr_json_text(ctx, "device", twin, sizeof(twin)))
			twin[0] = 0;
		if (!migr_json_text(ctx, "lower", lower, sizeof(lower)))
			lower[0] = 0;
		n += bind_qps(ctx, twin_device(twin), pid, start, now);
		n += bind_qps(ctx, lower, pid, start, now);
		if (from && strcmp(from, lower))
			n += bind_qps(ctx, from, pid, start, now);
	}
	json_decref(j);
	return n;
}

void bind_switched(int pid, unsigned long long start, const char *reply)
{
	json_t *j = migr_json_parse(reply, strlen(reply));
	char from[BIND_DEV_MAX];
	int n;

	if (!migr_json_text(json_array_get(json_object_get(j, "switch"), 0),
			    "from", from, sizeof(from)))
		from[0] = 0;
	json_decref(j);
	n = bind_status(pid, start, from[0] ? from : NULL);
	log_dbg("pid %d switched: %d QP numbers bound to it", pid, n);
}

void bind_resumed(int pid, unsigned long long start)
{
	int n = bind_status(pid, start, NULL);

	log_dbg("pid %d resumed here: %d QP numbers bound to it", pid, n);
}

void bind_left(const char *const *devs, int ndev, const uint32_t *qpns,
	       size_t n, const char *id)
{
	long long now = io_now_ms();
	size_t i;
	int d;

	for (d = 0; d < ndev; d++)
		for (i = 0; i < n; i++)
			if (devs[d] && devs[d][0])
				bind_moved(devs[d], qpns[i], id, now);
	log_dbg("migration %s: %zu QP numbers left this host", id, n);
}
