// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Release and rebuild: every lower object of a context is destroyed and the
 * lower device closed, then the record is built again on another device.
 * Application objects keep their addresses and their virtual identifiers;
 * only what they wrap changes. Runs with the context's ctl_lock held for
 * writing and every QP suspended (switch.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cq_watch.h"
#include "datapath.h"
#include "marker.h"
#include "qp_phase.h"
#include "rebuild.h"
#include "switch_objects.h"
#include "u32map.h"
#include "ud_redirect.h"
#include "verbs.h"

static bool has_ud(struct migr_context *ctx)
{
	struct migr_qp *mqp;

	list_for_each (&ctx->rec.qps, mqp, entry)
		if (mqp->vqp.qp.qp_type == IBV_QPT_UD)
			return true;
	return false;
}

/* Every QP flushed at least the RECVs it had unused */
static bool flushed_enough(struct migr_context *ctx, const uint64_t *unused)
{
	struct migr_qp *mqp;
	unsigned int q = 0;

	list_for_each (&ctx->rec.qps, mqp, entry)
		if (mqp->release_flushes <
		    migr_expected_flushes(mqp, unused[q++]))
			return false;
	return true;
}

/*
 * Empty the dying CQs of QPs put in error: flushes are counted per QP,
 * anything else is a completion lost. Done at the first quiet poll once
 * the expected flushes (unused, if known) are in, else once the CQs stayed
 * quiet for a while (a UD QP's RECVs flush in no known number): the
 * release's bounds in qp_phase.h.
 */

struct flushes {
	struct migr_context *ctx;
	const uint64_t *unused;
	bool ud;
	unsigned int lost;
	/*
	 * The QPs by their lower number: each of a thousand QPs flushes its
	 * RECVs, and a walk of the list for each flush grew with the square
	 * of the QPs. NULL if it could not be made: then the list.
	 */
	struct migr_qp **qps;
	struct migr_u32map by_qpn; /* lower QP number -> index in qps */
};

/* The QP whose lower QP has number qpn */
static struct migr_qp *by_lower_qpn(const struct flushes *f, uint32_t qpn)
{
	struct migr_qp *mqp;
	uint32_t i;

	if (f->qps)
		return migr_u32map_get(&f->by_qpn, qpn, &i) ? f->qps[i] : NULL;
	list_for_each (&f->ctx->rec.qps, mqp, entry)
		if (mqp->lower && mqp->lower->qp_num == qpn)
			return mqp;
	return NULL;
}

static void index_lower_qpns(struct flushes *f)
{
	struct migr_qp *mqp;
	uint32_t n = 0;

	list_for_each (&f->ctx->rec.qps, mqp, entry)
		n++;
	f->qps = n ? calloc(n, sizeof(*f->qps)) : NULL;
	if (!f->qps)
		return;
	n = 0;
	list_for_each (&f->ctx->rec.qps, mqp, entry) {
		if (!mqp->lower)
			continue;
		if (migr_u32map_put(&f->by_qpn, mqp->lower->qp_num, n)) {
			migr_u32map_free(&f->by_qpn);
			free(f->qps);
			f->qps = NULL;
			return;
		}
		f->qps[n++] = mqp;
	}
}

static bool poll_dying(void *arg)
{
	struct flushes *f = arg;
	struct migr_context *ctx = f->ctx;
	struct migr_cq *mcq;
	struct migr_qp *mqp;
	struct ibv_wc wc[16];
	bool got = false;
	unsigned int i;
	int n;

	list_for_each (&ctx->rec.cqs, mcq, entry) {
		while (mcq->dying &&
		       (n = ibv_poll_cq(mcq->dying, 16, wc)) > 0) {
			got = true;
			for (i = 0; i < (unsigned int)n; i++) {
				mqp = by_lower_qpn(f, wc[i].qp_num);
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
					if (mqp)
						mqp->release_flushes++;
				} else if (!mqp ||
					   mqp->vqp.qp.qp_type != IBV_QPT_UD ||
					   migr_shadow_add(mcq, &wc[i])) {
					f->lost++;
				}
			}
		}
	}
	return got;
}

static bool all_flushed(void *arg)
{
	struct flushes *f = arg;

	return f->unused && !f->ud && flushed_enough(f->ctx, f->unused);
}

