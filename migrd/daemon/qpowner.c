// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <util/rdma_nl.h>

#include "log.h"
#include "qpowner.h"

#define PORTS_MAX 32
/*
 * A dump is issued this many times in all while the kernel flags it as
 * interrupted (NLM_F_DUMP_INTR: QPs created or destroyed while it ran, so
 * it may have missed or repeated some); then the lookup fails, saying so.
 */
#define DUMP_TRIES 4

struct dev_lookup {
	const char *name;
	int index;
};

struct qp_lookup {
	const char *dev; /* the device's name */
	uint32_t qpn; /* dumps: the one looked for */
	int pid, found;
	char kern[64];
	/* a listing (qpn_list) instead of one QP: every QP into list */
	struct qp_holder *list;
	int max, n;
	int dumps; /* issued for this lookup (the stand-in counts them) */
};

/* Tests: "GID QPN PID [fail ERRNO|intr N|type T]" lines, a device per GID */
static const char *stand_in;

void qpowner_stand_in(const char *path)
{
	stand_in = path;
}

static int dev_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};
	struct dev_lookup *d = arg;

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1,
			rdmanl_policy) < 0 ||
	    !tb[RDMA_NLDEV_ATTR_DEV_NAME] || !tb[RDMA_NLDEV_ATTR_DEV_INDEX])
		return NL_OK;
	if (!strcmp(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), d->name))
		d->index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	return NL_OK;
}

/* One QP's attributes (a reply's, or an entry of a dump) into q */
static void fill(struct nlattr **tb, struct qp_lookup *q)
{
	struct nlattr *a;

	q->found = 1;
	a = tb[RDMA_NLDEV_ATTR_RES_PID];
	if (a && nla_len(a) >= 4)
		q->pid = nla_get_u32(a);
	a = tb[RDMA_NLDEV_ATTR_RES_KERN_NAME];
	if (a && nla_len(a) > 0)
		snprintf(q->kern, sizeof(q->kern), "%.*s", nla_len(a),
			 (char *)nla_data(a));
}

static int qp_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) <
	    0)
		return NL_OK;
	fill(tb, arg);
	return NL_OK;
}

/* A dump lists the device's QPs nested: RES_QP, then one RES_QP_ENTRY each */
static int dump_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {}, *e[RDMA_NLDEV_ATTR_MAX];
	struct qp_lookup *q = arg;
	struct nlattr *pos;
	int rem;

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) <
		    0 ||
	    !tb[RDMA_NLDEV_ATTR_RES_QP])
		return NL_OK;
	nla_for_each_nested(pos, tb[RDMA_NLDEV_ATTR_RES_QP], rem)
	{
		memset(e, 0, sizeof(e));
		if (q->list) {
			struct nlattr *a;

			if (q->n == q->max ||
			    nla_parse_nested(e, RDMA_NLDEV_ATTR_MAX - 1, pos,
					     NULL) < 0 ||
			    !e[RDMA_NLDEV_ATTR_RES_LQPN] ||
			    nla_len(e[RDMA_NLDEV_ATTR_RES_LQPN]) < 4)
				continue;
			q->list[q->n].qpn =
				nla_get_u32(e[RDMA_NLDEV_ATTR_RES_LQPN]);
			a = e[RDMA_NLDEV_ATTR_RES_PID];
			q->list[q->n].pid =
				a && nla_len(a) >= 4 ? (int)nla_get_u32(a) : 0;
			a = e[RDMA_NLDEV_ATTR_RES_TYPE];
			q->list[q->n].type =
				a && nla_len(a) >= 1 ? nla_get_u8(a) : -1;
			q->n++;
			continue;
		}
		if (q->found ||
		    nla_parse_nested(e, RDMA_NLDEV_ATTR_MAX - 1, pos, NULL) <
			    0 ||
		    !e[RDMA_NLDEV_ATTR_RES_LQPN] ||
		    nla_len(e[RDMA_NLDEV_ATTR_RES_LQPN]) < 4 ||
		    nla_get_u32(e[RDMA_NLDEV_ATTR_RES_LQPN]) != q->qpn)
			continue;
		fill(e, q);
	}
	return NL_OK;
}

static int err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	*(int *)arg = -e->error;
	return NL_STOP;
}

/*
 * Send msg (freed) and read its answer into q with cb: 0 (*kerr the error
 * the kernel answered, if any), or libnl's error (-NLE_DUMP_INTR: a dump
 * the kernel flagged as interrupted, read to its end)
 */
static int exchange(struct nl_sock *nl, struct nl_msg *msg,
		    nl_recvmsg_msg_cb_t cb, struct qp_lookup *q, int *kerr)
{
	int ret = nl_send_auto(nl, msg);

	nlmsg_free(msg);
	if (ret < 0)
		return ret;
	nl_socket_modify_err_cb(nl, NL_CB_CUSTOM, err_cb, kerr);
	nl_socket_modify_cb(nl, NL_CB_VALID, NL_CB_CUSTOM, cb, q);
	ret = nl_recvmsgs_default(nl);
	return ret < 0 && !*kerr ? ret : 0;
}

