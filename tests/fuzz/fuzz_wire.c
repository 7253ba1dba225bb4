// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Peer frames (wire.c) as a peer daemon, or anyone reaching migrd's port,
 * sends them: wire_peek_len() on the header, wire_open() on the whole
 * frame in a fresh session with a fixed key, and, for a frame that opens,
 * the handshake step its type calls for.
 */
#include <string.h>

#include "fuzz.h"
#include "wire.h"

/* Not a secret: the seeds are sealed with it so that mutants reach past
 * the MAC check */
static const uint8_t key[] = "migr fuzz key, public on purpose";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[WIRE_FRAME_MAX];
	struct wire_frame f, f2;
	struct wire_sess s;
	char err[128];
	long n;

	if (size >= WIRE_HDR_LEN) {
		n = wire_peek_len(data, err, sizeof(err));
		FUZZ_ASSERT(n >= -1 && n <= WIRE_BODY_MAX);
	}
	wire_sess_init(&s, key, sizeof(key) - 1);
	if (wire_open(&s, data, size, &f, err, sizeof(err))) {
		FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
		return 0;
	}
	FUZZ_ASSERT(f.len <= WIRE_BODY_MAX && f.body == data + WIRE_HDR_LEN &&
		    WIRE_HDR_LEN + f.len + SHA256_LEN == size);
	/* the same frame again is a replay */
	FUZZ_ASSERT(wire_open(&s, data, size, &f2, err, sizeof(err)) == -1);
	switch (f.type) {
	case WIRE_HELLO:
		n = wire_server_challenge(&s, &f, out, err, sizeof(err));
		FUZZ_ASSERT(n == -1 || n <= WIRE_FRAME_MAX);
		break;
	case WIRE_CHALLENGE:
		n = wire_client_auth(&s, &f, out, err, sizeof(err));
		FUZZ_ASSERT(n == -1 || (n <= WIRE_FRAME_MAX && s.authed));
		break;
	case WIRE_AUTH:
		if (!wire_server_verify(&s, &f, err, sizeof(err)))
			FUZZ_ASSERT(s.authed);
		break;
	}
	return 0;
}

/* proof = HMAC(key, label | n1 | n2), as wire.c computes it */
static void proof(const char *label, const uint8_t *n1, const uint8_t *n2,
		  uint8_t *out)
{
	struct hmac_sha256 c;

	hmac_sha256_init(&c, key, sizeof(key) - 1);
	hmac_sha256_update(&c, label, strlen(label));
	hmac_sha256_update(&c, n1, WIRE_NONCE_LEN);
	hmac_sha256_update(&c, n2, WIRE_NONCE_LEN);
	hmac_sha256_final(&c, out);
}

/*
 * Frames sealed with the key, one of each type. A fresh session's nonces
 * are zero, so a challenge and an auth carrying the right proofs for
 * them open and pass their handshake step.
 */
void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const uint8_t zero[WIRE_NONCE_LEN];
	static const char req[] = "migrd/1 hello\n";
	static const char resp[] = "{\"v\":1,\"ok\":true,\"version\":1}";
	uint8_t out[WIRE_FRAME_MAX], body[WIRE_NONCE_LEN + SHA256_LEN];
	struct wire_sess s;
	long n;

	wire_sess_init(&s, key, sizeof(key) - 1);
	memset(body, 0x5a, WIRE_NONCE_LEN);
	n = wire_seal(&s, WIRE_HELLO, body, WIRE_NONCE_LEN, out);
	add(out, n);
	proof("migrd server", zero, body, body + WIRE_NONCE_LEN);
	n = wire_seal(&s, WIRE_CHALLENGE, body, sizeof(body), out);
	add(out, n);
	proof("migrd client", zero, zero, body);
	n = wire_seal(&s, WIRE_AUTH, body, SHA256_LEN, out);
	add(out, n);
	n = wire_seal(&s, WIRE_REQ, req, strlen(req), out);
	add(out, n);
	n = wire_seal(&s, WIRE_RESP, resp, strlen(resp), out);
	add(out, n);
	n = wire_seal(&s, WIRE_RESP, "", 0, out);
	add(out, n);
}
