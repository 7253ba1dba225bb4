// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner relay (req.h): a migr process moving its connections to
 * another device asks for the process at the other end of one of its QPs.
 * migrd finds that process on this host, or has HOST's migrd find it, and
 * hands it the line on its control socket ("partner LINE").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "locate.h"
#include "log.h"
#include "migrd.h"
#include "qpowner.h"
#include "registry.h"

#define PARTNER_TIMEOUT_MS 30000 /* some partner ops drain queues */
#define PARTNER_PEER_TIMEOUT_MS 35000 /* the peer's 30 s, and the hop */
#define PARTNER_FAILS_MAX 8 /* processes that did not answer, remembered */
#define OP_LOG_MAX 32 /* only the line's first word is logged */

/* One relayed request, for the replies and the log */
struct relay {
	const struct req *r;
	const char *where; /* HOST as given, or "this host" */
	char who[48]; /* the requester */
	int op_len;
};

/* What a process's reply says about itself */
struct verdict {
	bool ok, notmine;
	char error[256];
};

/* A migr process that did not answer during the search, and why */
struct fail {
	int pid;
	char err[256];
};

#define rlog(x, fmt, ...)                                                      \
	log_dbg("partner %.*s for QP 0x%x on %s from %s: " fmt, (x)->op_len,   \
		(x)->r->line, (x)->r->qpn, (x)->where, (x)->who,               \
		##__VA_ARGS__)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void read_verdict(const char *reply, struct verdict *v)
{
	size_t len = strlen(reply);
	int cap = len / 2 + 16;
	struct json_tok *t = calloc(cap, sizeof(*t));
	struct json j;

	memset(v, 0, sizeof(*v));
	if (t && !json_parse(&j, reply, len, t, cap)) {
		v->ok = json_bool(&j, json_get(&j, 0, "ok"), false);
		v->notmine = json_bool(&j, json_get(&j, 0, "notmine"), false);
		json_str(&j, json_get(&j, 0, "error"), v->error,
			 sizeof(v->error));
	}
	free(t);
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

static void refuse(const struct relay *x, struct sbuf *out, const char *err)
{
	rlog(x, "%s", err);
	ops_error(out, err);
}

/* Hand the line to process pid; 0 with its reply, or -1 with err */
static int ask(const struct relay *x, int pid, int timeout_ms, char **reply,
	       struct verdict *v, char *err, size_t errlen)
{
	char line[REQ_PARTNER_LINE_MAX + 16];

	snprintf(line, sizeof(line), "partner %s\n", x->r->line);
	if (proc_request(pid, line, timeout_ms, reply, err, errlen))
		return -1;
	read_verdict(*reply, v);
	return 0;
}

static void answered(const struct relay *x, struct sbuf *out, int pid,
		     char *reply, const struct verdict *v)
{
	if (v->ok)
		rlog(x, "pid %d: ok", pid);
	else
		rlog(x, "pid %d: failed: %s", pid,
		     v->error[0] ? v->error : "no reason given");
	wrap(out, pid, reply, v);
	free(reply);
}

/* The process the requester named (a previous reply's pid) */
static void to_pid(const struct relay *x, struct sbuf *out)
{
	char err[256], *reply;
	struct proc_info p;
	struct verdict v;

	if (!registry_find(x->r->pid, &p)) {
		snprintf(err, sizeof(err), "no migr process with pid %d on %s",
			 x->r->pid, x->where);
		refuse(x, out, err);
		return;
	}
	if (ask(x, p.pid, PARTNER_TIMEOUT_MS, &reply, &v, err, sizeof(err))) {
		refuse(x, out, err);
		return;
	}
	answered(x, out, p.pid, reply, &v);
}

/* Why the owner the kernel names did not answer as the QP's partner */
static void owner_error(const struct relay *x, int pid, const char *kern,
			const struct fail *fails, int nfails, bool timed_out,
			char *err, size_t errlen)
{
	uint32_t qpn = x->r->qpn;
	struct proc_info p;
	char comm[32];
	int i;

	if (!pid) {
		snprintf(
			err, errlen,
			"QP 0x%x on %s is owned by the kernel (%s), which does not use migr; its partner cannot follow a switch",
			qpn, x->where, kern[0] ? kern : "?");
		return;
	}
	pid = proc_tgid(pid); /* the kernel names the creating thread */
	if (!registry_find(pid, &p)) {
		proc_comm(pid, comm, sizeof(comm));
		snprintf(
			err, errlen,
			"QP 0x%x on %s is owned by pid %d (%s), which does not use migr; its partner cannot follow a switch",
			qpn, x->where, pid, comm[0] ? comm : "?");
		return;
	}
	for (i = 0; i < nfails && fails[i].pid != pid; i++)
		;
	if (i < nfails)
		snprintf(
			err, errlen,
			"QP 0x%x on %s is owned by migr process %d (%s), which did not answer: %s",
			qpn, x->where, pid, p.comm, fails[i].err);
	else
		snprintf(
			err, errlen,
			"QP 0x%x on %s is owned by migr process %d (%s), which %s",
			qpn, x->where, pid, p.comm,
			timed_out ?
				"was not asked before the search timed out" :
				"did not claim it");
}

/*
 * No migr process claimed the QP: say who owns it, from the kernel's RDMA
 * resource tracking on the devices that have the GID.
 */
static void kernel_owner(const struct relay *x, struct sbuf *out,
			 const struct fail *fails, int nfails, bool timed_out)
{
	char devs[LOCATE_DEV_MAX][LOCATE_NAME_MAX], kern[64] = "", err[512],
						    qerr[256] = "";
	const struct req *r = x->r;
	int ndev, i, pid = 0;

	ndev = gid_devices(LOCATE_SYSFS, r->gid, devs, LOCATE_DEV_MAX);
	if (ndev < 0 && errno != ENOENT) {
		snprintf(err, sizeof(err), "cannot read %s: %s", LOCATE_SYSFS,
			 strerror(errno));
		refuse(x, out, err);
		return;
	}
	if (ndev <= 0) {
		snprintf(err, sizeof(err), "no RDMA device on %s has GID %s",
			 x->where, r->gid);
		refuse(x, out, err);
		return;
	}
	/* Twins on one netdev share GIDs: the QP is on one of them */
	for (i = 0; i < ndev; i++) {
		char e[sizeof(qerr)];
		int rc = qpn_owner(devs[i], r->qpn, &pid, kern, sizeof(kern), e,
				   sizeof(e));

		if (!rc)
			break;
		if (rc < 0)
			memcpy(qerr, e, sizeof(qerr));
	}
	if (i < ndev)
		owner_error(x, pid, kern, fails, nfails, timed_out, err,
			    sizeof(err));
	else if (qerr[0])
		snprintf(err, sizeof(err),
			 "cannot tell who owns QP 0x%x on %s: %s", r->qpn,
			 x->where, qerr);
	else
		snprintf(err, sizeof(err), "no process on %s owns QP 0x%x",
			 x->where, r->qpn);
	refuse(x, out, err);
}

/*
 * PID 0: every migr process in turn; the first that does not answer
 * "notmine" owns the QP. One deadline bounds the whole search.
 */
static void find_owner(const struct relay *x, struct sbuf *out)
{
	long long deadline = now_ms() + PARTNER_TIMEOUT_MS, left;
	struct fail fails[PARTNER_FAILS_MAX];
	struct proc_info *all = calloc(REG_MAX, sizeof(*all));
	bool timed_out = false;
	int n, i, nfails = 0;
	struct verdict v;
	char err[256], *reply;

	if (!all) {
		refuse(x, out, "out of memory");
		return;
	}
	n = registry_list(all, REG_MAX);
	for (i = 0; i < n; i++) {
		left = deadline - now_ms();
		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (ask(x, all[i].pid, left, &reply, &v, err, sizeof(err))) {
			rlog(x, "skipping pid %d: %s", all[i].pid, err);
			if (nfails < PARTNER_FAILS_MAX) {
				fails[nfails].pid = all[i].pid;
				snprintf(fails[nfails].err,
					 sizeof(fails[nfails].err), "%s", err);
				nfails++;
			}
			continue;
		}
		if (v.notmine) {
			free(reply);
			continue;
		}
		answered(x, out, all[i].pid, reply, &v);
		goto out;
	}
	kernel_owner(x, out, fails, nfails, timed_out);
out:
	free(all);
}

/* HOST's migrd does the same there; its reply is returned as it is */
static void to_peer(const struct relay *x, struct sbuf *out)
{
	char line[REQ_MAX + 1], err[512];
	struct req fwd = *x->r;
	struct verdict v;

	fwd.host[0] = 0;
	if (req_format(&fwd, line, sizeof(line)) < 0) {
		refuse(x, out, "partner request too long to relay");
		return;
	}
	if (peer_call(x->r->host, line, PARTNER_PEER_TIMEOUT_MS, out, err,
		      sizeof(err))) {
		refuse(x, out, err);
		return;
	}
	read_verdict(out->p ? out->p : "", &v);
	rlog(x, "relayed to its migrd: %s%s",
	     v.ok ? "ok" : "failed: ", v.ok ? "" : v.error);
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
			   .where = r->host[0] ? r->host : "this host" };
	size_t op = strcspn(r->line, " ");

	x.op_len = op > OP_LOG_MAX ? OP_LOG_MAX : op;
	if (c->peer)
		snprintf(x.who, sizeof(x.who), "a peer");
	else
		snprintf(x.who, sizeof(x.who), "pid %d uid %u", (int)c->pid,
			 (unsigned int)c->uid);
	if (!may_ask(r, c)) {
		refuse(&x, out,
		       c->peer ?
			       "request not allowed from a peer" :
			       "permission denied: partner requests come from migr processes");
		return;
	}
	if (r->host[0] && !addr_is_local(r->host))
		to_peer(&x, out);
	else if (r->pid)
		to_pid(&x, out);
	else
		find_owner(&x, out);
}
