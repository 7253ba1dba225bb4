// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Talking to this host's migrd (migrd(8)): one request line, one JSON line
 * back, and the few things the library reads in such a line. The partner
 * protocol (partner_call.c) and the UD relay (ud_announce.c) use it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "migrd_call.h"

/* Where the partner's migrd is: the address inside its RoCE v2 GID */
int migr_gid_host(const union ibv_gid *gid, char *host, size_t len)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(gid->raw, v4mapped, sizeof(v4mapped)))
		return inet_ntop(AF_INET, gid->raw + 12, host, len) ? 0 : -1;
	/* fe80::/10 needs an interface to mean anything */
	if (gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80)
		return -1;
	return inet_ntop(AF_INET6, gid->raw, host, len) ? 0 : -1;
}

/* The value after "key": in a JSON line (numbers and booleans) */
const char *migr_json_at(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p ? p + strlen(pat) : NULL;
}

bool migr_json_true(const char *json, const char *key)
{
	const char *p = migr_json_at(json, key);

	return p && !strncmp(p, "true", 4);
}

bool migr_json_u64(const char *json, const char *key, uint64_t *v)
{
	const char *p = migr_json_at(json, key);
	char *end;

	if (!p)
		return false;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return !errno && end != p;
}

/* A hex number given as a string: "key":"1f..." */
bool migr_json_hex(const char *json, const char *key, uint64_t *v)
{
	const char *p = migr_json_at(json, key);
	char *end;

	if (!p || *p != '"')
		return false;
	errno = 0;
	*v = strtoull(p + 1, &end, 16);
	return !errno && end != p + 1 && *end == '"';
}

/* A GID given as 32 hex digits: "key":"fe80..." */
bool migr_json_gid(const char *json, const char *key, union ibv_gid *gid)
{
	const char *p = migr_json_at(json, key);

	return p && *p == '"' && !migr_gid_parse(p + 1, gid);
}

/* The "error" string, unescaped enough for a one-line message */
void migr_json_error(const char *json, char *err, size_t errlen)
{
	const char *p = migr_json_at(json, "error");
	size_t n = 0;

	if (!p || *p != '"') {
		snprintf(err, errlen, "no reason given");
		return;
	}
	for (p++; *p && *p != '"' && n + 1 < errlen; p++) {
		if (*p == '\\' && p[1])
			p++;
		err[n++] = *p;
	}
	err[n] = 0;
}

static int read_line(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len) {
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			return n < 0 ? errno : ECONNRESET;
		got += n;
		buf[got] = 0;
		if (memchr(buf, '\n', got))
			return 0;
	}
	return EMSGSIZE;
}

int migr_migrd_call(const char *line, size_t len, unsigned int timeout_s,
		    char *reply, size_t reply_len, const char **path)
{
	struct timeval tv = { .tv_sec = timeout_s };
	int fd, ret;

	fd = migr_migrd_connect(0, path);
	if (fd < 0)
		return EHOSTUNREACH;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len)
		ret = errno ? errno : EIO;
	else
		ret = read_line(fd, reply, reply_len);
	close(fd);
	return ret;
}
