// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What the control socket does for each request (control_ops.h): the
 * handlers control.c's table names, each writing its one JSON line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "contexts.h"
#include "control_ops.h"
#include "fence.h"
#include "migr_json.h"
#include "park.h"
#include "partner.h"
#include "switch.h"
#include "ud_serve.h"
#include "verbs.h"

static void json_report(FILE *out, const char *dev, int ret,
			const struct migr_switch_report *r)
{
	/* Names and reasons are text from elsewhere: escaped, never raw */
	fputs("{\"device\":", out);
	migr_json_str(out, dev);
	fprintf(out, ",\"contexts\":%u,\"ok\":%s,\"error\":", r->contexts,
		ret ? "false" : "true");
	migr_json_str(out, r->error);
	fputs(",\"partner_error\":", out);
	migr_json_str(out, r->partner_error);
	fputs(",\"from\":", out);
	migr_json_str(out, r->from);
	fputs(",\"to\":", out);
	migr_json_str(out, r->to);
	fprintf(out,
		",\"rolled_back\":%s,\"phases_ms\":{\"suspend\":%.3f,\"drain\":%.3f,"
		"\"release\":%.3f,\"rebuild\":%.3f,\"partner_reconnect\":%.3f,\"replay\":%.3f},\"total_ms\":%.3f,"
		"\"partner_held_ms\":%.1f,\"partners\":%u,\"partners_kept\":%u,\"retries\":%u,"
		"\"numbers\":{\"kept\":%u,\"translated\":%u,\"claimed\":%u},"
		"\"objects\":{\"pds\":%u,\"dms\":%u,\"mrs\":%u,\"mws\":%u,\"channels\":%u,\"cqs\":%u,\"srqs\":%u,\"qps\":%u,\"ahs\":%u},"
		"\"held_wrs\":%u,\"replayed_wrs\":%u,\"partner_replayed_wrs\":%u,\"reposted_recvs\":%u,\"flushed\":%u,\"shadowed\":%u,\"lost\":%u,"
		"\"device_fds_after_release\":%d,\"device_maps_after_release\":%d}",
		r->rolled_back ? "true" : "false", r->ms_suspend, r->ms_drain,
		r->ms_release, r->ms_rebuild, r->ms_partner, r->ms_replay,
		r->ms_total, r->ms_partner_held, r->partners, r->partners_kept,
		r->retries, r->numbers_kept, r->numbers_translated,
		r->numbers_claimed, r->pds, r->dms, r->mrs, r->mws, r->channels,
		r->cqs, r->srqs, r->qps, r->ahs, r->held_wrs, r->replayed_wrs,
		r->partner_replayed_wrs, r->reposted_recvs, r->flushed,
		r->shadowed, r->lost, r->device_fds, r->device_maps);
}

/* One try of a switch (or a park) of all the process's contexts */
static int switch_all(const char *target, unsigned int wait_ms,
		      unsigned int lease_ms, struct migr_switch_report *rep,
		      char *dev, size_t len, bool park)
{
	struct migr_context **v;
	unsigned int n;
	int ret = ENOMEM;

	/* Every string of the report is printed, even where no try set it */
	memset(rep, 0, sizeof(*rep));
	migr_contexts_lock();
	n = migr_contexts_get(NULL, 0);
	v = calloc(n + 1, sizeof(*v));
	if (v)
		n = migr_contexts_get(v, n);
	if (v && park)
		ret = migr_park(v, n, wait_ms, lease_ms, rep);
	else if (v)
		ret = migr_switch(v, n, target, wait_ms, rep);
	else
		snprintf(rep->error, sizeof(rep->error), "out of memory");
	snprintf(dev, len, "%s",
		 v && n ? ibv_get_device_name(v[0]->vctx.context.device) : "");
	migr_contexts_unlock();
	free(v);
	return ret;
}

/*
 * All of the process's contexts move together: their QPs may be partners.
 * A partner busy with a switch of its own (two connected processes moved
 * at once) puts the switch off before anything was touched: try again
 * after a random pause with every lock let go, so one of the two goes
 * first, for at most BUSY_RETRY_MS.
 */
