// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for device memory in a switch (providers-migr/dm_switch.c and
 * the DM wrappers of mr.c), over fake lower devices: rxe has no device
 * memory, so this is where its contents are seen to travel.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "switch_objects.h"
#include "unit.h"
#include "verbs.h"

#define DM_LEN 256

/* A fake lower device: its DMs are host buffers */
struct fake_dev {
	struct verbs_context vctx;
	uint64_t max_dm_size;
	int allocs, frees;
};

struct fake_dm {
	struct ibv_dm dm;
	uint8_t mem[DM_LEN];
};

static struct fake_dev *dev_of(struct ibv_context *context)
{
	return container_of(context, struct fake_dev, vctx.context);
}

static int fake_to_dm(struct ibv_dm *dm, uint64_t off, const void *src,
		      size_t len)
{
	memcpy(((struct fake_dm *)dm)->mem + off, src, len);
	return 0;
}

static int fake_from_dm(void *dst, struct ibv_dm *dm, uint64_t off,
			size_t len)
{
	memcpy(dst, ((struct fake_dm *)dm)->mem + off, len);
	return 0;
}

static struct ibv_dm *fake_alloc_dm(struct ibv_context *context,
				    struct ibv_alloc_dm_attr *attr)
{
	struct fake_dev *d = dev_of(context);
	struct fake_dm *f = calloc(1, sizeof(*f));

	if (!f || attr->length > DM_LEN) {
		free(f);
		return NULL;
	}
	f->dm.context = context;
	f->dm.memcpy_to_dm = fake_to_dm;
	f->dm.memcpy_from_dm = fake_from_dm;
	/* new memory is not the old: its contents must be copied in */
	memset(f->mem, 0xee, sizeof(f->mem));
	d->allocs++;
	return &f->dm;
}

static int fake_free_dm(struct ibv_dm *dm)
{
	dev_of(dm->context)->frees++;
	free(dm);
	return 0;
}

static int fake_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	memset(attr, 0, sizeof(*attr));
	attr->max_dm_size = dev_of(context)->max_dm_size;
	return 0;
}

static struct ibv_device fake_ibdev = { .name = "fake0" };

static void fake_init(struct fake_dev *d, uint64_t max_dm_size)
{
	memset(d, 0, sizeof(*d));
	d->vctx.sz = sizeof(d->vctx);
	d->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	d->vctx.context.device = &fake_ibdev;
	d->vctx.alloc_dm = fake_alloc_dm;
	d->vctx.free_dm = fake_free_dm;
	d->vctx.query_device_ex = fake_query_device_ex;
	d->max_dm_size = max_dm_size;
}

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
	fake_init(&from, 1 << 20);
	fake_init(&to, 1 << 20);
	fake_init(&small, 32);
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
	CHECK(migr_dms_precheck(&ctx, &small.vctx.context, why,
				sizeof(why)) == EOPNOTSUPP);
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
