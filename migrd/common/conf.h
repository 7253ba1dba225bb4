/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
#ifndef MIGRD_CONF_H
#define MIGRD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf_peer.h"
#include "wire.h"

#define MIGRD_SOCKET "/run/migr/migrd.sock"
#define MIGRD_CONFIG "/etc/migr/migrd.conf"
#define MIGRD_PORT 7475
#define MIGRD_STATE_DIR "/var/lib/migr"
#define MIGRD_CRIU "/usr/sbin/criu"
#define MIGRD_CRIU_PLUGINS "/usr/lib/criu"

struct conf {
	char socket[108];
	char listen[64]; /* peer listen address; "none" turns peers off */
	unsigned int port;
	unsigned int max_clients; /* local connections at once */
	unsigned int max_peers; /* peer (TCP) connections at once */
	char state_dir[200]; /* a migration's images: migrations/<id>/ */
	char criu[200]; /* the CRIU binary */
	char criu_plugins[200]; /* where migr_plugin.so is (criu -L) */
	/* a migration's destination holds the mover's numbers (numhold.h) */
	bool hold_numbers;
	/* the peer link (conf_peer.h): this host's name, its peers */
	char name[PEER_NAME_MAX];
	struct conf_peer peers[PEERS_MAX];
	int npeers;
	/* the users a process restored here may run as (arrival.c) */
	struct uid_ranges arrive_uids;
};

void conf_defaults(struct conf *c);
/*
 * Read "name = value" lines (# comments). A missing file is fine when
 * !required. 0, or -1 with a one-line error naming file and line.
 */
int conf_load(struct conf *c, const char *path, int required, char *err,
	      size_t errlen);

/* A peer line, as the config file's "peer = ..." (--peer): 0 or -1 */
int conf_add_peer(struct conf *c, const char *val, char *err, size_t errlen);

/*
 * A peer's key: a regular file of WIRE_KEY_MIN..WIRE_KEY_MAX bytes
 * (trailing newline dropped), owned by root, mode 0600, nothing looser.
 */
/* A key's bits of secret at most, by how its bytes spread; the least taken */
#define KEY_BITS_MIN 128
unsigned int key_bits(const uint8_t *key, size_t len);
int key_load(const char *path, uint8_t *key, size_t *len, char *err,
	     size_t errlen);

#endif
