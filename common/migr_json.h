/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * JSON as the library, migrd and migrctl read and write it: one
 * implementation, jansson, under a few helpers (migr_json.c).
 *
 * Reading: a line is one object, parsed whole; a key named twice in any
 * object refuses the whole text (readers disagree on which one counts, so
 * a sender could show one "ok" to one reader and another to the next).
 * Values are looked up by key in the object they belong to, never
 * anywhere in the text. The getters take NULL (a missing object) and a
 * value of the wrong type alike: the default.
 *
 * Writing: text (an error, a device name, a comm) goes out as one JSON
 * string, quotes, backslashes, control characters and non-ASCII bytes
 * escaped (DEL, which JSON does not escape, as it is), so that it can
 * never add keys to the line it is in.
 */
#ifndef MIGR_JSON_H
#define MIGR_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* The longest text parsed: migrctl's bound on a migrd reply */
#define MIGR_JSON_MAX (16u << 20)

/*
 * s[0..len), one JSON object (whitespace around it allowed), or NULL: not
 * JSON, not an object, a duplicate key, longer than MIGR_JSON_MAX, or out
 * of memory. json_decref() it when done.
 */
json_t *migr_json_parse(const char *s, size_t len);

/* The value of key, if it is true or false; else dflt */
bool migr_json_bool(const json_t *obj, const char *key, bool dflt);
/* Whether key is there and true */
static inline bool migr_json_true(const json_t *obj, const char *key)
{
	return migr_json_bool(obj, key, false);
}
/* The value of key, if it is a number; else dflt */
double migr_json_num(const json_t *obj, const char *key, double dflt);
/*
 * The value of key if it is an integer within [min, max] (a number with
 * no fraction, as 1.5e2 is); else dflt. Never a wrapped or undefined cast.
 */
long long migr_json_int(const json_t *obj, const char *key, long long min,
			long long max, long long dflt);
/* A count: an integer from 0 up; false, *v untouched, if it is not one */
bool migr_json_u64(const json_t *obj, const char *key, uint64_t *v);
/* A number given as a string of 1 to 16 hex digits: "key":"1f..." */
bool migr_json_hex(const json_t *obj, const char *key, uint64_t *v);
/*
 * Copy string key into buf (cut to fit, always terminated), each
 * character that is not ASCII as one '?'; false if it is not a string.
 */
bool migr_json_text(const json_t *obj, const char *key, char *buf, size_t len);
/* ... the same for s, a string jansson gave (UTF-8), a key perhaps */
void migr_json_ascii(const char *s, char *buf, size_t len);
/* The "error" string of obj for a one-line message: controls as '?' */
void migr_json_error(const json_t *obj, char *err, size_t errlen);

/*
 * Write s as one JSON string, quotes included, through emit (which returns
 * 0, or -1 to stop); every byte of s is one character, so that text which
 * is not UTF-8 still goes out whole. 0, or -1 if emit or memory failed.
 */
int migr_json_quote(const char *s,
		    int (*emit)(const char *buf, size_t len, void *data),
		    void *data);
/* ... to out */
void migr_json_str(FILE *out, const char *s);
/*
 * ... into buf: a whole JSON string, always terminated; text that would
 * not fit is left out, never half an escape.
 */
void migr_json_str_buf(char *buf, size_t len, const char *s);

#endif /* MIGR_JSON_H */
