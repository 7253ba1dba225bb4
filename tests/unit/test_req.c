// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's request parser: bounds and malformed input */
#include <string.h>

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
	CHECK(refused("migrd/1 status 1 2 3 4 5 6 7 8\n", "too many"));
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

#define MID "0123456789abcdef"

static void test_migrate(void)
{
	char line[REQ_MAX + 2], tids[REQ_MAX];
	struct req r, r2;
	int i, n;

	CHECK(!parse("migrd/1 migrate 30000 10.9.0.2 - 2 5000\n", &r));
	CHECK(r.op == REQ_MIGRATE && r.pid == 30000 &&
	      !strcmp(r.host, "10.9.0.2") && !r.dev[0] && r.count == 2 &&
	      r.wait_ms == 5000);
	CHECK(req_format(&r, line, sizeof(line)) > 0 &&
	      !strcmp(line, "migrd/1 migrate 30000 10.9.0.2 - 2 5000\n"));
	CHECK(!parse("migrd/1 migrate 7 host-b rxe1 0 1\n", &r) &&
	      !strcmp(r.dev, "rxe1") && !r.count);
	CHECK(refused("migrd/1 migrate 7 host-b rxe1 17 1\n",
		      "pre-copy rounds '17'"));
	CHECK(refused("migrd/1 migrate 7 -x rxe1 0 1\n", "invalid host"));
	CHECK(refused("migrd/1 migrate 7 b ../x 0 1\n", "device name"));
	CHECK(refused("migrd/1 migrate 7 b rxe1 0 0\n", "invalid wait"));

	CHECK(!parse("migrd/1 mig-check " MID
		     " 30000 rxe0 4.1.1 30000,30001 host,-,-,-\n",
		     &r));
	CHECK(r.op == REQ_MIG_CHECK && !strcmp(r.id, MID) && r.pid == 30000 &&
	      !strcmp(r.dev, "rxe0") && !strcmp(r.version, "4.1.1") &&
	      !strcmp(r.line, "30000,30001"));
	CHECK(req_format(&r, line, sizeof(line)) > 0 && !parse(line, &r2) &&
	      !strcmp(r2.line, r.line) && !strcmp(r2.id, MID));
	CHECK(!r.ns.own_pidns && !r.ns.own_netns);
	/* a tree in its own pid and network namespaces */
	CHECK(!parse("migrd/1 mig-check " MID
		     " 9 rxe0 4.1.1 9 own,eth1,02:00:0a:09:00:32,10.9.0.50/24\n",
		     &r));
	CHECK(r.ns.own_pidns && r.ns.own_netns &&
	      !strcmp(r.ns.ifname, "eth1") &&
	      !strcmp(r.ns.mac, "02:00:0a:09:00:32") &&
	      !strcmp(r.ns.addr, "10.9.0.50") && r.ns.prefix == 24);
	CHECK(req_format(&r, line, sizeof(line)) > 0 &&
	      strstr(line, " own,eth1,02:00:0a:09:00:32,10.9.0.50/24 9\n") &&
	      !parse(line, &r2) && r2.ns.own_netns && r2.ns.prefix == 24);
	CHECK(!parse("migrd/1 mig-check " MID " 9 rxe0 4.1.1 9 own,-,-,-\n",
		     &r) &&
	      r.ns.own_pidns && !r.ns.own_netns);
	CHECK(refused("migrd/1 mig-check " MID " 9 rxe0 4.1.1 9\n",
		      "arguments"));
	CHECK(refused("migrd/1 mig-check " MID " 9 r 4 9 mine,-,-,-\n",
		      "pid namespace"));
	CHECK(refused("migrd/1 mig-check " MID " 9 r 4 9 own,-,-\n",
		      "namespaces"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 9 r 4 9 own,e/1,02:00:0a:09:00:32,1.2.3.4/8\n",
		      "interface name"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 9 r 4 9 own,e,02:00:0A:09:00:32,1.2.3.4/8\n",
		      "MAC address"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 9 r 4 9 own,e,02:00:0a:09:00:32,1.2.3/8\n",
		      "invalid address"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 9 r 4 9 own,e,02:00:0a:09:00:32,1.2.3.4/33\n",
		      "invalid address"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 9 r 4 9 own,e,02:00:0a:09:00:32,1.2.3.4\n",
		      "ADDR/PREFIX"));
	CHECK(refused("migrd/1 mig-check " MID " 9 r 4 9 own,e,-,-\n",
		      "MAC address"));
	CHECK(refused("migrd/1 mig-check 0123 1 rxe0 4.1.1 1 host,-,-,-\n",
		      "migration id"));
	CHECK(refused(
		"migrd/1 mig-check 0123456789ABCDEF 1 rxe0 4.1.1 1 host,-,-,-\n",
		"migration id"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 1 rxe0 4.1.1 1,,2 host,-,-,-\n",
		      "thread id list"));
	CHECK(refused("migrd/1 mig-check " MID
		      " 1 rxe0 4.1.1 1,-2 host,-,-,-\n",
		      "thread id list"));
	/* the tree's migr processes: the root alone unless named */
	CHECK(!parse("migrd/1 mig-check " MID " 9 rxe0 4.1.1 9 own,-,-,-\n",
		     &r) &&
	      r.nmovers == 1 && r.movers[0] == 9);
	CHECK(!parse("migrd/1 mig-check " MID
		     " 1 rxe0 4.1.1 1,5,7 own,-,-,- 5,7\n",
		     &r) &&
	      r.nmovers == 2 && r.movers[0] == 5 && r.movers[1] == 7);
	CHECK(req_format(&r, line, sizeof(line)) > 0 &&
	      strstr(line, " own,-,-,- 5,7\n") && !parse(line, &r2) &&
	      r2.nmovers == 2 && r2.movers[1] == 7);
	CHECK(refused("migrd/1 mig-check " MID " 1 r 4 1 own,-,-,- 5,,7\n",
		      "migr process list"));
	CHECK(refused("migrd/1 mig-check " MID " 1 r 4 1 own,-,-,- 0\n",
		      "migr process list"));
	CHECK(refused(
		"migrd/1 mig-check " MID
		" 1 r 4 1 own,-,-,- 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\n",
		"at most 16"));
	CHECK(refused("migrd/1 mig-check " MID " 1 r 4 1 own,-,-,- 5 6\n",
		      "too many words"));
	/* at most REQ_MIG_TIDS_MAX thread ids */
	for (i = n = 0; i <= REQ_MIG_TIDS_MAX; i++)
		n += snprintf(tids + n, sizeof(tids) - n, "%s%d", i ? "," : "",
			      i + 1);
	snprintf(line, sizeof(line),
		 "migrd/1 mig-check " MID " 1 r 4 %s host,-,-,-\n", tids);
	CHECK(refused(line, "thread id list"));

	CHECK(!parse("migrd/1 mig-put " MID " pre-1\n", &r) &&
	      r.op == REQ_MIG_PUT && !strcmp(r.name, "pre-1"));
	CHECK(refused("migrd/1 mig-put " MID " ..\n", "image directory"));
	CHECK(refused("migrd/1 mig-put " MID " a/b\n", "image directory"));
	CHECK(!parse("migrd/1 mig-restore " MID " rxe1\n", &r) &&
	      r.op == REQ_MIG_RESTORE && !strcmp(r.dev, "rxe1"));
	CHECK(!parse("migrd/1 mig-end " MID " commit\n", &r) &&
	      r.op == REQ_MIG_END && !strcmp(r.line, "commit"));
	CHECK(refused("migrd/1 mig-end " MID " kill\n", "invalid mig-end"));
}

