// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Marking an MR's pages written for CRIU's pre-copy (verbs/mr_mark.c):
 * after the soft-dirty bits are cleared (what criu pre-dump --track-mem
 * does), a writable MR's pages are soft-dirty again, a read-only MR's
 * not, and a hole in the range neither stops the others nor kills the
 * process. Skipped (77) where the kernel tracks no soft-dirty bits.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "migr.h"
#include "unit.h"
#include "verbs.h"

#define PAGES 64
#define SOFT_DIRTY (1ULL << 55)

static long page;

static void clear_soft_dirty(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "4", 1) != 1)
			page = 0;
		close(fd);
	}
}

/* Soft-dirty pages of [p, p + n pages) */
static int soft_dirty(const char *p, int n)
{
	int fd = open("/proc/self/pagemap", O_RDONLY), i, dirty = 0;
	uint64_t e;

	for (i = 0; fd >= 0 && i < n; i++)
		if (pread(fd, &e, sizeof(e),
			  ((uintptr_t)p / page + i) * sizeof(e)) == sizeof(e) &&
		    (e & SOFT_DIRTY))
			dirty++;
	if (fd >= 0)
		close(fd);
	return dirty;
}

static void mr_over(struct migr_mr *mmr, void *addr, size_t len,
		    unsigned int access)
{
	memset(mmr, 0, sizeof(*mmr));
	mmr->vmr.ibv_mr.addr = addr;
	mmr->vmr.ibv_mr.length = len;
	mmr->vmr.access = access;
}

int main(void)
{
	struct migr_mr mmr;
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memset(p, 1, PAGES * page);
	/* Pages just written are soft-dirty where the kernel tracks it */
	if (soft_dirty(p, PAGES) != PAGES) {
		printf("mr_mark: skipped: no soft-dirty tracking here\n");
		return 77;
	}
	clear_soft_dirty();
	CHECK(page && soft_dirty(p, PAGES) == 0);

	/* Only a device's reads: nothing to mark */
	mr_over(&mmr, p, PAGES * page, IBV_ACCESS_REMOTE_READ);
	migr_mr_mark_written(&mmr);
	CHECK(soft_dirty(p, PAGES) == 0);

	/* Writable, not page aligned: every page it covers, no other */
	mr_over(&mmr, p + page + 100, 8 * page, IBV_ACCESS_REMOTE_WRITE);
	migr_mr_mark_written(&mmr);
	CHECK(soft_dirty(p + page, 9) == 9);
	CHECK(soft_dirty(p, 1) == 0);
	CHECK(soft_dirty(p + 10 * page, PAGES - 10) == 0);
	/* the contents are the application's still */
	CHECK(p[page + 100] == 1 && p[9 * page + 99] == 1);

	/* A page unmapped since the registration: the others marked */
	clear_soft_dirty();
	munmap(p + 20 * page, page);
	mr_over(&mmr, p + 16 * page, 8 * page, IBV_ACCESS_LOCAL_WRITE);
	migr_mr_mark_written(&mmr);
	CHECK(soft_dirty(p + 16 * page, 4) == 4);
	CHECK(soft_dirty(p + 21 * page, 3) == 3);

	/* Made read-only since: not written, the process lives on */
	clear_soft_dirty();
	mprotect(p + 32 * page, 4 * page, PROT_READ);
	mr_over(&mmr, p + 32 * page, 8 * page, IBV_ACCESS_LOCAL_WRITE);
	migr_mr_mark_written(&mmr);
	CHECK(soft_dirty(p + 32 * page, 4) == 0);
	CHECK(soft_dirty(p + 36 * page, 4) == 4);
	return unit_done("mr_mark");
}