static unsigned int collect_flushes(struct migr_context *ctx,
				    const uint64_t *unused)
{
	struct flushes f = { .ctx = ctx, .unused = unused, .ud = has_ud(ctx) };

	index_lower_qpns(&f);
	migr_await_flushes(poll_dying, all_flushed, &f,
			   MIGR_RELEASE_FLUSH_QUIET_MS,
			   unused ? MIGR_RELEASE_FLUSH_WAIT_MS :
				    MIGR_RELEASE_NONE_QUIET_MS);
	if (f.qps) {
		migr_u32map_free(&f.by_qpn);
		free(f.qps);
	}
	return f.lost;
}

/*
 * The last word of the old CQs goes to the shadows; then polls see only
 * the shadows, so what destroying the QPs flushes (the RECVs that will be
 * posted again) never reaches the application. Every WR still on a QP
 * flushes: unused RECVs are expected (they are posted again), anything
 * else was lost, and the switch says so.
 */
static void release_start(struct migr_context *ctx)
{
	struct migr_record *rec = &ctx->rec;
	struct migr_qp *mqp;
	struct migr_cq *mcq;
	struct migr_ah *mah;

	list_for_each (&rec->cqs, mcq, entry) {
		migr_cq_drain(mcq);
		pthread_mutex_lock(&mcq->shadow_lock);
		mcq->dying = mcq->lower;
		mcq->lower = NULL;
		pthread_mutex_unlock(&mcq->shadow_lock);
	}
	list_for_each (&rec->ahs, mah, entry) {
		if (mah->lower)
			ibv_destroy_ah(mah->lower);
		mah->lower = NULL;
		migr_ud_redir_release(mah);
	}
	list_for_each (&rec->qps, mqp, entry) {
		mqp->release_flushes = 0;
		migr_qp_flush(mqp);
	}
}

static void release_qps(struct migr_context *ctx)
{
	struct migr_qp *mqp;

	/* a type 2 window holds the QP it is bound through (rxe waits) */
	migr_mws_release(ctx);
	list_for_each (&ctx->rec.qps, mqp, entry) {
		if (mqp->lower)
			ibv_destroy_qp(mqp->lower);
		mqp->lower = NULL;
		migr_markers_forget(mqp);
		migr_ud_marker_drop(mqp);
	}
}

/* The rest, after the QPs: SRQs, CQs, channels, memory, the device */
static void release_rest(struct migr_context *ctx)
{
	struct migr_record *rec = &ctx->rec;
	struct migr_comp_channel *mch;
	struct migr_cq *mcq;
	struct migr_mr *mmr;
	struct migr_pd *mpd;

	migr_srqs_release(ctx);
	list_for_each (&rec->cqs, mcq, entry) {
		if (!mcq->dying)
			continue;
		ibv_destroy_cq(mcq->dying);
		mcq->dying = NULL;
	}
	list_for_each (&rec->channels, mch, entry) {
		if (mch->lower) {
			migr_event_fd_del(mch->channel.fd, mch->lower->fd);
			ibv_destroy_comp_channel(mch->lower);
		}
		mch->lower = NULL;
	}
	list_for_each (&rec->mrs, mmr, entry) {
		if (mmr->lower)
			ibv_dereg_mr(mmr->lower);
		mmr->lower = NULL;
	}
	migr_dms_release(ctx);
	list_for_each (&rec->pds, mpd, entry) {
		migr_marker_mr_drop(mpd);
		if (mpd->lower)
			ibv_dealloc_pd(mpd->lower);
		mpd->lower = NULL;
	}
	if (ctx->lower) {
		migr_event_fd_del(ctx->vctx.context.async_fd,
				  ctx->lower_async_fd);
		ibv_close_device(ctx->lower);
		ctx->lower = NULL;
	}
	if (ctx->vctx.context.cmd_fd >= 0)
		close(ctx->vctx.context.cmd_fd);
	ctx->vctx.context.cmd_fd = -1;
}

unsigned int migr_release_all(struct migr_context *ctx, const uint64_t *unused)
{
	double t[5], cpu = thread_cpu_ms();
	unsigned int lost;

	t[0] = now_ms();
	release_start(ctx);
	t[1] = now_ms();
	lost = collect_flushes(ctx, unused);
	t[2] = now_ms();
	release_qps(ctx);
	t[3] = now_ms();
	release_rest(ctx);
	t[4] = now_ms();
	verbs_debug(
		&ctx->vctx,
		"released: QPs put in error %.1f ms, their flushes %.1f, QPs destroyed %.1f, the rest %.1f; this thread's CPU %.1f ms of %.1f\n",
		t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3],
		thread_cpu_ms() - cpu, t[4] - t[0]);
	return lost;
}