#define BUSY_RETRY_MS 30000
static void do_switch(FILE *out, const char *target, unsigned int wait_ms)
{
	unsigned int seed = getpid() ^ (unsigned int)time(NULL), tries = 0;
	struct migr_switch_report rep;
	char dev[IBV_SYSFS_NAME_MAX];
	double t0 = now_ms();
	int ret;

	if (migr_parked(NULL)) {
		fprintf(out,
			"{\"pid\":%d,\"ok\":false,\"error\":\"the process is parked for a migration: resume it first\"}\n",
			getpid());
		return;
	}
	for (;;) {
		ret = switch_all(target, wait_ms, 0, &rep, dev, sizeof(dev),
				 false);
		if (ret != EBUSY || now_ms() - t0 > BUSY_RETRY_MS)
			break;
		tries++;
		usleep(50000 + rand_r(&seed) % 500000);
	}
	rep.retries = tries;
	fprintf(out, "{\"pid\":%d,\"switch\":[", getpid());
	json_report(out, dev, ret, &rep);
	fprintf(out, "],\"ok\":%s}\n", ret ? "false" : "true");
}

/* park [wait_ms [lease_ms]]: the switch's first half, kept (park.h) */
static void do_park(FILE *out, unsigned int wait_ms, unsigned int lease_ms)
{
	struct migr_switch_report rep;
	char dev[IBV_SYSFS_NAME_MAX];
	int ret;

	ret = switch_all(NULL, wait_ms, lease_ms, &rep, dev, sizeof(dev), true);
	fprintf(out, "{\"pid\":%d,\"park\":[", getpid());
	json_report(out, dev, ret, &rep);
	fprintf(out, "],\"ok\":%s}\n", ret ? "false" : "true");
}

/* A restored process tells the migrd of the host it now runs on */
static void register_all(void)
{
	struct migr_context *v[64];
	unsigned int i, n;

	migr_contexts_lock();
	n = migr_contexts_get(v, 64);
	for (i = 0; i < n; i++)
		migr_register(v[i]);
	migr_contexts_unlock();
}

/* resume [device [token]]: its second half, here or on the device it left */
static void do_resume(FILE *out, const char *target, uint64_t token)
{
	struct migr_switch_report rep;
	int ret;

	ret = migr_resume(target, token, &rep);
	if (!ret)
		register_all();
	fprintf(out, "{\"pid\":%d,\"resume\":[", getpid());
	json_report(out, rep.to, ret, &rep);
	fprintf(out, "],\"ok\":%s}\n", ret ? "false" : "true");
}

/*
 * A parked process's contexts are not read: the mover holds their locks,
 * and nothing in them changes until the resume
 */
static bool status_parked(FILE *out)
{
	struct migr_switch_report rep;

	if (!migr_parked(&rep))
		return false;
	fprintf(out, "{\"pid\":%d,\"parked\":{\"from\":", getpid());
	migr_json_str(out, rep.from);
	fprintf(out, ",\"contexts\":%u,\"qps\":%u},\"contexts\":[]}\n",
		rep.contexts, rep.qps);
	return true;
}

/*
 * Closes the QP list with ctx's MRs and memory windows: the key the
 * application knows and the device's (equal unless translated). rec.lock
 * held.
 */
static void status_keys(FILE *out, struct migr_context *ctx)
{
	struct migr_mr *mmr;
	struct migr_mw *mmw;
	bool first = true;

	fputs("],\"mrs\":[", out);
	list_for_each (&ctx->rec.mrs, mmr, entry) {
		fprintf(out, "%s{\"lkey\":%u,\"phys\":%u}", first ? "" : ",",
			mmr->vmr.ibv_mr.lkey,
			mmr->lower ? mmr->lower->lkey : 0);
		first = false;
	}
	fputs("],\"mws\":[", out);
	first = true;
	list_for_each (&ctx->rec.mws, mmw, entry) {
		fprintf(out, "%s{\"rkey\":%u,\"phys\":%u}", first ? "" : ",",
			mmw->mw.rkey, mmw->lower ? mmw->lower->rkey : 0);
		first = false;
	}
	fputs("]", out);
}

