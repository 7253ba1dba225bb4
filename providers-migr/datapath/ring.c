// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The rings of posted RECVs (rlog.c) and send WRs (slog.c): one kind */
#include <errno.h>
#include <stdlib.h>

#include "migr.h"

int migr_ring_init(struct migr_ring *r, uint32_t n, size_t entry)
{
	uint32_t slots = 1;

	r->buf = NULL;
	r->mask = r->shift = 0;
	if (!n)
		return 0;
	while (slots < n)
		slots <<= 1;
	while ((1ul << r->shift) < entry)
		r->shift++;
	r->mask = slots - 1;
	r->buf = calloc(slots, 1ul << r->shift);
	return r->buf ? 0 : ENOMEM;
}

void migr_ring_free(struct migr_ring *r)
{
	free(r->buf);
	r->buf = NULL;
}
