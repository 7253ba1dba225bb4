// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrctl's tables: what migrd relays from migr processes, made readable */
#include <stdio.h>
#include <string.h>

#include "migrctl.h"

static const char *qp_state(int s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS",
					     "SQD",   "SQE",  "ERR" };

	return s >= 0 && s < 7 ? names[s] : "?";
}

static void str(const struct json *j, int obj, const char *key, char *buf,
		size_t len)
{
	if (!json_str(j, json_get(j, obj, key), buf, len) || !buf[0])
		snprintf(buf, len, "-");
}

static void show_qps(const struct json *j, int qps)
{
	int i, q;

	for (i = 0; (q = json_at(j, qps, i)) >= 0; i++)
		printf("    qp %u (device qp %u) %s -> %u%s\n",
		       (unsigned int)json_num(j, json_get(j, q, "qpn"), 0),
		       (unsigned int)json_num(j, json_get(j, q, "phys"), 0),
		       qp_state(json_num(j, json_get(j, q, "state"), -1)),
		       (unsigned int)json_num(j, json_get(j, q, "dest_qpn"), 0),
		       json_bool(j, json_get(j, q, "self"), false) ?
			       " (in this process)" :
			       "");
}

void show_status(const struct json *j, int detail)
{
	int procs = json_get(j, 0, "processes"), p, i, k, ctxs, c;
	char comm[64], dev[64], lower[64], blocker[128], err[256];
	unsigned int nqps, st[7];

	if (json_at(j, procs, 0) < 0) {
		printf("no migr processes\n");
		return;
	}
	printf("%-8s %-6s %-16s %-12s %-8s %-8s %-4s %s\n", "PID", "UID",
	       "COMM", "DEVICE", "LOWER", "SWITCHES", "QPS", "STATE");
	for (i = 0; (p = json_at(j, procs, i)) >= 0; i++) {
		int pid = json_num(j, json_get(j, p, "pid"), 0);
		int uid = json_num(j, json_get(j, p, "uid"), 0);
		int s = json_get(j, p, "status");

		str(j, p, "comm", comm, sizeof(comm));
		ctxs = json_get(j, s, "contexts");
		if (ctxs < 0) {
			str(j, p, "error", err, sizeof(err));
			printf("%-8d %-6d %-16s %s\n", pid, uid, comm, err);
			continue;
		}
		if (json_at(j, ctxs, 0) < 0)
			printf("%-8d %-6d %-16s (no open migr device)\n", pid,
			       uid, comm);
		for (k = 0; (c = json_at(j, ctxs, k)) >= 0; k++) {
			int qps = json_get(j, c, "qps"), q, n;
			char state[256] = "";

			str(j, c, "device", dev, sizeof(dev));
			str(j, c, "lower", lower, sizeof(lower));
			str(j, c, "blocker", blocker, sizeof(blocker));
			memset(st, 0, sizeof(st));
			for (nqps = 0; (q = json_at(j, qps, nqps)) >= 0;
			     nqps++) {
				n = json_num(j, json_get(j, q, "state"), -1);
				if (n >= 0 && n < 7)
					st[n]++;
			}
			for (n = 0; n < 7; n++)
				if (st[n])
					snprintf(state + strlen(state),
						 sizeof(state) - strlen(state),
						 "%s%u %s",
						 state[0] ? ", " : "", st[n],
						 qp_state(n));
			if (strcmp(blocker, "-"))
				snprintf(state + strlen(state),
					 sizeof(state) - strlen(state),
					 "%scannot switch: %s",
					 state[0] ? "; " : "", blocker);
			printf("%-8d %-6d %-16s %-12s %-8s %-8u %-4u %s\n", pid,
			       uid, comm, dev, lower,
			       (unsigned int)json_num(
				       j, json_get(j, c, "switches"), 0),
			       nqps, state[0] ? state : "-");
			if (detail)
				show_qps(j, qps);
		}
	}
}

/* Phase names as migr(7) explains them */
static const char *phase_label(const char *key)
{
	if (!strcmp(key, "drain"))
		return "quiesce/drain";
	if (!strcmp(key, "replay"))
		return "repost/replay";
	if (!strcmp(key, "partner_reconnect"))
		return "partner reconnect";
	return key;
}

