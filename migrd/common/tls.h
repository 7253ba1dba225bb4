/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The link between the migrd of two hosts: TLS 1.3 (OpenSSL) with an
 * external pre-shared key. Each pair of hosts shares a key file of its
 * own; the PSK is HKDF-SHA256 of its bytes and of both host names, client
 * first, and the client's name is the PSK identity: the server picks the
 * key by that name, so a peer is known by the key it holds, never by its
 * address. An ECDHE exchange too (psk_dhe_ke: a stolen key does not open
 * recorded sessions). No certificates, session tickets or
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

#include "conf_peer.h"

#define TLS_ALPN "migrd/1" /* the peer protocol's version */
#define TLS_PSK_LEN 32
#define TLS_NAME_MAX PEER_NAME_MAX /* conf_peer.h */

/*
 * The PSK from client to server for a key file's bytes: HKDF-SHA256, a
 * fixed label and both names. 0 or -1
 */
int tls_psk_derive(const uint8_t *key, size_t len, const char *client,
		   const char *server, uint8_t psk[TLS_PSK_LEN]);

/*
 * The key this host shares with the peer named name, into key (at least
 * WIRE_KEY_MAX + 1 bytes): 0 with *len, or -1 if name is no peer
 */
typedef int (*tls_key_fn)(const char *name, uint8_t *key, size_t *len,
			  void *arg);

/*
 * A context for either side: self is this host's name, key_of(.., arg)
 * gives a peer's key. alpn is the version this side speaks (TLS_ALPN;
 * tests give others, or NULL for none). NULL with err on failure.
 */
SSL_CTX *tls_ctx_new(bool server, const char *self, tls_key_fn key_of,
		     void *arg, const char *alpn, char *err, size_t errlen);
void tls_ctx_free(SSL_CTX *ctx);

/*
 * The handshake on a connected socket, all of it before timeout_ms: the
 * connection (tls_free() it; fd stays the caller's), or NULL with a
 * one-line err. The server learns the client's name (peer, authenticated
 * by its key); the client names the peer it dials, whose key it uses. The
 * server's err says why it refused the client (for "peer X refused:
 * ERR"); the client's reads after "peer HOST ".
 */
SSL *tls_accept(SSL_CTX *ctx, int fd, int timeout_ms, char peer[TLS_NAME_MAX],
		char *err, size_t errlen);
SSL *tls_connect(SSL_CTX *ctx, int fd, const char *peer, int timeout_ms,
		 char *err, size_t errlen);

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
