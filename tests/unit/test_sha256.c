// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's SHA-256 and HMAC-SHA256 against FIPS 180-2 and RFC 4231 vectors */
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "unit.h"

static void hex(const uint8_t *d, char *out)
{
	int i;

	for (i = 0; i < SHA256_LEN; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static int sha_is(const void *msg, size_t len, const char *want)
{
	uint8_t d[SHA256_LEN];
	char h[65];

	sha256(msg, len, d);
	hex(d, h);
	return !strcmp(h, want);
}

static int hmac_is(const void *key, size_t klen, const void *msg, size_t len,
		   const char *want)
{
	uint8_t d[SHA256_LEN];
	char h[65];

	hmac_sha256(key, klen, msg, len, d);
	hex(d, h);
	return !strcmp(h, want);
}

/* FIPS 180-2, appendix B */
static void test_sha256(void)
{
	const char *two =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct sha256 c;
	uint8_t d[SHA256_LEN], e[SHA256_LEN];
	char *million = malloc(1000000);
	int i;

	CHECK(sha_is(
		"abc", 3,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	CHECK(sha_is(
		"", 0,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	CHECK(sha_is(
		two, strlen(two),
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
	memset(million, 'a', 1000000);
	CHECK(sha_is(
		million, 1000000,
		"cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
	/* Fed in odd pieces, the same digest */
	sha256_init(&c);
	for (i = 0; i < 1000000; i += 997)
		sha256_update(&c, million + i,
			      1000000 - i < 997 ? 1000000 - i : 997);
	sha256_final(&c, d);
	sha256(million, 1000000, e);
	CHECK(!memcmp(d, e, SHA256_LEN));
	/* A one-bit change changes the digest */
	million[500000] ^= 1;
	CHECK(!sha_is(
		million, 1000000,
		"cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
	free(million);
}

/* RFC 4231, test cases 1-4, 6, 7 (5 is truncated output) */
static void test_hmac(void)
{
	uint8_t k[131], d[50];
	const char *big1 =
		"Test Using Larger Than Block-Size Key - Hash Key First";
	const char *big2 =
		"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.";
	int i;

	memset(k, 0x0b, 20);
	CHECK(hmac_is(
		k, 20, "Hi There", 8,
		"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
	CHECK(hmac_is(
		"Jefe", 4, "what do ya want for nothing?", 28,
		"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
	memset(k, 0xaa, 20);
	memset(d, 0xdd, 50);
	CHECK(hmac_is(
		k, 20, d, 50,
		"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"));
	for (i = 0; i < 25; i++)
		k[i] = i + 1;
	memset(d, 0xcd, 50);
	CHECK(hmac_is(
		k, 25, d, 50,
		"82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"));
	memset(k, 0xaa, 131);
	CHECK(hmac_is(
		k, 131, big1, strlen(big1),
		"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
	CHECK(hmac_is(
		k, 131, big2, strlen(big2),
		"9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"));
	/* Another key, another MAC */
	CHECK(!hmac_is(
		"Jeff", 4, "what do ya want for nothing?", 28,
		"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
	CHECK(ct_equal("abc", "abc", 3));
	CHECK(!ct_equal("abc", "abd", 3));
}

int main(void)
{
	test_sha256();
	test_hmac();
	return unit_done("sha256");
}
