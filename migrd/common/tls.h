/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The link between the migrd of two hosts: TLS 1.3 (OpenSSL) with an
 * external pre-shared key, HKDF-SHA256 of the key file's bytes, under the
 * identity "migrd", with an ECDHE exchange too (psk_dhe_ke: a stolen key
 * does not open recorded sessions). No certificates, session tickets or
 * early data. ALPN carries the protocol version ("migrd/1"): a peer that
 * does not offer it, or selects another, is refused. Inside, frames of
 * wire.h. Every wait is bounded: socket I/O is ours (sockio.c, memory
 * BIOs in between), polled against one deadline per call.
 */
#ifndef MIGRD_TLS_H
#define MIGRD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#define TLS_ALPN "migrd/1" /* the peer protocol's version */
#define TLS_PSK_IDENTITY "migrd"
#define TLS_PSK_LEN 32

/* The PSK for a key file's bytes: HKDF-SHA256, a fixed label. 0 or -1 */
int tls_psk_derive(const uint8_t *key, size_t len, uint8_t psk[TLS_PSK_LEN]);

/*
 * A context for either side, keyed with the key file's bytes. alpn is
 * the version this side speaks (TLS_ALPN; tests give others, or NULL for
 * none). NULL with err on failure.
 */
SSL_CTX *tls_ctx_new(bool server, const uint8_t *key, size_t len,
		     const char *alpn, char *err, size_t errlen);
void tls_ctx_free(SSL_CTX *ctx);

/*
 * The handshake on a connected socket, all of it before timeout_ms: the
 * connection (tls_free() it; fd stays the caller's), or NULL with a
 * one-line err. The server's err says why it refused the client (for
 * "peer X refused: ERR"); the client's reads after "peer HOST ".
 */
SSL *tls_accept(SSL_CTX *ctx, int fd, int timeout_ms, char *err, size_t errlen);
SSL *tls_connect(SSL_CTX *ctx, int fd, int timeout_ms, char *err,
		 size_t errlen);

/* One frame (wire.h) of len bytes, sent before timeout_ms: 0 or -1 */
int tls_write_frame(SSL *s, const void *body, size_t len, int timeout_ms,
		    char *err, size_t errlen);
/*
 * One frame into buf (max bytes at most, or it is refused) before
 * timeout_ms: its length, or -1 with err ("connection closed" when the
 * peer ended the connection between frames)
 */
long tls_read_frame(SSL *s, uint8_t *buf, size_t max, int timeout_ms, char *err,
		    size_t errlen);

/* Say goodbye without waiting for an answer, and free the connection */
void tls_free(SSL *s);

#endif
