// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Address handles */
#include <errno.h>
#include <stdlib.h>

#include "ud_redirect.h"
#include "verbs.h"

struct ibv_ah *migr_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct migr_ah *mah;

	mah = calloc(1, sizeof(*mah));
	if (!mah)
		return migr_fail(ENOMEM);
	ctl_enter(pd->context);
	mah->lower = ibv_create_ah(lower_pd(pd), attr);
	if (!mah->lower) {
		ctl_leave(pd->context);
		free(mah);
		return NULL;
	}
	mah->ah.context = pd->context;
	mah->ah.pd = pd;
	mah->ah.handle = mah->lower->handle;
	mah->attr = *attr;
	mah->local = migr_ah_local(to_mcontext(pd->context), attr);
	/* best effort: without it, datagrams go where the AH says */
	if (migr_ud_redir_new_ah(to_mcontext(pd->context), mah))
		verbs_debug(
			&to_mcontext(pd->context)->vctx,
			"an address handle does not follow moved UD peers: out of memory\n");
	migr_record_add(to_mcontext(pd->context),
			&to_mcontext(pd->context)->rec.ahs, &mah->entry);
	ctl_leave(pd->context);
	return &mah->ah;
}

int migr_destroy_ah(struct ibv_ah *ah)
{
	struct migr_ah *mah = to_mah(ah);
	int ret;

	ctl_enter(ah->context);
	ret = ibv_destroy_ah(mah->lower);
	if (!ret) {
		migr_record_del(to_mcontext(ah->context), &mah->entry);
		migr_ud_redir_free(mah);
	}
	ctl_leave(ah->context);
	if (ret)
		return ret;
	free(mah);
	return 0;
}
