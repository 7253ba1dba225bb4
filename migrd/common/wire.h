/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * migrd's peer protocol inside its TLS link (tls.h): the client sends a
 * request, the server answers it, each one frame:
 *
 *   len u32 (big-endian) | body (len bytes)
 *
 * A request is one request line (req.h, at most REQ_MAX bytes); a reply
 * one JSON line without its newline, at most WIRE_BODY_MAX bytes. A frame
 * that announces more than its side allows is refused before it is read.
 */
#ifndef MIGRD_WIRE_H
#define MIGRD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_HDR_LEN 4
/*
 * A request (REQ_MAX, 4096) always fits; replies get room for a partner
 * process's reply relayed whole, with migrd's envelope around it.
 */
#define WIRE_BODY_MAX 8192
/* A stream's frames (a migration's images, after their request) */
#define WIRE_DATA_MAX 65536
/* A peer's key file's size (conf.c); tls.c derives the PSK from it */
#define WIRE_KEY_MIN 16
#define WIRE_KEY_MAX 256

/* A frame's header for a body of len bytes */
void wire_put_len(uint8_t *hdr, uint32_t len);

/*
 * The body length a header announces, or -1 (with err) if it is more
 * than max
 */
long wire_peek_len(const uint8_t *hdr, size_t max, char *err, size_t errlen);

#endif
