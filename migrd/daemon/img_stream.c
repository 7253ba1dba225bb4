// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* An image stream's frames read without I/O (img_stream.h) */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "img_stream.h"

bool img_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < IMG_NAME_MAX && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == n;
}

/* A link's target: another directory of this migration, "../NAME" */
static bool target_ok(const char *t)
{
	return !strncmp(t, "../", 3) && img_name_ok(t + 3);
}

void img_rx_init(struct img_rx *rx, const char *sub)
{
	memset(rx, 0, sizeof(*rx));
	rx->sub = sub;
}

/* Bytes of the file being received */
static enum img_step data(struct img_rx *rx, size_t n, char *err, size_t errlen)
{
	if (n > rx->left) {
		snprintf(err, errlen, "image %s is longer than announced",
			 rx->name);
		return IMG_FAIL;
	}
	rx->left -= n;
	rx->bytes += n;
	return IMG_DATA;
}

/* The end line: does it add up? */
static enum img_step end(struct img_rx *rx, unsigned int nfiles, uint64_t total,
			 char *err, size_t errlen)
{
	if (nfiles == rx->files && total == rx->bytes)
		return IMG_DONE;
	snprintf(err, errlen,
		 "stream of %s ended with %u files, %" PRIu64
		 " bytes; it announced %u, %" PRIu64,
		 rx->sub, rx->files, rx->bytes, nfiles, total);
	return IMG_FAIL;
}

enum img_step img_rx_frame(struct img_rx *rx, uint8_t *buf, size_t n, char *err,
			   size_t errlen)
{
	const char *line = (const char *)buf;
	unsigned int nfiles;
	uint64_t total;

	if (rx->left)
		return data(rx, n, err, errlen);
	buf[n] = 0;
	if (strlen(line) != n)
		return IMG_BAD;
	if (sscanf(line, "file %127s %" SCNu64, rx->name, &rx->size) == 2) {
		if (!img_name_ok(rx->name) || ++rx->files > IMG_FILES_MAX)
			return IMG_BAD;
		rx->left = rx->size;
		return IMG_FILE;
	}
	if (sscanf(line, "link %127s %127s", rx->name, rx->target) == 2) {
		if (!img_name_ok(rx->name) || !target_ok(rx->target) ||
		    ++rx->files > IMG_FILES_MAX)
			return IMG_BAD;
		return IMG_LINK;
	}
	if (sscanf(line, "end %u %" SCNu64, &nfiles, &total) == 2)
		return end(rx, nfiles, total, err, errlen);
	return IMG_BAD;
}

int img_room(uint64_t avail, uint64_t size, const char *dir, char *err,
	     size_t errlen)
{
	if (avail >= size + IMG_SPARE)
		return 0;
	snprintf(err, errlen,
		 "no room for the images: %" PRIu64 " MiB more needed, %" PRIu64
		 " MiB free in %s",
		 (uint64_t)(size + IMG_SPARE) >> 20, avail >> 20, dir);
	return -1;
}
