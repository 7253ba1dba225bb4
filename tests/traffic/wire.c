// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What travels: wr_id encoding, the payload header and checksum, and the
 * layout of the memory a peer may access.
 */
#include <stdio.h>
#include <string.h>

#include "traffic.h"

#define TR_MAGIC 0x4d545246u /* "MTRF" */
#define WRID_SEQ_BITS 48

/* Every buffer starts with this header; the checksum covers the whole
 * buffer with csum taken as zero. */
struct tr_hdr {
	uint32_t magic;
	uint8_t kind;
	uint8_t src;
	uint16_t qp;
	uint32_t len;
	uint32_t pad;
	uint64_t seq;
	uint64_t msg;
	uint64_t write_seq;
	uint64_t csum;
};

/* wr_id: qp index (8 bits), op (8 bits), per-QP sequence number (48). */
uint64_t tr_wrid(unsigned int qp, unsigned int op, uint64_t seq)
{
	return (uint64_t)qp << 56 | (uint64_t)op << WRID_SEQ_BITS |
	       (seq & ((1ull << WRID_SEQ_BITS) - 1));
}

void tr_wrid_split(uint64_t wrid, unsigned int *qp, unsigned int *op,
		   uint64_t *seq)
{
	*qp = wrid >> 56;
	*op = (wrid >> WRID_SEQ_BITS) & 0xff;
	*seq = wrid & ((1ull << WRID_SEQ_BITS) - 1);
}

static uint64_t mix(uint64_t h, uint64_t w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

static uint64_t checksum(const uint8_t *buf, uint32_t len)
{
	struct tr_hdr h;
	uint64_t sum = 0xcbf29ce484222325ull, w;
	uint32_t i;

	memcpy(&h, buf, sizeof(h));
	h.csum = 0;
	for (i = 0; i < sizeof(h); i += 8) {
		memcpy(&w, (uint8_t *)&h + i, 8);
		sum = mix(sum, w);
	}
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, buf + i, 8);
		sum = mix(sum, w);
	}
	for (; i < len; i++)
		sum = mix(sum, buf[i]);
	return mix(sum, len);
}

/* splitmix64: payload bytes differ per (src, kind, qp, seq), so data that
 * landed in the wrong place fails its checksum or its header. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tr_fill(uint8_t *buf, uint32_t len, unsigned int kind, unsigned int src,
	     unsigned int qp, uint64_t seq, uint64_t msg, uint64_t write_seq)
{
	struct tr_hdr h = {
		.magic = TR_MAGIC,
		.kind = kind,
		.src = src,
		.qp = qp,
		.len = len,
		.seq = seq,
		.msg = msg,
		.write_seq = write_seq,
	};
	uint64_t s = mix(mix(mix(src, kind), qp), seq), w;
	uint32_t i;

	for (i = sizeof(h); i < len; i += 8) {
		w = next_rand(&s);
		memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
	}
	memcpy(buf, &h, sizeof(h));
	h.csum = checksum(buf, len);
	memcpy(buf, &h, sizeof(h));
}

/* NULL if buf holds what (kind, src, qp, seq, msg) should have put there;
 * else what is wrong. seq/msg TR_NONE: not checked (returned in *). */
const char *tr_verify(const uint8_t *buf, uint32_t len, unsigned int kind,
		      unsigned int src, unsigned int qp, uint64_t seq,
		      uint64_t msg, uint64_t *write_seq)
{
	static char why[160];
	struct tr_hdr h;
	uint64_t sum;

	memcpy(&h, buf, sizeof(h));
	if (h.magic != TR_MAGIC) {
		snprintf(why, sizeof(why), "no payload header (magic %#x)",
			 h.magic);
		return why;
	}
	if (h.kind != kind || h.src != src || h.qp != qp || h.len != len) {
		snprintf(
			why, sizeof(why),
			"header says %s from endpoint %u QP %u len %u, expected %s from %u QP %u len %u",
			tr_op_name(h.kind), h.src, h.qp, h.len,
			tr_op_name(kind), src, qp, len);
		return why;
	}
	if ((seq != TR_NONE && h.seq != seq) ||
	    (msg != TR_NONE && h.msg != msg)) {
		if (seq != TR_NONE && h.seq != seq)
			snprintf(why, sizeof(why),
				 "header carries seq %llu, expected %llu",
				 (unsigned long long)h.seq,
				 (unsigned long long)seq);
		else
			snprintf(why, sizeof(why),
				 "header carries message %llu, expected %llu",
				 (unsigned long long)h.msg,
				 (unsigned long long)msg);
		return why;
	}
	sum = checksum(buf, len);
	if (sum != h.csum) {
		snprintf(
			why, sizeof(why),
			"payload checksum mismatch (computed %016llx, header %016llx)",
			(unsigned long long)sum, (unsigned long long)h.csum);
		return why;
	}
	if (write_seq)
		*write_seq = h.write_seq;
	return NULL;
}

uint64_t tr_hdr_seq(const uint8_t *buf)
{
	struct tr_hdr h;

	memcpy(&h, buf, sizeof(h));
	return h.seq;
}

uint64_t tr_hdr_msg(const uint8_t *buf)
{
	struct tr_hdr h;

	memcpy(&h, buf, sizeof(h));
	return h.msg;
}

/* Each counter starts at a value both sides can compute. */
uint64_t tr_atomic_init(unsigned int owner, unsigned int qp)
{
	return 0x5a00000000000000ull | (uint64_t)owner << 40 |
	       (uint64_t)qp << 24;
}

/* Remote region of a QP: counter (8 bytes, own cache line), the owner's
 * pattern block, then nslots WRITE_IMM slots and nslots WRITE slots. */
size_t tr_off_pattern(void)
{
	return 64;
}

size_t tr_off_wimm(unsigned int size, unsigned int slot)
{
	return 64 + (size_t)size * (1 + slot);
}

size_t tr_off_write(unsigned int size, unsigned int nslots, unsigned int slot)
{
	return tr_off_wimm(size, nslots + slot);
}

size_t tr_remote_len(unsigned int size, unsigned int nslots)
{
	return tr_off_write(size, nslots, nslots);
}
