// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A migration's end (migrate_src.h): the restore there and the commit;
 * a commit whose answer was lost is settled by a thread of its own
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bindings.h"
#include "images.h"
#include "locate.h"
#include "log.h"
#include "migrate_src.h"
#include "ptree.h"
#include "sockio.h"

/*
 * After the commit its address lives there: no longer here. The
 * namespace is its operator's; one migrd made (an earlier migration
 * here) goes
 */
static void release_net(struct mig *m)
{
	char err[256], name[64];

	if (!m->ns.own_netns)
		return;
	if (netns_link(m->nsfd, &m->ns, false, true, err, sizeof(err)))
		log_err("migration %s: %s/%u may still be here: %s", m->id,
			m->ns.addr, m->ns.prefix, err);
	if (netns_ours(m->nsfd, name, sizeof(name)))
		netns_delete(name);
}

/*
 * The resume reports of the destination's migr processes: they resume
 * side by side, so the longest of each phase is the tree's
 */
static void rebuild_ms(struct mig *m, const json_t *j)
{
	const json_t *all = json_object_get(j, "reports"), *one;
	size_t i;

	m->ms_restore = json_real_value(json_object_get(j, "restore_ms"));
	m->ms_rebuild = m->ms_partner = m->ms_partner_blackout = 0;
	m->partners = m->partners_kept = 0;
	m->numbers_kept = m->numbers_translated = m->numbers_claimed = 0;
	json_array_foreach (all, i, one) {
		const json_t *v =
			json_array_get(json_object_get(one, "resume"), 0);
		const json_t *ph = json_object_get(v, "phases_ms");
		const json_t *n = json_object_get(v, "numbers");
		double rebuild =
			json_number_value(json_object_get(ph, "rebuild")) +
			json_number_value(json_object_get(ph, "replay"));
		double partner = json_number_value(
			json_object_get(ph, "partner_reconnect"));
		double held = json_number_value(
			json_object_get(v, "partner_held_ms"));

		if (rebuild > m->ms_rebuild)
			m->ms_rebuild = rebuild;
		if (partner > m->ms_partner)
			m->ms_partner = partner;
		if (held > m->ms_partner_blackout)
			m->ms_partner_blackout = held;
		m->partners +=
			json_integer_value(json_object_get(v, "partners"));
		m->partners_kept +=
			json_integer_value(json_object_get(v, "partners_kept"));
		m->numbers_kept +=
			json_integer_value(json_object_get(n, "kept"));
		m->numbers_translated +=
			json_integer_value(json_object_get(n, "translated"));
		m->numbers_claimed +=
			json_integer_value(json_object_get(n, "claimed"));
	}
}

/*
 * After a commit without an answer, what the destination says of its
 * copy: 0 committed (a copy still waiting is committed again), 1 gone
 * (killed by its fence, aborted, or never there: the source may run),
 * -1 unknown (no answer)
 */
static int settled(struct mig *m)
{
	char state[32] = "";

	if (mig_end(m, "state", state, sizeof(state)))
		return -1;
	if (!strcmp(state, "restored") &&
	    mig_end(m, "commit", state, sizeof(state)))
		return -1;
	if (!strcmp(state, "committed"))
		return 0;
	if (!strcmp(state, "restoring") || !strcmp(state, "restored"))
		return -1;
	return 1;
}

/* Restore there and commit; 1: failed, the source may run; -1: unknown */
int mig_restore_commit(struct mig *m)
{
	struct req q = { .op = REQ_MIG_RESTORE };
	long long sent = io_now_ms();
	json_t *j;

	snprintf(q.dev, sizeof(q.dev), "%s", m->dev);
	mig_progress(m, "restore", "restoring on %s (device %s)", m->r->host,
		     m->dev);
	j = mig_ask(m, &q, MIG_RESTORE_MS + MIG_MARGIN_MS);
	if (!j) {
		/* an error reply: the copy there is dead; none: maybe not */
		if (!m->answered)
			mig_fence_wait(m, sent);
		return 1;
	}
	m->ms_blackout = io_now_ms() - m->t_park;
	m->pid_there = migr_json_int(j, "pid", 1, INT32_MAX, m->r->pid);
	rebuild_ms(m, j);
	json_decref(j);
	q = (struct req){ .op = REQ_MIG_END };
	snprintf(q.line, sizeof(q.line), "commit");
	j = mig_ask(m, &q, 10000);
	if (j) {
		json_decref(j);
		return 0;
	}
	/* Did the commit arrive? Ask until the fence would have acted */
	while (io_left_ms(sent + MIG_FENCE_MS + MIG_MARGIN_MS)) {
		int rc = settled(m);

		if (rc >= 0)
			return rc;
		sleep(2);
	}
	return -1;
}

/* The tree here goes: its copy there runs */
void mig_committed_here(struct mig *m)
{
	/* its twin's device: the one whose numbers its peers were given */
	const char *devs[] = { m->from, twin_device(m->twin) };

	ptree_signal(m->pids, m->npids, SIGKILL);
	/* whoever takes its numbers here must not answer for them */
	bind_left(devs, 2, m->hold[REQ_HOLD_QPN], m->nhold[REQ_HOLD_QPN],
		  m->id);
	release_net(m);
	img_remove(m->id, true);
}

/*
 * The commit's answer was lost and the destination could not be asked
 * in time: the tree stays stopped here (the copy there may run) while
 * this thread asks on (migrate.h). Owns m.
 */
static void *settle_thread(void *arg)
{
	long long until = io_now_ms() + MIG_SETTLE_MS;
	struct mig *m = arg;
	int rc = -1;

	while (rc < 0 && io_left_ms(until)) {
		sleep(MIG_SETTLE_EVERY_MS / 1000);
		rc = settled(m);
	}
	if (!rc) {
		log_warn(
			"migration %s: %s confirms the commit: pid %d here goes",
			m->id, m->r->host, m->r->pid);
		mig_committed_here(m);
	} else if (rc > 0) {
		mig_fail(m, "%s says its copy of pid %d is gone", m->r->host,
			 m->r->pid);
		mig_rollback(m);
		img_remove(m->id, true);
	} else {
		log_err("migration %s: %s did not answer for %d min: pid %d stays stopped here",
			m->id, m->r->host, MIG_SETTLE_MS / 60000, m->r->pid);
	}
	mig_free(m);
	return NULL;
}

/* Hand m to settle_thread(); false if it cannot start (m stays ours) */
bool mig_settle_later(struct mig *m)
{
	static const struct client gone = { .fd = -1 };
	pthread_attr_t attr;
	pthread_t th;
	bool ok;

	m->r_kept = *m->r;
	m->r = &m->r_kept;
	m->c = &gone;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ok = !pthread_create(&th, &attr, settle_thread, m);
	pthread_attr_destroy(&attr);
	return ok;
}
