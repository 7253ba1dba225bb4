// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The process's control socket: how an operator (migrctl, migrd) asks a
 * running migr process to switch devices or report its state. One thread,
 * started with the first migr context and idle in accept(); it listens on
 * the abstract UNIX socket "migr/<pid>" and serves one request per
 * connection, from root or the process's own user (SO_PEERCRED, checked
 * before anything is read: anyone else is closed on at once).
 *
 * The requests are ctl_line.h's (common/: one grammar for this reader and
 * every writer); each is one entry of methods[] below: who may ask, the
 * thread it runs on and its handler (control_ops.c), which answers with
 * one JSON line.
 *
 * Each connection is read by a thread of its own (at most MAX_CONNS at
 * once), within READ_DEADLINE_MS for the request and SEND_DEADLINE_MS for
 * the reply, which is built in memory and sent without SIGPIPE: a client
 * can neither kill the application nor make it pile up threads.
 * Switches and a partner's steps run on two long-lived threads (see
 * run_on()): a partner's step must get through while this process runs a
 * switch of its own (it answers busy then), or two connected processes
 * moved at once would wait on each other.
 * MIGR_CONTROL=0 in the environment turns it off.
 */
#define _GNU_SOURCE /* struct ucred, accept4() */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "contexts.h"
#include "control_ops.h"
#include "ctl_line.h"
#include "partner_call.h"
#include "verbs.h"

/* A park's lease is bounded where partners bound it */
_Static_assert(CTL_LEASE_MAX_MS == MIGR_PARTNER_LEASE_MAX_MS,
	       "ctl_line.h's lease bound is partner_call.h's");
/*
 * Connections served at once, each on a thread of its own. Without a cap
 * a client that connects and never sends makes one thread per connection
 * until the application runs out of memory or threads; one over the cap
 * is closed at once. Requests are short and a switch runs one at a time,
 * so this is far more than migrd and migrctl ever need together.
 */
#define MAX_CONNS 16
/* The whole request line must come within this, however it trickles in */
#define READ_DEADLINE_MS 2000
/* ...and the whole reply go out within this, however slowly it is read */
#define SEND_DEADLINE_MS 5000

/* The control thread, started once */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool started;
static bool listening; /* the control thread serves "migr/<pid>" */

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int conns; /* connection threads running */

/*
 * Work that creates device objects runs on one of two long-lived threads:
 * the kernel's resource tracking names the thread that created an object,
 * and a connection's thread is gone once it answered, which would leave
 * the QPs of a switch without an owner (migrd's qpn-owner). Switches go
 * to one, a partner's steps to the other, so each can run while the
 * other waits (two connected processes moved at once).
 */
struct job {
	void (*fn)(void *arg);
	void *arg;
	bool done;
	struct job *next;
};

struct worker {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job queued, or one done */
	struct job *head, **tail;
	bool started;
};

static struct worker mover = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
static struct worker partner_worker = { .lock = PTHREAD_MUTEX_INITIALIZER,
					.cond = PTHREAD_COND_INITIALIZER };

static void *worker_thread(void *arg)
{
	struct worker *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct job *j;

		while (!w->head)
			pthread_cond_wait(&w->cond, &w->lock);
		j = w->head;
		w->head = j->next;
		if (!w->head)
			w->tail = &w->head;
		pthread_mutex_unlock(&w->lock);
		j->fn(j->arg);
		pthread_mutex_lock(&w->lock);
		j->done = true;
		pthread_cond_broadcast(&w->cond);
	}
	return NULL;
}

