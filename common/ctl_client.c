// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* One request to a control socket, bounded (ctl_client.h) */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "ctl_client.h"
#include "proc_ns.h"
#include "sockio.h"

void ctl_sock_path(int nspid, char *buf, size_t len)
{
	snprintf(buf, len, "@migr/%d", nspid);
}

int ctl_connect(int fd, int nspid, int timeout_ms)
{
	char path[32];

	ctl_sock_path(nspid, path, sizeof(path));
	return io_connect_unix_fd(fd, path, timeout_ms);
}

int ctl_check_holder(int fd, int pid, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	unsigned int uid;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		snprintf(err, errlen,
			 "pid %d: cannot tell who holds its control socket: %s",
			 pid, strerror(errno));
		return -1;
	}
	if (migr_proc_euid(pid, &uid)) {
		snprintf(err, errlen, "pid %d: the process is gone", pid);
		return -1;
	}
	if (cred.pid != pid || (cred.uid != uid && cred.uid != 0)) {
		snprintf(
			err, errlen,
			"pid %d: its control socket is held by pid %d uid %u, not by the process",
			pid, (int)cred.pid, (unsigned int)cred.uid);
		return -1;
	}
	return 0;
}

int ctl_exchange(int fd, const char *line, long long deadline, int send_ms,
		 size_t max, char **reply, size_t *len)
{
	int left = io_left_ms(deadline);
	ssize_t n;

	if (io_write_all(fd, line, strlen(line),
			 left < send_ms ? left : send_ms))
		return CTL_CALL_SEND;
	if (!reply)
		return 0;
	n = io_read_line(fd, reply, max, io_left_ms(deadline));
	if (n < 0)
		return CTL_CALL_REPLY;
	(*reply)[--n] = 0; /* the newline */
	*len = n;
	return 0;
}
