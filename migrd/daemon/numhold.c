// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * See numhold.h. migrd speaks to the uverbs file itself (the ioctl
 * framework of <rdma/rdma_user_ioctl.h>), not through libibverbs: a
 * daemon must not load verbs providers, migr's among them, to hold a few
 * numbers. The context is made with GET_CONTEXT, which rxe takes without
 * driver data. Every call names rxe's driver id, which the kernel checks
 * against the device's before anything else: on another driver, whose
 * driver-namespace ids mean other methods, nothing runs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/migr_rxe_abi.h>
#include <rdma/rdma_user_ioctl.h>

#include "numhold.h"

#define MAX_ATTRS 4

struct numhold {
	int fd; /* the uverbs file: the context and what it holds */
	uint64_t token;
};

/* One method call on fd: 0 or an errno */
static int call(int fd, uint16_t object, uint16_t method,
		const struct ib_uverbs_attr *attrs, unsigned int n)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[MAX_ATTRS];
	} req = {
		.hdr = { .length = sizeof(req.hdr) + n * sizeof(*attrs),
			 .object_id = object,
			 .method_id = method,
			 .num_attrs = n,
			 .driver_id = RDMA_DRIVER_RXE },
	};

	memcpy(req.attrs, attrs, n * sizeof(*attrs));
	return ioctl(fd, RDMA_VERBS_IOCTL, &req) ? errno : 0;
}

static struct ib_uverbs_attr out_attr(uint16_t id, void *p, size_t len)
{
	return (struct ib_uverbs_attr){ .attr_id = id,
					.len = len,
					.flags = UVERBS_ATTR_F_MANDATORY,
					.data = (uintptr_t)p };
}

