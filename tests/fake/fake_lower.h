/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The fake lower provider under migr in the unit tests and the host
 * benchmark: a lower context whose data path has a small, constant cost
 * (posts copy each WR into a ring the way a provider writes a WQE, polls
 * fill completions from a script), and, for the tests, a lower device
 * with the books they check: the WRs each post took, in order, a post
 * made to fail, device memory in host buffers, AHs that remember their
 * GID. It lives in its own library so neither the benchmark nor migr can
 * inline it: both reach it through the ops tables.
 */
#ifndef MIGR_FAKE_LOWER_H
#define MIGR_FAKE_LOWER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

/* How much of what the posts took the books keep (the last ones) */
#define FAKE_SEEN 64

struct fake_cq;
/* Writes completion i of a poll (the entry is zeroed before) */
typedef void (*fake_fill_fn)(struct fake_cq *f, int i, struct ibv_wc *wc);

struct fake_cq {
	struct ibv_cq cq;
	int per_poll; /* completions each poll hands out (at most) */
	uint64_t seq;
	const uint32_t *qpn; /* the physical QPNs completions carry, in turn */
	uint32_t nqpn_mask; /* number of QPNs - 1, a power of two */
	/* FAKE_BOOKS only: the test's script of a poll's completions */
	fake_fill_fn fill;
};

/*
 * What the posts of a FAKE_BOOKS context took, for the tests to check:
 * one set for the process, under a lock as real providers serialize
 * their queues. WR n of a kind is kept at n % FAKE_SEEN.
 */
struct fake_books {
	int fail_at; /* the send or RECV WR (by count) refused with EINVAL, -1: none */
	unsigned int calls; /* post calls, sends and RECVs */
	uint64_t sends, recvs, srq_recvs; /* WRs taken */
	struct ibv_send_wr *last_send_list; /* the list the last post_send got */
	struct ibv_send_wr send[FAKE_SEEN];
	struct ibv_sge send_sge[FAKE_SEEN]; /* each WR's first SGE */
	struct ibv_recv_wr recv[FAKE_SEEN];
	struct ibv_sge recv_sge[FAKE_SEEN];
	struct ibv_recv_wr srq_recv[FAKE_SEEN];
	pthread_mutex_t lock;
};
extern struct fake_books fake_books;
/* Empties the books; no WR fails */
void fake_books_reset(void);

enum fake_mode {
	FAKE_BENCH, /* the constant-cost data path, nothing kept */
	FAKE_BOOKS, /* every post and poll through the books */
};

/* A bare lower context (ibv_context ops only): the data path */
void fake_lower_init(struct ibv_context *ctx, enum fake_mode mode);
/* The keys of the last WR the fake send queue took (FAKE_BENCH) */
void fake_last_send(uint32_t *lkey, uint32_t *rkey);

/* A lower device's context with verbs ops: DMs, AHs, the data path */
#define FAKE_DM_LEN 256
struct fake_dev {
	struct verbs_context vctx;
	uint64_t max_dm_size; /* what query_device_ex reports */
	int allocs, frees; /* DMs */
	int ah_creates, ah_destroys;
};

/* A DM: host memory; a new one holds 0xee bytes, not the old contents */
struct fake_dm {
	struct ibv_dm dm;
	uint8_t mem[FAKE_DM_LEN];
};

/* An AH remembers the GID it leads to */
struct fake_ah {
	struct ibv_ah ah;
	union ibv_gid dgid;
};

/* Returns 0, or -1 when out of memory; its device is named "fake0" */
int fake_dev_init(struct fake_dev *d, uint64_t max_dm_size);
/* The device's create_ah, callable directly */
struct ibv_ah *fake_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);

#endif /* MIGR_FAKE_LOWER_H */
