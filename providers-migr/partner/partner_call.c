// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The moving side of the partner protocol (partner.h): one request line to
 * this host's migrd per step, which relays it to the partner's host and
 * process and answers with one JSON line. The library never holds migrd's
 * key; without migrd a partner in another process cannot be reached and
 * the switch is refused before anything is touched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "marker.h"
#include "migrd_call.h"
#include "partner.h"
#include "peer.h"
#include "replay.h"
#include "verbs.h"

#define CALL_TIMEOUT_S 45
#define REPLY_MAX 8192
/* QPs of one partner process per request, and the request's length
 * (migrd takes at most 3800 bytes after its own words) */
#define MAX_BATCH 24
#define LINE_MAX_LEN 3700
/* rkey pairs per "keys" request: well under migrd's line limit */
#define KEYS_PER_LINE 160
/* A connect waits this long at most for what its peer says (fetch) */
#define FETCH_TIMEOUT_S 3
/* ... and asks a host it waited on in vain again only after this */
#define FETCH_QUIET_MS 60000
#define FETCH_QUIET_HOSTS 16

/* Send one request line to migrd; its JSON reply in reply */
static int migrd_call(const char *line, size_t len, const struct migr_qp *mqp,
		      unsigned int timeout_s, char *reply, char *err,
		      size_t errlen)
{
	const char *path;
	int ret;

	ret = migr_migrd_call(line, len, timeout_s ? timeout_s : CALL_TIMEOUT_S,
			      reply, REPLY_MAX, &path);
	if (ret == EHOSTUNREACH)
		snprintf(
			err, errlen,
			"migrd is not running (%s: %s); QP 0x%x has its partner in another process, which only migrd can reach",
			path, strerror(errno), mqp->vqp.qp.qp_num);
	else if (ret)
		snprintf(err, errlen, "no answer from migrd: %s",
			 strerror(ret));
	return ret;
}

/*
 * migrd's reason for a refusal, else its process's (a reply without a
 * result per QP)
 */
static void reply_error(const json_t *rep, char *err, size_t errlen)
{
	if (json_is_string(json_object_get(rep, "error")))
		migr_json_error(rep, err, errlen);
	else
		migr_json_error(json_object_get(rep, "reply"), err, errlen);
}

/* What a step sends per QP, and takes from its answer */
struct step {
	const char *op;
	const char *head; /* keys: the pairs, before the QPs */
	int (*args)(struct migr_partner *p, char *buf, size_t len, void *arg);
	int (*take)(struct migr_partner *p, const json_t *res, void *arg,
		    char *err, size_t errlen);
	void *arg;
	bool prepare; /* QPs a process disowns are looked for elsewhere */
	bool only_prepared; /* resume, abort: partners that said yes */
	unsigned int timeout_s; /* 0: CALL_TIMEOUT_S */
};

static void fail_reason(struct migr_partner *p, const char *step, char *err,
			size_t errlen)
{
	char why[256], pid[24] = "";

	snprintf(why, sizeof(why), "%s", err);
	/* its pid once a reply named it: the operator finds it by that */
	if (p->pid)
		snprintf(pid, sizeof(pid), ", pid %d", p->pid);
	snprintf(err, errlen, "partner of QP 0x%x (QP 0x%x at %s%s): %s: %s",
		 p->mqp->vqp.qp.qp_num, p->qpn, p->host, pid, step, why);
}

static bool same_group(const struct migr_partner *a,
		       const struct migr_partner *b)
{
	return a->pid == b->pid && !strcmp(a->host, b->host) &&
	       !memcmp(&a->gid, &b->gid, sizeof(a->gid));
}

/*
 * One request for up to MAX_BATCH QPs of one partner process (same host,
 * pid and GID), starting at v[first]; done[] marks the QPs answered.
 * Returns how many were answered, or -errno with err set.
 */
