/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Who holds a QP of this host, by the kernel's RDMA resource tracking */
#ifndef MIGRD_HOLDER_H
#define MIGRD_HOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "locate.h"

/*
 * The devices of this host with GID gid (the test stand-in's: gid
 * itself), at most LOCATE_DEV_MAX: how many, 0 if none or unreadable
 */
int holder_devices(const char *gid, char (*devs)[LOCATE_NAME_MAX]);

/*
 * Who the kernel's RDMA resource tracking (or the test table standing in
 * for it) says holds QP qpn on a device of this host with GID gid: 0 with
 * *pid its process (0: a kernel QP, named in kern), 1 if nobody does, -1
 * with err if the kernel could not be asked.
 */
int kernel_holder(const char *gid, uint32_t qpn, int *pid, char *kern,
		  size_t kernlen, char *err, size_t errlen);

/*
 * Does process tgid own QP qpn on a device of this host with GID gid (32
 * hex digits)? 1; 0 with err saying who does ("held by pid N", "no such
 * QP"...); or -1 with err saying why the kernel's query failed.
 */
int asker_owns(int tgid, const char *gid, uint32_t qpn, char *err,
	       size_t errlen);

#endif
