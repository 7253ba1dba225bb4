/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The connections migrd serves at once, in pools of their own, so that no
 * one can keep the others out: local clients (max_clients), of which one
 * user holds at most a quarter, and root has slots of its own beyond them;
 * peers (max_peers), at most PEERS_PER_ADDR from one address, so that
 * unauthenticated TCP connections keep no local request out.
 */
#ifndef MIGRD_SLOTS_H
#define MIGRD_SLOTS_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PEERS_PER_ADDR 4 /* peer connections at once from one address */
#define LOCAL_ROOT_SLOTS 8 /* root's own, beyond max_clients */

/* Whose a connection is: a local client's user, or a peer's address */
struct slot_owner {
	bool peer;
	uid_t uid;
	char addr[INET6_ADDRSTRLEN];
	bool reserve; /* root's slot beyond max_clients (slot_get() sets) */
};

/* Take a slot for a connection of o's; 0, or -1 with why it gets none */
int slot_get(struct slot_owner *o, char *why, size_t len);
void slot_put(const struct slot_owner *o);

/* A local user's share of max_clients: a quarter, at least one */
unsigned int slots_per_user(void);

#endif /* MIGRD_SLOTS_H */
