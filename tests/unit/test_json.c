// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * JSON as the library, migrd and migrctl read and write it (migr_json.c,
 * over jansson): strict syntax, duplicate keys refused, keys looked up in
 * their own object, numbers in range, text escaped whole on the way out.
 */
#include <stdlib.h>
#include <string.h>

#include "as_read.h"
#include "migr_json.h"
#include "sbuf.h"
#include "unit.h"

static json_t *parse(const char *s)
{
	return migr_json_parse(s, strlen(s));
}

/* Parses, as one object */
static int ok(const char *s)
{
	json_t *j = parse(s);

	json_decref(j);
	return j != NULL;
}

static void test_syntax(void)
{
	const char *s =
		"{\"pid\":12,\"ok\":true,\"e\":\"a\\\"b\\n\",\"l\":[1,-2.5e3,"
		"{\"x\":null}],\"o\":{},\"f\":false}";
	json_t *j = parse(s);
	char buf[16];

	CHECK(j != NULL);
	CHECK(migr_json_num(j, "pid", 0) == 12);
	CHECK(migr_json_true(j, "ok") && migr_json_bool(j, "ok", false));
	CHECK(!migr_json_bool(j, "f", true) && !migr_json_true(j, "f"));
	CHECK(migr_json_bool(j, "pid", true) && !migr_json_true(j, "pid"));
	CHECK(migr_json_text(j, "e", buf, sizeof(buf)) &&
	      !strcmp(buf, "a\"b\n"));
	CHECK(json_number_value(json_array_get(json_object_get(j, "l"), 1)) ==
	      -2500);
	CHECK(!migr_json_text(j, "pid", buf, sizeof(buf)));
	CHECK(!migr_json_text(j, "missing", buf, sizeof(buf)));
	/* a short copy is cut, never overrun */
	CHECK(migr_json_text(j, "e", buf, 2) && !strcmp(buf, "a"));
	CHECK(!migr_json_text(j, "e", buf, 0));
	/* a missing object is one without the key */
	CHECK(!migr_json_true(json_object_get(j, "none"), "ok"));
	CHECK(migr_json_num(NULL, "pid", -1) == -1);
	json_decref(j);

	CHECK(ok(" {} \n"));
	CHECK(ok("{\"a\":[[[[1]]]]}"));
	/* a line is one object */
	CHECK(!ok("[]") && !ok("1") && !ok("\"s\"") && !ok("true"));
	CHECK(!ok(""));
	CHECK(!ok("{"));
	CHECK(!ok("{\"a\":1"));
	CHECK(!ok("{\"a\":1,}"));
	CHECK(!ok("{\"a\":[1,]}"));
	CHECK(!ok("{\"a\" 1}"));
	CHECK(!ok("{1:2}"));
	CHECK(!ok("{\"a\":\"abc}"));
	CHECK(!ok("{\"a\":\"a\\qb\"}"));
	CHECK(!ok("{\"a\":\"a\\u12\"}"));
	CHECK(!ok("{\"a\":\"tab\there\"}"));
	CHECK(!ok("{\"a\":01}"));
	CHECK(!ok("{\"a\":1.}"));
	CHECK(!ok("{\"a\":-}"));
	CHECK(!ok("{\"a\":tru}"));
	CHECK(!ok("{} {}"));
	CHECK(!ok("{} x"));
	/* text jansson cannot hold whole: NUL, malformed UTF-8 */
	CHECK(!ok("{\"a\":\"x\\u0000y\"}"));
	CHECK(!ok("{\"a\":\"\x9b\"}"));
	CHECK(!ok("{\"a\":\"\xc3\"}"));
	CHECK(ok("{\"a\":\"\xc3\xa9\"}"));
	/* a buffer is read only up to its length */
	CHECK(!migr_json_parse("{\"a\":1}", 6));
	CHECK(!migr_json_parse("{\"a\":1}\0}", 9));
}

/* The size bound comes before jansson: not one byte more */
static void test_bound(void)
{
	char *big = malloc(MIGR_JSON_MAX + 1);
	json_t *j;

	CHECK(big != NULL);
	if (!big)
		return;
	memset(big, ' ', MIGR_JSON_MAX + 1);
	big[0] = '{';
	big[1] = '}';
	j = migr_json_parse(big, MIGR_JSON_MAX);
	CHECK(j != NULL);
	json_decref(j);
	CHECK(!migr_json_parse(big, MIGR_JSON_MAX + 1));
	free(big);
}

/*
 * A key named twice: readers differ on which counts, so a process could
 * show migrd one "ok" and migrctl another. The whole text is refused.
 */
