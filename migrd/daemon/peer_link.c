// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The connection a peer's request came on (peer.h), for the requests that
 * read a stream after their line: apart from peer_serve.c, which runs the
 * requests, so that what reads a stream does not depend on what serves
 */
#include "peer.h"
#include "tls.h"

long peer_link_read(struct peer_link *l, void *buf, size_t max, int timeout_ms,
		    char *err, size_t errlen)
{
	return tls_read_frame(l->s, buf, max, timeout_ms, err, errlen);
}

const char *peer_link_who(const struct peer_link *l)
{
	return l->who;
}
