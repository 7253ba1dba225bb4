/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Shared by migr's benchmarks: cycle counting and the statistics of
 * per-batch means. Both sides of a comparison go through the same code.
 */
#ifndef MIGR_BENCH_H
#define MIGR_BENCH_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

/* Loads before the first read may not slip past it, nor the read later */
static inline uint64_t bench_t0(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

/* rdtscp waits for everything before it; the fence keeps later work out */
static inline uint64_t bench_t1(void)
{
	unsigned int aux;
	uint64_t t = __rdtscp(&aux);

	_mm_lfence();
	return t;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v; q in [0, 1] */
static inline double bench_quantile(double *v, unsigned int n, double q)
{
	unsigned int i;

	qsort(v, n, sizeof(*v), bench_cmp_double);
	i = (unsigned int)(q * (n - 1) + 0.5);
	return v[i];
}

/* The cost of a t0/t1 pair with nothing between: subtracted from batches */
static inline double bench_timer_overhead(void)
{
	enum { N = 2001 };
	static double v[N];
	unsigned int i;

	for (i = 0; i < N; i++) {
		uint64_t a = bench_t0(), b = bench_t1();

		v[i] = (double)(b - a);
	}
	return bench_quantile(v, N, 0.5);
}

/* Run on one CPU (the last one unless told), so batches compare */
static inline void bench_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity");
	else
		printf("# pinned to CPU %d\n", cpu);
}

#endif /* MIGR_BENCH_H */
