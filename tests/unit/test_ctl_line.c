// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * common/: the control socket's lines (every writer's bytes, the reader's
 * bounds), its replies read by their keys, NSpid, who resumes
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_line.h"
#include "ctl_reply.h"
#include "ctl_resume.h"
#include "proc_ns.h"
#include "unit.h"

static char err[128];

static int parse(const char *s, struct ctl_req *q)
{
	static char buf[CTL_LINE_MAX + 64];
	size_t n = strlen(s);

	memcpy(buf, s, n + 1);
	return ctl_parse(buf, n, q, err, sizeof(err));
}

static int bad(const char *s)
{
	struct ctl_req q;

	return parse(s, &q) == -1 && err[0];
}

/* q formatted is exactly want (the bytes written before ctl_line) */
static int says(const struct ctl_req *q, const char *want)
{
	char line[CTL_LINE_MAX + 1];

	return ctl_format(q, line, sizeof(line)) == (int)strlen(want) &&
	       !strcmp(line, want);
}
#define SAYS(want, ...) says(&(struct ctl_req){ __VA_ARGS__ }, want)

static void test_writers(void)
{
	CHECK(SAYS("status\n", .op = CTL_STATUS));
	CHECK(SAYS("commit\n", .op = CTL_COMMIT));
	CHECK(SAYS("rebuild\n", .op = CTL_REBUILD));
	CHECK(SAYS("switch rxe1 2000\n", .op = CTL_SWITCH, .nargs = 2,
		   .dev = "rxe1", .wait_ms = 2000));
	CHECK(SAYS("park 5000 600000\n", .op = CTL_PARK, .nargs = 2,
		   .wait_ms = 5000, .lease_ms = 600000));
	CHECK(SAYS("resume\n", .op = CTL_RESUME));
	CHECK(SAYS("resume rxe0\n", .op = CTL_RESUME, .nargs = 1,
		   .dev = "rxe0"));
	CHECK(SAYS("resume rxe0 00000000deadbeef\n", .op = CTL_RESUME,
		   .nargs = 2, .dev = "rxe0", .token = 0xdeadbeef));
	CHECK(SAYS("fence 150000\n", .op = CTL_FENCE, .nargs = 1,
		   .wait_ms = 150000));
	CHECK(SAYS("partner fetch x 1\n", .op = CTL_PARTNER, .nargs = 1,
		   .line = "fetch x 1"));
	CHECK(SAYS("ud probe\n", .op = CTL_UD, .nargs = 1, .line = "probe"));
	/* what no reader could take back as it was meant */
	CHECK(!SAYS("", .op = CTL_SWITCH));
	CHECK(!SAYS("", .op = CTL_SWITCH, .nargs = 1, .dev = "rx e1"));
	CHECK(!SAYS("", .op = CTL_SWITCH, .nargs = 1, .dev = ""));
	CHECK(!SAYS("", .op = CTL_STATUS, .nargs = 1));
	CHECK(!SAYS("", .op = CTL_UD, .nargs = 1, .line = "a\nstatus"));
	CHECK(!SAYS("", .op = CTL_OPS));
}

static void test_reader(void)
{
	char dev[CTL_DEV_MAX + 16], line[CTL_DEV_MAX + 32];
	struct ctl_req q;

	CHECK(!parse("status\n", &q) && q.op == CTL_STATUS && !q.nargs);
	CHECK(!parse("switch rxe1\n", &q) && q.op == CTL_SWITCH &&
	      !strcmp(q.dev, "rxe1") && q.wait_ms == CTL_WAIT_DEFAULT_MS);
	CHECK(!parse("rebuild 7\n", &q) && q.wait_ms == 7 && !q.dev);
	CHECK(!parse("park\n", &q) && q.wait_ms == 5000 && !q.lease_ms);
	CHECK(!parse("park 1000 600000\n", &q) && q.lease_ms == 600000);
	CHECK(!parse("resume\n", &q) && !q.nargs && !q.dev && !q.token);
	CHECK(!parse("resume rxe1 0123456789abcdef\n", &q) &&
	      q.token == 0x0123456789abcdefULL && !strcmp(q.dev, "rxe1"));
	CHECK(!parse("fence 600000\n", &q) && q.wait_ms == 600000);
	CHECK(!parse("partner \n", &q) && q.op == CTL_PARTNER &&
	      !strcmp(q.line, ""));
	CHECK(!parse("ud moved a b c\n", &q) && !strcmp(q.line, "moved a b c"));
	/* the bounds, once */
	CHECK(bad("park 0\n") && bad("park 600001\n"));
	CHECK(bad("park 1000 600001\n") && bad("fence 0\n"));
	CHECK(bad("fence 600001\n") && bad("fence\n"));
	CHECK(bad("switch\n") && bad("switch rxe1 0\n"));
	CHECK(bad("switch rxe1 abc\n") && bad("switchrxe1\n"));
	CHECK(bad("switch rxe1 4295067296\n"));
	CHECK(bad("resume rxe1 0123456789abcdef0\n"));
	CHECK(bad("resume rxe1 XYZ\n") && bad("commit 1\n"));
	CHECK(bad("status") && bad("status \n") && bad("status\nstatus\n"));
	CHECK(bad("switch  rxe1\n") && bad("partner\n") && bad("x\n"));
	CHECK(bad("") && bad("\n"));
	memset(dev, 'a', CTL_DEV_MAX);
	dev[CTL_DEV_MAX] = 0;
	snprintf(line, sizeof(line), "switch %s\n", dev);
	CHECK(!parse(line, &q));
	snprintf(line, sizeof(line), "switch %sa\n", dev);
	CHECK(bad(line));
	/* a NUL inside: the line is what was sent, not a C string */
	memcpy(line, "status\n\0", 8);
	CHECK(ctl_parse(line, 6, &q, err, sizeof(err)) == -1);
	memcpy(line, "st\0tus\n", 7);
	CHECK(ctl_parse(line, 7, &q, err, sizeof(err)) == -1);
}