/*
 * The stand-in's entry for QP qpn on device dev (a GID): 1 with its
 * holder, the error the kernel answers a query for it with (fail, or 0)
 * and how many dumps of each lookup are interrupted (intr); 0 if none;
 * -1 if the table cannot be read.
 */
static int stand_in_entry(const char *dev, uint32_t qpn, int *pid, int *fail,
			  int *intr)
{
	char line[128], gid[34], word[16];
	unsigned long q;
	int n, v, ret = 0;
	FILE *f = fopen(stand_in, "re");

	if (!f)
		return -NLE_FAILURE;
	while (!ret && fgets(line, sizeof(line), f)) {
		n = sscanf(line, "%33s %lu %d %15s %d", gid, &q, pid, word, &v);
		if (n < 3 || strcmp(gid, dev) || q != qpn)
			continue;
		*fail = n == 5 && !strcmp(word, "fail") ? v : 0;
		*intr = n == 5 && !strcmp(word, "intr") ? v : 0;
		ret = 1;
	}
	fclose(f);
	return ret;
}

/*
 * A query on port port, as the kernel answers it: one port per device; a
 * QP with interrupted dumps has no port yet (EAGAIN), as one in RESET.
 */
static int stand_in_find(uint32_t port, struct qp_lookup *q, int *kerr)
{
	int pid, fail, intr, rc;

	rc = stand_in_entry(q->dev, q->qpn, &pid, &fail, &intr);
	if (rc < 0)
		return rc;
	if (port > 1)
		*kerr = EINVAL;
	else if (!rc)
		*kerr = ENOENT;
	else if (fail || intr)
		*kerr = fail ? fail : EAGAIN;
	else
		q->found = 1, q->pid = pid;
	return 0;
}

/*
 * A dump of device dev (a GID), interrupted while an entry of it says so
 * (the first N of each lookup's); an entry that fails answers its error.
 */
static int stand_in_dump(struct qp_lookup *q, int *kerr)
{
	char line[128], gid[34], word[16];
	int n, pid, v, intr = 0;
	unsigned long qpn;
	FILE *f = fopen(stand_in, "re");

	q->dumps++;
	if (!f)
		return -NLE_FAILURE;
	while (fgets(line, sizeof(line), f)) {
		n = sscanf(line, "%33s %lu %d %15s %d", gid, &qpn, &pid, word,
			   &v);
		if (n < 3 || strcmp(gid, q->dev) || qpn > 0xffffff)
			continue;
		intr |= n == 5 && !strcmp(word, "intr") && q->dumps <= v;
		if (!q->list && qpn != q->qpn)
			continue;
		if (n == 5 && !strcmp(word, "fail"))
			*kerr = v;
		else if (q->list && q->n < q->max)
			q->list[q->n++] = (struct qp_holder){
				qpn, pid,
				n == 5 && !strcmp(word, "type") ? v : -1
			};
		else if (!q->list)
			q->found = 1, q->pid = pid;
	}
	fclose(f);
	return intr ? -NLE_DUMP_INTR : 0;
}

static int find_qp(struct nl_sock *nl, int index, uint32_t port, uint32_t qpn,
		   struct qp_lookup *q, int *kerr)
{
	struct nl_msg *msg;

	if (stand_in)
		return stand_in_find(port, q, kerr);
	msg = nlmsg_alloc_simple(
		RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 0);
	if (!msg)
		return -NLE_NOMEM;
	if (nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, index) ||
	    nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, port) ||
	    nla_put_u32(msg, RDMA_NLDEV_ATTR_RES_LQPN, qpn)) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	/* One reply (or one error) answers a non-dump request */
	return exchange(nl, msg, qp_cb, q, kerr);
}

/*
 * The kernel finds a QP by number only on its port, and a QP just created
 * (RESET) has none yet; a dump of the device's QPs lists it.
 */
static int dump_qps(struct nl_sock *nl, int index, struct qp_lookup *q,
		    int *kerr)
{
	struct nl_msg *msg;

	if (stand_in)
		return stand_in_dump(q, kerr);
	msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
						  RDMA_NLDEV_CMD_RES_QP_GET),
				 NLM_F_DUMP);
	if (!msg)
		return -NLE_NOMEM;
	if (nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, index)) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	return exchange(nl, msg, dump_cb, q, kerr);
}

/*
 * A dump, issued again while the kernel flags it as interrupted (what it
 * read is dropped), up to DUMP_TRIES times: dump_qps()'s answer
 */
