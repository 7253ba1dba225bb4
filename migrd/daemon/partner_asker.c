// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What a migr process that is not root may ask of its partners (req.h,
 * "partner"): a prepare only for partner QPs that face a QP of its own,
 * by the kernel (the faces step), which grants them to it; every later
 * step only for QPs so granted; a give checked as a prepare; a fetch's
 * answer only from a QP unconnected or facing the asker's. The entry of
 * every partner request (partner_run()); partner.c relays what passes.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "holder.h"
#include "locate.h"
#include "migr_json.h"
#include "migrd.h"
#include "partner_line.h"
#include "partner_relay.h"
#include "pauth.h"
#include "registry.h"
#include "sockio.h"

#define OP_LOG_MAX 32 /* only the line's first word is logged */

static bool res_ok(const json_t *res)
{
	return migr_json_true(res, "ok");
}

/*
 * Which QP (a lower number, a GID) one result says its QP faces, as the
 * faces step and a connected QP's fetch answer say it: true, or false if
 * it says none that migrd can check
 */
static bool read_faced(const json_t *res, char gid[REQ_GID_LEN + 2],
		       uint32_t *phys)
{
	double p = migr_json_num(res, "peer_phys", -1);

	if (p < 1 || p > 0xffffff || p != (uint32_t)p ||
	    !migr_json_text(res, "peer_gid", gid, REQ_GID_LEN + 2) ||
	    strlen(gid) != REQ_GID_LEN ||
	    strspn(gid, "0123456789abcdef") != REQ_GID_LEN)
		return false;
	*phys = p;
	return true;
}

/*
 * The partner's faces results (arr, from pid ppid) for the QPs of pl:
 * each it answers for must face a QP of tgid's by the kernel, set in
 * *verified; 0, or -1 with err
 */
static int faces_verify(const struct relay *x, const struct pline *pl, int tgid,
			const json_t *arr, int ppid, uint64_t *verified,
			char *err, size_t errlen)
{
	char gid[REQ_GID_LEN + 2], e[256];
	const json_t *res;
	uint32_t phys;
	int i, n;

	for (i = 0, n = 0; i < pl->nqp; i++) {
		res = json_array_get(arr, i);
		if (migr_json_true(res, "notmine"))
			continue;
		if (!res_ok(res) || !read_faced(res, gid, &phys)) {
			snprintf(
				err, errlen,
				"partner pid %d on %s did not say which QP its QP 0x%x faces (does its migr library know the faces step?)",
				ppid, x->where, pl->qpn[i]);
			return -1;
		}
		switch (asker_owns(tgid, gid, phys, e, sizeof(e))) {
		case 1:
			*verified |= 1ULL << i;
			n++;
			break;
		case 0:
			snprintf(
				err, errlen,
				"permission denied: QP 0x%x on %s faces QP 0x%x with GID %s, which pid %d does not own (%s)",
				pl->qpn[i], x->where, phys, gid, tgid, e);
			return -1;
		default:
			snprintf(err, errlen,
				 "cannot tell who owns QP 0x%x with GID %s: %s",
				 phys, gid, e);
			return -1;
		}
	}
	if (!n) {
		snprintf(err, errlen, "no process on %s owns QP 0x%x", x->where,
			 x->r->qpn);
		return -1;
	}
	return 0;
}

/*
 * Before a prepare from a process that is not root: the partner says,
 * step "faces", which QP (physical number, GID) each of its QPs named is
 * connected to; each must be the asker's by the kernel. The QPs that pass
 * are in *verified; the partner's pid in *ppid. 0; 1 if the partner is
 * busy, with its reply in busy; or -1 with err.
 */
static int check_faces(const struct relay *x, bool remote,
		       const struct pline *pl, int tgid, uint64_t *verified,
		       int *ppid, struct sbuf *busy, char *err, size_t errlen)
{
	struct req q = *x->r;
	struct relay fx = *x;
	struct sbuf out = {};
	const json_t *arr;
	json_t *j = NULL;
	int ret = -1;
	char e[256];
	size_t len;

	/*
	 * The prepare's own arguments: a QP that does not face the QP they
	 * name answers notmine (numbers repeat across processes), and the
	 * search goes on to the process whose QP does
	 */
	len = snprintf(q.line, sizeof(q.line), "faces%s",
		       x->r->line + strcspn(x->r->line, " "));
	if (len >= sizeof(q.line)) {
		snprintf(err, errlen, "partner request too long to check");
		return -1;
	}
	fx.r = &q;
	relay_to(&fx, remote, &out);
	*verified = 0;
	arr = relay_results(&out, &j, ppid);
	/*
	 * Switching itself: the mover backs off and asks again (a process
	 * busy as a whole answers with no result per QP)
	 */
	if (migr_json_true(json_object_get(j, "reply"), "busy")) {
		*busy = out;
		memset(&out, 0, sizeof(out));
		ret = 1;
	} else if (!arr || *ppid <= 0) {
		/* migrd's own refusal (no owner...) is the answer */
		if (!migr_json_text(j, "error", e, sizeof(e)))
			snprintf(e, sizeof(e), "no answer to the faces step");
		snprintf(err, errlen, "%s", e);
	} else {
		ret = faces_verify(x, pl, tgid, arr, *ppid, verified, err,
				   errlen);
	}
	json_decref(j);
	sb_free(&out);
	return ret;
}

