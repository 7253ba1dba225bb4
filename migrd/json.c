// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Recursive-descent JSON parser into a flat token array (json.h) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct parser {
	struct json *j;
	size_t pos, len;
};

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->j->s[p->pos]) &&
	       p->j->s[p->pos])
		p->pos++;
}

static int new_tok(struct parser *p, enum json_type type)
{
	struct json_tok *t;

	if (p->j->n == p->j->cap)
		return -1;
	t = &p->j->t[p->j->n];
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->start = p->pos;
	return p->j->n++;
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

static int parse_string(struct parser *p)
{
	const char *s = p->j->s;
	int i;

	p->pos++; /* the opening quote */
	i = new_tok(p, JSON_STRING);
	if (i < 0)
		return -1;
	while (p->pos < p->len) {
		unsigned char c = s[p->pos];

		if (c == '"') {
			p->j->t[i].end = p->pos++;
			p->j->t[i].next = p->j->n;
			return i;
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (++p->pos >= p->len)
				return -1;
			c = s[p->pos];
			if (c == 'u') {
				int k;

				for (k = 1; k <= 4; k++)
					if (p->pos + k >= p->len ||
					    !is_hex(s[p->pos + k]))
						return -1;
				p->pos += 4;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return -1;
			}
		}
		p->pos++;
	}
	return -1;
}

static int parse_number(struct parser *p)
{
	const char *s = p->j->s;
	size_t d;
	int i = new_tok(p, JSON_NUMBER);

	if (i < 0)
		return -1;
	if (p->pos < p->len && s[p->pos] == '-')
		p->pos++;
	d = p->pos;
	while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
		p->pos++;
	if (p->pos == d || (s[d] == '0' && p->pos - d > 1))
		return -1;
	if (p->pos < p->len && s[p->pos] == '.') {
		d = ++p->pos;
		while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
			p->pos++;
		if (p->pos == d)
			return -1;
	}
	if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-'))
			p->pos++;
		d = p->pos;
		while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
			p->pos++;
		if (p->pos == d)
			return -1;
	}
	p->j->t[i].end = p->pos;
	p->j->t[i].next = p->j->n;
	return i;
}

static int parse_word(struct parser *p, const char *w, enum json_type type)
{
	size_t n = strlen(w);
	int i;

	if (p->len - p->pos < n || memcmp(p->j->s + p->pos, w, n))
		return -1;
	i = new_tok(p, type);
	if (i < 0)
		return -1;
	p->pos += n;
	p->j->t[i].end = p->pos;
	p->j->t[i].next = p->j->n;
	return i;
}

/*
 * The code points of a string, escapes undone, so that "ok" and "o\u006b"
 * are one key as for any other reader. Bytes that are not UTF-8 all read
 * as U+FFFD: keys differing only there count as the same (refused twice).
 */
struct cp_iter {
	const unsigned char *s;
	size_t pos, end;
	bool esc; /* a JSON string token (else a plain C string) */
};

static long hex4(const unsigned char *s)
{
	long v = 0;
	int k;

	for (k = 0; k < 4; k++)
		v = v << 4 |
		    (s[k] <= '9' ? s[k] - '0' : (s[k] | 0x20) - 'a' + 10);
	return v;
}

static long utf8_next(struct cp_iter *it, unsigned char c)
{
	int n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
	static const long min[] = { 0, 0x80, 0x800, 0x10000 };
	long v = c & (0x3f >> n);
	int k;

	if (!n || c >= 0xf8 || it->pos + n > it->end)
		return 0xfffd;
	for (k = 0; k < n; k++) {
		if ((it->s[it->pos + k] & 0xc0) != 0x80)
			return 0xfffd;
		v = v << 6 | (it->s[it->pos + k] & 0x3f);
	}
	if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000))
		return 0xfffd;
	it->pos += n;
	return v;
}

