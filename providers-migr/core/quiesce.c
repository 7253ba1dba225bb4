// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Registry of data-path threads and the wait of a switch (see quiesce.h) */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sched.h>
#include <unistd.h>

#include "clock.h"
#include "quiesce.h"

__thread struct migr_poster migr_self
	__attribute__((tls_model("initial-exec")));

static pthread_mutex_t posters_lock = PTHREAD_MUTEX_INITIALIZER;
static struct migr_poster *posters;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int membarrier_ok = -1;

static void unregister(void *arg)
{
	struct migr_poster *me = arg, **p;

	pthread_mutex_lock(&posters_lock);
	for (p = &posters; *p; p = &(*p)->next) {
		if (*p == me) {
			*p = me->next;
			break;
		}
	}
	pthread_mutex_unlock(&posters_lock);
}

static void make_key(void)
{
	pthread_key_create(&exit_key, unregister);
}

void migr_poster_register(void)
{
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&posters_lock);
	migr_self.next = posters;
	posters = &migr_self;
	migr_self.registered = true;
	pthread_mutex_unlock(&posters_lock);
	/* The thread's exit takes it out of the list before its TLS goes */
	pthread_setspecific(exit_key, &migr_self);
}

static int sys_membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

int migr_quiesce_init(void)
{
	pthread_mutex_lock(&posters_lock);
	if (membarrier_ok < 0)
		membarrier_ok = !sys_membarrier(
			MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
	pthread_mutex_unlock(&posters_lock);
	return membarrier_ok ? 0 : ENOSYS;
}

/* Wait until a thread seen inside (odd *counter) has left once */
static int wait_out(uint64_t *counter, double deadline)
{
	uint64_t seq = __atomic_load_n(counter, __ATOMIC_ACQUIRE);

	if (!(seq & 1))
		return 0;
	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) == seq) {
		if (now_ms() > deadline)
			return ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

/* Wait on posts and batches, and on poll sessions if sessions */
static int quiesce(unsigned int timeout_ms, bool sessions)
{
	double deadline = now_ms() + timeout_ms;
	struct migr_poster *p;
	int ret = 0;

	if (migr_quiesce_init())
		return ENOSYS;
	/* Every running thread now sees the flags set before this call */
	if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return ENOSYS;

	pthread_mutex_lock(&posters_lock);
	for (p = posters; p && !ret; p = p->next) {
		if (p == &migr_self)
			continue;
		/* Inside a post or poll: lower calls never block, so wait */
		ret = wait_out(&p->seq, deadline);
		/* Inside a poll session: the application ends it soon */
		if (!ret && sessions)
			ret = wait_out(&p->session, deadline);
		/* Inside an ibv_wr_*() batch: it completes soon */
		if (!ret)
			ret = wait_out(&p->batch, deadline);
	}
	pthread_mutex_unlock(&posters_lock);
	return ret;
}

int migr_quiesce(unsigned int timeout_ms)
{
	return quiesce(timeout_ms, true);
}

int migr_quiesce_posts(unsigned int timeout_ms)
{
	return quiesce(timeout_ms, false);
}
