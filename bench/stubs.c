// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The benchmark builds the provider's data-path sources without the
 * control socket (control.c and the switch behind it). qp.c asks it for a
 * partner context at connect time; the benchmark connects no QP that way.
 */
#include "migr.h"

struct migr_context *migr_local_peer(struct migr_context *ctx, uint32_t vqpn)
{
	return NULL;
}
