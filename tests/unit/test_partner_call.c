// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The library's side of the partner protocol (partner_call.c, the steps in
 * partner_steps.c) reading
 * migrd's replies: a stand-in migrd answers each step with a canned line.
 * What counts is where a value is: migrd's verdict at the top, the
 * process's busy in its reply, each QP's answer in its own result; a key
 * named twice refuses the line.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "marker.h"
#include "partner_call.h"
#include "partner_steps.h"
#include "peer.h"
#include "replay.h"
#include "unit.h"
#include "unit_migrd.h"
#include "verbs.h"

/* What the partner steps need of the rest of the library, stood in for */
int migr_marker_target(struct migr_qp *mqp, struct migr_marker_target *t)
{
	memset(t, 0, sizeof(*t));
	return 0;
}

int migr_peer_tie(struct migr_qp *mqp, uint64_t id)
{
	return 0;
}

void migr_replay_peer_of(const struct migr_qp *mqp, struct migr_replay_peer *me)
{
	memset(me, 0, sizeof(*me));
}

/* The context's rkeys, as the give step sends them: npairs of them */
static unsigned int npairs;

unsigned int migr_rkey_pairs(struct migr_context *ctx, unsigned int start,
			     unsigned int max, char *out)
{
	unsigned int k = 0;
	size_t len = 0;

	out[0] = 0;
	for (; start + k < npairs && k < max; k++)
		len += sprintf(out + len, "%s%08x:%08x", k ? "," : "",
			       start + k, start + k);
	return k;
}

void migr_qp_update_slow(struct migr_qp *mqp)
{
}

struct migr_xlate *migr_peer_tables(struct migr_context *ctx, uint64_t id)
{
	return NULL;
}

/* The stand-in migrd: one canned reply per connection, the request kept */
static const char *answer;
static char asked[4096];
static int lfd;

static void *serve(void *arg)
{
	int fd;
	ssize_t n;

	while ((fd = accept(lfd, NULL, NULL)) >= 0) {
		n = read(fd, asked, sizeof(asked) - 1);
		asked[n > 0 ? n : 0] = 0;
		if (write(fd, answer, strlen(answer)) < 0)
			perror("write");
		close(fd);
	}
	return NULL;
}

static int fake_migrd(char *path, size_t size)
{
	char dir[] = "/tmp/test_partner_call.XXXXXX";
	pthread_t t;

	lfd = unit_migrd_listen(dir, path, size);
	if (lfd < 0)
		return -1;
	return pthread_create(&t, NULL, serve, NULL) ? -1 : 0;
}

static struct migr_context ctx;
static struct ibv_qp lower;
static struct migr_qp mqp = { .ctx = &ctx, .lower = &lower };
static char err[512];

static void partner(struct migr_partner *p)
{
	memset(p, 0, sizeof(*p));
	p->mqp = &mqp;
	p->qpn = 0x11;
	snprintf(p->host, sizeof(p->host), "10.0.0.2");
	/* ::ffff:10.0.0.2 */
	p->gid.raw[10] = p->gid.raw[11] = 0xff;
	p->gid.raw[12] = 10;
	p->gid.raw[15] = 2;
}

/* One suspend step answered with reply; its return, p as it left it */
static int suspend(const char *reply, struct migr_partner *p)
{
	partner(p);
	answer = reply;
	err[0] = 0;
	return migr_partners_suspend(p, 1, 100, err, sizeof(err));
}

#define WRAP(proc) "{\"v\":1,\"ok\":true,\"pid\":7,\"reply\":" proc "}\n"

