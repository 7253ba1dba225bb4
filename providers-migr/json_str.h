/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Text that goes into a JSON reply (an error, a device name) is written as
 * one JSON string, every quote, backslash, control and non-ASCII byte
 * escaped: a reason must never add keys to the line it is in (migrd reads
 * "ok" from these lines).
 */
#ifndef MIGR_JSON_STR_H
#define MIGR_JSON_STR_H

#include <stdio.h>
#include <string.h>

static inline void migr_json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p > 0x7e)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/*
 * The same into buf: a whole JSON string (quotes included, always
 * terminated); text that would not fit is left out, never half an escape.
 */
static inline void migr_json_str_buf(char *buf, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (len < 3) {
		if (len)
			buf[0] = 0;
		return;
	}
	buf[o++] = '"';
	for (; *p; p++) {
		char e[8];
		int n;

		if (*p == '"' || *p == '\\')
			n = snprintf(e, sizeof(e), "\\%c", *p);
		else if (*p < 0x20 || *p > 0x7e)
			n = snprintf(e, sizeof(e), "\\u%04x", *p);
		else
			n = snprintf(e, sizeof(e), "%c", *p);
		if (o + n + 2 > len)
			break;
		memcpy(buf + o, e, n);
		o += n;
	}
	buf[o++] = '"';
	buf[o] = 0;
}

#endif /* MIGR_JSON_STR_H */
