// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * One request over migrd's peer link, as another migrd would send it, for
 * the host tests (migrd_partner.py: Python's ssl has no TLS 1.3 PSK here).
 * usage: peer_client KEYFILE NAME PEER ALPN|- HOST PORT LINE
 * (NAME: the client's host name; PEER: the server's, whose key KEYFILE is)
 * The reply on stdout, or a one-line error on stderr (exit 1).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "tls.h"
#include "wire.h"

struct key {
	uint8_t key[WIRE_KEY_MAX + 1];
	size_t len;
};

/* The one key it holds, for whichever peer it dials */
static int key_of(const char *name, uint8_t *key, size_t *len, void *arg)
{
	const struct key *k = arg;

	(void)name;
	memcpy(key, k->key, k->len);
	*len = k->len;
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint8_t reply[WIRE_BODY_MAX + 1];
	struct key k;
	char err[512];
	SSL_CTX *ctx;
	SSL *s;
	long n;
	int fd;

	if (argc != 8) {
		fprintf(stderr,
			"usage: %s KEYFILE NAME PEER ALPN|- HOST PORT LINE\n",
			argv[0]);
		return 2;
	}
	if (key_load(argv[1], k.key, &k.len, err, sizeof(err)))
		goto fail;
	ctx = tls_ctx_new(false, argv[2], key_of, &k,
			  strcmp(argv[4], "-") ? argv[4] : NULL, err,
			  sizeof(err));
	if (!ctx)
		goto fail;
	sin.sin_port = htons(atoi(argv[6]));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (inet_pton(AF_INET, argv[5], &sin.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		snprintf(err, sizeof(err), "cannot connect to %s:%s", argv[5],
			 argv[6]);
		goto fail;
	}
	s = tls_connect(ctx, fd, argv[3], 5000, err, sizeof(err));
	if (!s || tls_write_frame(s, argv[7], strlen(argv[7]), 5000, err,
				  sizeof(err)))
		goto fail;
	n = tls_read_frame(s, reply, WIRE_BODY_MAX, 40000, err, sizeof(err));
	if (n < 0)
		goto fail;
	printf("%.*s\n", (int)n, (char *)reply);
	tls_free(s);
	close(fd);
	tls_ctx_free(ctx);
	return 0;
fail:
	fprintf(stderr, "%s\n", err);
	return 1;
}
