// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Who holds a control socket (common/ctl_client.c, ctl_check_holder()),
 * as migrd and the CRIU plugin check it before they write: the process
 * itself passes; another process holding "@migr/<pid>" (a squatter, which
 * once received root's park through the plugin) is named and refused.
 */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_client.h"
#include "unit.h"

/* Bind "@migr/<nspid>" (abstract) in this process; the listener or -1 */
static int listen_as(int nspid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), n;

	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "migr/%d", nspid);
	if (fd < 0 ||
	    bind(fd, (struct sockaddr *)&a,
		 offsetof(struct sockaddr_un, sun_path) + 1 + n) ||
	    listen(fd, 4)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Connect to "@migr/<pid>" and check its holder against pid */
static int checked(int pid, char *err, size_t len)
{
	int fd = ctl_connect(-1, pid, 2000), ret;

	if (fd < 0) {
		snprintf(err, len, "no connection");
		return -2;
	}
	ret = ctl_check_holder(fd, pid, err, len);
	close(fd);
	return ret;
}

int main(void)
{
	char err[256], want[128];
	int lfd, sync[2], victim, squatter;
	char c;

	/* the process itself */
	lfd = listen_as(getpid());
	CHECK(lfd >= 0);
	CHECK(checked(getpid(), err, sizeof(err)) == 0);
	close(lfd);

	/* a squatter holds the name of a victim (another live process) */
	victim = fork();
	if (!victim) {
		pause();
		_exit(0);
	}
	CHECK(pipe(sync) == 0);
	squatter = fork();
	if (!squatter) {
		close(sync[0]);
		lfd = listen_as(victim);
		(void)!write(sync[1], lfd >= 0 ? "y" : "n", 1);
		pause();
		_exit(0);
	}
	close(sync[1]);
	CHECK(read(sync[0], &c, 1) == 1 && c == 'y');
	CHECK(checked(victim, err, sizeof(err)) == -1);
	snprintf(want, sizeof(want),
		 "pid %d: its control socket is held by pid %d uid", victim,
		 squatter);
	CHECK(!strncmp(err, want, strlen(want)));
	if (strncmp(err, want, strlen(want)))
		fprintf(stderr, "got: %s\n", err);

	/* the name of a process that is gone */
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	CHECK(checked(victim, err, sizeof(err)) == -1);
	kill(squatter, SIGKILL);
	waitpid(squatter, NULL, 0);
	return unit_done("test_ctl_client");
}