/* The next code point, or -1 at the end (string tokens are valid here) */
static long cp_next(struct cp_iter *it)
{
	static const char map[] = "b\bf\fn\nr\rt\t";
	unsigned char c;
	const char *m;
	long v, lo;

	if (it->pos >= it->end)
		return -1;
	c = it->s[it->pos++];
	if (c >= 0x80)
		return utf8_next(it, c);
	if (c != '\\' || !it->esc)
		return c;
	c = it->s[it->pos++];
	if (c != 'u') {
		m = strchr(map, c);
		return m ? (unsigned char)m[1] : c;
	}
	v = hex4(it->s + it->pos);
	it->pos += 4;
	/* a surrogate pair is one code point, as UTF-8 would spell it */
	if (v >= 0xd800 && v < 0xdc00 && it->pos + 6 <= it->end &&
	    it->s[it->pos] == '\\' && it->s[it->pos + 1] == 'u') {
		lo = hex4(it->s + it->pos + 2);
		if (lo >= 0xdc00 && lo < 0xe000) {
			it->pos += 6;
			v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
		}
	}
	return v;
}

static struct cp_iter tok_iter(const struct json *j, int k)
{
	return (struct cp_iter){ .s = (const unsigned char *)j->s,
				 .pos = j->t[k].start,
				 .end = j->t[k].end,
				 .esc = true };
}

static int cp_cmp(struct cp_iter a, struct cp_iter b)
{
	long x, y;

	do {
		x = cp_next(&a);
		y = cp_next(&b);
	} while (x == y && x >= 0);
	return x < y ? -1 : x > y;
}

static int key_cmp(const void *a, const void *b, void *j)
{
	return cp_cmp(tok_iter(j, *(const int *)a),
		      tok_iter(j, *(const int *)b));
}

/* Whether object obj (complete) names a key twice */
static bool dup_keys(const struct json *j, int obj)
{
	int n = j->t[obj].count, c, d, k, *keys, small[8];
	bool dup = false;

	if (n < 2)
		return false;
	/* sorted, so that a reply of many keys costs n log n, not n^2 */
	keys = n <= 8 ? small : malloc(n * sizeof(*keys));
	if (!keys)
		return true; /* cannot tell: refuse */
	for (c = 0, k = obj + 1; c < n; c++, k = j->t[k + 1].next)
		keys[c] = k;
	if (n <= 8) {
		for (c = 0; c < n; c++)
			for (d = c + 1; d < n; d++)
				if (!key_cmp(&keys[c], &keys[d], (void *)j))
					dup = true;
		return dup;
	}
	qsort_r(keys, n, sizeof(*keys), key_cmp, (void *)j);
	for (c = 1; c < n && !dup; c++)
		dup = !key_cmp(&keys[c - 1], &keys[c], (void *)j);
	free(keys);
	return dup;
}

static int parse_value(struct parser *p, int depth);

/* Objects and arrays: members separated by commas, no trailing comma */
static int parse_container(struct parser *p, int depth, bool obj)
{
	char close = obj ? '}' : ']';
	int i = new_tok(p, obj ? JSON_OBJECT : JSON_ARRAY);

	if (i < 0 || depth >= JSON_DEPTH_MAX)
		return -1;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->j->s[p->pos] == close) {
		p->pos++;
		goto done;
	}
	for (;;) {
		skip_ws(p);
		if (obj) {
			if (p->pos >= p->len || p->j->s[p->pos] != '"' ||
			    parse_string(p) < 0)
				return -1;
			skip_ws(p);
			if (p->pos >= p->len || p->j->s[p->pos] != ':')
				return -1;
			p->pos++;
		}
		if (parse_value(p, depth + 1) < 0)
			return -1;
		p->j->t[i].count++;
		skip_ws(p);
		if (p->pos >= p->len)
			return -1;
		if (p->j->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->j->s[p->pos] != close)
			return -1;
		p->pos++;
		break;
	}
done:
	p->j->t[i].end = p->pos;
	p->j->t[i].next = p->j->n;
	if (obj && dup_keys(p->j, i))
		return -1;
	return i;
}

static int parse_value(struct parser *p, int depth)
{
	skip_ws(p);
	if (p->pos >= p->len)
		return -1;
	switch (p->j->s[p->pos]) {
	case '{':
		return parse_container(p, depth, true);
	case '[':
		return parse_container(p, depth, false);
	case '"':
		return parse_string(p);
	case 't':
		return parse_word(p, "true", JSON_TRUE);
	case 'f':
		return parse_word(p, "false", JSON_FALSE);
	case 'n':
		return parse_word(p, "null", JSON_NULL);
	default:
		return parse_number(p);
	}
}

