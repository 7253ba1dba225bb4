// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * JSON as the library, migrd and migrctl read and write it
 * (common/migr_json.c over jansson). The input is read as a
 * reply line: parsed, then every member of every object through the
 * getters the readers use, checking what they promise (ranges, ASCII text,
 * one value per key); what parsed must write and read back the same. Then the input
 * is taken as text to write: each writer's string must read back whole.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "as_read.h"
#include "migr_json.h"
#include "sbuf.h"

#define WALK_MAX 4096 /* values looked at per input */
#define TEXT_MAX 1024 /* bytes of the input written as a string */

/* Terminated within len, ASCII; one_line: no control but DEL */
static void ascii(const char *s, size_t len, bool one_line)
{
	FUZZ_ASSERT(memchr(s, 0, len));
	for (; *s; s++) {
		FUZZ_ASSERT((unsigned char)*s < 0x80);
		if (one_line)
			FUZZ_ASSERT(*s >= 0x20);
	}
}

static void getters(const json_t *obj, const char *key)
{
	char small[4], buf[256];
	uint64_t v = 7;
	long long n;

	migr_json_num(obj, key, 0);
	n = migr_json_int(obj, key, 0, 0xffffff, -1);
	FUZZ_ASSERT(n == -1 || (n >= 0 && n <= 0xffffff));
	migr_json_int(obj, key, LLONG_MIN, LLONG_MAX, 0);
	FUZZ_ASSERT(migr_json_int(obj, key, 5, 4, 9) == 9);
	migr_json_bool(obj, key, false);
	if (migr_json_u64(obj, key, &v))
		FUZZ_ASSERT(v <= LLONG_MAX);
	else
		FUZZ_ASSERT(v == 7);
	migr_json_hex(obj, key, &v);
	if (migr_json_text(obj, key, small, sizeof(small)))
		ascii(small, sizeof(small), false);
	if (migr_json_text(obj, key, buf, sizeof(buf)))
		ascii(buf, sizeof(buf), false);
	FUZZ_ASSERT(!migr_json_text(obj, key, buf, 0));
}

static void walk(json_t *v, int *budget)
{
	const char *key;
	char err[64];
	json_t *m;
	size_t i;

	if (--*budget < 0)
		return;
	if (json_is_object(v)) {
		json_object_foreach (v, key, m) {
			/* one value per key: its own name finds it */
			FUZZ_ASSERT(json_object_get(v, key) == m);
			getters(v, key);
			walk(m, budget);
		}
		getters(v, "ok");
		getters(v, "");
		migr_json_error(v, err, sizeof(err));
		ascii(err, sizeof(err), true);
		FUZZ_ASSERT(!strchr(err, 0x7f));
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, m)
			walk(m, budget);
	}
}

/* The string written into a reply, read back; NULL if it added keys */
static const char *read_back(const char *quoted, json_t **j)
{
	struct sbuf line = {};
	const char *s = NULL;

	sb_printf(&line, "{\"ok\":false,\"error\":%s}", quoted);
	FUZZ_ASSERT(!line.oom);
	*j = migr_json_parse(line.p, line.len);
	FUZZ_ASSERT(*j);
	if (json_object_size(*j) == 2 && !migr_json_true(*j, "ok"))
		s = json_string_value(json_object_get(*j, "error"));
	sb_free(&line);
	return s;
}

static void writers(const uint8_t *data, size_t size)
{
	char text[TEXT_MAX + 1], want[2 * TEXT_MAX + 1], cut[64];
	size_t n = size < TEXT_MAX ? size : TEXT_MAX, len;
	struct sbuf q = {};
	const char *got;
	json_t *j;

	memcpy(text, data, n);
	text[n] = 0;
	as_read(text, want);
	sb_json_str(&q, text);
	FUZZ_ASSERT(!q.oom);
	ascii(q.p, q.len + 1, true);
	got = read_back(q.p, &j);
	FUZZ_ASSERT(got && !strcmp(got, want));
	json_decref(j);

	/* cut to fit: still one JSON string, a prefix of the whole */
	len = size % sizeof(cut);
	migr_json_str_buf(cut, len, text);
	if (len >= 3) {
		FUZZ_ASSERT(strlen(cut) < len);
		got = read_back(cut, &j);
		FUZZ_ASSERT(got && !strncmp(got, want, strlen(got)));
		json_decref(j);
	}
	sb_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = migr_json_parse((const char *)data, size), *again;
	int budget = WALK_MAX;
	char *s;

	if (j) {
		walk(j, &budget);
		s = json_dumps(j, JSON_COMPACT);
		FUZZ_ASSERT(s);
		again = migr_json_parse(s, strlen(s));
		FUZZ_ASSERT(again && json_equal(j, again));
		json_decref(again);
		free(s);
		json_decref(j);
	}
	writers(data, size);
	return 0;
}

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"{\"v\":1,\"ok\":true}",
		"{\"v\":1,\"ok\":false,\"error\":\"no \\\"migr\\\" \\u00e9\"}",
		"{\"l\":[1,-2.5e3,0,1e300,{\"x\":null},[],{},"
		"\"\\ud83d\\ude00\"]}",
		"{\"a\":{\"b\":{\"c\":[true,false,null]}},\"a2\":\"\\/\\b\\f\\n\\r\\t\"}",
		"{\"ok\":false,\"o\\u006b\":true}",
		"{\"v\":1,\"ok\":true,\"pid\":42,\"reply\":{\"ok\":true,"
		"\"results\":[{\"phys\":17,\"ok\":true,"
		"\"peer\":\"00000000000000ff\",\"mkey\":\"1f\","
		"\"maddr\":\"7f0000001000\",\"access\":15,\"keys\":\"1:2,3:4\","
		"\"gid\":\"fe800000000000000000000000000001\"}]}}",
	};
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		add(s[i], strlen(s[i]));
}
