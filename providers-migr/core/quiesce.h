/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Knowing when no application thread is inside a data-path call any more.
 * A switch first flags the QPs and CQs it takes over; a thread that entered
 * a post or poll before it saw the flag may still be talking to the lower
 * object. Every thread bumps a counter of its own on the way in and out
 * (odd = inside), which costs two plain increments; the switch makes the
 * flags visible to every thread at once with membarrier() and then waits
 * for the threads it found inside. No lock, atomic or fence on the data path.
 */
#ifndef MIGR_QUIESCE_H
#define MIGR_QUIESCE_H

#include <stdbool.h>
#include <stdint.h>

struct migr_poster {
	uint64_t seq; /* odd while the thread is inside a data-path call */
	/*
	 * Odd while it is inside an extended poll session (ibv_start_poll()
	 * to ibv_end_poll()), a counter of its own: the application posts
	 * inside sessions, and those calls count on seq.
	 */
	uint64_t session;
	/* odd while it builds an ibv_wr_*() batch (wr_start to complete) */
	uint64_t batch;
	bool registered;
	struct migr_poster *next;
};

extern __thread struct migr_poster migr_self
	__attribute__((tls_model("initial-exec")));

void migr_poster_register(void);

/*
 * Odd from in to out: the counter says the thread is inside. A thread's
 * first call registers it, after its counter went odd: a switch that
 * listed the threads before then is ordered before the registration by
 * the list's lock, so this thread sees its flags.
 */
static inline void migr_in(uint64_t *counter)
{
	if (__builtin_expect((*counter)++ == 0 && !migr_self.registered, 0))
		migr_poster_register();
	__asm__ __volatile__("" ::: "memory");
}

static inline void migr_out(uint64_t *counter)
{
	__asm__ __volatile__("" ::: "memory");
	(*counter)++;
}

/* A post or poll */
static inline void migr_enter(void)
{
	migr_in(&migr_self.seq);
}

static inline void migr_leave(void)
{
	migr_out(&migr_self.seq);
}

/* An extended poll session, ibv_start_poll() to ibv_end_poll() */
static inline void migr_session_enter(void)
{
	migr_in(&migr_self.session);
}

static inline void migr_session_leave(void)
{
	migr_out(&migr_self.session);
}

/* An ibv_wr_*() batch, ibv_wr_start() to ibv_wr_complete()/abort() */
static inline void migr_batch_enter(void)
{
	migr_in(&migr_self.batch);
}

static inline void migr_batch_leave(void)
{
	migr_out(&migr_self.batch);
}

/* Once per process, before the first switch can happen */
int migr_quiesce_init(void);
/*
 * After flags were set: wait until every thread that was inside a
 * data-path call has left it. 0, ETIMEDOUT, or ENOSYS without membarrier.
 */
int migr_quiesce(unsigned int timeout_ms);
/*
 * The same for posts and ibv_wr_*() batches only: a thread that posts
 * inside a poll session of its own must not wait for another's.
 */
int migr_quiesce_posts(unsigned int timeout_ms);

#endif /* MIGR_QUIESCE_H */
