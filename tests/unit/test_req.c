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

int main(void)
{
	test_requests();
	test_json();
	return unit_done("req");
}
