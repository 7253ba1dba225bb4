/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The in-process agent: the control socket migrd and migrctl speak to
 * (control.c: status, switch, partner and UD steps) and the registration
 * with migrd (register.c).
 */
#ifndef MIGR_AGENT_H
#define MIGR_AGENT_H

#include "migr.h"

/* control.c */
void migr_control_add(struct migr_context *ctx);
bool migr_control_listening(void);
void migr_control_del(struct migr_context *ctx);
struct migr_context *migr_local_peer(struct migr_context *ctx, uint32_t vqpn);

/* register.c: tell migrd(8) about this process, best effort */
void migr_register(struct migr_context *ctx);
int migr_migrd_connect(int flags, const char **path);

#endif /* MIGR_AGENT_H */
