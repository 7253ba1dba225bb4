/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The in-process agent: the control socket migrd and migrctl speak to
 * (control.c: status, switch, partner and UD steps), the registration
 * with migrd (register.c), and its hooks into the verbs (agent.c).
 */
#ifndef MIGR_AGENT_H
#define MIGR_AGENT_H

#include "migr.h"

/* agent.c: install the agent's hooks (verbs.h) into the verbs */
void migr_agent_install(void);
/* control.c: a context for the control socket to serve (started once) */
void migr_control_add(struct migr_context *ctx);
/* Is "migr/<pid>" ours and served? Only then may migrd be told of us */
bool migr_control_listening(void);

/*
 * register.c: tell migrd(8) about this process, best effort, once the
 * control socket said it serves (migr_register_serving())
 */
void migr_register(struct migr_context *ctx);
void migr_register_serving(void);

#endif /* MIGR_AGENT_H */
