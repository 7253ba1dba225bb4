// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The destination of a migration (migrate.h): checks, receives images,
 * restores, and keeps the restored copy only if the source commits.
 * Its table of migrations: migrate_dest_table.h
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrival.h"
#include "bindings.h"
#include "criu_run.h"
#include "dest_record.h"
#include "images.h"
#include "locate.h"
#include "log.h"
#include "migr_json.h"
#include "migrate.h"
#include "migrate_dest_keep.h"
#include "migrate_dest_sweep.h"
#include "migrate_dest_table.h"
#include "netns.h"
#include "numhold.h"
#include "peer.h"
#include "ptree.h"
#include "registry.h"
#include "reply.h"
#include "sockio.h"

static bool tid_free(const char *list, char *taken, size_t len)
{
	char buf[REQ_PARTNER_LINE_MAX + 1], *p, *t;

	snprintf(buf, sizeof(buf), "%s", list);
	for (p = buf; (t = strsep(&p, ","));)
		if (!kill(atoi(t), 0) || errno != ESRCH) {
			snprintf(taken, len, "%s", t);
			return false;
		}
	return true;
}

/* What this host must have for the tree: 0, or -1 with err */
static int check_here(const struct req *r, char *err, size_t len)
{
	char path[512], taken[16];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", r->dev);
	if (access(path, F_OK)) {
		snprintf(err, len, "no RDMA device named %s", r->dev);
		return -1;
	}
	if (criu_plugin_missing("", err, len))
		return -1;
	if (r->ns.own_netns && netns_check(&r->ns, err, len))
		return -1;
	/* A pid namespace's tree keeps its pids there, not on this host */
	if (!r->ns.own_pidns && !tid_free(r->line, taken, sizeof(taken))) {
		snprintf(
			err, len,
			"pid %s is taken: the process tree of pid %d cannot keep its pids here",
			taken, r->pid);
		return -1;
	}
	return 0;
}

/* A slot of the table, checked for r; NULL if none is free */
static struct dest_mig *take_slot(const struct req *r, const struct client *c)
{
	struct dest_mig *m;

	pthread_mutex_lock(&dest_lock);
	m = dest_find(r->id) ? NULL : dest_slot();
	if (m) {
		free(m->grants);
		dest_drop_hold(m);
		memset(m, 0, sizeof(*m));
		m->state = D_CHECKED;
		snprintf(m->id, sizeof(m->id), "%s", r->id);
		snprintf(m->dev, sizeof(m->dev), "%s", r->dev);
		snprintf(m->who, sizeof(m->who), "%s", peer_link_who(c->link));
		m->pid = r->pid;
		m->born = io_now_ms();
		m->ns = r->ns;
		m->nsfd = -1;
		memcpy(m->movers, r->movers, sizeof(m->movers));
		m->nmovers = r->nmovers;
	}
	pthread_mutex_unlock(&dest_lock);
	return m;
}

/* CRIU here, the source's version: ver; 0, or -1 with err */
static int check_criu(const struct req *r, char *ver, size_t verlen, char *err,
		      size_t len)
{
	char path[512];

	if (img_path(r->id, NULL, true, path, sizeof(path), err, len) ||
	    criu_version(path, ver, verlen, err, len))
		return -1;
	if (strcmp(ver, r->version)) {
		snprintf(
			err, len,
			"CRIU %s here, %s on the source: the images would not restore",
			ver, r->version);
		return -1;
	}
	return 0;
}

static void do_check(const struct req *r, const struct client *c,
		     struct sbuf *out)
{
	char err[700], ver[64];
	struct dest_mig *m;

