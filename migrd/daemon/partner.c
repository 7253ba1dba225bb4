// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner relay (req.h): a migr process moving its connections to
 * another device asks for the process at the other end of one of its QPs.
 * migrd finds that process on this host, or has HOST's migrd find it, and
 * hands it the line on its control socket ("partner LINE"). Who may ask
 * what is partner_asker.c's, above this file.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bindings.h"
#include "holder.h"
#include "locate.h"
#include "log.h"
#include "migr_json.h"
#include "migrd.h"
#include "partner_relay.h"
#include "peer.h"
#include "registry.h"
#include "reply.h"
#include "sockio.h"

#define PARTNER_TIMEOUT_MS 30000 /* some partner ops drain queues */
#define PARTNER_PEER_TIMEOUT_MS 35000 /* the peer's 30 s, and the hop */
/* A search for a QP that moved: all asked at once, each briefly */
#define SEARCH_MS 2500
#define SEARCH_PROC_MS 2000
/* a partner's reply: up to 64 results of about 2 KiB (a fetch's keys) */
#define SEARCH_REPLY_MAX (256 << 10)

/* What a process's reply says about itself */
struct verdict {
	bool ok, notmine;
	char error[256];
};

static void read_verdict(const char *reply, struct verdict *v)
{
	json_t *j = migr_json_parse(reply, strlen(reply));

	memset(v, 0, sizeof(*v));
	v->ok = migr_json_true(j, "ok");
	v->notmine = migr_json_true(j, "notmine");
	migr_json_text(j, "error", v->error, sizeof(v->error));
	json_decref(j);
}

/* migrd's reply: the process's verdict, its pid and its reply whole */
static void wrap(struct sbuf *out, int pid, const char *reply,
		 const struct verdict *v)
{
	char err[300];

	sb_printf(out, "{\"v\":%d,\"ok\":%s", REQ_VERSION,
		  v->ok ? "true" : "false");
	if (!v->ok) {
		if (v->error[0])
			snprintf(err, sizeof(err), "%s", v->error);
		else
			snprintf(
				err, sizeof(err),
				"pid %d refused the partner request without a reason",
				pid);
		sb_add(out, ",\"error\":", 9);
		sb_json_str(out, err);
	}
	sb_printf(out, ",\"pid\":%d,\"reply\":%s}", pid, reply);
}

void relay_refuse(const struct relay *x, struct sbuf *out, const char *err)
{
	rlog(x, "%s", err);
	reply_error(out, err);
}

/* Hand the line to process pid; 0 with its reply, or -1 with err */
static int ask(const struct relay *x, int pid, int timeout_ms, char **reply,
	       struct verdict *v, char *err, size_t errlen)
{
	char line[REQ_PARTNER_LINE_MAX + 16];

	ctl_format(&(struct ctl_req){ .op = CTL_PARTNER,
				      .nargs = 1,
				      .line = x->r->line },
		   line, sizeof(line));
	if (proc_request(pid, line, timeout_ms, reply, err, errlen))
		return -1;
	read_verdict(*reply, v);
	return 0;
}

static void answered(const struct relay *x, struct sbuf *out, int pid,
		     char *reply, const struct verdict *v)
{
	if (v->ok)
		rlog(x, "pid %d: ok (%lld ms)", pid, io_now_ms() - x->t0);
	else
		rlog(x, "pid %d: failed (%lld ms): %s", pid,
		     io_now_ms() - x->t0,
		     v->error[0] ? v->error : "no reason given");
	wrap(out, pid, reply, v);
	free(reply);
}

/*
 * The lower QP a claim to entry i must name: for prepare, faces and give,
 * the partner's QP the asker's QP is connected to; 0 for any other step (the
 * claimant's own lower QP, whatever its number).
 */
static uint32_t expected_phys(const struct pline *pl, int i)
{
	uint32_t v;

	if (!pline_names_partner(pl->step))
		return 0;
	return pline_word(pl->at[i], PLINE_PARTNER_PHYS_WORD, &v) ? 0 : v;
}

