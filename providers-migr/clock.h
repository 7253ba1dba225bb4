/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* The provider's one clock: every deadline and phase time is read from it */
#ifndef MIGR_CLOCK_H
#define MIGR_CLOCK_H

#include <time.h>

/* Milliseconds on the monotonic clock */
static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#endif /* MIGR_CLOCK_H */
