// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* See ask.h */
#define _GNU_SOURCE /* setns() */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ask.h"
#include "ctl_client.h"
#include "proc_ns.h"
#include "sockio.h"

/* A live process accepts at once; its reader takes the line at once */
#define CONNECT_MS 2000
#define SEND_MS 2000
/*
 * The longest reply the child relays: less than a pipe holds, so it
 * never waits on a parent that took what fits its buffer and left
 */
#define CHILD_REPLY_MAX (32 << 10)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Read from fd until EOF, full or the deadline: bytes read, or -1 */
static ssize_t read_until(int fd, char *buf, size_t len, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	while (got < len - 1) {
		int left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	buf[got] = 0;
	return got;
}

/*
 * In the child: connect in pid's namespace, send, relay the answer to out
 * (ctl_client.h, as migrd asks; the child's own bounds, the parent's
 * deadline around them)
 */
static int child(pid_t pid, pid_t ns_pid, const char *req, int out,
		 int timeout_ms, size_t max)
{
	long long deadline = io_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	char path[64], err[256], *reply;
	size_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		dprintf(out, "cannot enter the network namespace of pid %d: %s",
			pid, strerror(errno));
		return 1;
	}
	close(fd);
	fd = ctl_connect(-1, ns_pid, CONNECT_MS);
	if (fd < 0) {
		dprintf(out, "pid %d serves no migr control socket: %s", pid,
			strerror(errno));
		return 1;
	}
	/* a squatter on the name gets no park, resume or status of root's */
	if (ctl_check_holder(fd, pid, err, sizeof(err))) {
		dprintf(out, "%s", err);
		return 1;
	}
	switch (ctl_exchange(fd, req, deadline + SEND_MS, SEND_MS, max,
			     timeout_ms < 0 ? NULL : &reply, &n)) {
	case CTL_CALL_SEND:
		dprintf(out, "pid %d: sending the request failed", pid);
		return 1;
	case CTL_CALL_REPLY:
		dprintf(out, "pid %d did not answer within %d ms", pid,
			timeout_ms);
		return 1;
	}
	if (timeout_ms < 0)
		return 0;
	return write(out, reply, n) == (ssize_t)n ? 0 : 1;
}

int migr_ask(pid_t pid, const char *req, char *reply, size_t len,
	     int timeout_ms)
{
	pid_t ns_pid = migr_nspid(pid, NULL), c;
	double deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0) + 2000;
	int p[2], status = -1;
	ssize_t n;

	reply[0] = 0;
	if (ns_pid <= 0) {
		snprintf(reply, len, "pid %d is gone", pid);
		return -1;
	}
	if (pipe2(p, O_CLOEXEC))
		return -1;
	c = fork();
	if (c == 0) {
		close(p[0]);
		_exit(child(pid, ns_pid, req, p[1], timeout_ms,
			    CHILD_REPLY_MAX));
	}
	close(p[1]);
	if (c < 0) {
		close(p[0]);
		snprintf(reply, len, "fork failed: %s", strerror(errno));
		return -1;
	}
	n = read_until(p[0], reply, len, deadline);
	close(p[0]);
	/* a child that outlived its bound is not waited for on end */
	if (n < 0)
		kill(c, SIGKILL);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		;
	if (n < 0) {
		snprintf(reply, len, "pid %d did not answer in time", pid);
		return -1;
	}
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}