/* What the kernel says of the claims in one process's reply */
struct claims {
	int backed; /* results for a QP the kernel says the process holds */
	int forged; /* "ok":true results it does not back */
	bool whole; /* no result per QP: an answer of the process's as a whole */
	bool busy;
	bool unsure; /* why is a claim the kernel's query failed for */
	char why[512]; /* the first forged claim */
};

/*
 * Result i of pid's reply, res, is its claim only if the kernel backs it:
 * counted in c as backed, or (if it says ok) as forged, the first forged
 * one saying why in c->why.
 */
static void check_claim(const struct relay *x, int pid, const struct pline *pl,
			int i, const json_t *res, struct claims *c)
{
	char e[256], gid[REQ_GID_LEN + 2];
	bool ok = migr_json_true(res, "ok");
	double phys = migr_json_num(res, "phys", -1);
	uint32_t want = expected_phys(pl, i);
	int rc = 0;

	/*
	 * Asked at a GID it had before a switch, it names the one its
	 * QP is on now (fetch): the QP is looked for there
	 */
	if (!migr_json_text(res, "gid", gid, sizeof(gid)) ||
	    strlen(gid) != REQ_GID_LEN ||
	    strspn(gid, "0123456789abcdef") != REQ_GID_LEN)
		snprintf(gid, sizeof(gid), "%s", x->r->gid);
	if (phys >= 1 && phys <= 0xffffff && phys == (uint32_t)phys &&
	    (!want || want == (uint32_t)phys))
		rc = asker_owns(pid, gid, phys, e, sizeof(e));
	if (rc == 1) {
		c->backed++;
		return;
	}
	if (!ok || c->forged++)
		return;
	if (phys < 1 || phys > 0xffffff || phys != (uint32_t)phys)
		snprintf(
			c->why, sizeof(c->why),
			"pid %d claimed QP 0x%x on %s without naming the QP it holds",
			pid, pl->qpn[i], x->where);
	else if (want && want != (uint32_t)phys)
		snprintf(
			c->why, sizeof(c->why),
			"pid %d claimed QP 0x%x on %s as its QP 0x%x, but the asker's QP is connected to QP 0x%x",
			pid, pl->qpn[i], x->where, (uint32_t)phys, want);
	else if ((c->unsure = rc < 0)) /* no answer is no "not held" */
		snprintf(
			c->why, sizeof(c->why),
			"pid %d claimed QP 0x%x on %s as its QP 0x%x, which the kernel could not confirm: %s",
			pid, pl->qpn[i], x->where, (uint32_t)phys, e);
	else
		snprintf(
			c->why, sizeof(c->why),
			"pid %d claimed QP 0x%x on %s as its QP 0x%x, which the kernel says it does not hold (%s)",
			pid, pl->qpn[i], x->where, (uint32_t)phys, e);
	/* a claim checked at another GID than asked: say which */
	if (strcmp(gid, x->r->gid))
		snprintf(c->why + strlen(c->why),
			 sizeof(c->why) - strlen(c->why), " (with GID %s)",
			 gid);
}

/*
 * Registration is no authorization: a result counts as the process's claim
 * to a QP only if it names the lower QP it holds ("phys"), the kernel says
 * the process owns that QP on a device with the request's GID, and, for
 * prepare, faces and give, it is the very QP the asker's QP is connected to.
 */
static void check_claims(const struct relay *x, int pid, const char *reply,
			 struct claims *c)
{
	json_t *j = migr_json_parse(reply, strlen(reply));
	const json_t *arr, *res;
	struct pline pl;
	char e[256];
	int i;

	memset(c, 0, sizeof(*c));
	if (!j || pline_parse(x->r->line, x->r->gid, &pl, e, sizeof(e))) {
		c->whole = true;
		goto out;
	}
	c->busy = migr_json_true(j, "busy");
	arr = json_object_get(j, "results");
	if (!json_is_array(arr)) {
		c->whole = true;
		goto out;
	}
	for (i = 0; i < pl.nqp; i++) {
		res = json_array_get(arr, i);
		if (!res || migr_json_true(res, "notmine"))
			continue;
		check_claim(x, pid, &pl, i, res, c);
	}
out:
	json_decref(j);
}

