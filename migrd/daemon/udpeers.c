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
 * refused: the mover cannot know that process was not its peer. One that
 * did not answer and holds no UD QP, by the kernel, could not be: it is
 * listed as "skipped" instead.
 *
 * LINE is "probe" (which UD QPs are there) or "moved FROMGID TOGID
 * FROM:TO:KNOWN,..." (the mover's UD QPs FROM on FROMGID are now TO on
 * TOGID; KNOWN, the number its application knows, is the processes').
 * A process that is not root may only say that QPs it owns moved: each TO
 * on TOGID must be its own, by the kernel's resource tracking, so it can
 * point other processes' datagrams at nothing but itself; and each FROM
 * must be a QP the kernel said it owned when it probed (or one it moved to
 * since), with the KNOWN number recorded for it then, and that no other
 * process holds now, so it cannot take over the datagrams other processes
 * send to someone else's QP.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holder.h"
#include "locate.h"
#include "log.h"
#include "migr_json.h"
#include "migrd.h"
#include "peer.h"
#include "qpowner.h"
#include "registry.h"
#include "reply.h"
#include "sockio.h"
#include "ud_holds.h"

#define UDPEERS_TIMEOUT_MS 10000 /* all processes, at once */
#define UDPEERS_PROC_MS 5000 /* one process applies a few AHs */
#define UDPEERS_REPLY_MAX (64 << 10) /* one process's */
#define UDPEERS_REPLIES_MAX (4 << 20) /* all, held at once */
#define UDPEERS_PEER_TIMEOUT_MS 30000 /* every process there, and the hop */

/* Did the process's reply say "ok":true? Its "error" into err if not */
static bool reply_ok(const char *reply, char *err, size_t errlen)
{
	json_t *j = migr_json_parse(reply, strlen(reply));
	bool ok = migr_json_true(j, "ok");

	err[0] = 0;
	if (!ok)
		migr_json_text(j, "error", err, errlen);
	json_decref(j);
	if (!ok && !err[0])
		snprintf(err, errlen, "refused without a reason");
	return ok;
}

/*
 * v's reply (or error) into procs, one object; the first error, naming
 * the process (comm), into first
 */
static void add_proc(const struct req *r, struct proc_ask *v, const char *comm,
		     bool more, struct sbuf *procs, char *first,
		     size_t first_len)
{
	char err[256];

	sb_printf(procs, "%s{\"pid\":%d,", more ? "," : "", v->pid);
	if (!v->rc && procs->len + strlen(v->reply) > UDPEERS_REPLIES_MAX) {
		v->rc = -1;
		snprintf(v->err, sizeof(v->err),
			 "pid %d: its reply does not fit", v->pid);
	}
	if (v->rc) {
		snprintf(err, sizeof(err), "%s", v->err);
		sb_add(procs, "\"error\":", 8);
		sb_json_str(procs, err);
	} else {
		sb_printf(procs, "\"reply\":%s", v->reply);
		if (reply_ok(v->reply, err, sizeof(err)))
			err[0] = 0;
	}
	sb_add(procs, "}", 1);
	if (err[0] && !first[0])
		snprintf(first, first_len, "pid %d (%s): %s", v->pid, comm,
			 err);
	log_dbg("udpeers %.16s: pid %d: %s", r->line, v->pid,
		err[0] ? err : "ok");
}

/*
 * v did not answer: if the kernel says it holds no UD QP it cannot be the
 * mover's peer (one silent process must not fail every fan-out), so it is
 * skipped, and said so in procs: true. One that holds a UD QP, or that
 * the kernel cannot tell about, fails it still.
 */
static bool silent_skipped(const struct req *r, const struct proc_ask *v,
			   const char *comm, bool more, struct sbuf *procs)
{
	char e[256];

	if (!v->rc || ud_holds(v->pid, e, sizeof(e)))
		return false;
	log_info(
		"udpeers %.16s: pid %d (%s) did not answer (%s) but holds no UD QP: skipped",
		r->line, v->pid, comm, v->err);
	sb_printf(procs, "%s{\"pid\":%d,\"skipped\":", more ? "," : "", v->pid);
	sb_json_str(procs, "did not answer; holds no UD QP");
	sb_add(procs, "}", 1);
	return true;
}

/*
 * LINE to every migr process of this host but asker, all at once and all
 * within UDPEERS_TIMEOUT_MS, their replies within UDPEERS_REPLIES_MAX
 */
