// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrctl's tables: what migrd relays from migr processes, made readable */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "migrctl.h"

#define U32 0xffffffffLL
#define QPN 0xffffffLL

/*
 * Text from a reply is a process's to choose (its comm, its errors, its
 * device names): only printable ASCII reaches root's terminal, every other
 * byte (escape sequences, C1 controls, UTF-8 alike) prints as '?'.
 */
void show_clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

bool show_str(const struct json *j, int i, char *buf, size_t len)
{
	if (!json_str(j, i, buf, len))
		return false;
	show_clean(buf);
	return true;
}

/* One UTF-8 sequence at s (n bytes): its code point, or U+FFFD and 1 */
static unsigned long utf8(const unsigned char *s, size_t n, size_t *used)
{
	int k, more = s[0] >= 0xf0 ? 3 : s[0] >= 0xe0 ? 2 : s[0] >= 0xc0;
	static const unsigned long min[] = { 0, 0x80, 0x800, 0x10000 };
	unsigned long v = s[0] & (0x3f >> more);

	*used = 1;
	if (!more || s[0] >= 0xf8 || (size_t)more >= n)
		return 0xfffd;
	for (k = 1; k <= more; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0xfffd;
		v = v << 6 | (s[k] & 0x3f);
	}
	if (v < min[more] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000))
		return 0xfffd;
	*used = more + 1;
	return v;
}

/*
 * A reply as it came, on one line of printable ASCII: between tokens,
 * control bytes can only be whitespace (dropped); in strings, what is not
 * printable ASCII becomes its \u escape, the same text to a JSON reader.
 */
void show_json_line(FILE *f, const char *reply)
{
	const unsigned char *p = (const unsigned char *)reply;
	size_t n = strlen(reply), used;
	unsigned long v;
	bool in = false;

	while (n) {
		if (*p >= 0x20 && *p < 0x7f) {
			if (*p == '"')
				in = !in;
			used = 1;
			/* an escape's second byte is ASCII: keep it with it */
			if (*p == '\\' && in && n > 1 && p[1] >= 0x20 &&
			    p[1] < 0x7f)
				used = 2;
			fwrite(p, 1, used, f);
		} else if (!in) {
			used = 1;
		} else {
			v = *p < 0x80 ? *p : utf8(p, n, &used);
			if (v > 0xffff)
				fprintf(f, "\\u%04lx\\u%04lx",
					0xd800 + ((v - 0x10000) >> 10),
					0xdc00 + ((v - 0x10000) & 0x3ff));
			else
				fprintf(f, "\\u%04lx", v);
		}
		p += used;
		n -= used;
	}
	fputc('\n', f);
}

static const char *qp_state(int s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS",
					     "SQD",   "SQE",  "ERR" };

	return s >= 0 && s < 7 ? names[s] : "?";
}

static void str(const struct json *j, int obj, const char *key, char *buf,
		size_t len)
{
	if (!show_str(j, json_get(j, obj, key), buf, len) || !buf[0])
		snprintf(buf, len, "-");
}