/*
 * Ask process pid, and take its reply unless it claims a QP the kernel
 * does not back: then the request is refused (and logged as such).
 */
static void ask_checked(const struct relay *x, int pid, int timeout_ms,
			struct sbuf *out)
{
	char err[256], *reply;
	struct verdict v;
	struct claims c;

	if (ask(x, pid, timeout_ms, &reply, &v, err, sizeof(err))) {
		relay_refuse(x, out, err);
		return;
	}
	check_claims(x, pid, reply, &c);
	if (c.forged) {
		log_warn("partner %.*s: %s; refused", x->op_len, x->r->line,
			 c.why);
		free(reply);
		relay_refuse(x, out, c.why);
		return;
	}
	answered(x, out, pid, reply, &v);
}

/* The process the requester named (a previous reply's pid) */
static void to_pid(const struct relay *x, struct sbuf *out)
{
	struct proc_info p;
	char err[256];

	if (!registry_find(x->r->pid, &p)) {
		snprintf(err, sizeof(err), "no migr process with pid %d on %s",
			 x->r->pid, x->where);
		relay_refuse(x, out, err);
		return;
	}
	ask_checked(x, p.pid, PARTNER_TIMEOUT_MS, out);
}

/* Why the QP's holder cannot answer for it */
static void holder_error(const struct relay *x, uint32_t qpn, int pid,
			 const char *kern, char *err, size_t errlen)
{
	char comm[32];

	if (!pid) {
		snprintf(
			err, errlen,
			"QP 0x%x on %s is owned by the kernel (%s), which does not use migr; its partner cannot follow a switch",
			qpn, x->where, kern[0] ? kern : "?");
		return;
	}
	if (pid == x->asker) {
		snprintf(err, errlen,
			 "QP 0x%x on %s is the asking process's own", qpn,
			 x->where);
		return;
	}
	proc_comm(pid, comm, sizeof(comm));
	snprintf(
		err, errlen,
		"QP 0x%x on %s is owned by pid %d (%s), which does not use migr; its partner cannot follow a switch",
		qpn, x->where, pid, comm[0] ? comm : "?");
}

/*
 * Of a search's k replies, the process that backs its claim, else one
 * busy with its own switch: its index, or -1. Two that back it: the
 * request is refused, -2. *unsure: the first claim the kernel could not
 * check (not disproved: the refusal says so).
 */
static int search_pick(const struct relay *x, struct proc_ask *v, int k,
		       char *unsure, size_t len, struct sbuf *out)
{
	int i, owner = -1, busy = -1;
	struct claims c;
	char err[512];

	for (i = 0; i < k; i++) {
		if (v[i].rc) {
			rlog(x, "%s", v[i].err);
			continue;
		}
		check_claims(x, v[i].pid, v[i].reply, &c);
		if (c.forged) {
			log_warn("partner %.*s: %s; ignored", x->op_len,
				 x->r->line, c.why);
			/* a claim unchecked, not disproved: the refusal says so */
			if (c.unsure && !unsure[0])
				snprintf(unsure, len, "%s", c.why);
		} else if (c.backed && owner >= 0) {
			snprintf(
				err, sizeof(err),
				"pids %d and %d both claim QP 0x%x on %s; refused",
				v[owner].pid, v[i].pid, x->r->qpn, x->where);
			log_warn("partner %.*s: %s", x->op_len, x->r->line,
				 err);
			relay_refuse(x, out, err);
			return -2;
		} else if (c.backed) {
			owner = i;
		} else if (c.busy && busy < 0) {
			busy = i;
		}
	}
	return owner >= 0 ? owner : busy;
}

/*
 * A virtual number nobody answered for as its holder (a QP that moved
 * keeps its old number as the one its peers know): every migr process but
 * the asker (and asked, the holder already asked) at once, each for at
 * most SEARCH_PROC_MS, all within SEARCH_MS; exactly one must back its
 * claim (two: refused, a virtual number is one process's). None: refused
 * with none.
 */
