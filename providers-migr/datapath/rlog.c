// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The ring of RECVs posted to a QP or an SRQ (filled by post.c). A switch
 * learns how many of them were used up, and posts the rest again on the
 * rebuilt queue in their order: receive queues, shared or not, are used
 * oldest first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "migr.h"

/* Room for every RECV a queue of max_wr entries can hold */
int migr_rlog_init(struct migr_rlog *log, uint32_t max_wr, uint32_t max_sge)
{
	log->max_sge = max_sge;
	return migr_ring_init(&log->ring, max_wr,
			      sizeof(struct migr_rlog_entry) +
				      max_sge * sizeof(struct ibv_sge));
}

/* RECVs posted but never used, when used of them were: ERANGE if absurd */
int migr_rlog_unused(const struct migr_rlog *log, uint64_t used,
		     uint64_t *unused)
{
	if (used > log->head || log->head - used > (uint64_t)log->ring.mask + 1)
		return ERANGE;
	*unused = log->head - used;
	return 0;
}

/*
 * Post the n newest logged RECVs again, in their order, through post
 * (which logs them again as it posts them). 0 or the error of the post.
 */
int migr_rlog_repost(struct migr_rlog *log, uint64_t n, post_recv_fn post,
		     void *obj)
{
	uint64_t i, first = log->head - n;

	log->head = first;
	for (i = 0; i < n; i++) {
		struct migr_rlog_entry *e = migr_rlog_at(log, first + i);
		struct ibv_sge sge[e->num_sge ? e->num_sge : 1];
		struct ibv_recv_wr wr = { .wr_id = e->wr_id,
					  .sg_list = sge,
					  .num_sge = e->num_sge },
				   *bad;
		int ret;

		memcpy(sge, e->sge, e->num_sge * sizeof(sge[0]));
		ret = post(obj, &wr, &bad);
		if (ret)
			return ret;
	}
	return 0;
}
