// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A peer's image stream as migrd reads it (img_stream.h): what it
 * announces is all it may send, and the disk-space guard holds for any
 * size it announces, the largest too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "img_stream.h"
#include "unit.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static struct img_rx rx;
static char err[256];

/* One frame, text or data, as img_recv() hands it over */
static enum img_step frame(const char *s)
{
	uint8_t buf[512];
	size_t n = strlen(s);

	memcpy(buf, s, n);
	err[0] = 0;
	return img_rx_frame(&rx, buf, n, err, sizeof(err));
}

static void good_stream(void)
{
	img_rx_init(&rx, "pre-1");
	CHECK(frame("file pages-1.img 3") == IMG_FILE);
	CHECK(!strcmp(rx.name, "pages-1.img") && rx.size == 3 && rx.left == 3);
	CHECK(frame("ab") == IMG_DATA && rx.left == 1);
	CHECK(frame("c") == IMG_DATA && rx.left == 0);
	CHECK(frame("file empty.img 0") == IMG_FILE && rx.left == 0);
	CHECK(frame("link parent ../pre-0") == IMG_LINK);
	CHECK(!strcmp(rx.target, "../pre-0"));
	CHECK(frame("end 3 3") == IMG_DONE && rx.bytes == 3);
}

static void bad_streams(void)
{
	img_rx_init(&rx, "pre-2");
	CHECK(frame("file a 3") == IMG_FILE);
	CHECK(frame("abcd") == IMG_FAIL &&
	      strstr(err, "image a is longer than announced"));

	img_rx_init(&rx, "pre-2");
	CHECK(frame("file a 1") == IMG_FILE && frame("x") == IMG_DATA);
	CHECK(frame("end 2 1") == IMG_FAIL &&
	      strstr(err, "stream of pre-2 ended with 1 files"));

	img_rx_init(&rx, "pre-2");
	CHECK(frame("file ../evil 3") == IMG_BAD);
	CHECK(frame("file .hidden 3") == IMG_BAD);
	CHECK(frame("link parent /etc") == IMG_BAD);
	CHECK(frame("link parent ../..") == IMG_BAD);
	CHECK(frame("what 1 2") == IMG_BAD);
	CHECK(frame("") == IMG_BAD);
}

/*
 * A size no file can have: refused when read, whatever strtoull or
 * sscanf() would make of it (-1 reads as 2^64 - 1)
 */
static void sizes(void)
{
	static const char *const bad[] = {
		"file a -1",
		"file a 18446744073709551615",
		"file a 18446744073709486080", /* 2^64 - 64 KiB */
		"file a 18446744073709551616",
		"file a 9223372036854775808", /* past off_t */
		"file a +5",
		"file a 0x10",
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		img_rx_init(&rx, "pre-3");
		if (frame(bad[i]) != IMG_FAIL ||
		    !strstr(err, "image a announces an invalid size")) {
			fprintf(stderr, "taken: '%s' (%s)\n", bad[i], err);
			CHECK(!"an impossible size refused");
		}
	}
	img_rx_init(&rx, "pre-3");
	CHECK(frame("file a 9223372036854775807") == IMG_FILE &&
	      rx.size == 9223372036854775807ULL);
}

/* The guard: size plus the spare within what is free, with no wrap */
static void room(void)
{
	CHECK(!img_room(GIB, 0, "/s", err, sizeof(err)));
	CHECK(!img_room(GIB, GIB - IMG_SPARE, "/s", err, sizeof(err)));
	CHECK(img_room(GIB, GIB - IMG_SPARE + 1, "/s", err, sizeof(err)));
	CHECK(strstr(err, "no room for the images: 1025 MiB more needed, "
			  "1024 MiB free in /s"));
	CHECK(img_room(0, 0, "/s", err, sizeof(err)));
	/* size + IMG_SPARE would wrap past zero: still no room */
	CHECK(img_room(GIB, UINT64_MAX, "/s", err, sizeof(err)));
	CHECK(img_room(GIB, UINT64_MAX - IMG_SPARE + 1, "/s", err,
		       sizeof(err)));
	CHECK(img_room(UINT64_MAX, UINT64_MAX - IMG_SPARE + 1, "/s", err,
		       sizeof(err)));
	CHECK(strstr(err, "17592186044416 MiB more needed"));
	CHECK(!img_room(UINT64_MAX, UINT64_MAX - IMG_SPARE, "/s", err,
			sizeof(err)));
}

int main(void)
{
	good_stream();
	bad_streams();
	sizes();
	room();
	return unit_done("img_stream");
}
