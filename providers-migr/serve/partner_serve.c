// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner's side (partner.h): one "partner OP ..." line from migrd,
 * its QPs found, their contexts' control paths held, the step run on
 * them from a table (partner_follow.c, partner_keys.c, faces here) and
 * one JSON line back, a result per QP.
 *
 * Every step holds the process's list of contexts (against a switch of
 * this process: then it answers busy) and the context's ctl_lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contexts.h"
#include "migr_json.h"
#include "partner.h"
#include "partner_line.h"
#include "partner_serve.h"
#include "verbs.h"

#define LOCK_MS 300

/* A refusal: its reason escaped, so no text can add keys to the reply */
void migr_pserve_error(struct serve_entry *e, bool notmine, const char *fmt,
		       ...)
{
	char msg[512], esc[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	migr_json_str_buf(esc, sizeof(esc), msg);
	e->ok = false;
	e->notmine = notmine;
	snprintf(e->res, sizeof(e->res), "{\"ok\":false,%s\"error\":%s}",
		 notmine ? "\"notmine\":true," : "", esc);
}

/*
 * Virtual numbers repeat across processes: a QP is the one named only if
 * it faces the asker's QP by its virtual number and, as it is now, its
 * physical one, and (prepare, faces) it is the lower QP the asker's QP is
 * connected to. Else it answers notmine.
 */
bool migr_pserve_faces_other(struct serve_entry *e, uint32_t peer_qpn,
			     uint32_t peer_phys, uint32_t partner_phys)
{
	const struct migr_qp *mqp = e->mqp;

	if (mqp->attr.dest_qp_num == peer_qpn &&
	    mqp->partner.dest_phys == peer_phys &&
	    (!partner_phys ||
	     (mqp->lower && mqp->lower->qp_num == partner_phys)))
		return false;
	/*
	 * The numbers it faces are for this process's log only: a refusal
	 * that named them would tell the asker what to say next time
	 */
	verbs_debug(
		&e->ctx->vctx,
		"partner: QP 0x%x faces QP 0x%x (0x%x now), not 0x%x (0x%x)\n",
		mqp->vqp.qp.qp_num, mqp->attr.dest_qp_num,
		mqp->partner.dest_phys, peer_qpn, peer_phys);
	NOT_MINE(e, "QP 0x%x here faces another QP", e->qpn);
	return true;
}

/*
 * Which QP its QP faces, as the kernel numbers it, and on which GID: migrd
 * checks that the process asking for a switch owns that QP before it
 * relays a prepare from it. Touches nothing, opens no session.
 */
static void do_faces(struct serve_entry *e)
{
	struct migr_qp *mqp = e->mqp;
	struct prepare_args a;
	char hex[33];

	/* The prepare's arguments: is it the asker's QP this one faces? */
	if (!migr_pserve_read_prepare(e->entry, e->args, &a)) {
		FAILED(e, "bad faces request");
		return;
	}
	if (migr_pserve_faces_other(e, a.peer_qpn, a.peer_phys, a.partner_phys))
		return;

	if (e->ctx->switch_active || !mqp->lower) {
		e->busy = true;
		FAILED(e, "switching itself");
		return;
	}
	if (mqp->attr.qp_state < IBV_QPS_RTR ||
	    mqp->attr.qp_state > IBV_QPS_SQD || !mqp->attr.ah_attr.is_global) {
		FAILED(e, "QP 0x%x is not connected over a GID", e->qpn);
		return;
	}
	migr_gid_hex(&mqp->attr.ah_attr.grh.dgid, hex);
	RESULT(e, true, "{\"ok\":true,\"peer_phys\":%u,\"peer_gid\":\"%s\"}",
	       mqp->partner.dest_phys, hex);
}

static void serve_faces(struct serve_entry *v, unsigned int n,
			const char *pairs, const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i].mqp)
			do_faces(&v[i]);
}

/* The context's control path, for writing; briefly, or not at all */
bool migr_ctl_lock_briefly(struct migr_context *ctx)
{
	unsigned int i;

	for (i = 0; i < LOCK_MS; i++) {
		if (!pthread_rwlock_trywrlock(&ctx->ctl_lock))
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * The line as partner_line.c reads it (migrd reads it so too), its entries
 * and the keys' pairs cut at " . " in copy, the copy of line pl points in
 */
static unsigned int split(const struct pline *pl, char *copy, const char *line,
			  struct serve_entry *v, char **pairs)
{
	struct pserve_cut c;
	unsigned int i, n = migr_pserve_cut(pl, copy, line, &c);

	if (c.pairs)
		*pairs = c.pairs;
	for (i = 0; i < n; i++) {
		v[i].qpn = pl->qpn[i];
		v[i].entry = c.entry[i];
		v[i].args = c.args[i];
	}
	return n;
}

/* Lock the control path of every context the entries are in, once */
static bool lock_ctxs(struct serve_entry *v, unsigned int n,
		      struct migr_context **locked, unsigned int *nlocked)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		if (!v[i].ctx)
			continue;
		for (j = 0; j < *nlocked && locked[j] != v[i].ctx; j++)
			;
		if (j < *nlocked)
			continue;
		if (!migr_ctl_lock_briefly(v[i].ctx))
			return false;
		locked[(*nlocked)++] = v[i].ctx;
	}
	return true;
}

