// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The moving side of the partner protocol (partner_call.h): one request line to
 * this host's migrd per step, which relays it to the partner's host and
 * process and answers with one JSON line. The library never holds migrd's
 * key; without migrd a partner in another process cannot be reached and
 * the switch is refused before anything is touched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migr_json.h"
#include "migrd_call.h"
#include "partner_call.h"
#include "verbs.h"

#define CALL_TIMEOUT_S 45
#define REPLY_MAX 8192
/* QPs of one partner process per request, and the request's length
 * (migrd takes at most 3800 bytes after its own words) */
#define MAX_BATCH 24
#define LINE_MAX_LEN 3700

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
 * The request line for up to MAX_BATCH QPs of v[first]'s process (same
 * host, pid and GID) not done yet, their indexes in idx[], *k of them.
 * Its length, or -errno with err set.
 */
static int batch_line(struct migr_partner *v, unsigned int n,
		      unsigned int first, const bool *done,
		      const struct migr_pcall_step *st, char *line,
		      unsigned int *idx, unsigned int *k, char *err,
		      size_t errlen)
{
	struct migr_partner *p0 = &v[first];
	/* args: a give's carry a chunk of rkeys (KEYS_PER_LINE pairs) */
	char gid[33], args[LINE_MAX_LEN];
	unsigned int i;
	size_t len;
	int ret;

	migr_gid_hex(&p0->gid, gid);
	len = snprintf(line, LINE_MAX_LEN, "migrd/1 partner %s %d %u %s %s %s",
		       p0->host, p0->pid, p0->qpn, gid, st->op, gid);
	if (st->head)
		len += snprintf(line + len, LINE_MAX_LEN - len, " %s .",
				st->head);
	for (i = first; i < n && *k < MAX_BATCH; i++) {
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
		if (len + 16 + strlen(args) + 2 >= LINE_MAX_LEN)
			break;
		len += snprintf(line + len, LINE_MAX_LEN - len, "%s %u%s%s",
				*k ? " ." : "", v[i].qpn, args[0] ? " " : "",
				args);
		idx[(*k)++] = i;
	}
	return len;
}

/*
 * The result per QP of the k in idx[] (v[first] the request's first),
 * from the reply rep: taken, done[] marked. How many, or -errno with err.
 */
static int batch_results(struct migr_partner *v, unsigned int first, bool *done,
			 const unsigned int *idx, unsigned int k,
			 const json_t *rep, const struct migr_pcall_step *st,
			 char *err, size_t errlen)
{
	const json_t *proc = json_object_get(rep, "reply");
	const json_t *results = json_object_get(proc, "results");
	unsigned int i, answered = 0;
	uint64_t pid = 0;
	int ret;

	migr_json_u64(rep, "pid", &pid);
	for (i = 0; i < k; i++) {
		struct migr_partner *p = &v[idx[i]];
		const json_t *res = json_array_get(results, i);

		if (!json_is_object(res)) {
			/* no answer per QP: migrd's or the process's refusal */
			reply_error(rep, err, errlen);
			fail_reason(p, st->op, err, errlen);
			return migr_json_true(rep, "ok") ? -EPROTO : -EREMOTEIO;
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
			return -EREMOTEIO;
		}
		if (pid)
			p->pid = pid;
		if (st->take) {
			ret = st->take(p, res, st->arg, err, errlen);
			if (ret) {
				fail_reason(p, st->op, err, errlen);
				return -ret;
			}
		}
		done[idx[i]] = true;
		answered++;
	}
	return answered;
}

/*
 * One request for up to MAX_BATCH QPs of one partner process (same host,
 * pid and GID), starting at v[first]; done[] marks the QPs answered.
 * Returns how many were answered, or -errno with err set.
 */
static int batch(struct migr_partner *v, unsigned int n, unsigned int first,
		 bool *done, const struct migr_pcall_step *st, char *err,
		 size_t errlen)
{
	struct migr_partner *p0 = &v[first];
	char line[LINE_MAX_LEN], reply[REPLY_MAX];
	unsigned int idx[MAX_BATCH], k = 0;
	int answered, len, ret;
	json_t *rep;

	len = batch_line(v, n, first, done, st, line, idx, &k, err, errlen);
	if (len < 0 || !k)
		return len < 0 ? len : 0;
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
	if (migr_json_true(json_object_get(rep, "reply"), "busy")) {
		reply_error(rep, err, errlen);
		answered = -EBUSY;
	} else {
		answered = batch_results(v, first, done, idx, k, rep, st, err,
					 errlen);
	}
	json_decref(rep);
	return answered;
}

/*
 * A step for every partner in v[] (those st->args accepts), one request
 * per partner process and MAX_BATCH QPs. 0, EBUSY, or an errno with err.
 */
int migr_pcall_step(struct migr_partner *v, unsigned int n,
		    const struct migr_pcall_step *st, char *err, size_t errlen)
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
 * migr_pcall_step(), again every 100 ms up to tries times while a partner answers
 * busy: one busy with its own switch lets go of its lock soon
 */
int migr_pcall_patient(struct migr_partner *v, unsigned int n,
		       const struct migr_pcall_step *st, unsigned int tries,
		       char *err, size_t errlen)
{
	int ret;

	while ((ret = migr_pcall_step(v, n, st, err, errlen)) == EBUSY &&
	       --tries)
		usleep(100000);
	return ret;
}