static void test_duplicates(void)
{
	char big[4096];
	json_t *j;
	int n, k;

	CHECK(!ok("{\"ok\":false,\"ok\":true}"));
	CHECK(!ok("{\"ok\":true,\"e\":1,\"ok\":true}"));
	CHECK(!ok("{\"a\":1,\"b\":2,\"a\":1}"));
	/* nested, in an object or in an array */
	CHECK(!ok("{\"v\":1,\"reply\":{\"ok\":false,\"ok\":true}}"));
	CHECK(!ok("{\"v\":1,\"reply\":{\"switch\":[{\"ok\":false,"
		  "\"device\":\"m\",\"ok\":true}]}}"));
	CHECK(!ok("{\"l\":[{},{\"x\":{\"y\":[{\"z\":1,\"z\":2}]}}]}"));
	/* the same key spelt with escapes is the same key */
	CHECK(!ok("{\"ok\":false,\"o\\u006b\":true}"));
	CHECK(!ok("{\"\\u00e9\":1,\"\xc3\xa9\":2}"));
	CHECK(!ok("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}"));
	CHECK(!ok("{\"a\\/b\":1,\"a/b\":2}"));
	/* the same key in different objects is fine, as are near misses */
	CHECK(ok("{\"ok\":true,\"reply\":{\"ok\":true}}"));
	CHECK(ok("{\"ok\":true,\"ok \":true,\"o\":1,\"OK\":1}"));
	CHECK(ok("{\"l\":[{\"ok\":true},{\"ok\":false}]}"));
	CHECK(ok("{\"\\u00e9\":1,\"\\u00e8\":2}"));

	/* and an escaped key is found by its plain name */
	j = parse("{\"o\\u006b\":true}");
	CHECK(migr_json_true(j, "ok"));
	json_decref(j);

	/* many keys: the last one repeats the first */
	n = snprintf(big, sizeof(big), "{");
	for (k = 0; k < 300; k++)
		n += snprintf(big + n, sizeof(big) - n, "\"k%d\":%d,", k, k);
	snprintf(big + n, sizeof(big) - n, "\"k%d\":0}", 0);
	CHECK(!ok(big));
	snprintf(big + n, sizeof(big) - n, "\"k%d\":0}", 300);
	j = parse(big);
	CHECK(migr_json_num(j, "k300", -1) == 0 &&
	      migr_json_num(j, "k7", -1) == 7);
	json_decref(j);
}

/*
 * What the library's reader did before (providers-migr/calls/migrd_call.c):
 * the text after the first "key": anywhere in the line, so a key in a
 * nested object, or the tail of another key, answered for the line.
 */
static bool strstr_true(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p && !strncmp(p + strlen(pat), "true", 4);
}

/* Each line says ok:false at its top level, and hides a true elsewhere */
static void test_nested(void)
{
	static const char *const lines[] = {
		/* migrd refused; its process's reply, relayed whole, said ok */
		"{\"v\":1,\"reply\":{\"ok\":true},\"ok\":false}",
		/* a result's ok before migrd's */
		"{\"results\":[{\"ok\":true}],\"ok\":false}",
		/* a key ending in an escaped quote and ok */
		"{\"x\\\"ok\":true,\"ok\":false}",
		/* no top-level ok at all */
		"{\"error\":\"x\",\"reply\":{\"notmine\":true,\"ok\":true}}",
		/* the same key twice: which counts? Refused whole now */
		"{\"ok\":true,\"ok\":false}",
	};
	unsigned int i;
	uint64_t v = 0;
	json_t *j;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		j = parse(lines[i]);
		CHECK(strstr_true(lines[i], "ok"));
		CHECK(!migr_json_true(j, "ok"));
		json_decref(j);
	}
	/* the nested one is still there, where it belongs */
	j = parse(lines[0]);
	CHECK(migr_json_true(json_object_get(j, "reply"), "ok"));
	json_decref(j);

	/* a number: the top level's, not the first anywhere */
	j = parse("{\"reply\":{\"pid\":66},\"pid\":7}");
	CHECK(migr_json_u64(j, "pid", &v) && v == 7);
	json_decref(j);
	j = parse("{\"reply\":{\"pid\":66}}");
	v = 5;
	CHECK(!migr_json_u64(j, "pid", &v) && v == 5);
	json_decref(j);
}

