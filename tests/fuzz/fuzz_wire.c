// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What a peer daemon sends once the TLS handshake is done (OpenSSL parses
 * the records): frames (wire.h), each read as peer.c reads them, its
 * header by wire_peek_len() against the request cap, its body through
 * req_parse(). The input is the decrypted stream, frames one after the
 * other, as many as it holds.
 */
#include <string.h>

#include "fuzz.h"
#include "req.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128], line[REQ_MAX + 1];
	size_t off = 0;
	struct req r;
	long len;
	int n;

	while (size - off >= WIRE_HDR_LEN) {
		len = wire_peek_len(data + off, REQ_MAX, err, sizeof(err));
		if (len < 0) {
			/* refused before anything of it is read */
			FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
			return 0;
		}
		FUZZ_ASSERT(len <= REQ_MAX);
		off += WIRE_HDR_LEN;
		if ((size_t)len > size - off)
			return 0; /* truncated: the reader waits, then fails */
		if (req_parse((const char *)data + off, len, &r, err,
			      sizeof(err))) {
			FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
		} else {
			n = req_format(&r, line, sizeof(line));
			FUZZ_ASSERT(n > 0 && n <= REQ_MAX);
		}
		off += len;
	}
	return 0;
}

/* Frames a peer sends: the requests a peer may make, two in a stream */
void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"migrd/1 hello\n",
		"migrd/1 qpn-owner - rxe0 17\n",
		"migrd/1 udpeers - probe\n",
	};
	uint8_t buf[256];
	size_t off = 0, n;
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		n = strlen(s[i]);
		wire_put_len(buf, n);
		memcpy(buf + WIRE_HDR_LEN, s[i], n);
		add(buf, WIRE_HDR_LEN + n);
	}
	for (i = 0; i < 2; i++) {
		n = strlen(s[i]);
		wire_put_len(buf + off, n);
		memcpy(buf + off + WIRE_HDR_LEN, s[i], n);
		off += WIRE_HDR_LEN + n;
	}
	add(buf, off);
}
