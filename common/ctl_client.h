/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The client of a migr process's control socket, for migrd and the CRIU
 * plugin: "@migr/<pid>" is abstract, so it lives in the process's network
 * namespace, under the process's pid in its own pid namespace
 * (proc_ns.h). Each caller makes its socket there its own way (migrd from
 * a thread that enters the namespace, the plugin from a child), then
 * connects, sends one line (ctl_line.h) and reads one reply line
 * (ctl_reply.h), every step within the caller's deadline.
 */
#ifndef MIGR_CTL_CLIENT_H
#define MIGR_CTL_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

/* The socket's name as sockio.h takes it: "@migr/<nspid>" */
void ctl_sock_path(int nspid, char *buf, size_t len);

/*
 * Connect fd (an AF_UNIX stream socket made in the process's network
 * namespace) to the control socket of the process numbered nspid there,
 * within timeout_ms, also when its backlog is full: fd, or -1 (errno; fd
 * closed)
 */
int ctl_connect(int fd, int nspid, int timeout_ms);

/*
 * Anyone may bind "@migr/<pid>" first: only the process itself may get
 * what is sent there. On the connected fd: 0 if the listener is pid
 * itself (SO_PEERCRED names it by its pid in the caller's pid namespace,
 * whatever namespace it is in) with the process's uid now, or root's (a
 * process that opened its device as root and dropped privileges); else -1
 * with err naming who holds the socket.
 */
int ctl_check_holder(int fd, int pid, char *err, size_t errlen);

/* How a call failed, for the caller's own words */
enum ctl_call_err {
	CTL_CALL_SEND = 1, /* the line did not go out (errno) */
	CTL_CALL_REPLY, /* no reply line before the deadline (errno) */
};

/*
 * Send line on the connected fd within send_ms (and the deadline, an
 * io_now_ms() time); then, if reply is not NULL, read the reply line of
 * at most max bytes before the deadline into *reply (to free), its
 * newline cut, its length in *len. 0, or an enum ctl_call_err with errno
 * (ECONNRESET: closed before a whole line).
 */
int ctl_exchange(int fd, const char *line, long long deadline, int send_ms,
		 size_t max, char **reply, size_t *len);

#endif /* MIGR_CTL_CLIENT_H */
