// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* What migrd does for each request, local or from a peer (req.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bindings.h"
#include "ctl_reply.h"
#include "log.h"
#include "migrate.h"
#include "migrd.h"
#include "peer.h"
#include "qpowner.h"
#include "registry.h"
#include "reply.h"
#include "sockio.h"

/*
 * Root acts on any process, everyone else on their own only: as the
 * process is now (a set-uid execve changes its owner), and only if it is
 * still the process listed (its start time)
 */
static bool allowed(const struct client *c, const struct proc_info *p)
{
	unsigned long long start;
	uid_t uid;

	if (c->uid == 0)
		return true;
	return !proc_start(p->pid, &start) && start == p->start &&
	       !proc_uid(p->pid, &uid) && uid == c->uid;
}

/*
 * One status, however many processes: a bound on its time (each process
 * gets what is left, at most STATUS_PROC_MS) and on the replies it holds
 */
#define STATUS_DEADLINE_MS 10000
#define STATUS_PROC_MS 5000
#define STATUS_REPLIES_MAX (8 << 20)

/* room: reply bytes this status may still take */
static void proc_entry(struct sbuf *out, const struct proc_info *p,
		       long long deadline, size_t *room)
{
	long long left = deadline - io_now_ms();
	char *reply, err[256];
	size_t len;

	sb_printf(out, "{\"pid\":%d,\"uid\":%u,\"comm\":", p->pid,
		  (unsigned int)p->uid);
	sb_json_str(out, p->comm);
	sb_printf(out, ",\"registered\":%s,\"registered_devices\":",
		  p->registered ? "true" : "false");
	sb_json_str(out, p->devs);
	if (left <= 0) {
		snprintf(err, sizeof(err),
			 "pid %d: not asked: the status ran out of its %d s",
			 p->pid, STATUS_DEADLINE_MS / 1000);
		goto null;
	}
	if (proc_ask(p->pid, &(struct ctl_req){ .op = CTL_STATUS },
		     left < STATUS_PROC_MS ? left : STATUS_PROC_MS, &reply, err,
		     sizeof(err)))
		goto null;
	len = strlen(reply);
	if (len > *room) {
		snprintf(
			err, sizeof(err),
			"pid %d: its status reply (%zu bytes) does not fit the %d MiB of one status",
			p->pid, len, STATUS_REPLIES_MAX >> 20);
		free(reply);
		goto null;
	}
	*room -= len;
	sb_printf(out, ",\"status\":%s}", reply);
	free(reply);
	return;
null:
	sb_printf(out, ",\"status\":null,\"error\":");
	sb_json_str(out, err);
	sb_add(out, "}", 1);
}

static void do_status(const struct req *r, const struct client *c,
		      struct sbuf *out)
{
	static const int max = REG_MAX;
	struct proc_info *all = calloc(max, sizeof(*all));
	long long deadline = io_now_ms() + STATUS_DEADLINE_MS;
	size_t room = STATUS_REPLIES_MAX;
	char err[128];
	bool first = true;
	int n, i;

	if (!all) {
		reply_error(out, "out of memory");
		return;
	}
	n = registry_list(all, max);
	if (r->pid) {
		for (i = 0; i < n && all[i].pid != r->pid; i++)
			;
		if (i == n || !allowed(c, &all[i])) {
			snprintf(
				err, sizeof(err),
				i == n ?
					"no migr process with pid %d" :
					"permission denied: pid %d belongs to another user",
				r->pid);
			reply_error(out, err);
			goto out;
		}
	}
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"processes\":[", REQ_VERSION);
	for (i = 0; i < n; i++) {
		if ((r->pid && all[i].pid != r->pid) || !allowed(c, &all[i]))
			continue;
		if (!first)
			sb_add(out, ",", 1);
		proc_entry(out, &all[i], deadline, &room);
		first = false;
	}
	sb_add(out, "]}", 2);
out:
	free(all);
}

