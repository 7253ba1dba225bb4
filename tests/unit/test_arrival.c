// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Who may arrive (arrival.c): a restored thread's users, root's group and
 * capabilities, against arrive_uids; status files written here, and, as
 * root, a real tree of another user's
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arrival.h"
#include "unit.h"

static char path[] = "/tmp/migrd-arrival-XXXXXX";
static char err[256];

/* A status file of a thread with these lines */
static const char *status(const char *uid, const char *gid, const char *groups,
			  const char *cap)
{
	FILE *f = fopen(path, "w");

	fprintf(f,
		"Name:\tapp\nUid:\t%s\nGid:\t%s\nGroups:\t%s\n"
		"CapInh:\t0000000000000000\nCapPrm:\t%s\nCapEff:\t%s\n"
		"CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n",
		uid, gid, groups, cap, cap);
	fclose(f);
	return path;
}

static int check(const char *file, const char *allowed)
{
	struct uid_ranges u;

	err[0] = 0;
	if (uid_ranges_parse(allowed, &u))
		return -2;
	return arrival_check_status(file, 7, &u, err, sizeof(err));
}

static void test_status(void)
{
	const char *none = "0000000000000000", *all = "000001ffffffffff";
	const char *user = "1000\t1000\t1000\t1000";

	/* the default: any user but root */
	CHECK(!check(status(user, user, "1000 27", none), "1-4294967294"));
	CHECK(check(status("0\t0\t0\t0", "0\t0\t0\t0", "", all),
		    "1-4294967294") == -1);
	CHECK(!strcmp(err, "thread 7 would run as uid 0 here, which "
			   "arrive_uids does not allow (migrd(8) TRUST)"));
	/* any one of the four ids counts: a saved uid of 0 too */
	CHECK(check(status("1000\t1000\t0\t1000", user, "", none),
		    "1-4294967294") == -1 &&
	      strstr(err, "uid 0 here"));
	CHECK(check(status(user, user, "", none), "2000-2999") == -1 &&
	      strstr(err, "uid 1000 here"));
	CHECK(!check(status(user, user, "", none), "0,1000"));
	/* root's group, capabilities: root's, refused where root is */
	CHECK(check(status(user, "1000\t0\t1000\t1000", "", none), "1000") ==
		      -1 &&
	      strstr(err, "root's group"));
	CHECK(check(status(user, user, "4 0", none), "1000") == -1 &&
	      strstr(err, "root's group"));
	CHECK(!check(status(user, user, "10 100", none), "1000"));
	CHECK(check(status(user, user, "", "0000000000002000"), "1000") == -1 &&
	      strstr(err, "would hold capabilities here (permitted 2000)"));
	CHECK(!check(status(user, "0\t0\t0\t0", "0", all), "all"));
	CHECK(check(status(user, user, "", none), "none") == -1);
	/* unreadable, or not a status file: refused, not passed */
	CHECK(check("/nonexistent/status", "all") == -1 &&
	      strstr(err, "cannot read who thread 7 runs as"));
	CHECK(check(status("x", user, "", none), "all") == -1);
}

/* As root: a stopped child running as nobody, checked as migrd would */
static void test_tree(void)
{
	struct uid_ranges u;
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		printf("not root: a real tree of another user not checked\n");
		return;
	}
	pid = fork();
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(1);
		pause();
		_exit(0);
	}
	usleep(200000);
	uid_ranges_parse("1-4294967294", &u);
	CHECK(!arrival_check(pid, &u, err, sizeof(err)));
	uid_ranges_parse("1000-60000", &u);
	CHECK(arrival_check(pid, &u, err, sizeof(err)) == -1 &&
	      strstr(err, "uid 65534 here"));
	/* migrd itself (root): refused unless root may arrive */
	uid_ranges_parse("1-4294967294", &u);
	CHECK(arrival_check(getpid(), &u, err, sizeof(err)) == -1 &&
	      strstr(err, "uid 0 here"));
	uid_ranges_parse("all", &u);
	CHECK(!arrival_check(getpid(), &u, err, sizeof(err)));
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(arrival_check(pid, &u, err, sizeof(err)) == -1);
}

int main(void)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	test_status();
	test_tree();
	unlink(path);
	return unit_done("arrival");
}
