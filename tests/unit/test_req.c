// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's request parser and JSON reader: bounds and malformed input */
#include <string.h>

#include "json.h"
#include "req.h"
#include "unit.h"

static char err[256];

static int parse(const char *s, struct req *r)
{
	return req_parse(s, strlen(s), r, err, sizeof(err));
}

static int refused(const char *s, const char *why)
{
	struct req r;

	return parse(s, &r) == -1 && strstr(err, why) != NULL;
}

static void test_requests(void)
{
	char line[REQ_MAX + 2];
	struct req r, r2;

	CHECK(!parse("migrd/1 status\n", &r) && r.op == REQ_STATUS && !r.pid);
	CHECK(!parse("migrd/1 status 42\n", &r) && r.pid == 42);
	CHECK(!parse("migrd/1 switch 7 rxe1 2000\n", &r));
	CHECK(r.op == REQ_SWITCH && r.pid == 7 && !strcmp(r.dev, "rxe1") &&
	      r.wait_ms == 2000);
	CHECK(!parse("migrd/1 qpn-owner - rxe0 17\n", &r));
	CHECK(r.op == REQ_QPN_OWNER && !r.host[0] && r.qpn == 17);
	CHECK(!parse("migrd/1 qpn-owner 10.9.0.2 rxe0 16777215\n", &r));
	CHECK(!strcmp(r.host, "10.9.0.2") && r.qpn == 0xffffff);
	CHECK(!parse("migrd/1 register migr_rxe0\n", &r) &&
	      r.op == REQ_REGISTER);
	CHECK(!parse("migrd/1 hello\n", &r) && r.op == REQ_HELLO);
	CHECK(!parse("migrd/1 peer-ping host-b\n", &r));

	/* format and parse agree */
	r.op = REQ_SWITCH, r.pid = 99, r.wait_ms = 5, strcpy(r.dev, "rxe0");
	CHECK(req_format(&r, line, sizeof(line)) > 0);
	CHECK(!parse(line, &r2) && r2.pid == 99 && r2.wait_ms == 5);

	/* malformed */
	CHECK(refused("migrd/1 status", "truncated"));
	CHECK(refused("", "truncated"));
	CHECK(refused("\n", "empty"));
	CHECK(refused("migrd/1\n", "empty"));
	CHECK(refused("hello there\n", "not a migrd request"));
	CHECK(refused("migrd/2 hello\n", "version '2'"));
	CHECK(refused("migrd/1 frobnicate\n", "unknown request 'frobnicate'"));
	CHECK(refused("migrd/1 switch 7 rxe1\n", "wrong number"));
	CHECK(refused("migrd/1 hello x\n", "wrong number"));
	CHECK(refused("migrd/1 status 1 2 3 4 5 6\n", "too many"));
	CHECK(refused("migrd/1 status abc\n", "invalid pid 'abc'"));
	CHECK(refused("migrd/1 status -1\n", "invalid pid"));
	CHECK(refused("migrd/1 status 0\n", "invalid pid"));
	CHECK(refused("migrd/1 status 99999999999999999999\n", "invalid pid"));
	CHECK(refused("migrd/1 status 12x\n", "invalid pid"));
	CHECK(refused("migrd/1 switch 7 rx/e1 10\n", "invalid device name"));
	CHECK(refused("migrd/1 switch 7 rxe1 0\n", "invalid wait"));
	CHECK(refused("migrd/1 switch 7 rxe1 600001\n", "invalid wait"));
	CHECK(refused("migrd/1 qpn-owner - rxe0 16777216\n", "invalid qpn"));
	CHECK(refused("migrd/1 qpn-owner a;b rxe0 1\n", "invalid host"));
	CHECK(refused("migrd/1 status\t1\n", "control"));
	CHECK(refused("migrd/1 st\x01tus\n", "control"));
	CHECK(refused("migrd/1 status\n\n", "control"));
	CHECK(refused("migrd/1 st\xc3\xa4tus\n", "non-ASCII"));

	/* oversize: the bound, one over it, a long device name */
	memset(line, 'a', sizeof(line));
	memcpy(line, "migrd/1 register ", 17);
	line[REQ_MAX] = '\n';
	CHECK(req_parse(line, REQ_MAX + 1, &r, err, sizeof(err)) == -1);
	CHECK(strstr(err, "longer") != NULL);
	line[REQ_MAX - 1] = '\n';
	CHECK(req_parse(line, REQ_MAX, &r, err, sizeof(err)) == -1);
	CHECK(strstr(err, "invalid device name") != NULL);
	line[17 + REQ_NAME_MAX] = '\n'; /* a name of REQ_NAME_MAX bytes */
	CHECK(req_parse(line, 17 + REQ_NAME_MAX + 1, &r, err, sizeof(err)) ==
	      -1);
	line[17 + REQ_NAME_MAX - 1] = '\n'; /* one less fits */
	CHECK(!req_parse(line, 17 + REQ_NAME_MAX, &r, err, sizeof(err)));
}

