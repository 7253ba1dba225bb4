/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The receiving side of an image stream (images.h) without its I/O: each
 * frame read against what the stream announced, and what it asks of the
 * receiver. images.c reads the frames and writes the files; the unit
 * test and the fuzz target (fuzz_images.c) run it on bytes alone.
 */
#ifndef MIGRD_IMG_STREAM_H
#define MIGRD_IMG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMG_NAME_MAX 128 /* a file's or a link's name, its NUL too */
#define IMG_FILES_MAX 4096 /* files and links in one directory */
#define IMG_SPARE (64ULL << 20) /* left free on the destination */

/* What a frame asks of the receiver (img_rx_frame()) */
enum img_step {
	IMG_BAD = -2, /* not a frame of a stream */
	IMG_FAIL = -1, /* the stream breaks its own word: err says how */
	IMG_DONE = 0, /* its end line, which adds up */
	IMG_FILE, /* a file begins: name, size (its bytes follow) */
	IMG_DATA, /* n bytes of the file named, left to come after them */
	IMG_LINK, /* a link name to target */
};

struct img_rx {
	const char *sub; /* the directory, for errors */
	unsigned int files; /* files and links so far */
	uint64_t bytes; /* of the files, so far */
	uint64_t size, left; /* the file being received: announced, to come */
	char name[IMG_NAME_MAX], target[IMG_NAME_MAX + 3]; /* "../NAME" */
};

/* A file's or a link's name: one of CRIU's, never a path, no dot first */
bool img_name_ok(const char *s);

/* A stream of directory sub begins */
void img_rx_init(struct img_rx *rx, const char *sub);

/*
 * The next frame, n bytes in buf: data while a file's bytes are to come,
 * else a line of three words, for which buf has room for one more byte
 * (a NUL). A size past what a file can hold is refused (IMG_FAIL).
 */
enum img_step img_rx_frame(struct img_rx *rx, uint8_t *buf, size_t n, char *err,
			   size_t errlen);

/*
 * The disk-space guard: may a file of size bytes come, with avail bytes
 * free in dir and IMG_SPARE left after it? Any size, 2^64 - 1 too. 0, or
 * -1 with err
 */
int img_room(uint64_t avail, uint64_t size, const char *dir, char *err,
	     size_t errlen);

#endif
