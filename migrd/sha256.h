/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104): what migrd's peer
 * authentication needs, without a crypto library dependency. */
#ifndef MIGRD_SHA256_H
#define MIGRD_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_BLOCK 64

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t buf[SHA256_BLOCK];
	size_t fill;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, uint8_t out[SHA256_LEN]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

struct hmac_sha256 {
	struct sha256 inner, outer;
};

void hmac_sha256_init(struct hmac_sha256 *c, const void *key, size_t klen);
void hmac_sha256_update(struct hmac_sha256 *c, const void *data, size_t len);
void hmac_sha256_final(struct hmac_sha256 *c, uint8_t out[SHA256_LEN]);
void hmac_sha256(const void *key, size_t klen, const void *data, size_t len,
		 uint8_t out[SHA256_LEN]);

/* Compare without leaking where the first difference is */
bool ct_equal(const void *a, const void *b, size_t len);

#endif
