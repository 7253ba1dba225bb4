// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Drain markers (marker.h): the landing byte of each PD, the access a QP
 * grants them, and the marker WR itself. A switch posts them on its own
 * QPs, a partner on the QP it moves along (partner_serve.c).
 */
#include <errno.h>

#include "datapath.h"
#include "marker.h"

/* The PD's landing byte for markers, registered on its first use */
static struct ibv_mr *marker_mr(struct migr_pd *mpd)
{
	if (!mpd->marker_mr && mpd->lower)
		mpd->marker_mr = ibv_reg_mr(
			mpd->lower, &mpd->marker_buf, sizeof(mpd->marker_buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC);
	return mpd->marker_mr;
}

/* Before the PD goes: by the application, or released by a switch */
void migr_marker_mr_drop(struct migr_pd *mpd)
{
	if (mpd->marker_mr)
		ibv_dereg_mr(mpd->marker_mr);
	mpd->marker_mr = NULL;
}

/* Where the other end of mqp writes its marker; ENOMEM without an MR */
int migr_marker_target(struct migr_qp *mqp, struct migr_marker_target *t)
{
	struct ibv_mr *mr = marker_mr(to_mpd(mqp->vqp.qp.pd));

	if (!mr)
		return ENOMEM;
	t->rkey = mr->rkey;
	t->addr = (uintptr_t)mr->addr;
	t->access = migr_marker_access(mqp) &
		    (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC);
	return 0;
}

/*
 * A one-byte WRITE (or READ, or a fetch-and-add of 0) on the other end's
 * marker bytes, which nothing else uses: it consumes no RECV. Not zero
 * bytes: rxe (6.12) answers a duplicate READ that follows a zero-length
 * request with a remote access error. What the other end's QP allows
 * picks the opcode; READ and atomics need our QP's initiator depth.
 */
int migr_post_marker(struct migr_context *ctx, struct migr_qp *mqp,
		     const struct migr_marker_target *t)
{
	struct ibv_mr *src = marker_mr(to_mpd(mqp->vqp.qp.pd));
	bool depth = mqp->attr.max_rd_atomic > 0;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = MIGR_MARKER_WRID,
		.send_flags = IBV_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
	};

	if (!src)
		return ENOMEM;
	sge.addr = (uintptr_t)src->addr;
	sge.length = 1;
	sge.lkey = src->lkey;
	if ((t->access & IBV_ACCESS_REMOTE_WRITE) ||
	    ((t->access & IBV_ACCESS_REMOTE_READ) && depth)) {
		wr.opcode = t->access & IBV_ACCESS_REMOTE_WRITE ?
				    IBV_WR_RDMA_WRITE :
				    IBV_WR_RDMA_READ;
		wr.wr.rdma.rkey = t->rkey;
		wr.wr.rdma.remote_addr = t->addr;
	} else if ((t->access & IBV_ACCESS_REMOTE_ATOMIC) && depth) {
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		sge.length = sizeof(uint64_t);
		wr.wr.atomic.rkey = t->rkey;
		wr.wr.atomic.remote_addr = t->addr;
	} else {
		return EOPNOTSUPP;
	}
	return migr_send_marker(ctx, mqp, &wr);
}

/*
 * The other end's marker is best a one-byte WRITE into this QP. An RTS QP
 * that does not allow remote write (SEND/RECV, READ or atomics only:
 * ibv_rc_pingpong's) allows it until the switch is over: any WRITE still
 * needs the rkey of an MR registered for it, and the only one the other
 * end is told is migr's own marker byte. An RTR QP cannot change its
 * access (it gets a READ or an atomic marker, see migr_post_marker()). A
 * new lower QP (the rebuild's) has the application's flags.
 */
int migr_marker_grant(struct migr_qp *mqp)
{
	struct ibv_qp_attr a = {};
	int ret;

	if (mqp->marker.granted || !mqp->lower ||
	    mqp->attr.qp_state != IBV_QPS_RTS ||
	    (mqp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE))
		return 0;
	a.qp_access_flags = mqp->attr.qp_access_flags | IBV_ACCESS_REMOTE_WRITE;
	ret = ibv_modify_qp(mqp->lower, &a, IBV_QP_ACCESS_FLAGS);
	if (!ret)
		mqp->marker.granted = true;
	return ret;
}

/* The application's access flags again, on a QP a switch left in place */
void migr_marker_ungrant(struct migr_qp *mqp)
{
	struct ibv_qp_attr a = { .qp_access_flags = mqp->attr.qp_access_flags };

	if (!mqp->marker.granted)
		return;
	mqp->marker.granted = false;
	if (mqp->lower && ibv_modify_qp(mqp->lower, &a, IBV_QP_ACCESS_FLAGS))
		verbs_warn(&mqp->ctx->vctx,
			   "QP 0x%x: restoring its access flags failed\n",
			   mqp->vqp.qp.qp_num);
}

/* Post a marker WR (wr_id MIGR_MARKER_WRID), counted as pending */
int migr_send_marker(struct migr_context *ctx, struct migr_qp *mqp,
		     struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret;

	/* Before posting: an application poll may see the completion first */
	pthread_mutex_lock(&ctx->rec.lock);
	mqp->marker.pending++;
	mqp->marker.sent = true;
	__atomic_add_fetch(&ctx->markers_out, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ctx->rec.lock);
	ret = ibv_post_send(mqp->lower, wr, &bad);
	if (ret) {
		pthread_mutex_lock(&ctx->rec.lock);
		mqp->marker.pending--;
		mqp->marker.sent = false;
		__atomic_sub_fetch(&ctx->markers_out, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&ctx->rec.lock);
	}
	return ret;
}
