// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Protection domains, thread domains, parent domains and XRC domains */
#include <errno.h>
#include <stdlib.h>

#include "marker.h"
#include "migr.h"
#include "verbs.h"

/* unsup: -1 records a plain PD, else what kind of PD a switch cannot redo */
static struct ibv_pd *wrap_pd(struct ibv_context *context, struct ibv_pd *lower,
			      int unsup)
{
	struct migr_pd *mpd;

	if (!lower)
		return NULL;
	mpd = calloc(1, sizeof(*mpd));
	if (!mpd) {
		ibv_dealloc_pd(lower);
		return migr_fail(ENOMEM);
	}
	mpd->lower = lower;
	mpd->pd.context = context;
	mpd->pd.handle = lower->handle;
	mpd->unsup = unsup;
	if (unsup < 0)
		migr_record_add(to_mcontext(context),
				&to_mcontext(context)->rec.pds, &mpd->entry);
	else
		migr_record_unsupported(to_mcontext(context), unsup, 1);
	return &mpd->pd;
}

static void forget_pd(struct migr_pd *mpd)
{
	struct migr_context *ctx = to_mcontext(mpd->pd.context);

	if (mpd->unsup < 0)
		migr_record_del(ctx, &mpd->entry);
	else
		migr_record_unsupported(ctx, mpd->unsup, -1);
}

struct ibv_pd *migr_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd;

	ctl_enter(context);
	pd = wrap_pd(context, ibv_alloc_pd(to_mcontext(context)->lower), -1);
	ctl_leave(context);
	return pd;
}

int migr_dealloc_pd(struct ibv_pd *pd)
{
	struct migr_pd *mpd = to_mpd(pd);
	struct ibv_context *context = pd->context;
	int ret;

	ctl_enter(context);
	migr_marker_mr_drop(mpd);
	ret = ibv_dealloc_pd(mpd->lower);
	if (!ret) {
		forget_pd(mpd);
		free(mpd);
	}
	ctl_leave(context);
	return ret;
}

struct ibv_pd *
migr_alloc_parent_domain(struct ibv_context *context,
			 struct ibv_parent_domain_init_attr *attr)
{
	struct ibv_parent_domain_init_attr lattr = *attr;

	lattr.pd = lower_pd(attr->pd);
	lattr.td = attr->td ? to_mtd(attr->td)->lower : NULL;
	return wrap_pd(context,
		       ibv_alloc_parent_domain(to_mcontext(context)->lower,
					       &lattr),
		       MIGR_UNSUP_PARENT_DOMAIN);
}

struct ibv_pd *migr_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	return wrap_pd(context,
		       ibv_import_pd(to_mcontext(context)->lower, pd_handle),
		       MIGR_UNSUP_IMPORTED);
}

void migr_unimport_pd(struct ibv_pd *pd)
{
	struct migr_pd *mpd = to_mpd(pd);

	ibv_unimport_pd(mpd->lower);
	forget_pd(mpd);
	free(mpd);
}

struct ibv_td *migr_alloc_td(struct ibv_context *context,
			     struct ibv_td_init_attr *init_attr)
{
	struct migr_td *mtd;

	mtd = calloc(1, sizeof(*mtd));
	if (!mtd)
		return migr_fail(ENOMEM);
	mtd->lower = ibv_alloc_td(to_mcontext(context)->lower, init_attr);
	if (!mtd->lower) {
		free(mtd);
		return NULL;
	}
	mtd->td.context = context;
	migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_TD, 1);
	return &mtd->td;
}

int migr_dealloc_td(struct ibv_td *td)
{
	struct migr_td *mtd = to_mtd(td);
	int ret;

	ret = ibv_dealloc_td(mtd->lower);
	if (ret)
		return ret;
	migr_record_unsupported(to_mcontext(td->context), MIGR_UNSUP_TD, -1);
	free(mtd);
	return 0;
}

struct ibv_xrcd *migr_open_xrcd(struct ibv_context *context,
				struct ibv_xrcd_init_attr *attr)
{
	struct migr_xrcd *mxrcd;

	mxrcd = calloc(1, sizeof(*mxrcd));
	if (!mxrcd)
		return migr_fail(ENOMEM);
	mxrcd->lower = ibv_open_xrcd(to_mcontext(context)->lower, attr);
	if (!mxrcd->lower) {
		free(mxrcd);
		return NULL;
	}
	mxrcd->vxrcd.xrcd.context = context;
	mxrcd->vxrcd.comp_mask =
		container_of(mxrcd->lower, struct verbs_xrcd, xrcd)->comp_mask;
	mxrcd->vxrcd.handle =
		container_of(mxrcd->lower, struct verbs_xrcd, xrcd)->handle;
	migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_XRCD, 1);
	return &mxrcd->vxrcd.xrcd;
}

int migr_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct migr_xrcd *mxrcd = to_mxrcd(xrcd);
	int ret;

	ret = ibv_close_xrcd(mxrcd->lower);
	if (ret)
		return ret;
	migr_record_unsupported(to_mcontext(xrcd->context), MIGR_UNSUP_XRCD,
				-1);
	free(mxrcd);
	return 0;
}