/*
 * A step of a partner session, from a process that is not root: every QP
 * must be granted to its asker (k) with the partner pid named; 0, or -1
 * with the request refused
 */
static int granted(const struct relay *x, const struct pline *pl,
		   struct pauth_key *k, struct sbuf *out)
{
	char err[512];
	int i;

	for (i = 0; i < pl->nqp; i++) {
		k->qpn = pl->qpn[i];
		if (pauth_check(k, x->r->pid, io_now_ms()))
			continue;
		snprintf(
			err, sizeof(err),
			"permission denied: pid %d has no partner session with pid %d on %s for QP 0x%x (a prepare opens one for the QPs that face its own)",
			k->pid, x->r->pid, x->where, k->qpn);
		relay_refuse(x, out, err);
		return -1;
	}
	return 0;
}

/*
 * The partner reconnects to a QP of the asker's (k), or to none; 0, or
 * -1 with the request refused
 */
static int reconnect_owned(const struct relay *x, const struct pline *pl,
			   const struct pauth_key *k, struct sbuf *out)
{
	char gid[REQ_GID_LEN + 1], e[256], err[512];
	uint32_t nq;
	int i;

	for (i = 0; i < pl->nqp; i++) {
		if (pline_reconnect(pl->at[i], &nq, gid)) {
			relay_refuse(x, out,
				     "partner reconnect line is invalid");
			return -1;
		}
		switch (asker_owns(k->pid, gid, nq, e, sizeof(e))) {
		case 1:
			continue;
		case 0:
			snprintf(
				err, sizeof(err),
				"permission denied: QP 0x%x on %s would reconnect to QP 0x%x with GID %s, which pid %d does not own (%s)",
				pl->qpn[i], x->where, nq, gid, k->pid, e);
			break;
		default:
			snprintf(err, sizeof(err),
				 "cannot tell who owns QP 0x%x with GID %s: %s",
				 nq, gid, e);
		}
		relay_refuse(x, out, err);
		return -1;
	}
	return 0;
}

/*
 * A later step of a session a prepare opened (suspend ... abort), for
 * the QPs granted to the asker k; a resume or abort that succeeds ends
 * their grants
 */
static void session_step(const struct relay *x, bool remote,
			 const struct pline *pl, struct pauth_key *k,
			 struct sbuf *out)
{
	json_t *j;
	int i, pid;

	if (granted(x, pl, k, out))
		return;
	if (pl->step == PLINE_RECONNECT && reconnect_owned(x, pl, k, out))
		return;
	relay_to(x, remote, out);
	if (pl->step != PLINE_RESUME && pl->step != PLINE_ABORT)
		return;
	relay_results(out, &j, &pid);
	if (migr_json_true(j, "ok"))
		for (i = 0; i < pl->nqp; i++) {
			k->qpn = pl->qpn[i];
			pauth_drop(k, x->r->pid);
		}
	json_decref(j);
}

/*
 * A prepare (or give) for the asker k: relayed only to the partner whose
 * QPs face the asker's (check_faces()); a prepare's QPs so verified are
 * granted to the asker with that partner pid
 */
static void prepare_step(const struct relay *x, bool remote,
			 const struct pline *pl, struct pauth_key *k,
			 struct sbuf *out)
{
	struct relay px = *x;
	const json_t *arr;
	uint64_t verified;
	int i, ppid, pid;
	char err[512];
	struct req q;
	json_t *j;

	i = check_faces(x, remote, pl, k->pid, &verified, &ppid, out, err,
			sizeof(err));
	if (i > 0)
		return;
	if (i) {
		relay_refuse(x, out, err);
		return;
	}
	rlog(x, "the QPs named face QPs of pid %d (partner pid %d)", k->pid,
	     ppid);
	/* The prepare goes to the process that answered, and only there */
	q = *x->r;
	q.pid = ppid;
	px.r = &q;
	relay_to(&px, remote, out);
	/* A give is one step, not a session */
	if (pl->step == PLINE_GIVE)
		return;
	arr = relay_results(out, &j, &pid);
	for (i = 0; i < pl->nqp; i++) {
		if (!res_ok(json_array_get(arr, i)))
			continue;
		k->qpn = pl->qpn[i];
		if (!(verified & (1ULL << i)) ||
		    pauth_grant(k, ppid, io_now_ms()))
			rlog(x, "QP 0x%x prepared without a grant", k->qpn);
	}
	json_decref(j);
}

/*
 * Whether the QP one fetch result answers for may answer the asker tgid:
 * unconnected (no "peer_phys": its lower number and no keys, which a
 * connect needs), or connected to a QP the kernel says tgid holds on the
 * GID it names. 1 yes, 0 no, -1 unknown (e says why)
 */
