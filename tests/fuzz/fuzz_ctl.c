// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The lines of a migr process's control socket (ctl_parse() in
 * common/ctl_line.c, what the library reads from any local client of its
 * own user): any bytes, over-long lines too. What parses keeps its
 * bounds and formats back (ctl_format(), what migrd, the plugin and the
 * tests write) into a line that parses to the same request.
 */
#include <string.h>

#include "ctl_line.h"
#include "fuzz.h"

#define IN_MAX (CTL_LINE_MAX + 8)

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_bounds(const struct ctl_req *q)
{
	FUZZ_ASSERT(q->op < CTL_OPS);
	FUZZ_ASSERT(q->wait_ms >= 1 && q->wait_ms <= CTL_WAIT_MAX_MS);
	FUZZ_ASSERT(q->lease_ms <= CTL_LEASE_MAX_MS);
	if (q->dev)
		FUZZ_ASSERT(strlen(q->dev) >= 1 &&
			    strlen(q->dev) <= CTL_DEV_MAX &&
			    !strchr(q->dev, ' '));
	if (q->line)
		FUZZ_ASSERT(!strchr(q->line, '\n'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[IN_MAX + 1], out[CTL_LINE_MAX + 2], err[128];
	size_t n = size < IN_MAX ? size : IN_MAX;
	struct ctl_req q, r;
	int len;

	memcpy(buf, data, n);
	buf[n] = 0;
	if (ctl_parse(buf, n, &q, err, sizeof(err))) {
		FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
		return 0;
	}
	FUZZ_ASSERT(n <= CTL_LINE_MAX);
	check_bounds(&q);
	len = ctl_format(&q, out, sizeof(out));
	FUZZ_ASSERT(len > 0 && out[len - 1] == '\n');
	FUZZ_ASSERT(!ctl_parse(out, len, &r, err, sizeof(err)));
	FUZZ_ASSERT(r.op == q.op && r.nargs == q.nargs &&
		    r.wait_ms == q.wait_ms && r.lease_ms == q.lease_ms &&
		    r.token == q.token && same_str(r.dev, q.dev) &&
		    same_str(r.line, q.line));
	return 0;
}

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"status\n",
		"switch rxe1 5000\n",
		"rebuild 100\n",
		"park 5000 600000\n",
		"resume rxe1 0123456789abcdef\n",
		"fence 150000\n",
		"commit\n",
		"partner resume 20010db8000000000000000000000001 17\n",
		"ud probe\n",
	};
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		add(s[i], strlen(s[i]));
}
