// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Memory regions, memory windows and device memory */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath.h"
#include "migr.h"
#include "verbs.h"

/* Give the application virtual keys for the lower MR's keys */
static int set_mr_keys(struct migr_mr *mmr)
{
	struct migr_xlate *x = &to_mcontext(mmr->vmr.ibv_mr.context)->xlate;
	struct ibv_mr *mr = &mmr->vmr.ibv_mr;
	int ret;

	ret = migr_xlate_born(x, MIGR_XLATE_LKEY, mmr->lower->lkey, &mr->lkey);
	if (ret)
		return ret;
	ret = migr_xlate_born(x, MIGR_XLATE_RKEY, mmr->lower->rkey, &mr->rkey);
	if (ret)
		migr_xlate_gone(x, MIGR_XLATE_LKEY, mr->lkey);
	return ret;
}

static void forget_mr_keys(struct migr_mr *mmr)
{
	struct migr_xlate *x = &to_mcontext(mmr->vmr.ibv_mr.context)->xlate;

	migr_xlate_gone(x, MIGR_XLATE_LKEY, mmr->vmr.ibv_mr.lkey);
	migr_xlate_gone(x, MIGR_XLATE_RKEY, mmr->vmr.ibv_mr.rkey);
}

/*
 * Wrap a lower MR; on failure the lower MR is released with undo(). A MR a
 * switch can register again is recorded; others count as unsup.
 */
static struct ibv_mr *wrap_mr(struct ibv_pd *pd, struct ibv_mr *lower,
			      int (*undo)(struct ibv_mr *mr), int unsup)
{
	struct verbs_mr *lvmr;
	struct migr_mr *mmr;

	if (!lower)
		return NULL;
	mmr = calloc(1, sizeof(*mmr));
	if (!mmr) {
		undo(lower);
		return migr_fail(ENOMEM);
	}
	lvmr = verbs_get_mr(lower);
	mmr->lower = lower;
	mmr->vmr.mr_type = lvmr->mr_type;
	mmr->vmr.access = lvmr->access;
	mmr->vmr.ibv_mr.context = pd->context;
	mmr->vmr.ibv_mr.pd = pd;
	mmr->vmr.ibv_mr.addr = lower->addr;
	mmr->vmr.ibv_mr.length = lower->length;
	mmr->vmr.ibv_mr.handle = lower->handle;
	if (set_mr_keys(mmr)) {
		undo(lower);
		free(mmr);
		return migr_fail(ENOMEM);
	}
	mmr->rebuildable = unsup < 0;
	if (mmr->rebuildable)
		migr_record_add(to_mcontext(pd->context),
				&to_mcontext(pd->context)->rec.mrs,
				&mmr->entry);
	else
		migr_record_unsupported(to_mcontext(pd->context), unsup, 1);
	return &mmr->vmr.ibv_mr;
}

static void forget_mr(struct migr_mr *mmr, int unsup)
{
	struct migr_context *ctx = to_mcontext(mmr->vmr.ibv_mr.context);

	forget_mr_keys(mmr);
	if (mmr->rebuildable)
		migr_record_del(ctx, &mmr->entry);
	else
		migr_record_unsupported(ctx, unsup, -1);
}

static int unimport_mr_undo(struct ibv_mr *mr)
{
	ibv_unimport_mr(mr);
	return 0;
}

struct ibv_mr *migr_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access)
{
	struct ibv_mr *mr;

	ctl_enter(pd->context);
	mr = wrap_mr(pd,
		     ibv_reg_mr_iova2(lower_pd(pd), addr, length, hca_va,
				      access),
		     ibv_dereg_mr, -1);
	if (mr)
		to_mmr(mr)->iova = hca_va;
	ctl_leave(pd->context);
	return mr;
}

struct ibv_mr *migr_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				  size_t length, uint64_t iova, int fd,
				  int access)
{
	return wrap_mr(pd,
		       ibv_reg_dmabuf_mr(lower_pd(pd), offset, length, iova, fd,
					 access),
		       ibv_dereg_mr, MIGR_UNSUP_MR_KIND);
}

