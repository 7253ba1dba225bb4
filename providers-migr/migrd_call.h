/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* One request to this host's migrd, and reading its JSON line (migrd_call.c) */
#ifndef MIGR_MIGRD_CALL_H
#define MIGR_MIGRD_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migr.h"

/*
 * Send line (len bytes, newline included) to migrd and read its one-line
 * reply into reply. 0, EHOSTUNREACH when migrd cannot be reached (errno
 * says why, *path where it was looked for), or another errno.
 */
int migr_migrd_call(const char *line, size_t len, unsigned int timeout_s,
		    char *reply, size_t reply_len, const char **path);

/* Where a GID's host's migrd is: the address inside a RoCE v2 GID */
int migr_gid_host(const union ibv_gid *gid, char *host, size_t len);

/* Values of a JSON line, by key, wherever the key first appears */
const char *migr_json_at(const char *json, const char *key);
bool migr_json_true(const char *json, const char *key);
bool migr_json_u64(const char *json, const char *key, uint64_t *v);
bool migr_json_hex(const char *json, const char *key, uint64_t *v);
bool migr_json_gid(const char *json, const char *key, union ibv_gid *gid);
/* The "error" string, unescaped enough for a one-line message */
void migr_json_error(const char *json, char *err, size_t errlen);

#endif /* MIGR_MIGRD_CALL_H */
