// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Who holds a QP of this host (holder.h): the kernel's RDMA resource
 * tracking, asked on each device with the QP's GID.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "holder.h"
#include "locate.h"
#include "migrd.h"
#include "qpowner.h"
#include "registry.h"

/*
 * The holder of QP qpn on one of ndev devices: 0, 1 if on none, -1 if
 * the devices are unreadable or a device's query failed (err says which
 * and why: one failure is no "none", whatever the others answer)
 */
static int holder_on(char (*devs)[LOCATE_NAME_MAX], int ndev, uint32_t qpn,
		     int *pid, char *kern, size_t kernlen, char *err,
		     size_t errlen)
{
	char e[256];
	int i, rc, ret = 1;

	*pid = 0;
	kern[0] = 0;
	if (ndev < 0 && errno != ENOENT) {
		snprintf(err, errlen, "cannot read %s: %s", LOCATE_SYSFS,
			 strerror(errno));
		return -1;
	}
	/* Twins on one netdev share GIDs: the QP is on one of them */
	for (i = 0; i < ndev; i++) {
		rc = qpn_owner(devs[i], qpn, pid, kern, kernlen, e, sizeof(e));
		if (!rc) {
			/* the kernel names the creating thread */
			if (*pid > 0)
				*pid = proc_tgid(*pid);
			return 0;
		}
		/* the first failure's why, not a later device's "no QP" */
		if (rc < 0 && ret > 0)
			snprintf(err, errlen, "%s", e);
		if (rc < 0)
			ret = -1;
	}
	*pid = 0;
	return ret;
}

int holder_devices(const char *gid, char (*devs)[LOCATE_NAME_MAX])
{
	int n;

	if (migrd.test_qp_owners) {
		snprintf(devs[0], LOCATE_NAME_MAX, "%s", gid);
		return 1;
	}
	n = gid_devices(LOCATE_SYSFS, gid, devs, LOCATE_DEV_MAX);
	return n > 0 ? n : 0;
}

int kernel_holder(const char *gid, uint32_t qpn, int *pid, char *kern,
		  size_t kernlen, char *err, size_t errlen)
{
	char devs[LOCATE_DEV_MAX][LOCATE_NAME_MAX],
		devs2[LOCATE_DEV_MAX][LOCATE_NAME_MAX];
	int ndev, n2, ret;

	*pid = 0;
	kern[0] = 0;
	/* the stand-in's devices are its GIDs, asked as the kernel is */
	if (migrd.test_qp_owners) {
		snprintf(devs[0], sizeof(devs[0]), "%s", gid);
		return holder_on(devs, 1, qpn, pid, kern, kernlen, err, errlen);
	}
	ndev = gid_devices(LOCATE_SYSFS, gid, devs, LOCATE_DEV_MAX);
	ret = holder_on(devs, ndev, qpn, pid, kern, kernlen, err, errlen);
	if (ret > 0) {
		/* not on the devices remembered: one may have taken the GID */
		n2 = gid_devices_recheck(LOCATE_SYSFS, gid, devs2,
					 LOCATE_DEV_MAX);
		if (n2 > 0 &&
		    (n2 != ndev || memcmp(devs, devs2, sizeof(devs[0]) * n2)))
			ret = holder_on(devs2, n2, qpn, pid, kern, kernlen, err,
					errlen);
	}
	return ret;
}

int asker_owns(int tgid, const char *gid, uint32_t qpn, char *err,
	       size_t errlen)
{
	char kern[64];
	int pid, rc;

	rc = kernel_holder(gid, qpn, &pid, kern, sizeof(kern), err, errlen);
	if (rc < 0)
		return -1;
	if (!rc && pid > 0 && pid == tgid)
		return 1;
	/* not the asker's: who the kernel said holds it, for the refusal */
	if (rc)
		snprintf(err, errlen, "no such QP");
	else if (pid > 0)
		snprintf(err, errlen, "held by pid %d", pid);
	else if (kern[0])
		snprintf(err, errlen, "held by the kernel (%s)", kern);
	else
		snprintf(
			err, errlen,
			"held by a thread that has exited (the kernel names no pid)");
	return 0;
}
