// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The source of a migration (migrate.h): check, pre-copy, park, dump,
 * send, restore there, commit; any failure before the commit puts the
 * process back to work here, on its own device
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "criu_run.h"
#include "images.h"
#include "log.h"
#include "migr_json.h"
#include "migrate.h"
#include "netns.h"
#include "pauth.h"
#include "peer.h"
#include "ptree.h"
#include "registry.h"
#include "reply.h"
#include "sockio.h"
#include "tcprepair.h"

#define PROGRESS_MS 2000 /* a progress line to migrctl, or it is dropped */

struct round {
	uint64_t pages; /* bytes of pages this round dumped */
	uint64_t sent;
	double ms_dump, ms_send;
};

struct mig {
	const struct req *r;
	const struct client *c;
	struct req r_kept; /* r, once a settle thread outlives the request */
	char id[REQ_MIG_ID_LEN + 1];
	char dir[512]; /* <state_dir>/migrations/<id> */
	char dev[REQ_NAME_MAX]; /* where it resumes on the destination */
	char from[REQ_NAME_MAX]; /* the device it runs on here */
	char criu_ver[REQ_NAME_MAX];
	int pids[MIG_TREE_MAX], npids, tids[MIG_TREE_MAX], ntids;
	/* its migr processes: host pids, and as its pid namespace numbers them */
	int movers[REQ_MOVERS_MAX], nsmovers[REQ_MOVERS_MAX], nmovers;
	int nparked; /* movers[0, nparked) parked */
	struct peer_conn *pc;
	struct round rounds[REQ_PRECOPY_MAX];
	unsigned int nrounds;
	double ms_check, ms_precopy, ms_park, ms_dump, ms_send, ms_restore, ms_rebuild,
		ms_partner, ms_blackout;
	/* the longest any partner elsewhere held its posts: its blackout */
	double ms_partner_blackout;
	unsigned int partners; /* QPs whose partner is in another process */
	unsigned int partners_kept; /* of them, on their own numbers still */
	/* objects rebuilt there on the numbers they had (migr_rxe(7)), or not */
	unsigned int numbers_kept, numbers_translated;
	/*
	 * The numbers its migr processes have (REQ_HOLD_*), held there during
	 * the pre-copy (mig-hold), and how many of them the restore claimed
	 */
	uint32_t *hold[REQ_HOLD_KINDS];
	size_t nhold[REQ_HOLD_KINDS];
	unsigned int numbers_held, numbers_claimed;
	uint64_t final_pages, final_sent;
	long long t_park; /* io_now_ms(): the application stopped */
	bool answered; /* the last ask() had a reply, ok or not */
	bool park_unknown; /* movers[nparked] had no answer: it may be parked */
	bool checked; /* the destination took the migration */
	struct req_ns ns; /* its own namespaces, told to the destination */
	int nsfd; /* its own network namespace, or -1 */
	unsigned long netns_ino;
	bool link_down; /* its interface, down from the final dump on */
	int pid_there; /* its root's pid on the destination (host's) */
	char err[512];
};

/* One process may be moved at a time; MOVING_MAX migrations at once */
#define MOVING_MAX 16
static pthread_mutex_t moving_lock = PTHREAD_MUTEX_INITIALIZER;
static int moving[MOVING_MAX];

static bool claim(int pid)
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

static void unclaim(int pid)
{
	int i;

	pthread_mutex_lock(&moving_lock);
	for (i = 0; i < MOVING_MAX; i++)
		if (moving[i] == pid)
			moving[i] = 0;
	pthread_mutex_unlock(&moving_lock);
}

