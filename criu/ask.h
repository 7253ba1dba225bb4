/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * One request to a migr process's control socket ("migr/<pid>", an
 * abstract UNIX socket, so in the process's network namespace): from a
 * child that enters that namespace, so CRIU's own never changes.
 */
#ifndef MIGR_CRIU_ASK_H
#define MIGR_CRIU_ASK_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Send req (one line) to pid and read its one-line answer into reply
 * within timeout_ms; with timeout_ms < 0, only send it (a stopped process
 * reads it when it runs again). 0, or -1 with the reason in reply.
 */
int migr_ask(pid_t pid, const char *req, char *reply, size_t len,
	     int timeout_ms);

#endif /* MIGR_CRIU_ASK_H */