static int batch(struct migr_partner *v, unsigned int n, unsigned int first,
		 bool *done, const struct step *st, char *err, size_t errlen)
{
	struct migr_partner *p0 = &v[first];
	unsigned int idx[MAX_BATCH], k = 0, i;
	/* args: a give's carry a chunk of rkeys (KEYS_PER_LINE pairs) */
	char line[LINE_MAX_LEN], gid[33], args[LINE_MAX_LEN], reply[REPLY_MAX];
	const json_t *proc, *results;
	int answered = 0, ret;
	uint64_t pid = 0;
	json_t *rep;
	size_t len;

	migr_gid_hex(&p0->gid, gid);
	len = snprintf(line, sizeof(line), "migrd/1 partner %s %d %u %s %s %s",
		       p0->host, p0->pid, p0->qpn, gid, st->op, gid);
	if (st->head)
		len += snprintf(line + len, sizeof(line) - len, " %s .",
				st->head);
	for (i = first; i < n && k < MAX_BATCH; i++) {
		if (done[i] || !same_group(p0, &v[i]))
			continue;
		args[0] = 0;
		if (st->args) {
			ret = st->args(&v[i], args, sizeof(args), st->arg);
			if (ret) {
				snprintf(err, errlen, "%s", strerror(ret));
				fail_reason(&v[i], st->op, err, errlen);
				return -ret;
			}
		}
		if (len + 16 + strlen(args) + 2 >= sizeof(line))
			break;
		len += snprintf(line + len, sizeof(line) - len, "%s %u%s%s",
				k ? " ." : "", v[i].qpn, args[0] ? " " : "",
				args);
		idx[k++] = i;
	}
	if (!k)
		return 0;
	line[len++] = '\n';
	ret = migrd_call(line, len, p0->mqp, st->timeout_s, reply, err, errlen);
	if (ret) {
		fail_reason(p0, st->op, err, errlen);
		return -ret;
	}
	/* migrd's verdict and pid; its process's reply, whole, in "reply" */
	rep = migr_json_parse(reply, strcspn(reply, "\n"));
	if (!rep) {
		snprintf(err, errlen, "migrd's reply is not a JSON object");
		fail_reason(p0, st->op, err, errlen);
		return -EPROTO;
	}
	proc = json_object_get(rep, "reply");
	migr_json_u64(rep, "pid", &pid);
	if (migr_json_true(proc, "busy")) {
		reply_error(rep, err, errlen);
		answered = -EBUSY;
		goto out;
	}
	results = json_object_get(proc, "results");
	for (i = 0; i < k; i++) {
		struct migr_partner *p = &v[idx[i]];
		const json_t *res = json_array_get(results, i);

		if (!json_is_object(res)) {
			/* no answer per QP: migrd's or the process's refusal */
			reply_error(rep, err, errlen);
			fail_reason(p, st->op, err, errlen);
			answered = migr_json_true(rep, "ok") ? -EPROTO :
							       -EREMOTEIO;
			goto out;
		}
		if (st->prepare && migr_json_true(res, "notmine")) {
			/* why its holder disowns it, if nobody else owns it */
			if (idx[i] == first)
				migr_json_error(res, err, errlen);
			continue;
		}
		if (!migr_json_true(res, "ok")) {
			migr_json_error(res, err, errlen);
			fail_reason(p, st->op, err, errlen);
			answered = -EREMOTEIO;
			goto out;
		}
		if (pid)
			p->pid = pid;
		if (st->take) {
			ret = st->take(p, res, st->arg, err, errlen);
			if (ret) {
				fail_reason(p, st->op, err, errlen);
				answered = -ret;
				goto out;
			}
		}
		done[idx[i]] = true;
		answered++;
	}
out:
	json_decref(rep);
	return answered;
}

/*
 * A step for every partner in v[] (those st->args accepts), one request
 * per partner process and MAX_BATCH QPs. 0, EBUSY, or an errno with err.
 */
static int run_step(struct migr_partner *v, unsigned int n,
		    const struct step *st, char *err, size_t errlen)
{
	bool *done = calloc(n + 1, sizeof(*done));
	unsigned int i;
	int ret = 0;

	if (!done) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	for (i = 0; i < n; i++)
		done[i] = st->only_prepared && !v[i].prepared;
	for (i = 0; i < n && !ret;) {
		int got;

		if (done[i]) {
			i++;
			continue;
		}
		err[0] = 0;
		got = batch(v, n, i, done, st, err, errlen);
		if (got < 0)
			ret = -got;
		else if (!got && !done[i]) {
			char why[256];

			/* nobody here owns it after all: say so, and why */
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "no process owns it%s%s%s",
				 why[0] ? " (" : "", why, why[0] ? ")" : "");
			fail_reason(&v[i], st->op, err, errlen);
			ret = ENOENT;
		}
	}
	free(done);
	return ret;
}