#define FAIL(fmt, ...)                                                         \
	do {                                                                   \
		snprintf(why, why_len, fmt, ##__VA_ARGS__);                    \
		return errno ? errno : EIO;                                    \
	} while (0)

static void *reg_mr_create(void *arg)
{
	struct migr_mr *mmr = arg;
	struct ibv_mr *mr = &mmr->vmr.ibv_mr;

	return ibv_reg_mr_iova2(lower_pd(mr->pd), mr->addr, mr->length,
				mmr->iova, mmr->vmr.access);
}

static uint32_t mr_key(const void *mr)
{
	return ((const struct ibv_mr *)mr)->lkey;
}

/* mmr's region registered anew, with the key it had where the device can */
static struct ibv_mr *reg_mr_again(struct migr_context *ctx,
				   struct migr_mr *mmr)
{
	const struct migr_numbered how = { reg_mr_create, mr_key, mmr };
	struct ibv_mr *mr = &mmr->vmr.ibv_mr;

	/* one key for both: the device's (rxe's) way, else nothing to ask */
	return migr_numbers_create(ctx, MIGR_RXE_KIND_MR_KEY,
				   mr->lkey == mr->rkey ? mr->lkey : 0, &how);
}

static int rebuild_memory(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_mr *mmr;
	struct migr_pd *mpd;
	int ret;

	list_for_each (&ctx->rec.pds, mpd, entry) {
		mpd->lower = ibv_alloc_pd(ctx->lower);
		if (!mpd->lower)
			FAIL("allocating a PD failed: %s", strerror(errno));
		mpd->pd.handle = mpd->lower->handle;
	}
	ret = migr_dms_rebuild(ctx, why, why_len);
	if (ret)
		return ret;
	list_for_each (&ctx->rec.mrs, mmr, entry) {
		struct ibv_mr *mr = &mmr->vmr.ibv_mr;

		if (mmr->dm)
			mmr->lower = ibv_reg_dm_mr(lower_pd(mr->pd),
						   mmr->dm->lower, mmr->iova,
						   mr->length, mmr->vmr.access);
		else
			mmr->lower = reg_mr_again(ctx, mmr);
		if (!mmr->lower)
			FAIL("registering the MR at %p (%zu bytes) failed: %s",
			     mr->addr, mr->length, strerror(errno));
		mr->handle = mmr->lower->handle;
		errno = migr_xlate_remap(&ctx->xlate, MIGR_XLATE_LKEY, mr->lkey,
					 mmr->lower->lkey);
		if (!errno)
			errno = migr_xlate_remap(&ctx->xlate, MIGR_XLATE_RKEY,
						 mr->rkey, mmr->lower->rkey);
		if (errno)
			FAIL("remapping the keys of an MR failed");
	}
	return migr_mws_rebuild(ctx, why, why_len);
}

static int rebuild_queues(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_comp_channel *mch;
	struct migr_cq *mcq;

	list_for_each (&ctx->rec.channels, mch, entry) {
		mch->lower = ibv_create_comp_channel(ctx->lower);
		if (!mch->lower)
			FAIL("creating a completion channel failed: %s",
			     strerror(errno));
		/* The application's fd and its epoll registrations stay */
		if (migr_event_fd_add(mch->channel.fd, mch->lower->fd))
			FAIL("watching the new completion channel failed: %s",
			     strerror(errno));
	}
	list_for_each (&ctx->rec.cqs, mcq, entry) {
		struct ibv_cq_init_attr_ex lattr = mcq->ex_attr;
		struct ibv_cq_ex *lower_ex = NULL;
		struct ibv_cq *lower;

		/* with room for migr's own completions (migr_cq_sender_add()) */
		lattr.cqe = mcq->cqe_req + mcq->senders;
		if (mcq->lower_ex) {
			if (ctx->replay)
				lattr.wc_flags |= IBV_WC_EX_WITH_QP_NUM;
			lattr.cq_context = mcq;
			lattr.channel = mcq->mch ? mcq->mch->lower : NULL;
			lower_ex = ibv_create_cq_ex(ctx->lower, &lattr);
			lower = lower_ex ? ibv_cq_ex_to_cq(lower_ex) : NULL;
		} else {
			lower = ibv_create_cq(ctx->lower, lattr.cqe, mcq,
					      mcq->mch ? mcq->mch->lower : NULL,
					      mcq->comp_vector);
		}
		if (!lower)
			FAIL("creating a CQ of %u entries failed: %s",
			     lattr.cqe, strerror(errno));
		mcq->vcq.cq.handle = lower->handle;
		pthread_mutex_lock(&mcq->shadow_lock);
		mcq->lower = lower;
		if (lower_ex) {
			/* nobody polls the lower now: its readers may change */
			mcq->lower_ex = lower_ex;
			migr_cq_ex_set_ops(mcq);
		}
		pthread_mutex_unlock(&mcq->shadow_lock);
	}
	return 0;
}

static int create_qps(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_qp *mqp;
	int ret;

	list_for_each (&ctx->rec.qps, mqp, entry) {
		ret = migr_rebuild_lower_qp(mqp, why, why_len);
		if (ret)
			return ret;
	}
	return 0;
}

/* First half: every object of ctx on lower; QPs created, not connected */
int migr_rebuild_objects(struct migr_context *ctx, struct ibv_context *lower,
			 char *why, size_t why_len)
{
	double t[5], cpu = thread_cpu_ms();
	int ret, fd;

	errno = 0;
	ctx->lower = lower;
	migr_quirks_init(ctx);
	migr_numbers_claim(ctx);
	migr_ud_src_forget(ctx);
	fd = fcntl(lower->cmd_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		FAIL("duplicating the device fd failed: %s", strerror(errno));
	ctx->vctx.context.cmd_fd = fd;
	ctx->lower_async_fd = lower->async_fd;
	if (migr_event_fd_add(ctx->vctx.context.async_fd, lower->async_fd))
		FAIL("watching the new async event fd failed: %s",
		     strerror(errno));

	/* each part's time, for whoever looks into a slow rebuild */
	t[0] = now_ms();
	ret = rebuild_memory(ctx, why, why_len);
	t[1] = now_ms();
	if (!ret)
		ret = rebuild_queues(ctx, why, why_len);
	t[2] = now_ms();
	if (!ret)
		ret = migr_srqs_rebuild(ctx, why, why_len);
	t[3] = now_ms();
	if (!ret)
		ret = create_qps(ctx, why, why_len);
	t[4] = now_ms();
	verbs_debug(
		&ctx->vctx,
		"rebuilt on %s: memory %.1f ms, CQs %.1f, SRQs %.1f, QPs %.1f; this thread's CPU %.1f ms of %.1f\n",
		ibv_get_device_name(lower->device), t[1] - t[0], t[2] - t[1],
		t[3] - t[2], t[4] - t[3], thread_cpu_ms() - cpu, t[4] - t[0]);
	return ret;
}

/*
 * Second half, once every context of the process has its QPs: connect them
 * (partners in this process have their new numbers now), then the AHs.
 */
int migr_reconnect_all(struct migr_context *ctx,
		       const struct migr_gid_move *gids, char *why,
		       size_t why_len)
{
	double t0 = now_ms();
	struct migr_qp *mqp;
	struct migr_ah *mah;
	int ret;

	errno = 0;
	list_for_each (&ctx->rec.qps, mqp, entry) {
		ret = migr_connect_qp(mqp, gids, why, why_len);
		if (ret)
			return ret;
	}
	verbs_debug(&ctx->vctx, "connected the QPs in %.1f ms\n",
		    now_ms() - t0);
	list_for_each (&ctx->rec.ahs, mah, entry) {
		struct ibv_ah_attr attr;

		migr_rewrite_gid(gids, &mah->attr);
		attr = mah->attr;
		mah->lower = ibv_create_ah(lower_pd(mah->ah.pd), &attr);
		if (!mah->lower)
			FAIL("creating an address handle failed: %s",
			     strerror(errno));
		mah->ah.handle = mah->lower->handle;
		mah->local = migr_ah_local(ctx, &mah->attr);
		if (migr_ud_redir_rebuild(mah))
			FAIL("creating an address handle to a moved UD peer failed: %s",
			     strerror(errno));
	}
	return migr_mws_bind_type2(ctx, NULL, why, why_len);
}

/*
 * What the process holds of RDMA devices right now: open uverbs fds and
 * mappings of them. A switch checks it is nothing between release and
 * rebuild, and reports it.
 */
void migr_count_device_holds(int *fds, int *maps)
{
	char path[300], target[256], line[512];
	struct dirent *d;
	DIR *dir;
	FILE *f;

	*fds = *maps = 0;
	dir = opendir("/proc/self/fd");
	while (dir && (d = readdir(dir))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (!strncmp(target, "/dev/infiniband/", 16))
			(*fds)++;
	}
	if (dir)
		closedir(dir);
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/infiniband/") || strstr(line, "uverbs"))
			(*maps)++;
	if (f)
		fclose(f);
}
