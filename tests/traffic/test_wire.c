// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Host test of migr-traffic's wire checks (no RDMA device needed): a
 * filled buffer verifies, and each kind of damage the checker exists to
 * catch is caught.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traffic.h"

static int failures;

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: failed: %s\n", __FILE__,       \
				__LINE__, #cond);                              \
			failures++;                                            \
		}                                                              \
	} while (0)

static void test_wrid(void)
{
	unsigned int qp, op;
	uint64_t seq;

	tr_wrid_split(tr_wrid(7, OP_FAA, 123456789), &qp, &op, &seq);
	EXPECT(qp == 7 && op == OP_FAA && seq == 123456789);
	tr_wrid_split(tr_wrid(0xff, OP_RECV, (1ull << 48) + 5), &qp, &op, &seq);
	EXPECT(qp == 0xff && op == OP_RECV && seq == 5);
}

static void test_payload(uint32_t len)
{
	uint8_t *b = malloc(len), *c = malloc(len);
	uint64_t wseq = 0;
	uint32_t i;

	tr_fill(b, len, OP_SEND, 1, 3, 42, 17, 40);
	EXPECT(!tr_verify(b, len, OP_SEND, 1, 3, 42, 17, &wseq));
	EXPECT(wseq == 40);
	EXPECT(!tr_verify(b, len, OP_SEND, 1, 3, TR_NONE, 17, NULL));
	EXPECT(tr_hdr_seq(b) == 42);

	/* Wrong place or wrong message: the header says so. */
	EXPECT(tr_verify(b, len, OP_SEND, 1, 3, 42, 18, NULL));
	EXPECT(tr_verify(b, len, OP_SEND, 1, 2, 42, 17, NULL));
	EXPECT(tr_verify(b, len, OP_SEND, 0, 3, 42, 17, NULL));
	EXPECT(tr_verify(b, len, OP_WRITE, 1, 3, 42, 17, NULL));
	EXPECT(tr_verify(b, len, OP_SEND, 1, 3, 43, 17, NULL));
	EXPECT(tr_verify(b, len - 1, OP_SEND, 1, 3, 42, 17, NULL));

	/* Any flipped bit, header or payload, fails the checksum. */
	for (i = 0; i < len; i++) {
		memcpy(c, b, len);
		c[i] ^= 1u << (i % 8);
		EXPECT(tr_verify(c, len, OP_SEND, 1, 3, 42, 17, NULL));
	}
	/* Same header, other payload (another seq's bytes): caught. */
	tr_fill(c, len, OP_SEND, 1, 3, 43, 17, 40);
	memcpy(c, b, 48);
	EXPECT(tr_verify(c, len, OP_SEND, 1, 3, 42, 17, NULL));
	/* Nothing received at all. */
	memset(c, 0, len);
	EXPECT(tr_verify(c, len, OP_SEND, 1, 3, 42, 17, NULL));
	free(b);
	free(c);
}

static void test_layout(void)
{
	/* Slots never overlap the counter, the pattern or each other. */
	EXPECT(tr_off_pattern() >= 8);
	EXPECT(tr_off_wimm(100, 0) >= tr_off_pattern() + 100);
	EXPECT(tr_off_wimm(100, 1) == tr_off_wimm(100, 0) + 100);
	EXPECT(tr_off_write(100, 5, 0) == tr_off_wimm(100, 4) + 100);
	EXPECT(tr_remote_len(100, 5) == tr_off_write(100, 5, 4) + 100);
	EXPECT(tr_atomic_init(0, 1) != tr_atomic_init(1, 1));
}

int main(void)
{
	test_wrid();
	test_payload(64);
	test_payload(2048);
	test_payload(1001);
	test_layout();
	if (failures)
		fprintf(stderr, "test_wire: %d failures\n", failures);
	return failures ? 1 : 0;
}