static void search_all(const struct relay *x, struct sbuf *out, int asked,
		       const char *none)
{
	struct proc_info *all = calloc(REG_MAX, sizeof(*all));
	struct proc_ask *v = calloc(REG_MAX, sizeof(*v));
	char line[REQ_PARTNER_LINE_MAX + 16], unsure[512] = "";
	int n, i, k = 0, owner;
	struct verdict verdict;

	if (!all || !v) {
		relay_refuse(x, out, "out of memory");
		goto out;
	}
	n = registry_list(all, REG_MAX);
	for (i = 0; i < n; i++)
		if (all[i].pid != x->asker && all[i].pid != asked)
			v[k++].pid = all[i].pid;
	ctl_format(&(struct ctl_req){ .op = CTL_PARTNER,
				      .nargs = 1,
				      .line = x->r->line },
		   line, sizeof(line));
	proc_ask_all(v, k, line, SEARCH_PROC_MS, io_now_ms() + SEARCH_MS,
		     SEARCH_REPLY_MAX);
	owner = search_pick(x, v, k, unsure, sizeof(unsure), out);
	if (owner >= 0) {
		read_verdict(v[owner].reply, &verdict);
		answered(x, out, v[owner].pid, v[owner].reply, &verdict);
		v[owner].reply = NULL;
	} else if (owner == -1) {
		relay_refuse(x, out, unsure[0] ? unsure : none);
	}
out:
	for (i = 0; v && i < k; i++)
		free(v[i].reply);
	free(v);
	free(all);
}

/*
 * A fetch's number held by (or bound to) migr process pid, asked first:
 * 1 if its reply settles the request (a claim the kernel backs, an answer
 * of the process as a whole, or a forged claim, refused); 0 if it does
 * not claim the number; -1 with err if it did not answer
 */
static int holder_settles(const struct relay *x, struct sbuf *out, int pid,
			  char *err, size_t errlen)
{
	struct verdict v;
	struct claims c;
	char *reply;

	if (ask(x, pid, SEARCH_PROC_MS, &reply, &v, err, errlen))
		return -1;
	check_claims(x, pid, reply, &c);
	if (c.forged) {
		free(reply);
		log_warn("partner %.*s: %s; refused", x->op_len, x->r->line,
			 c.why);
		relay_refuse(x, out, c.why);
		return 1;
	}
	if (c.backed || c.whole) {
		answered(x, out, pid, reply, &v);
		return 1;
	}
	free(reply);
	return 0;
}

/*
 * A virtual number migrd saw move (bindings.h) is answered for by its
 * owner only, or refused if it left this host with its process: never by
 * whoever the kernel says holds it now (anyone may take a freed number).
 * An owner that answers notmine has let its QP go: the number is the
 * device's again. true if this settled the request.
 */
static bool bound(const struct relay *x, struct sbuf *out)
{
	char devs[LOCATE_DEV_MAX][LOCATE_NAME_MAX], err[512], e[256];
	struct binding b;
	int n, i, rc;

	n = holder_devices(x->r->gid, devs);
	for (i = 0; i < n; i++)
		if (bind_find(devs[i], x->r->qpn, &b, io_now_ms()))
			break;
	if (i >= n)
		return false;
	if (b.moved) {
		snprintf(
			err, sizeof(err),
			"QP 0x%x with GID %s moved to another host with its process (migration %s); it is not on %s any more",
			x->r->qpn, x->r->gid, b.id, x->where);
		relay_refuse(x, out, err);
		return true;
	}
	rlog(x, "bound to pid %d (%lld ms)", b.pid, io_now_ms() - x->t0);
	rc = b.pid == x->asker ? -1 :
				 holder_settles(x, out, b.pid, e, sizeof(e));
	if (rc > 0)
		return true;
	if (!rc) {
		bind_drop(devs[i], x->r->qpn);
		return false;
	}
	if (b.pid == x->asker)
		snprintf(err, sizeof(err),
			 "QP 0x%x on %s is the asking process's own", x->r->qpn,
			 x->where);
	else
		snprintf(err, sizeof(err),
			 "QP 0x%x on %s is pid %d's, which did not answer: %s",
			 x->r->qpn, x->where, b.pid, e);
	relay_refuse(x, out, err);
	return true;
}