static void test_suspend(void)
{
	struct migr_partner p;

	/* an answer: its count and pid taken */
	CHECK(suspend(WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
			   "\"consumers\":5,\"undrained\":true}]}"),
		      &p) == 0);
	CHECK(p.suspended && p.consumers == 5 && p.undrained && p.pid == 7);
	CHECK(!strncmp(asked, "migrd/1 partner 10.0.0.2 0 17 ", 30) &&
	      strstr(asked, " suspend "));

	/* a result that says ok twice: the whole line refused */
	CHECK(suspend(WRAP("{\"ok\":true,\"results\":[{\"ok\":false,"
			   "\"ok\":true,\"consumers\":5}]}"),
		      &p) == EPROTO);
	CHECK(!p.suspended && strstr(err, "not a JSON object"));
	/* ... as does migrd's own verdict twice */
	CHECK(suspend("{\"v\":1,\"ok\":false,\"ok\":true,\"pid\":7,\"reply\":"
		      "{\"ok\":true,\"results\":[{\"ok\":true,"
		      "\"consumers\":5}]}}\n",
		      &p) == EPROTO);
	CHECK(!p.suspended);

	/*
	 * An ok nested in a result is not the result's (strstr found it
	 * first, and took a refusal for an answer)
	 */
	CHECK(suspend(WRAP("{\"ok\":true,\"results\":[{\"x\":{\"ok\":true},"
			   "\"ok\":false,\"error\":\"not now\","
			   "\"consumers\":5}]}"),
		      &p) == EREMOTEIO);
	CHECK(!p.suspended && strstr(err, ": suspend: not now"));
	/* ... nor is a count nested in it */
	CHECK(suspend(WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
			   "\"x\":{\"consumers\":9}}]}"),
		      &p) == EPROTO);
	CHECK(!p.suspended && strstr(err, "no send count"));
	/* ... nor a key that ends in an escaped quote and ok */
	CHECK(suspend(WRAP("{\"ok\":true,\"results\":[{\"e\\\"ok\":true,"
			   "\"ok\":false,\"consumers\":5}]}"),
		      &p) == EREMOTEIO);
	CHECK(!p.suspended);

	/* no result per QP: migrd's reason, else its process's */
	CHECK(suspend("{\"v\":1,\"ok\":false,\"error\":\"no owner\"}\n", &p) ==
	      EREMOTEIO);
	CHECK(strstr(err, ": suspend: no owner") != NULL);
	CHECK(suspend(WRAP("{\"ok\":false,\"error\":\"its own\"}"), &p) ==
	      EPROTO);
	CHECK(strstr(err, ": suspend: its own") != NULL);
	/* a reason's control bytes stay out of the one-line error */
	CHECK(suspend("{\"v\":1,\"ok\":false,\"error\":\"a\\nb\\u001b\"}\n",
		      &p) == EREMOTEIO);
	CHECK(strstr(err, ": suspend: a?b?") != NULL);

	/* busy is the process's, inside its reply */
	CHECK(suspend("{\"v\":1,\"ok\":false,\"error\":\"switching itself\","
		      "\"pid\":7,\"reply\":{\"ok\":false,\"busy\":true,"
		      "\"error\":\"switching itself\"}}\n",
		      &p) == EBUSY);
	CHECK(!strcmp(err, "switching itself"));
	CHECK(suspend(WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
			   "\"busy\":true,\"consumers\":5}]}"),
		      &p) == 0);

	/* not JSON at all */
	CHECK(suspend("{\"v\":1,\"ok\":true\n", &p) == EPROTO);
	CHECK(suspend("[]\n", &p) == EPROTO);
}

/* prepare: a QP its holder disowns is looked for elsewhere (notmine) */
static void test_prepare(void)
{
	struct migr_partner p;
	unsigned int wait = 100;

	partner(&p);
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
		      "\"peer\":\"00000000000000aa\",\"mkey\":\"1f\","
		      "\"maddr\":\"7f0000001000\",\"access\":7}]}");
	CHECK(migr_partners_prepare(&p, 1, wait, err, sizeof(err)) == 0);
	CHECK(p.prepared && p.marker.rkey == 0x1f &&
	      p.marker.addr == 0x7f0000001000ULL && p.marker.access == 7);

	partner(&p);
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
		      "\"peer\":\"0x00aa\",\"mkey\":\"1f\","
		      "\"maddr\":\"7f\"}]}");
	CHECK(migr_partners_prepare(&p, 1, wait, err, sizeof(err)) == EPROTO);
	CHECK(!p.prepared && strstr(err, "lacks its context"));

	partner(&p);
	answer = WRAP("{\"ok\":false,\"notmine\":true,\"results\":["
		      "{\"ok\":false,\"notmine\":true,\"error\":\"faces "
		      "another\"}]}");
	CHECK(migr_partners_prepare(&p, 1, wait, err, sizeof(err)) == ENOENT);
	CHECK(!p.prepared && strstr(err, "no process owns it (faces another)"));
}

