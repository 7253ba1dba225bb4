// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's peer frames and handshake: what an attacker on the wire tries */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "wire.h"

static const uint8_t key[] = "a shared key of 32 bytes, really";
static const uint8_t other[] = "another key, just as long as it!";

static uint8_t a[WIRE_FRAME_MAX], b[WIRE_FRAME_MAX], c[WIRE_FRAME_MAX];
static char err[256];

/* A full handshake between client cs (key ck) and server ss (key sk) */
static int handshake(struct wire_sess *cs, const uint8_t *ck,
		     struct wire_sess *ss, const uint8_t *sk)
{
	struct wire_frame f;
	long n;

	wire_sess_init(cs, ck, 32);
	wire_sess_init(ss, sk, 32);
	n = wire_client_hello(cs, a);
	if (n < 0 || wire_open(ss, a, n, &f, err, sizeof(err)))
		return -1;
	n = wire_server_challenge(ss, &f, b, err, sizeof(err));
	if (n < 0 || wire_open(cs, b, n, &f, err, sizeof(err)))
		return -2;
	n = wire_client_auth(cs, &f, c, err, sizeof(err));
	if (n < 0 || wire_open(ss, c, n, &f, err, sizeof(err)))
		return -3;
	return wire_server_verify(ss, &f, err, sizeof(err)) ? -4 : 0;
}

static void test_handshake(void)
{
	struct wire_sess cs, ss;
	struct wire_frame f;
	long n;

	CHECK(handshake(&cs, key, &ss, key) == 0);
	CHECK(cs.authed && ss.authed);
	CHECK(!memcmp(cs.key_send, ss.key_recv, SHA256_LEN) &&
	      !memcmp(cs.key_recv, ss.key_send, SHA256_LEN));
	/* one key per direction */
	CHECK(memcmp(cs.key_send, cs.key_recv, SHA256_LEN));
	n = wire_seal(&cs, WIRE_REQ, "migrd/1 hello\n", 14, a);
	CHECK(n == WIRE_HDR_LEN + 14 + SHA256_LEN);
	CHECK(!wire_open(&ss, a, n, &f, err, sizeof(err)));
	CHECK(f.type == WIRE_REQ && f.len == 14 &&
	      !memcmp(f.body, "migrd/1", 7));

	/* Replay of the same frame, then of an older one after a newer */
	CHECK(wire_open(&ss, a, n, &f, err, sizeof(err)) == -1);
	CHECK(strstr(err, "replayed") != NULL);
	memcpy(b, a, n);
	n = wire_seal(&cs, WIRE_REQ, "migrd/1 hello\n", 14, a);
	CHECK(!wire_open(&ss, a, n, &f, err, sizeof(err)));
	CHECK(wire_open(&ss, b, n, &f, err, sizeof(err)) == -1);

	/* A frame from another session (other nonces) does not verify */
	{
		struct wire_sess cs2, ss2;

		CHECK(handshake(&cs2, key, &ss2, key) == 0);
		CHECK(memcmp(cs2.key_send, cs.key_send, SHA256_LEN));
		n = wire_seal(&cs2, WIRE_REQ, "x\n", 2, a);
		CHECK(wire_open(&ss, a, n, &f, err, sizeof(err)) == -1);
	}
}

static void test_wrong_key(void)
{
	struct wire_sess cs, ss;

	/* The server cannot open the client's hello: refused at once */
	CHECK(handshake(&cs, other, &ss, key) == -1);
	CHECK(strstr(err, "authentication code") != NULL);
	CHECK(!ss.authed && !cs.authed);
}

/* A server proof made without the key is caught by the client */
static void test_forged_challenge(void)
{
	struct wire_sess cs, ss;
	struct wire_frame f;
	long n;

	wire_sess_init(&cs, key, 32);
	wire_sess_init(&ss, key, 32);
	n = wire_client_hello(&cs, a);
	CHECK(!wire_open(&ss, a, n, &f, err, sizeof(err)));
	n = wire_server_challenge(&ss, &f, b, err, sizeof(err));
	CHECK(!wire_open(&cs, b, n, &f, err, sizeof(err)));
	((uint8_t *)f.body)[WIRE_NONCE_LEN] ^= 1; /* the proof */
	CHECK(wire_client_auth(&cs, &f, c, err, sizeof(err)) == -1);
	CHECK(strstr(err, "prove") != NULL);
	CHECK(!cs.authed);
}