/* Integers as show.c and migrctl.c cast them: in range, or the default */
static void test_numbers(void)
{
	const char *s =
		"{\"a\":12,\"neg\":-3,\"big\":1e300,\"frac\":2.5,"
		"\"exp\":1.5e2,\"u32\":4294967295,\"u33\":4294967296,"
		"\"s\":\"7\",\"t\":true,\"ll\":9223372036854775807,"
		"\"nll\":-9223372036854775808,\"n\":-0,\"r0\":-0.0,"
		"\"r63\":9223372036854775808.0,\"h\":\"1f\",\"H\":\"ABCdef\","
		"\"hmax\":\"ffffffffffffffff\",\"h17\":\"10000000000000000\","
		"\"h0x\":\"0x1f\",\"hsp\":\" 1f\",\"hg\":\"1g\",\"he\":\"\","
		"\"hn\":31}";
	json_t *j = parse(s);
	uint64_t v;

	CHECK(j != NULL);
	CHECK(migr_json_int(j, "a", 0, 100, -1) == 12);
	CHECK(migr_json_int(j, "a", 0, 11, -1) == -1);
	CHECK(migr_json_int(j, "a", 13, 100, -1) == -1);
	CHECK(migr_json_int(j, "a", 12, 12, -1) == 12);
	CHECK(migr_json_int(j, "neg", 0, 100, 5) == 5);
	CHECK(migr_json_int(j, "neg", -3, 100, 5) == -3);
	CHECK(migr_json_int(j, "big", 0, 0xffffffff, 9) == 9);
	CHECK(migr_json_int(j, "big", -0x7fffffffffffffffLL - 1,
			    0x7fffffffffffffffLL, 9) == 9);
	CHECK(migr_json_int(j, "frac", 0, 100, 9) == 9);
	CHECK(migr_json_int(j, "exp", 0, 1000, 9) == 150);
	CHECK(migr_json_int(j, "u32", 0, 0xffffffff, 9) == 0xffffffff);
	CHECK(migr_json_int(j, "u33", 0, 0xffffffff, 9) == 9);
	CHECK(migr_json_int(j, "s", 0, 100, 9) == 9);
	CHECK(migr_json_int(j, "t", 0, 100, 9) == 9);
	CHECK(migr_json_int(j, "missing", 0, 100, 9) == 9);
	CHECK(migr_json_int(NULL, "a", 0, 100, 9) == 9);
	/* the ends of long long are integers, exactly */
	CHECK(migr_json_int(j, "ll", 0, 0x7fffffffffffffffLL, 9) ==
	      0x7fffffffffffffffLL);
	CHECK(migr_json_int(j, "ll", 0, 0x7ffffffffffffffeLL, 9) == 9);
	CHECK(migr_json_int(j, "nll", -0x7fffffffffffffffLL - 1, 0, 9) ==
	      -0x7fffffffffffffffLL - 1);
	CHECK(migr_json_int(j, "n", 0, 1, 9) == 0);
	CHECK(migr_json_int(j, "r0", 0, 1, 9) == 0);
	/* 2^63 as a real is past long long: the default, not a wrapped cast */
	CHECK(migr_json_int(j, "r63", -0x7fffffffffffffffLL - 1,
			    0x7fffffffffffffffLL, 9) == 9);

	/* counts: integers from 0 up */
	CHECK(migr_json_u64(j, "a", &v) && v == 12);
	CHECK(migr_json_u64(j, "ll", &v) && v == 0x7fffffffffffffffULL);
	v = 77;
	CHECK(!migr_json_u64(j, "neg", &v) && !migr_json_u64(j, "exp", &v) &&
	      !migr_json_u64(j, "s", &v) && !migr_json_u64(j, "t", &v) &&
	      !migr_json_u64(j, "missing", &v) && v == 77);
	/* hex strings: 1 to 16 hex digits, nothing else */
	CHECK(migr_json_hex(j, "h", &v) && v == 0x1f);
	CHECK(migr_json_hex(j, "H", &v) && v == 0xabcdef);
	CHECK(migr_json_hex(j, "hmax", &v) && v == UINT64_MAX);
	v = 77;
	CHECK(!migr_json_hex(j, "h17", &v) && !migr_json_hex(j, "h0x", &v) &&
	      !migr_json_hex(j, "hsp", &v) && !migr_json_hex(j, "hg", &v) &&
	      !migr_json_hex(j, "he", &v) && !migr_json_hex(j, "hn", &v) &&
	      v == 77);
	json_decref(j);

	/* numbers no double or long long holds: the whole text is refused */
	CHECK(!ok("{\"huge\":1e999}"));
	CHECK(!ok("{\"huge\":-1e999}"));
	CHECK(!ok("{\"pid\":9223372036854775808}"));
	CHECK(!ok("{\"pid\":-9223372036854775809}"));
	CHECK(!ok("{\"pid\":99999999999999999999999}"));
}

