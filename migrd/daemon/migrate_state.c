// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What the source's steps share (migrate_src.h): the claim on a pid, the
 * migration's error and progress lines, its requests to the destination
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "migrate_src.h"
#include "reply.h"
#include "sockio.h"

#define PROGRESS_MS 2000 /* a progress line to migrctl, or it is dropped */

/* One process may be moved at a time; MOVING_MAX migrations at once */
#define MOVING_MAX 16
static pthread_mutex_t moving_lock = PTHREAD_MUTEX_INITIALIZER;
static int moving[MOVING_MAX];

bool mig_claim(int pid)
{
	int i, free_i = -1;

	pthread_mutex_lock(&moving_lock);
	for (i = 0; i < MOVING_MAX; i++) {
		if (moving[i] == pid) {
			free_i = -2;
			break;
		}
		if (!moving[i] && free_i == -1)
			free_i = i;
	}
	if (free_i >= 0)
		moving[free_i] = pid;
	pthread_mutex_unlock(&moving_lock);
	return free_i >= 0;
}

void mig_unclaim(int pid)
{
	int i;

	pthread_mutex_lock(&moving_lock);
	for (i = 0; i < MOVING_MAX; i++)
		if (moving[i] == pid)
			moving[i] = 0;
	pthread_mutex_unlock(&moving_lock);
}

int mig_fail(struct mig *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return -1;
}

void mig_progress(struct mig *m, const char *phase, const char *fmt, ...)
{
	struct sbuf b = {};
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_info("migration %s: %s", m->id, text);
	if (m->c->fd < 0)
		return;
	sb_printf(&b, "{\"v\":%d,\"progress\":{\"phase\":\"%s\",\"text\":",
		  REQ_VERSION, phase);
	sb_json_str(&b, text);
	sb_add(&b, "}}\n", 3);
	if (!b.oom)
		io_write_all(m->c->fd, b.p, b.len, PROGRESS_MS);
	sb_free(&b);
}

double mig_mib_s(uint64_t bytes, double ms)
{
	return ms > 0 ? bytes / 1048576.0 / (ms / 1000) : 0;
}

/*
 * A connection for the next step: a fresh one each time, as a pre-copy
 * round or a dump may take longer than a peer waits on an idle one
 */
struct peer_conn *mig_conn(struct mig *m)
{
	peer_close(m->pc);
	m->pc = peer_open(m->r->host, m->err, sizeof(m->err));
	return m->pc;
}

/* One mig-* request; its JSON, or NULL */
json_t *mig_ask(struct mig *m, struct req *q, int timeout_ms)
{
	char line[REQ_MAX], err[512];
	struct sbuf out = {};
	json_t *j = NULL;

	snprintf(q->id, sizeof(q->id), "%s", m->id);
	m->answered = false;
	if (req_format(q, line, sizeof(line)) < 0) {
		mig_fail(m, "request too long");
		return NULL;
	}
	if (!mig_conn(m))
		return NULL;
	if (peer_ask(m->pc, line, timeout_ms, &out, err, sizeof(err))) {
		mig_fail(m, "%s", err);
		goto out;
	}
	m->answered = true;
	j = migr_json_parse(out.p, out.len);
	if (!j) {
		mig_fail(m, "%s sent a reply that is not JSON", m->r->host);
	} else if (!migr_json_true(j, "ok")) {
		if (!migr_json_text(j, "error", err, sizeof(err)))
			snprintf(err, sizeof(err), "request refused");
		mig_fail(m, "%s: %s", m->r->host, err);
		json_decref(j);
		j = NULL;
	}
out:
	sb_free(&out);
	return j;
}

/* mig-end, keeping the error that brought it (the migration's own) */
int mig_end(struct mig *m, const char *what, char *state, size_t len)
{
	struct req q = { .op = REQ_MIG_END };
	char err[512];
	json_t *j;
	int ret = -1;

	snprintf(err, sizeof(err), "%s", m->err);
	snprintf(q.line, sizeof(q.line), "%s", what);
	j = mig_ask(m, &q, 10000);
	if (j) {
		migr_json_text(j, "state", state, len);
		json_decref(j);
		ret = 0;
	}
	snprintf(m->err, sizeof(m->err), "%s", err);
	return ret;
}

void mig_free(struct mig *m)
{
	int w;

	for (w = 0; w < REQ_HOLD_KINDS; w++)
		free(m->hold[w]);
	peer_close(m->pc);
	if (m->nsfd >= 0)
		close(m->nsfd);
	mig_unclaim(m->r->pid);
	free(m);
}
