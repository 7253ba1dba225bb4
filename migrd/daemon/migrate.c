// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The source of a migration (migrate.h): check, pre-copy, park, dump,
 * send, restore there, commit; any failure before the commit puts the
 * process back to work here, on its own device. This file runs the steps
 * in order (migrate_src.h names the files of each; what they share is
 * migrate_state.c's)
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "images.h"
#include "log.h"
#include "migrate.h"
#include "migrate_src.h"
#include "reply.h"
#include "sockio.h"

static void report(struct mig *m, struct sbuf *out, long long t0)
{
	uint64_t pre = 0;
	unsigned int k;

	sb_printf(out,
		  "{\"v\":%d,\"ok\":true,\"pid\":%d,\"pid_there\":%d,\"to\":",
		  REQ_VERSION, m->r->pid, m->pid_there);
	sb_json_str(out, m->r->host);
	sb_add(out, ",\"device\":", 10);
	sb_json_str(out, m->dev);
	sb_add(out, ",\"from\":", 8);
	sb_json_str(out, m->from);
	sb_printf(
		out,
		",\"id\":\"%s\",\"processes\":%d,\"migr_processes\":%d,\"threads\":%d,\"rounds\":[",
		m->id, m->npids, m->nmovers, m->ntids);
	for (k = 0; k < m->nrounds; k++) {
		pre += m->rounds[k].sent;
		sb_printf(out,
			  "%s{\"pages_bytes\":%" PRIu64
			  ",\"sent_bytes\":%" PRIu64
			  ",\"dump_ms\":%.1f,\"send_ms\":%.1f}",
			  k ? "," : "", m->rounds[k].pages, m->rounds[k].sent,
			  m->rounds[k].ms_dump, m->rounds[k].ms_send);
	}
	sb_printf(
		out,
		"],\"phases_ms\":{\"check\":%.1f,\"precopy\":%.1f,\"park\":%.1f,\"dump\":%.1f,"
		"\"transfer\":%.1f,\"restore\":%.1f,\"rebuild\":%.1f,"
		"\"partner_reconnect\":%.1f},\"blackout_ms\":%.1f,"
		"\"partners\":%u,\"partners_kept\":%u,\"partner_blackout_ms\":%.1f,"
		"\"numbers\":{\"kept\":%u,\"translated\":%u,\"held\":%u,\"claimed\":%u},"
		"\"total_ms\":%.1f,\"precopy_bytes\":%" PRIu64
		",\"final_bytes\":%" PRIu64 ",\"final_pages_bytes\":%" PRIu64
		"}",
		m->ms_check, m->ms_precopy, m->ms_park, m->ms_dump, m->ms_send,
		m->ms_restore, m->ms_rebuild, m->ms_partner, m->ms_blackout,
		m->partners, m->partners_kept, m->ms_partner_blackout,
		m->numbers_kept, m->numbers_translated, m->numbers_held,
		m->numbers_claimed, (double)(io_now_ms() - t0), pre,
		m->final_sent, m->final_pages);
}

/* Refused before the tree was touched: nothing to undo here */
static int refused(struct mig *m, struct sbuf *out)
{
	char state[32];

	if (m->checked)
		mig_end(m, "abort", state, sizeof(state));
	log_info("migration of pid %d to %s refused: %s", m->r->pid, m->r->host,
		 m->err);
	if (m->id[0])
		img_remove(m->id, true);
	reply_error(out, m->err);
	return 0;
}

/*
 * Failed once touched: the destination told (unless its error answered
 * the restore), the tree back to work here
 */
static int back(struct mig *m, struct sbuf *out, bool abort)
{
	char state[32];

	if (abort)
		mig_end(m, "abort", state, sizeof(state));
	mig_rollback(m);
	img_remove(m->id, true);
	reply_error(out, m->err);
	return 0;
}

/* The commit's answer lost: 1 if a settle thread took m */
static int unsettled(struct mig *m, struct sbuf *out)
{
	mig_fail(
		m,
		"%s did not confirm the commit and cannot be asked: pid %d is left stopped here (its copy there may run); migrd asks again every %d s for %d min, then kills it or resumes it as the answer says",
		m->r->host, m->r->pid, MIG_SETTLE_EVERY_MS / 1000,
		MIG_SETTLE_MS / 60000);
	reply_error(out, m->err);
	if (mig_settle_later(m))
		return 1;
	out->len = 0;
	mig_fail(
		m,
		"%s did not confirm the commit and cannot be asked: pid %d is left stopped here (its copy there may run); resume it with kill -CONT and 'migrctl' only once that copy is known dead",
		m->r->host, m->r->pid);
	reply_error(out, m->err);
	return 0;
}

/* 1: m was handed to a settle thread */
static int run(struct mig *m, struct sbuf *out)
{
	long long t0 = io_now_ms();
	int rc;

	if (mig_checks(m))
		return refused(m, out);
	m->ms_check = io_now_ms() - t0;
	mig_progress(
		m, "check",
		"%s accepts pid %d (%d processes, %d using migr; %d threads), CRIU %s",
		m->r->host, m->r->pid, m->npids, m->nmovers, m->ntids,
		m->criu_ver);
	mig_hold_numbers(m);
	if (mig_precopy(m))
		return refused(m, out);
	if (mig_park(m)) {
		/* migr processes parked before the one that failed resume */
		if (m->park_unknown || m->nparked)
			return back(m, out, true);
		return refused(m, out);
	}
	if (mig_send_grants(m) || mig_final(m))
		return back(m, out, true);
	rc = mig_restore_commit(m);
	if (rc > 0)
		return back(m, out, false);
	if (rc < 0)
		return unsettled(m, out);
	mig_committed_here(m);
	mig_progress(
		m, "done",
		"pid %d runs on %s as pid %d (device %s); blackout %.0f ms, total %.0f ms",
		m->r->pid, m->r->host, m->pid_there, m->dev, m->ms_blackout,
		(double)(io_now_ms() - t0));
	report(m, out, t0);
	return 0;
}

void migrate_run(const struct req *r, const struct client *c, struct sbuf *out)
{
	struct mig *m = calloc(1, sizeof(*m));
	char err[128];

	if (!m) {
		reply_error(out, "out of memory");
		return;
	}
	if (!mig_claim(r->pid)) {
		snprintf(err, sizeof(err), "pid %d is already being migrated",
			 r->pid);
		reply_error(out, err);
		free(m);
		return;
	}
	m->r = r;
	m->c = c;
	m->nsfd = -1;
	log_info(
		"migrating pid %d to %s (device %s, pre-copy %u), asked by uid %u",
		r->pid, r->host, r->dev[0] ? r->dev : "-", r->count,
		(unsigned int)c->uid);
	if (!run(m, out))
		mig_free(m);
}
