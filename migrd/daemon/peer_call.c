// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Asking the migrd of another host (migrd to migrd over TCP): one
 * connection per request, TLS 1.3 (tls.h), one request frame, one reply;
 * and the TLS contexts of both sides, keyed once
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "migrd.h"
#include "peer.h"
#include "sockio.h"
#include "tls.h"
#include "wire.h"

#define PEER_CALL_MS 5000 /* a client's handshake, and sending its request */

/* One context per side, keyed once from the key file (migrd.psk) */
static SSL_CTX *ctxs[2];
static char ctx_err[160];
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

static void ctx_init(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		ctxs[i] = tls_ctx_new(i, migrd.psk, migrd.psk_len, TLS_ALPN, ctx_err,
				      sizeof(ctx_err));
		if (!ctxs[i])
			log_err("%s", ctx_err);
	}
}

SSL_CTX *peer_tls_ctx(bool server, char *err, size_t errlen)
{
	pthread_once(&ctx_once, ctx_init);
	if (!ctxs[server])
		snprintf(err, errlen, "%s", ctx_err);
	return ctxs[server];
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
	uint8_t *buf = NULL;
	char tmp[256];
	SSL_CTX *ctx;
	SSL *s = NULL;
	int fd, ret = -1;
	long n;

	err[0] = 0;
	if (!migrd.psk_len) {
		snprintf(err, errlen,
			 "cannot ask migrd on %s: no peer key loaded (%s)",
			 host, migrd.conf.key_file);
		return -1;
	}
	ctx = peer_tls_ctx(false, err, errlen);
	if (!ctx)
		return -1;
	fd = tcp_connect(host, migrd.conf.port, PEER_CALL_MS, err, errlen);
	if (fd < 0)
		return -1;
	buf = malloc(WIRE_BODY_MAX);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s = tls_connect(ctx, fd, PEER_CALL_MS, err, errlen);
	if (!s ||
	    tls_write_frame(s, line, strlen(line), PEER_CALL_MS, err, errlen))
		goto fail;
	n = tls_read_frame(s, buf, WIRE_BODY_MAX, timeout_ms, err, errlen);
	if (n < 0)
		goto fail;
	sb_add(out, (char *)buf, n);
	ret = 0;
	goto out;
fail:
	snprintf(tmp, sizeof(tmp), "%s", err);
	if (!strcmp(tmp, "connection closed"))
		snprintf(err, errlen,
			 "peer %s closed the connection (see its log)", host);
	else if (!strcmp(tmp, "connection closed during the TLS handshake"))
		snprintf(
			err, errlen,
			"peer %s closed the connection during the TLS handshake (an older migrd? see its log)",
			host);
	else if (!strncmp(tmp, "refused ", 8))
		snprintf(err, errlen, "peer %s %s", host, tmp);
	else
		snprintf(err, errlen, "peer %s: %s", host, tmp);
out:
	tls_free(s);
	free(buf);
	close(fd);
	return ret;
}
