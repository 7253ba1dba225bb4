// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for device memory in a switch (providers-migr/switch/dm_switch.c
 * and the DM wrappers of verbs/mr.c), over fake lower devices (tests/fake):
 * rxe has no device memory, so this is where its contents are seen to travel.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_lower.h"
#include "switch_objects.h"
#include "unit.h"
#include "verbs.h"

static struct migr_context ctx;
static struct fake_dev from, to, small;
static struct ibv_dm *dm;

/* A copy the application makes while a switch moves the DM */
static volatile bool copied;

static void *late_copy(void *arg)
{
	uint8_t b = 0x5a;

	CHECK(!dm->memcpy_to_dm(dm, 7, &b, 1));
	copied = true;
	return NULL;
}

int main(void)
{
	struct ibv_alloc_dm_attr attr = { .length = 64 };
	uint8_t in[64], out[64];
	char why[256] = "";
	pthread_t th;
	unsigned int i;

	migr_record_init(&ctx.rec);
	if (fake_dev_init(&from, 1 << 20) || fake_dev_init(&to, 1 << 20) ||
	    fake_dev_init(&small, 32))
		return unit_done("dm");
	ctx.lower = &from.vctx.context;
	ctx.vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;

	/* allocated through migr and filled through its wrapper */
	dm = migr_alloc_dm(&ctx.vctx.context, &attr);
	CHECK(dm && from.allocs == 1);
	if (!dm)
		return unit_done("dm");
	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + 3);
	CHECK(!dm->memcpy_to_dm(dm, 0, in, sizeof(in)));

	/* a target with less device memory is refused, naming the sizes */
	CHECK(migr_dms_precheck(&ctx, &small.vctx.context, why, sizeof(why)) ==
	      EOPNOTSUPP);
	CHECK(strstr(why, "64 bytes of device memory") &&
	      strstr(why, "offers 32"));
	CHECK(!migr_dms_precheck(&ctx, &to.vctx.context, why, sizeof(why)));

	/* saved: the contents are kept, and copies wait */
	CHECK(!migr_dms_save(&ctx, why, sizeof(why)));
	CHECK(!memcmp(to_mdm(dm)->saved, in, sizeof(in)));
	pthread_create(&th, NULL, late_copy, NULL);
	usleep(50000);
	CHECK(!copied);

	/* released, rebuilt on the other device: the same contents there */
	migr_dms_release(&ctx);
	CHECK(from.frees == 1 && !to_mdm(dm)->lower);
	ctx.lower = &to.vctx.context;
	CHECK(!migr_dms_rebuild(&ctx, why, sizeof(why)));
	CHECK(to.allocs == 1 && to_mdm(dm)->lower &&
	      to_mdm(dm)->lower->context == &to.vctx.context);
	CHECK(!memcmp(((struct fake_dm *)to_mdm(dm)->lower)->mem, in,
		      sizeof(in)));
	CHECK(!copied);

	/* resumed: the waiting copy lands in the new device's memory */
	migr_dms_resume(&ctx);
	pthread_join(th, NULL);
	CHECK(copied && !to_mdm(dm)->saved);
	CHECK(!dm->memcpy_from_dm(out, dm, 0, sizeof(out)));
	in[7] = 0x5a;
	CHECK(!memcmp(out, in, sizeof(out)));

	CHECK(!migr_free_dm(dm) && to.frees == 1 && list_empty(&ctx.rec.dms));
	return unit_done("dm");
}