	if (check_here(r, err, sizeof(err)))
		goto refuse;
	m = take_slot(r, c);
	if (!m) {
		snprintf(err, sizeof(err), "busy: %d migrations in progress",
			 DEST_MAX);
		goto refuse;
	}
	if (check_criu(r, ver, sizeof(ver), err, sizeof(err)))
		goto drop;
	log_info(
		"migration %s from %s: pid %d may come (device %s, %d migr process%s)",
		r->id, m->who, r->pid, r->dev, r->nmovers,
		r->nmovers > 1 ? "es" : "");
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"criu\":", REQ_VERSION);
	sb_json_str(out, ver);
	sb_add(out, "}", 1);
	return;
drop:
	pthread_mutex_lock(&dest_lock);
	m->state = D_FREE;
	pthread_mutex_unlock(&dest_lock);
	img_remove(r->id, false);
refuse:
	log_info("migration %s from %s refused: %s", r->id,
		 peer_link_who(c->link), err);
	reply_error(out, err);
}

static void do_put(const struct req *r, const struct client *c,
		   struct sbuf *out)
{
	uint64_t bytes;
	char err[512];

	if (!dest_get(r->id, D_CHECKED, out))
		return;
	if (img_recv(c->link, r->id, r->name, &bytes, err, sizeof(err))) {
		log_warn("migration %s: receiving %s: %s", r->id, r->name, err);
		reply_error(out, err);
		return;
	}
	log_info("migration %s: %s received, %" PRIu64 " bytes", r->id, r->name,
		 bytes);
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"bytes\":%" PRIu64 "}",
		  REQ_VERSION, bytes);
}

/*
 * The restored tree's migr processes, found by the numbers its pid
 * namespace gives them (the host's, for a bare tree)
 */
static int find_movers(struct dest_mig *m, int root, char *err, size_t errlen)
{
	int pids[MIG_TREE_MAX], tids[MIG_TREE_MAX], nspids[MIG_TREE_MAX];
	int np, nt, i, k;

	if (ptree_read(root, pids, &np, tids, &nt, MIG_TREE_MAX)) {
		snprintf(err, errlen, "the restored tree of pid %d is gone",
			 root);
		return -1;
	}
	/* each process's number in its namespace, read once */
	for (i = 0; i < np; i++)
		nspids[i] = ns_pid(pids[i]);
	for (k = 0; k < m->nmovers; k++) {
		m->hpids[k] = 0;
		for (i = 0; i < np && !m->hpids[k]; i++)
			if (nspids[i] == m->movers[k])
				m->hpids[k] = pids[i];
		if (!m->hpids[k] || proc_start(m->hpids[k], &m->hstarts[k])) {
			snprintf(err, errlen,
				 "migr process %d of the tree was not restored",
				 m->movers[k]);
			return -1;
		}
	}
	return 0;
}

/*
 * line to every restored migr process at once; each must say ok under
 * key. With report, the replies as a JSON array (to free).
 */
static int ask_movers(struct dest_mig *m, const char *line, int ms,
		      const char *key, char **report, char *err, size_t errlen)
{
	struct proc_ask v[REQ_MOVERS_MAX];
	struct sbuf all = { 0 };
	int k, ret = 0;

	for (k = 0; k < m->nmovers; k++)
		v[k].pid = m->hpids[k];
	proc_ask_all(v, m->nmovers, line, ms, io_now_ms() + ms, REQ_MAX * 16);
	sb_add(&all, "[", 1);
	for (k = 0; k < m->nmovers; k++) {
		char why[256];

		if (!ret && v[k].rc) {
			snprintf(err, errlen, "%s", v[k].err);
			ret = -1;
		} else if (!ret &&
			   !proc_verdict(v[k].reply, key, why, sizeof(why))) {
			snprintf(err, errlen, "pid %d: %s", v[k].pid, why);
			ret = -1;
		}
		if (v[k].reply)
			sb_printf(&all, "%s%s", k ? "," : "", v[k].reply);
		free(v[k].reply);
	}
	sb_add(&all, "]", 1);
	if (report && !all.oom) {
		*report = all.p;
		all.p = NULL;
	}
	sb_free(&all);
	return ret;
}