static int fetch_faces_asker(const json_t *res, int tgid, char *e, size_t elen)
{
	char gid[REQ_GID_LEN + 2];
	uint32_t phys;

	if (!json_object_get(res, "peer_phys"))
		return 1;
	if (!read_faced(res, gid, &phys)) {
		snprintf(e, elen, "it did not say which QP it is connected to");
		return 0;
	}
	return asker_owns(tgid, gid, phys, e, elen);
}

/*
 * A fetch from a process that is not root (issue: a QP's keys go only to
 * the QP it faces): relayed, and its answer given back only if every QP
 * that answered is unconnected or connected to a QP of the asker's, by
 * the kernel, not by the asker's word. The refusal names no number.
 */
static void fetch_step(const struct relay *x, bool remote, int tgid,
		       struct sbuf *out)
{
	const json_t *arr, *res;
	char e[256], err[512];
	json_t *j;
	size_t i;
	int pid, rc = 1;

	relay_to(x, remote, out);
	arr = relay_results(out, &j, &pid);
	json_array_foreach (arr, i, res) {
		if (!res_ok(res))
			continue;
		rc = fetch_faces_asker(res, tgid, e, sizeof(e));
		if (rc != 1)
			break;
	}
	json_decref(j);
	if (rc == 1)
		return;
	rlog(x, "fetch answered by pid %d for a QP not facing pid %d: %s", pid,
	     tgid, e);
	snprintf(
		err, sizeof(err),
		rc ? "cannot tell whether the QP asked for on %s is connected to the asker's" :
		     "permission denied: the QP asked for on %s is not connected to a QP of the asker's",
		x->where);
	sb_free(out);
	relay_refuse(x, out, err);
}

/*
 * A local migr process that is not root: prepare only for partner QPs that
 * face a QP of its own (check_faces), which grants them to it; every later
 * step only for QPs granted to it, with that partner pid. A give (its
 * rkeys, to the QPs that connected to its QP first) is checked as a
 * prepare is, and grants nothing; a fetch's answer is checked against the
 * kernel (fetch_step()).
 */
static void partner_checked(const struct relay *x, const struct client *c,
			    bool remote, struct sbuf *out)
{
	const struct req *r = x->r;
	struct pauth_key k = {};
	struct pline pl;
	char err[512];

	if (pline_parse(r->line, r->gid, &pl, err, sizeof(err))) {
		relay_refuse(x, out, err);
		return;
	}
	if (pl.step == PLINE_FACES) {
		relay_refuse(x, out,
			     "permission denied: faces is migrd's own step");
		return;
	}
	k.pid = proc_tgid(c->pid);
	if (pl.step == PLINE_FETCH) {
		fetch_step(x, remote, k.pid, out);
		return;
	}
	if (proc_start(k.pid, &k.start)) {
		relay_refuse(x, out, "the asking process is gone");
		return;
	}
	/* the partner's host as the asker names it, wherever the asker runs */
	snprintf(k.host, sizeof(k.host), "%s", r->host);
	memcpy(k.gid, r->gid, sizeof(k.gid));
	if (pl.step != PLINE_PREPARE && pl.step != PLINE_GIVE)
		session_step(x, remote, &pl, &k, out);
	else
		prepare_step(x, remote, &pl, &k, out);
}

/*
 * Only migr processes (and root) ask, for the partners of their own QPs;
 * a peer daemon only for this host's processes.
 */
static bool may_ask(const struct req *r, const struct client *c)
{
	struct proc_info p;

	if (c->peer)
		return !r->host[0];
	if (c->uid == 0)
		return true;
	return c->pid > 0 && registry_find(proc_tgid(c->pid), &p);
}

void partner_run(const struct req *r, const struct client *c, struct sbuf *out)
{
	struct relay x = { .r = r,
			   .where = r->host[0] ? r->host : "this host",
			   .t0 = io_now_ms() };
	size_t op = strcspn(r->line, " ");
	bool remote = r->host[0] && !addr_is_local(r->host);

	x.op_len = op > OP_LOG_MAX ? OP_LOG_MAX : op;
	if (c->peer)
		snprintf(x.who, sizeof(x.who), "a peer");
	else
		snprintf(x.who, sizeof(x.who), "pid %d uid %u", (int)c->pid,
			 (unsigned int)c->uid);
	if (!c->peer && c->pid > 0)
		x.asker = proc_tgid(c->pid);
	if (!may_ask(r, c)) {
		relay_refuse(
			&x, out,
			c->peer ?
				"request not allowed from a peer" :
				"permission denied: partner requests come from migr processes");
		return;
	}
	/*
	 * Root and peer daemons (which checked their own askers) as asked,
	 * but only lines migrd reads as the library does: every claim in the
	 * answer is checked against the kernel whoever asked
	 */
	if (c->peer || c->uid == 0) {
		struct pline pl;
		char err[256];

		if (pline_parse(r->line, r->gid, &pl, err, sizeof(err)))
			relay_refuse(&x, out, err);
		else
			relay_to(&x, remote, out);
	} else
		partner_checked(&x, c, remote, out);
}