static void to_all(const struct req *r, int asker, struct sbuf *out)
{
	struct proc_info *all = calloc(REG_MAX, sizeof(*all));
	struct proc_ask *v = calloc(REG_MAX, sizeof(*v));
	char line[REQ_PARTNER_LINE_MAX + 8], first[320] = "";
	struct sbuf procs = {};
	int n, i, k = 0;

	if (!all || !v) {
		reply_error(out, "out of memory");
		goto out;
	}
	ctl_format(
		&(struct ctl_req){ .op = CTL_UD, .nargs = 1, .line = r->line },
		line, sizeof(line));
	n = registry_list(all, REG_MAX);
	/* all[] keeps the processes asked, in v[]'s order (their comm) */
	for (i = 0; i < n; i++)
		if (all[i].pid != asker) {
			all[k] = all[i];
			v[k++].pid = all[i].pid;
		}
	proc_ask_all(v, k, line, UDPEERS_PROC_MS,
		     io_now_ms() + UDPEERS_TIMEOUT_MS, UDPEERS_REPLY_MAX);
	for (i = 0; i < k; i++)
		if (!silent_skipped(r, &v[i], all[i].comm, i, &procs))
			add_proc(r, &v[i], all[i].comm, i, &procs, first,
				 sizeof(first));
	sb_printf(out, "{\"v\":%d,\"ok\":%s", REQ_VERSION,
		  first[0] ? "false" : "true");
	if (first[0]) {
		sb_add(out, ",\"error\":", 9);
		sb_json_str(out, first);
	}
	sb_printf(out, ",\"procs\":[%s]}", procs.p ? procs.p : "");
out:
	sb_free(&procs);
	for (i = 0; v && i < k; i++)
		free(v[i].reply);
	free(v);
	free(all);
}

/*
 * What a mover held when it probed: every QP the kernel said was its, where
 * (a device, or a GID for a QP it moved to), and the number its peers know
 * it by (its own number, unless a move this migrd accepted said otherwise)
 */
#define REC_ASKERS 64
#define REC_QPS 512
#define REC_LIST_MAX 16384 /* QPs of one device, every process's */
#define PLACE_MAX 64

struct rec_qp {
	char place[PLACE_MAX]; /* a device name, or 32 hex digits: a GID */
	uint32_t qpn, known;
};

struct rec {
	int pid;
	unsigned long long start;
	long long used;
	int n;
	struct rec_qp q[REC_QPS];
};

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec *recs[REC_ASKERS];
static long long rec_clock;

/* The asker's record, or a fresh one in the least used slot (rec_lock) */
static struct rec *rec_of(int pid, unsigned long long start, bool create)
{
	int i, lru = 0;

	for (i = 0; i < REC_ASKERS; i++) {
		if (recs[i] && recs[i]->pid == pid && recs[i]->start == start) {
			recs[i]->used = ++rec_clock;
			return recs[i];
		}
		if (!recs[i] || (recs[lru] && recs[i]->used < recs[lru]->used))
			lru = i;
	}
	if (!create)
		return NULL;
	if (!recs[lru])
		recs[lru] = calloc(1, sizeof(*recs[lru]));
	if (recs[lru]) {
		memset(recs[lru], 0, sizeof(*recs[lru]));
		recs[lru]->pid = pid;
		recs[lru]->start = start;
		recs[lru]->used = ++rec_clock;
	}
	return recs[lru];
}

static bool place_has_gid(const char *place, const char *gid)
{
	char devs[LOCATE_DEV_MAX][LOCATE_NAME_MAX];
	int n, i;

	if (strlen(place) == REQ_GID_LEN)
		return !strcmp(place, gid);
	n = gid_devices(LOCATE_SYSFS, gid, devs, LOCATE_DEV_MAX);
	for (i = 0; i < n; i++)
		if (!strcmp(devs[i], place))
			return true;
	return false;
}

static void rec_add(struct rec *r, const struct rec *old, const char *place,
		    uint32_t qpn)
{
	struct rec_qp *q;
	int i;

	if (r->n == REC_QPS)
		return;
	q = &r->q[r->n++];
	snprintf(q->place, sizeof(q->place), "%s", place);
	q->qpn = q->known = qpn;
	/* a QP it moved to is known by the number it announced for it */
	for (i = 0; old && i < old->n; i++)
		if (old->q[i].qpn == qpn &&
		    strlen(old->q[i].place) == REQ_GID_LEN &&
		    place_has_gid(place, old->q[i].place))
			q->known = old->q[i].known;
}

/* The test table's QPs of tgid (--test-qp-owners) recorded in r */
static void rec_from_table(int tgid, struct rec *r, const struct rec *slot)
{
	char line[128], hex[REQ_GID_LEN + 2];
	unsigned long q;
	int pid;
	FILE *f;

	f = fopen(migrd.test_qp_owners, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%33s %lu %d", hex, &q, &pid) == 3 &&
		    strlen(hex) == REQ_GID_LEN && q <= 0xffffff && pid > 0 &&
		    proc_tgid(pid) == tgid)
			rec_add(r, slot, hex, q);
	if (f)
		fclose(f);
}

