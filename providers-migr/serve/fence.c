// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The fence (fence.h): one thread, started at the first arm, that waits
 * for the deadline or the commit
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "contexts.h"
#include "fence.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed;
static bool armed, started;
static struct timespec deadline; /* CLOCK_MONOTONIC */

/* Why the process ends, in its verbs log (any context's) */
static void say_fenced(void)
{
	struct migr_context *v[1];

	migr_contexts_lock();
	if (migr_contexts_get(v, 1))
		verbs_err(
			&v[0]->vctx,
			"no commit of this restored copy in time: it ends here (its source runs on)\n");
	migr_contexts_unlock();
}

static void *fence_thread(void *arg)
{
	struct timespec now;

	pthread_mutex_lock(&lock);
	for (;;) {
		if (!armed) {
			pthread_cond_wait(&changed, &lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline.tv_sec ||
		    (now.tv_sec == deadline.tv_sec &&
		     now.tv_nsec >= deadline.tv_nsec))
			break;
		pthread_cond_timedwait(&changed, &lock, &deadline);
	}
	pthread_mutex_unlock(&lock);
	say_fenced();
	kill(getpid(), SIGKILL);
	return arg;
}

void migr_fence_arm(unsigned int ms)
{
	pthread_condattr_t ca;
	pthread_attr_t attr;
	pthread_t th;

	pthread_mutex_lock(&lock);
	if (!started) {
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&changed, &ca);
		pthread_condattr_destroy(&ca);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = !pthread_create(&th, &attr, fence_thread, NULL);
		pthread_attr_destroy(&attr);
	}
	deadline = deadline_in(CLOCK_MONOTONIC, ms);
	armed = true;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

bool migr_fence_commit(void)
{
	bool was;

	pthread_mutex_lock(&lock);
	was = armed;
	armed = false;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	return was;
}
