// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Tell this host's migrd (migrd(8)) that the process opened a migr device,
 * so it can be listed and moved. Best effort and never blocking: without
 * migrd (no socket, nobody listening, a full backlog) nothing changes and
 * only the debug log says so. migrd learns the pid from SO_PEERCRED.
 *
 * MIGRD_SOCKET names another socket (tests); MIGR_CONTROL=0 (no control
 * socket, so nothing to register) turns this off too.
 */
#define _GNU_SOURCE /* secure_getenv(): a set-uid program must not be steered */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "migr.h"

#define MIGRD_SOCKET "/run/migr/migrd.sock"

void migr_register(struct migr_context *ctx)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = secure_getenv("MIGRD_SOCKET");
	const char *ctl = getenv("MIGR_CONTROL");
	char line[128];
	int fd, n;

	if (ctl && !strcmp(ctl, "0"))
		return;
	if (!path || !*path)
		path = MIGRD_SOCKET;
	if (strlen(path) >= sizeof(sun.sun_path))
		return;
	strcpy(sun.sun_path, path);
	n = snprintf(line, sizeof(line), "migrd/1 register %s\n",
		     ibv_get_device_name(ctx->vctx.context.device));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		verbs_debug(&ctx->vctx, "no migrd at %s (%s), not registered\n",
			    path, strerror(errno));
		goto out;
	}
	/* The request fits any socket buffer; migrd's reply is not awaited */
	if (send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		verbs_debug(&ctx->vctx, "registering with migrd failed: %s\n",
			    strerror(errno));
	else
		verbs_debug(&ctx->vctx, "registered with migrd at %s\n", path);
out:
	close(fd);
}
