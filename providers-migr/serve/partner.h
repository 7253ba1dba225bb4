/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The answering side of the partner protocol (calls/partner_call.h says
 * what is asked): this process is the partner of a process that moves,
 * or is asked for its keys by one that connects to it.
 */
#ifndef MIGR_PARTNER_H
#define MIGR_PARTNER_H

#include <stdio.h>

#include "migr.h"

/* partner_serve.c: the partner side, one request line (after "partner ") */
void migr_partner_serve(FILE *out, const char *line);
/* The context's control path, for writing, within LOCK_MS or not at all */
bool migr_ctl_lock_briefly(struct migr_context *ctx);
/* A context closes: its sessions end (the contexts' list held) */
void migr_partner_forget_ctx(struct migr_context *ctx);

#endif /* MIGR_PARTNER_H */