/*
 * run_step(), again every 100 ms up to tries times while a partner answers
 * busy: one busy with its own switch lets go of its lock soon
 */
static int run_step_patient(struct migr_partner *v, unsigned int n,
			    const struct step *st, unsigned int tries,
			    char *err, size_t errlen)
{
	int ret;

	while ((ret = run_step(v, n, st, err, errlen)) == EBUSY && --tries)
		usleep(100000);
	return ret;
}

int migr_partner_init(struct migr_partner *p, struct migr_qp *mqp, char *err,
		      size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->mqp = mqp;
	p->qpn = mqp->attr.dest_qp_num;
	p->gid = mqp->attr.ah_attr.grh.dgid;
	if (!mqp->attr.ah_attr.is_global ||
	    migr_gid_host(&p->gid, p->host, sizeof(p->host))) {
		snprintf(
			err, errlen,
			"QP 0x%x: its partner is in another process but has no routable GID (RoCE v2 with an IP address is needed to find it)",
			mqp->vqp.qp.qp_num);
		return EOPNOTSUPP;
	}
	return 0;
}

static int prepare_args(struct migr_partner *p, char *buf, size_t len,
			void *arg)
{
	struct migr_marker_target t;
	int ret;

	/* Where the partner's marker lands in our QP */
	ret = migr_marker_target(p->mqp, &t);
	if (ret)
		return ret;
	/* its lower QP as ours is connected to it: migrd checks its claim */
	snprintf(buf, len, "%u %u %d %x %" PRIx64 " %u %016" PRIx64 " %u",
		 p->mqp->vqp.qp.qp_num,
		 *(unsigned int *)arg, t.access, t.rkey,
		 t.addr, p->mqp->lower->qp_num, p->mqp->ctx->peers.id,
		 p->mqp->partner.dest_phys);
	return 0;
}

static int prepare_take(struct migr_partner *p, const json_t *res, void *arg,
			char *err, size_t errlen)
{
	uint64_t v, mkey, maddr;

	if (!migr_json_hex(res, "peer", &v) ||
	    !migr_json_hex(res, "mkey", &mkey) ||
	    !migr_json_hex(res, "maddr", &maddr)) {
		snprintf(err, errlen,
			 "its reply lacks its context or marker target");
		return EPROTO;
	}
	/* Its numbers and keys are its context's own: our QP keeps them apart */
	if (migr_peer_tie(p->mqp, v)) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	p->prepared = true;
	p->marker.access = migr_json_u64(res, "access", &v) ? (int)v : 0;
	p->marker.rkey = mkey;
	p->marker.addr = maddr;
	return 0;
}

int migr_partners_prepare(struct migr_partner *v, unsigned int n,
			  unsigned int lease_ms, char *err, size_t errlen)
{
	struct step st = { .op = "prepare",
			   .args = prepare_args,
			   .take = prepare_take,
			   .arg = &lease_ms,
			   .prepare = true };

	return run_step(v, n, &st, err, errlen);
}

static int suspend_args(struct migr_partner *p, char *buf, size_t len,
			void *arg)
{
	snprintf(buf, len, "%u", *(unsigned int *)arg);
	return 0;
}

static int suspend_take(struct migr_partner *p, const json_t *res, void *arg,
			char *err, size_t errlen)
{
	if (!migr_json_u64(res, "consumers", &p->consumers)) {
		snprintf(err, errlen, "no send count in its reply");
		return EPROTO;
	}
	p->suspended = true;
	p->undrained = migr_json_true(res, "undrained");
	p->replay_consumers = 0;
	return 0;
}

int migr_partners_suspend(struct migr_partner *v, unsigned int n,
			  unsigned int wait_ms, char *err, size_t errlen)
{
	struct step st = { .op = "suspend",
			   .args = suspend_args,
			   .take = suspend_take,
			   .arg = &wait_ms };

	return run_step(v, n, &st, err, errlen);
}

/* What our QP facing it received: for its own decision, if undrained */
static int recvs_args(struct migr_partner *p, char *buf, size_t len, void *arg)
{
	struct migr_replay_peer me;

	migr_replay_peer_of(p->mqp, &me);
	snprintf(buf, len, "%d %" PRIu64 " %" PRIu64, me.counted, me.recvs,
		 me.posted);
	return 0;
}

