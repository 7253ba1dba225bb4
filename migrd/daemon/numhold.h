/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Numbers held on this host for a process on its way here (migr_rxe(7)):
 * during the pre-copy, the QP numbers and MR keys the process has on its
 * source are reserved on a uverbs context of migrd's own, under a random
 * token. The restored process claims them with the token (its resume
 * carries it), so that its objects take the numbers they had even where
 * another process would have taken them meanwhile. Only with migr's
 * rdma_rxe; anywhere else nothing is held and nothing changes.
 */
#ifndef MIGRD_NUMHOLD_H
#define MIGRD_NUMHOLD_H

#include <stddef.h>
#include <stdint.h>

struct numhold;

/*
 * A holder on RDMA device dev: NULL with a one-line reason in err if the
 * device cannot hold numbers (not rxe, the stock module, no memory)
 */
struct numhold *numhold_open(const char *dev, char *err, size_t errlen);

/*
 * Hold n values of kind (MIGR_RXE_KIND_QPN or MIGR_RXE_KIND_MR_KEY; any n,
 * sent in batches): how many the holder holds of them (one in use here is
 * not), or -1 with err (one line; beyond the module's bounds on what a
 * holder holds, MIGR_RXE_HOLD_MAX, it names them)
 */
int numhold_reserve(struct numhold *h, int kind, const uint32_t *values,
		    size_t n, char *err, size_t errlen);

/* The token the restored process presents: 64 random bits, never 0 */
uint64_t numhold_token(const struct numhold *h);

/* Closed: what the restored process has not claimed is given back */
void numhold_close(struct numhold *h);

#endif /* MIGRD_NUMHOLD_H */
