/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
#ifndef MIGRD_QPOWNER_H
#define MIGRD_QPOWNER_H

#include <stddef.h>
#include <stdint.h>

/*
 * Who owns QP qpn on RDMA device ibdev, from the kernel's resource tracking
 * (RDMA netlink, RDMA_NLDEV_CMD_RES_QP_GET): *pid, or 0 and the kernel
 * user's name in kern for a kernel QP (neither: its creating thread has
 * exited). 0; 1 if ibdev has no such QP; or -1 if the query failed (a
 * dump interrupted every time it was issued included): never 1 for a
 * failure. Either has a one-line err ("no QP ...", "the kernel's QP query
 * for QP 0x... on ... failed: why").
 */
int qpn_owner(const char *ibdev, uint32_t qpn, int *pid, char *kern,
	      size_t kernlen, char *err, size_t errlen);

/* The kernel's ib_qp_type for UD, as netlink reports a QP's type */
#define QPOWNER_TYPE_UD 4

/* One QP of a device and the thread the kernel says created it */
struct qp_holder {
	uint32_t qpn;
	int pid; /* 0: a kernel QP */
	int type; /* the kernel's ib_qp_type; -1 if it did not say */
};

/*
 * Every QP of RDMA device ibdev (at most max into out): how many, or -1
 * with a one-line err if the kernel's dump failed (or was interrupted every
 * time it was issued).
 */
int qpn_list(const char *ibdev, struct qp_holder *out, int max, char *err,
	     size_t errlen);

/*
 * Tests only (migrd --test-qp-owners FILE): FILE's lines stand in for the
 * kernel's answers, each GID a device (migrd(8)): "GID QPN PID", then
 * optionally "fail ERRNO", "intr N" or "type T"; NULL: the kernel's.
 */
void qpowner_stand_in(const char *path);

#endif