static int recvs_take(struct migr_partner *p, const json_t *res, void *arg,
		      char *err, size_t errlen)
{
	if (!migr_json_u64(res, "recvs", &p->recvs) ||
	    !migr_json_u64(res, "posted", &p->recvs_posted)) {
		snprintf(err, errlen, "no RECV count in its reply");
		return EPROTO;
	}
	p->recvs_counted = migr_json_true(res, "counted");
	if (!p->undrained)
		return 0;
	if (!migr_json_true(res, "replay")) {
		migr_json_error(res, err, errlen);
		return EAGAIN;
	}
	if (!migr_json_u64(res, "replay_consumers", &p->replay_consumers)) {
		snprintf(err, errlen, "no replay count in its reply");
		return EPROTO;
	}
	return 0;
}

int migr_partners_recvs(struct migr_partner *v, unsigned int n, char *err,
			size_t errlen)
{
	struct step st = { .op = "recvs",
			   .args = recvs_args,
			   .take = recvs_take };

	return run_step(v, n, &st, err, errlen);
}

/* Our rkeys, virtual:physical, for the partners' contexts, in chunks */
static int push_keys(struct migr_partner *v, unsigned int n, char *err,
		     size_t errlen)
{
	struct migr_context *ctx = v[0].mqp->ctx;
	char pairs[KEYS_PER_LINE * 18 + 1];
	struct step st = { .op = "keys", .head = pairs };
	unsigned int start = 0, k;
	int ret;

	do {
		k = migr_rkey_pairs(ctx, start, KEYS_PER_LINE, pairs);
		if (!k)
			break;
		ret = run_step(v, n, &st, err, errlen);
		if (ret)
			return ret;
		start += k;
	} while (k == KEYS_PER_LINE);
	return 0;
}

static int reconnect_args(struct migr_partner *p, char *buf, size_t len,
			  void *arg)
{
	struct migr_qp *mqp = p->mqp;
	union ibv_gid ours;
	char gid[33];

	if (ibv_query_gid(mqp->ctx->lower, mqp->attr.ah_attr.port_num,
			  mqp->attr.ah_attr.grh.sgid_index, &ours))
		return ENOENT;
	migr_gid_hex(&ours, gid);
	/* the SENDs a replay posts again have not used its RECVs */
	snprintf(buf, len, "%u %s %" PRIu64, mqp->lower->qp_num, gid,
		 mqp->n_consumers - mqp->replay.consumers);
	return 0;
}

/*
 * The keys of the type 2 windows it bound again through its new QP, into
 * our replica of its tables: every QP of ours that uses the replica now
 * translates
 */
static int reconnect_keys(struct migr_partner *p, struct migr_xlate *x,
			  const json_t *res)
{
	const char *k = json_string_value(json_object_get(res, "keys")), *end;
	struct migr_qp *q;
	unsigned int n = 0;

	if (k && (migr_xlate_set_rkeys(x, k, &end, &n) || *end))
		return EPROTO;
	if (!n) {
		migr_qp_update_slow(p->mqp);
		return 0;
	}
	list_for_each (&p->mqp->ctx->rec.qps, q, entry)
		if (q->remote == x)
			migr_qp_update_slow(q);
	return 0;
}

/*
 * The PSNs its QP goes on from: ours is connected to send the one it
 * expects next and to expect the one it sends next. A partner that does
 * not say them reset its QP to the PSNs of the first connect, as ours is
 * by default (the record).
 */
static int take_psns(struct migr_partner *p, const json_t *res, char *err,
		     size_t errlen)
{
	uint64_t sq, rq;
	bool has_sq = migr_json_u64(res, "sq_psn", &sq),
	     has_rq = migr_json_u64(res, "rq_psn", &rq);

	if (!has_sq && !has_rq)
		return 0;
	if (!has_sq || !has_rq || sq >> 24 || rq >> 24) {
		snprintf(err, errlen, "bad PSNs in its reply");
		return EPROTO;
	}
	p->mqp->attr.sq_psn = rq;
	p->mqp->attr.rq_psn = sq;
	return 0;
}

