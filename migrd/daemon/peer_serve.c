// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A peer daemon's connection (migrd to migrd over TCP): the TLS 1.3
 * handshake (tls.h), then its requests run as a local client's would
 * (ops.c), one reply frame each
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "migrd.h"
#include "peer.h"
#include "reply.h"
#include "tls.h"
#include "wire.h"

#define PEER_IDLE_MS 30000
#define PEER_HANDSHAKE_MS 5000 /* the whole handshake, however it trickles */
#define PEER_REQS_MAX 64 /* per connection */
#define PEER_LOG_MAX 96 /* of a request: a partner's line is cut short */

/* Any request a local client may send can be relayed in one frame */
_Static_assert(REQ_MAX <= WIRE_BODY_MAX, "a request must fit one frame");

void peer_serve(int fd, const char *who)
{
	uint8_t *buf = malloc(REQ_MAX);
	struct client c = { .peer = true, .fd = -1 };
	struct peer_link link = { .who = who };
	struct sbuf out = {};
	SSL_CTX *ctx;
	SSL *s = NULL;
	char err[256];
	struct req r;
	long n;
	int i = 1, shown;

	if (!buf)
		goto done;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &i, sizeof(i));
	ctx = peer_tls_ctx(true, err, sizeof(err));
	if (!ctx)
		goto refused;
	/* One deadline for all of the handshake, not one per message */
	s = tls_accept(ctx, fd, PEER_HANDSHAKE_MS, err, sizeof(err));
	if (!s)
		goto refused;
	log_info("peer %s authenticated", who);
	link.s = s;
	c.link = &link;
	for (i = 0; i < PEER_REQS_MAX; i++) {
		n = tls_read_frame(s, buf, REQ_MAX, PEER_IDLE_MS, err,
				   sizeof(err));
		if (n < 0) {
			if (strcmp(err, "connection closed"))
				log_warn("peer %s: %s; closing", who, err);
			goto done;
		}
		out.len = 0;
		if (req_parse((char *)buf, n, &r, err, sizeof(err)))
			reply_error(&out, err);
		else
			ops_run(&r, &c, &out);
		if (out.oom || out.len > WIRE_BODY_MAX) {
			out.len = 0;
			out.oom = false;
			reply_error(&out, "reply too large for one frame");
		}
		shown = n ? (int)n - 1 : 0; /* the newline */
		if (shown > PEER_LOG_MAX)
			shown = PEER_LOG_MAX;
		log_dbg("peer %s: %.*s -> %zu bytes", who, shown, (char *)buf,
			out.len);
		if (tls_write_frame(s, out.p, out.len, 5000, err,
				    sizeof(err))) {
			log_warn("peer %s: %s; closing", who, err);
			goto done;
		}
	}
	goto done;
refused:
	log_warn("peer %s refused: %s", who, err);
done:
	tls_free(s);
	sb_free(&out);
	free(buf);
	close(fd);
}