/* Registered again over the rebuilt DM, at the same offset */
struct ibv_mr *migr_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			      uint64_t dm_offset, size_t length,
			      unsigned int access)
{
	struct ibv_mr *mr;

	ctl_enter(pd->context);
	mr = wrap_mr(pd,
		     ibv_reg_dm_mr(lower_pd(pd), lower_dm(dm), dm_offset,
				   length, access),
		     ibv_dereg_mr, -1);
	if (mr) {
		to_mmr(mr)->dm = to_mdm(dm);
		to_mmr(mr)->iova = dm_offset;
	}
	ctl_leave(pd->context);
	return mr;
}

struct ibv_mr *migr_alloc_null_mr(struct ibv_pd *pd)
{
	return wrap_mr(pd, ibv_alloc_null_mr(lower_pd(pd)), ibv_dereg_mr,
		       MIGR_UNSUP_MR_KIND);
}

struct ibv_mr *migr_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return wrap_mr(pd, ibv_import_mr(lower_pd(pd), mr_handle),
		       unimport_mr_undo, MIGR_UNSUP_IMPORTED);
}

void migr_unimport_mr(struct ibv_mr *mr)
{
	struct migr_mr *mmr = to_mmr(mr);

	ibv_unimport_mr(mmr->lower);
	forget_mr(mmr, MIGR_UNSUP_IMPORTED);
	free(mmr);
}

int migr_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access)
{
	struct migr_mr *mmr = to_mmr(&vmr->ibv_mr);
	int ret;

	ret = ibv_rereg_mr(mmr->lower, flags,
			   (flags & IBV_REREG_MR_CHANGE_PD) ? lower_pd(pd) :
							      NULL,
			   addr, length, access);
	if (ret)
		return ret;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	/* libibverbs updates addr, length and pd of our MR once we return */
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		mmr->iova = (uintptr_t)addr;
	/* The lower may have issued new keys */
	forget_mr_keys(mmr);
	return set_mr_keys(mmr);
}

int migr_dereg_mr(struct verbs_mr *vmr)
{
	struct migr_mr *mmr = to_mmr(&vmr->ibv_mr);
	int ret;

	struct ibv_context *context = vmr->ibv_mr.context;

	ctl_enter(context);
	ret = ibv_dereg_mr(mmr->lower);
	if (!ret) {
		/* The device wrote its last: a pre-copy in progress sees it */
		migr_mr_mark_written(mmr);
		forget_mr(mmr, MIGR_UNSUP_MR_KIND);
		free(mmr);
	}
	ctl_leave(context);
	return ret;
}

int migr_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	struct migr_xlate *x = &to_mcontext(pd->context)->xlate;
	struct ibv_sge *sgl;
	uint32_t i;
	int ret;

	sgl = calloc(num_sges ? num_sges : 1, sizeof(*sgl));
	if (!sgl)
		return ENOMEM;
	for (i = 0; i < num_sges; i++) {
		sgl[i] = sg_list[i];
		sgl[i].lkey = migr_lkey_to_phys(x, sg_list[i].lkey);
	}
	ret = ibv_advise_mr(lower_pd(pd), advice, flags, sgl, num_sges);
	free(sgl);
	return ret;
}

struct ibv_mw *migr_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct migr_context *ctx = to_mcontext(pd->context);
	struct migr_mw *mmw;

	mmw = calloc(1, sizeof(*mmw));
	if (!mmw)
		return migr_fail(ENOMEM);
	ctl_enter(pd->context);
	mmw->lower = ibv_alloc_mw(lower_pd(pd), type);
	if (!mmw->lower)
		goto err;
	mmw->mw.context = pd->context;
	mmw->mw.pd = pd;
	mmw->mw.type = mmw->lower->type;
	mmw->mw.handle = mmw->lower->handle;
	if (migr_xlate_born(&ctx->xlate, MIGR_XLATE_RKEY, mmw->lower->rkey,
			    &mmw->mw.rkey)) {
		ibv_dealloc_mw(mmw->lower);
		errno = ENOMEM;
		goto err;
	}
	mmw->cur_rkey = mmw->mw.rkey;
	migr_record_add(ctx, &ctx->rec.mws, &mmw->entry);
	/* bound by WRs and invalidated by the other end too (mw_track.c) */
	if (mmw->mw.type == IBV_MW_TYPE_2)
		migr_mw2_added(ctx);
	ctl_leave(pd->context);
	return &mmw->mw;
