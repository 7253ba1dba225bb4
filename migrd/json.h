/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A small JSON reader for the one-line replies of migr processes and of
 * migrd: parse into a flat token array, then look values up. Strict (RFC
 * 8259 syntax), bounded in depth and token count.
 */
#ifndef MIGRD_JSON_H
#define MIGRD_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define JSON_DEPTH_MAX 32

enum json_type {
	JSON_OBJECT,
	JSON_ARRAY,
	JSON_STRING,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
};

struct json_tok {
	enum json_type type;
	size_t start, end; /* strings: inside the quotes */
	int count; /* objects: keys; arrays: elements */
	int next; /* the token after this value and all it contains */
};

struct json {
	const char *s;
	struct json_tok *t;
	int n, cap;
};

/*
 * Parse s[0..len) (trailing whitespace allowed); 0, or -1 if not JSON. An
 * object naming one key twice (after unescaping) is refused: readers
 * disagree on which one counts, so a sender could show one "ok" to one
 * reader and another to the next.
 */
int json_parse(struct json *j, const char *s, size_t len, struct json_tok *t,
	       int cap);

/* The value of key in object obj (keys compared unescaped), or -1 */
int json_get(const struct json *j, int obj, const char *key);
/* Element i of array arr, or -1 */
int json_at(const struct json *j, int arr, int i);
/* Key i of object obj (its value follows it), or -1 */
int json_key_at(const struct json *j, int obj, int i);

/* Copy string token i, unescaped, into buf; false if not a string */
bool json_str(const struct json *j, int i, char *buf, size_t len);
double json_num(const struct json *j, int i, double dflt);
/*
 * Number token i if it is an integer within [min, max], else dflt: what a
 * cast of json_num() would be, without its undefined cases (huge, inf).
 */
long long json_int(const struct json *j, int i, long long min, long long max,
		   long long dflt);
bool json_bool(const struct json *j, int i, bool dflt);

#endif
