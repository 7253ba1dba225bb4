// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Address handles */
#include <errno.h>
#include <stdlib.h>

#include "migr.h"

struct ibv_ah *migr_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct migr_ah *mah;

	mah = calloc(1, sizeof(*mah));
	if (!mah)
		return migr_fail(ENOMEM);
	mah->lower = ibv_create_ah(lower_pd(pd), attr);
	if (!mah->lower) {
		free(mah);
		return NULL;
	}
	mah->ah.context = pd->context;
	mah->ah.pd = pd;
	mah->ah.handle = mah->lower->handle;
	return &mah->ah;
}

int migr_destroy_ah(struct ibv_ah *ah)
{
	struct migr_ah *mah = to_mah(ah);
	int ret;

	ret = ibv_destroy_ah(mah->lower);
	if (ret)
		return ret;
	free(mah);
	return 0;
}