err:
	ctl_leave(pd->context);
	free(mmw);
	return NULL;
}

int migr_dealloc_mw(struct ibv_mw *mw)
{
	struct migr_context *ctx = to_mcontext(mw->context);
	struct migr_mw *mmw = to_mmw(mw);
	int ret;

	ctl_enter(mw->context);
	ret = ibv_dealloc_mw(mmw->lower);
	if (!ret) {
		migr_xlate_gone(&ctx->xlate, MIGR_XLATE_RKEY, mw->rkey);
		pthread_mutex_lock(&ctx->rec.lock);
		list_del(&mmw->entry);
		if (mw->type == IBV_MW_TYPE_2)
			ctx->mw2--;
		pthread_mutex_unlock(&ctx->rec.lock);
	}
	ctl_leave(mw->context);
	if (!ret)
		free(mmw);
	return ret;
}

/*
 * A type 1 bind is posted on a send queue, so it waits out a suspension
 * of that QP (by a switch of this process or a partner's session) like a
 * control verb, instead of reaching a lower QP that is being replaced.
 */
int migr_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct migr_context *ctx = to_mcontext(qp->context);
	struct migr_qp *mqp = to_mqp(qp);
	struct migr_mw *mmw = to_mmw(mw);
	struct ibv_mw_bind lbind = *mw_bind;
	const struct ibv_mw_bind_info *b = &mw_bind->bind_info;
	int ret;

	for (;;) {
		ctl_enter(qp->context);
		migr_enter();
		if (!(mqp->slow & MIGR_SLOW_SUSPENDED))
			break;
		migr_leave();
		ctl_leave(qp->context);
		usleep(200);
	}
	/* Only now: a switch waited out above replaced the lower MR */
	lbind.bind_info.mr = lower_mr(b->mr);
	ret = ibv_bind_mw(mqp->lower, mmw->lower, &lbind);
	/* a WR of the send queue the send log does not hold */
	if (!ret)
		mqp->slog.broken = true;
	migr_leave();
	if (!ret) {
		/*
		 * A type 1 bind gives the window a new key byte: the same
		 * virtual index with it (partners translate it as they are)
		 */
		if (!migr_xlate_rekey(&ctx->xlate, MIGR_XLATE_RKEY, mw->rkey,
				      mmw->lower->rkey, &mw->rkey)) {
			migr_xlate_gone(&ctx->xlate, MIGR_XLATE_RKEY, mw->rkey);
			ret = migr_xlate_born(&ctx->xlate, MIGR_XLATE_RKEY,
					      mmw->lower->rkey, &mw->rkey);
		}
		pthread_mutex_lock(&ctx->rec.lock);
		mmw->mr = b->mr && b->length ? to_mmr(b->mr) : NULL;
		mmw->addr = b->addr;
		mmw->length = b->length;
		mmw->access = b->mw_access_flags;
		pthread_mutex_unlock(&ctx->rec.lock);
	}
	ctl_leave(qp->context);
	return ret;
}

/*
 * Up to max of the context's rkeys as "V:P" pairs, comma separated, from
 * the start-th on (MRs, then memory windows): what partners translate.
 * Returns how many were written; buf holds max * 18 + 1 bytes.
 */
unsigned int migr_rkey_pairs(struct migr_context *ctx, unsigned int start,
			     unsigned int max, char *buf)
{
	unsigned int i = 0, k = 0;
	struct migr_mr *mmr;
	struct migr_mw *mmw;
	size_t len = 0;

	buf[0] = 0;
	list_for_each (&ctx->rec.mrs, mmr, entry) {
		if (!mmr->lower || i++ < start || k == max)
			continue;
		len += sprintf(buf + len, "%s%x:%x", k++ ? "," : "",
			       mmr->vmr.ibv_mr.rkey, mmr->lower->rkey);
	}
	/*
	 * A window's pair comes from the table: the key the application
	 * keeps in a type 2 window may be older than the lower's last one
	 */
	list_for_each (&ctx->rec.mws, mmw, entry) {
		uint32_t p;

		if (!mmw->lower || i++ < start || k == max)
			continue;
		if (!migr_xlate_phys_of(&ctx->xlate, MIGR_XLATE_RKEY,
					mmw->mw.rkey, &p))
			p = mmw->lower->rkey;
		len += sprintf(buf + len, "%s%x:%x", k++ ? "," : "",
			       mmw->mw.rkey, p);
	}
	return k;
}

