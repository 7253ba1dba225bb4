/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The process's migr contexts (contexts.c), which the agent's steps look
 * in: the control socket's status and switch, a partner's steps, the UD
 * relay. Lock order: the list, then a context's ctl_lock.
 */
#ifndef MIGR_CONTEXTS_H
#define MIGR_CONTEXTS_H

#include "migr.h"

/* A context opened */
void migr_contexts_add(struct migr_context *ctx);
/*
 * A context closing (the list held): out of the list, and QPs of other
 * contexts connected to its QPs stop using its tables
 */
void migr_contexts_remove(struct migr_context *ctx);

void migr_contexts_lock(void);
/*
 * The list, for a partner's step: taken within timeout_ms or not at all
 * (a switch of this process holds it)
 */
bool migr_contexts_lock_within(unsigned int timeout_ms);
void migr_contexts_unlock(void);

/* The list held: its contexts into v, max at most; how many it wrote (max 0: how many there are) */
unsigned int migr_contexts_get(struct migr_context **v, unsigned int max);
/* The list held: the live QP numbered vqpn on gid, and its context */
struct migr_qp *migr_contexts_find_qp(uint32_t vqpn, const union ibv_gid *gid,
				      struct migr_context **ctx);

/*
 * The context of this process that holds the live QP numbered vqpn on the
 * device ctx is on, if any (takes the list)
 */
struct migr_context *migr_local_peer(struct migr_context *ctx, uint32_t vqpn);

#endif /* MIGR_CONTEXTS_H */
