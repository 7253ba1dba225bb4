// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migrd's side of a migr process's control socket
 * (providers-migr/serve/control.c)
 */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_client.h"
#include "ctl_reply.h"
#include "migrd.h"
#include "netns.h"
#include "registry.h"
#include "sockio.h"

/*
 * Requests in flight to one pid: a process that never answers holds at
 * most this many migrd threads, whatever its owner sends. Twice: for the
 * requests any migr process or peer may cause (partner and UD steps,
 * relayed for others), and for the operator's (status, switch, park...,
 * from root or the process's owner), so that a flood of the first kind
 * (fetches) cannot keep root's status from a process.
 */
#define PROC_INFLIGHT_MAX 4
/* A live process accepts at once; a longer request still connects fast */
#define PROC_CONNECT_MS 5000
/* Distinct pids with requests in flight: more than migrd has threads */
#define PROC_TARGETS_MAX 2048

enum proc_class { PROC_OPERATOR, PROC_RELAYED, PROC_CLASSES };

static pthread_mutex_t inflight_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int pid;
	int n[PROC_CLASSES];
} inflight[PROC_TARGETS_MAX];

static bool slot_used(int i)
{
	return inflight[i].n[PROC_OPERATOR] || inflight[i].n[PROC_RELAYED];
}

/* Count one more request of class k to pid; -1 if it has too many */
static int inflight_get(int pid, enum proc_class k)
{
	int i, slot = -1, ret = -1;

	pthread_mutex_lock(&inflight_lock);
	for (i = 0; i < PROC_TARGETS_MAX; i++) {
		if (slot_used(i) && inflight[i].pid == pid) {
			slot = i;
			break;
		}
		if (!slot_used(i) && slot < 0)
			slot = i;
	}
	if (slot >= 0 && inflight[slot].n[k] < PROC_INFLIGHT_MAX) {
		inflight[slot].pid = pid;
		inflight[slot].n[k]++;
		ret = 0;
	}
	pthread_mutex_unlock(&inflight_lock);
	return ret;
}

static void inflight_put(int pid, enum proc_class k)
{
	int i;

	pthread_mutex_lock(&inflight_lock);
	for (i = 0; i < PROC_TARGETS_MAX; i++)
		if (inflight[i].n[k] && inflight[i].pid == pid) {
			inflight[i].n[k]--;
			break;
		}
	pthread_mutex_unlock(&inflight_lock);
}

/* A partner or UD step: relayed for another process or a peer */
static enum proc_class class_of(const char *line)
{
	static const enum ctl_op relayed[] = { CTL_PARTNER, CTL_UD };
	size_t i, n;

	for (i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++) {
		n = strlen(ctl_op_name(relayed[i]));
		if (!strncmp(line, ctl_op_name(relayed[i]), n) &&
		    line[n] == ' ')
			return PROC_RELAYED;
	}
	return PROC_OPERATOR;
}

/*
 * A connection to pid's control socket, its holder checked; -1 with err.
 * The agent binds "migr/<its own getpid()>" in its own network namespace:
 * a socket made there, named by its pid there (the same two as migrd's
 * for a process in migrd's namespaces)
 */
