// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* One local client: a request line in, a JSON line out. Who it is comes
 * from SO_PEERCRED, never from what it sends. */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "migrd.h"
#include "reply.h"
#include "sockio.h"

/*
 * A client sends its line at once (migrctl, the library): one that says
 * nothing for a second gives its slot back, so that idle connections
 * cannot hold the pool
 */
#define FIRST_BYTE_MS 1000
#define LINE_MS 5000

static bool speaks(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, FIRST_BYTE_MS) == 1;
}

static void reply(int fd, struct sbuf *out)
{
	sb_add(out, "\n", 1);
	if (out->oom || io_write_all(fd, out->p, out->len, 5000))
		log_dbg("local client went away before its reply");
}

void local_serve(int fd)
{
	struct sbuf out = {};
	struct client c = { .fd = fd };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char err[256], *line;
	struct req r;
	ssize_t n;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		close(fd);
		return;
	}
	c.uid = cred.uid;
	c.pid = cred.pid;
	if (!speaks(fd)) {
		log_dbg("local pid %d uid %u: no request within %d ms", c.pid,
			(unsigned int)c.uid, FIRST_BYTE_MS);
		close(fd);
		return;
	}
	n = io_read_line(fd, &line, REQ_MAX, LINE_MS);
	if (n < 0) {
		snprintf(err, sizeof(err),
			 errno == EMSGSIZE ? "request longer than %d bytes" :
					     "incomplete request",
			 REQ_MAX);
		log_dbg("local pid %d uid %u: %s", c.pid, (unsigned int)c.uid,
			err);
		reply_error(&out, err);
		reply(fd, &out);
		goto done;
	}
	if (req_parse(line, n, &r, err, sizeof(err))) {
		log_info("local pid %d uid %u: refused request: %s", c.pid,
			 (unsigned int)c.uid, err);
		reply_error(&out, err);
	} else {
		/* partner.c logs its own, never a partner's whole line */
		if (r.op != REQ_REGISTER && r.op != REQ_PARTNER &&
		    r.op != REQ_UDPEERS)
			log_dbg("local pid %d uid %u: %.*s", c.pid,
				(unsigned int)c.uid, (int)n - 1, line);
		ops_run(&r, &c, &out);
	}
	free(line);
	reply(fd, &out);
done:
	sb_free(&out);
	close(fd);
}
