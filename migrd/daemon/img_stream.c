// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* An image stream's frames read without I/O (img_stream.h) */
#include <inttypes.h>
#include <limits.h>
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
static enum img_step end_line(struct img_rx *rx, unsigned int nfiles,
			      uint64_t total, char *err, size_t errlen)
{
	if (nfiles == rx->files && total == rx->bytes)
		return IMG_DONE;
	snprintf(err, errlen,
		 "stream of %s ended with %u files, %" PRIu64
		 " bytes; it announced %u, %" PRIu64,
		 rx->sub, rx->files, rx->bytes, nfiles, total);
	return IMG_FAIL;
}

/*
 * A number as the sender writes it (PRIu64): decimal digits only, up to
 * max. strtoull() and sscanf() would take "-1" as 2^64 - 1.
 */
static bool number(const char *s, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	unsigned int d;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return false;
	for (; *s; s++) {
		d = *s - '0';
		if (d > max || x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/* "file NAME SIZE": SIZE no more than a file can hold (off_t) */
static enum img_step file_line(struct img_rx *rx, char *name, const char *size,
			       char *err, size_t errlen)
{
	if (!img_name_ok(name) || ++rx->files > IMG_FILES_MAX)
		return IMG_BAD;
	strcpy(rx->name, name);
	if (!number(size, INT64_MAX, &rx->size)) {
		snprintf(err, errlen,
			 "image %s announces an invalid size (0 to %" PRId64
			 " bytes)",
			 name, INT64_MAX);
		return IMG_FAIL;
	}
	rx->left = rx->size;
	return IMG_FILE;
}

/* "link NAME ../DIR" */
static enum img_step link_line(struct img_rx *rx, const char *name,
			       const char *target)
{
	if (!img_name_ok(name) || !target_ok(target) ||
	    ++rx->files > IMG_FILES_MAX)
		return IMG_BAD;
	strcpy(rx->name, name);
	strcpy(rx->target, target);
	return IMG_LINK;
}

enum img_step img_rx_frame(struct img_rx *rx, uint8_t *buf, size_t n, char *err,
			   size_t errlen)
{
	char *p = (char *)buf, *w[3];
	uint64_t files, total;
	int k;

	if (rx->left)
		return data(rx, n, err, errlen);
	buf[n] = 0;
	if (strlen(p) != n)
		return IMG_BAD;
	/* three words, as the sender writes them: single spaces */
	for (k = 0; k < 3; k++)
		if (!(w[k] = strsep(&p, " ")) || !*w[k])
			return IMG_BAD;
	if (p)
		return IMG_BAD;
	if (!strcmp(w[0], "file"))
		return file_line(rx, w[1], w[2], err, errlen);
	if (!strcmp(w[0], "link"))
		return link_line(rx, w[1], w[2]);
	if (!strcmp(w[0], "end") && number(w[1], UINT_MAX, &files) &&
	    number(w[2], UINT64_MAX, &total))
		return end_line(rx, files, total, err, errlen);
	return IMG_BAD;
}

/*
 * Room for size bytes and the spare, compared without adding: a size
 * near 2^64 would wrap the sum past zero and pass
 */
int img_room(uint64_t avail, uint64_t size, const char *dir, char *err,
	     size_t errlen)
{
	if (size <= avail && avail - size >= IMG_SPARE)
		return 0;
	/* in MiB, rounded up: what it takes, which may be past 2^64 bytes */
	snprintf(err, errlen,
		 "no room for the images: %" PRIu64 " MiB more needed, %" PRIu64
		 " MiB free in %s",
		 (size >> 20) + !!(size & ((1 << 20) - 1)) +
			 (uint64_t)(IMG_SPARE >> 20),
		 avail >> 20, dir);
	return -1;
}