static int connect_checked(int pid, int timeout_ms, char *err, size_t errlen)
{
	int fd, nspid;

	nspid = ns_pid(pid);
	if (nspid <= 0) {
		snprintf(err, errlen, "pid %d: the process is gone", pid);
		return -1;
	}
	fd = ns_socket(pid, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen,
			 "pid %d: no socket in its network namespace: %s", pid,
			 strerror(errno));
		return -1;
	}
	fd = ctl_connect(fd, nspid,
			 timeout_ms < PROC_CONNECT_MS ? timeout_ms :
							PROC_CONNECT_MS);
	if (fd < 0) {
		snprintf(err, errlen,
			 "pid %d: cannot reach its control socket: %s", pid,
			 strerror(errno));
		return -1;
	}
	if (ctl_check_holder(fd, pid, err, errlen)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One bound for connect, write and read together */
static int request(int pid, const char *line, int timeout_ms, char **reply,
		   char *err, size_t errlen)
{
	long long deadline = io_now_ms() + timeout_ms;
	size_t n;
	int fd;

	fd = connect_checked(pid, timeout_ms, err, errlen);
	if (fd < 0)
		return -1;
	switch (ctl_exchange(fd, line, deadline, 2000, PROC_REPLY_MAX, reply,
			     &n)) {
	case CTL_CALL_SEND:
		snprintf(err, errlen, "pid %d: sending the request failed: %s",
			 pid, strerror(errno));
		close(fd);
		return -1;
	case CTL_CALL_REPLY:
		snprintf(err, errlen, "pid %d: no reply: %s", pid,
			 errno == ECONNRESET ? "connection closed" :
					       strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	/* Relay only what parses: a reply is embedded into migrd's own JSON */
	if (!ctl_reply_valid(*reply, n)) {
		snprintf(err, errlen, "pid %d: its reply is not valid JSON",
			 pid);
		free(*reply);
		return -1;
	}
	return 0;
}

int proc_request(int pid, const char *line, int timeout_ms, char **reply,
		 char *err, size_t errlen)
{
	enum proc_class k = class_of(line);
	int ret;

	if (inflight_get(pid, k)) {
		snprintf(
			err, errlen,
			"pid %d: %d requests to it are already in flight; try again later",
			pid, PROC_INFLIGHT_MAX);
		return -1;
	}
	ret = request(pid, line, timeout_ms, reply, err, errlen);
	inflight_put(pid, k);
	return ret;
}

/* A fan-out's threads take the next process until none is left */
#define PROC_FANOUT 8

struct fanout {
	struct proc_ask *v;
	int n, next, per_ms;
	long long deadline;
	size_t max_reply;
	const char *line;
	pthread_mutex_t lock;
};

static void *fanout_thread(void *arg)
{
	struct fanout *f = arg;
	struct proc_ask *a;
	long long left;

	for (;;) {
		pthread_mutex_lock(&f->lock);
		a = f->next < f->n ? &f->v[f->next++] : NULL;
		pthread_mutex_unlock(&f->lock);
		if (!a)
			return NULL;
		left = f->deadline - io_now_ms();
		if (left > f->per_ms)
			left = f->per_ms;
		if (left <= 0) {
			snprintf(a->err, sizeof(a->err),
				 "pid %d: not asked before the deadline",
				 a->pid);
			continue;
		}
		a->rc = proc_request(a->pid, f->line, left, &a->reply, a->err,
				     sizeof(a->err));
		if (!a->rc && strlen(a->reply) > f->max_reply) {
			free(a->reply);
			a->reply = NULL;
			a->rc = -1;
			snprintf(a->err, sizeof(a->err),
				 "pid %d: its reply is longer than %zu bytes",
				 a->pid, f->max_reply);
		}
	}
}

void proc_ask_all(struct proc_ask *v, int n, const char *line, int per_ms,
		  long long deadline, size_t max_reply)
{
	struct fanout f = { .v = v,
			    .n = n,
			    .per_ms = per_ms,
			    .deadline = deadline,
			    .max_reply = max_reply,
			    .line = line,
			    .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t th[PROC_FANOUT];
	int i, nth;

	for (i = 0; i < n; i++) {
		v[i].rc = -1;
		v[i].reply = NULL;
		v[i].err[0] = 0;
	}
	for (nth = 0; nth < PROC_FANOUT && nth < n; nth++)
		if (pthread_create(&th[nth], NULL, fanout_thread, &f))
			break;
	if (!nth)
		fanout_thread(&f);
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

/* A reply's verdict and errors: ctl_reply.h's reader, as the plugin's */
bool proc_partner_error(const char *reply, const char *key, char *err,
			size_t len)
{
	return ctl_reply_partner_error(reply, key, err, len);
}

bool proc_verdict(const char *reply, const char *key, char *err, size_t len)
{
	return ctl_reply_verdict(reply, key, err, len);
}

int proc_ask(int pid, const struct ctl_req *q, int timeout_ms, char **reply,
	     char *err, size_t errlen)
{
	char line[CTL_LINE_MAX + 1];

	if (ctl_format(q, line, sizeof(line)) < 0) {
		snprintf(err, errlen, "pid %d: no %s line can say that", pid,
			 ctl_op_name(q->op));
		return -1;
	}
	return proc_request(pid, line, timeout_ms, reply, err, errlen);
}