/* The first error a process's switch reply names, for a one-line error */
static void switch_error(const char *reply, char *err, size_t len)
{
	if (ctl_reply_first_error(reply, "switch", err, len))
		return;
	snprintf(err, len,
		 ctl_reply_reports(reply, "switch") ?
			 "switch failed" :
			 "the process has no open migr device");
}

static void do_switch(const struct req *r, const struct client *c,
		      struct sbuf *out)
{
	struct ctl_req q = { .op = CTL_SWITCH,
			     .nargs = 2,
			     .dev = r->dev,
			     .wait_ms = r->wait_ms };
	char err[256], *reply;
	struct proc_info p;
	bool ok;

	if (!registry_find(r->pid, &p)) {
		snprintf(err, sizeof(err), "no migr process with pid %d",
			 r->pid);
		reply_error(out, err);
		return;
	}
	if (!allowed(c, &p)) {
		snprintf(err, sizeof(err),
			 "permission denied: pid %d belongs to another user",
			 r->pid);
		reply_error(out, err);
		return;
	}
	log_info("switching pid %d (%s) to %s (wait %u ms), asked by uid %u",
		 p.pid, p.comm, r->dev, r->wait_ms, (unsigned int)c->uid);
	if (proc_ask(p.pid, &q, r->wait_ms + REQ_SWITCH_STEPS_MS, &reply, err,
		     sizeof(err))) {
		log_warn("switch of pid %d: %s", p.pid, err);
		reply_error(out, err);
		return;
	}
	ok = ctl_reply_ok(reply);
	if (ok) {
		log_info("pid %d switched to %s", p.pid, r->dev);
		/* its numbers are its own wherever the device gives them */
		bind_switched(p.pid, p.start, reply);
		sb_printf(out, "{\"v\":%d,\"ok\":true,\"pid\":%d,\"reply\":%s}",
			  REQ_VERSION, p.pid, reply);
	} else {
		switch_error(reply, err, sizeof(err));
		log_warn("switch of pid %d to %s failed: %s", p.pid, r->dev,
			 err);
		sb_printf(out,
			  "{\"v\":%d,\"ok\":false,\"error\":", REQ_VERSION);
		sb_json_str(out, err);
		sb_printf(out, ",\"pid\":%d,\"reply\":%s}", p.pid, reply);
	}
	free(reply);
}

static void do_qpn_owner(const struct req *r, const struct client *c,
			 struct sbuf *out)
{
	char err[256], kern[64], line[REQ_MAX];
	struct proc_info p;
	int pid;

	if (r->host[0]) {
		/* Ask that host's migrd the same question about its QP */
		snprintf(line, sizeof(line), "migrd/1 qpn-owner - %s %u\n",
			 r->dev, r->qpn);
		if (peer_call(r->host, line, 10000, out, err, sizeof(err)))
			reply_error(out, err);
		return;
	}
	if (qpn_owner(r->dev, r->qpn, &pid, kern, sizeof(kern), err,
		      sizeof(err))) {
		reply_error(out, err);
		return;
	}
	if (pid > 0)
		pid = proc_tgid(pid);
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"ibdev\":", REQ_VERSION);
	sb_json_str(out, r->dev);
	sb_printf(out, ",\"qpn\":%u,\"pid\":%d", r->qpn, pid);
	if (pid) {
		bool migr = registry_find(pid, &p);

		sb_printf(out,
			  ",\"migr\":%s,\"comm\":", migr ? "true" : "false");
		sb_json_str(out, migr ? p.comm : "");
	} else {
		sb_add(out, ",\"kernel\":", 10);
		sb_json_str(out, kern);
	}
	sb_add(out, "}", 1);
}

static void do_hello(const struct req *r, const struct client *c,
		     struct sbuf *out)
{
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	sb_printf(out,
		  "{\"v\":%d,\"ok\":true,\"version\":%d,\"host\":", REQ_VERSION,
		  REQ_VERSION);
	sb_json_str(out, host);
	sb_add(out, "}", 1);
}

