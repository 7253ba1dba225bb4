// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A migration that failed before the commit (migrate_src.h): the tree
 * goes back to work here, on its own device, once its copy there cannot
 * run
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "migrate_src.h"
#include "ptree.h"
#include "registry.h"
#include "sockio.h"
#include "tcprepair.h"

/* Back to work here: the tree runs again and rebuilds on its device */
void mig_rollback(struct mig *m)
{
	char *reply, err[512], lost[320] = "", tail[440];
	size_t off = strlen(m->err);
	bool failed = false;
	int i;

	if (m->link_down &&
	    netns_link(m->nsfd, &m->ns, true, false, err, sizeof(err)))
		log_err("migration %s: pid %d: its interface stays down: %s",
			m->id, m->r->pid, err);
	/* A final dump left its TCP sockets in repair mode */
	if (m->ns.own_netns && m->link_down &&
	    tcp_repair_off(m->pids, m->npids) < 0)
		log_err("migration %s: pid %d: its TCP sockets stay in repair mode: %s",
			m->id, m->r->pid, strerror(errno));
	ptree_signal(m->pids, m->npids, SIGCONT);
	/* the parked ones, and one that may be */
	for (i = 0; i < m->nparked + m->park_unknown && !failed; i++) {
		reply = NULL;
		if (proc_ask(m->movers[i],
			     &(struct ctl_req){ .op = CTL_RESUME }, 60000,
			     &reply, err, sizeof(err)) ||
		    !proc_verdict(reply, "resume", err, sizeof(err))) {
			snprintf(m->err + off, sizeof(m->err) - off,
				 "; resuming pid %d here failed too: %s",
				 m->movers[i], err);
			log_err("migration %s: pid %d stays parked here: %s",
				m->id, m->movers[i], err);
			failed = true;
		} else if (!lost[0] && proc_partner_error(reply, "resume", err,
							  sizeof(err))) {
			/* it runs, but a partner's QP faces its old one */
			snprintf(lost, sizeof(lost), "pid %d: %.300s",
				 m->movers[i], err);
		}
		free(reply);
	}
	if (!failed && lost[0]) {
		snprintf(
			tail, sizeof(tail),
			"; pid %d is back on %s, but a partner was not reconnected (%s)",
			m->r->pid, m->from, lost);
		/* the partner left behind is what the operator must read */
		if (off + strlen(tail) >= sizeof(m->err))
			off = sizeof(m->err) - 1 - strlen(tail);
		snprintf(m->err + off, sizeof(m->err) - off, "%s", tail);
	} else if (!failed) {
		snprintf(m->err + off, sizeof(m->err) - off,
			 "; pid %d runs here again on %s", m->r->pid, m->from);
	}
	log_warn("migration %s of pid %d to %s failed: %s", m->id, m->r->pid,
		 m->r->host, m->err);
}

/*
 * The restore's answer was lost: an abort confirmed, or the fence's
 * bound passed, before the source may run again
 */
void mig_fence_wait(struct mig *m, long long sent)
{
	long long until = sent + MIG_FENCE_MS + MIG_MARGIN_MS;
	char state[32];

	mig_progress(
		m, "rollback",
		"no answer from %s: waiting until its copy is known dead (at most %d s)",
		m->r->host, io_left_ms(until) / 1000);
	while (io_left_ms(until)) {
		if (!mig_end(m, "abort", state, sizeof(state)))
			return;
		sleep(2);
	}
}
