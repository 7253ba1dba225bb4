/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Which thread posts to a queue (a QP's send or receive queue, an SRQ).
 * A post keeps books next to the lower provider's queue: the SENDs counted
 * for a switch, the ring of RECVs. The lower provider serializes its own
 * queue; migr's books need the same. Almost every application posts to a
 * queue from one thread, so the first thread to post owns the queue and
 * posts without a lock. When another thread posts, the queue becomes
 * shared for good: the owner's post in progress is waited for (as a switch
 * waits, quiesce.h), then every post takes the queue's lock.
 */
#ifndef MIGR_QUEUE_OWNER_H
#define MIGR_QUEUE_OWNER_H

#include <pthread.h>
#include <stdbool.h>

#include "quiesce.h"

struct migr_queue_owner {
	/* NULL until the first post, MIGR_QUEUE_SHARED once two threads met */
	struct migr_poster *who;
	pthread_mutex_t lock;
};

#define MIGR_QUEUE_SHARED ((struct migr_poster *)1)

void migr_queue_owner_init(struct migr_queue_owner *o);

/* Read inside migr_enter() (or a batch): true if this thread may go unlocked */
static inline bool migr_queue_owner_mine(const struct migr_queue_owner *o)
{
	return __atomic_load_n(&o->who, __ATOMIC_RELAXED) == &migr_self;
}

/*
 * Outside any data-path call of this thread: take the queue's lock, and
 * claim the queue for this thread if nobody posted yet, or make it shared.
 * The caller posts, then migr_queue_owner_unlock().
 */
void migr_queue_owner_lock(struct migr_queue_owner *o);

static inline void migr_queue_owner_unlock(struct migr_queue_owner *o)
{
	pthread_mutex_unlock(&o->lock);
}

#endif /* MIGR_QUEUE_OWNER_H */