static void do_peer_ping(const struct req *r, const struct client *c,
			 struct sbuf *out)
{
	struct timespec t0, t1;
	struct sbuf reply = {};
	char err[256];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (peer_call(r->host, "migrd/1 hello\n", 10000, &reply, err,
		      sizeof(err))) {
		reply_error(out, err);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"host\":", REQ_VERSION);
	sb_json_str(out, r->host);
	sb_printf(out, ",\"rtt_ms\":%.3f,\"peer\":%s}",
		  (t1.tv_sec - t0.tv_sec) * 1e3 +
			  (t1.tv_nsec - t0.tv_nsec) / 1e6,
		  reply.p);
	sb_free(&reply);
}

static void do_register(const struct req *r, const struct client *c,
			struct sbuf *out)
{
	registry_add(c->pid, r->dev);
	sb_printf(out, "{\"v\":%d,\"ok\":true}", REQ_VERSION);
}

static void run_unknown(const struct req *r, const struct client *c,
			struct sbuf *out)
{
	reply_error(out, "unknown request");
}

/*
 * Who may ask, at the door; a handler may check more (its own comment
 * says what): the process's owner or root (status, switch: allowed()),
 * root or a migr process (partner, udpeers), root (migrate).
 */
enum ops_who {
	WHO_LOCAL = 1 << 0, /* a client of this host's socket */
	WHO_PEER = 1 << 1, /* a peer migrd */
	WHO_PEER_HERE = 1 << 2, /* a peer migrd, about this host (no HOST) */
};

struct ops_method {
	unsigned int who;
	void (*run)(const struct req *r, const struct client *c,
		    struct sbuf *out);
};

/* One entry per request of req.h, as the kernel's uverbs method tables */
static const struct ops_method methods[] = {
	[REQ_REGISTER] = { WHO_LOCAL, do_register },
	[REQ_STATUS] = { WHO_LOCAL, do_status },
	[REQ_SWITCH] = { WHO_LOCAL, do_switch },
	[REQ_HELLO] = { WHO_LOCAL | WHO_PEER, do_hello },
	[REQ_QPN_OWNER] = { WHO_LOCAL | WHO_PEER_HERE, do_qpn_owner },
	[REQ_PEER_PING] = { WHO_LOCAL, do_peer_ping },
	[REQ_PARTNER] = { WHO_LOCAL | WHO_PEER_HERE, partner_run },
	[REQ_UDPEERS] = { WHO_LOCAL | WHO_PEER_HERE, udpeers_run },
	[REQ_MIGRATE] = { WHO_LOCAL, migrate_run },
	/* a migration coming here (migrate_dest.c) */
	[REQ_MIG_CHECK] = { WHO_PEER, migrate_dest_run },
	[REQ_MIG_PUT] = { WHO_PEER, migrate_dest_run },
	[REQ_MIG_RESTORE] = { WHO_PEER, migrate_dest_run },
	[REQ_MIG_END] = { WHO_PEER, migrate_dest_run },
	[REQ_MIG_GRANTS] = { WHO_PEER, migrate_dest_run },
	[REQ_MIG_HOLD] = { WHO_PEER, migrate_dest_run },
};

static bool admits(const struct ops_method *m, const struct req *r,
		   const struct client *c)
{
	if (!c->peer)
		return m->who & WHO_LOCAL;
	return (m->who & WHO_PEER) || ((m->who & WHO_PEER_HERE) && !r->host[0]);
}

void ops_run(const struct req *r, const struct client *c, struct sbuf *out)
{
	static const struct ops_method unknown = { WHO_LOCAL, run_unknown };
	const struct ops_method *m = &unknown;

	if ((size_t)r->op < sizeof(methods) / sizeof(methods[0]) &&
	    methods[r->op].run)
		m = &methods[r->op];
	if (!admits(m, r, c)) {
		reply_error(out, c->peer ? "request not allowed from a peer" :
					   "request only for a peer migrd");
		return;
	}
	m->run(r, c, out);
}