static int dump_whole(struct nl_sock *nl, int index, struct qp_lookup *q,
		      int *kerr)
{
	int ret, i;

	for (i = 1;; i++) {
		q->found = q->pid = q->n = 0;
		q->kern[0] = 0;
		*kerr = 0;
		ret = dump_qps(nl, index, q, kerr);
		if (ret != -NLE_DUMP_INTR || i == DUMP_TRIES)
			return ret;
		log_dbg("QP dump of %s interrupted (QPs created or destroyed while it ran): issued again, %d of %d",
			q->dev, i + 1, DUMP_TRIES);
	}
}

/* Why a query failed: libnl's error (nlerr), else the kernel's (kerr) */
static void failure(const struct qp_lookup *q, int nlerr, int kerr, char *err,
		    size_t errlen)
{
	char why[128];

	if (nlerr == -NLE_DUMP_INTR)
		snprintf(
			why, sizeof(why),
			"the dump was interrupted %d times in a row (QPs created or destroyed while it ran)",
			DUMP_TRIES);
	else if (nlerr)
		snprintf(why, sizeof(why), "netlink: %s", nl_geterror(nlerr));
	else
		snprintf(why, sizeof(why), "%s", strerror(kerr));
	if (q->list)
		snprintf(err, errlen, "the kernel's QP dump of %s failed: %s",
			 q->dev, why);
	else
		snprintf(err, errlen,
			 "the kernel's QP query for QP 0x%x on %s failed: %s",
			 q->qpn, q->dev, why);
}

/*
 * A netlink socket into *nl (none for the stand-in), with d->index the
 * device named d->name: 0, or -1 with err
 */
static int open_dev(struct dev_lookup *d, struct nl_sock **nl, char *err,
		    size_t errlen)
{
	*nl = NULL;
	if (stand_in)
		return 0;
	*nl = rdmanl_socket_alloc();
	if (!*nl) {
		snprintf(err, errlen, "cannot open an RDMA netlink socket");
		return -1;
	}
	if (rdmanl_get_devices(*nl, dev_cb, d)) {
		snprintf(err, errlen, "RDMA netlink device query failed");
	} else if (d->index < 0) {
		snprintf(err, errlen, "no RDMA device '%s'", d->name);
	} else {
		return 0;
	}
	nl_socket_free(*nl);
	*nl = NULL;
	return -1;
}

/*
 * A QP lookup names a port (the kernel refuses one without): each is tried
 * until the QP is found, the port does not exist (EINVAL), or the kernel
 * answers another error. 0 (*kerr: ENOENT if on no port, or the error),
 * or libnl's error. *portless: the QP is there, on no port yet.
 */
static int by_port(struct nl_sock *nl, int index, struct qp_lookup *q,
		   int *kerr, bool *portless)
{
	uint32_t port;
	int ret;

	for (port = 1; port <= PORTS_MAX; port++) {
		*kerr = 0;
		ret = find_qp(nl, index, port, q->qpn, q, kerr);
		if (ret)
			return ret;
		if (q->found || (*kerr && *kerr != ENOENT && *kerr != EAGAIN))
			break;
		*portless |= *kerr == EAGAIN; /* there, not on this port */
	}
	if ((*kerr == EINVAL && port > 1) || *kerr == EAGAIN)
		*kerr = ENOENT; /* past the last port, or on none */
	return 0;
}

int qpn_owner(const char *ibdev, uint32_t qpn, int *pid, char *kern,
	      size_t kernlen, char *err, size_t errlen)
{
	struct dev_lookup d = { .name = ibdev, .index = -1 };
	struct qp_lookup q = { .dev = ibdev, .qpn = qpn };
	struct nl_sock *nl;
	bool portless = false;
	int kerr = 0, ret;

	if (open_dev(&d, &nl, err, errlen))
		return -1;
	ret = by_port(nl, d.index, &q, &kerr, &portless);
	/* A QP with no port yet (just created, RESET): in a dump */
	if (!ret && !q.found && portless && (!kerr || kerr == ENOENT))
		ret = dump_whole(nl, d.index, &q, &kerr);
	nl_socket_free(nl);
	if (ret || (kerr && kerr != ENOENT)) {
		failure(&q, ret, kerr, err, errlen);
		return -1;
	}
	if (!q.found) {
		snprintf(err, errlen, "no QP %u on %s", qpn, ibdev);
		return 1;
	}
	*pid = q.pid;
	snprintf(kern, kernlen, "%s", q.kern);
	return 0;
}

int qpn_list(const char *ibdev, struct qp_holder *out, int max, char *err,
	     size_t errlen)
{
	struct dev_lookup d = { .name = ibdev, .index = -1 };
	struct qp_lookup q = { .dev = ibdev, .list = out, .max = max };
	struct nl_sock *nl;
	int kerr = 0, ret;

	if (open_dev(&d, &nl, err, errlen))
		return -1;
	ret = dump_whole(nl, d.index, &q, &kerr);
	nl_socket_free(nl);
	if (ret || (kerr && kerr != ENOENT)) {
		failure(&q, ret, kerr, err, errlen);
		return -1;
	}
	return q.n;
}
