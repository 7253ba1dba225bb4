// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * JSON for the library, migrd and migrctl (migr_json.h): jansson parses and
 * escapes; what is here are the rules on top (objects only, no duplicate
 * keys, a size bound, numbers in range, text made one line).
 */
#include <stdlib.h>
#include <string.h>

#include "migr_json.h"

#define QUOTE_FLAGS (JSON_ENCODE_ANY | JSON_ENSURE_ASCII | JSON_COMPACT)

json_t *migr_json_parse(const char *s, size_t len)
{
	json_error_t e;
	json_t *j;

	/* bounded before jansson sees it: its memory grows with the text */
	if (len > MIGR_JSON_MAX)
		return NULL;
	j = json_loadb(s, len, JSON_REJECT_DUPLICATES, &e);
	if (j && !json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

bool migr_json_bool(const json_t *obj, const char *key, bool dflt)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

double migr_json_num(const json_t *obj, const char *key, double dflt)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

long long migr_json_int(const json_t *obj, const char *key, long long min,
			long long max, long long dflt)
{
	const json_t *v = json_object_get(obj, key);
	long long n;
	double d;

	if (json_is_integer(v)) {
		n = json_integer_value(v);
	} else if (json_is_real(v)) {
		d = json_real_value(v);
		/* in long long's range first: the cast is undefined outside */
		if (!(d >= -0x1p63 && d < 0x1p63))
			return dflt;
		n = (long long)d;
		if ((double)n != d)
			return dflt;
	} else {
		return dflt;
	}
	return n < min || n > max ? dflt : n;
}

bool migr_json_u64(const json_t *obj, const char *key, uint64_t *v)
{
	const json_t *n = json_object_get(obj, key);

	if (!json_is_integer(n) || json_integer_value(n) < 0)
		return false;
	*v = json_integer_value(n);
	return true;
}

bool migr_json_hex(const json_t *obj, const char *key, uint64_t *v)
{
	const char *s = json_string_value(json_object_get(obj, key));
	uint64_t n = 0;
	size_t i;

	if (!s || !s[0] || strlen(s) > 16)
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			n = n << 4 | (c - '0');
		else if (c >= 'a' && c <= 'f')
			n = n << 4 | (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			n = n << 4 | (c - 'A' + 10);
		else
			return false;
	}
	*v = n;
	return true;
}

void migr_json_ascii(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	/* jansson's strings are UTF-8: one '?' for a sequence's lead byte */
	for (; *s && o + 1 < len; s++) {
		unsigned char c = *s;

		if ((c & 0xc0) == 0x80)
			continue;
		buf[o++] = c < 0x80 ? c : '?';
	}
	buf[o] = 0;
}

bool migr_json_text(const json_t *obj, const char *key, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(obj, key));

	if (!s || !len)
		return false;
	migr_json_ascii(s, buf, len);
	return true;
}

void migr_json_error(const json_t *obj, char *err, size_t errlen)
{
	char *p;

	if (!errlen)
		return;
	if (!migr_json_text(obj, "error", err, errlen)) {
		snprintf(err, errlen, "no reason given");
		return;
	}
	for (p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/*
 * s as a jansson string, each byte one character (ISO 8859-1 as UTF-8):
 * escaping ASCII-only then writes a byte b >= 0x80 as \u00b, whether s is
 * UTF-8 or not, and nothing of s is lost
 */
static json_t *byte_string(const char *s)
{
	size_t n = strlen(s), o = 0, i;
	char *u = malloc(2 * n + 1);
	json_t *str;

	if (!u)
		return NULL;
	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c < 0x80) {
			u[o++] = c;
		} else {
			u[o++] = 0xc0 | c >> 6;
			u[o++] = 0x80 | (c & 0x3f);
		}
	}
	str = json_stringn_nocheck(u, o);
	free(u);
	return str;
}

int migr_json_quote(const char *s,
		    int (*emit)(const char *buf, size_t len, void *data),
		    void *data)
{
	json_t *str = byte_string(s);
	int ret;

	/* out of memory: an empty string, the line around it still JSON */
	if (!str) {
		emit("\"\"", 2, data);
		return -1;
	}
	ret = json_dump_callback(str, emit, data, QUOTE_FLAGS);
	json_decref(str);
	return ret;
}

static int to_file(const char *buf, size_t len, void *data)
{
	return fwrite(buf, 1, len, data) == len ? 0 : -1;
}

void migr_json_str(FILE *out, const char *s)
{
	migr_json_quote(s, to_file, out);
}

void migr_json_str_buf(char *buf, size_t len, const char *s)
{
	json_t *str;
	size_t n = 0, o, u, cap = strlen(s) * 6 + 2; /* "\u00XX" per byte */
	char *tmp;

	if (len < 3) {
		if (len)
			buf[0] = 0;
		return;
	}
	str = byte_string(s);
	tmp = str ? malloc(cap) : NULL;
	if (tmp)
		n = json_dumpb(str, tmp, cap, QUOTE_FLAGS);
	json_decref(str);
	if (n < 2 || n > cap) {
		snprintf(buf, len, "\"\"");
		free(tmp);
		return;
	}
	/* whole escapes only, with room left for the closing quote */
	for (o = 1; o < n - 1; o += u) {
		u = tmp[o] != '\\' ? 1 : tmp[o + 1] == 'u' ? 6 : 2;
		if (o + u + 2 > len)
			break;
	}
	memcpy(buf, tmp, o);
	buf[o++] = '"';
	buf[o] = 0;
	free(tmp);
}
