// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* SHA-256 and HMAC-SHA256, written from FIPS 180-4 and RFC 2104 */
#include <string.h>

#include "sha256.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
			      (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^
			      (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0], b = h[1], c = h[2], d = h[3];
	e = h[4], f = h[5], g = h[6], k = h[7];
	for (i = 0; i < 64; i++) {
		t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		     ((e & f) ^ (~e & g)) + K[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		k = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d;
	h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void sha256_init(struct sha256 *c)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372,
					0xa54ff53a, 0x510e527f, 0x9b05688c,
					0x1f83d9ab, 0x5be0cd19 };

	memcpy(c->h, iv, sizeof(iv));
	c->bytes = 0;
	c->fill = 0;
}

void sha256_update(struct sha256 *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	c->bytes += len;
	while (len) {
		size_t n = SHA256_BLOCK - c->fill;

		if (n > len)
			n = len;
		memcpy(c->buf + c->fill, p, n);
		c->fill += n;
		p += n;
		len -= n;
		if (c->fill == SHA256_BLOCK) {
			compress(c->h, c->buf);
			c->fill = 0;
		}
	}
}

void sha256_final(struct sha256 *c, uint8_t out[SHA256_LEN])
{
	uint64_t bits = c->bytes * 8;
	uint8_t pad = 0x80, len[8];
	int i;

	sha256_update(c, &pad, 1);
	pad = 0;
	while (c->fill != SHA256_BLOCK - 8)
		sha256_update(c, &pad, 1);
	for (i = 0; i < 8; i++)
		len[i] = bits >> (56 - 8 * i);
	sha256_update(c, len, 8);
	for (i = 0; i < 8; i++) {
		out[4 * i] = c->h[i] >> 24;
		out[4 * i + 1] = c->h[i] >> 16;
		out[4 * i + 2] = c->h[i] >> 8;
		out[4 * i + 3] = c->h[i];
	}
	memset(c, 0, sizeof(*c));
}

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	struct sha256 c;

	sha256_init(&c);
	sha256_update(&c, data, len);
	sha256_final(&c, out);
}

void hmac_sha256_init(struct hmac_sha256 *c, const void *key, size_t klen)
{
	uint8_t k[SHA256_BLOCK] = {}, pad[SHA256_BLOCK];
	int i;

	/* Keys longer than a block are hashed first (RFC 2104, 2.) */
	if (klen > SHA256_BLOCK)
		sha256(key, klen, k);
	else
		memcpy(k, key, klen);
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&c->inner);
	sha256_update(&c->inner, pad, sizeof(pad));
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&c->outer);
	sha256_update(&c->outer, pad, sizeof(pad));
	memset(k, 0, sizeof(k));
	memset(pad, 0, sizeof(pad));
}

void hmac_sha256_update(struct hmac_sha256 *c, const void *data, size_t len)
{
	sha256_update(&c->inner, data, len);
}

void hmac_sha256_final(struct hmac_sha256 *c, uint8_t out[SHA256_LEN])
{
	uint8_t ih[SHA256_LEN];

	sha256_final(&c->inner, ih);
	sha256_update(&c->outer, ih, sizeof(ih));
	sha256_final(&c->outer, out);
}

void hmac_sha256(const void *key, size_t klen, const void *data, size_t len,
		 uint8_t out[SHA256_LEN])
{
	struct hmac_sha256 c;

	hmac_sha256_init(&c, key, klen);
	hmac_sha256_update(&c, data, len);
	hmac_sha256_final(&c, out);
}

bool ct_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	size_t i;

	for (i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}