/* Text for messages and tables: ASCII, one line for errors */
static void test_text(void)
{
	json_t *j = parse("{\"e\":\"a\\u00e9b\\ud83d\\ude00c\xc3\xa9\","
			  "\"c\":\"x\\ny\\u001b[2J\\u007f\",\"n\":1}");
	char buf[64];

	CHECK(migr_json_text(j, "e", buf, sizeof(buf)) &&
	      !strcmp(buf, "a?b?c?"));
	/* cut inside a character: never half of it */
	CHECK(migr_json_text(j, "e", buf, 3) && !strcmp(buf, "a?"));
	CHECK(migr_json_text(j, "c", buf, sizeof(buf)) &&
	      !strcmp(buf, "x\ny\x1b[2J\x7f"));
	migr_json_error(json_object_get(j, "none"), buf, sizeof(buf));
	CHECK(!strcmp(buf, "no reason given"));
	json_decref(j);
	j = parse("{\"error\":\"x\\ny\\u001b[2J\\u007f\\u00e9\"}");
	migr_json_error(j, buf, sizeof(buf));
	CHECK(!strcmp(buf, "x?y?[2J??"));
	json_decref(j);
	migr_json_ascii("k\xc3\xa9y", buf, sizeof(buf));
	CHECK(!strcmp(buf, "k?y"));
}

/* The string a writer wrote, read back (NULL if the line is not JSON) */
static const char *read_back(const char *quoted, json_t **j)
{
	char line[4096];

	snprintf(line, sizeof(line), "{\"ok\":false,\"error\":%s}", quoted);
	*j = parse(line);
	/* the text never added keys: ok stays false */
	if (*j && (json_object_size(*j) != 2 || migr_json_true(*j, "ok")))
		return NULL;
	return json_string_value(json_object_get(*j, "error"));
}

/* ASCII, no control but DEL (which JSON does not escape) */
static bool printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || (unsigned char)*s > 0x7f)
			return false;
	return true;
}

static void round_trip(const char *s)
{
	char want[1024], buf[2048], *mem = NULL;
	struct sbuf sb = {};
	const char *got;
	size_t len = 0;
	json_t *j;
	FILE *f;

	as_read(s, want);
	/* migrd's */
	sb_json_str(&sb, s);
	got = read_back(sb.p, &j);
	CHECK(got && !strcmp(got, want) && printable(sb.p));
	json_decref(j);
	/* the library's, to a stream ... */
	f = open_memstream(&mem, &len);
	CHECK(f != NULL);
	if (f) {
		migr_json_str(f, s);
		fclose(f);
		CHECK(!strcmp(mem, sb.p));
		free(mem);
	}
	/* ... and into a buffer */
	migr_json_str_buf(buf, sizeof(buf), s);
	CHECK(!strcmp(buf, sb.p));
	sb_free(&sb);
}

static void test_write(void)
{
	char all[256], buf[64], want[64];
	struct sbuf sb = {};
	const char *got;
	size_t n, full;
	json_t *j;
	int i;

	/* the escapes, byte for byte */
	sb_json_str(&sb, "a\"b\\c/\n\t\x01\x1f\x7f\xe9");
	CHECK(sb.p && !strcmp(sb.p, "\"a\\\"b\\\\c/\\n\\t\\u0001\\u001F\x7f"
				    "\\u00E9\""));
	sb_free(&sb);
	sb_json_str(&sb, "");
	CHECK(sb.p && !strcmp(sb.p, "\"\""));
	sb_free(&sb);

	round_trip("");
	round_trip("plain text, 0x1f/2");
	round_trip("boom\",\"ok\":true,\"x\":\"\nsecond");
	round_trip("\\\"\\u0000\\");
	round_trip("\xc3\xa9 UTF-8 \xf0\x9f\x98\x80, and not: \xff\xc3\x9b");
	for (i = 1; i < 256; i++)
		all[i - 1] = i;
	all[255] = 0;
	round_trip(all);

	/* cut to fit: whole escapes, always a JSON string, a prefix */
	sb_json_str(&sb, "ab\"\ncd\xe9");
	full = sb.len;
	for (n = 0; n <= full + 1; n++) {
		memset(buf, 'X', sizeof(buf));
		migr_json_str_buf(buf, n, "ab\"\ncd\xe9");
		if (n < 3) {
			CHECK(!n || !buf[0]);
			continue;
		}
		CHECK(strlen(buf) < n);
		CHECK(n <= full ? strlen(buf) < full : !strcmp(buf, sb.p));
		got = read_back(buf, &j);
		as_read("ab\"\ncd\xe9", want);
		CHECK(got && !strncmp(got, want, strlen(got)));
		json_decref(j);
	}
	sb_free(&sb);
}

int main(void)
{
	test_syntax();
	test_bound();
	test_duplicates();
	test_nested();
	test_numbers();
	test_text();
	test_write();
	return unit_done("json");
}