/*
 * Tests only (migrd --test-hold DIR): while DIR/STEP exists, the step
 * waits (at most 120 s), having made DIR/STEP.held, so that a test can
 * kill migrd there knowing where it stands
 */
static void test_hold(const char *step)
{
	char flag[512], held[520];
	int i;
	FILE *f;

	if (!migrd.test_hold)
		return;
	snprintf(flag, sizeof(flag), "%s/%s", migrd.test_hold, step);
	if (access(flag, F_OK))
		return;
	snprintf(held, sizeof(held), "%s.held", flag);
	f = fopen(held, "we");
	if (f)
		fclose(f);
	log_warn("test hold: the step %s waits while %s exists", step, flag);
	for (i = 0; i < 1200 && !access(flag, F_OK); i++)
		usleep(100000);
}

/*
 * The network namespace made for it, with its interface and address, and
 * CRIU's arguments to restore into it (from args[*n]); 0 or -1 with err
 */
static int restore_netns(struct dest_mig *m, const char **args, int *n,
			 char *inherit, size_t inherit_len, char *err,
			 size_t errlen)
{
	/*
	 * Its interface and address; its MAC, and ARP, only at the
	 * commit: until then nothing it sends reaches its peers (a
	 * copy killed uncommitted resets none of their connections,
	 * which the source's rollback keeps)
	 */
	snprintf(m->netns, sizeof(m->netns), "%s%s", NETNS_PREFIX, m->id);
	if (netns_create(m->netns, &m->ns, &m->nsfd, err, errlen)) {
		m->netns[0] = 0;
		return -1;
	}
	/* CRIU's external namespace, the source's --external net[] */
	snprintf(inherit, inherit_len, "fd[3]:%s", NETNS_KEY);
	args[(*n)++] = "--inherit-fd";
	args[(*n)++] = inherit;
	args[(*n)++] = "--tcp-established";
	args[(*n)++] = "--network-lock";
	args[(*n)++] = "skip";
	args[*n] = NULL;
	return 0;
}

