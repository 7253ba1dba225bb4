// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Peer frames inside TLS (wire.h) */
#include <stdio.h>

#include "wire.h"

void wire_put_len(uint8_t *hdr, uint32_t len)
{
	hdr[0] = len >> 24;
	hdr[1] = len >> 16;
	hdr[2] = len >> 8;
	hdr[3] = len;
}

long wire_peek_len(const uint8_t *hdr, size_t max, char *err, size_t errlen)
{
	uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
		       (uint32_t)hdr[2] << 8 | hdr[3];

	if (len > max) {
		snprintf(err, errlen, "frame of %u bytes exceeds %zu", len,
			 max);
		return -1;
	}
	return len;
}
