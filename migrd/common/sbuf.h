/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* A growing string for building replies; a failed allocation sticks */
#ifndef MIGRD_SBUF_H
#define MIGRD_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sb_add(struct sbuf *b, const char *s, size_t len);
/* Append s as a JSON string, quotes included */
void sb_json_str(struct sbuf *b, const char *s);
void sb_free(struct sbuf *b);

#endif
