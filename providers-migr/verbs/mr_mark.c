// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Marking what a device wrote into an MR, for CRIU's pre-copy (criu
 * pre-dump --track-mem): an incremental dump takes a page from the last
 * pre-dump unless its soft-dirty bit is set, and a device's writes into
 * registered memory never set it (pinned 4K pages keep it by a kernel's
 * accident, pages mapped huge lose it). Once nothing writes by DMA any
 * more (the park released the MR, or the application deregistered it), a
 * write fault on every page of a writable MR marks it. Without
 * MADV_POPULATE_WRITE (Linux < 5.14), an atomic add of 0 per page faults
 * the same way without losing the application's own concurrent writes.
 * Where a kernel that knows MADV_POPULATE_WRITE refuses a range (part of
 * it unmapped since the registration, made read-only), each page is asked
 * alone and no atomic add is tried: it would kill the process. An empty
 * range tells the two kinds of kernel apart. Without a pre-dump the pages
 * are writable already and the call only walks their page tables.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static bool populate;
static uintptr_t page;
static pthread_once_t probed = PTHREAD_ONCE_INIT;

static void probe(void)
{
	page = sysconf(_SC_PAGESIZE);
	populate = !madvise((void *)page, 0, MADV_POPULATE_WRITE);
}

void migr_mr_mark_written(const struct migr_mr *mmr)
{
	const unsigned int wr = IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_ATOMIC;
	const struct ibv_mr *mr = &mmr->vmr.ibv_mr;
	uintptr_t a, end;

	if (mmr->dm || !(mmr->vmr.access & wr) || !mr->addr || !mr->length)
		return;
	pthread_once(&probed, probe);
	a = (uintptr_t)mr->addr & ~(page - 1);
	end = (uintptr_t)mr->addr + mr->length;
	if (populate) {
		/* refused: each page that can be, one by one */
		if (madvise((void *)a, end - a, MADV_POPULATE_WRITE))
			for (; a < end; a += page)
				madvise((void *)a, page, MADV_POPULATE_WRITE);
		return;
	}
	for (a = (uintptr_t)mr->addr; a < end; a = (a & ~(page - 1)) + page)
		__atomic_fetch_add((char *)a, 0, __ATOMIC_RELAXED);
}