#define GID "fe800000000000000200000000000001"

static void test_partner(void)
{
	char line[REQ_MAX + 2], big[REQ_MAX + 2];
	struct req r, r2;
	int n;

	CHECK(!parse("migrd/1 partner - 0 17 " GID " suspend 17 4\n", &r));
	CHECK(r.op == REQ_PARTNER && !r.host[0] && !r.pid && r.qpn == 17 &&
	      !strcmp(r.gid, GID) && !strcmp(r.line, "suspend 17 4"));
	CHECK(!parse("migrd/1 partner 10.9.0.2 4242 16777215 " GID " x\n", &r));
	CHECK(!strcmp(r.host, "10.9.0.2") && r.pid == 4242 &&
	      r.qpn == 0xffffff && !strcmp(r.line, "x"));
	CHECK(!parse("migrd/1 partner fd00::2 0 1 " GID " x\n", &r) &&
	      !strcmp(r.host, "fd00::2"));
	CHECK(!parse("migrd/1 partner ::ffff:10.9.0.2 0 1 " GID " x\n", &r));
	/* the line is the rest, verbatim: its own spaces, any word count */
	CHECK(!parse("migrd/1 partner - 0 1 " GID
		     " a b  c,d:e.f_g-h 1 2 3 4 5 6 7 8 9 \n",
		     &r));
	CHECK(!strcmp(r.line, "a b  c,d:e.f_g-h 1 2 3 4 5 6 7 8 9 "));
	/* words before the line may be spaced out, as elsewhere */
	CHECK(!parse("migrd/1  partner  -  0  1  " GID " x y\n", &r) &&
	      !strcmp(r.line, "x y"));

	/* format and parse agree */
	memset(&r, 0, sizeof(r));
	r.op = REQ_PARTNER, r.pid = 7, r.qpn = 99;
	strcpy(r.host, "fd00::1"), strcpy(r.gid, GID);
	strcpy(r.line, "reconnect 99 a:b,c");
	n = req_format(&r, line, sizeof(line));
	CHECK(n > 0 && !strcmp(line, "migrd/1 partner fd00::1 7 99 " GID
				     " reconnect 99 a:b,c\n"));
	CHECK(!parse(line, &r2) && r2.pid == 7 && r2.qpn == 99 &&
	      !strcmp(r2.host, "fd00::1") && !strcmp(r2.line, r.line));
	r.host[0] = 0;
	CHECK(req_format(&r, line, sizeof(line)) > 0 &&
	      !strncmp(line, "migrd/1 partner - 7 ", 20));
	CHECK(req_format(&r, line, 20) == -1);

	/* malformed */
	CHECK(refused("migrd/1 partner - 0 17\n", "wrong number"));
	CHECK(refused("migrd/1 partner - 0 17 " GID "\n", "without a line"));
	CHECK(refused("migrd/1 partner - 0 17 " GID " \n", "without a line"));
	CHECK(refused("migrd/1 partner - 0 17 " GID "  x\n", "without a line"));
	CHECK(refused("migrd/1 partner host-b 0 17 " GID " x\n",
		      "invalid host 'host-b'"));
	CHECK(refused("migrd/1 partner 10.9.0.256 0 17 " GID " x\n",
		      "invalid host"));
	CHECK(refused("migrd/1 partner fe80::1%eth0 0 17 " GID " x\n",
		      "invalid host"));
	CHECK(refused("migrd/1 partner -- 0 17 " GID " x\n", "invalid host"));
	CHECK(refused("migrd/1 partner - -1 17 " GID " x\n", "invalid pid"));
	CHECK(refused("migrd/1 partner - 4194305 17 " GID " x\n",
		      "invalid pid"));
	CHECK(refused("migrd/1 partner - 0 16777216 " GID " x\n",
		      "invalid qpn"));
	CHECK(refused("migrd/1 partner - 0 0x11 " GID " x\n", "invalid qpn"));
	CHECK(refused("migrd/1 partner - 0 17 FE800000000000000200000000000001"
		      " x\n",
		      "invalid gid"));
	CHECK(refused("migrd/1 partner - 0 17 fe80000000000000020000000000001"
		      " x\n",
		      "invalid gid"));
	CHECK(refused("migrd/1 partner - 0 17 fe80:0000:0000:0000:0200:0000:"
		      "0000:0001 x\n",
		      "invalid gid"));
	CHECK(refused("migrd/1 partner - 0 17 " GID " a;b\n", "character"));
	CHECK(refused("migrd/1 partner - 0 17 " GID " a\"b\n", "character"));
	CHECK(refused("migrd/1 partner - 0 17 " GID " a/b\n", "character"));
	CHECK(refused("migrd/1 partner - 0 17 " GID " a\tb\n", "control"));
	/* the line is not echoed back */
	CHECK(refused("migrd/1 partner - 0 17 " GID " secret;\n",
		      "character") &&
	      !strstr(err, "secret"));

	/* the line's bound: REQ_PARTNER_LINE_MAX bytes, not one more */
	n = snprintf(big, sizeof(big), "migrd/1 partner - 0 17 " GID " ");
	memset(big + n, 'a', REQ_PARTNER_LINE_MAX);
	strcpy(big + n + REQ_PARTNER_LINE_MAX, "\n");
	CHECK(!parse(big, &r) && strlen(r.line) == REQ_PARTNER_LINE_MAX);
	strcpy(big + n + REQ_PARTNER_LINE_MAX, "a\n");
	CHECK(refused(big, "longer than 3800"));
	/* the longest relayable request still fits REQ_MAX */
	n = snprintf(big, sizeof(big),
		     "migrd/1 partner ffff:ffff:ffff:ffff:ffff:ffff:"
		     "255.255.255.255 4194304 16777215 " GID " ");
	memset(big + n, 'a', REQ_PARTNER_LINE_MAX);
	strcpy(big + n + REQ_PARTNER_LINE_MAX, "\n");
	CHECK(strlen(big) <= REQ_MAX && !parse(big, &r));
	/* the whole line is bounded before any word is looked at */
	memset(big + n, 'a', REQ_MAX + 1 - n);
	big[REQ_MAX] = '\n';
	big[REQ_MAX + 1] = 0;
	CHECK(refused(big, "longer than 4096"));
}