static int fail(struct mig *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(struct mig *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* A line for migrctl's terminal; a client that went away misses it */
static void progress(struct mig *m, const char *phase, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void progress(struct mig *m, const char *phase, const char *fmt, ...)
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

static double mib_s(uint64_t bytes, double ms)
{
	return ms > 0 ? bytes / 1048576.0 / (ms / 1000) : 0;
}

/*
 * A connection for the next step: a fresh one each time, as a pre-copy
 * round or a dump may take longer than a peer waits on an idle one
 */
static struct peer_conn *conn(struct mig *m)
{
	peer_close(m->pc);
	m->pc = peer_open(m->r->host, m->err, sizeof(m->err));
	return m->pc;
}

/* One mig-* request; its JSON, or NULL */
static json_t *ask(struct mig *m, struct req *q, int timeout_ms)
{
	char line[REQ_MAX], err[512];
	struct sbuf out = {};
	json_t *j = NULL;

	snprintf(q->id, sizeof(q->id), "%s", m->id);
	m->answered = false;
	if (req_format(q, line, sizeof(line)) < 0) {
		fail(m, "request too long");
		return NULL;
	}
	if (!conn(m))
		return NULL;
	if (peer_ask(m->pc, line, timeout_ms, &out, err, sizeof(err))) {
		fail(m, "%s", err);
		goto out;
	}
	m->answered = true;
	j = migr_json_parse(out.p, out.len);
	if (!j) {
		fail(m, "%s sent a reply that is not JSON", m->r->host);
	} else if (!migr_json_true(j, "ok")) {
		if (!migr_json_text(j, "error", err, sizeof(err)))
			snprintf(err, sizeof(err), "request refused");
		fail(m, "%s: %s", m->r->host, err);
		json_decref(j);
		j = NULL;
	}
out:
	sb_free(&out);
	return j;
}

/* mig-end, keeping the error that brought it (the migration's own) */
static int end_on_new(struct mig *m, const char *what, char *state,
		      size_t len)
{
	struct req q = { .op = REQ_MIG_END };
	char err[512];
	json_t *j;
	int ret = -1;

	snprintf(err, sizeof(err), "%s", m->err);
	snprintf(q.line, sizeof(q.line), "%s", what);
	j = ask(m, &q, 10000);
	if (j) {
		migr_json_text(j, "state", state, len);
		json_decref(j);
		ret = 0;
	}
	snprintf(m->err, sizeof(m->err), "%s", err);
	return ret;
}

/*
 * Its own pid namespace (it must be its init: CRIU dumps a pid namespace
 * from there) and its own network namespace, dumped as external: the
 * destination makes one with the same interface and address
 */
static int namespaces(struct mig *m)
{
	int own = ns_pidns_own(m->r->pid), init = ns_pidns_init(m->r->pid);
	char err[256];
	int rc;

	if (own < 0 || init < 0)
		return fail(m, "pid %d is gone", m->r->pid);
	if (own && !init)
		return fail(m, "pid %d is in a pid namespace of its own but is not its init (pid 1 there): migrate the init",
			    m->r->pid);
	rc = netns_open_other(m->r->pid, &m->nsfd, &m->netns_ino);
	if (rc < 0)
		return fail(m, "pid %d is gone", m->r->pid);
	if (rc && netns_read(m->nsfd, &m->ns, err, sizeof(err)))
		return fail(m, "pid %d: its network namespace cannot move: %s",
			    m->r->pid, err);
	m->ns.own_pidns = init;
	return 0;
}

/*
 * Is host one of this host's addresses (or loopback)? A move to itself
 * would restore a copy beside the stopped source, with its pids or
 * address: refused (a move between devices here is migrctl switch)
 */
static bool host_is_here(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	struct ifaddrs *ifs, *i;
	bool here = false;
	int fam;

	if (inet_pton(AF_INET, host, &a4) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, host, &a6) == 1)
		fam = AF_INET6;
	else
		return false;
	if ((fam == AF_INET && (ntohl(a4.s_addr) >> 24) == 127) ||
	    (fam == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a6)))
		return true;
	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !here; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != fam)
			continue;
		if (fam == AF_INET)
			here = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
			       a4.s_addr;
		else
			here = !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
				       &a6, sizeof(a6));
	}
	freeifaddrs(ifs);
	return here;
}

/*
 * The tree's migr processes, read into m->movers: each is parked before
 * the dump and resumed after the restore, together. The others move as
 * CRIU moves them.
 */
static int find_movers(struct mig *m)
{
	struct proc_info p;
	int i;

	m->nmovers = 0;
	for (i = 0; i < m->npids; i++) {
		if (!registry_find(m->pids[i], &p))
			continue;
		if (m->nmovers == REQ_MOVERS_MAX)
			return fail(m, "pid %d: its tree has more than %d migr processes",
				    m->r->pid, REQ_MOVERS_MAX);
		m->movers[m->nmovers] = m->pids[i];
		m->nsmovers[m->nmovers] = ns_pid(m->pids[i]);
		if (m->nsmovers[m->nmovers] <= 0)
			return fail(m, "pid %d is gone", m->pids[i]);
		m->nmovers++;
	}
	return 0;
}

#define RDMA_CM_FILE "/dev/infiniband/rdma_cm"

/* Said before anything is touched, naming the process to move */
static int tree_checks(struct mig *m)
{
	int fd, pid;

	if (ptree_read(m->r->pid, m->pids, &m->npids, m->tids, &m->ntids,
		       MIG_TREE_MAX)) {
		if (kill(m->r->pid, 0) && errno == ESRCH)
			return fail(m, "no migr process with pid %d",
				    m->r->pid);
		return fail(m, "pid %d: its process tree is gone or has more than %d threads",
			    m->r->pid, MIG_TREE_MAX);
	}
	/*
	 * librdmacm's connections live in the kernel (the rdma_cm file's
	 * ids, bound to this host's device and address): CRIU cannot dump
	 * them, nor could they be rebuilt there
	 */
	fd = ptree_fd_to(m->pids, m->npids, RDMA_CM_FILE, &pid);
	if (fd >= 0)
		return fail(m, "pid %d uses the RDMA connection manager (fd %d %s): its connections are kernel state that cannot move (not supported)",
			    pid, fd, RDMA_CM_FILE);
	if (find_movers(m))
		return -1;
	if (!m->nmovers)
		return fail(m, "no migr process with pid %d, nor in its tree",
			    m->r->pid);
	return 0;
}