static void do_status(FILE *out)
{
	struct migr_context *ctx, **v;
	unsigned int i, n;
	bool first = true;

	if (status_parked(out))
		return;
	fprintf(out, "{\"pid\":%d,\"contexts\":[", getpid());
	migr_contexts_lock();
	n = migr_contexts_get(NULL, 0);
	v = calloc(n + 1, sizeof(*v));
	n = v ? migr_contexts_get(v, n) : 0;
	for (i = 0; i < n; i++) {
		struct migr_qp *mqp;
		bool qfirst = true;

		const char *blocker;

		ctx = v[i];
		pthread_rwlock_rdlock(&ctx->ctl_lock);
		blocker = migr_record_blocker(ctx);
		fprintf(out, "%s{\"device\":", first ? "" : ",");
		migr_json_str(out,
			      ibv_get_device_name(ctx->vctx.context.device));
		fputs(",\"lower\":", out);
		migr_json_str(out, ctx->lower ? ibv_get_device_name(
							ctx->lower->device) :
						"");
		fprintf(out, ",\"switches\":%u,\"blocker\":", ctx->switches);
		migr_json_str(out, blocker ? blocker : "");
		fputs(",\"qps\":[", out);
		pthread_mutex_lock(&ctx->rec.lock);
		list_for_each (&ctx->rec.qps, mqp, entry) {
			fprintf(out,
				"%s{\"qpn\":%u,\"phys\":%u,\"state\":%d,\"dest_qpn\":%u,\"self\":%s}",
				qfirst ? "" : ",", mqp->vqp.qp.qp_num,
				mqp->lower ? mqp->lower->qp_num : 0,
				mqp->attr.qp_state, mqp->attr.dest_qp_num,
				mqp->self ? "true" : "false");
			qfirst = false;
		}
		status_keys(out, ctx);
		pthread_mutex_unlock(&ctx->rec.lock);
		fprintf(out,
			",\"numbers\":{\"can_ask\":%s,\"kept\":%u,\"moved\":%u,\"claimed\":%u},\"translating\":%s",
			ctx->numbers.can_ask ? "true" : "false",
			ctx->numbers.kept, ctx->numbers.moved,
			ctx->numbers.claimed,
			ctx->xlate.active ? "true" : "false");
		pthread_rwlock_unlock(&ctx->ctl_lock);
		fprintf(out, "}");
		first = false;
	}
	migr_contexts_unlock();
	free(v);
	fprintf(out, "]}\n");
}

void ctl_do_status(FILE *out, const struct ctl_req *q)
{
	do_status(out);
}

void ctl_do_switch(FILE *out, const struct ctl_req *q)
{
	do_switch(out, q->op == CTL_REBUILD ? NULL : q->dev, q->wait_ms);
}

void ctl_do_park(FILE *out, const struct ctl_req *q)
{
	do_park(out, q->wait_ms, q->lease_ms);
}

void ctl_do_resume(FILE *out, const struct ctl_req *q)
{
	do_resume(out, q->nargs ? q->dev : NULL, q->token);
}

void ctl_do_fence(FILE *out, const struct ctl_req *q)
{
	migr_fence_arm(q->wait_ms);
	fprintf(out, "{\"pid\":%d,\"ok\":true,\"fence_ms\":%u}\n", getpid(),
		q->wait_ms);
}

void ctl_do_commit(FILE *out, const struct ctl_req *q)
{
	if (migr_fence_commit())
		fprintf(out, "{\"pid\":%d,\"ok\":true}\n", getpid());
	else
		fprintf(out,
			"{\"pid\":%d,\"ok\":false,\"error\":\"no fence to commit\"}\n",
			getpid());
}

void ctl_do_partner(FILE *out, const struct ctl_req *q)
{
	migr_partner_serve(out, q->line);
}

/* The UD relay's lines run where partners' do: one at a time */
void ctl_do_ud(FILE *out, const struct ctl_req *q)
{
	migr_ud_serve(out, q->line);
}