static void test_replies(void)
{
	const char *ok =
		"{\"pid\":1,\"park\":[{\"ok\":true,\"error\":\"\"}],\"ok\":true}";
	const char *no =
		"{\"pid\":1,\"switch\":[{\"ok\":false,\"error\":\"no rxe9\"}],\"ok\":false}";
	const char *own = "{\"ok\":false,\"error\":\"bad request\"}";
	const char *left =
		"{\"resume\":[{\"partner_error\":\"QP 0x11: gone\"}],\"ok\":true}";
	char e[64];

	CHECK(ctl_reply_valid(ok, strlen(ok)) && ctl_reply_ok(ok));
	CHECK(!ctl_reply_valid("{\"ok\":true,\"ok\":false}", 23));
	CHECK(!ctl_reply_ok("{\"ok\":true,\"ok\":true}"));
	CHECK(!ctl_reply_ok("{\"park\":[{\"ok\":true}]}"));
	CHECK(ctl_reply_verdict(ok, "park", e, sizeof(e)));
	CHECK(!ctl_reply_verdict(no, "switch", e, sizeof(e)) &&
	      !strcmp(e, "no rxe9"));
	CHECK(!ctl_reply_verdict(own, "park", e, sizeof(e)) &&
	      !strcmp(e, "bad request"));
	CHECK(!ctl_reply_verdict("{\"ok\":false}", "commit", e, sizeof(e)) &&
	      !strcmp(e, "commit failed"));
	CHECK(ctl_reply_first_error(no, "switch", e, sizeof(e)) &&
	      !strcmp(e, "no rxe9"));
	CHECK(!ctl_reply_first_error(ok, "park", e, sizeof(e)));
	CHECK(ctl_reply_reports(no, "switch") == 1 &&
	      !ctl_reply_reports(own, "switch"));
	CHECK(ctl_reply_partner_error(left, "resume", e, sizeof(e)) &&
	      !strcmp(e, "QP 0x11: gone"));
	CHECK(!ctl_reply_partner_error(ok, "park", e, sizeof(e)));
}

static void test_process(void)
{
	char line[80];
	int depth;

	CHECK(migr_nspid_parse("\t1234\t7\n", &depth) == 7 && depth == 2);
	CHECK(migr_nspid_parse("\t1234\n", &depth) == 1234 && depth == 1);
	CHECK(migr_nspid_parse("\tx\n", &depth) == -1 && !depth);
	CHECK(migr_nspid(getpid(), &depth) > 0 && depth >= 1);
	CHECK(migr_nspid(-5, &depth) == -1);
	unsetenv("MIGR_RESUME_BY");
	CHECK(ctl_resumer() == CTL_RESUMER_PLUGIN);
	CHECK(!putenv((char *)CTL_RESUME_BY_MIGRD_ENV));
	CHECK(ctl_resumer() == CTL_RESUMER_MIGRD);
	setenv("MIGR_RESUME_BY", "plugin", 1);
	CHECK(ctl_resumer() == CTL_RESUMER_PLUGIN);
	unsetenv("MIGR_RESUME_DEVICE");
	CHECK(ctl_resume_line(line, sizeof(line)) > 0 &&
	      !strcmp(line, "resume\n"));
	setenv("MIGR_RESUME_DEVICE", "rxe1", 1);
	CHECK(ctl_resume_line(line, sizeof(line)) > 0 &&
	      !strcmp(line, "resume rxe1\n"));
	setenv("MIGR_RESUME_DEVICE", "rxe1 0123456789abcdef", 1);
	CHECK(ctl_resume_line(line, sizeof(line)) > 0 &&
	      !strcmp(line, "resume\n"));
}

int main(void)
{
	test_writers();
	test_reader();
	test_replies();
	test_process();
	return unit_done("ctl_line");
}