static int reconnect_take(struct migr_partner *p, const json_t *res, void *arg,
			  char *err, size_t errlen)
{
	struct migr_xlate *x = p->mqp->remote;
	uint64_t v;
	int ret;

	if (!migr_json_u64(res, "qpn", &v) || !v || v >> 24) {
		snprintf(err, errlen, "no QP number in its reply");
		return EPROTO;
	}
	p->new_qpn = v;
	ret = take_psns(p, res, err, errlen);
	if (ret)
		return ret;
	/* Our QP connects to its new QP under the number we know it by */
	ret = migr_xlate_set(x, MIGR_XLATE_QPN_PHYS, p->qpn, p->new_qpn);
	if (!ret)
		ret = migr_xlate_set(x, MIGR_XLATE_QPN, p->new_qpn, p->qpn);
	if (!ret)
		ret = reconnect_keys(p, x, res);
	if (ret)
		snprintf(err, errlen,
			 "recording its new number or keys failed");
	return ret;
}

/* Partners of the contexts in v[] (grouped by context by the caller) */
int migr_partners_reconnect(struct migr_partner *v, unsigned int n, char *err,
			    size_t errlen)
{
	struct step st = { .op = "reconnect",
			   .args = reconnect_args,
			   .take = reconnect_take };
	unsigned int i, j;
	int ret;

	/* Keys per context of ours: a run of partners of one context */
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && v[j].mqp->ctx == v[i].mqp->ctx; j++)
			;
		ret = push_keys(v + i, j - i, err, errlen);
		if (ret)
			return ret;
	}
	return run_step(v, n, &st, err, errlen);
}

static int resume_take(struct migr_partner *p, const json_t *res, void *arg,
		       char *err, size_t errlen)
{
	p->prepared = p->suspended = false;
	/* a partner from before the count says nothing: none counted */
	if (!migr_json_u64(res, "replayed", &p->replayed))
		p->replayed = 0;
	p->held_ms = migr_json_num(res, "held_ms", 0);
	return 0;
}

int migr_partners_resume(struct migr_partner *v, unsigned int n, bool abort,
			 char *err, size_t errlen)
{
	struct step st = { .op = abort ? "abort" : "resume",
			   .take = resume_take,
			   .only_prepared = true };
	unsigned int i;
	int ret;

	if (!n)
		return 0;
	ret = run_step_patient(v, n, &st, 20, err, errlen);
	if (ret)
		verbs_err(&v[0].mqp->ctx->vctx, "partners did not %s: %s\n",
			  abort ? "abort" : "resume", err);
	for (i = 0; i < n; i++)
		v[i].prepared = v[i].suspended = false;
	return ret;
}

/* What a fetch asks for and what its peer answered */
struct fetch {
	uint32_t our_phys; /* our lower QP */
	uint64_t known; /* the generation of its tables we hold */
	bool probe; /* no keys: its QP, context and generation only */
	unsigned int from; /* its MR to start the keys at */
	struct migr_xlate *x; /* where keys go; NULL for a probe */
	/* its answer */
	uint32_t phys;
	uint64_t peer, gen;
	unsigned int next, nkeys;
	bool gid_moved; /* the GID asked at is one it had: gid replaced it */
	union ibv_gid gid;
	bool withheld; /* not connected to us yet: it gives them when it is */
};

static int fetch_args(struct migr_partner *p, char *buf, size_t len, void *arg)
{
	struct fetch *f = arg;
	char from[16] = "-";

	if (!f->probe)
		snprintf(from, sizeof(from), "%u", f->from);
	snprintf(buf, len, "%u %u %016" PRIx64 " %" PRIu64 " %s",
		 p->mqp->vqp.qp.qp_num, f->our_phys, p->mqp->ctx->peers.id,
		 f->known, from);
	return 0;
}

/* Its rkeys, "V:P,V:P,..." in hex, into our replica of its tables */
static int fetch_keys(struct fetch *f, const json_t *res)
{
	const char *p = json_string_value(json_object_get(res, "keys")), *end;
	unsigned int n;

	if (!p)
		return EPROTO;
	if (migr_xlate_set_rkeys(f->x, p, &end, &n))
		return ENOMEM;
	f->nkeys += n;
	return *end ? EPROTO : 0;
}