/*
 * The QPs of tgid on every device of this host, as the kernel lists them,
 * recorded in r: true if a device's could not be listed (err says why)
 */
static bool rec_from_devices(int tgid, struct rec *r, const struct rec *slot,
			     struct qp_holder *list, char *err, size_t errlen)
{
	bool unlisted = false;
	struct dirent *d;
	char e[256];
	int n, i;
	DIR *dir;

	dir = opendir(LOCATE_SYSFS);
	if (!dir)
		return false;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' || strlen(d->d_name) >= PLACE_MAX)
			continue;
		n = qpn_list(d->d_name, list, REC_LIST_MAX, e, sizeof(e));
		/* its moves would be refused: the log says why */
		if (n < 0 && !unlisted)
			snprintf(err, errlen, "%s", e);
		unlisted |= n < 0;
		for (i = 0; i < n; i++)
			if (list[i].pid > 0 && proc_tgid(list[i].pid) == tgid)
				rec_add(r, slot, d->d_name, list[i].qpn);
	}
	closedir(dir);
	return unlisted;
}

/*
 * At a probe: what the kernel says the asker (tgid) holds, on every device
 * of this host (the test table: on every GID it names). 0, or -1 with err
 * (a device whose QPs could not be listed: the rest is recorded).
 */
static int rec_probe(int tgid, char *err, size_t errlen)
{
	struct qp_holder *list = calloc(REC_LIST_MAX, sizeof(*list));
	struct rec *r = calloc(1, sizeof(*r)), *slot;
	unsigned long long start;
	bool unlisted = false;
	int ret = -1;

	if (!list || !r || proc_start(tgid, &start)) {
		snprintf(err, errlen, "cannot record the asking process");
		goto out;
	}
	r->pid = tgid;
	r->start = start;
	pthread_mutex_lock(&rec_lock);
	slot = rec_of(tgid, start, false);
	if (migrd.test_qp_owners)
		rec_from_table(tgid, r, slot);
	else
		unlisted = rec_from_devices(tgid, r, slot, list, err, errlen);
	slot = rec_of(tgid, start, true);
	if (slot) {
		memcpy(slot, r, sizeof(*r));
		slot->used = ++rec_clock;
		ret = unlisted ? -1 : 0;
	} else {
		snprintf(err, errlen, "out of memory");
	}
	pthread_mutex_unlock(&rec_lock);
out:
	free(list);
	free(r);
	return ret;
}

/*
 * Was QP from on fromgid the asker's when it probed, known as known? If
 * so, and to_gid is given, its new place (to on to_gid) is recorded too.
 */
static bool rec_check(int tgid, const char *fromgid, uint32_t from,
		      uint32_t known, const char *togid, uint32_t to)
{
	unsigned long long start;
	struct rec *r;
	bool found = false;
	int i;

	if (proc_start(tgid, &start))
		return false;
	pthread_mutex_lock(&rec_lock);
	r = rec_of(tgid, start, false);
	for (i = 0; r && i < r->n && !found; i++)
		found = r->q[i].qpn == from && r->q[i].known == known &&
			place_has_gid(r->q[i].place, fromgid);
	if (found && togid && r->n < REC_QPS) {
		snprintf(r->q[r->n].place, PLACE_MAX, "%s", togid);
		r->q[r->n].qpn = to;
		r->q[r->n].known = known;
		r->n++;
	}
	pthread_mutex_unlock(&rec_lock);
	return found;
}

/* QP from on fromgid is not the asker's any more: forget it */
static void rec_drop(int tgid, const char *fromgid, uint32_t from)
{
	unsigned long long start;
	struct rec *r;
	int i;

	if (proc_start(tgid, &start))
		return;
	pthread_mutex_lock(&rec_lock);
	r = rec_of(tgid, start, false);
	for (i = 0; r && i < r->n; i++)
		if (r->q[i].qpn == from &&
		    place_has_gid(r->q[i].place, fromgid))
			r->q[i--] = r->q[--r->n];
	pthread_mutex_unlock(&rec_lock);
}

/*
 * The record is what the asker held when it probed; the kernel says what
 * its FROM is now. Released (a move destroys the QPs it leaves) or still
 * its own (a rollback's announcement): 0. Another process's now (the
 * device gave the number out again): its datagrams must not be taken
 * over, the record is dropped, -1 with err; -1 too if the kernel cannot
 * say.
 */
