// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A migration's checks (migrate_src.h), said before anything is touched:
 * who asks, the tree and its migr processes here, then the destination's
 * mig-check
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "criu_run.h"
#include "images.h"
#include "migrate_src.h"
#include "ptree.h"
#include "registry.h"

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
		return mig_fail(m, "pid %d is gone", m->r->pid);
	if (own && !init)
		return mig_fail(
			m,
			"pid %d is in a pid namespace of its own but is not its init (pid 1 there): migrate the init",
			m->r->pid);
	rc = netns_open_other(m->r->pid, &m->nsfd, &m->netns_ino);
	if (rc < 0)
		return mig_fail(m, "pid %d is gone", m->r->pid);
	if (rc && netns_read(m->nsfd, &m->ns, err, sizeof(err)))
		return mig_fail(m,
				"pid %d: its network namespace cannot move: %s",
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
			here = ((struct sockaddr_in *)i->ifa_addr)
				       ->sin_addr.s_addr == a4.s_addr;
		else
			here = !memcmp(
				&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
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
			return mig_fail(
				m,
				"pid %d: its tree has more than %d migr processes",
				m->r->pid, REQ_MOVERS_MAX);
		m->movers[m->nmovers] = m->pids[i];
		m->nsmovers[m->nmovers] = ns_pid(m->pids[i]);
		if (m->nsmovers[m->nmovers] <= 0)
			return mig_fail(m, "pid %d is gone", m->pids[i]);
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
			return mig_fail(m, "no migr process with pid %d",
					m->r->pid);
		return mig_fail(
			m,
			"pid %d: its process tree is gone or has more than %d threads",
			m->r->pid, MIG_TREE_MAX);
	}
	/*
	 * librdmacm's connections live in the kernel (the rdma_cm file's
	 * ids, bound to this host's device and address): CRIU cannot dump
	 * them, nor could they be rebuilt there
	 */
	fd = ptree_fd_to(m->pids, m->npids, RDMA_CM_FILE, &pid);
	if (fd >= 0)
		return mig_fail(
			m,
			"pid %d uses the RDMA connection manager (fd %d %s): its connections are kernel state that cannot move (not supported)",
			pid, fd, RDMA_CM_FILE);
	if (find_movers(m))
		return -1;
	if (!m->nmovers)
		return mig_fail(m,
				"no migr process with pid %d, nor in its tree",
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
static int tree_qps(int mover, const json_t *j, struct tree_qp **v, size_t *n)
{
	const json_t *ctx, *qp;
	size_t i, k;

	json_array_foreach (json_object_get(j, "contexts"), i, ctx) {
		char lower[32];

		if (!migr_json_text(ctx, "lower", lower, sizeof(lower)))
			continue;
		json_array_foreach (json_object_get(ctx, "qps"), k, qp) {
			struct tree_qp *w, e = { .mover = mover };

			e.qpn = migr_json_int(qp, "qpn", 0, 0xffffff, 0);
			e.dest = migr_json_int(qp, "dest_qpn", 0, 0xffffff, 0);
			/* connected (RTR or later), to another process */
			if (!e.dest ||
			    json_is_true(json_object_get(qp, "self")) ||
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
			return mig_fail(
				m,
				"pids %d and %d of the tree are each other's RDMA partners (QPs 0x%x and 0x%x on %s): moving both is not supported yet",
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
			return mig_fail(m, "%s", err);
		}
		j = migr_json_parse(reply, strlen(reply));
		free(reply);
		if (json_object_get(j, "parked")) {
			json_decref(j);
			free(qps);
			return mig_fail(m, "pid %d is parked: resume it first",
					pid);
		}
		ctx = json_array_get(json_object_get(j, "contexts"), 0);
		if (!ctx || !migr_json_text(ctx, "lower", from, sizeof(from))) {
			json_decref(j);
			free(qps);
			return mig_fail(m, "pid %d has no open migr device",
					pid);
		}
		if ((m->nmovers > 1 && tree_qps(i, j, &qps, &nqps)) ||
		    hold_collect(m, j)) {
			json_decref(j);
			free(qps);
			return mig_fail(m, "out of memory");
		}
		json_decref(j);
		if (!i)
			snprintf(m->from, sizeof(m->from), "%s", from);
		if (!i &&
		    !migr_json_text(ctx, "device", m->twin, sizeof(m->twin)))
			m->twin[0] = 0;
	}
	if (nqps)
		ret = partners_within(m, qps, nqps);
	free(qps);
	return ret;
}

int mig_checks(struct mig *m)
{
	struct req q = { .op = REQ_MIG_CHECK };
	char err[512];
	size_t off = 0;
	json_t *j;
	uint8_t rnd[REQ_MIG_ID_LEN / 2];
	int i;

	if (m->c->uid != 0)
		return mig_fail(
			m,
			"permission denied: only root may migrate a process (CRIU runs as root)");
	if (tree_checks(m))
		return -1;
	if (host_is_here(m->r->host))
		return mig_fail(
			m,
			"%s is this host: migrate moves a process to another host (migrctl switch moves it between devices here)",
			m->r->host);
	if (criu_plugin_missing(" here", err, sizeof(err)))
		return mig_fail(m, "%s", err);
	if (namespaces(m))
		return -1;
	if (movers_check(m))
		return -1;
	snprintf(m->dev, sizeof(m->dev), "%s",
		 m->r->dev[0] ? m->r->dev : m->from);
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return mig_fail(m, "no random bytes: %s", strerror(errno));
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
			return mig_fail(
				m,
				"pid %d: its %d threads do not fit one request (at most %d bytes of thread ids)",
				m->r->pid, m->ntids, REQ_PARTNER_LINE_MAX);
	}
	j = mig_ask(m, &q, 30000);
	if (!j)
		return -1;
	json_decref(j);
	m->checked = true;
	return 0;
}