#define G32 "fe800000000000000000000000000001"

/* mig-grants: partner grants moving with their asker, read strictly */
static void test_grants(void)
{
	struct req_grant g = {
		.ppid = 77, .qpn = 0xabc, .gid = G32, .host = "10.9.0.2"
	};
	char line[REQ_MAX], one[REQ_GRANT_TEXT_MAX + 1];
	struct req r, r2;
	const char *p;

	CHECK(!parse("migrd/1 mig-grants " MID " 77/abc/" G32
		     "/10.9.0.2,78/1/" G32 "/-\n",
		     &r));
	CHECK(r.op == REQ_MIG_GRANTS && !strcmp(r.id, MID));
	p = r.line;
	CHECK(req_grant_next(&p, &g) == 1 && g.ppid == 77 && g.qpn == 0xabc &&
	      !strcmp(g.gid, G32) && !strcmp(g.host, "10.9.0.2"));
	CHECK(req_grant_next(&p, &g) == 1 && g.ppid == 78 && g.qpn == 1 &&
	      !g.host[0]);
	CHECK(req_grant_next(&p, &g) == 0);
	CHECK(req_format(&r, line, sizeof(line)) > 0 && !parse(line, &r2) &&
	      !strcmp(r2.line, r.line));
	/* formatted as read, the longest entry within REQ_GRANT_TEXT_MAX */
	g.ppid = REQ_PID_MAX;
	g.qpn = 0xffffff;
	strcpy(g.host, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255");
	CHECK(req_grant_format(&g, one, sizeof(one)) > 0);
	p = one;
	CHECK(req_grant_next(&p, &g) == 1 && g.qpn == 0xffffff &&
	      g.ppid == REQ_PID_MAX);
	/* with its owner, one of the tree's migr processes */
	CHECK(!parse("migrd/1 mig-grants " MID " 77/abc/" G32 "/-/12,78/1/" G32
		     "/-\n",
		     &r));
	p = r.line;
	CHECK(req_grant_next(&p, &g) == 1 && g.owner == 12 && !g.host[0]);
	CHECK(req_grant_next(&p, &g) == 1 && g.owner == 0 && g.ppid == 78);
	g.owner = REQ_PID_MAX;
	strcpy(g.host, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255");
	g.ppid = REQ_PID_MAX;
	CHECK(req_grant_format(&g, one, sizeof(one)) > 0);
	p = one;
	CHECK(req_grant_next(&p, &g) == 1 && g.owner == REQ_PID_MAX);
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/" G32 "/-/0\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/" G32 "/-/1/2\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 0/1/" G32 "/-\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1000000/" G32 "/-\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/" G32 "/host.example\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/FE80/-\n", "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/" G32 "/-/x\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/" G32 "/-,\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " ,1/1/" G32 "/-\n",
		      "grant list"));
	CHECK(refused("migrd/1 mig-grants " MID " 1/1/" G32 "\n",
		      "grant list"));
}