static void reply(FILE *out, struct serve_entry *v, unsigned int n)
{
	bool ok = n > 0, notmine = n > 0, busy = false;
	const char *err = NULL;
	unsigned int i;

	for (i = 0; i < n; i++) {
		ok &= v[i].ok;
		notmine &= v[i].notmine;
		busy |= v[i].busy;
		if (!v[i].ok && !err)
			err = strstr(v[i].res, "\"error\":");
	}
	fprintf(out, "{\"ok\":%s%s%s", ok ? "true" : "false",
		notmine ? ",\"notmine\":true" : "",
		busy ? ",\"busy\":true" : "");
	if (err) {
		const char *end = strrchr(err, '}');

		fprintf(out, ",%.*s", (int)(end - err), err);
	}
	fprintf(out, ",\"results\":[");
	for (i = 0; i < n; i++) {
		uint32_t phys = v[i].mqp && v[i].mqp->lower ?
					v[i].mqp->lower->qp_num :
					v[i].phys;

		/* the lower QP it holds, for migrd to check with the kernel */
		if (!v[i].notmine && phys && v[i].res[0] == '{')
			fprintf(out, "%s{\"phys\":%u,%s", i ? "," : "", phys,
				v[i].res + 1);
		else
			fprintf(out, "%s%s", i ? "," : "", v[i].res);
	}
	fprintf(out, "]}\n");
}

#define MAX_ENTRIES PLINE_QPS_MAX

/* What each step does with the entries it found; need_sess: a prepare's */
static const struct {
	migr_pserve_step *fn;
	bool need_sess;
} steps[] = {
	[PLINE_PREPARE] = { migr_pserve_prepare, false },
	[PLINE_FACES] = { serve_faces, false },
	[PLINE_FETCH] = { migr_pserve_fetch, false },
	[PLINE_GIVE] = { migr_pserve_give, false },
	[PLINE_SUSPEND] = { migr_pserve_suspend, true },
	[PLINE_RECONNECT] = { migr_pserve_reconnect, true },
	[PLINE_RECVS] = { migr_pserve_recvs, true },
	[PLINE_KEYS] = { migr_pserve_keys, true },
	[PLINE_RESUME] = { migr_pserve_end, true },
	[PLINE_ABORT] = { migr_pserve_end, true },
};

/*
 * Each entry's QP found again, its control path held (the application may
 * have destroyed it), its session's lease renewed; a step that needs a
 * session answers for those that have none
 */
static void find_again(struct serve_entry *v, unsigned int n,
		       const union ibv_gid *gid, enum pline_step step)
{
	struct migr_context *c2;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct serve_entry *e = &v[i];

		if (e->ctx)
			e->mqp = migr_contexts_find_qp(e->qpn, gid, &c2);
		if (!e->ctx) {
			NOT_MINE(e, "no QP 0x%x here", e->qpn);
			continue;
		}
		if (!e->mqp || c2 != e->ctx) {
			e->mqp = NULL;
			FAILED(e, "QP 0x%x was destroyed", e->qpn);
			continue;
		}
		if (e->mqp->lower)
			e->phys = e->mqp->lower->qp_num;
		e->s = migr_psess_find(e->ctx, e->qpn);
		if (e->s)
			migr_psess_renew(e->s, 0);
		if (steps[step].need_sess && !e->s) {
			e->mqp = NULL;
			if (step == PLINE_ABORT)
				RESULT(e, true, "{\"ok\":true,\"ended\":true}");
			else
				FAILED(e,
				       "QP 0x%x has no partner session (it ended)",
				       e->qpn);
		}
	}
}

/*
 * "OP GID QPN ARGS [. QPN ARGS]...", or for keys "keys GID PAIRS . QPN
 * [. QPN]...": every QP named has GID. Answered with one JSON line, a
 * result per QP in order.
 */
void migr_partner_serve(FILE *out, const char *line)
{
	struct migr_context *locked[MAX_ENTRIES];
	char *copy, *pairs = NULL, why[128];
	unsigned int i, n, nlocked = 0;
	struct serve_entry *v;
	union ibv_gid gid;
	struct pline pl;

	copy = strdup(line);
	v = calloc(MAX_ENTRIES, sizeof(*v));
	if (!copy || !v) {
		fprintf(out, "{\"ok\":false,\"error\":\"out of memory\"}\n");
		goto out_free;
	}
	if (pline_parse(line, NULL, &pl, why, sizeof(why)) ||
	    pl.step >= sizeof(steps) / sizeof(steps[0]) || !steps[pl.step].fn ||
	    migr_gid_parse(pl.gid, &gid)) {
		fprintf(out,
			"{\"ok\":false,\"error\":\"bad partner request\"}\n");
		goto out_free;
	}
	n = split(&pl, copy, line, v, &pairs);
	if (!migr_contexts_lock_within(LOCK_MS)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"switching itself\"}\n");
		goto out_free;
	}
	for (i = 0; i < n; i++)
		v[i].mqp = migr_contexts_find_qp(v[i].qpn, &gid, &v[i].ctx);
	if (!lock_ctxs(v, n, locked, &nlocked)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"its control path is busy\"}\n");
		goto out_unlock;
	}
	find_again(v, n, &gid, pl.step);
	steps[pl.step].fn(v, n, pairs, &gid);
	reply(out, v, n);
out_unlock:
	for (i = 0; i < nlocked; i++)
		pthread_rwlock_unlock(&locked[i]->ctl_lock);
	migr_contexts_unlock();
out_free:
	free(copy);
	free(v);
}
