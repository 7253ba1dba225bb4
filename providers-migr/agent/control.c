// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The process's control socket: how an operator (migrctl, migrd) asks a
 * running migr process to switch devices or report its state. One thread,
 * started with the first migr context and idle in accept(); it listens on
 * the abstract UNIX socket "migr/<pid>" and serves one request per
 * connection, from root or the process's own user (SO_PEERCRED, checked
 * before anything is read: anyone else is closed on at once).
 *
 *   status\n                      -> one JSON line
 *   switch <device> [wait_ms]\n    -> one JSON line with the phase times
 *   rebuild [wait_ms]\n             -> the same, every object rebuilt on the
 *                                    device it is on (new physical numbers)
 *   park [wait_ms [lease_ms]]\n     -> drained and released, no device held,
 *                                    before CRIU dumps it (park.h);
 *                                    partners hold for lease_ms
 *   resume [device [token]]\n       -> rebuilt on device (or the one left),
 *                                    taking the numbers held for it there
 *                                    under token (16 hex digits: migrd's)
 *   fence MS\n / commit\n            -> a restored copy ends itself unless
 *                                    committed within MS (fence.h)
 *   partner OP ...\n                -> a moving partner's step (partner.h),
 *                                    relayed by migrd
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
#include "fence.h"
#include "migr_json.h"
#include "park.h"
#include "partner.h"
#include "switch.h"
#include "ud_peers.h"
#include "verbs.h"

#define DEFAULT_WAIT_MS 5000
#define REQ_MAX 4096
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

static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

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

struct switch_job {
	FILE *out;
	const char *target;
	unsigned int wait_ms;
	enum { JOB_SWITCH, JOB_PARK, JOB_RESUME } kind;
	unsigned int lease_ms; /* a park's: partners hold this long */
	uint64_t token; /* a resume's: numbers held for it (migr_resume()) */
};

static void switch_job(void *arg)
{
	struct switch_job *j = arg;

	if (j->kind == JOB_PARK)
		do_park(j->out, j->wait_ms, j->lease_ms);
	else if (j->kind == JOB_RESUME)
		do_resume(j->out, j->target, j->token);
	else
		do_switch(j->out, j->target, j->wait_ms);
}

struct partner_job {
	FILE *out;
	const char *line;
};

static void partner_job(void *arg)
{
	struct partner_job *j = arg;

	migr_partner_serve(j->out, j->line);
}

/* The UD relay's lines run where partners' do: one at a time */
static void ud_job(void *arg)
{
	struct partner_job *j = arg;

	migr_ud_serve(j->out, j->line);
}

/* Milliseconds until deadline (now_ms() time), 0 once it passed */
static int ms_left(double deadline)
{
	double left = deadline - now_ms();

	return left > 0 ? (int)left + 1 : 0;
}

/*
 * Read one request into req (REQ_MAX + 1 bytes): up to its newline, the
 * client's end of writing or REQ_MAX bytes. The whole of it must come
 * within READ_DEADLINE_MS, however it trickles in. Its length, or -1.
 */
static ssize_t read_request(int fd, char *req)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	double deadline = now_ms() + READ_DEADLINE_MS;
	size_t len = 0;
	ssize_t n;

	while (len < REQ_MAX) {
		int ms = ms_left(deadline);

		if (!ms)
			return -1;
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0)
			continue;
		n = recv(fd, req + len, REQ_MAX - len, MSG_DONTWAIT);
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

/* A restored copy's fence: migrd's restore bound and the source's lease */
#define MIGR_FENCE_MAX_MS 600000

/* fd's peer was allowed in (control_thread()); fd is closed by the caller */
static void serve(int fd, char *req, char *dev)
{
	unsigned int wait_ms = DEFAULT_WAIT_MS;
	unsigned int lease_ms = 0;
	char *buf = NULL, tok[17] = "";
	size_t size = 0;
	ssize_t len;
	FILE *out;

	/* Built in memory, so the work never writes to the socket itself */
	out = open_memstream(&buf, &size);
	if (!out)
		return;
	len = read_request(fd, req);
	if (len < 0) {
		fprintf(out,
			"{\"ok\":false,\"error\":\"no request in time\"}\n");
	} else if (!strcmp(req, "status\n")) {
		do_status(out);
	} else if (!strncmp(req, "partner ", 8) && len &&
		   req[len - 1] == '\n') {
		struct partner_job pj = { .out = out, .line = req + 8 };

		req[len - 1] = 0;
		run_on(&partner_worker, partner_job, &pj);
	} else if (!strncmp(req, "ud ", 3) && len && req[len - 1] == '\n') {
		struct partner_job pj = { .out = out, .line = req + 3 };

		req[len - 1] = 0;
		run_on(&partner_worker, ud_job, &pj);
	} else if (sscanf(req, "switch %256s %u", dev, &wait_ms) >= 1 &&
		   wait_ms > 0 && wait_ms <= 600000) {
		struct switch_job sj = { .out = out,
					 .target = dev,
					 .wait_ms = wait_ms,
					 .kind = JOB_SWITCH };

		run_on(&mover, switch_job, &sj);
	} else if ((!strcmp(req, "rebuild\n") ||
		    sscanf(req, "rebuild %u", &wait_ms) == 1) &&
		   wait_ms > 0 && wait_ms <= 600000) {
		struct switch_job sj = { .out = out,
					 .wait_ms = wait_ms,
					 .kind = JOB_SWITCH };

		run_on(&mover, switch_job, &sj);
	} else if ((!strcmp(req, "park\n") ||
		    sscanf(req, "park %u %u", &wait_ms, &lease_ms) >= 1) &&
		   wait_ms > 0 && wait_ms <= 600000 &&
		   lease_ms <= MIGR_PARTNER_LEASE_MAX_MS) {
		struct switch_job sj = { .out = out,
					 .wait_ms = wait_ms,
					 .kind = JOB_PARK,
					 .lease_ms = lease_ms };

		run_on(&mover, switch_job, &sj);
	} else if (sscanf(req, "fence %u", &wait_ms) == 1 && wait_ms > 0 &&
		   wait_ms <= MIGR_FENCE_MAX_MS) {
		migr_fence_arm(wait_ms);
		fprintf(out, "{\"pid\":%d,\"ok\":true,\"fence_ms\":%u}\n",
			getpid(), wait_ms);
	} else if (!strcmp(req, "commit\n")) {
		if (migr_fence_commit())
			fprintf(out, "{\"pid\":%d,\"ok\":true}\n", getpid());
		else
			fprintf(out,
				"{\"pid\":%d,\"ok\":false,\"error\":\"no fence to commit\"}\n",
				getpid());
	} else if (!strcmp(req, "resume\n") ||
		   sscanf(req, "resume %256s %16[0-9a-f]", dev, tok) >= 1) {
		struct switch_job sj = { .out = out,
					 .target = strcmp(req, "resume\n") ?
							   dev :
							   NULL,
					 .kind = JOB_RESUME,
					 .token = strtoull(tok, NULL, 16) };

		run_on(&mover, switch_job, &sj);
	} else {
		fprintf(out, "{\"ok\":false,\"error\":\"bad request\"}\n");
	}
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
	char *req = malloc(REQ_MAX + 1), *dev = malloc(REQ_MAX + 1);
	int fd = (intptr_t)arg;

	if (req && dev)
		serve(fd, req, dev);
	close(fd);
	free(req);
	free(dev);
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