/* dev's uverbs node, opened: -1 with err if there is none */
static int open_uverbs(const char *dev, char *err, size_t errlen)
{
	char path[300], name[64];
	struct dirent *d;
	int fd = -1;
	DIR *dir;
	FILE *f;

	dir = opendir("/sys/class/infiniband_verbs");
	while (dir && fd < 0 && (d = readdir(dir))) {
		if (strncmp(d->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/%s/ibdev", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) &&
		    !strcmp(strtok(name, "\n") ?: "", dev)) {
			snprintf(path, sizeof(path), "/dev/infiniband/%s",
				 d->d_name);
			fd = open(path, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				snprintf(err, errlen, "opening %s failed: %s",
					 path, strerror(errno));
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	if (fd < 0 && !err[0])
		snprintf(err, errlen, "%s has no uverbs device", dev);
	return fd;
}

/* A context on fd that offers CLAIM: 0, or an errno with err */
static int open_context(int fd, const char *dev, char *err, size_t errlen)
{
	uint32_t vectors = 0, abi = 0, ranges[MIGR_RXE_RANGES];
	uint64_t flags = 0;
	struct ib_uverbs_attr get[] = {
		out_attr(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &vectors,
			 sizeof(vectors)),
	};
	struct ib_uverbs_attr caps[] = {
		out_attr(MIGR_RXE_ATTR_CAPS_ABI, &abi, sizeof(abi)),
		out_attr(MIGR_RXE_ATTR_CAPS_FLAGS, &flags, sizeof(flags)),
		out_attr(MIGR_RXE_ATTR_CAPS_RANGES, ranges, sizeof(ranges)),
	};
	int ret;

	ret = call(fd, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, get, 1);
	if (ret) {
		snprintf(err, errlen, "%s: %s", dev,
			 ret == EINVAL ? "not an rxe device" : strerror(ret));
		return ret;
	}
	ret = call(fd, MIGR_RXE_OBJECT_MIGR, MIGR_RXE_METHOD_QUERY_CAPS, caps,
		   3);
	/* the stock module has no methods of migr's: the usual case */
	if (ret == EPROTONOSUPPORT || ret == EOPNOTSUPP)
		snprintf(
			err, errlen,
			"%s runs the stock rdma_rxe: moved objects get new numbers, translated (migr's rdma_rxe keeps them: package migr-rxe-dkms)",
			dev);
	else if (ret)
		snprintf(err, errlen, "asking %s for migr's methods failed: %s",
			 dev, strerror(ret));
	else if (abi != MIGR_RXE_ABI || !(flags & MIGR_RXE_CAP_CLAIM))
		snprintf(
			err, errlen,
			"%s runs migr's rdma_rxe of ABI %u, without the claims of ABI %u: moved objects get new numbers, translated",
			dev, abi, MIGR_RXE_ABI);
	else
		return 0;
	return ret ?: EPROTONOSUPPORT;
}

struct numhold *numhold_open(const char *dev, char *err, size_t errlen)
{
	struct numhold *h;

	err[0] = 0;
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->fd = -1;
	while (!h->token)
		if (getrandom(&h->token, sizeof(h->token), 0) !=
		    sizeof(h->token)) {
			snprintf(err, errlen, "no random token: %s",
				 strerror(errno));
			free(h);
			return NULL;
		}
	h->fd = open_uverbs(dev, err, errlen);
	if (h->fd < 0 || open_context(h->fd, dev, err, errlen)) {
		numhold_close(h);
		return NULL;
	}
	return h;
}

/*
 * err for a RESERVE of k numbers refused with ret, in one line: the bounds
 * of migr_rxe(7) named (a holder without CAP_NET_ADMIN over the device's
 * network namespace has the small ones)
 */
static void reserve_failed(int ret, size_t k, char *err, size_t errlen)
{
	if (ret == EDQUOT)
		snprintf(
			err, errlen,
			"holding %zu more numbers refused (EDQUOT): rdma_rxe lets one holder hold %d numbers with CAP_NET_ADMIN, %d without",
			k, MIGR_RXE_HOLD_MAX, MIGR_RXE_HOLD_MAX_UNPRIV);
	else if (ret == ENOSPC)
		snprintf(
			err, errlen,
			"holding %zu more numbers refused (ENOSPC): holders without CAP_NET_ADMIN hold the device's %d already",
			k, MIGR_RXE_HOLD_MAX_DEV_UNPRIV);
	else
		snprintf(err, errlen, "holding %zu numbers failed: %s", k,
			 strerror(ret));
}

int numhold_reserve(struct numhold *h, int kind, const uint32_t *values,
		    size_t n, char *err, size_t errlen)
{
	uint32_t held, all = 0;
	size_t i, k;
	int ret;

	for (i = 0; i < n; i += k) {
		struct ib_uverbs_attr a[] = {
			{ .attr_id = MIGR_RXE_ATTR_RESERVE_KIND,
			  .len = sizeof(uint64_t),
			  .flags = UVERBS_ATTR_F_MANDATORY,
			  .data = kind },
			{ .attr_id = MIGR_RXE_ATTR_RESERVE_VALUES,
			  .flags = UVERBS_ATTR_F_MANDATORY },
			out_attr(MIGR_RXE_ATTR_RESERVE_HELD, &held,
				 sizeof(held)),
			{ .attr_id = MIGR_RXE_ATTR_RESERVE_TOKEN,
			  .len = sizeof(h->token),
			  .flags = UVERBS_ATTR_F_MANDATORY,
			  .data = h->token },
		};

		k = n - i < MIGR_RXE_RESERVE_MAX ? n - i : MIGR_RXE_RESERVE_MAX;
		a[1].len = k * sizeof(*values);
		/* up to 8 bytes travel inline, a longer array by address */
		if (a[1].len <= sizeof(a[1].data))
			memcpy(&a[1].data, values + i, a[1].len);
		else
			a[1].data = (uintptr_t)(values + i);
		held = 0;
		ret = call(h->fd, MIGR_RXE_OBJECT_MIGR, MIGR_RXE_METHOD_RESERVE,
			   a, 4);
		if (ret) {
			reserve_failed(ret, k, err, errlen);
			return -1;
		}
		all += held;
	}
	return all;
}

uint64_t numhold_token(const struct numhold *h)
{
	return h->token;
}

void numhold_close(struct numhold *h)
{
	if (!h)
		return;
	if (h->fd >= 0)
		close(h->fd);
	free(h);
}