#define QPS_RTR 3 /* enum ibv_qp_state's IBV_QPS_RTR, in a status reply */

/* A connected RC QP of one of the tree's migr processes, from its status */
struct tree_qp {
	int mover;
	uint32_t qpn, dest; /* virtual: as the applications know them */
	char lower[32];
};

static int tree_qp_cmp(const void *a, const void *b)
{
	const struct tree_qp *x = a, *y = b;
	int c = strcmp(x->lower, y->lower);

	return c ? c : (x->qpn > y->qpn) - (x->qpn < y->qpn);
}

/* The connected QPs of one status reply, appended to *v */
static int tree_qps(int mover, const json_t *j, struct tree_qp **v,
		    size_t *n)
{
	const json_t *ctx, *qp;
	size_t i, k;

	json_array_foreach(json_object_get(j, "contexts"), i, ctx) {
		char lower[32];

		if (!migr_json_text(ctx, "lower", lower, sizeof(lower)))
			continue;
		json_array_foreach(json_object_get(ctx, "qps"), k, qp) {
			struct tree_qp *w, e = { .mover = mover };

			e.qpn = migr_json_int(qp, "qpn", 0, 0xffffff, 0);
			e.dest = migr_json_int(qp, "dest_qpn", 0, 0xffffff, 0);
			/* connected (RTR or later), to another process */
			if (!e.dest || json_is_true(json_object_get(qp, "self")) ||
			    migr_json_int(qp, "state", 0, 16, 0) < QPS_RTR)
				continue;
			memcpy(e.lower, lower, sizeof(lower));
			w = realloc(*v, (*n + 1) * sizeof(**v));
			if (!w)
				return -1;
			*v = w;
			(*v)[(*n)++] = e;
		}
	}
	return 0;
}

/*
 * Two migr processes of the tree that are each other's RDMA partners
 * would each wait for the other at the park: not supported yet, refused
 * before anything is touched
 */
static int partners_within(struct mig *m, struct tree_qp *v, size_t n)
{
	size_t i;

	qsort(v, n, sizeof(*v), tree_qp_cmp);
	for (i = 0; i < n; i++) {
		struct tree_qp key = v[i], *f;

		key.qpn = v[i].dest;
		f = bsearch(&key, v, n, sizeof(*v), tree_qp_cmp);
		if (f && f->mover != v[i].mover && f->dest == v[i].qpn)
			return fail(m, "pids %d and %d of the tree are each other's RDMA partners (QPs 0x%x and 0x%x on %s): moving both is not supported yet",
				    m->movers[v[i].mover], m->movers[f->mover],
				    v[i].qpn, f->qpn, v[i].lower);
	}
	return 0;
}

/* x (0: none) added to m->hold[w], for mig-hold; -1 without memory */
static int hold_add(struct mig *m, int w, long long x)
{
	uint32_t *v;

	if (!x)
		return 0;
	v = realloc(m->hold[w], (m->nhold[w] + 1) * sizeof(*v));
	if (!v)
		return -1;
	m->hold[w] = v;
	v[m->nhold[w]++] = x;
	return 0;
}

/* Of a status reply, the QPNs, MR keys and windows' rkeys for mig-hold */
static int hold_collect(struct mig *m, const json_t *j)
{
	static const struct {
		const char *list, *field;
		long long max;
	} what[REQ_HOLD_KINDS] = {
		[REQ_HOLD_QPN] = { "qps", "qpn", 0xffffff },
		[REQ_HOLD_MR] = { "mrs", "lkey", UINT32_MAX },
		[REQ_HOLD_MW] = { "mws", "rkey", UINT32_MAX },
	};
	const json_t *ctx, *o;
	size_t i, k;
	int w;

	json_array_foreach (json_object_get(j, "contexts"), i, ctx)
		for (w = 0; w < REQ_HOLD_KINDS; w++)
			json_array_foreach (json_object_get(ctx, what[w].list),
					    k, o)
				if (hold_add(m, w,
					     migr_json_int(o, what[w].field, 1,
							   what[w].max, 0)))
					return -1;
	return 0;
}

/*
 * The numbers collected, held on the destination for the restore: where
 * it cannot (no migr rdma_rxe there), it says why and the migration goes
 * on, its objects then asking for their numbers at the restore as ever
 */
