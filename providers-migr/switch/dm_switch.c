// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory (ibv_alloc_dm()) in a live switch. Its contents live on
 * the device, so they travel through host memory: once the queues drained
 * (nothing of a partner's lands there any more) the application's copies
 * to and from it are held (mr.c waits while a DM is moving) and the
 * contents are copied out; the rebuild allocates the same size on the
 * target and copies them in, before the MRs over it are registered again
 * at their offsets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switch.h"
#include "switch_objects.h"

/* The target offers the device memory the process holds, or why not */
int migr_dms_precheck(struct migr_context *ctx, struct ibv_context *target,
		      char *why, size_t why_len)
{
	struct ibv_device_attr_ex attr;
	struct migr_dm *mdm;
	uint64_t need = 0;

	list_for_each (&ctx->rec.dms, mdm, entry)
		need += mdm->attr.length;
	if (!need)
		return 0;
	if (ibv_query_device_ex(target, NULL, &attr))
		memset(&attr, 0, sizeof(attr));
	if (attr.max_dm_size >= need)
		return 0;
	snprintf(why, why_len,
		 "the process holds %" PRIu64
		 " bytes of device memory; %s offers %" PRIu64,
		 need, ibv_get_device_name(target->device), attr.max_dm_size);
	return EOPNOTSUPP;
}

/*
 * Copies to and from each DM wait from here on; once no thread is inside
 * one, the contents are kept. After the drain, before the release.
 */
int migr_dms_save(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_dm *mdm;
	int ret;

	if (list_empty(&ctx->rec.dms))
		return 0;
	list_for_each (&ctx->rec.dms, mdm, entry)
		__atomic_store_n(&mdm->moving, true, __ATOMIC_RELEASE);
	if (migr_quiesce(QUIESCE_MS)) {
		snprintf(
			why, why_len,
			"a thread stayed inside a copy to or from device memory");
		return EBUSY;
	}
	list_for_each (&ctx->rec.dms, mdm, entry) {
		mdm->saved = malloc(mdm->attr.length ? mdm->attr.length : 1);
		if (!mdm->saved) {
			snprintf(why, why_len, "out of memory");
			return ENOMEM;
		}
		ret = mdm->lower->memcpy_from_dm(mdm->saved, mdm->lower, 0,
						 mdm->attr.length);
		if (ret) {
			snprintf(why, why_len,
				 "copying device memory out failed: %s",
				 strerror(ret));
			return ret;
		}
	}
	return 0;
}

/* After the MRs over them were deregistered */
void migr_dms_release(struct migr_context *ctx)
{
	struct migr_dm *mdm;

	list_for_each (&ctx->rec.dms, mdm, entry) {
		if (mdm->lower)
			ibv_free_dm(mdm->lower);
		mdm->lower = NULL;
	}
}

/* The same sizes on the new device, the contents copied in; before MRs */
int migr_dms_rebuild(struct migr_context *ctx, char *why, size_t why_len)
{
	struct migr_dm *mdm;
	int ret;

	list_for_each (&ctx->rec.dms, mdm, entry) {
		struct ibv_alloc_dm_attr attr = mdm->attr;

		mdm->lower = ibv_alloc_dm(ctx->lower, &attr);
		if (!mdm->lower) {
			ret = errno ? errno : ENOMEM;
			snprintf(why, why_len,
				 "allocating %" PRIu64
				 " bytes of device memory failed: %s",
				 (uint64_t)mdm->attr.length, strerror(ret));
			return ret;
		}
		mdm->vdm.handle = mdm->vdm.dm.handle = mdm->lower->handle;
		ret = mdm->lower->memcpy_to_dm(mdm->lower, 0, mdm->saved,
					       mdm->attr.length);
		if (ret) {
			snprintf(why, why_len,
				 "copying device memory in failed: %s",
				 strerror(ret));
			return ret;
		}
	}
	return 0;
}

/* The switch is over, moved or not: copies go on, on whichever DM holds */
void migr_dms_resume(struct migr_context *ctx)
{
	struct migr_dm *mdm;

	list_for_each (&ctx->rec.dms, mdm, entry) {
		free(mdm->saved);
		mdm->saved = NULL;
		__atomic_store_n(&mdm->moving, false, __ATOMIC_RELEASE);
	}
}
