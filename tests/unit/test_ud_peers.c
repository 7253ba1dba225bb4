// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unit tests for a UD peer's side of a move (providers-migr/datapath/ud_redirect.c
 * and migr_ud_dest()), over the fake lower device (tests/fake), whose AHs
 * remember the GID they name: where a WR goes after the peer elsewhere moved once, twice
 * and back, AHs made later, the numbers completions show, and this
 * process's own switch.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_lower.h"
#include "ud_redirect.h"
#include "unit.h"

static struct fake_dev fdev; /* the lower device */
static struct ibv_pd lower_pd_obj = { .context = &fdev.vctx.context };
static struct migr_pd mpd = { .lower = &lower_pd_obj };
static struct migr_context ctx;

static union ibv_gid gid(uint8_t host)
{
	union ibv_gid g = {
		.raw = { [10] = 0xff, [11] = 0xff, 10, 9, 0, host }
	};

	return g;
}

static struct migr_ah *new_ah(union ibv_gid dgid)
{
	struct migr_ah *mah = calloc(1, sizeof(*mah));

	mah->ah.context = &ctx.vctx.context;
	mah->ah.pd = &mpd.pd;
	mah->attr.is_global = 1;
	mah->attr.port_num = 1;
	mah->attr.grh.dgid = dgid;
	mah->lower = fake_create_ah(&lower_pd_obj, &mah->attr);
	list_add_tail(&ctx.rec.ahs, &mah->entry);
	return mah;
}

/* Where a WR to qpn through mah goes: the GID's last byte and the QPN */
static bool goes(struct migr_ah *mah, uint32_t qpn, uint8_t host, uint32_t to)
{
	struct ibv_ah *lah = migr_ud_dest(&ctx.remote, &mah->ah, &qpn);
	struct fake_ah *f = container_of(lah, struct fake_ah, ah);

	return lah && f->dgid.raw[15] == host && qpn == to;
}

/* The peer known as known was from on from_host, is to on to_host */
static bool moved(uint8_t from_host, uint32_t from, uint8_t to_host,
		  uint32_t to, uint32_t known, unsigned int *changed)
{
	union ibv_gid f = gid(from_host), t = gid(to_host);
	char why[128];

	*changed = 0;
	return !migr_ud_redirect(&ctx, &f, from, &t, to, known, changed, why,
				 sizeof(why));
}

int main(void)
{
	struct migr_ah *a, *b, *c, *mc;
	union ibv_gid group = { .raw = { 0xff, 0x0e } };
	unsigned int n;

	if (fake_dev_init(&fdev, 0))
		return unit_done("ud_peers");
	migr_record_init(&ctx.rec);
	migr_xlate_init(&ctx.remote);
	ctx.lower = &fdev.vctx.context;
	mpd.pd.context = &ctx.vctx.context;

	/* Two AHs to host 1, where the peer's QP 0x11 is; one to host 3 */
	a = new_ah(gid(1));
	b = new_ah(gid(1));
	c = new_ah(gid(3));
	mc = new_ah(group);
	CHECK(goes(a, 0x11, 1, 0x11) && !a->redir);

	/* It moves to host 2, QP 0x21: both AHs to host 1 lead there */
	CHECK(moved(1, 0x11, 2, 0x21, 0x11, &n) && n == 2);
	CHECK(goes(a, 0x11, 2, 0x21) && goes(b, 0x11, 2, 0x21));
	/* other QPs of host 1, and other hosts, are left alone */
	CHECK(goes(a, 0x12, 1, 0x12) && goes(c, 0x11, 3, 0x11) && !c->redir);
	CHECK(!mc->redir);
	/* its datagrams show the number the application knows */
	CHECK(migr_remote_qpn_to_virt(&ctx.remote, 0x21) == 0x11);

	/* Told again: nothing changes */
	CHECK(moved(1, 0x11, 2, 0x21, 0x11, &n) && n == 0);

	/* It moves on, back to host 1 as QP 0x31: found by where it is now */
	CHECK(moved(2, 0x21, 1, 0x31, 0x11, &n) && n == 2);
	CHECK(goes(a, 0x11, 1, 0x31) && goes(b, 0x11, 1, 0x31));
	CHECK(migr_remote_qpn_to_virt(&ctx.remote, 0x31) == 0x11);
	CHECK(migr_remote_qpn_to_virt(&ctx.remote, 0x21) == 0x21);

	/* An AH made now to a GID it was at (from a datagram's GRH) leads
	 * to it too, under the number the application knows */
	{
		struct migr_ah *d = new_ah(gid(2));

		CHECK(!migr_ud_redir_new_ah(&ctx, d));
		CHECK(goes(d, 0x11, 1, 0x31) && goes(d, 0x21, 2, 0x21));
	}

	/* A new number of a peer that is one of this process's own QPs (its
	 * switches published it): completions keep showing our own */
	CHECK(!migr_xlate_set(&ctx.remote, MIGR_XLATE_QPN, 0x41, 0x5));
	CHECK(moved(3, 0x17, 4, 0x41, 0x17, &n) && n == 1);
	CHECK(goes(c, 0x17, 4, 0x41));
	CHECK(migr_remote_qpn_to_virt(&ctx.remote, 0x41) == 0x5);

	/*
	 * A rollback tells where the peer is again from both places it may
	 * be known at: the target (if told) and where it was (if not)
	 */
	CHECK(moved(3, 0x18, 5, 0x51, 0x18, &n) && n == 1); /* told */
	CHECK(moved(5, 0x51, 3, 0x61, 0x18, &n) && n == 1); /* rolled back */
	CHECK(moved(3, 0x18, 3, 0x61, 0x18, &n) && n == 0);
	CHECK(goes(c, 0x18, 3, 0x61));
	CHECK(migr_remote_qpn_to_virt(&ctx.remote, 0x61) == 0x18);
	/* ... and the same when the first word never came (the AH to host
	 * 3, where it is, leads to it at once; the second word adds nothing) */
	CHECK(moved(5, 0x52, 3, 0x62, 0x19, &n) && n == 1);
	CHECK(moved(3, 0x19, 3, 0x62, 0x19, &n) && n == 0);
	CHECK(goes(c, 0x19, 3, 0x62));
	CHECK(migr_remote_qpn_to_virt(&ctx.remote, 0x62) == 0x19);

	/* This process's own switch: the lower AHs go, and come back */
	n = fdev.ah_destroys;
	migr_ud_redir_release(a);
	CHECK(fdev.ah_destroys == n + a->redir->nahs &&
	      !a->redir->ahs[0].lower);
	n = fdev.ah_creates;
	CHECK(!migr_ud_redir_rebuild(a));
	CHECK(fdev.ah_creates == n + a->redir->nahs && goes(a, 0x11, 1, 0x31));

	/* Destroyed with its AH */
	n = fdev.ah_destroys;
	migr_ud_redir_free(b);
	CHECK(!b->redir && fdev.ah_destroys == n + 2);
	return unit_done("ud_peers");
}
