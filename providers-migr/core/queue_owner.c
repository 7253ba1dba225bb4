// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A queue's first poster, and the move to a lock when a second comes */
#include <stdio.h>

#include "queue_owner.h"

/* The owner's post in progress ends within this (lower posts never block) */
#define OWNER_WAIT_MS 1000

void migr_queue_owner_init(struct migr_queue_owner *o)
{
	o->who = NULL;
	pthread_mutex_init(&o->lock, NULL);
}

void migr_queue_owner_lock(struct migr_queue_owner *o)
{
	struct migr_poster *who;

	pthread_mutex_lock(&o->lock);
	who = o->who;
	if (who == &migr_self || who == MIGR_QUEUE_SHARED)
		return;
	if (!who) {
		__atomic_store_n(&o->who, &migr_self, __ATOMIC_RELAXED);
		return;
	}
	/*
	 * The owner may be inside a post that read who before this store:
	 * once it has left, it and every later post see the queue shared.
	 */
	__atomic_store_n(&o->who, MIGR_QUEUE_SHARED, __ATOMIC_RELAXED);
	if (migr_quiesce_posts(OWNER_WAIT_MS))
		fprintf(stderr,
			"migr: a queue's first poster did not leave its post; "
			"its counts may be off by that post\n");
}