/* The UD relay: a host or "-", then a line of its own */
static void test_udpeers(void)
{
	char line[REQ_MAX + 1];
	struct req r;
	int n;

	CHECK(!parse("migrd/1 udpeers - probe\n", &r) && r.op == REQ_UDPEERS &&
	      !r.host[0] && !strcmp(r.line, "probe"));
	CHECK(!parse("migrd/1 udpeers 10.9.0.2 moved " GID " " GID
		     " 11:12:11,13:14:13\n",
		     &r) &&
	      !strcmp(r.host, "10.9.0.2") &&
	      !strcmp(r.line, "moved " GID " " GID " 11:12:11,13:14:13"));
	n = req_format(&r, line, sizeof(line));
	CHECK(n > 0 && !strcmp(line, "migrd/1 udpeers 10.9.0.2 moved " GID
				     " " GID " 11:12:11,13:14:13\n"));
	r.host[0] = 0;
	n = req_format(&r, line, sizeof(line));
	CHECK(n > 0 && !strncmp(line, "migrd/1 udpeers - moved ", 24));
	CHECK(refused("migrd/1 udpeers\n", "wrong number"));
	CHECK(refused("migrd/1 udpeers -\n", "without a line"));
	CHECK(refused("migrd/1 udpeers - \n", "without a line"));
	CHECK(refused("migrd/1 udpeers host-b probe\n", "invalid host"));
	CHECK(refused("migrd/1 udpeers - probe;rm\n", "character"));
	CHECK(refused("migrd/1 udpeers - secret/\n", "character") &&
	      !strstr(err, "secret"));
}

static int json_ok(const char *s)
{
	struct json_tok t[64];
	struct json j;

	return !json_parse(&j, s, strlen(s), t, 64);
}