static void hold_numbers(struct mig *m)
{
	struct req q = { .op = REQ_MIG_HOLD };
	char why[300] = "", saved[sizeof(m->err)];
	size_t i = 0, w, k, len, all = 0;
	json_t *j;

	for (w = 0; w < REQ_HOLD_KINDS; w++)
		all += m->nhold[w];
	if (!all)
		return;
	/* not the migration's error: it goes on */
	memcpy(saved, m->err, sizeof(saved));
	for (w = 0; w < REQ_HOLD_KINDS && !why[0]; w++)
		for (i = 0; i < m->nhold[w] && !why[0];) {
			snprintf(q.name, sizeof(q.name), "%s",
				 req_hold_names[w]);
			for (len = k = 0; i < m->nhold[w] && k < REQ_HOLD_MAX;
			     i++, k++)
				len += snprintf(q.line + len,
						sizeof(q.line) - len, "%s%x",
						len ? "," : "", m->hold[w][i]);
			j = ask(m, &q, 10000);
			if (!j) {
				snprintf(why, sizeof(why), "%.290s", m->err);
				break;
			}
			m->numbers_held +=
				migr_json_int(j, "held", 0, UINT32_MAX, 0);
			/* the destination cannot hold them: it says why */
			if (!migr_json_text(j, "why", why, sizeof(why)))
				why[0] = 0;
			json_decref(j);
		}
	memcpy(m->err, saved, sizeof(saved));
	progress(
		m, "hold",
		"%s holds %u of %zu QP numbers, MR and window keys for the restore%s%s",
		m->r->host, m->numbers_held, all, why[0] ? ": " : "", why);
}

/* Each migr process runs (not parked), over a migr device: its own */
static int movers_check(struct mig *m)
{
	char *reply, err[512], from[REQ_NAME_MAX];
	struct tree_qp *qps = NULL;
	size_t nqps = 0;
	json_t *j, *ctx;
	int i, ret = 0;

	for (i = 0; i < m->nmovers; i++) {
		int pid = m->movers[i];

		if (proc_ask(pid, &(struct ctl_req){ .op = CTL_STATUS }, 10000,
			     &reply, err, sizeof(err))) {
			free(qps);
			return fail(m, "%s", err);
		}
		j = migr_json_parse(reply, strlen(reply));
		free(reply);
		if (json_object_get(j, "parked")) {
			json_decref(j);
			free(qps);
			return fail(m, "pid %d is parked: resume it first", pid);
		}
		ctx = json_array_get(json_object_get(j, "contexts"), 0);
		if (!ctx || !migr_json_text(ctx, "lower", from, sizeof(from))) {
			json_decref(j);
			free(qps);
			return fail(m, "pid %d has no open migr device", pid);
		}
		if ((m->nmovers > 1 && tree_qps(i, j, &qps, &nqps)) ||
		    hold_collect(m, j)) {
			json_decref(j);
			free(qps);
			return fail(m, "out of memory");
		}
		json_decref(j);
		if (!i)
			snprintf(m->from, sizeof(m->from), "%s", from);
	}
	if (nqps)
		ret = partners_within(m, qps, nqps);
	free(qps);
	return ret;
}

static int checks(struct mig *m)
{
	struct req q = { .op = REQ_MIG_CHECK };
	char err[512];
	size_t off = 0;
	json_t *j;
	uint8_t rnd[REQ_MIG_ID_LEN / 2];
	int i;

	if (m->c->uid != 0)
		return fail(m, "permission denied: only root may migrate a process (CRIU runs as root)");
	if (tree_checks(m))
		return -1;
	if (host_is_here(m->r->host))
		return fail(m, "%s is this host: migrate moves a process to another host (migrctl switch moves it between devices here)",
			    m->r->host);
	if (criu_plugin_missing(" here", err, sizeof(err)))
		return fail(m, "%s", err);
	if (namespaces(m))
		return -1;
	if (movers_check(m))
		return -1;
	snprintf(m->dev, sizeof(m->dev), "%s",
		 m->r->dev[0] ? m->r->dev : m->from);
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return fail(m, "no random bytes: %s", strerror(errno));
	for (i = 0; i < (int)sizeof(rnd); i++)
		sprintf(m->id + 2 * i, "%02x", rnd[i]);
	if (img_path(m->id, NULL, true, m->dir, sizeof(m->dir), m->err,
		     sizeof(m->err)) ||
	    criu_version(m->dir, m->criu_ver, sizeof(m->criu_ver), m->err,
			 sizeof(m->err)))
		return -1;
	q.pid = m->r->pid;
	q.ns = m->ns;
	memcpy(q.movers, m->nsmovers, sizeof(q.movers));
	q.nmovers = m->nmovers;
	snprintf(q.dev, sizeof(q.dev), "%s", m->dev);
	snprintf(q.version, sizeof(q.version), "%s", m->criu_ver);
	for (i = 0; i < m->ntids; i++) {
		off += snprintf(q.line + off, sizeof(q.line) - off, "%s%d",
				i ? "," : "", m->tids[i]);
		if (off >= sizeof(q.line))
			return fail(m, "pid %d: its %d threads do not fit one request (at most %d bytes of thread ids)",
				    m->r->pid, m->ntids, REQ_PARTNER_LINE_MAX);
	}
	j = ask(m, &q, 30000);
	if (!j)
		return -1;
	json_decref(j);
	m->checked = true;
	return 0;
}

