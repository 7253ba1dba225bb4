/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A migrated tree's own namespaces (docs/namespaces.md): its pid
 * namespace (the root is its init: CRIU keeps its pids, its host pids
 * change) and its network namespace (one interface, one IPv4 address that
 * moves with it). Interfaces and addresses are changed by iproute2's "ip",
 * run bounded: the same commands an operator types, and no netlink
 * message building of our own.
 */
#ifndef MIGRD_NETNS_H
#define MIGRD_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#include "req.h"

#define NETNS_KEY "migr-net" /* CRIU's key of the external netns */
#define NETNS_PREFIX "migr-" /* /run/netns/migr-<migration id> */

/* pid's number in its own pid namespace (NSpid's last field), or -1 */
int ns_pid(int pid);

/* 1: pid is the init of a pid namespace below migrd's; 0: no; -1: gone */
int ns_pidns_init(int pid);

/* 1: pid is in a pid namespace below migrd's; 0: in migrd's; -1: gone */
int ns_pidns_own(int pid);

/* A socket(domain, type) made in pid's network namespace; -1 (errno) */
int ns_socket(int pid, int domain, int type);

/*
 * pid's network namespace if it is not migrd's: 1 with *fd (O_CLOEXEC)
 * and its inode; 0 when it is migrd's; -1 when pid is gone
 */
int netns_open_other(int pid, int *fd, unsigned long *ino);

/* Its one interface (besides lo) and that one's one IPv4 address */
int netns_read(int nsfd, struct req_ns *ns, char *err, size_t errlen);

/* Link of ns->ifname in nsfd up or down; with addr_del its address too */
int netns_link(int nsfd, const struct req_ns *ns, bool up, bool addr_del,
	       char *err, size_t errlen);

/*
 * Destination: may ns->addr live here (an interface reaches its subnet,
 * no interface of this host holds it)? 0, or -1 with err
 */
int netns_check(const struct req_ns *ns, char *err, size_t errlen);

/*
 * Destination: /run/netns/<name> with a macvlan on the host's interface
 * towards ns->addr, named and addressed as ns says, up (CRIU connects its
 * TCP sockets back through the interface's route) but with a random MAC
 * and ARP off: no packet for ns->addr reaches it before its sockets are
 * there, which would answer with resets. lo up. Opened into *fd. On
 * failure nothing is left.
 */
int netns_create(const char *name, const struct req_ns *ns, int *fd, char *err,
		 size_t errlen);

/* Remove /run/netns/<name> (its interface goes with its last process) */
void netns_delete(const char *name);

/*
 * A restore that never finished: every process in /run/netns/<name> is
 * killed, then the namespace removed (its macvlan and address with it).
 * How many were killed; -1 if there is no such namespace.
 */
int netns_sweep(const char *name);

/* Is nsfd /run/netns/<NETNS_PREFIX...>, made by migrd? Its name then */
bool netns_ours(int nsfd, char *name, size_t len);

/* ns's MAC and ARP on, then gratuitous ARPs: the address lives here */
int netns_announce(int nsfd, const struct req_ns *ns, char *err, size_t errlen);

#endif
