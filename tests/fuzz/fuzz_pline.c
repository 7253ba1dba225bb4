// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner lines migrd reads before relaying them (pline_parse() and
 * pline_reconnect() in partner_line.c, the library's parser too), for a request with a fixed GID. Any
 * bytes, not only those req.c lets through: the reader must hold anyway.
 */
#include <string.h>

#include "fuzz.h"
#include "pauth.h"

#define GID "20010db8000000000000000000000001"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[REQ_PARTNER_LINE_MAX + 1], err[128], gid[REQ_GID_LEN + 1];
	size_t n = size < REQ_PARTNER_LINE_MAX ? size : REQ_PARTNER_LINE_MAX;
	struct pline pl;
	uint32_t qpn;
	int i;

	memcpy(line, data, n);
	line[n] = 0;
	n = strlen(line);
	if (!pline_reconnect(line, &qpn, gid))
		FUZZ_ASSERT(qpn && qpn <= 0xffffff &&
			    strlen(gid) == REQ_GID_LEN);
	if (pline_parse(line, GID, &pl, err, sizeof(err))) {
		FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
		return 0;
	}
	FUZZ_ASSERT(pl.nqp >= 1 && pl.nqp <= PLINE_QPS_MAX);
	for (i = 0; i < pl.nqp; i++) {
		FUZZ_ASSERT(pl.qpn[i] <= 0xffffff);
		FUZZ_ASSERT(pl.at[i] > line && pl.at[i] < line + n);
		if (!pline_reconnect(pl.at[i], &qpn, gid))
			FUZZ_ASSERT(qpn && strspn(gid, "0123456789abcdef") ==
						   REQ_GID_LEN);
	}
	return 0;
}

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"suspend " GID " 17 5000 . 18 5000 . 16777215 5000",
		"reconnect " GID " 17 33 20010db8000000000000000000000002 12",
		"keys " GID " 1a:2b,3c:4d . 17 . 18",
	};
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		add(s[i], strlen(s[i]));
}