static void show_ctx(const struct json *j, int c)
{
	char dev[64], from[64], to[64], err[256], key[32];
	int ph = json_get(j, c, "phases_ms"), o = json_get(j, c, "objects");
	bool ok = json_bool(j, json_get(j, c, "ok"), false);
	int i, k;

	str(j, c, "device", dev, sizeof(dev));
	str(j, c, "from", from, sizeof(from));
	str(j, c, "to", to, sizeof(to));
	printf("%s: %s -> %s: %s", dev, from, to, ok ? "ok" : "FAILED");
	if (!ok) {
		str(j, c, "error", err, sizeof(err));
		printf(" (%s%s)", err,
		       json_bool(j, json_get(j, c, "rolled_back"), false) ?
			       ", rolled back" :
			       "");
	}
	printf("\n  %-16s %10s\n", "phase", "ms");
	for (i = 0; (k = json_key_at(j, ph, i)) >= 0; i++) {
		json_str(j, k, key, sizeof(key));
		printf("  %-16s %10.3f\n", phase_label(key),
		       json_num(j, k + 1, 0));
	}
	printf("  %-16s %10.3f\n", "total",
	       json_num(j, json_get(j, c, "total_ms"), 0));
	printf("  rebuilt: %u PDs, %u DMs, %u MRs, %u MWs, %u channels, %u CQs, %u SRQs, %u QPs, %u AHs\n",
	       (unsigned int)json_num(j, json_get(j, o, "pds"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "dms"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "mrs"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "mws"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "channels"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "cqs"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "srqs"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "qps"), 0),
	       (unsigned int)json_num(j, json_get(j, o, "ahs"), 0));
	printf("  partners followed: %u QPs in other processes (busy partners waited out %u times)\n",
	       (unsigned int)json_num(j, json_get(j, c, "partners"), 0),
	       (unsigned int)json_num(j, json_get(j, c, "retries"), 0));
	printf("  held WRs %u, replayed WRs %u (partners %u), reposted receives %u (flushed %u), shadowed completions %u, lost %u\n",
	       (unsigned int)json_num(j, json_get(j, c, "held_wrs"), 0),
	       (unsigned int)json_num(j, json_get(j, c, "replayed_wrs"), 0),
	       (unsigned int)json_num(j, json_get(j, c, "partner_replayed_wrs"),
				      0),
	       (unsigned int)json_num(j, json_get(j, c, "reposted_recvs"), 0),
	       (unsigned int)json_num(j, json_get(j, c, "flushed"), 0),
	       (unsigned int)json_num(j, json_get(j, c, "shadowed"), 0),
	       (unsigned int)json_num(j, json_get(j, c, "lost"), 0));
}

void show_switch(const struct json *j)
{
	int reply = json_get(j, 0, "reply"), sw = json_get(j, reply, "switch");
	int i, c;

	printf("pid %d\n", (int)json_num(j, json_get(j, 0, "pid"), 0));
	for (i = 0; (c = json_at(j, sw, i)) >= 0; i++)
		show_ctx(j, c);
}

void show_qpn_owner(const struct json *j, const char *host)
{
	char dev[64], comm[64], kern[64];
	int pid = json_num(j, json_get(j, 0, "pid"), 0);

	str(j, 0, "ibdev", dev, sizeof(dev));
	printf("%s%s%s qp %u: ", host ? host : "", host ? ": " : "", dev,
	       (unsigned int)json_num(j, json_get(j, 0, "qpn"), 0));
	if (!pid) {
		str(j, 0, "kernel", kern, sizeof(kern));
		printf("kernel (%s)\n", kern);
		return;
	}
	str(j, 0, "comm", comm, sizeof(comm));
	printf("pid %d%s%s%s\n", pid,
	       json_bool(j, json_get(j, 0, "migr"), false) ? " (migr, " : "",
	       json_bool(j, json_get(j, 0, "migr"), false) ? comm : "",
	       json_bool(j, json_get(j, 0, "migr"), false) ? ")" : "");
}

void show_peer_ping(const struct json *j)
{
	char host[256], peer[256];
	int p = json_get(j, 0, "peer");

	str(j, 0, "host", host, sizeof(host));
	str(j, p, "host", peer, sizeof(peer));
	printf("%s: migrd %d on %s authenticated, %.3f ms\n", host,
	       (int)json_num(j, json_get(j, p, "version"), 0), peer,
	       json_num(j, json_get(j, 0, "rtt_ms"), 0));
}