/* Run fn(arg) on w's thread and wait for it; inline if it cannot start */
static void run_on(struct worker *w, void (*fn)(void *arg), void *arg)
{
	struct job j = { .fn = fn, .arg = arg };
	pthread_attr_t attr;
	pthread_t th;

	pthread_mutex_lock(&w->lock);
	if (!w->started) {
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		w->tail = &w->head;
		w->started = !pthread_create(&th, &attr, worker_thread, w);
		pthread_attr_destroy(&attr);
	}
	if (!w->started) {
		pthread_mutex_unlock(&w->lock);
		fn(arg);
		return;
	}
	*w->tail = &j;
	w->tail = &j.next;
	pthread_cond_broadcast(&w->cond);
	while (!j.done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* Milliseconds until deadline (now_ms() time), 0 once it passed */
static int ms_left(double deadline)
{
	double left = deadline - now_ms();

	return left > 0 ? (int)left + 1 : 0;
}

/*
 * Read one request into req (CTL_LINE_MAX + 1 bytes): up to its newline,
 * the client's end of writing or CTL_LINE_MAX bytes. The whole of it must come
 * within READ_DEADLINE_MS, however it trickles in. Its length, or -1.
 */
static ssize_t read_request(int fd, char *req)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	double deadline = now_ms() + READ_DEADLINE_MS;
	size_t len = 0;
	ssize_t n;

	while (len < CTL_LINE_MAX) {
		int ms = ms_left(deadline);

		if (!ms)
			return -1;
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0)
			continue;
		n = recv(fd, req + len, CTL_LINE_MAX - len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		if (!n)
			break;
		len += n;
		if (memchr(req + len - n, '\n', n))
			break;
	}
	req[len] = 0;
	return len;
}

/*
 * Send the reply within SEND_DEADLINE_MS. MSG_NOSIGNAL: a client gone
 * before its reply must cost an error here, not the application's life
 * (SIGPIPE's disposition is the application's, never ours to change).
 */
static void send_reply(int fd, const char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	double deadline = now_ms() + SEND_DEADLINE_MS;

	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		int ms;

		if (n > 0) {
			buf += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return;
		ms = ms_left(deadline);
		if (!ms || (poll(&pfd, 1, ms) < 0 && errno != EINTR))
			return;
	}
}

/*
 * Who may ask (SO_PEERCRED's uid, fixed when the client connected): any
 * of these
 */
enum ctl_who {
	WHO_ROOT = 1 << 0, /* uid 0 */
	WHO_OWNER = 1 << 1, /* the process's own (effective) uid */
};

/*
 * One request's entry, as the kernel's uverbs method tables have them:
 * who may ask, the thread it runs on (NULL: the connection's own) and
 * its handler
 */
struct ctl_method {
	unsigned int who;
	struct worker *on;
	ctl_handler *handler;
};

#define ANYONE_OF_US (WHO_ROOT | WHO_OWNER)
static const struct ctl_method methods[CTL_OPS] = {
	[CTL_STATUS] = { ANYONE_OF_US, NULL, ctl_do_status },
	[CTL_SWITCH] = { ANYONE_OF_US, &mover, ctl_do_switch },
	[CTL_REBUILD] = { ANYONE_OF_US, &mover, ctl_do_switch },
	[CTL_PARK] = { ANYONE_OF_US, &mover, ctl_do_park },
	[CTL_RESUME] = { ANYONE_OF_US, &mover, ctl_do_resume },
	[CTL_FENCE] = { ANYONE_OF_US, NULL, ctl_do_fence },
	[CTL_COMMIT] = { ANYONE_OF_US, NULL, ctl_do_commit },
	[CTL_PARTNER] = { ANYONE_OF_US, &partner_worker, ctl_do_partner },
	[CTL_UD] = { ANYONE_OF_US, &partner_worker, ctl_do_ud },
};

/* The client's uid, as it was when it connected */
static bool peer_uid(int fd, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	*uid = cred.uid;
	return true;
}

static bool admits(unsigned int who, uid_t uid)
{
	return ((who & WHO_ROOT) && uid == 0) ||
	       ((who & WHO_OWNER) && uid == geteuid());
}

/*
 * May fd's client ask anything at all? Checked before a byte is read:
 * whom no entry admits gets nothing read or written, and no thread
 */
static bool peer_allowed(int fd)
{
	unsigned int who = 0, op;
	uid_t uid;

	for (op = 0; op < CTL_OPS; op++)
		who |= methods[op].who;
	return peer_uid(fd, &uid) && admits(who, uid);
}

struct ctl_job {
	const struct ctl_method *m;
	FILE *out;
	const struct ctl_req *q;
};

static void ctl_job(void *arg)
{
	struct ctl_job *j = arg;

	j->m->handler(j->out, j->q);
}

/* The request in req (len bytes) from fd's client, answered into out */
static void dispatch(int fd, char *req, ssize_t len, FILE *out)
{
	struct ctl_job j = { .out = out };
	struct ctl_req q;
	char err[128];
	uid_t uid;

	if (len < 0) {
		fprintf(out,
			"{\"ok\":false,\"error\":\"no request in time\"}\n");
		return;
	}
	if (ctl_parse(req, len, &q, err, sizeof(err))) {
		fprintf(out, "{\"ok\":false,\"error\":\"bad request\"}\n");
		return;
	}
	j.m = &methods[q.op];
	j.q = &q;
	if (!peer_uid(fd, &uid) || !admits(j.m->who, uid)) {
		fprintf(out,
			"{\"ok\":false,\"error\":\"permission denied\"}\n");
		return;
	}
	if (j.m->on)
		run_on(j.m->on, ctl_job, &j);
	else
		ctl_job(&j);
}

/* fd's peer was allowed in (control_thread()); fd is closed by the caller */
static void serve(int fd, char *req)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *out;

	/* Built in memory, so the work never writes to the socket itself */
	out = open_memstream(&buf, &size);
	if (!out)
		return;
	dispatch(fd, req, read_request(fd, req), out);
	if (!fclose(out))
		send_reply(fd, buf, size);
	free(buf);
}
/* A slot for one more connection thread, if under MAX_CONNS */
static bool conn_get(void)
{
	bool ok;

	pthread_mutex_lock(&conns_lock);
	ok = conns < MAX_CONNS;
	if (ok)
		conns++;
	pthread_mutex_unlock(&conns_lock);
	return ok;
}

