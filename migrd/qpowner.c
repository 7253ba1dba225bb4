// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <util/rdma_nl.h>

#include "qpowner.h"

#define PORTS_MAX 32

struct dev_lookup {
	const char *name;
	int index;
};

struct qp_lookup {
	int pid, found;
	char kern[64];
};

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

static int qp_cb(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};
	struct qp_lookup *q = arg;
	struct nlattr *a;

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) <
	    0)
		return NL_OK;
	q->found = 1;
	a = tb[RDMA_NLDEV_ATTR_RES_PID];
	if (a && nla_len(a) >= 4)
		q->pid = nla_get_u32(a);
	a = tb[RDMA_NLDEV_ATTR_RES_KERN_NAME];
	if (a && nla_len(a) > 0)
		snprintf(q->kern, sizeof(q->kern), "%.*s", nla_len(a),
			 (char *)nla_data(a));
	return NL_OK;
}

static int err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	*(int *)arg = -e->error;
	return NL_STOP;
}

static int find_qp(struct nl_sock *nl, int index, uint32_t port, uint32_t qpn,
		   struct qp_lookup *q, int *kerr)
{
	struct nl_msg *msg;
	int ret;

	msg = nlmsg_alloc_simple(
		RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 0);
	if (!msg)
		return -1;
	if (nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, index) ||
	    nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, port) ||
	    nla_put_u32(msg, RDMA_NLDEV_ATTR_RES_LQPN, qpn)) {
		nlmsg_free(msg);
		return -1;
	}
	ret = nl_send_auto(nl, msg);
	nlmsg_free(msg);
	if (ret < 0)
		return -1;
	nl_socket_modify_err_cb(nl, NL_CB_CUSTOM, err_cb, kerr);
	nl_socket_modify_cb(nl, NL_CB_VALID, NL_CB_CUSTOM, qp_cb, q);
	/* One reply (or one error) answers a non-dump request */
	ret = nl_recvmsgs_default(nl);
	return ret < 0 && !*kerr ? -1 : 0;
}

int qpn_owner(const char *ibdev, uint32_t qpn, int *pid, char *kern,
	      size_t kernlen, char *err, size_t errlen)
{
	struct dev_lookup d = { .name = ibdev, .index = -1 };
	struct qp_lookup q = {};
	struct nl_sock *nl;
	int kerr = 0, ret = -1;
	uint32_t port;

	nl = rdmanl_socket_alloc();
	if (!nl) {
		snprintf(err, errlen, "cannot open an RDMA netlink socket");
		return -1;
	}
	if (rdmanl_get_devices(nl, dev_cb, &d)) {
		snprintf(err, errlen, "RDMA netlink device query failed");
		goto out;
	}
	if (d.index < 0) {
		snprintf(err, errlen, "no RDMA device '%s'", ibdev);
		goto out;
	}
	/*
	 * A QP lookup names a port (the kernel refuses one without): try each
	 * until the QP is found or the port does not exist (EINVAL).
	 */
	for (port = 1; port <= PORTS_MAX; port++) {
		kerr = 0;
		if (find_qp(nl, d.index, port, qpn, &q, &kerr)) {
			snprintf(err, errlen, "RDMA netlink QP query failed");
			goto out;
		}
		if (q.found || (kerr && kerr != ENOENT && kerr != EAGAIN))
			break;
	}
	if (kerr == EINVAL && port > 1)
		kerr = ENOENT; /* past the last port */
	if (kerr || !q.found) {
		snprintf(err, errlen, "no QP %u on %s%s%s", qpn, ibdev,
			 kerr && kerr != ENOENT ? ": " : "",
			 kerr && kerr != ENOENT ? strerror(kerr) : "");
		if (!kerr || kerr == ENOENT)
			ret = 1;
		goto out;
	}
	*pid = q.pid;
	snprintf(kern, kernlen, "%s", q.kern);
	ret = 0;
out:
	nl_socket_free(nl);
	return ret;
}
