/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* The provider's one clock: every deadline and phase time is read from it */
#ifndef MIGR_CLOCK_H
#define MIGR_CLOCK_H

#include <time.h>

/* Milliseconds on clock */
static inline double clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Milliseconds on the monotonic clock */
static inline double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* The CPU time of the calling thread in ms: against now_ms(), whether a
 * slow phase worked or waited for the CPU */
static inline double thread_cpu_ms(void)
{
	return clock_ms(CLOCK_THREAD_CPUTIME_ID);
}

/* ms from now on clock, as an absolute time (timed waits take one) */
static inline struct timespec deadline_in(clockid_t clock, unsigned int ms)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif /* MIGR_CLOCK_H */