static void test_json(void)
{
	const char *s =
		"{\"pid\":12,\"ok\":true,\"e\":\"a\\\"b\\n\",\"l\":[1,-2.5e3,"
		"{\"x\":null}],\"o\":{},\"f\":false}";
	struct json_tok t[64];
	struct json j;
	char buf[16];
	int l;

	CHECK(!json_parse(&j, s, strlen(s), t, 64));
	CHECK(json_num(&j, json_get(&j, 0, "pid"), 0) == 12);
	CHECK(json_bool(&j, json_get(&j, 0, "ok"), false));
	CHECK(!json_bool(&j, json_get(&j, 0, "f"), true));
	CHECK(json_str(&j, json_get(&j, 0, "e"), buf, sizeof(buf)) &&
	      !strcmp(buf, "a\"b\n"));
	l = json_get(&j, 0, "l");
	CHECK(json_num(&j, json_at(&j, l, 1), 0) == -2500);
	CHECK(json_get(&j, json_at(&j, l, 2), "x") >= 0);
	CHECK(json_at(&j, l, 3) == -1);
	CHECK(json_get(&j, 0, "missing") == -1);
	CHECK(json_get(&j, 0, "f") >= 0); /* after a nested value */
	CHECK(json_key_at(&j, 0, 5) >= 0 && json_key_at(&j, 0, 6) == -1);
	/* a short copy is cut, never overrun */
	CHECK(json_str(&j, json_get(&j, 0, "e"), buf, 2) && !strcmp(buf, "a"));

	CHECK(json_ok(" [ ] \n"));
	CHECK(!json_ok(""));
	CHECK(!json_ok("{"));
	CHECK(!json_ok("{\"a\":1"));
	CHECK(!json_ok("{\"a\":1,}"));
	CHECK(!json_ok("[1,]"));
	CHECK(!json_ok("{\"a\" 1}"));
	CHECK(!json_ok("{1:2}"));
	CHECK(!json_ok("\"abc"));
	CHECK(!json_ok("\"a\\qb\""));
	CHECK(!json_ok("\"a\\u12\""));
	CHECK(!json_ok("\"tab\there\""));
	CHECK(!json_ok("01"));
	CHECK(!json_ok("1."));
	CHECK(!json_ok("-"));
	CHECK(!json_ok("tru"));
	CHECK(!json_ok("{} {}"));
	CHECK(!json_ok("[1] x"));
	/* depth and token bounds */
	CHECK(json_ok(
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"));
	CHECK(!json_ok(
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"));
	CHECK(json_parse(&j, "[1,2,3]", 7, t, 3) == -1);
	CHECK(json_parse(&j, "[1,2,3]", 7, t, 4) == 0);
	/* a truncated buffer is not read past its length */
	CHECK(json_parse(&j, "{\"a\":1}", 6, t, 64) == -1);
	CHECK(json_parse(&j, "true", 3, t, 64) == -1);
}

/*
 * A key named twice: readers differ on which counts, so a process could
 * show migrd one "ok" and migrctl another. The whole text is refused.
 */
static void test_json_dup(void)
{
	char big[4096];
	int n, k;

	CHECK(!json_ok("{\"ok\":false,\"ok\":true}"));
	CHECK(!json_ok("{\"ok\":true,\"e\":1,\"ok\":true}"));
	CHECK(!json_ok("{\"a\":1,\"b\":2,\"a\":1}"));
	/* nested, in an object or in an array */
	CHECK(!json_ok("{\"v\":1,\"reply\":{\"ok\":false,\"ok\":true}}"));
	CHECK(!json_ok("{\"v\":1,\"reply\":{\"switch\":[{\"ok\":false,"
		       "\"device\":\"m\",\"ok\":true}]}}"));
	CHECK(!json_ok("[{},{\"x\":{\"y\":[{\"z\":1,\"z\":2}]}}]"));
	/* the same key spelt with escapes is the same key */
	CHECK(!json_ok("{\"ok\":false,\"o\\u006b\":true}"));
	CHECK(!json_ok("{\"\\u00e9\":1,\"\xc3\xa9\":2}"));
	CHECK(!json_ok("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}"));
	CHECK(!json_ok("{\"a\\/b\":1,\"a/b\":2}"));
	/* the same key in different objects is fine, as are near misses */
	CHECK(json_ok("{\"ok\":true,\"reply\":{\"ok\":true}}"));
	CHECK(json_ok("{\"ok\":true,\"ok \":true,\"o\":1,\"OK\":1}"));
	CHECK(json_ok("[{\"ok\":true},{\"ok\":false}]"));
	CHECK(json_ok("{\"\\u00e9\":1,\"\\u00e8\":2}"));

	/* and an escaped key is found by its plain name */
	{
		const char *s = "{\"o\\u006b\":true}";
		struct json_tok t[8];
		struct json j;

		CHECK(!json_parse(&j, s, strlen(s), t, 8) &&
		      json_bool(&j, json_get(&j, 0, "ok"), false));
	}

	/* many keys (sorted, not compared pairwise): the last one repeats */
	n = snprintf(big, sizeof(big), "{");
	for (k = 0; k < 300; k++)
		n += snprintf(big + n, sizeof(big) - n, "\"k%d\":%d,", k, k);
	snprintf(big + n, sizeof(big) - n, "\"k%d\":0}", 299);
	{
		struct json_tok t[1024];
		struct json j;

		CHECK(json_parse(&j, big, strlen(big), t, 1024) == -1);
		snprintf(big + n, sizeof(big) - n, "\"k%d\":0}", 300);
		CHECK(json_parse(&j, big, strlen(big), t, 1024) == 0);
		CHECK(json_num(&j, json_get(&j, 0, "k300"), -1) == 0 &&
		      json_num(&j, json_get(&j, 0, "k7"), -1) == 7);
	}
}

/* Integers as show.c and migrctl.c cast them: in range, or the default */
static void test_json_int(void)
{
	const char *s =
		"{\"a\":12,\"neg\":-3,\"big\":1e300,\"huge\":1e999,"
		"\"frac\":2.5,\"exp\":1.5e2,\"u32\":4294967295,"
		"\"u33\":4294967296,\"s\":\"7\",\"t\":true,"
		"\"ll\":9223372036854775807,\"nll\":-9223372036854775808,"
		"\"n\":-0}";
	struct json_tok t[64];
	struct json j;

	CHECK(!json_parse(&j, s, strlen(s), t, 64));
	CHECK(json_int(&j, json_get(&j, 0, "a"), 0, 100, -1) == 12);
	CHECK(json_int(&j, json_get(&j, 0, "a"), 0, 11, -1) == -1);
	CHECK(json_int(&j, json_get(&j, 0, "a"), 13, 100, -1) == -1);
	CHECK(json_int(&j, json_get(&j, 0, "a"), 12, 12, -1) == 12);
	CHECK(json_int(&j, json_get(&j, 0, "neg"), 0, 100, 5) == 5);
	CHECK(json_int(&j, json_get(&j, 0, "neg"), -3, 100, 5) == -3);
	CHECK(json_int(&j, json_get(&j, 0, "big"), 0, 0xffffffff, 9) == 9);
	CHECK(json_int(&j, json_get(&j, 0, "huge"), 0, 0xffffffff, 9) == 9);
	CHECK(json_int(&j, json_get(&j, 0, "frac"), 0, 100, 9) == 9);
	CHECK(json_int(&j, json_get(&j, 0, "exp"), 0, 1000, 9) == 150);
	CHECK(json_int(&j, json_get(&j, 0, "u32"), 0, 0xffffffff, 9) ==
	      0xffffffff);
	CHECK(json_int(&j, json_get(&j, 0, "u33"), 0, 0xffffffff, 9) == 9);
	CHECK(json_int(&j, json_get(&j, 0, "s"), 0, 100, 9) == 9);
	CHECK(json_int(&j, json_get(&j, 0, "t"), 0, 100, 9) == 9);
	CHECK(json_int(&j, json_get(&j, 0, "missing"), 0, 100, 9) == 9);
	CHECK(json_int(&j, -1, 0, 100, 9) == 9);
	/* 2^63 is past long long: the default, not a wrapped cast */
	CHECK(json_int(&j, json_get(&j, 0, "ll"), 0, 0x7fffffffffffffffLL, 9) ==
	      9);
	CHECK(json_int(&j, json_get(&j, 0, "nll"), -0x7fffffffffffffffLL - 1, 0,
		       9) == -0x7fffffffffffffffLL - 1);
	CHECK(json_int(&j, json_get(&j, 0, "n"), 0, 1, 9) == 0);
	/* a number that ends the buffer is read no further */
	CHECK(!json_parse(&j, "125", 2, t, 64) &&
	      json_int(&j, 0, 0, 1000, -1) == 12);
}

int main(void)
{
	test_requests();
	test_partner();
	test_udpeers();
	test_json();
	test_json_dup();
	test_json_int();
	return unit_done("req");
}
