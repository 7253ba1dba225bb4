// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The benchmark builds the provider's data-path sources without the
 * control socket (control.c and the switch behind it) and without the
 * partner protocol. qp.c asks them for a partner at connect time; the
 * benchmark connects no QP that way.
 */
#include <errno.h>

#include "partner.h"
#include "agent.h"

struct migr_context *migr_local_peer(struct migr_context *ctx, uint32_t vqpn)
{
	return NULL;
}

struct migr_xlate *migr_partner_fetch(struct migr_qp *mqp,
				      const struct ibv_qp_attr *attr,
				      uint32_t our_phys, union ibv_gid *gid,
				      char *err, size_t errlen)
{
	errno = 0;
	return NULL;
}

int migr_partner_give(struct migr_qp *mqp, uint32_t dest_qpn,
		      const union ibv_gid *dgid, uint32_t our_phys,
		      uint32_t partner_phys, char *err, size_t errlen)
{
	return 0;
}