/* The restored root's pid as CRIU says it; 0 or -1 with err */
static int restored_pid(struct dest_mig *m, const char *pidfile, int *pid,
			char *err, size_t errlen)
{
	FILE *f;

	/* CRIU says the root's pid in migrd's pid namespace */
	f = fopen(pidfile, "re");
	if (!f || fscanf(f, "%d", pid) != 1 || *pid <= 0 ||
	    (!m->ns.own_pidns && *pid != m->pid)) {
		snprintf(err, errlen, "criu restore did not say pid %d",
			 m->pid);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	if (m->ns.own_pidns) {
		pthread_mutex_lock(&dest_lock);
		m->pid = *pid; /* its pid here from now on */
		pthread_mutex_unlock(&dest_lock);
	}
	return 0;
}

/*
 * The restored tree of pid, still stopped, taken in: its migr processes
 * found, given their grants and registered; 0 or -1 with err
 */
static int adopt(struct dest_mig *m, int pid, const char *dev, char *err,
		 size_t errlen)
{
	char twin[REQ_NAME_MAX + 8];
	unsigned long long start;
	int k;

	if (proc_start(pid, &start)) {
		snprintf(err, errlen, "pid %d died after its restore", pid);
		return -1;
	}
	m->start = start;
	/* who it would run as, before anything of it runs */
	if (arrival_check(pid, &migrd.conf.arrive_uids, err, errlen) ||
	    find_movers(m, pid, err, errlen))
		return -1;
	/*
	 * Migr processes of this host's from now on, on dev's twin: their
	 * partner steps at the resume come before they register themselves
	 */
	snprintf(twin, sizeof(twin), TWIN_PREFIX "%s", dev);
	for (k = 0; k < m->nmovers; k++) {
		dest_give_grants(m, k);
		registry_add(m->hpids[k], twin);
	}
	/* given once: the table holds them now */
	free(m->grants);
	m->grants = NULL;
	m->ngrants = 0;
	return 0;
}

/*
 * The restored tree of pid runs, fenced, and its migr processes resume
 * on dev; their reports in *report; 0 or -1 with err
 */
static int run_copy(struct dest_mig *m, int pid, const char *dev,
		    long long deadline, char **report, char *err, size_t errlen)
{
	char line[600], why[320];

	/*
	 * CRIU left it stopped (--leave-stopped): it runs from here on, each
	 * migr process under its own fence too (a migrd that dies now leaves
	 * no copy running beside a source that resumed)
	 */
	dest_signal_tree(pid, SIGCONT);
	ctl_format(&(struct ctl_req){ .op = CTL_FENCE,
				      .nargs = 1,
				      .wait_ms = io_left_ms(m->deadline) ?: 1 },
		   line, sizeof(line));
	if (ask_movers(m, line, 10000, "fence", NULL, err, errlen))
		return -1;
	test_hold("resume");
	/*
	 * The plugin left them parked (MIGR_RESUME_BY=migrd): resumed here,
	 * side by side
	 */
	/* with the token of the numbers held for it here, if any */
	ctl_format(&(struct ctl_req){ .op = CTL_RESUME,
				      .nargs = m->hold ? 2 : 1,
				      .dev = dev,
				      .token = m->hold ?
						       numhold_token(m->hold) :
						       0 },
		   line, sizeof(line));
	if (ask_movers(m, line, io_left_ms(deadline), "resume", report, why,
		       sizeof(why))) {
		snprintf(err, errlen, "resume on %s failed: %.300s", dev, why);
		return -1;
	}
	return 0;
}

/* criu restore, then its migr processes' resume reports; 0 or -1 with err */
static int restore(struct dest_mig *m, const char *dev, long long deadline,
		   double *ms, char **report, char *err, size_t errlen)
{
	char dir[512], imgs[600], pidfile[600], inherit[64];
	const char *args[24] = { "restore",   "-D",
				 imgs,	      "-d",
				 "-L",	      migrd.conf.criu_plugins,
				 "--pidfile", pidfile,
				 "-o",	      "restore.log",
				 "-v4",	      "--leave-stopped",
				 NULL };
	int n = 12, pid = 0, k;
	long long t0 = io_now_ms();

	if (img_path(m->id, NULL, false, dir, sizeof(dir), err, errlen))
		return -1;
	snprintf(imgs, sizeof(imgs), "%s/final", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/restored.pid", dir);
	/* Marked first: a migrd that dies from here on sweeps all of it */
	if (img_mark_restoring(dir, err, errlen))
		return -1;
	if (m->ns.own_netns &&
	    restore_netns(m, args, &n, inherit, sizeof(inherit), err, errlen))
		return -1;
	if (criu_run_fd(args, imgs, "restore.log", m->nsfd,
			io_left_ms(deadline), err, errlen))
		return -1;
	*ms = io_now_ms() - t0;
	if (restored_pid(m, pidfile, &pid, err, errlen) ||
	    adopt(m, pid, dev, err, errlen) ||
	    run_copy(m, pid, dev, deadline, report, err, errlen))
		return -1;
	/* its numbers here are its own, whoever the device gave them since */
	for (k = 0; k < m->nmovers; k++)
		bind_resumed(m->hpids[k], m->hstarts[k]);
	return 0;
}

/* The resumed copy written down (dest_record.h), before the source hears */
static void write_record(const struct dest_mig *m)
{
	struct dest_record rec = { .pid = m->pid,
				   .start = m->start,
				   .nmovers = m->nmovers,
				   .deadline = m->deadline,
				   .ns = m->ns };
	char dir[512], err[512];

	snprintf(rec.who, sizeof(rec.who), "%s", m->who);
	snprintf(rec.netns, sizeof(rec.netns), "%s", m->netns);
	memcpy(rec.hpids, m->hpids, sizeof(rec.hpids));
	memcpy(rec.hstarts, m->hstarts, sizeof(rec.hstarts));
	if (img_path(m->id, NULL, false, dir, sizeof(dir), err, sizeof(err)) ||
	    dest_record_write(dir, &rec, err, sizeof(err)))
		log_warn(
			"migration %s: %s: a migrd started before the commit will kill pid %d",
			m->id, err, m->pid);
}

static void do_restore(const struct req *r, const struct client *c,
		       struct sbuf *out)
{
	long long t0 = io_now_ms(), deadline = t0 + MIG_RESTORE_MS;
	char err[512];
	struct dest_mig *m;
	char *report = NULL;
	double ms = 0;
	pthread_t th;
	int ret;

	(void)c;
	m = dest_get(r->id, D_CHECKED, out);
	if (!m)
		return;
	pthread_mutex_lock(&dest_lock);
	m->state = D_RESTORING;
	m->deadline = t0 + MIG_FENCE_MS;
	pthread_mutex_unlock(&dest_lock);
	log_info("migration %s: restoring pid %d on %s", r->id, m->pid, r->dev);
	ret = restore(m, r->dev, deadline, &ms, &report, err, sizeof(err));
	/* claimed by the restored processes, or no longer needed */
	pthread_mutex_lock(&dest_lock);
	dest_drop_hold(m);
	pthread_mutex_unlock(&dest_lock);
	if (ret)
		goto fail;
	pthread_mutex_lock(&dest_lock);
	m->state = D_RESTORED;
	if (pthread_create(&th, NULL, dest_fence, m)) {
		m->state = D_RESTORING;
		pthread_mutex_unlock(&dest_lock);
		snprintf(err, sizeof(err), "cannot start the fence thread");
		goto fail;
	}
	pthread_detach(th);
	pthread_mutex_unlock(&dest_lock);
	write_record(m);
	log_info(
		"migration %s: pid %d restored and resumed on %s in %.0f ms; waiting for the commit",
		r->id, m->pid, r->dev, io_now_ms() - (double)t0);
	sb_printf(
		out,
		"{\"v\":%d,\"ok\":true,\"pid\":%d,\"restore_ms\":%.1f,\"reports\":%s}",
		REQ_VERSION, m->pid, ms, report ? report : "[]");
	free(report);
	return;
fail:
	log_warn("migration %s: %s; the restored copy, if any, is killed",
		 r->id, err);
	pthread_mutex_lock(&dest_lock);
	dest_kill_copy(m);
	dest_drop_netns(m);
	m->state = D_DONE;
	pthread_mutex_unlock(&dest_lock);
	img_remove(r->id, true);
	free(report);
	reply_error(out, err);
}

/*
 * The copy's own fence disarmed, before the source hears "committed" (it
 * then kills its own copy); 0 or -1 with err. Bounded short: the lock is
 * held, and the copy's control thread answers at once.
 */
static int commit_copy(struct dest_mig *m, char *err, size_t errlen)
{
	char *reply, why[256];
	int k, ret = 0;

	for (k = 0; k < m->nmovers; k++) {
		reply = NULL;
		if (proc_ask(m->hpids[k], &(struct ctl_req){ .op = CTL_COMMIT },
			     2000, &reply, why, sizeof(why)) ||
		    !proc_verdict(reply, "commit", why, sizeof(why))) {
			snprintf(err, errlen,
				 "pid %d did not take the commit: %.200s",
				 m->hpids[k], why);
			/* one that ended on its own after its resume ran here */
			if (!proc_ended(m->hpids[k], m->hstarts[k]))
				ret = -1;
		}
		free(reply);
	}
	return ret;
}

/*
 * At the commit, and not before: its interface takes its MAC and answers
 * ARP, and its peers hear where it is now; 0 or -1 with err. A copy
 * already runs with its partners reconnected to it, and a refusal kills
 * it: an ip command that did not answer in its bound (a guest starved of
 * CPU took over 10 s) is asked once more, the first failure logged.
 */
static int announce(struct dest_mig *m, char *err, size_t errlen)
{
	if (!m->ns.own_netns || m->nsfd < 0)
		return 0;
	if (!netns_announce(m->nsfd, &m->ns, err, errlen))
		return 0;
	log_warn("migration %s: %s; trying once more", m->id, err);
	return netns_announce(m->nsfd, &m->ns, err, errlen);
}

/* mig-end commit, under the lock; err set if it is refused */
static void end_commit(struct dest_mig *m, char *err, size_t len)
{
	bool waits = m && m->state == D_RESTORED && !m->committed;

	/*
	 * A copy that ended on its own after its resume ran on here:
	 * the source must not run that again, so it is committed too
	 */
	if (waits && (announce(m, err, len) || commit_copy(m, err, len))) {
		log_warn(
			"migration %s: %s: its restored copy (pid %d) is killed",
			m->id, err, m->pid);
		dest_kill_copy(m);
		dest_drop_netns(m);
		img_remove(m->id, true);
		m->state = D_DONE;
	} else if (waits) {
		if (err[0])
			log_info(
				"migration %s: committed; pid %d runs here, but a process of it ended on its own after its resume (%s)",
				m->id, m->pid, err);
		else
			log_info("migration %s: committed; pid %d runs here",
				 m->id, m->pid);
		err[0] = 0;
		m->committed = true;
		m->state = D_DONE;
		dest_mark_committed(m);
		if (m->nsfd >= 0)
			close(m->nsfd);
		m->nsfd = -1;
		img_remove(m->id, true);
	} else if (!m || !m->committed) {
		snprintf(
			err, len,
			"nothing to commit: no restored copy waits (its fence killed it?)");
	}
}

/* mig-end abort, under the lock; err set if it is refused */
static void end_abort(struct dest_mig *m, char *err, size_t len)
{
	if (m && m->committed) {
		snprintf(err, len, "already committed");
	} else if (m) {
		if (m->state == D_RESTORED || m->state == D_RESTORING)
			dest_kill_copy(m);
		/* a restore under way drops it on its own failure */
		if (m->state != D_RESTORING) {
			dest_drop_netns(m);
			dest_drop_hold(m);
		}
		log_info("migration %s: aborted by the source", m->id);
		img_remove(m->id, true);
		m->state = D_DONE;
	}
}

static void do_end(const struct req *r, struct sbuf *out)
{
	static const char *const names[] = { "none", "checked", "restoring",
					     "restored", "done" };
	const char *state = "none";
	struct dest_mig *m;
	char err[256] = "";

	if (!strcmp(r->line, "commit"))
		test_hold("commit"); /* not under the lock */
	pthread_mutex_lock(&dest_lock);
	m = dest_find(r->id);
	if (!strcmp(r->line, "commit"))
		end_commit(m, err, sizeof(err));
	else if (!strcmp(r->line, "abort"))
		end_abort(m, err, sizeof(err));
	if (m)
		state = m->committed ? "committed" : names[m->state];
	else if (dest_was_committed(r->id))
		state = "committed"; /* by a migrd before this one */
	pthread_cond_broadcast(&dest_changed);
	pthread_mutex_unlock(&dest_lock);
	if (err[0]) {
		reply_error(out, err);
		return;
	}
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"state\":\"%s\"}", REQ_VERSION,
		  state);
}

void migrate_dest_run(const struct req *r, const struct client *c,
		      struct sbuf *out)
{
	switch (r->op) {
	case REQ_MIG_CHECK:
		do_check(r, c, out);
		return;
	case REQ_MIG_PUT:
		do_put(r, c, out);
		return;
	case REQ_MIG_RESTORE:
		do_restore(r, c, out);
		return;
	case REQ_MIG_END:
		do_end(r, out);
		return;
	case REQ_MIG_GRANTS:
		dest_grants(r, out);
		return;
	case REQ_MIG_HOLD:
		dest_hold(r, out);
		return;
	default:
		reply_error(out, "unknown request");
	}
}