static void conn_put(void)
{
	pthread_mutex_lock(&conns_lock);
	conns--;
	pthread_mutex_unlock(&conns_lock);
}

static void *serve_thread(void *arg)
{
	char *req = malloc(CTL_LINE_MAX + 1);
	int fd = (intptr_t)arg;

	if (req)
		serve(fd, req);
	close(fd);
	free(req);
	conn_put();
	return NULL;
}

static void *control_thread(void *arg)
{
	int lfd = (intptr_t)arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t th;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Short of fds or memory for now: stay reachable */
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				poll(NULL, 0, 100);
				continue;
			}
			return NULL;
		}
		/*
		 * Whom we refuse gets nothing read or written, and no thread:
		 * nothing another user does can reach the application.
		 */
		if (!peer_allowed(fd) || !conn_get()) {
			close(fd);
			continue;
		}
		if (pthread_create(&th, &attr, serve_thread,
				   (void *)(intptr_t)fd)) {
			conn_put();
			close(fd);
		}
	}
}

/*
 * Listen on "migr/<pid>" and serve it from a detached thread. A name
 * another process holds already is not ours: migrd and migrctl would talk
 * to that process instead, so it is said and nothing is served (nor is
 * migrd told of us: migr_register_serving() only once it serves).
 */
static void start(struct migr_context *ctx)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *env = getenv("MIGR_CONTROL");
	const char *why = NULL;
	pthread_attr_t attr;
	pthread_t th;
	socklen_t len;
	int fd, ret;

	if (env && !strcmp(env, "0"))
		return;
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "migr/%d",
		       getpid());
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		why = strerror(errno);
	} else if (bind(fd, (struct sockaddr *)&sun, len)) {
		why = errno == EADDRINUSE ?
			      "the name is in use by another process" :
			      strerror(errno);
	} else if (listen(fd, 4)) {
		why = strerror(errno);
	} else {
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&th, &attr, control_thread,
				     (void *)(intptr_t)fd);
		pthread_attr_destroy(&attr);
		if (ret) {
			why = strerror(ret);
		} else {
			listening = true;
			migr_register_serving();
		}
	}
	if (!why)
		return;
	verbs_err(&ctx->vctx,
		  "no control socket @%s (%s): the process cannot be moved\n",
		  sun.sun_path + 1, why);
	if (fd >= 0)
		close(fd);
}

void migr_control_add(struct migr_context *ctx)
{
	migr_contexts_add(ctx);
	pthread_mutex_lock(&start_lock);
	if (!started) {
		started = true;
		migr_quiesce_init();
		start(ctx);
	}
	pthread_mutex_unlock(&start_lock);
}

/* Is "migr/<pid>" ours and served? (register.c learns it when it starts) */
bool migr_control_listening(void)
{
	bool ret;

	pthread_mutex_lock(&start_lock);
	ret = listening;
	pthread_mutex_unlock(&start_lock);
	return ret;
}
