// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migrd's request lines (req.c): everything a local client or a peer
 * daemon sends. What parses must format back into a line that parses to
 * the same request.
 */
#include <string.h>

#include "fuzz.h"
#include "req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128], line[REQ_MAX + 1];
	struct req r, r2;
	int n;

	if (req_parse((const char *)data, size, &r, err, sizeof(err))) {
		FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
		return 0;
	}
	n = req_format(&r, line, sizeof(line));
	FUZZ_ASSERT(n > 0 && n <= REQ_MAX && line[n - 1] == '\n');
	FUZZ_ASSERT(!req_parse(line, n, &r2, err, sizeof(err)));
	FUZZ_ASSERT(!memcmp(&r, &r2, sizeof(r)));
	return 0;
}

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"migrd/1 status\n",
		"migrd/1 switch 42 migr_rxe1 5000\n",
		"migrd/1 udpeers - probe\n",
	};
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		add(s[i], strlen(s[i]));
}