/* criu dump or pre-dump of the tree into <dir>/<sub>, after <prev> */
static int dump(struct mig *m, const char *sub, const char *prev, bool final)
{
	char imgs[600], parent[80], pid[16], ext[64];
	const char *args[28];
	int n = 0;

	if (img_path(m->id, sub, true, imgs, sizeof(imgs), m->err,
		     sizeof(m->err)))
		return -1;
	snprintf(pid, sizeof(pid), "%d", m->r->pid);
	args[n++] = final ? "dump" : "pre-dump";
	args[n++] = "-t";
	args[n++] = pid;
	args[n++] = "-D";
	args[n++] = imgs;
	args[n++] = "-L";
	args[n++] = migrd.conf.criu_plugins;
	args[n++] = "--track-mem";
	if (prev) {
		snprintf(parent, sizeof(parent), "../%s", prev);
		args[n++] = "--prev-images-dir";
		args[n++] = parent;
	}
	if (final)
		args[n++] = "--leave-stopped";
	if (m->ns.own_netns) {
		/*
		 * The namespace stays here (its interface down, see
		 * lock_net()): CRIU's network lock (iptables, nftables) is
		 * not needed, nor installed
		 */
		snprintf(ext, sizeof(ext), "net[%lu]:%s", m->netns_ino,
			 NETNS_KEY);
		args[n++] = "--external";
		args[n++] = ext;
		args[n++] = "--tcp-established";
		args[n++] = "--network-lock";
		args[n++] = "skip";
	}
	args[n++] = "-o";
	args[n++] = "dump.log";
	args[n++] = "-v4";
	args[n] = NULL;
	return criu_run(args, imgs, "dump.log", MIG_DUMP_MS, m->err,
			sizeof(m->err));
}

static int send_dir(struct mig *m, const char *sub, uint64_t *sent,
		    double *ms)
{
	long long t0 = io_now_ms();

	if (!conn(m))
		return -1;
	if (img_send(m->pc, m->id, sub, sent, m->err, sizeof(m->err)))
		return -1;
	*ms = io_now_ms() - t0;
	return 0;
}

static uint64_t pages_of(const struct mig *m, const char *sub)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", m->dir, sub);
	return img_pages_bytes(path);
}

/* Pre-copy: rounds until the dirty set stops shrinking, or r->count */
static int precopy(struct mig *m)
{
	long long t0 = io_now_ms();
	char sub[16], prev[16];
	unsigned int k;

	for (k = 0; k < m->r->count; k++) {
		struct round *rd = &m->rounds[k];
		long long t = io_now_ms();

		snprintf(sub, sizeof(sub), "pre-%u", k + 1);
		if (dump(m, sub, k ? prev : NULL, false))
			return -1;
		rd->ms_dump = io_now_ms() - t;
		rd->pages = pages_of(m, sub);
		if (send_dir(m, sub, &rd->sent, &rd->ms_send))
			return -1;
		m->nrounds = k + 1;
		progress(m, "pre-copy",
			 "pre-copy round %u: %.1f MiB of pages dumped in %.0f ms, sent in %.0f ms (%.1f MiB/s)",
			 k + 1, rd->pages / 1048576.0, rd->ms_dump,
			 rd->ms_send, mib_s(rd->sent, rd->ms_send));
		snprintf(prev, sizeof(prev), "%s", sub);
		/* Converged: an eighth of the first round, or no smaller */
		if (k && (rd->pages * 8 <= m->rounds[0].pages ||
			  rd->pages >= m->rounds[k - 1].pages))
			break;
	}
	m->ms_precopy = io_now_ms() - t0;
	return 0;
}

/* Its migr processes in turn, each waited for within wait_ms */
static int park(struct mig *m)
{
	struct ctl_req q = { .op = CTL_PARK,
			     .nargs = 2,
			     .wait_ms = m->r->wait_ms,
			     .lease_ms = MIG_PARTNER_HOLD_MS };
	char err[512], *reply;
	bool ok;

	m->t_park = io_now_ms();
	for (m->nparked = 0; m->nparked < m->nmovers; m->nparked++) {
		int pid = m->movers[m->nparked];

		reply = NULL;
		if (proc_ask(pid, &q, m->r->wait_ms + REQ_SWITCH_STEPS_MS,
			     &reply, err, sizeof(err))) {
			m->park_unknown = true;
			return fail(m, "park of pid %d: %s", pid, err);
		}
		ok = proc_verdict(reply, "park", err, sizeof(err));
		free(reply);
		if (!ok)
			return fail(m, "park of pid %d: %s", pid, err);
	}
	m->ms_park = io_now_ms() - m->t_park;
	progress(m, "park",
		 "parked %d migr process%s in %.0f ms (RDMA objects released)",
		 m->nmovers, m->nmovers > 1 ? "es" : "", m->ms_park);
	return 0;
}

/*
 * The parked processes' partner sessions go with them (pauth.h): lines
 * of grants, each as long as a request may be, each grant naming its
 * owner; none for a root process
 */