static int fetch_take(struct migr_partner *p, const json_t *res, void *arg,
		      char *err, size_t errlen)
{
	struct fetch *f = arg;
	uint64_t v, next;

	if (!migr_json_u64(res, "phys", &v) || !v || v >> 24 ||
	    !migr_json_hex(res, "peer", &f->peer) ||
	    !migr_json_u64(res, "gen", &f->gen) ||
	    !migr_json_u64(res, "next", &next) || next > UINT32_MAX) {
		snprintf(err, errlen, "its reply lacks its QP or context");
		return EPROTO;
	}
	f->phys = v;
	f->next = next;
	f->gid_moved = migr_json_gid(res, "gid", &f->gid);
	f->withheld = migr_json_true(res, "withheld");
	if (f->x && fetch_keys(f, res)) {
		snprintf(err, errlen, "its keys are malformed");
		return EPROTO;
	}
	return 0;
}

/* One fetch step, again while the peer is busy with a switch of its own */
static int fetch_step(struct migr_partner *p, struct fetch *f, char *err,
		      size_t errlen)
{
	struct step st = { .op = "fetch",
			   .args = fetch_args,
			   .take = fetch_take,
			   .arg = f,
			   .prepare = true,
			   .timeout_s = FETCH_TIMEOUT_S };

	return run_step_patient(p, 1, &st, 10, err, errlen);
}

/* The peer's QP is at phys: our replica of its tables says so (or not) */
static int replica_qpn(struct migr_xlate *x, uint32_t vqpn, uint32_t phys)
{
	uint32_t old = migr_remote_qpn_to_phys(x, vqpn);

	if (old != vqpn && old != phys)
		migr_xlate_forget(x, MIGR_XLATE_QPN, old);
	if (phys == vqpn) {
		migr_xlate_forget(x, MIGR_XLATE_QPN_PHYS, vqpn);
		return 0;
	}
	return migr_xlate_set(x, MIGR_XLATE_QPN_PHYS, vqpn, phys) ?:
		       migr_xlate_set(x, MIGR_XLATE_QPN, phys, vqpn);
}

/*
 * Hosts a fetch waited on in vain (no migrd there, a firewall, a dead
 * host): a process making many connections there must not wait each time.
 */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char host[64];
	double until;
} quiet[FETCH_QUIET_HOSTS];

static bool host_quiet(const char *host)
{
	double now = now_ms();
	bool found = false;
	unsigned int i;

	pthread_mutex_lock(&quiet_lock);
	for (i = 0; i < FETCH_QUIET_HOSTS && !found; i++)
		found = quiet[i].until > now && !strcmp(quiet[i].host, host);
	pthread_mutex_unlock(&quiet_lock);
	return found;
}

static void host_went_quiet(const char *host)
{
	unsigned int i, oldest = 0;

	pthread_mutex_lock(&quiet_lock);
	for (i = 0; i < FETCH_QUIET_HOSTS; i++)
		if (quiet[i].until < quiet[oldest].until)
			oldest = i;
	snprintf(quiet[oldest].host, sizeof(quiet[oldest].host), "%s", host);
	quiet[oldest].until = now_ms() + FETCH_QUIET_MS;
	pthread_mutex_unlock(&quiet_lock);
}