/*
 * A copy to or from device memory is a data-path call: it waits out a
 * switch that moves the DM (its contents travel meanwhile), inside the
 * thread's counter so the switch knows when none is under way
 */
static struct ibv_dm *dm_enter(struct migr_dm *mdm)
{
	for (;;) {
		migr_enter();
		if (!__atomic_load_n(&mdm->moving, __ATOMIC_ACQUIRE))
			return mdm->lower;
		migr_leave();
		usleep(200);
	}
}

static int migr_memcpy_to_dm(struct ibv_dm *dm, uint64_t dm_offset,
			     const void *host_addr, size_t length)
{
	struct ibv_dm *lower = dm_enter(to_mdm(dm));
	int ret;

	ret = lower->memcpy_to_dm(lower, dm_offset, host_addr, length);
	migr_leave();
	return ret;
}

static int migr_memcpy_from_dm(void *host_addr, struct ibv_dm *dm,
			       uint64_t dm_offset, size_t length)
{
	struct ibv_dm *lower = dm_enter(to_mdm(dm));
	int ret;

	ret = lower->memcpy_from_dm(host_addr, lower, dm_offset, length);
	migr_leave();
	return ret;
}

/*
 * Wrap a lower DM. One the application allocated is recorded (attr: how
 * to allocate it again); an imported one cannot move.
 */
static struct ibv_dm *wrap_dm(struct ibv_context *context, struct ibv_dm *lower,
			      void (*undo)(struct ibv_dm *dm),
			      const struct ibv_alloc_dm_attr *attr)
{
	struct migr_dm *mdm;

	if (!lower)
		return NULL;
	mdm = calloc(1, sizeof(*mdm));
	if (!mdm) {
		undo(lower);
		return migr_fail(ENOMEM);
	}
	mdm->lower = lower;
	mdm->vdm.dm.context = context;
	mdm->vdm.dm.comp_mask = lower->comp_mask;
	mdm->vdm.dm.handle = lower->handle;
	mdm->vdm.handle = lower->handle;
	mdm->vdm.dm.memcpy_to_dm = migr_memcpy_to_dm;
	mdm->vdm.dm.memcpy_from_dm = migr_memcpy_from_dm;
	if (attr) {
		mdm->attr = *attr;
		migr_record_add(to_mcontext(context),
				&to_mcontext(context)->rec.dms, &mdm->entry);
	} else {
		migr_record_unsupported(to_mcontext(context),
					MIGR_UNSUP_IMPORTED, 1);
	}
	return &mdm->vdm.dm;
}

static void free_dm_undo(struct ibv_dm *dm)
{
	ibv_free_dm(dm);
}

struct ibv_dm *migr_alloc_dm(struct ibv_context *context,
			     struct ibv_alloc_dm_attr *attr)
{
	struct ibv_dm *dm;

	ctl_enter(context);
	dm = wrap_dm(context, ibv_alloc_dm(to_mcontext(context)->lower, attr),
		     free_dm_undo, attr);
	ctl_leave(context);
	return dm;
}

struct ibv_dm *migr_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return wrap_dm(context,
		       ibv_import_dm(to_mcontext(context)->lower, dm_handle),
		       ibv_unimport_dm, NULL);
}

int migr_free_dm(struct ibv_dm *dm)
{
	struct migr_dm *mdm = to_mdm(dm);
	int ret;

	ctl_enter(dm->context);
	ret = ibv_free_dm(mdm->lower);
	if (!ret)
		migr_record_del(to_mcontext(dm->context), &mdm->entry);
	ctl_leave(dm->context);
	if (ret)
		return ret;
	free(mdm);
	return 0;
}

void migr_unimport_dm(struct ibv_dm *dm)
{
	struct migr_dm *mdm = to_mdm(dm);

	ibv_unimport_dm(mdm->lower);
	migr_record_unsupported(to_mcontext(dm->context), MIGR_UNSUP_IMPORTED,
				-1);
	free(mdm);
}
