// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* See tcprepair.h */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tcprepair.h"

#ifndef TCP_REPAIR
#define TCP_REPAIR 19
#endif

/* Its TCP sockets, each through a copy of its fd (pidfd_getfd) */
static int one(int pid)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0), fd, proto, off = 0, n = 0;
	char path[300], link[64];
	socklen_t len;
	struct dirent *d;
	DIR *dir;

	if (pidfd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, d->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = 0;
		if (strncmp(link, "socket:", 7))
			continue;
		fd = syscall(SYS_pidfd_getfd, pidfd, atoi(d->d_name), 0);
		if (fd < 0)
			continue;
		len = sizeof(proto);
		/* a listener or a closed one refuses: nothing to repair */
		if (!getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) &&
		    proto == IPPROTO_TCP &&
		    !setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)))
			n++;
		close(fd);
	}
	if (dir)
		closedir(dir);
	close(pidfd);
	return n;
}

int tcp_repair_off(const int *pids, int n)
{
	int i, k, total = 0;

	for (i = 0; i < n; i++) {
		k = one(pids[i]);
		if (k < 0)
			return -1;
		total += k;
	}
	return total;
}
