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

bool show_str(const json_t *obj, const char *key, char *buf, size_t len)
{
	if (!migr_json_text(obj, key, buf, len))
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

static void str(const json_t *obj, const char *key, char *buf, size_t len)
{
	if (!show_str(obj, key, buf, len) || !buf[0])
		snprintf(buf, len, "-");
}

static void show_qps(const json_t *qps)
{
	const json_t *q;
	size_t i;

	json_array_foreach (qps, i, q)
		printf("    qp %lld (device qp %lld) %s -> %lld%s\n",
		       migr_json_int(q, "qpn", 0, QPN, 0),
		       migr_json_int(q, "phys", 0, QPN, 0),
		       qp_state(migr_json_int(q, "state", 0, 6, -1)),
		       migr_json_int(q, "dest_qpn", 0, QPN, 0),
		       migr_json_true(q, "self") ? " (in this process)" : "");
}

/*
 * A context's STATE column: its QPs counted by state, what blocks a
 * switch, and after a move whose numbers it uses
 */
static void context_state(const json_t *c, char *state, size_t len)
{
	const json_t *qps = json_object_get(c, "qps"), *q;
	char blocker[128];
	unsigned int st[7];
	size_t qi;
	int n;

	str(c, "blocker", blocker, sizeof(blocker));
	memset(st, 0, sizeof(st));
	json_array_foreach (qps, qi, q) {
		n = migr_json_int(q, "state", 0, 6, -1);
		if (n >= 0 && n < 7)
			st[n]++;
	}
	for (n = 0; n < 7; n++)
		if (st[n])
			snprintf(state + strlen(state), len - strlen(state),
				 "%s%u %s", state[0] ? ", " : "", st[n],
				 qp_state(n));
	if (strcmp(blocker, "-"))
		snprintf(state + strlen(state), len - strlen(state),
			 "%scannot switch: %s", state[0] ? "; " : "", blocker);
	/* after a move: its own numbers, or translated ones */
	if (migr_json_int(c, "switches", 0, U32, 0))
		snprintf(state + strlen(state), len - strlen(state),
			 "%snumbers %s", state[0] ? "; " : "",
			 json_is_true(json_object_get(c, "translating")) ?
				 "translated" :
				 "its own");
}

/* One line per context of process pid (uid, comm), its QPs with detail */
static void show_contexts(const json_t *ctxs, int pid, unsigned int uid,
			  const char *comm, int detail)
{
	char dev[64], lower[64];
	const json_t *c;
	size_t k;

	if (!json_array_size(ctxs))
		printf("%-8d %-6u %-16s (no open migr device)\n", pid, uid,
		       comm);
	json_array_foreach (ctxs, k, c) {
		const json_t *qps = json_object_get(c, "qps");
		char state[256] = "";

		str(c, "device", dev, sizeof(dev));
		str(c, "lower", lower, sizeof(lower));
		context_state(c, state, sizeof(state));
		printf("%-8d %-6u %-16s %-12s %-8s %-8lld %-4u %s\n", pid, uid,
		       comm, dev, lower,
		       migr_json_int(c, "switches", 0, U32, 0),
		       (unsigned int)json_array_size(qps),
		       state[0] ? state : "-");
		if (detail)
			show_qps(qps);
	}
}

void show_status(const json_t *j, int detail)
{
	const json_t *procs = json_object_get(j, "processes"), *p, *ctxs;
	char comm[64], err[256];
	size_t i;

	if (!json_array_size(procs)) {
		printf("no migr processes\n");
		return;
	}
	printf("%-8s %-6s %-16s %-12s %-8s %-8s %-4s %s\n", "PID", "UID",
	       "COMM", "DEVICE", "LOWER", "SWITCHES", "QPS", "STATE");
	json_array_foreach (procs, i, p) {
		int pid = migr_json_int(p, "pid", 0, INT_MAX, 0);
		unsigned int uid = migr_json_int(p, "uid", 0, U32, 0);

		str(p, "comm", comm, sizeof(comm));
		ctxs = json_object_get(json_object_get(p, "status"),
				       "contexts");
		if (!ctxs) {
			str(p, "error", err, sizeof(err));
			printf("%-8d %-6u %-16s %s\n", pid, uid, comm, err);
			continue;
		}
		show_contexts(ctxs, pid, uid, comm, detail);
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

/* A count of a switch report: 32 bits, or 0 */
static unsigned int count(const json_t *obj, const char *key)
{
	return migr_json_int(obj, key, 0, U32, 0);
}

/* Rebuilt objects on the numbers they had (migr_rxe(7)), or translated */
static void show_numbers(const json_t *n)
{
	unsigned int kept = count(n, "kept"), tr = count(n, "translated");

	if (kept + tr)
		printf("  numbers: %u objects kept theirs, %u translated\n",
		       kept, tr);
}

static void show_ctx(const json_t *c)
{
	char dev[64], from[64], to[64], err[256], key[32];
	json_t *ph = json_object_get(c, "phases_ms"), *v;
	const json_t *o = json_object_get(c, "objects");
	bool ok = migr_json_true(c, "ok");
	const char *k;

	str(c, "device", dev, sizeof(dev));
	str(c, "from", from, sizeof(from));
	str(c, "to", to, sizeof(to));
	printf("%s: %s -> %s: %s", dev, from, to, ok ? "ok" : "FAILED");
	if (!ok) {
		str(c, "error", err, sizeof(err));
		printf(" (%s%s)", err,
		       migr_json_true(c, "rolled_back") ? ", rolled back" : "");
	}
	printf("\n  %-16s %10s\n", "phase", "ms");
	json_object_foreach (ph, k, v) {
		migr_json_ascii(k, key, sizeof(key));
		show_clean(key);
		printf("  %-16s %10.3f\n", phase_label(key),
		       json_number_value(v));
	}
	printf("  %-16s %10.3f\n", "total", migr_json_num(c, "total_ms", 0));
	printf("  rebuilt: %u PDs, %u DMs, %u MRs, %u MWs, %u channels, %u CQs, %u SRQs, %u QPs, %u AHs\n",
	       count(o, "pds"), count(o, "dms"), count(o, "mrs"),
	       count(o, "mws"), count(o, "channels"), count(o, "cqs"),
	       count(o, "srqs"), count(o, "qps"), count(o, "ahs"));
	printf("  partners followed: %u QPs in other processes, %u on their own numbers (busy partners waited out %u times)\n",
	       count(c, "partners"), count(c, "partners_kept"),
	       count(c, "retries"));
	show_numbers(json_object_get(c, "numbers"));
	printf("  held WRs %u, replayed WRs %u (partners %u), reposted receives %u (flushed %u), shadowed completions %u, lost %u\n",
	       count(c, "held_wrs"), count(c, "replayed_wrs"),
	       count(c, "partner_replayed_wrs"), count(c, "reposted_recvs"),
	       count(c, "flushed"), count(c, "shadowed"), count(c, "lost"));
}

void show_switch(const json_t *j)
{
	const json_t *sw = json_object_get(json_object_get(j, "reply"),
					   "switch"),
		     *c;
	size_t i;

	printf("pid %d\n", (int)migr_json_int(j, "pid", 0, INT_MAX, 0));
	json_array_foreach (sw, i, c)
		show_ctx(c);
}

void show_qpn_owner(const json_t *j, const char *host)
{
	char dev[64], comm[64], kern[64];
	int pid = migr_json_int(j, "pid", 0, INT_MAX, 0);
	bool migr = migr_json_true(j, "migr");

	str(j, "ibdev", dev, sizeof(dev));
	printf("%s%s%s qp %lld: ", host ? host : "", host ? ": " : "", dev,
	       migr_json_int(j, "qpn", 0, QPN, 0));
	if (!pid) {
		str(j, "kernel", kern, sizeof(kern));
		printf("kernel (%s)\n", kern);
		return;
	}
	str(j, "comm", comm, sizeof(comm));
	printf("pid %d%s%s%s\n", pid, migr ? " (migr, " : "", migr ? comm : "",
	       migr ? ")" : "");
}

void show_peer_ping(const json_t *j)
{
	const json_t *p = json_object_get(j, "peer");
	char host[256], peer[256];

	str(j, "host", host, sizeof(host));
	str(p, "host", peer, sizeof(peer));
	printf("%s: migrd %d on %s authenticated, %.3f ms\n", host,
	       (int)migr_json_int(p, "version", 0, INT_MAX, 0), peer,
	       migr_json_num(j, "rtt_ms", 0));
}

/*
 * Whether a switch reply says the process moved: migrd's "ok", and "ok":true
 * in each entry of the process's own "switch" array (one at least). If
 * not, err says why, printable.
 */
bool show_switch_moved(const json_t *j, char *err, size_t len)
{
	const json_t *sw = json_object_get(json_object_get(j, "reply"),
					   "switch"),
		     *c;
	char dev[64], why[256];
	size_t i;

	if (!migr_json_true(j, "ok")) {
		if (!show_str(j, "error", err, len) || !err[0])
			snprintf(err, len, "switch failed");
		return false;
	}
	if (!json_array_size(sw)) {
		snprintf(err, len, "the reply names no device that switched");
		return false;
	}
	json_array_foreach (sw, i, c) {
		if (migr_json_true(c, "ok"))
			continue;
		str(c, "device", dev, sizeof(dev));
		str(c, "error", why, sizeof(why));
		snprintf(err, len, "%s did not switch: %s", dev, why);
		return false;
	}
	return true;
}

/* A migration's phases, as the paper's Fig. 3 names them */
void show_migrate(const json_t *j)
{
	static const struct {
		const char *key, *name;
	} ph[] = {
		{ "check", "check (both hosts)" },
		{ "precopy", "pre-copy (criu pre-dump, sent)" },
		{ "park", "DumpRDMA: park (drain, release)" },
		{ "dump", "DumpOthers: criu dump" },
		{ "transfer", "Transfer: images to the destination" },
		{ "restore", "FullRestore: criu restore" },
		{ "rebuild", "RestoreRDMA: rebuild, replay" },
		{ "partner_reconnect", "partners reconnect" },
	};
	const json_t *phases = json_object_get(j, "phases_ms");
	char to[256], dev[64], from[64];
	int partners;
	size_t i;

	str(j, "to", to, sizeof(to));
	str(j, "device", dev, sizeof(dev));
	str(j, "from", from, sizeof(from));
	printf("pid %d moved from %s here to %s on %s\n",
	       (int)migr_json_int(j, "pid", 0, INT_MAX, 0), from, dev, to);
	for (i = 0; i < sizeof(ph) / sizeof(ph[0]); i++)
		printf("  %-40s %10.1f ms\n", ph[i].name,
		       migr_json_num(phases, ph[i].key, 0));
	printf("  %-40s %10.1f ms\n", "blackout (park to resumed there)",
	       migr_json_num(j, "blackout_ms", 0));
	/* in int's range: a double cast past it is undefined */
	partners = migr_json_int(j, "partners", 0, INT_MAX, 0);
	if (partners > 0)
		printf("  %-40s %10.1f ms (%d QPs)\n",
		       "blackout seen from the partners",
		       migr_json_num(j, "partner_blackout_ms", 0), partners);
	printf("  %-40s %10.1f ms\n", "total", migr_json_num(j, "total_ms", 0));
	show_numbers(json_object_get(j, "numbers"));
	printf("  pre-copy rounds %zu, %.1f MiB; final images %.1f MiB\n",
	       json_array_size(json_object_get(j, "rounds")),
	       migr_json_num(j, "precopy_bytes", 0) / 1048576.0,
	       migr_json_num(j, "final_bytes", 0) / 1048576.0);
}
