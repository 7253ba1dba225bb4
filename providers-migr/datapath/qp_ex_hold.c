// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * An ibv_wr_*() batch begun while a switch holds the QP's posts. The
 * builders cannot reach a lower QP (it may be gone), so the batch is
 * written down as legacy send WRs with the application's own (virtual)
 * values; wr_complete() hands them to the held list, and the switch posts
 * them on the rebuilt QP with the others, translated then. Only this rare
 * path allocates; the batch's data (SGE lists, inline payloads) is copied
 * at once, since the application may reuse it as soon as a builder returns.
 * A QP whose send WRs are logged (MIGR_REPLAY) takes this path for every
 * batch: wr_complete() posts it through ibv_post_send(), which logs it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"
#include "migr.h"

static void rec_free(struct migr_held_wr *h)
{
	while (h) {
		struct migr_held_wr *next = h->next;
		unsigned int i;

		if (h->send.send_flags & IBV_SEND_INLINE)
			for (i = 0; i < (unsigned int)h->send.num_sge; i++)
				free((void *)(uintptr_t)h->send.sg_list[i].addr);
		free(h->send.sg_list);
		free(h);
		h = next;
	}
}

/* A new WR of the batch, as the application started it on our qp_ex */
struct ibv_send_wr *migr_wr_rec_new(struct migr_qp *mqp,
				    enum ibv_wr_opcode opcode)
{
	struct migr_held_wr *h;

	if (mqp->wr.err)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h) {
		mqp->wr.err = ENOMEM;
		return NULL;
	}
	h->send.wr_id = mqp->vqp.qp_ex.wr_id;
	h->send.send_flags = mqp->vqp.qp_ex.wr_flags;
	h->send.opcode = opcode;
	*mqp->wr.rec_tail = h;
	mqp->wr.rec_tail = &h->next;
	return &h->send;
}

/* The WR the setters complete: the last one started, where the tail is */
struct ibv_send_wr *migr_wr_rec_cur(struct migr_qp *mqp)
{
	if (mqp->wr.err)
		return NULL;
	if (!mqp->wr.rec) {
		mqp->wr.err = EINVAL; /* a setter before any WR */
		return NULL;
	}
	return &container_of(mqp->wr.rec_tail, struct migr_held_wr, next)->send;
}

/* A setter replaces what an earlier one set on the same WR */
static struct ibv_send_wr *rec_data(struct migr_qp *mqp, size_t n)
{
	struct ibv_send_wr *wr = migr_wr_rec_cur(mqp);

	if (!wr)
		return NULL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		unsigned int i;

		for (i = 0; i < (unsigned int)wr->num_sge; i++)
			free((void *)(uintptr_t)wr->sg_list[i].addr);
	}
	free(wr->sg_list);
	wr->sg_list = n ? calloc(n, sizeof(*wr->sg_list)) : NULL;
	wr->num_sge = 0;
	if (n && !wr->sg_list) {
		mqp->wr.err = ENOMEM;
		return NULL;
	}
	wr->num_sge = n;
	return wr;
}

void migr_wr_rec_sges(struct migr_qp *mqp, size_t n, const struct ibv_sge *sge)
{
	struct ibv_send_wr *wr = rec_data(mqp, n);

	if (!wr)
		return;
	wr->send_flags &= ~IBV_SEND_INLINE;
	if (n)
		memcpy(wr->sg_list, sge, n * sizeof(*sge));
}

void migr_wr_rec_inline(struct migr_qp *mqp, size_t n,
			const struct ibv_data_buf *buf)
{
	struct ibv_send_wr *wr = rec_data(mqp, n);
	size_t i;

	if (!wr)
		return;
	/* Posted inline later, from our copy: a legacy WR says so by a flag */
	wr->send_flags |= IBV_SEND_INLINE;
	for (i = 0; i < n; i++) {
		void *copy = malloc(buf[i].length ? buf[i].length : 1);

		if (!copy) {
			wr->num_sge = i;
			mqp->wr.err = ENOMEM;
			return;
		}
		memcpy(copy, buf[i].addr, buf[i].length);
		wr->sg_list[i].addr = (uintptr_t)copy;
		wr->sg_list[i].length = buf[i].length;
	}
}

static void rec_reset(struct migr_qp *mqp)
{
	rec_free(mqp->wr.rec);
	mqp->wr.rec = NULL;
	mqp->wr.rec_tail = &mqp->wr.rec;
	mqp->wr.recording = false;
	mqp->wr.err = 0;
}

/*
 * Hold the batch, or post it if the switch resumed the QP meanwhile (held
 * WRs went first then, so the order stays the application's).
 */
int migr_wr_rec_complete(struct migr_qp *mqp)
{
	struct ibv_send_wr *bad;
	struct migr_held_wr *h;
	int ret = mqp->wr.err;

	if (ret) {
		rec_reset(mqp);
		return ret;
	}
	for (h = mqp->wr.rec; h; h = h->next)
		h->send.next = h->next ? &h->next->send : NULL;
	if (mqp->wr.rec) {
		pthread_mutex_lock(&mqp->hold.lock);
		if (mqp->slow & MIGR_SLOW_SUSPENDED)
			ret = migr_hold_sends(mqp, &mqp->wr.rec->send, &bad);
		else
			ret = migr_post_send_replay(mqp, &mqp->wr.rec->send,
						    &bad);
		pthread_mutex_unlock(&mqp->hold.lock);
	}
	rec_reset(mqp);
	return ret;
}

void migr_wr_rec_abort(struct migr_qp *mqp)
{
	rec_reset(mqp);
}