static void test_forged_frames(void)
{
	struct wire_sess cs, ss;
	struct wire_frame f;
	long n;
	int i;

	CHECK(handshake(&cs, key, &ss, key) == 0);
	n = wire_seal(&cs, WIRE_REQ, "migrd/1 hello\n", 14, a);
	/* Any flipped bit, header, body or MAC, is refused */
	for (i = 0; i < n; i += 7) {
		memcpy(b, a, n);
		b[i] ^= 0x10;
		CHECK(wire_open(&ss, b, n, &f, err, sizeof(err)) == -1);
	}
	/* A frame the server sealed, reflected back to it: not the client's */
	{
		long m;

		ss.send_seq = ss.recv_seq + 50; /* past what it received */
		m = wire_seal(&ss, WIRE_RESP, "{}\n", 3, b);
		CHECK(m > 0);
		CHECK(wire_open(&ss, b, m, &f, err, sizeof(err)) == -1);
		CHECK(strstr(err, "authentication code") != NULL);
	}
	/* A MAC made with the shared key instead of the session key */
	{
		struct wire_sess fake;

		wire_sess_init(&fake, key, 32);
		fake.send_seq = 100;
		n = wire_seal(&fake, WIRE_REQ, "migrd/1 hello\n", 14, b);
		CHECK(wire_open(&ss, b, n, &f, err, sizeof(err)) == -1);
	}
	/* The genuine frame still opens after all that */
	CHECK(!wire_open(&ss, a, WIRE_HDR_LEN + 14 + SHA256_LEN, &f, err,
			 sizeof(err)));
}

static void test_layout(void)
{
	struct wire_sess cs, ss;
	struct wire_frame f;
	long n;

	CHECK(handshake(&cs, key, &ss, key) == 0);
	n = wire_seal(&cs, WIRE_REQ, "abc\n", 4, a);
	/* truncated */
	CHECK(wire_open(&ss, a, n - 1, &f, err, sizeof(err)) == -1);
	CHECK(wire_open(&ss, a, 10, &f, err, sizeof(err)) == -1);
	CHECK(strstr(err, "truncated") != NULL);
	/* another version, named in the error */
	memcpy(b, a, n);
	b[4] = 2;
	CHECK(wire_peek_len(b, err, sizeof(err)) == -1);
	CHECK(strstr(err, "version 2") != NULL);
	/* bad magic, reserved bits */
	memcpy(b, a, n);
	b[0] = 'X';
	CHECK(wire_peek_len(b, err, sizeof(err)) == -1);
	memcpy(b, a, n);
	b[7] = 1;
	CHECK(wire_peek_len(b, err, sizeof(err)) == -1);
	/* oversize: announced and sealed */
	memcpy(b, a, n);
	b[16] = 0, b[17] = 0, b[18] = (WIRE_BODY_MAX + 1) >> 8;
	b[19] = (WIRE_BODY_MAX + 1) & 0xff;
	CHECK(wire_peek_len(b, err, sizeof(err)) == -1);
	CHECK(strstr(err, "exceeds") != NULL);
	b[18] = WIRE_BODY_MAX >> 8, b[19] = WIRE_BODY_MAX & 0xff;
	CHECK(wire_peek_len(b, err, sizeof(err)) == WIRE_BODY_MAX);
	CHECK(wire_seal(&cs, WIRE_REQ, a, WIRE_BODY_MAX + 1, b) == -1);
	CHECK(wire_seal(&cs, WIRE_REQ, a, WIRE_BODY_MAX, b) == WIRE_FRAME_MAX);
	CHECK(wire_peek_len(a, err, sizeof(err)) == 4);
}

int main(void)
{
	test_handshake();
	test_wrong_key();
	test_forged_challenge();
	test_forged_frames();
	test_layout();
	return unit_done("wire");
}