static int from_still_free(int tgid, const char *from, uint32_t a, char *err,
			   size_t errlen)
{
	char kern[64], e[256];
	int pid, rc;

	rc = kernel_holder(from, a, &pid, kern, sizeof(kern), e, sizeof(e));
	if (rc > 0 || (!rc && pid == tgid))
		return 0;
	if (rc < 0) {
		snprintf(err, errlen,
			 "cannot tell who owns QP 0x%x with GID %s: %s", a,
			 from, e);
		return -1;
	}
	rec_drop(tgid, from, a);
	snprintf(
		err, errlen,
		"permission denied: QP 0x%x with GID %s, which pid %d held when it probed, is another process's now",
		a, from, tgid);
	return -1;
}

/* One hex number up to 24 bits at *p, ended by one of ends */
static bool hex24(const char **p, const char *ends, uint32_t *v)
{
	unsigned long x;
	char *end;

	if (!isxdigit((unsigned char)**p))
		return false;
	x = strtoul(*p, &end, 16);
	if (x > 0xffffff || !strchr(ends, *end))
		return false;
	*v = x;
	*p = *end ? end + 1 : end;
	return true;
}

static bool valid_gid(const char *gid)
{
	return strlen(gid) == REQ_GID_LEN &&
	       strspn(gid, "0123456789abcdef") == REQ_GID_LEN;
}

/*
 * "moved FROMGID TOGID FROM:TO:KNOWN,...": was every FROM on FROMGID the
 * asker's when it probed, known as KNOWN, and is every TO on TOGID its
 * own now? Then the TOs are recorded as its (known as the same). 0, or -1
 * with err.
 */
static int asker_owns_targets(const struct req *r, int tgid, char *err,
			      size_t errlen)
{
	char from[REQ_GID_LEN + 1], to[REQ_GID_LEN + 1], e[256];
	const char *p, *list;
	uint32_t a, b, k;
	int used = 0, pass;

	if (strncmp(r->line, "moved ", 6))
		return 0;
	if (sscanf(r->line, "moved %32s %32s %n", from, to, &used) != 2 ||
	    !used || !valid_gid(from) || !valid_gid(to)) {
		snprintf(err, errlen, "udpeers moved line is invalid");
		return -1;
	}
	list = r->line + used;
	/* every entry checked first; recorded only if all pass */
	for (pass = 0; pass < 2; pass++)
		for (p = list; *p;) {
			if (!hex24(&p, ":", &a) || !hex24(&p, ":", &b) ||
			    !hex24(&p, ",", &k)) {
				snprintf(err, errlen,
					 "udpeers moved line is invalid");
				return -1;
			}
			if (pass) {
				rec_check(tgid, from, a, k, to, b);
				continue;
			}
			if (!rec_check(tgid, from, a, k, NULL, 0)) {
				snprintf(
					err, errlen,
					"permission denied: QP 0x%x with GID %s, known as 0x%x, was not pid %d's when it probed its UD peers",
					a, from, k, tgid);
				return -1;
			}
			if (from_still_free(tgid, from, a, err, errlen))
				return -1;
			switch (asker_owns(tgid, to, b, e, sizeof(e))) {
			case 1:
				continue;
			case 0:
				snprintf(
					err, errlen,
					"permission denied: QP 0x%x with GID %s, which UD peers would be sent to, is not pid %d's (%s)",
					b, to, tgid, e);
				return -1;
			default:
				snprintf(
					err, errlen,
					"cannot tell who owns QP 0x%x with GID %s: %s",
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
		reply_error(
			out,
			c->peer ?
				"request not allowed from a peer" :
				"permission denied: udpeers requests come from migr processes");
		return;
	}
	/* A probe records what the asker holds: its moves must be of those */
	if (!c->peer && asker && !strcmp(r->line, "probe") &&
	    rec_probe(asker, err, sizeof(err)))
		log_warn("udpeers probe from pid %d: %s", asker, err);
	if (!c->peer && c->uid != 0 &&
	    asker_owns_targets(r, asker, err, sizeof(err))) {
		log_info("udpeers from pid %d: %s", asker, err);
		reply_error(out, err);
		return;
	}
	if (!remote) {
		to_all(r, asker, out);
		return;
	}
	fwd = *r;
	fwd.host[0] = 0;
	if (req_format(&fwd, line, sizeof(line)) < 0) {
		reply_error(out, "udpeers request too long to relay");
		return;
	}
	if (peer_call(r->host, line, UDPEERS_PEER_TIMEOUT_MS, out, err,
		      sizeof(err))) {
		log_info("udpeers to %s: %s", r->host, err);
		reply_error(out, err);
	}
}
