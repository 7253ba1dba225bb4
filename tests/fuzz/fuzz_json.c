// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migrd's JSON reader (json.c): what migr processes and migrd reply is
 * parsed by migrd and migrctl. Parse, then walk every token with the
 * getters; check what the reader promises (no duplicate keys, bounds).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json.h"

#define WALK_MAX 64 /* members looked at per container: json_at is O(i) */

static void value(const struct json *j, int v)
{
	char small[4], buf[256];
	size_t n;

	FUZZ_ASSERT(v >= 0 && v < j->n);
	json_num(j, v, 0);
	json_int(j, v, 0, 0xffffff, -1);
	json_int(j, v, -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL, 0);
	json_int(j, v, 5, 4, 0);
	json_bool(j, v, false);
	if (json_str(j, v, small, sizeof(small)))
		FUZZ_ASSERT(memchr(small, 0, sizeof(small)));
	if (json_str(j, v, buf, sizeof(buf))) {
		n = strlen(buf);
		FUZZ_ASSERT(n < sizeof(buf));
	}
	FUZZ_ASSERT(json_str(j, v, buf, 0) == false);
}

/* A key with no escapes and no UTF-8 is found by its own name */
static void key(const struct json *j, int obj, int k)
{
	const struct json_tok *t = &j->t[k];
	char name[64];
	size_t n = t->end - t->start, i;

	FUZZ_ASSERT(t->type == JSON_STRING);
	if (!json_str(j, k, name, sizeof(name)) || n >= sizeof(name))
		return;
	for (i = t->start; i < t->end; i++)
		if (j->s[i] == '\\' || (unsigned char)j->s[i] >= 0x80)
			return;
	/* keys are unique, so the first with this name is this one */
	FUZZ_ASSERT(json_get(j, obj, name) == k + 1);
}

static void walk(const struct json *j)
{
	int i, c, k, count;

	for (i = 0; i < j->n; i++) {
		const struct json_tok *t = &j->t[i];

		FUZZ_ASSERT(t->next > i && t->next <= j->n);
		FUZZ_ASSERT(t->start <= t->end);
		value(j, i);
		count = t->count;
		if (t->type == JSON_OBJECT) {
			for (c = 0; c < count && c < WALK_MAX; c++) {
				k = json_key_at(j, i, c);
				FUZZ_ASSERT(k > i && k + 1 < j->n);
				key(j, i, k);
			}
			FUZZ_ASSERT(json_key_at(j, i, count) == -1);
			FUZZ_ASSERT(json_key_at(j, i, -1) == -1);
			json_get(j, i, "ok");
			json_get(j, i, "");
		} else if (t->type == JSON_ARRAY) {
			for (c = 0; c < count && c < WALK_MAX; c++)
				FUZZ_ASSERT(json_at(j, i, c) > i);
			FUZZ_ASSERT(json_at(j, i, count) == -1);
			FUZZ_ASSERT(json_at(j, i, -1) == -1);
		} else {
			FUZZ_ASSERT(json_at(j, i, 0) == -1 &&
				    json_get(j, i, "ok") == -1);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int cap = size / 2 + 16; /* what migrd and migrctl allow */
	struct json_tok *t = malloc(cap * sizeof(*t)), few[8];
	struct json j, j2;
	int rc;

	if (!t)
		return 0;
	rc = json_parse(&j, s, size, t, cap);
	if (!rc) {
		FUZZ_ASSERT(j.n > 0 && j.n <= cap);
		walk(&j);
	}
	/* with fewer tokens it may only fail, never differ */
	if (!json_parse(&j2, s, size, few, 8))
		FUZZ_ASSERT(!rc && j2.n == j.n);
	free(t);
	return 0;
}

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"{\"v\":1,\"ok\":true}",
		"{\"v\":1,\"ok\":false,\"error\":\"no \\\"migr\\\" \\u00e9\"}",
		"[1,-2.5e3,0,1e999,{\"x\":null},[],{},\"\\ud83d\\ude00\"]",
		"{\"a\":{\"b\":{\"c\":[true,false,null]}},\"a2\":\"\\/\\b\\f\\n\\r\\t\"}",
		"{\"ok\":false,\"o\\u006b\":true}",
	};
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		add(s[i], strlen(s[i]));
}
