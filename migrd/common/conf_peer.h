/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Who this host is on the peer link, the peers it talks to, and which
 * users may arrive here: the settings name, peer and arrive_uids
 * (migrd(8) PEERS, TRUST). Each peer has a key of its own, shared by the
 * two hosts and no other: a host authenticates a peer by the name the
 * key belongs to, never by the address it comes from.
 */
#ifndef MIGRD_CONF_PEER_H
#define MIGRD_CONF_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PEER_NAME_MAX 64 /* a name's bytes and its NUL */
#define PEER_ADDRS_MAX 4 /* addresses one peer is reached at */
#define PEER_ADDR_MAX 64
#define PEERS_MAX 64
#define UID_RANGES_MAX 16

struct conf_peer {
	char name[PEER_NAME_MAX];
	char addrs[PEER_ADDRS_MAX][PEER_ADDR_MAX]; /* the first is dialled */
	int naddrs;
	char key_file[256];
};

struct uid_ranges {
	struct {
		uid_t lo, hi;
	} r[UID_RANGES_MAX];
	int n;
};

/* A host's name: 1..63 of [A-Za-z0-9._-] */
bool peer_name_ok(const char *name);
/*
 * "NAME ADDRESS[,ADDRESS...] KEY_FILE" into *p: 0, or -1 with a one-line
 * err saying what is wrong
 */
int conf_peer_parse(const char *val, struct conf_peer *p, char *err,
		    size_t errlen);
/* The peer of v[0..n) named host, or at address host: its index or -1 */
int conf_peer_find(const struct conf_peer *v, int n, const char *host);

/* "all", "none", or "LO[-HI],..." into *u: 0 or -1 */
int uid_ranges_parse(const char *val, struct uid_ranges *u);
bool uid_ranges_has(const struct uid_ranges *u, uid_t uid);

#endif
