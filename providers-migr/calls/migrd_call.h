/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* One request to this host's migrd, and reading its JSON line (migrd_call.c) */
#ifndef MIGR_MIGRD_CALL_H
#define MIGR_MIGRD_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migr.h"
#include "migr_json.h"

/*
 * Send line (len bytes, newline included) to migrd and read its one-line
 * reply into reply. 0, EHOSTUNREACH when migrd cannot be reached (errno
 * says why, *path where it was looked for), or another errno.
 */
int migr_migrd_call(const char *line, size_t len, unsigned int timeout_s,
		    char *reply, size_t reply_len, const char **path);

/*
 * A connected socket to this host's migrd ($MIGRD_SOCKET, else
 * /run/migr/migrd.sock; *path says which), or -1 with errno set
 */
int migr_migrd_connect(int flags, const char **path);

/* Where a GID's host's migrd is: the address inside a RoCE v2 GID */
int migr_gid_host(const union ibv_gid *gid, char *host, size_t len);

/* A GID given as 32 hex digits: "key":"fe80..." (see migr_json.h) */
bool migr_json_gid(const json_t *obj, const char *key, union ibv_gid *gid);

#endif /* MIGR_MIGRD_CALL_H */