int json_parse(struct json *j, const char *s, size_t len, struct json_tok *t,
	       int cap)
{
	struct parser p = { .j = j, .len = len };

	j->s = s;
	j->t = t;
	j->n = 0;
	j->cap = cap;
	if (parse_value(&p, 0) < 0)
		return -1;
	skip_ws(&p);
	return p.pos == len ? 0 : -1;
}

int json_key_at(const struct json *j, int obj, int i)
{
	int k, c;

	if (obj < 0 || obj >= j->n || j->t[obj].type != JSON_OBJECT || i < 0 ||
	    i >= j->t[obj].count)
		return -1;
	k = obj + 1;
	for (c = 0; c < i; c++)
		k = j->t[k + 1].next;
	return k;
}

int json_get(const struct json *j, int obj, const char *key)
{
	struct cp_iter want = { .s = (const unsigned char *)key,
				.end = strlen(key) };
	int c, k;

	if (obj < 0 || obj >= j->n || j->t[obj].type != JSON_OBJECT)
		return -1;
	for (c = 0, k = obj + 1; c < j->t[obj].count; c++, k = j->t[k + 1].next)
		if (!cp_cmp(tok_iter(j, k), want))
			return k + 1;
	return -1;
}

int json_at(const struct json *j, int arr, int i)
{
	int c, k;

	if (arr < 0 || arr >= j->n || j->t[arr].type != JSON_ARRAY || i < 0 ||
	    i >= j->t[arr].count)
		return -1;
	for (c = 0, k = arr + 1; c < i; c++)
		k = j->t[k].next;
	return k;
}

bool json_str(const struct json *j, int i, char *buf, size_t len)
{
	const char *s;
	size_t k, o = 0;

	if (i < 0 || i >= j->n || j->t[i].type != JSON_STRING || !len)
		return false;
	s = j->s;
	for (k = j->t[i].start; k < j->t[i].end && o + 1 < len; k++) {
		char c = s[k];

		if (c == '\\') {
			c = s[++k];
			if (c == 'u') {
				/* Only ASCII is expected here; others become '?' */
				unsigned long v = strtoul(
					(char[5]){ s[k + 1], s[k + 2], s[k + 3],
						   s[k + 4], 0 },
					NULL, 16);

				c = v < 0x80 ? (char)v : '?';
				k += 4;
			} else {
				const char *map = "b\bf\fn\nr\rt\t";
				const char *m = strchr(map, c);

				if (m && (m - map) % 2 == 0)
					c = m[1];
			}
		}
		buf[o++] = c;
	}
	buf[o] = 0;
	return true;
}

double json_num(const struct json *j, int i, double dflt)
{
	char buf[64], *p = buf;
	size_t n;
	double d;

	if (i < 0 || i >= j->n || j->t[i].type != JSON_NUMBER)
		return dflt;
	/* s need not be NUL-terminated past the token: strtod a copy */
	n = j->t[i].end - j->t[i].start;
	if (n >= sizeof(buf))
		p = malloc(n + 1);
	if (!p)
		return dflt;
	memcpy(p, j->s + j->t[i].start, n);
	p[n] = 0;
	d = strtod(p, NULL);
	if (p != buf)
		free(p);
	return d;
}

long long json_int(const struct json *j, int i, long long min, long long max,
		   long long dflt)
{
	double d = json_num(j, i, 0.5);
	long long v;

	/* in the range of long long first: the cast is undefined outside */
	if (!(d >= -0x1p63 && d < 0x1p63))
		return dflt;
	v = (long long)d;
	if ((double)v != d || v < min || v > max)
		return dflt;
	return v;
}

bool json_bool(const struct json *j, int i, bool dflt)
{
	if (i < 0 || i >= j->n)
		return dflt;
	if (j->t[i].type == JSON_TRUE)
		return true;
	if (j->t[i].type == JSON_FALSE)
		return false;
	return dflt;
}
