/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* The link between the migrd of two hosts (TLS 1.3: tls.h) */
#ifndef MIGRD_PEER_H
#define MIGRD_PEER_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "sbuf.h"

/* peer_serve.c: serve one accepted peer connection, then close it */
void peer_serve(int fd, const char *addr);

/* peer_call.c: one request line to host's migrd, its JSON reply in out */
int peer_call(const char *host, const char *line, int timeout_ms,
	      struct sbuf *out, char *err, size_t errlen);

/*
 * A connection to host's migrd kept for several requests (a migration's
 * steps, its image stream): NULL with err naming the peer
 */
struct peer_conn *peer_open(const char *host, char *err, size_t errlen);
void peer_close(struct peer_conn *pc);
/* A request line, and its reply (within timeout_ms) appended to out */
int peer_ask(struct peer_conn *pc, const char *line, int timeout_ms,
	     struct sbuf *out, char *err, size_t errlen);
/* One frame of a stream (at most WIRE_DATA_MAX bytes) */
int peer_send(struct peer_conn *pc, const void *body, size_t len, char *err,
	      size_t errlen);
/* The reply to what was sent, within timeout_ms, appended to out */
int peer_reply(struct peer_conn *pc, int timeout_ms, struct sbuf *out,
	       char *err, size_t errlen);

/* The connection a peer's request came on (peer_serve.c makes it) */
struct peer_link {
	SSL *s;
	const char *who; /* "NAME (ADDRESS)": its name is its key's */
};

/*
 * peer_link.c: for the requests that read a stream after their line
 * (images.h): one frame of at most max bytes, within timeout_ms; its
 * length or -1 with err
 */
long peer_link_read(struct peer_link *l, void *buf, size_t max, int timeout_ms,
		    char *err, size_t errlen);
/* The peer's address, for logs */
const char *peer_link_who(const struct peer_link *l);
/* The TLS context of the server (true) or client side, or NULL with err */
SSL_CTX *peer_tls_ctx(bool server, char *err, size_t errlen);

#endif
