// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd to migrd over TCP: handshake, then request/reply frames (wire.h) */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "migrd.h"
#include "sockio.h"

#define PEER_IDLE_MS 30000
#define PEER_HANDSHAKE_MS 5000 /* the whole handshake, however it trickles */
#define PEER_REQS_MAX 64 /* per connection */
#define PEER_LOG_MAX 96 /* of a request: a partner's line is cut short */

/* Any request a local client may send can be relayed in one frame */
_Static_assert(REQ_MAX <= WIRE_BODY_MAX, "a request must fit one frame");

/*
 * Read one frame, header and body within timeout_ms, and check it;
 * f->body points into buf
 */
static int read_frame(int fd, struct wire_sess *s, uint8_t *buf,
		      struct wire_frame *f, int timeout_ms, char *err,
		      size_t errlen)
{
	long long deadline = io_now_ms() + timeout_ms;
	long len;

	if (io_read_full(fd, buf, WIRE_HDR_LEN, timeout_ms)) {
		snprintf(err, errlen, "reading a frame: %s",
			 errno == ECONNRESET ? "connection closed" :
					       strerror(errno));
		return -1;
	}
	len = wire_peek_len(buf, err, errlen);
	if (len < 0)
		return -1;
	if (io_read_full(fd, buf + WIRE_HDR_LEN, len + SHA256_LEN,
			 io_left_ms(deadline))) {
		snprintf(err, errlen, "truncated frame: %s", strerror(errno));
		return -1;
	}
	return wire_open(s, buf, WIRE_HDR_LEN + len + SHA256_LEN, f, err,
			 errlen);
}

static int send_frame(int fd, struct wire_sess *s, uint8_t type,
		      const void *body, size_t len, uint8_t *buf)
{
	long n = wire_seal(s, type, body, len, buf);

	return n < 0 ? -1 : io_write_all(fd, buf, n, 5000);
}

void peer_serve(int fd, const char *who)
{
	long long deadline = io_now_ms() + PEER_HANDSHAKE_MS;
	uint8_t *buf = malloc(WIRE_FRAME_MAX);
	struct client c = { .peer = true };
	struct sbuf out = {};
	struct wire_frame f;
	struct wire_sess s;
	char err[256];
	struct req r;
	long n;
	int i = 1, shown;

	if (!buf)
		goto done;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &i, sizeof(i));
	wire_sess_init(&s, g.psk, g.psk_len);
	/* One deadline for all of the handshake, not one per frame */
	if (read_frame(fd, &s, buf, &f, io_left_ms(deadline), err, sizeof(err)))
		goto refused;
	n = wire_server_challenge(&s, &f, buf, err, sizeof(err));
	if (n < 0 || io_write_all(fd, buf, n, io_left_ms(deadline))) {
		if (n >= 0)
			snprintf(err, sizeof(err), "sending the challenge: %s",
				 strerror(errno));
		goto refused;
	}
	if (read_frame(fd, &s, buf, &f, io_left_ms(deadline), err, sizeof(err)) ||
	    wire_server_verify(&s, &f, err, sizeof(err)))
		goto refused;
	log_info("peer %s authenticated", who);
	for (i = 0; i < PEER_REQS_MAX; i++) {
		if (read_frame(fd, &s, buf, &f, PEER_IDLE_MS, err,
			       sizeof(err))) {
			if (strcmp(err, "reading a frame: connection closed"))
				log_warn("peer %s: %s; closing", who, err);
			goto done;
		}
		out.len = 0;
		if (f.type != WIRE_REQ)
			ops_error(&out, "expected a request frame");
		else if (req_parse((char *)f.body, f.len, &r, err, sizeof(err)))
			ops_error(&out, err);
		else
			ops_run(&r, &c, &out);
		if (out.oom || out.len > WIRE_BODY_MAX) {
			out.len = 0;
			out.oom = false;
			ops_error(&out, "reply too large for one frame");
		}
		shown = f.len ? (int)f.len - 1 : 0; /* the newline */
		if (shown > PEER_LOG_MAX)
			shown = PEER_LOG_MAX;
		log_dbg("peer %s: %.*s -> %zu bytes", who, shown,
			(char *)f.body, out.len);
		if (send_frame(fd, &s, WIRE_RESP, out.p, out.len, buf))
			goto done;
	}
	goto done;
refused:
	log_warn("peer %s refused: %s", who, err);
done:
	sb_free(&out);
	free(buf);
	close(fd);
}

static int tcp_connect(const char *host, unsigned int port, int timeout_ms,
		       char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *a;
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = timeout_ms % 1000 * 1000 };
	char svc[8];
	int fd = -1, rc, one = 1;

	snprintf(svc, sizeof(svc), "%u", port);
	rc = getaddrinfo(host, svc, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", host,
			 gai_strerror(rc));
		return -1;
	}
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		/* Bounds connect() too */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		/* Small frames, each answered: no Nagle delay */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (!connect(fd, a->ai_addr, a->ai_addrlen))
			break;
		rc = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		char why[128];

		/* SO_SNDTIMEO ends a connect() that hangs with EINPROGRESS */
		if (!rc || rc == EINPROGRESS || rc == EAGAIN)
			rc = ETIMEDOUT;
		snprintf(why, sizeof(why), "%s", strerror(rc));
		why[0] = tolower((unsigned char)why[0]);
		snprintf(err, errlen,
			 "migrd on %s is unreachable: %s (port %u)", host, why,
			 port);
	}
	return fd;
}

int peer_call(const char *host, const char *line, int timeout_ms,
	      struct sbuf *out, char *err, size_t errlen)
{
	uint8_t *buf;
	struct wire_frame f;
	struct wire_sess s;
	int fd, ret = -1;
	long n;

	err[0] = 0;
	if (!g.psk_len) {
		snprintf(err, errlen,
			 "cannot ask migrd on %s: no peer key loaded (%s)",
			 host, g.conf.key_file);
		return -1;
	}
	fd = tcp_connect(host, g.conf.port, 5000, err, errlen);
	if (fd < 0)
		return -1;
	buf = malloc(WIRE_FRAME_MAX);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	wire_sess_init(&s, g.psk, g.psk_len);
	n = wire_client_hello(&s, buf);
	if (n < 0 || io_write_all(fd, buf, n, 5000) ||
	    read_frame(fd, &s, buf, &f, 5000, err, errlen)) {
		if (n < 0 || !err[0])
			snprintf(err, errlen, "handshake with %s failed", host);
		goto fail;
	}
	n = wire_client_auth(&s, &f, buf, err, errlen);
	if (n < 0 || io_write_all(fd, buf, n, 5000))
		goto fail;
	if (send_frame(fd, &s, WIRE_REQ, line, strlen(line), buf) ||
	    read_frame(fd, &s, buf, &f, timeout_ms, err, errlen))
		goto fail;
	if (f.type != WIRE_RESP) {
		snprintf(err, errlen, "unexpected frame type %u", f.type);
		goto fail;
	}
	sb_add(out, (char *)f.body, f.len);
	ret = 0;
	goto out;
fail:
	if (strstr(err, "connection closed"))
		snprintf(
			err, errlen,
			"peer %s closed the connection (wrong key? see its log)",
			host);
	else if (strncmp(err, "peer ", 5)) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "peer %s: %s", host, err);
		snprintf(err, errlen, "%s", tmp);
	}
out:
	free(buf);
	close(fd);
	return ret;
}