struct migr_xlate *migr_partner_fetch(struct migr_qp *mqp,
				      const struct ibv_qp_attr *attr,
				      uint32_t our_phys, union ibv_gid *gid,
				      char *err, size_t errlen)
{
	struct fetch f = { .our_phys = our_phys, .probe = true };
	struct migr_partner p = { .mqp = mqp, .qpn = attr->dest_qp_num };
	struct migr_xlate *x;
	int ret;

	p.gid = attr->ah_attr.grh.dgid;
	if (!attr->ah_attr.is_global ||
	    migr_gid_host(&p.gid, p.host, sizeof(p.host))) {
		snprintf(err, errlen, "its GID has no address to ask at");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (host_quiet(p.host)) {
		snprintf(
			err, errlen,
			"%s did not answer a fetch within %d s lately; not asked",
			p.host, FETCH_TIMEOUT_S);
		errno = ETIMEDOUT;
		return NULL;
	}
	ret = fetch_step(&p, &f, err, errlen);
	if (ret) {
		/* no answer in time (a refusal comes at once) */
		if (ret == EAGAIN || ret == ETIMEDOUT)
			host_went_quiet(p.host);
		errno = ret;
		return NULL;
	}
	if (f.gid_moved) {
		*gid = f.gid;
		verbs_info(
			&mqp->ctx->vctx,
			"QP 0x%x: its peer 0x%x at %s moved to another GID since it gave it out; connecting there\n",
			mqp->vqp.qp.qp_num, p.qpn, p.host);
	}
	/* A peer whose tables never changed: the identity is right */
	if (!f.gen) {
		errno = 0;
		return NULL;
	}
	x = migr_peer_tables(mqp->ctx, f.peer);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	/* Its keys once per change of its tables, in chunks */
	if (__atomic_load_n(&x->gen, __ATOMIC_ACQUIRE) != f.gen) {
		f.known = x->gen;
		f.probe = false;
		f.x = x;
		f.from = 0;
		do {
			ret = fetch_step(&p, &f, err, errlen);
			f.from = f.next;
		} while (!ret && f.next && !f.withheld);
		if (ret) {
			errno = ret;
			return NULL;
		}
		/* withheld: its give (do_give()) will say they are all in */
		if (!f.withheld)
			__atomic_store_n(&x->gen, f.gen, __ATOMIC_RELEASE);
	}
	if (replica_qpn(x, p.qpn, f.phys)) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (f.withheld)
		verbs_info(
			&mqp->ctx->vctx,
			"QP 0x%x: its peer 0x%x at %s moved before, is QP 0x%x there; its keys are withheld until it connects\n",
			mqp->vqp.qp.qp_num, p.qpn, p.host, f.phys);
	else
		verbs_info(
			&mqp->ctx->vctx,
			"QP 0x%x: its peer 0x%x at %s moved before, is QP 0x%x there; %u of its keys fetched\n",
			mqp->vqp.qp.qp_num, p.qpn, p.host, f.phys, f.nkeys);
	return x;
}

/* A give's chunk of our rkeys, and the numbers it names */
struct give {
	uint32_t our_phys, partner_phys;
	uint64_t gen;
	char pairs[KEYS_PER_LINE * 18 + 2];
	bool last;
};

static int give_args(struct migr_partner *p, char *buf, size_t len, void *arg)
{
	struct give *g = arg;
	int n;

	/* A prepare's words (migrd checks it with the faces step), then ours */
	n = snprintf(buf, len,
		     "%u 0 0 0 0 %u %016" PRIx64 " %u %" PRIu64 " %d %s",
		     p->mqp->vqp.qp.qp_num, g->our_phys, p->mqp->ctx->peers.id,
		     g->partner_phys, g->gen, g->last, g->pairs);
	/* keys cut short would be wrong keys */
	return n < 0 || (size_t)n >= len ? E2BIG : 0;
}

int migr_partner_give(struct migr_qp *mqp, uint32_t dest_qpn,
		      const union ibv_gid *dgid, uint32_t our_phys,
		      uint32_t partner_phys, char *err, size_t errlen)
{
	struct migr_context *ctx = mqp->ctx;
	struct migr_partner p = { .mqp = mqp, .qpn = dest_qpn, .gid = *dgid };
	struct give g = { .our_phys = our_phys, .partner_phys = partner_phys };
	struct step st = { .op = "give",
			   .args = give_args,
			   .arg = &g,
			   .prepare = true,
			   .timeout_s = FETCH_TIMEOUT_S };
	unsigned int start = 0, k;
	int ret;

	g.gen = __atomic_load_n(&ctx->xlate.gen, __ATOMIC_ACQUIRE);
	if (!g.gen)
		return 0;
	if (migr_gid_host(&p.gid, p.host, sizeof(p.host))) {
		snprintf(err, errlen, "its GID has no address to give at");
		return EOPNOTSUPP;
	}
	if (host_quiet(p.host)) {
		snprintf(err, errlen, "%s did not answer lately; not asked",
			 p.host);
		return ETIMEDOUT;
	}
	do {
		pthread_mutex_lock(&ctx->rec.lock);
		k = migr_rkey_pairs(ctx, start, KEYS_PER_LINE, g.pairs);
		pthread_mutex_unlock(&ctx->rec.lock);
		g.last = k < KEYS_PER_LINE;
		if (!k)
			snprintf(g.pairs, sizeof(g.pairs), "-");
		ret = run_step_patient(&p, 1, &st, 10, err, errlen);
		start += k;
	} while (!ret && !g.last);
	return ret;
}
