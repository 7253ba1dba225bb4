// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A peer's image stream as migrd's destination reads it (images.c): the
 * mig-put request in a frame of its own (req_parse()), then frames of at
 * most WIRE_DATA_MAX bytes through img_rx_frame(), each announced file
 * through the disk-space guard (img_room()) for a few amounts of free
 * space. Whatever is taken stays within what the stream announced: a
 * file's bytes within its size, the end line's counts those taken, the
 * guard's sizes within the space free.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "img_stream.h"
#include "req.h"
#include "wire.h"

#define MID "0123456789abcdef"

/* What the target counts itself, beside img_rx */
struct tally {
	unsigned int files;
	uint64_t bytes, size, got; /* got: of the file being received */
};

/* The guard for a file of size bytes: it passes only if it fits */
static void guard(uint64_t size)
{
	static const uint64_t avail[] = { 0, IMG_SPARE, 1ULL << 30,
					  UINT64_MAX };
	char err[256];
	unsigned int i;

	for (i = 0; i < sizeof(avail) / sizeof(avail[0]); i++) {
		if (!img_room(avail[i], size, "/var/lib/migr", err,
			      sizeof(err)))
			FUZZ_ASSERT(size <= avail[i] &&
				    avail[i] - size >= IMG_SPARE);
		else
			FUZZ_ASSERT(!strchr(err, '\n') &&
				    strstr(err, "no room for the images"));
	}
}

/* The end line taken: its numbers are those counted */
static void ended(const uint8_t *buf, size_t n, const struct img_rx *rx,
		  const struct tally *t)
{
	char line[128], *end;
	unsigned long long files, bytes;

	FUZZ_ASSERT(n < sizeof(line));
	memcpy(line, buf, n);
	line[n] = 0;
	FUZZ_ASSERT(!strncmp(line, "end ", 4));
	files = strtoull(line + 4, &end, 10);
	FUZZ_ASSERT(*end == ' ');
	bytes = strtoull(end + 1, &end, 10);
	FUZZ_ASSERT(!*end && files == t->files && bytes == t->bytes);
	FUZZ_ASSERT(rx->files == t->files && rx->bytes == t->bytes);
}

/* One frame of the stream: 1 for more, 0 when the stream is over */
static int frame(struct img_rx *rx, struct tally *t, const uint8_t *p, size_t n)
{
	/* an exact copy, and the one byte more img_recv() has */
	uint8_t *buf = malloc(n + 1);
	char err[256] = "";
	int more = 0;

	if (!buf)
		abort();
	memcpy(buf, p, n);
	switch (img_rx_frame(rx, buf, n, err, sizeof(err))) {
	case IMG_FILE:
		FUZZ_ASSERT(img_name_ok(rx->name) && rx->size <= INT64_MAX &&
			    rx->left == rx->size);
		FUZZ_ASSERT(++t->files <= IMG_FILES_MAX);
		guard(rx->size);
		t->size = rx->size;
		t->got = 0;
		more = 1;
		break;
	case IMG_DATA:
		t->got += n;
		t->bytes += n;
		FUZZ_ASSERT(t->got <= t->size && rx->left == t->size - t->got);
		more = 1;
		break;
	case IMG_LINK:
		FUZZ_ASSERT(img_name_ok(rx->name) &&
			    !strncmp(rx->target, "../", 3) &&
			    img_name_ok(rx->target + 3));
		FUZZ_ASSERT(++t->files <= IMG_FILES_MAX);
		more = 1;
		break;
	case IMG_DONE:
		ended(p, n, rx, t);
		break;
	case IMG_FAIL:
		FUZZ_ASSERT(err[0] && !strchr(err, '\n'));
		break;
	case IMG_BAD:
		break;
	}
	free(buf);
	return more;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128];
	struct tally t = {};
	struct img_rx rx;
	size_t off = 0;
	struct req r;
	long len;

	/* the request: a frame of at most REQ_MAX, as peer.c reads it */
	if (size < WIRE_HDR_LEN)
		return 0;
	len = wire_peek_len(data, REQ_MAX, err, sizeof(err));
	off = WIRE_HDR_LEN;
	if (len < 0 || (size_t)len > size - off ||
	    req_parse((const char *)data + off, len, &r, err, sizeof(err)) ||
	    r.op != REQ_MIG_PUT)
		return 0;
	off += len;
	img_rx_init(&rx, r.name);
	while (size - off >= WIRE_HDR_LEN) {
		len = wire_peek_len(data + off, WIRE_DATA_MAX, err,
				    sizeof(err));
		if (len < 0)
			return 0;
		FUZZ_ASSERT(len <= WIRE_DATA_MAX);
		off += WIRE_HDR_LEN;
		if ((size_t)len > size - off)
			return 0; /* truncated: the reader waits, then fails */
		if (!frame(&rx, &t, data + off, len))
			return 0;
		off += len;
	}
	return 0;
}

/* A stream: its frames, one after the other, each with its header */
static size_t stream(uint8_t *buf, const char *const *f, unsigned int n)
{
	size_t off = 0, k;
	unsigned int i;

	for (i = 0; i < n; i++) {
		k = strlen(f[i]);
		wire_put_len(buf + off, k);
		memcpy(buf + off + WIRE_HDR_LEN, f[i], k);
		off += WIRE_HDR_LEN + k;
	}
	return off;
}

#define PUT "migrd/1 mig-put " MID " pre-1\n"

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const good[] = {
		PUT,
		"file pages-1.img 3",
		"xyz",
		"file empty.img 0",
		"link parent ../pre-0",
		"end 3 3",
	};
	static const char *const longer[] = { PUT, "file a 3", "abcdef" };
	static const char *const huge[] = { PUT, "file a 18446744073709551615",
					    "x", "end 1 1" };
	static const char *const count[] = { PUT, "file a 1", "x", "end 2 1" };
	uint8_t buf[512];

	add(buf, stream(buf, good, sizeof(good) / sizeof(good[0])));
	add(buf, stream(buf, longer, sizeof(longer) / sizeof(longer[0])));
	add(buf, stream(buf, huge, sizeof(huge) / sizeof(huge[0])));
	add(buf, stream(buf, count, sizeof(count) / sizeof(count[0])));
}