/*
 * PID 0. prepare, faces and give: the process the kernel says holds the lower QP
 * the asker's QP is connected to, and only it. The other steps (a fetch):
 * the number asked for is a virtual one, its process's own name for a QP
 * that may have moved since (and whose number the device gave another QP
 * since: rxe reuses them). A number migrd saw move is its owner's, or
 * refused if it left this host (bound()). Otherwise its holder is asked
 * first if it is a migr process and keeps its claim if the kernel backs
 * it. A holder without
 * migr (or the kernel) ends it: the error says who holds the number, and
 * no other process is asked (one that claimed it would take a connection
 * meant for that holder's QP). Only a number nobody holds, or one its migr
 * holder does not claim, is searched for among the other migr processes
 * (search_all()).
 */
static void find_owner(const struct relay *x, struct sbuf *out)
{
	char err[512], kern[64], e[256];
	bool prepare, holder_migr;
	struct proc_info p;
	struct pline pl;
	uint32_t key;
	int pid, rc;

	if (pline_parse(x->r->line, x->r->gid, &pl, e, sizeof(e))) {
		relay_refuse(x, out, e);
		return;
	}
	prepare = pline_names_partner(pl.step);
	key = expected_phys(&pl, 0);
	if (!key && prepare) {
		relay_refuse(
			x, out,
			"partner prepare line does not say which QP it faces");
		return;
	}
	if (!key && bound(x, out))
		return;
	if (!key)
		key = x->r->qpn;
	rc = kernel_holder(x->r->gid, key, &pid, kern, sizeof(kern), e,
			   sizeof(e));
	if (rc < 0) {
		snprintf(err, sizeof(err),
			 "cannot tell who owns QP 0x%x on %s: %s", key,
			 x->where, e);
		relay_refuse(x, out, err);
		return;
	}
	holder_migr = !rc && pid && pid != x->asker && registry_find(pid, &p);
	rlog(x, "held by pid %d (%lld ms)", pid, io_now_ms() - x->t0);
	if (prepare && holder_migr) {
		ask_checked(x, pid, PARTNER_TIMEOUT_MS, out);
		return;
	}
	if (!rc)
		holder_error(x, key, pid, kern, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "no process on %s owns QP 0x%x",
			 x->where, key);
	if (prepare || (!rc && !holder_migr))
		relay_refuse(x, out, err);
	else if (!holder_migr || holder_settles(x, out, pid, e, sizeof(e)) <= 0)
		search_all(x, out, holder_migr ? pid : 0, err);
}

/* HOST's migrd does the same there; its reply is returned as it is */
static void to_peer(const struct relay *x, struct sbuf *out)
{
	char line[REQ_MAX + 1], err[512];
	struct req fwd = *x->r;
	struct verdict v;

	fwd.host[0] = 0;
	if (req_format(&fwd, line, sizeof(line)) < 0) {
		relay_refuse(x, out, "partner request too long to relay");
		return;
	}
	if (peer_call(x->r->host, line, PARTNER_PEER_TIMEOUT_MS, out, err,
		      sizeof(err))) {
		relay_refuse(x, out, err);
		return;
	}
	read_verdict(out->p ? out->p : "", &v);
	rlog(x, "relayed to its migrd: %s (%lld ms)%s%s",
	     v.ok ? "ok" : "failed", io_now_ms() - x->t0, v.ok ? "" : ": ",
	     v.ok ? "" : v.error);
}

void relay_to(const struct relay *x, bool remote, struct sbuf *out)
{
	if (remote)
		to_peer(x, out);
	else if (x->r->pid)
		to_pid(x, out);
	else
		find_owner(x, out);
}

/*
 * A relayed reply parsed into *j (NULL if it is not JSON; json_decref()
 * it): its "pid", and its process's "results", or NULL without them.
 */
const json_t *relay_results(const struct sbuf *out, json_t **j, int *pid)
{
	const char *s = out->p ? out->p : "";

	*j = migr_json_parse(s, strlen(s));
	*pid = migr_json_int(*j, "pid", 0, INT_MAX, 0);
	return json_object_get(json_object_get(*j, "reply"), "results");
}
