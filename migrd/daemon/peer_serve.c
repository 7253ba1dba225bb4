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

/* One request, the n bytes in buf, answered into out */
static void answer(const struct client *c, uint8_t *buf, long n,
		   struct sbuf *out, const char *who)
{
	char err[256];
	struct req r;
	int shown;

	out->len = 0;
	if (req_parse((char *)buf, n, &r, err, sizeof(err)))
		reply_error(out, err);
	else
		ops_run(&r, c, out);
	if (out->oom || out->len > WIRE_BODY_MAX) {
		out->len = 0;
		out->oom = false;
		reply_error(out, "reply too large for one frame");
	}
	shown = n ? (int)n - 1 : 0; /* the newline */
	if (shown > PEER_LOG_MAX)
		shown = PEER_LOG_MAX;
	log_dbg("peer %s: %.*s -> %zu bytes", who, shown, (char *)buf,
		out->len);
}

/* The peer's requests on s, each answered, until it closes or the cap */
static void serve_requests(SSL *s, const struct client *c, uint8_t *buf,
			   const char *who)
{
	struct sbuf out = {};
	char err[256];
	long n;
	int i;

	for (i = 0; i < PEER_REQS_MAX; i++) {
		n = tls_read_frame(s, buf, REQ_MAX, PEER_IDLE_MS, err,
				   sizeof(err));
		if (n < 0) {
			if (strcmp(err, "connection closed"))
				log_warn("peer %s: %s; closing", who, err);
			break;
		}
		answer(c, buf, n, &out, who);
		if (tls_write_frame(s, out.p, out.len, 5000, err,
				    sizeof(err))) {
			log_warn("peer %s: %s; closing", who, err);
			break;
		}
	}
	sb_free(&out);
}

void peer_serve(int fd, const char *addr)
{
	uint8_t *buf = malloc(REQ_MAX);
	struct client c = { .peer = true, .fd = -1 };
	char err[256], name[TLS_NAME_MAX], who[TLS_NAME_MAX + 80];
	struct peer_link link = { .who = who };
	SSL_CTX *ctx;
	SSL *s = NULL;
	int one = 1;

	snprintf(who, sizeof(who), "at %s", addr);
	if (!buf)
		goto done;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctx = peer_tls_ctx(true, err, sizeof(err));
	if (!ctx)
		goto refused;
	/* One deadline for all of the handshake, not one per message */
	s = tls_accept(ctx, fd, PEER_HANDSHAKE_MS, name, err, sizeof(err));
	if (!s)
		goto refused;
	/* known by its key's name from now on; the address is for logs */
	snprintf(who, sizeof(who), "%s (%s)", name, addr);
	log_info("peer %s authenticated", who);
	link.s = s;
	c.link = &link;
	serve_requests(s, &c, buf, who);
	goto done;
refused:
	log_warn("peer %s refused: %s", who, err);
done:
	tls_free(s);
	free(buf);
	close(fd);
}
