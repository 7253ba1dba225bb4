// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues in a live switch. An SRQ is used up in the order
 * its RECVs were posted, whichever QP takes them, and every RECV it used
 * up completes on the receive CQ of that QP: once the partners' SENDs are
 * all in (the drain) and no thread polls (the quiesce), the RECVs unused
 * are the newest of the log, as many as were posted minus the RECV
 * completions its CQs counted. Those are posted again on the rebuilt SRQ,
 * then what was held, then the limit is armed again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cq_watch.h"
#include "datapath.h"
#include "switch_objects.h"

void migr_srqs_suspend(struct migr_context *ctx)
{
	struct migr_srq *msrq;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		pthread_mutex_lock(&msrq->hold.lock);
		__atomic_or_fetch(&msrq->slow, MIGR_SLOW_SUSPENDED,
				  __ATOMIC_RELEASE);
		pthread_mutex_unlock(&msrq->hold.lock);
	}
}

/* RECVs go to the old SRQ until the queues drained: SENDs need them */
void migr_srqs_hold_recvs(struct migr_context *ctx)
{
	struct migr_srq *msrq;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		pthread_mutex_lock(&msrq->hold.lock);
		msrq->hold.recvs = true;
		pthread_mutex_unlock(&msrq->hold.lock);
	}
}

/* After the drain and a quiesce: what each SRQ has posted and not used */
int migr_srqs_count_unused(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_srq *msrq;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		uint64_t used = migr_srq_used_total(ctx, msrq);

		if (migr_rlog_unused(&msrq->rlog, used, &msrq->unused)) {
			snprintf(
				why, why_len,
				"an SRQ's RECV count does not add up (%llu posted, %llu used)",
				(unsigned long long)msrq->rlog.head,
				(unsigned long long)used);
			return EPROTO;
		}
	}
	return 0;
}

/* After the QPs on them are gone */
void migr_srqs_release(struct migr_context *ctx)
{
	struct migr_srq *msrq;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		if (msrq->lower)
			ibv_destroy_srq(msrq->lower);
		msrq->lower = NULL;
	}
}

/* After the PDs, before the QPs that receive through them */
int migr_srqs_rebuild(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_srq *msrq;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		struct ibv_srq *srq = &msrq->vsrq.srq;
		struct ibv_srq_init_attr attr = {
			.srq_context = msrq,
			.attr = { .max_wr = msrq->max_wr,
				  .max_sge = msrq->max_sge },
		};

		msrq->lower = ibv_create_srq(lower_pd(srq->pd), &attr);
		if (!msrq->lower) {
			snprintf(why, why_len,
				 "creating an SRQ of %u entries failed: %s",
				 msrq->max_wr, strerror(errno));
			return errno ? errno : EIO;
		}
		srq->handle = msrq->lower->handle;
	}
	return 0;
}

static int repost_srq_recv(void *msrq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	return migr_post_srq_recv_replay(msrq, wr, bad_wr);
}

/*
 * The unused RECVs, in their order, on the rebuilt SRQs; then the limit:
 * armed on an empty SRQ it would fire at once.
 */
int migr_srqs_repost(struct migr_context *ctx, unsigned int *reposted,
		     char *why, size_t why_len)
{
	struct migr_srq *msrq;
	int ret;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		struct ibv_srq_attr a = {
			.srq_limit =
				__atomic_load_n(&msrq->limit, __ATOMIC_RELAXED),
		};

		ret = migr_rlog_repost(&msrq->rlog, msrq->unused,
				       repost_srq_recv, msrq);
		if (ret) {
			snprintf(why, why_len,
				 "posting a RECV to an SRQ again failed: %s",
				 strerror(ret));
			return ret;
		}
		*reposted += msrq->unused;
		msrq->unused = 0;
		if (a.srq_limit &&
		    (ret = ibv_modify_srq(msrq->lower, &a, IBV_SRQ_LIMIT))) {
			snprintf(why, why_len,
				 "arming an SRQ's limit again failed: %s",
				 strerror(ret));
			return ret;
		}
	}
	return 0;
}

/* Post an SRQ's held RECVs in order, then let posts through; hold_lock held */
static unsigned int srq_resume(struct migr_srq *msrq)
{
	unsigned int held = 0;

	while (msrq->hold.wrs) {
		struct migr_held_wr *h = msrq->hold.wrs;
		struct ibv_recv_wr *bad;
		int ret;

		msrq->hold.wrs = h->next;
		ret = migr_post_srq_recv_replay(msrq, &h->recv_wr, &bad);
		if (ret)
			verbs_err(&to_mcontext(msrq->vsrq.srq.context)->vctx,
				  "SRQ: replaying a held RECV failed: %s\n",
				  strerror(ret));
		free(h);
		held++;
	}
	msrq->hold.tail = &msrq->hold.wrs;
	msrq->hold.recvs = false;
	__atomic_and_fetch(&msrq->slow, ~MIGR_SLOW_SUSPENDED, __ATOMIC_RELEASE);
	return held;
}

/* Post the RECVs held meanwhile, in order, and let posts through again */
unsigned int migr_srqs_resume(struct migr_context *ctx)
{
	unsigned int held = 0;
	struct migr_srq *msrq;

	list_for_each (&ctx->rec.srqs, msrq, entry) {
		pthread_mutex_lock(&msrq->hold.lock);
		held += srq_resume(msrq);
		pthread_mutex_unlock(&msrq->hold.lock);
	}
	return held;
}

/*
 * A partner's QP on this SRQ faces a mover that would replay toward it
 * (partner_serve.c, "recvs"): the SRQ holds its RECVs, whichever QP they
 * were for, so that what it has left stays counted, until the last such
 * session ends. The caller quiesces after the first hold.
 */
void migr_srq_partner_hold(struct migr_srq *msrq)
{
	pthread_mutex_lock(&msrq->hold.lock);
	if (!msrq->partner_holds++) {
		msrq->hold.recvs = true;
		__atomic_or_fetch(&msrq->slow, MIGR_SLOW_SUSPENDED,
				  __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&msrq->hold.lock);
}

/* A session that held the SRQ ended; the last one posts what was held */
unsigned int migr_srq_partner_release(struct migr_srq *msrq)
{
	unsigned int held = 0;

	pthread_mutex_lock(&msrq->hold.lock);
	if (msrq->partner_holds && !--msrq->partner_holds)
		held = srq_resume(msrq);
	pthread_mutex_unlock(&msrq->hold.lock);
	return held;
}
