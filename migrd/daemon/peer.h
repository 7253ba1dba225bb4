/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* The link between the migrd of two hosts (TLS 1.3: tls.h) */
#ifndef MIGRD_PEER_H
#define MIGRD_PEER_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "sbuf.h"

/* peer_serve.c: serve one accepted peer connection, then close it */
void peer_serve(int fd, const char *who);

/* peer_call.c: one request line to host's migrd, its JSON reply in out */
int peer_call(const char *host, const char *line, int timeout_ms,
	      struct sbuf *out, char *err, size_t errlen);
/* The TLS context of the server (true) or client side, or NULL with err */
SSL_CTX *peer_tls_ctx(bool server, char *err, size_t errlen);

#endif
