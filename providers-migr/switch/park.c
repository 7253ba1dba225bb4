// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * See park.h. The park keeps the switch's set between its two halves:
 * the contexts' control locks (taken by the mover thread), the RECVs
 * each QP held unused, and the GID table of the device left, against
 * which the destination's GIDs are matched at the resume.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "park.h"
#include "rebuild.h"
#include "switch_set.h"
#include "verbs.h"

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sw_set *parked;
static struct migr_switch_report park_rep;
/*
 * The last resume's outcome, until the next park: a resume asked twice
 * (queued by the CRIU plugin at restore, then asked by migrctl) answers
 * the second with the first's report
 */
static struct migr_switch_report resume_rep;
static int resume_ret = -1;

bool migr_parked(struct migr_switch_report *rep)
{
	bool ret;

	pthread_mutex_lock(&park_lock);
	ret = parked;
	if (ret && rep)
		*rep = park_rep;
	pthread_mutex_unlock(&park_lock);
	return ret;
}

/* The GIDs of the devices the contexts are on, kept for the resume */
static int read_tables(struct sw_set *set, struct migr_switch_report *rep)
{
	unsigned int i;
	int ret;

	for (i = 0; i < set->n; i++) {
		ret = migr_gid_table_read(set->ctx[i]->lower, &set->tables[i]);
		if (ret) {
			REPORT(rep, "reading the GIDs of %s failed: %s",
			       ibv_get_device_name(set->ctx[i]->lower->device),
			       strerror(ret));
			return ret;
		}
	}
	return 0;
}

/* What the devices wrote since the last pre-copy round: marked (mr_mark.c) */
static void mark_written_mrs(struct sw_set *set)
{
	struct migr_context *c;
	struct migr_mr *mmr;
	unsigned int i;

	for (i = 0; i < set->n; i++) {
		c = set->ctx[i];
		pthread_mutex_lock(&c->rec.lock);
		list_for_each (&c->rec.mrs, mmr, entry)
			migr_mr_mark_written(mmr);
		pthread_mutex_unlock(&c->rec.lock);
	}
}

int migr_park(struct migr_context **ctxs, unsigned int n, unsigned int wait_ms,
	      unsigned int lease_ms, struct migr_switch_report *rep)
{
	double t0 = now_ms();
	struct sw_set *set;
	int ret;

	if (migr_parked(NULL)) {
		memset(rep, 0, sizeof(*rep));
		REPORT(rep, "the process is parked already");
		return EALREADY;
	}
	if (!n) {
		memset(rep, 0, sizeof(*rep));
		REPORT(rep, "the process has no migr device open");
		return ENODEV;
	}
	set = migr_set_new(ctxs, n, rep);
	if (!set)
		return ENOMEM;
	set->lease_ms = lease_ms;
	ret = read_tables(set, rep);
	if (!ret)
		ret = migr_set_park(set, NULL, wait_ms, rep);
	if (!ret && (rep->device_fds || rep->device_maps)) {
		/* CRIU could not dump it: not parked, running as before */
		snprintf(
			rep->error, sizeof(rep->error),
			"the process holds %d device files and %d device mappings outside migr",
			rep->device_fds, rep->device_maps);
		migr_set_unpark(set, rep);
		ret = EBUSY;
	}
	if (!ret)
		mark_written_mrs(set);
	rep->ms_total = now_ms() - t0;
	if (ret) {
		migr_set_done(set);
		verbs_err(&ctxs[0]->vctx, "park failed: %s\n", rep->error);
		return ret;
	}
	pthread_mutex_lock(&park_lock);
	parked = set;
	park_rep = *rep;
	resume_ret = -1;
	pthread_mutex_unlock(&park_lock);
	verbs_info(
		&ctxs[0]->vctx,
		"parked on %s: %u contexts, %u QPs, no device held, %.2f ms (suspend %.1f, drain %.1f, release %.1f)\n",
		rep->from, n, rep->qps, rep->ms_total, rep->ms_suspend,
		rep->ms_drain, rep->ms_release);
	return 0;
}

/*
 * Match the GIDs the contexts used on the device they left with those of
 * the device named target, at the same port and index
 */
static int retarget(struct sw_set *set, const char *target,
		    struct migr_switch_report *rep)
{
	struct ibv_context *to = migr_open_by_name(target, rep);
	unsigned int i, q;
	int ret = 0;

	if (!to)
		return ENODEV;
	for (i = 0; i < set->n && !ret; i++) {
		struct migr_gid_move *g = &set->gids[i];

		for (q = 0; q < g->n && !ret; q++) {
			if (ibv_query_gid(to, g->e[q].port, g->e[q].index,
					  &g->e[q].to)) {
				REPORT(rep,
				       "GID index %u of port %u missing on %s",
				       g->e[q].index, g->e[q].port, target);
				ret = ENOENT;
			}
		}
		if (!ret)
			ret = migr_gid_table_moves(&set->tables[i], to,
						   &set->moves[i]);
	}
	ibv_close_device(to);
	return ret;
}

int migr_resume(const char *target, uint64_t token,
		struct migr_switch_report *rep)
{
	double t0 = now_ms();
	struct sw_set *set;
	unsigned int i;
	int ret;

	pthread_mutex_lock(&park_lock);
	set = parked;
	if (set)
		*rep = park_rep;
	else if (resume_ret >= 0)
		*rep = resume_rep;
	ret = resume_ret;
	pthread_mutex_unlock(&park_lock);
	if (!set && ret >= 0)
		return ret;
	if (!set) {
		memset(rep, 0, sizeof(*rep));
		REPORT(rep, "the process is not parked");
		return ENOENT;
	}
	rep->error[0] = rep->partner_error[0] = 0;
	rep->ms_rebuild = rep->ms_replay = rep->ms_partner = 0;
	rep->ms_partner_held = 0;
	snprintf(rep->to, sizeof(rep->to), "%s", target ? target : rep->from);
	ret = retarget(set, rep->to, rep);
	set->no_way_back = true;
	set->way_back = !target;
	for (i = 0; i < set->n; i++)
		set->ctx[i]->numbers.token = token;
	if (!ret)
		ret = migr_set_unpark(set, rep);
	for (i = 0; i < set->n; i++)
		set->ctx[i]->numbers.token = 0;
	rep->ms_total = now_ms() - t0;
	if (ret == EIO || ret == ENODEV || ret == ENOENT) {
		/* Nothing runs on a device: still parked, as before the try */
		if (ret == EIO)
			for (i = 0; i < set->n; i++)
				pthread_rwlock_wrlock(&set->ctx[i]->ev_lock);
		verbs_err(&set->ctx[0]->vctx, "resume on %s failed: %s\n",
			  rep->to, rep->error);
		return ret;
	}
	pthread_mutex_lock(&park_lock);
	parked = NULL;
	resume_rep = *rep;
	resume_ret = ret;
	pthread_mutex_unlock(&park_lock);
	verbs_info(&set->ctx[0]->vctx, "resumed on %s%s: %.2f ms\n", rep->to,
		   rep->rolled_back ? " (rolled back)" : "", rep->ms_total);
	migr_set_done(set);
	return ret;
}
