/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A lower provider whose data path has a small, constant cost: posts copy
 * each WR into a ring the way a provider writes a WQE, polls fill
 * completions from a fixed script. It lives in its own file so neither the
 * benchmark nor migr can inline it: both reach it through the ops table.
 */
#ifndef MIGR_FAKE_LOWER_H
#define MIGR_FAKE_LOWER_H

#include <infiniband/verbs.h>

struct fake_cq {
	struct ibv_cq cq;
	int per_poll; /* completions each poll hands out (at most) */
	uint64_t seq;
	const uint32_t *qpn; /* the physical QPNs completions carry, in turn */
	uint32_t nqpn_mask; /* number of QPNs - 1, a power of two */
};

void fake_lower_init(struct ibv_context *ctx);
/* The keys of the last WR the fake send queue took */
void fake_last_send(uint32_t *lkey, uint32_t *rkey);

#endif /* MIGR_FAKE_LOWER_H */
