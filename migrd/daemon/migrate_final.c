// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A migration's stop (migrate_src.h): its migr processes parked, their
 * partner grants sent, the final dump of the stopped tree and its
 * transfer. From here on a failure rolls back (migrate_rollback.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_src.h"
#include "pauth.h"
#include "ptree.h"
#include "registry.h"
#include "sockio.h"

/* Its migr processes in turn, each waited for within wait_ms */
int mig_park(struct mig *m)
{
	struct ctl_req q = { .op = CTL_PARK,
			     .nargs = 2,
			     .wait_ms = m->r->wait_ms,
			     .lease_ms = MIG_PARTNER_HOLD_MS };
	char err[512], *reply;
	bool ok;

	m->t_park = io_now_ms();
	for (m->nparked = 0; m->nparked < m->nmovers; m->nparked++) {
		int pid = m->movers[m->nparked];

		reply = NULL;
		if (proc_ask(pid, &q, m->r->wait_ms + REQ_SWITCH_STEPS_MS,
			     &reply, err, sizeof(err))) {
			m->park_unknown = true;
			return mig_fail(m, "park of pid %d: %s", pid, err);
		}
		ok = proc_verdict(reply, "park", err, sizeof(err));
		free(reply);
		if (!ok)
			return mig_fail(m, "park of pid %d: %s", pid, err);
	}
	m->ms_park = io_now_ms() - m->t_park;
	mig_progress(
		m, "park",
		"parked %d migr process%s in %.0f ms (RDMA objects released)",
		m->nmovers, m->nmovers > 1 ? "es" : "", m->ms_park);
	return 0;
}

/*
 * The parked processes' partner sessions go with them (pauth.h): lines
 * of grants, each as long as a request may be, each grant naming its
 * owner; none for a root process
 */
int mig_send_grants(struct mig *m)
{
	struct req q = { .op = REQ_MIG_GRANTS };
	char one[REQ_GRANT_TEXT_MAX + 1];
	unsigned long long start;
	struct req_grant *v;
	size_t len = 0;
	int i, k, n, ret = 0;
	json_t *j;

	v = calloc(PAUTH_MAX, sizeof(*v));
	if (!v)
		return mig_fail(m, "out of memory");
	for (k = 0; k < m->nmovers && !ret; k++) {
		if (proc_start(m->movers[k], &start)) {
			ret = mig_fail(m, "pid %d is gone", m->movers[k]);
			break;
		}
		n = pauth_list(m->movers[k], start, v, PAUTH_MAX, io_now_ms());
		for (i = 0; i < n && i < PAUTH_MAX && !ret; i++) {
			int w;

			v[i].owner = m->nsmovers[k];
			w = req_grant_format(&v[i], one, sizeof(one));
			if (w < 0) {
				ret = mig_fail(
					m,
					"a partner grant does not fit a line");
				break;
			}
			if (len)
				q.line[len++] = ',';
			memcpy(q.line + len, one, w + 1);
			len += w;
			/* full: sent; the rest follow */
			if (len + 1 + REQ_GRANT_TEXT_MAX <=
			    REQ_PARTNER_LINE_MAX)
				continue;
			j = mig_ask(m, &q, 10000);
			if (!j)
				ret = -1;
			json_decref(j);
			len = 0;
		}
	}
	if (len && !ret) {
		j = mig_ask(m, &q, 10000);
		if (!j)
			ret = -1;
		json_decref(j);
	}
	free(v);
	return ret;
}

/*
 * Its connections wait, from the final dump on: no packet reaches their
 * sockets here (no reset from a socket CRIU left in repair mode) until
 * the destination has them, or the rollback brings the link up again
 */
static int lock_net(struct mig *m)
{
	char err[256];

	if (!m->ns.own_netns)
		return 0;
	m->link_down = true;
	if (netns_link(m->nsfd, &m->ns, false, false, err, sizeof(err)))
		return mig_fail(m, "pid %d: its interface cannot be locked: %s",
				m->r->pid, err);
	return 0;
}

/* The parked tree stopped and dumped, then sent; its figures in m */
int mig_final(struct mig *m)
{
	long long t = io_now_ms();
	char prev[16];

	if (lock_net(m))
		return -1;
	snprintf(prev, sizeof(prev), "pre-%u", m->nrounds);
	if (mig_dump(m, "final", m->nrounds ? prev : NULL, true))
		return -1;
	m->ms_dump = io_now_ms() - t;
	m->final_pages = mig_pages_of(m, "final");
	/* The tree as dumped (stopped now): what is continued or killed */
	if (ptree_read(m->r->pid, m->pids, &m->npids, m->tids, &m->ntids,
		       MIG_TREE_MAX))
		m->npids = 1, m->pids[0] = m->r->pid;
	mig_progress(m, "dump", "dumped in %.0f ms (%.1f MiB of pages)",
		     m->ms_dump, m->final_pages / 1048576.0);
	if (mig_send_dir(m, "final", &m->final_sent, &m->ms_send))
		return -1;
	mig_progress(m, "transfer", "sent %.1f MiB in %.0f ms (%.1f MiB/s)",
		     m->final_sent / 1048576.0, m->ms_send,
		     mig_mib_s(m->final_sent, m->ms_send));
	return 0;
}
