// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Peer frames and the mutual challenge-response that keys them (wire.h) */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "wire.h"

static const char magic[4] = { 'M', 'G', 'R', 'D' };

static void put_be(uint8_t *p, uint64_t v, int n)
{
	while (n--) {
		p[n] = v;
		v >>= 8;
	}
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

void wire_sess_init(struct wire_sess *s, const uint8_t *psk, size_t psk_len)
{
	memset(s, 0, sizeof(*s));
	s->psk = psk;
	s->psk_len = psk_len;
}

/*
 * The key a frame is MACed with: the shared key until the handshake ends,
 * then the session key of the direction it goes in
 */
static void frame_mac(const struct wire_sess *s, bool sending,
		      const uint8_t *buf, size_t len, uint8_t mac[SHA256_LEN])
{
	const uint8_t *k = sending ? s->key_send : s->key_recv;

	if (s->authed)
		hmac_sha256(k, SHA256_LEN, buf, len, mac);
	else
		hmac_sha256(s->psk, s->psk_len, buf, len, mac);
}

long wire_peek_len(const uint8_t *hdr, char *err, size_t errlen)
{
	uint32_t len;

	if (memcmp(hdr, magic, sizeof(magic))) {
		snprintf(err, errlen, "not a migrd peer frame (bad magic)");
		return -1;
	}
	if (hdr[4] != WIRE_VERSION) {
		snprintf(
			err, errlen,
			"peer speaks protocol version %u, this migrd speaks %u",
			hdr[4], WIRE_VERSION);
		return -1;
	}
	if (get_be(hdr + 6, 2)) {
		snprintf(err, errlen, "reserved header bits set");
		return -1;
	}
	len = get_be(hdr + 16, 4);
	if (len > WIRE_BODY_MAX) {
		snprintf(err, errlen, "frame body of %u bytes exceeds %u", len,
			 WIRE_BODY_MAX);
		return -1;
	}
	return len;
}

long wire_seal(struct wire_sess *s, uint8_t type, const void *body,
	       uint32_t len, uint8_t *out)
{
	if (len > WIRE_BODY_MAX)
		return -1;
	memcpy(out, magic, sizeof(magic));
	out[4] = WIRE_VERSION;
	out[5] = type;
	put_be(out + 6, 0, 2);
	put_be(out + 8, s->send_seq++, 8);
	put_be(out + 16, len, 4);
	if (len)
		memcpy(out + WIRE_HDR_LEN, body, len);
	frame_mac(s, true, out, WIRE_HDR_LEN + len, out + WIRE_HDR_LEN + len);
	return WIRE_HDR_LEN + len + SHA256_LEN;
}

int wire_open(struct wire_sess *s, const uint8_t *buf, size_t len,
	      struct wire_frame *f, char *err, size_t errlen)
{
	uint8_t mac[SHA256_LEN];
	long blen;

	if (len < WIRE_HDR_LEN + SHA256_LEN) {
		snprintf(err, errlen, "truncated frame (%zu bytes)", len);
		return -1;
	}
	blen = wire_peek_len(buf, err, errlen);
	if (blen < 0)
		return -1;
	if (len != WIRE_HDR_LEN + (size_t)blen + SHA256_LEN) {
		snprintf(err, errlen, "frame length %zu does not match header",
			 len);
		return -1;
	}
	frame_mac(s, false, buf, WIRE_HDR_LEN + blen, mac);
	if (!ct_equal(mac, buf + WIRE_HDR_LEN + blen, SHA256_LEN)) {
		snprintf(
			err, errlen,
			"bad message authentication code (forged, or a different key)");
		return -1;
	}
	f->version = buf[4];
	f->type = buf[5];
	f->seq = get_be(buf + 8, 8);
	f->len = blen;
	f->body = buf + WIRE_HDR_LEN;
	if (s->recv_any && f->seq <= s->recv_seq) {
		snprintf(err, errlen,
			 "replayed or reordered frame (seq %llu after %llu)",
			 (unsigned long long)f->seq,
			 (unsigned long long)s->recv_seq);
		return -1;
	}
	s->recv_seq = f->seq;
	s->recv_any = true;
	return 0;
}

/* proof = HMAC(psk, label | first nonce | second nonce) */
static void proof(const struct wire_sess *s, const char *label,
		  const uint8_t *n1, const uint8_t *n2, uint8_t out[SHA256_LEN])
{
	struct hmac_sha256 c;

	hmac_sha256_init(&c, s->psk, s->psk_len);
	hmac_sha256_update(&c, label, strlen(label));
	hmac_sha256_update(&c, n1, WIRE_NONCE_LEN);
	hmac_sha256_update(&c, n2, WIRE_NONCE_LEN);
	hmac_sha256_final(&c, out);
}

/* Both sides switch to the session keys and a fresh sequence space */
static void keyed(struct wire_sess *s)
{
	uint8_t c2s[SHA256_LEN], s2c[SHA256_LEN];

	proof(s, "migrd session c2s", s->nonce_c, s->nonce_s, c2s);
	proof(s, "migrd session s2c", s->nonce_c, s->nonce_s, s2c);
	memcpy(s->key_send, s->server ? s2c : c2s, SHA256_LEN);
	memcpy(s->key_recv, s->server ? c2s : s2c, SHA256_LEN);
	s->authed = true;
	s->send_seq = 1;
	s->recv_any = false;
}

static int fill_random(uint8_t *p, size_t len)
{
	return getrandom(p, len, 0) == (ssize_t)len ? 0 : -1;
}

long wire_client_hello(struct wire_sess *s, uint8_t *out)
{
	if (fill_random(s->nonce_c, WIRE_NONCE_LEN))
		return -1;
	return wire_seal(s, WIRE_HELLO, s->nonce_c, WIRE_NONCE_LEN, out);
}

long wire_server_challenge(struct wire_sess *s, const struct wire_frame *hello,
			   uint8_t *out, char *err, size_t errlen)
{
	uint8_t body[WIRE_NONCE_LEN + SHA256_LEN];

	if (hello->type != WIRE_HELLO || hello->len != WIRE_NONCE_LEN) {
		snprintf(err, errlen, "expected a hello frame");
		return -1;
	}
	s->server = true;
	memcpy(s->nonce_c, hello->body, WIRE_NONCE_LEN);
	if (fill_random(s->nonce_s, WIRE_NONCE_LEN)) {
		snprintf(err, errlen, "no random bytes");
		return -1;
	}
	memcpy(body, s->nonce_s, WIRE_NONCE_LEN);
	proof(s, "migrd server", s->nonce_c, s->nonce_s, body + WIRE_NONCE_LEN);
	return wire_seal(s, WIRE_CHALLENGE, body, sizeof(body), out);
}

long wire_client_auth(struct wire_sess *s, const struct wire_frame *chal,
		      uint8_t *out, char *err, size_t errlen)
{
	uint8_t want[SHA256_LEN], mine[SHA256_LEN];
	long n;

	if (chal->type != WIRE_CHALLENGE ||
	    chal->len != WIRE_NONCE_LEN + SHA256_LEN) {
		snprintf(err, errlen, "expected a challenge frame");
		return -1;
	}
	memcpy(s->nonce_s, chal->body, WIRE_NONCE_LEN);
	proof(s, "migrd server", s->nonce_c, s->nonce_s, want);
	if (!ct_equal(want, chal->body + WIRE_NONCE_LEN, SHA256_LEN)) {
		snprintf(err, errlen,
			 "server failed to prove it holds the shared key");
		return -1;
	}
	proof(s, "migrd client", s->nonce_s, s->nonce_c, mine);
	n = wire_seal(s, WIRE_AUTH, mine, sizeof(mine), out);
	keyed(s);
	return n;
}

int wire_server_verify(struct wire_sess *s, const struct wire_frame *auth,
		       char *err, size_t errlen)
{
	uint8_t want[SHA256_LEN];

	if (auth->type != WIRE_AUTH || auth->len != SHA256_LEN) {
		snprintf(err, errlen, "expected an auth frame");
		return -1;
	}
	proof(s, "migrd client", s->nonce_s, s->nonce_c, want);
	if (!ct_equal(want, auth->body, SHA256_LEN)) {
		snprintf(err, errlen,
			 "client failed to prove it holds the shared key");
		return -1;
	}
	keyed(s);
	return 0;
}