static void show_qps(const struct json *j, int qps)
{
	int i, q;

	for (i = 0; (q = json_at(j, qps, i)) >= 0; i++)
		printf("    qp %lld (device qp %lld) %s -> %lld%s\n",
		       json_int(j, json_get(j, q, "qpn"), 0, QPN, 0),
		       json_int(j, json_get(j, q, "phys"), 0, QPN, 0),
		       qp_state(json_int(j, json_get(j, q, "state"), 0, 6, -1)),
		       json_int(j, json_get(j, q, "dest_qpn"), 0, QPN, 0),
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
		int pid = json_int(j, json_get(j, p, "pid"), 0, INT_MAX, 0);
		unsigned int uid =
			json_int(j, json_get(j, p, "uid"), 0, U32, 0);
		int s = json_get(j, p, "status");

		str(j, p, "comm", comm, sizeof(comm));
		ctxs = json_get(j, s, "contexts");
		if (ctxs < 0) {
			str(j, p, "error", err, sizeof(err));
			printf("%-8d %-6u %-16s %s\n", pid, uid, comm, err);
			continue;
		}
		if (json_at(j, ctxs, 0) < 0)
			printf("%-8d %-6u %-16s (no open migr device)\n", pid,
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
				n = json_int(j, json_get(j, q, "state"), 0, 6,
					     -1);
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
			printf("%-8d %-6u %-16s %-12s %-8s %-8lld %-4u %s\n",
			       pid, uid, comm, dev, lower,
			       json_int(j, json_get(j, c, "switches"), 0, U32,
					0),
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
		show_str(j, k, key, sizeof(key));
		printf("  %-16s %10.3f\n", phase_label(key),
		       json_num(j, k + 1, 0));
	}
	printf("  %-16s %10.3f\n", "total",
	       json_num(j, json_get(j, c, "total_ms"), 0));
	printf("  rebuilt: %u PDs, %u DMs, %u MRs, %u MWs, %u channels, %u CQs, %u SRQs, %u QPs, %u AHs\n",
	       (unsigned int)json_int(j, json_get(j, o, "pds"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "dms"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "mrs"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "mws"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "channels"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "cqs"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "srqs"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "qps"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, o, "ahs"), 0, U32, 0));
	printf("  partners followed: %u QPs in other processes (busy partners waited out %u times)\n",
	       (unsigned int)json_int(j, json_get(j, c, "partners"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, c, "retries"), 0, U32, 0));
	printf("  held WRs %u, replayed WRs %u (partners %u), reposted receives %u (flushed %u), shadowed completions %u, lost %u\n",
	       (unsigned int)json_int(j, json_get(j, c, "held_wrs"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, c, "replayed_wrs"), 0, U32,
				      0),
	       (unsigned int)json_int(j, json_get(j, c, "partner_replayed_wrs"),
				      0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, c, "reposted_recvs"), 0,
				      U32, 0),
	       (unsigned int)json_int(j, json_get(j, c, "flushed"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, c, "shadowed"), 0, U32, 0),
	       (unsigned int)json_int(j, json_get(j, c, "lost"), 0, U32, 0));
}

void show_switch(const struct json *j)
{
	int reply = json_get(j, 0, "reply"), sw = json_get(j, reply, "switch");
	int i, c;

	printf("pid %d\n",
	       (int)json_int(j, json_get(j, 0, "pid"), 0, INT_MAX, 0));
	for (i = 0; (c = json_at(j, sw, i)) >= 0; i++)
		show_ctx(j, c);
}

void show_qpn_owner(const struct json *j, const char *host)
{
	char dev[64], comm[64], kern[64];
	int pid = json_int(j, json_get(j, 0, "pid"), 0, INT_MAX, 0);

	str(j, 0, "ibdev", dev, sizeof(dev));
	printf("%s%s%s qp %lld: ", host ? host : "", host ? ": " : "", dev,
	       json_int(j, json_get(j, 0, "qpn"), 0, QPN, 0));
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
	       (int)json_int(j, json_get(j, p, "version"), 0, INT_MAX, 0), peer,
	       json_num(j, json_get(j, 0, "rtt_ms"), 0));
}

/*
 * Whether a switch reply says the process moved: migrd's "ok", and "ok":true
 * in each entry of the process's own "switch" array (one at least). If
 * not, err says why, printable.
 */
bool show_switch_moved(const struct json *j, char *err, size_t len)
{
	int sw = json_get(j, json_get(j, 0, "reply"), "switch"), i, c;
	char dev[64], why[256];

	if (!json_bool(j, json_get(j, 0, "ok"), false)) {
		if (!show_str(j, json_get(j, 0, "error"), err, len) || !err[0])
			snprintf(err, len, "switch failed");
		return false;
	}
	if (json_at(j, sw, 0) < 0) {
		snprintf(err, len, "the reply names no device that switched");
		return false;
	}
	for (i = 0; (c = json_at(j, sw, i)) >= 0; i++) {
		if (json_bool(j, json_get(j, c, "ok"), false))
			continue;
		str(j, c, "device", dev, sizeof(dev));
		str(j, c, "error", why, sizeof(why));
		snprintf(err, len, "%s did not switch: %s", dev, why);
		return false;
	}
	return true;
}