static int send_grants(struct mig *m)
{
	struct req q = { .op = REQ_MIG_GRANTS };
	char one[REQ_GRANT_TEXT_MAX + 1];
	unsigned long long start;
	struct req_grant *v;
	size_t len = 0;
	int i, k, n, ret = 0;
	json_t *j;

	v = calloc(PAUTH_MAX, sizeof(*v));
	if (!v)
		return fail(m, "out of memory");
	for (k = 0; k < m->nmovers && !ret; k++) {
		if (proc_start(m->movers[k], &start)) {
			ret = fail(m, "pid %d is gone", m->movers[k]);
			break;
		}
		n = pauth_list(m->movers[k], start, v, PAUTH_MAX, io_now_ms());
		for (i = 0; i < n && i < PAUTH_MAX && !ret; i++) {
			int w;

			v[i].owner = m->nsmovers[k];
			w = req_grant_format(&v[i], one, sizeof(one));
			if (w < 0) {
				ret = fail(m, "a partner grant does not fit a line");
				break;
			}
			if (len)
				q.line[len++] = ',';
			memcpy(q.line + len, one, w + 1);
			len += w;
			/* full: sent; the rest follow */
			if (len + 1 + REQ_GRANT_TEXT_MAX <= REQ_PARTNER_LINE_MAX)
				continue;
			j = ask(m, &q, 10000);
			if (!j)
				ret = -1;
			json_decref(j);
			len = 0;
		}
	}
	if (len && !ret) {
		j = ask(m, &q, 10000);
		if (!j)
			ret = -1;
		json_decref(j);
	}
	free(v);
	return ret;
}

/*
 * Its connections wait, from the final dump on: no packet reaches their
 * sockets here (no reset from a socket CRIU left in repair mode) until
 * the destination has them, or the rollback brings the link up again
 */
static int lock_net(struct mig *m)
{
	char err[256];

	if (!m->ns.own_netns)
		return 0;
	m->link_down = true;
	if (netns_link(m->nsfd, &m->ns, false, false, err, sizeof(err)))
		return fail(m, "pid %d: its interface cannot be locked: %s",
			    m->r->pid, err);
	return 0;
}

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

/* Back to work here: the tree runs again and rebuilds on its device */
static void rollback(struct mig *m)
{
	char *reply, err[512], lost[320] = "", tail[440];
	size_t off = strlen(m->err);
	bool failed = false;
	int i;

	if (m->link_down &&
	    netns_link(m->nsfd, &m->ns, true, false, err, sizeof(err)))
		log_err("migration %s: pid %d: its interface stays down: %s",
			m->id, m->r->pid, err);
	/* A final dump left its TCP sockets in repair mode */
	if (m->ns.own_netns && m->link_down &&
	    tcp_repair_off(m->pids, m->npids) < 0)
		log_err("migration %s: pid %d: its TCP sockets stay in repair mode: %s",
			m->id, m->r->pid, strerror(errno));
	ptree_signal(m->pids, m->npids, SIGCONT);
	/* the parked ones, and one that may be */
	for (i = 0; i < m->nparked + m->park_unknown && !failed; i++) {
		reply = NULL;
		if (proc_ask(m->movers[i],
			     &(struct ctl_req){ .op = CTL_RESUME }, 60000,
			     &reply, err, sizeof(err)) ||
		    !proc_verdict(reply, "resume", err, sizeof(err))) {
			snprintf(m->err + off, sizeof(m->err) - off,
				 "; resuming pid %d here failed too: %s",
				 m->movers[i], err);
			log_err("migration %s: pid %d stays parked here: %s",
				m->id, m->movers[i], err);
			failed = true;
		} else if (!lost[0] &&
			   proc_partner_error(reply, "resume", err,
					      sizeof(err))) {
			/* it runs, but a partner's QP faces its old one */
			snprintf(lost, sizeof(lost), "pid %d: %.300s",
				 m->movers[i], err);
		}
		free(reply);
	}
	if (!failed && lost[0]) {
		snprintf(tail, sizeof(tail),
			 "; pid %d is back on %s, but a partner was not reconnected (%s)",
			 m->r->pid, m->from, lost);
		/* the partner left behind is what the operator must read */
		if (off + strlen(tail) >= sizeof(m->err))
			off = sizeof(m->err) - 1 - strlen(tail);
		snprintf(m->err + off, sizeof(m->err) - off, "%s", tail);
	} else if (!failed) {
		snprintf(m->err + off, sizeof(m->err) - off,
			 "; pid %d runs here again on %s", m->r->pid, m->from);
	}
	log_warn("migration %s of pid %d to %s failed: %s", m->id, m->r->pid,
		 m->r->host, m->err);
}

/*
 * The restore's answer was lost: an abort confirmed, or the fence's
 * bound passed, before the source may run again
 */
