// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Recursive-descent JSON parser into a flat token array (json.h) */
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

	if (obj < 0 || j->t[obj].type != JSON_OBJECT || i >= j->t[obj].count)
		return -1;
	k = obj + 1;
	for (c = 0; c < i; c++)
		k = j->t[k + 1].next;
	return k;
}

int json_get(const struct json *j, int obj, const char *key)
{
	size_t n = strlen(key);
	int c, k;

	if (obj < 0 || j->t[obj].type != JSON_OBJECT)
		return -1;
	for (c = 0, k = obj + 1; c < j->t[obj].count; c++, k = j->t[k + 1].next)
		if (j->t[k].end - j->t[k].start == n &&
		    !memcmp(j->s + j->t[k].start, key, n))
			return k + 1;
	return -1;
}

int json_at(const struct json *j, int arr, int i)
{
	int c, k;

	if (arr < 0 || j->t[arr].type != JSON_ARRAY || i >= j->t[arr].count)
		return -1;
	for (c = 0, k = arr + 1; c < i; c++)
		k = j->t[k].next;
	return k;
}

bool json_str(const struct json *j, int i, char *buf, size_t len)
{
	const char *s;
	size_t k, o = 0;

	if (i < 0 || j->t[i].type != JSON_STRING || !len)
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
	if (i < 0 || j->t[i].type != JSON_NUMBER)
		return dflt;
	return strtod(j->s + j->t[i].start, NULL);
}

bool json_bool(const struct json *j, int i, bool dflt)
{
	if (i < 0)
		return dflt;
	if (j->t[i].type == JSON_TRUE)
		return true;
	if (j->t[i].type == JSON_FALSE)
		return false;
	return dflt;
}
