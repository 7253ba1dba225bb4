// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's side of a migr process's control socket (providers-migr/control.c) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "migrd.h"
#include "sockio.h"

/* Relay only what parses: a reply is embedded into migrd's own JSON */
static bool valid_json(const char *s, size_t len)
{
	int cap = len / 2 + 16;
	struct json_tok *t = calloc(cap, sizeof(*t));
	struct json j;
	bool ok;

	if (!t)
		return false;
	ok = !json_parse(&j, s, len, t, cap) && t[0].type == JSON_OBJECT;
	free(t);
	return ok;
}

int proc_request(int pid, const char *line, int timeout_ms, char **reply,
		 char *err, size_t errlen)
{
	char path[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "@migr/%d", pid);
	fd = io_connect_unix(path, timeout_ms);
	if (fd < 0) {
		snprintf(err, errlen,
			 "pid %d: cannot reach its control socket: %s", pid,
			 strerror(errno));
		return -1;
	}
	if (io_write_all(fd, line, strlen(line), 2000)) {
		snprintf(err, errlen, "pid %d: sending the request failed: %s",
			 pid, strerror(errno));
		close(fd);
		return -1;
	}
	n = io_read_line(fd, reply, PROC_REPLY_MAX, timeout_ms);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "pid %d: no reply: %s", pid,
			 errno == ECONNRESET ? "connection closed" :
					       strerror(errno));
		return -1;
	}
	(*reply)[--n] = 0; /* the newline */
	if (!valid_json(*reply, n)) {
		snprintf(err, errlen, "pid %d: its reply is not valid JSON",
			 pid);
		free(*reply);
		return -1;
	}
	return 0;
}