static void fence_wait(struct mig *m, long long sent)
{
	long long until = sent + MIG_FENCE_MS + MIG_MARGIN_MS;
	char state[32];

	progress(m, "rollback",
		 "no answer from %s: waiting until its copy is known dead (at most %d s)",
		 m->r->host, io_left_ms(until) / 1000);
	while (io_left_ms(until)) {
		if (!end_on_new(m, "abort", state, sizeof(state)))
			return;
		sleep(2);
	}
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
	json_array_foreach(all, i, one) {
		const json_t *v = json_array_get(json_object_get(one, "resume"), 0);
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
		m->partners += json_integer_value(json_object_get(v, "partners"));
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

	if (end_on_new(m, "state", state, sizeof(state)))
		return -1;
	if (!strcmp(state, "restored") &&
	    end_on_new(m, "commit", state, sizeof(state)))
		return -1;
	if (!strcmp(state, "committed"))
		return 0;
	if (!strcmp(state, "restoring") || !strcmp(state, "restored"))
		return -1;
	return 1;
}

/* Restore there and commit; 1: failed, the source may run; -1: unknown */
static int restore_commit(struct mig *m)
{
	struct req q = { .op = REQ_MIG_RESTORE };
	long long sent = io_now_ms();
	json_t *j;

	snprintf(q.dev, sizeof(q.dev), "%s", m->dev);
	progress(m, "restore", "restoring on %s (device %s)", m->r->host,
		 m->dev);
	j = ask(m, &q, MIG_RESTORE_MS + MIG_MARGIN_MS);
	if (!j) {
		/* an error reply: the copy there is dead; none: maybe not */
		if (!m->answered)
			fence_wait(m, sent);
		return 1;
	}
	m->ms_blackout = io_now_ms() - m->t_park;
	m->pid_there = migr_json_int(j, "pid", 1, INT32_MAX, m->r->pid);
	rebuild_ms(m, j);
	json_decref(j);
	q = (struct req){ .op = REQ_MIG_END };
	snprintf(q.line, sizeof(q.line), "commit");
	j = ask(m, &q, 10000);
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

static void mig_free(struct mig *m)
{
	int w;

	for (w = 0; w < REQ_HOLD_KINDS; w++)
		free(m->hold[w]);
	peer_close(m->pc);
	if (m->nsfd >= 0)
		close(m->nsfd);
	unclaim(m->r->pid);
	free(m);
}

/* The tree here goes: its copy there runs */
static void committed_here(struct mig *m)
{
	ptree_signal(m->pids, m->npids, SIGKILL);
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
		log_warn("migration %s: %s confirms the commit: pid %d here goes",
			 m->id, m->r->host, m->r->pid);
		committed_here(m);
	} else if (rc > 0) {
		fail(m, "%s says its copy of pid %d is gone", m->r->host,
		     m->r->pid);
		rollback(m);
		img_remove(m->id, true);
	} else {
		log_err("migration %s: %s did not answer for %d min: pid %d stays stopped here",
			m->id, m->r->host, MIG_SETTLE_MS / 60000, m->r->pid);
	}
	mig_free(m);
	return NULL;
}

/* Hand m to settle_thread(); false if it cannot start (m stays ours) */
static bool settle_later(struct mig *m)
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

static void report(struct mig *m, struct sbuf *out, long long t0)
{
	uint64_t pre = 0;
	unsigned int k;

	sb_printf(out, "{\"v\":%d,\"ok\":true,\"pid\":%d,\"pid_there\":%d,\"to\":",
		  REQ_VERSION, m->r->pid, m->pid_there);
	sb_json_str(out, m->r->host);
	sb_add(out, ",\"device\":", 10);
	sb_json_str(out, m->dev);
	sb_add(out, ",\"from\":", 8);
	sb_json_str(out, m->from);
	sb_printf(out, ",\"id\":\"%s\",\"processes\":%d,\"migr_processes\":%d,\"threads\":%d,\"rounds\":[",
		  m->id, m->npids, m->nmovers, m->ntids);
	for (k = 0; k < m->nrounds; k++) {
		pre += m->rounds[k].sent;
		sb_printf(out,
			  "%s{\"pages_bytes\":%" PRIu64 ",\"sent_bytes\":%" PRIu64
			  ",\"dump_ms\":%.1f,\"send_ms\":%.1f}",
			  k ? "," : "", m->rounds[k].pages, m->rounds[k].sent,
			  m->rounds[k].ms_dump, m->rounds[k].ms_send);
	}
	sb_printf(
		out,
		"],\"phases_ms\":{\"check\":%.1f,\"precopy\":%.1f,\"park\":%.1f,\"dump\":%.1f,"
		"\"transfer\":%.1f,\"restore\":%.1f,\"rebuild\":%.1f,"
		"\"partner_reconnect\":%.1f},\"blackout_ms\":%.1f,"
		"\"partners\":%u,\"partners_kept\":%u,\"partner_blackout_ms\":%.1f,"
		"\"numbers\":{\"kept\":%u,\"translated\":%u,\"held\":%u,\"claimed\":%u},"
		"\"total_ms\":%.1f,\"precopy_bytes\":%" PRIu64
		",\"final_bytes\":%" PRIu64 ",\"final_pages_bytes\":%" PRIu64
		"}",
		m->ms_check, m->ms_precopy, m->ms_park, m->ms_dump, m->ms_send,
		m->ms_restore, m->ms_rebuild, m->ms_partner, m->ms_blackout,
		m->partners, m->partners_kept, m->ms_partner_blackout,
		m->numbers_kept, m->numbers_translated, m->numbers_held,
		m->numbers_claimed, (double)(io_now_ms() - t0), pre,
		m->final_sent, m->final_pages);
}

/* 1: m was handed to a settle thread */
static int run(struct mig *m, struct sbuf *out)
{
	long long t0 = io_now_ms(), t;
	char state[32], prev[16];
	int rc;

	if (checks(m))
		goto refused;
	m->ms_check = io_now_ms() - t0;
	progress(m, "check",
		 "%s accepts pid %d (%d processes, %d using migr; %d threads), CRIU %s",
		 m->r->host, m->r->pid, m->npids, m->nmovers, m->ntids,
		 m->criu_ver);
	hold_numbers(m);
	if (precopy(m))
		goto refused;
	if (park(m)) {
		/* migr processes parked before the one that failed resume */
		if (m->park_unknown || m->nparked)
			goto back;
		goto refused;
	}
	if (send_grants(m))
		goto back;
	t = io_now_ms();
	if (lock_net(m))
		goto back;
	snprintf(prev, sizeof(prev), "pre-%u", m->nrounds);
	if (dump(m, "final", m->nrounds ? prev : NULL, true))
		goto back;
	m->ms_dump = io_now_ms() - t;
	m->final_pages = pages_of(m, "final");
	/* The tree as dumped (stopped now): what is continued or killed */
	if (ptree_read(m->r->pid, m->pids, &m->npids, m->tids, &m->ntids,
		       MIG_TREE_MAX))
		m->npids = 1, m->pids[0] = m->r->pid;
	progress(m, "dump", "dumped in %.0f ms (%.1f MiB of pages)",
		 m->ms_dump, m->final_pages / 1048576.0);
	if (send_dir(m, "final", &m->final_sent, &m->ms_send))
		goto back;
	progress(m, "transfer", "sent %.1f MiB in %.0f ms (%.1f MiB/s)",
		 m->final_sent / 1048576.0, m->ms_send,
		 mib_s(m->final_sent, m->ms_send));
	rc = restore_commit(m);
	if (rc > 0)
		goto back_unaborted;
	if (rc < 0) {
		fail(m, "%s did not confirm the commit and cannot be asked: pid %d is left stopped here (its copy there may run); migrd asks again every %d s for %d min, then kills it or resumes it as the answer says",
		     m->r->host, m->r->pid, MIG_SETTLE_EVERY_MS / 1000,
		     MIG_SETTLE_MS / 60000);
		reply_error(out, m->err);
		if (settle_later(m))
			return 1;
		out->len = 0;
		fail(m, "%s did not confirm the commit and cannot be asked: pid %d is left stopped here (its copy there may run); resume it with kill -CONT and 'migrctl' only once that copy is known dead",
		     m->r->host, m->r->pid);
		reply_error(out, m->err);
		return 0;
	}
	committed_here(m);
	progress(m, "done",
		 "pid %d runs on %s as pid %d (device %s); blackout %.0f ms, total %.0f ms",
		 m->r->pid, m->r->host, m->pid_there, m->dev, m->ms_blackout,
		 (double)(io_now_ms() - t0));
	report(m, out, t0);
	return 0;
back:
	end_on_new(m, "abort", state, sizeof(state));
back_unaborted:
	rollback(m);
	img_remove(m->id, true);
	reply_error(out, m->err);
	return 0;
refused:
	if (m->checked)
		end_on_new(m, "abort", state, sizeof(state));
	log_info("migration of pid %d to %s refused: %s", m->r->pid,
		 m->r->host, m->err);
	if (m->id[0])
		img_remove(m->id, true);
	reply_error(out, m->err);
	return 0;
}

void migrate_run(const struct req *r, const struct client *c,
		 struct sbuf *out)
{
	struct mig *m = calloc(1, sizeof(*m));
	char err[128];

	if (!m) {
		reply_error(out, "out of memory");
		return;
	}
	if (!claim(r->pid)) {
		snprintf(err, sizeof(err), "pid %d is already being migrated",
			 r->pid);
		reply_error(out, err);
		free(m);
		return;
	}
	m->r = r;
	m->c = c;
	m->nsfd = -1;
	log_info("migrating pid %d to %s (device %s, pre-copy %u), asked by uid %u",
		 r->pid, r->host, r->dev[0] ? r->dev : "-", r->count,
		 (unsigned int)c->uid);
	if (!run(m, out))
		mig_free(m);
}