/* fetch: what a peer's QP is now, and the GID it moved to */
static void test_fetch(void)
{
	struct ibv_qp_attr attr = { .dest_qp_num = 0x11 };
	union ibv_gid gid = {}, was;

	attr.ah_attr.is_global = 1;
	attr.ah_attr.grh.dgid.raw[10] = attr.ah_attr.grh.dgid.raw[11] = 0xff;
	attr.ah_attr.grh.dgid.raw[12] = 10;
	attr.ah_attr.grh.dgid.raw[15] = 2;
	memset(&was, 0x5a, sizeof(was));

	/* a GID in the result: connect there */
	gid = was;
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,\"phys\":18,"
		      "\"peer\":\"aa\",\"gen\":0,\"next\":0,"
		      "\"gid\":\"fe800000000000000000000000000001\"}]}");
	errno = EINVAL;
	CHECK(!migr_partner_fetch(&mqp, &attr, 5, &gid, err, sizeof(err)) &&
	      errno == 0);
	CHECK(gid.raw[0] == 0xfe && gid.raw[1] == 0x80 && gid.raw[15] == 1);

	/* one nested elsewhere, or not 32 digits: not its GID */
	gid = was;
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,\"phys\":18,"
		      "\"peer\":\"aa\",\"gen\":0,\"next\":0,\"x\":"
		      "{\"gid\":\"fe800000000000000000000000000001\"}}]}");
	CHECK(!migr_partner_fetch(&mqp, &attr, 5, &gid, err, sizeof(err)) &&
	      errno == 0 && !memcmp(&gid, &was, sizeof(gid)));
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,\"phys\":18,"
		      "\"peer\":\"aa\",\"gen\":0,\"next\":0,"
		      "\"gid\":\"fe800000000000000000000000000001\\\"\"}]}");
	CHECK(!migr_partner_fetch(&mqp, &attr, 5, &gid, err, sizeof(err)) &&
	      errno == 0 && !memcmp(&gid, &was, sizeof(gid)));

	/* its QP number must be one */
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
		      "\"phys\":16777216,\"peer\":\"aa\",\"gen\":0,"
		      "\"next\":0}]}");
	CHECK(!migr_partner_fetch(&mqp, &attr, 5, &gid, err, sizeof(err)) &&
	      errno == EPROTO && strstr(err, "lacks its QP"));
}

/* A give carries every pair of its chunk, whole: the last chunk's last one */
static void test_give(void)
{
	union ibv_gid gid = {};
	char last[32];

	gid.raw[10] = gid.raw[11] = 0xff;
	gid.raw[12] = 10;
	gid.raw[15] = 2;
	ctx.xlate.gen = 3;
	npairs = 200; /* two chunks: 160, then 40 */
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true,"
		      "\"phys\":18}]}");
	CHECK(migr_partner_give(&mqp, 0x11, &gid, 5, 18, err, sizeof(err)) ==
	      0);
	snprintf(last, sizeof(last), ",%08x:%08x\n", 199, 199);
	CHECK(strstr(asked, " give ") && strlen(asked) > strlen(last) &&
	      !strcmp(asked + strlen(asked) - strlen(last), last));
	/* the last chunk says it is: LAST 1 before its pairs */
	CHECK(strstr(asked, " 3 1 000000a0:000000a0,"));
	ctx.xlate.gen = 0;
	npairs = 0;
}

/*
 * A resume (the end of a rollback too) that a partner's migrd refuses: an
 * error naming our QP, the partner's QP, host and pid, and the step; the
 * caller hands it on (a rollback's report, "partner_error")
 */
static void test_resume(void)
{
	struct migr_partner p;

	partner(&p);
	p.prepared = true;
	p.pid = 974;
	mqp.vqp.qp.qp_num = 0x17;
	answer =
		"{\"v\":1,\"ok\":false,\"error\":\"no migr process with pid 974 on 10.0.0.2\"}\n";
	err[0] = 0;
	CHECK(migr_partners_resume(&p, 1, false, err, sizeof(err)) ==
	      EREMOTEIO);
	CHECK(!p.prepared);
	CHECK(strstr(err,
		     "partner of QP 0x17 (QP 0x11 at 10.0.0.2, pid 974): resume: no migr process with pid 974") !=
	      NULL);

	/* one that resumes: nothing to say */
	partner(&p);
	p.prepared = true;
	answer = WRAP("{\"ok\":true,\"results\":[{\"ok\":true}]}");
	err[0] = 0;
	CHECK(migr_partners_resume(&p, 1, false, err, sizeof(err)) == 0);
	/* none prepared: none asked */
	CHECK(migr_partners_resume(&p, 1, true, err, sizeof(err)) == 0);
	mqp.vqp.qp.qp_num = 0;
}

int main(void)
{
	char path[128];

	if (fake_migrd(path, sizeof(path))) {
		perror("stand-in migrd");
		return 1;
	}
	test_suspend();
	test_prepare();
	test_fetch();
	test_give();
	test_resume();
	unlink(path);
	return unit_done("partner_call");
}
