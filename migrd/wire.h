/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * migrd's peer protocol (TCP between the daemons of two hosts). Every frame:
 *
 *   "MGRD" | version u8 | type u8 | reserved u16 (0) | seq u64 | len u32
 *   | body (len bytes, at most WIRE_BODY_MAX) | HMAC-SHA256(header|body)
 *
 * integers big-endian. The handshake frames are keyed with the shared key;
 * after it, every frame with its direction's session key, derived from both
 * nonces (one for client to server, another for server to client, so a
 * frame cannot be reflected back to its sender), and each direction's seq
 * must grow, so an old frame is refused when replayed.
 */
#ifndef MIGRD_WIRE_H
#define MIGRD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define WIRE_VERSION 1
#define WIRE_HDR_LEN 20
/*
 * A request (REQ_MAX, 4096) always fits; replies get room for a partner
 * process's reply relayed whole, with migrd's envelope around it.
 */
#define WIRE_BODY_MAX 8192
#define WIRE_FRAME_MAX (WIRE_HDR_LEN + WIRE_BODY_MAX + SHA256_LEN)
#define WIRE_NONCE_LEN 32
#define WIRE_KEY_MIN 16
#define WIRE_KEY_MAX 256

enum wire_type {
	WIRE_HELLO = 1, /* client nonce */
	WIRE_CHALLENGE, /* server nonce | server proof */
	WIRE_AUTH, /* client proof */
	WIRE_REQ, /* one request line */
	WIRE_RESP, /* one JSON reply */
};

struct wire_sess {
	/* the session keys, once authenticated: what this side sends, reads */
	uint8_t key_send[SHA256_LEN], key_recv[SHA256_LEN];
	bool server;
	const uint8_t *psk; /* the shared key file's bytes */
	size_t psk_len;
	bool authed;
	uint64_t send_seq;
	uint64_t recv_seq; /* last accepted; the next must be larger */
	bool recv_any;
	uint8_t nonce_c[WIRE_NONCE_LEN], nonce_s[WIRE_NONCE_LEN];
};

struct wire_frame {
	uint8_t version, type;
	uint64_t seq;
	uint32_t len;
	const uint8_t *body;
};

void wire_sess_init(struct wire_sess *s, const uint8_t *psk, size_t psk_len);

/* Body length a header announces, or -1 (with err) if it is not one of ours */
long wire_peek_len(const uint8_t *hdr, char *err, size_t errlen);

/* Seal a frame into out (WIRE_FRAME_MAX); returns its length or -1 */
long wire_seal(struct wire_sess *s, uint8_t type, const void *body,
	       uint32_t len, uint8_t *out);

/* Check a whole received frame: layout, MAC, sequence. 0 or -1 with err. */
int wire_open(struct wire_sess *s, const uint8_t *buf, size_t len,
	      struct wire_frame *f, char *err, size_t errlen);

/* Handshake steps, each producing the frame to send (or checking one) */
long wire_client_hello(struct wire_sess *s, uint8_t *out);
long wire_server_challenge(struct wire_sess *s, const struct wire_frame *hello,
			   uint8_t *out, char *err, size_t errlen);
long wire_client_auth(struct wire_sess *s, const struct wire_frame *chal,
		      uint8_t *out, char *err, size_t errlen);
int wire_server_verify(struct wire_sess *s, const struct wire_frame *auth,
		       char *err, size_t errlen);

#endif
