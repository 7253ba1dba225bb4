// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The in-process agent, wired into the verbs: the hooks (verbs.h) through
 * which a verb reaches the control socket (control.c), migrd (register.c)
 * and the partner protocol (partner_call.c). The verbs call none of them
 * by name.
 */
#include "agent.h"
#include "contexts.h"
#include "partner.h"
#include "partner_call.h"
#include "verbs.h"

/* A context opened: the control socket serves it, migrd learns of it */
static void agent_opened(struct migr_context *ctx)
{
	migr_control_add(ctx);
	migr_register(ctx);
}

/* A context closing: out of the list, its partner sessions ended */
static void agent_closing(struct migr_context *ctx)
{
	migr_contexts_lock();
	migr_contexts_remove(ctx);
	migr_partner_forget_ctx(ctx);
	migr_contexts_unlock();
}

static const struct migr_agent_hooks agent_hooks = {
	.opened = agent_opened,
	.closing = agent_closing,
	.local_peer = migr_local_peer,
	.fetch = migr_partner_fetch,
	.give = migr_partner_give,
};

void migr_agent_install(void)
{
	migr_agent = &agent_hooks;
}
