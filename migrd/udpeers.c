// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The UD relay (req.h): a UD QP has no partner to ask, so a migr process
 * that moves UD QPs talks to every migr process of the hosts its address
 * handles name. "udpeers HOST LINE" hands LINE to each migr process here
 * but the asker (HOST "-"), or has HOST's migrd do so, and answers with
 * every process's reply:
 *
 *   {"v":1,"ok":true,"procs":[{"pid":P,"reply":{...}},...]}
 *
 * "ok" is false, with the first "error", when a process did not answer or
 * refused: the mover cannot know that process was not its peer.
 *
 * LINE is "probe" (which UD QPs are there) or "moved FROMGID TOGID
 * FROM:TO:KNOWN,..." (the mover's UD QPs FROM on FROMGID are now TO on
 * TOGID; KNOWN, the number its application knows, is the processes').
 * A process that is not root may only say that QPs it owns moved: each TO
 * on TOGID must be its own, by the kernel's resource tracking, so it can
 * point other processes' datagrams at nothing but itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "locate.h"
#include "log.h"
#include "migrd.h"
#include "registry.h"

#define UDPEERS_TIMEOUT_MS 10000 /* a process applies a few AHs */
#define UDPEERS_PEER_TIMEOUT_MS 30000 /* every process there, and the hop */

/* Did the process's reply say "ok":true? Its "error" into err if not */
static bool reply_ok(const char *reply, char *err, size_t errlen)
{
	size_t len = strlen(reply);
	int cap = len / 2 + 16;
	struct json_tok *t = calloc(cap, sizeof(*t));
	struct json j;
	bool ok = false;

	err[0] = 0;
	if (t && !json_parse(&j, reply, len, t, cap)) {
		ok = json_bool(&j, json_get(&j, 0, "ok"), false);
		if (!ok)
			json_str(&j, json_get(&j, 0, "error"), err, errlen);
	}
	free(t);
	if (!ok && !err[0])
		snprintf(err, errlen, "refused without a reason");
	return ok;
}

/* LINE to every migr process of this host but asker */
static void to_all(const struct req *r, int asker, struct sbuf *out)
{
	struct proc_info *all = calloc(REG_MAX, sizeof(*all));
	char line[REQ_PARTNER_LINE_MAX + 8], err[256], first[320] = "";
	struct sbuf procs = {};
	int n, i, k = 0;

	if (!all) {
		ops_error(out, "out of memory");
		return;
	}
	snprintf(line, sizeof(line), "ud %s\n", r->line);
	n = registry_list(all, REG_MAX);
	for (i = 0; i < n; i++) {
		char *reply = NULL;

		if (all[i].pid == asker)
			continue;
		sb_printf(&procs, "%s{\"pid\":%d,", k++ ? "," : "", all[i].pid);
		if (proc_request(all[i].pid, line, UDPEERS_TIMEOUT_MS, &reply,
				 err, sizeof(err))) {
			sb_add(&procs, "\"error\":", 8);
			sb_json_str(&procs, err);
		} else {
			sb_printf(&procs, "\"reply\":%s", reply);
			if (reply_ok(reply, err, sizeof(err)))
				err[0] = 0;
		}
		sb_add(&procs, "}", 1);
		if (err[0] && !first[0])
			snprintf(first, sizeof(first), "pid %d (%s): %s",
				 all[i].pid, all[i].comm, err);
		log_dbg("udpeers %.16s: pid %d: %s", r->line, all[i].pid,
			err[0] ? err : "ok");
		free(reply);
	}
	sb_printf(out, "{\"v\":%d,\"ok\":%s", REQ_VERSION,
		  first[0] ? "false" : "true");
	if (first[0]) {
		sb_add(out, ",\"error\":", 9);
		sb_json_str(out, first);
	}
	sb_printf(out, ",\"procs\":[%s]}", procs.p ? procs.p : "");
	sb_free(&procs);
	free(all);
}

/*
 * "moved FROMGID TOGID FROM:TO:KNOWN,...": is every TO on TOGID the asker's?
 * 0, or -1 with err
 */
static int asker_owns_targets(const struct req *r, int tgid, char *err,
			      size_t errlen)
{
	char from[REQ_GID_LEN + 1], to[REQ_GID_LEN + 1], e[256];
	const char *p;
	int used = 0;

	if (strncmp(r->line, "moved ", 6))
		return 0;
	if (sscanf(r->line, "moved %32s %32s %n", from, to, &used) != 2 ||
	    !used || strlen(to) != REQ_GID_LEN) {
		snprintf(err, errlen, "udpeers moved line is invalid");
		return -1;
	}
	for (p = r->line + used; *p;) {
		unsigned long a, b;
		char *end;

		a = strtoul(p, &end, 16);
		if (end == p || *end != ':') {
			snprintf(err, errlen, "udpeers moved line is invalid");
			return -1;
		}
		p = end + 1;
		b = strtoul(p, &end, 16);
		/* the number the mover's application knows: not checked */
		if (*end == ':' && end != p)
			for (end++; *end && *end != ','; end++)
				;
		if (end == p || (*end && *end != ',') || a > 0xffffff ||
		    b > 0xffffff) {
			snprintf(err, errlen, "udpeers moved line is invalid");
			return -1;
		}
		p = *end ? end + 1 : end;
		switch (asker_owns(tgid, to, b, e, sizeof(e))) {
		case 1:
			continue;
		case 0:
			snprintf(
				err, errlen,
				"permission denied: QP 0x%lx with GID %s, which UD peers would be sent to, is not pid %d's",
				b, to, tgid);
			return -1;
		default:
			snprintf(
				err, errlen,
				"cannot tell who owns QP 0x%lx with GID %s: %s",
				b, to, e);
			return -1;
		}
	}
	return 0;
}

void udpeers_run(const struct req *r, const struct client *c, struct sbuf *out)
{
	bool remote = r->host[0] && !addr_is_local(r->host);
	int asker = !c->peer && c->pid > 0 ? proc_tgid(c->pid) : 0;
	char err[512], line[REQ_MAX + 1];
	struct proc_info p;
	struct req fwd;

	if (c->peer ? r->host[0] != 0 :
		      c->uid != 0 && !(asker && registry_find(asker, &p))) {
		ops_error(
			out,
			c->peer ?
				"request not allowed from a peer" :
				"permission denied: udpeers requests come from migr processes");
		return;
	}
	if (!c->peer && c->uid != 0 &&
	    asker_owns_targets(r, asker, err, sizeof(err))) {
		log_info("udpeers from pid %d: %s", asker, err);
		ops_error(out, err);
		return;
	}
	if (!remote) {
		to_all(r, asker, out);
		return;
	}
	fwd = *r;
	fwd.host[0] = 0;
	if (req_format(&fwd, line, sizeof(line)) < 0) {
		ops_error(out, "udpeers request too long to relay");
		return;
	}
	if (peer_call(r->host, line, UDPEERS_PEER_TIMEOUT_MS, out, err,
		      sizeof(err))) {
		log_info("udpeers to %s: %s", r->host, err);
		ops_error(out, err);
	}
}
