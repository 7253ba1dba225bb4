// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migr_json.h"
#include "sbuf.h"

static bool reserve(struct sbuf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void sb_add(struct sbuf *b, const char *s, size_t len)
{
	if (!reserve(b, len))
		return;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = 0;
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

static int sb_emit(const char *s, size_t len, void *data)
{
	struct sbuf *b = data;

	sb_add(b, s, len);
	return b->oom ? -1 : 0;
}

void sb_json_str(struct sbuf *b, const char *s)
{
	/* escaped as the library escapes: by jansson (migr_json.h) */
	migr_json_quote(s, sb_emit, b);
}

void sb_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
