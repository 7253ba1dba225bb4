// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What migr must know of particular lower providers, kept in one place:
 * everything else goes through the public verbs alone.
 */
#include <string.h>

#include "migr.h"
#include "verbs.h"

/*
 * rxe writes user completions with the kernel's flag values, and the
 * kernel's IB_WC_WITH_INVALIDATE is the bit user space calls
 * IBV_WC_IP_CSUM_OK (rxe sets nothing else there in a user CQ): on rxe a
 * remote invalidation shows as that bit.
 */
static unsigned int inv_flags(const char *driver)
{
	if (driver && !strcmp(driver, "rxe"))
		return IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK;
	return IBV_WC_WITH_INV;
}

/* ctx->lower was opened: what its provider says differently */
void migr_quirks_init(struct migr_context *ctx)
{
	const struct verbs_device *vdev = verbs_get_device(ctx->lower->device);
	const char *driver = vdev->ops ? vdev->ops->name : NULL;

	ctx->wc_inv = inv_flags(driver);
	migr_numbers_probe(ctx, driver);
}
