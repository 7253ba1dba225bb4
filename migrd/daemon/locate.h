/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Where a partner QP is: whether its address is one of this host's, and
 * which of this host's RDMA devices have its GID in a port's GID table.
 */
#ifndef MIGRD_LOCATE_H
#define MIGRD_LOCATE_H

#include <stdbool.h>

#define LOCATE_SYSFS "/sys/class/infiniband"
#define LOCATE_DEV_MAX 16
#define LOCATE_NAME_MAX 64
#define TWIN_PREFIX "migr_" /* migr's twin of device D is migr_D */

/* The device a twin (migr_D) stands for: D, or "" if name is no twin's */
const char *twin_device(const char *name);

/*
 * Is addr (an IPv4 or IPv6 literal) an address of one of this host's
 * interfaces (getifaddrs)? An IPv4-mapped IPv6 address counts as IPv4.
 */
bool addr_is_local(const char *addr);

/*
 * The RDMA devices under root (LOCATE_SYSFS) with gid (32 hex digits) in
 * a port's table, root/DEV/ports/N/gids/I, each once and at most max.
 * Returns how many, or -1 with errno if root cannot be read. The zero GID
 * (an unused table entry) is never found. A result is remembered for 10
 * minutes while every entry it found still holds the GID: a scan reads
 * every entry of every table, seconds in a busy guest. Thread-safe.
 */
int gid_devices(const char *root, const char *gid,
		char (*devs)[LOCATE_NAME_MAX], int max);

/*
 * The same, for a caller that did not find what it looked for on the
 * devices gid_devices() gave: scanned again unless the result is less
 * than 10 s old (a device may have taken the GID since).
 */
int gid_devices_recheck(const char *root, const char *gid,
			char (*devs)[LOCATE_NAME_MAX], int max);

#endif
