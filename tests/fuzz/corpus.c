// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Edges taken and the corpus directory (corpus.h) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corpus.h"

#define MAP_SIZE 65536 /* edges, by the hash of their two ends */

/*
 * For each edge, the classes of counts (1, 2, 3, 4-7, 8-15, 16-31,
 * 32-127, 128 and more: one bit each) any input took it; the current
 * input's counts and the edges it took
 */
static uint8_t seen[MAP_SIZE], hits[MAP_SIZE];
static uint16_t took[MAP_SIZE];
static unsigned int ntook, edges;
static uintptr_t prev;

/*
 * gcc's -fsanitize-coverage=trace-pc calls this at the start of each basic
 * block of the code built with it. An edge is the pair of the block before
 * and this one (as AFL counts them), hashed into the map.
 */
void __sanitizer_cov_trace_pc(void);
__attribute__((no_sanitize_address)) void __sanitizer_cov_trace_pc(void)
{
	uint64_t pc = (uintptr_t)__builtin_return_address(0);
	/* the block's address spread over the map's 16 bits */
	uintptr_t b = (pc * 0x9e3779b97f4a7c15ULL) >> 48;
	size_t e = (b ^ prev) % MAP_SIZE;

	/* shifted: A then B is not B then A */
	prev = b >> 1;
	if (!hits[e])
		took[ntook++] = e;
	if (hits[e] < 255)
		hits[e]++;
}

void cov_begin(void)
{
	prev = 0;
}

static uint8_t count_class(uint8_t n)
{
	return n <= 3  ? 1 << (n - 1) :
	       n < 8   ? 8 :
	       n < 16  ? 16 :
	       n < 32  ? 32 :
	       n < 128 ? 64 :
			 128;
}

unsigned int cov_new(void)
{
	unsigned int i, fresh = 0;
	uint8_t c;

	for (i = 0; i < ntook; i++) {
		size_t e = took[i];

		c = count_class(hits[e]);
		hits[e] = 0;
		if (seen[e] & c)
			continue;
		edges += !seen[e];
		seen[e] |= c;
		fresh++;
	}
	ntook = 0;
	return fresh;
}

unsigned int cov_edges(void)
{
	return edges;
}

bool corpus_dir(const char *dir, const char *target, char *path, size_t len)
{
	const char *cache = getenv("MIGR_CACHE"), *home = getenv("HOME");
	int n;

	if (dir)
		n = strcmp(dir, "-") ? snprintf(path, len, "%s", dir) : -1;
	else if (cache && *cache)
		n = snprintf(path, len, "%s/fuzz/%s", cache, target);
	else if (home && *home)
		n = snprintf(path, len, "%s/.cache/migr/fuzz/%s", home, target);
	else
		n = -1;
	return n > 0 && (size_t)n < len;
}

/* path and its parents, as mkdir -p makes them */
static int make_dirs(const char *path)
{
	char p[4096], *s;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (s = p + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

/* FNV-1a: a name that is the same for the same bytes */
static uint64_t hash(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

int corpus_keep(const char *path, const void *buf, size_t len)
{
	char name[4200], tmp[4300];
	int fd, saved;
	ssize_t w;

	snprintf(name, sizeof(name), "%s/%016" PRIx64, path, hash(buf, len));
	if (!access(name, F_OK))
		return 0;
	if (make_dirs(path))
		return -1;
	/* whole or not at all: another run may read the directory now */
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	w = write(fd, buf, len);
	if (close(fd) || w != (ssize_t)len || rename(tmp, name)) {
		saved = errno ?: EIO;
		unlink(tmp);
		errno = saved;
		return -1;
	}
	return 0;
}
