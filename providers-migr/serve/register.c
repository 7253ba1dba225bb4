// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Tell this host's migrd (migrd(8)) that the process opened a migr device,
 * so it can be listed and moved. Best effort and never blocking: without
 * migrd (no socket, nobody listening, a full backlog) nothing changes and
 * only the debug log says so. migrd learns the pid from SO_PEERCRED.
 *
 * MIGRD_SOCKET names another socket (tests); MIGR_CONTROL=0 (no control
 * socket, so nothing to register) turns this off too, as does a control
 * socket that could not be opened (its name held by another process).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "migr.h"
#include "migrd_call.h"

/* Set once the control socket serves "migr/<pid>" (control.c) */
static bool serving;

void migr_register_serving(void)
{
	__atomic_store_n(&serving, true, __ATOMIC_RELEASE);
}

void migr_register(struct migr_context *ctx)
{
	const char *ctl = getenv("MIGR_CONTROL");
	const char *path;
	char line[128];
	int fd, n;

	if (ctl && !strcmp(ctl, "0"))
		return;
	/* Without our control socket migrd would reach whoever holds its name */
	if (!__atomic_load_n(&serving, __ATOMIC_ACQUIRE)) {
		verbs_debug(&ctx->vctx,
			    "no control socket, not registered with migrd\n");
		return;
	}
	n = snprintf(line, sizeof(line), "migrd/1 register %s\n",
		     ibv_get_device_name(ctx->vctx.context.device));
	fd = migr_migrd_connect(SOCK_NONBLOCK, &path);
	if (fd < 0) {
		verbs_debug(&ctx->vctx, "no migrd at %s (%s), not registered\n",
			    path, strerror(errno));
		return;
	}
	/* The request fits any socket buffer; migrd's reply is not awaited */
	if (send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		verbs_debug(&ctx->vctx, "registering with migrd failed: %s\n",
			    strerror(errno));
	else
		verbs_debug(&ctx->vctx, "registered with migrd at %s\n", path);
	close(fd);
}
