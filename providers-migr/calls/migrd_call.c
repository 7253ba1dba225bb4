// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Talking to this host's migrd (migrd(8)): one request line, one JSON line
 * back (read with migr_json.h). The partner protocol (partner_call.c) and
 * the UD relay (ud_announce.c) use it.
 */
#define _GNU_SOURCE /* secure_getenv(): a set-uid program must not be steered */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "migrd_call.h"

#define MIGRD_SOCKET "/run/migr/migrd.sock"

/* A connected socket to migrd, or -1 with errno set */
int migr_migrd_connect(int flags, const char **path_out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = secure_getenv("MIGRD_SOCKET");
	int fd;

	if (!path || !*path)
		path = MIGRD_SOCKET;
	*path_out = path;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

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

/* A GID given as 32 hex digits: "key":"fe80..." */
bool migr_json_gid(const json_t *obj, const char *key, union ibv_gid *gid)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s && !migr_gid_parse(s, gid);
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
