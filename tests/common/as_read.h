/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the library's JSON writer gives back when its output is read: each
 * byte of s one character, itself or U+00XX (ISO 8859-1), as UTF-8 into
 * out (2 * strlen(s) + 1 bytes). Shared by tests/unit/test_json.c and
 * tests/fuzz/fuzz_json.c.
 */
#ifndef MIGR_TEST_AS_READ_H
#define MIGR_TEST_AS_READ_H

static inline void as_read(const char *s, char *out)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c < 0x80) {
			*out++ = c;
		} else {
			*out++ = 0xc0 | c >> 6;
			*out++ = 0x80 | (c & 0x3f);
		}
	}
	*out = 0;
}

#endif /* MIGR_TEST_AS_READ_H */