/* mig-hold: numbers to hold on the destination, hex, at most REQ_HOLD_MAX */
static void test_hold(void)
{
	char line[REQ_MAX], many[REQ_HOLD_MAX * 9 + 64];
	struct req r, r2;
	const char *p;
	uint32_t v;
	int i, n;

	CHECK(!parse("migrd/1 mig-hold " MID " qpn 11,ffffff,12\n", &r));
	CHECK(r.op == REQ_MIG_HOLD && !strcmp(r.id, MID) &&
	      !strcmp(r.name, "qpn"));
	p = r.line;
	CHECK(req_hold_next(&p, &v) == 1 && v == 0x11);
	CHECK(req_hold_next(&p, &v) == 1 && v == 0xffffff);
	CHECK(req_hold_next(&p, &v) == 1 && v == 0x12);
	CHECK(req_hold_next(&p, &v) == 0);
	CHECK(req_format(&r, line, sizeof(line)) > 0 && !parse(line, &r2) &&
	      !strcmp(r2.line, r.line) && !strcmp(r2.name, "qpn"));
	CHECK(!parse("migrd/1 mig-hold " MID " mr ffffffff\n", &r) &&
	      !strcmp(r.name, "mr"));
	/* REQ_HOLD_MAX of the longest fit one request; one more does not */
	n = snprintf(many, sizeof(many), "migrd/1 mig-hold " MID " mr ");
	for (i = 0; i < REQ_HOLD_MAX; i++)
		n += snprintf(many + n, sizeof(many) - n, "%sffffff%02x",
			      i ? "," : "", i & 0xff);
	snprintf(many + n, sizeof(many) - n, "\n");
	CHECK(!parse(many, &r) && req_format(&r, line, sizeof(line)) > 0);
	snprintf(many + n, sizeof(many) - n, ",1\n");
	CHECK(refused(many, "number list"));
	CHECK(!parse("migrd/1 mig-hold " MID " mw 1234501\n", &r) &&
	      req_hold_kind(r.name) == REQ_HOLD_MW);
	CHECK(req_hold_kind("qpn") == REQ_HOLD_QPN &&
	      req_hold_kind("mr") == REQ_HOLD_MR && req_hold_kind("MW") < 0);
	CHECK(refused("migrd/1 mig-hold " MID " ah 11\n", "kind"));
	CHECK(refused("migrd/1 mig-hold " MID " qpn 0\n", "number list"));
	CHECK(refused("migrd/1 mig-hold " MID " qpn 100000000\n",
		      "number list"));
	CHECK(refused("migrd/1 mig-hold " MID " qpn 11,\n", "number list"));
	CHECK(refused("migrd/1 mig-hold " MID " qpn ,11\n", "number list"));
	CHECK(refused("migrd/1 mig-hold " MID " qpn 1G\n", "number list"));
	CHECK(refused("migrd/1 mig-hold " MID " qpn 0x11\n", "number list"));
}

int main(void)
{
	test_requests();
	test_partner();
	test_udpeers();
	test_migrate();
	test_grants();
	test_hold();
	return unit_done("req");
}
