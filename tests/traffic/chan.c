// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The TCP side channel: framed messages (type, length, body) between the
 * two endpoints. Used before traffic (HELLO, READY), at the end (DONE,
 * FINAL) and to tell the peer why we gave up (ABORT).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "traffic.h"

#define CHAN_MAGIC 0x6d696772u

struct msg_hdr {
	uint32_t magic, type, len;
};

static struct addrinfo *resolve(const char *host, const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = host ? 0 : AI_PASSIVE,
	};
	struct addrinfo *res;
	int rc = getaddrinfo(host, port, &hints, &res);

	if (rc)
		tr_die("cannot resolve %s port %s: %s", host ? host : "*", port,
		       gai_strerror(rc));
	return res;
}

int tr_chan_listen(const struct tr_opts *o)
{
	struct addrinfo *res = resolve(NULL, o->port), *ai;
	int fd = -1, one = 1, err = 0;

	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 1))
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		tr_die("cannot listen on TCP port %s: %s", o->port,
		       strerror(err));
	return fd;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tr_chan_accept(int lfd)
{
	int fd;

	do {
		fd = accept(lfd, NULL, NULL);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		tr_die("accept on the side channel failed: %s",
		       strerror(errno));
	tune(fd);
	return fd;
}

/* One non-blocking connect attempt bounded by ms; 0 or an errno. */
static int try_connect(const struct addrinfo *ai, int ms, int *out)
{
	struct pollfd p = { .events = POLLOUT };
	socklen_t len = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0)
		return errno;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		if (errno != EINPROGRESS) {
			err = errno;
		} else {
			p.fd = fd;
			if (poll(&p, 1, ms) <= 0)
				err = ETIMEDOUT;
			else
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
					   &len);
		}
	}
	if (err) {
		close(fd);
		return err;
	}
	fcntl(fd, F_SETFL, 0);
	*out = fd;
	return 0;
}

/* Servers may start after us: retry until --connect-timeout. */
int tr_chan_connect(const struct tr_opts *o)
{
	struct addrinfo *res = resolve(o->host, o->port), *ai;
	double deadline = tr_now() + o->connect_timeout;
	int fd = -1, err = 0, ms;

	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			ms = (deadline - tr_now()) * 1000;
			err = try_connect(ai,
					  ms > 1000 ? 1000 :
					  ms > 0    ? ms :
						      1,
					  &fd);
			if (!err)
				goto out;
		}
		if (tr_now() >= deadline)
			break;
		usleep(200000);
	}
	freeaddrinfo(res);
	tr_die("cannot reach the server at %s port %s: %s (tried for %g s)",
	       o->host, o->port, strerror(err), o->connect_timeout);
out:
	freeaddrinfo(res);
	tune(fd);
	return fd;
}

void tr_chan_pair(int fds[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		tr_die("socketpair: %s", strerror(errno));
}

static void write_all(struct tr_ep *ep, const void *p, size_t len)
{
	const uint8_t *b = p;
	ssize_t n;

	while (len) {
		n = send(ep->sock, b, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			tr_die("%s: side channel to the peer lost: %s",
			       ep->name, strerror(errno));
		b += n;
		len -= n;
	}
}

/* false on EOF before the first byte. */
static bool read_all(struct tr_ep *ep, void *p, size_t len)
{
	uint8_t *b = p;
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = recv(ep->sock, b + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			tr_die("%s: side channel to the peer lost: %s",
			       ep->name, strerror(errno));
		if (!n)
			return false;
		got += n;
	}
	return true;
}

void tr_chan_send(struct tr_ep *ep, uint32_t type, const void *p, uint32_t len)
{
	struct msg_hdr h = { CHAN_MAGIC, type, len };

	write_all(ep, &h, sizeof(h));
	if (len)
		write_all(ep, p, len);
}

/* Receive a message of this type; a peer's ABORT or a lost peer ends the
 * run as a failure, since nothing after that can be verified. */
void tr_chan_recv(struct tr_ep *ep, uint32_t type, void *p, uint32_t len)
{
	struct msg_hdr h;
	char why[512];

	if (!read_all(ep, &h, sizeof(h))) {
		fprintf(stderr,
			"migr-traffic: FAIL %s: the peer closed the side channel (it exited early)\n",
			ep->name);
		exit(TR_EXIT_FAIL);
	}
	if (h.magic != CHAN_MAGIC)
		tr_die("%s: side channel: not a migr-traffic peer", ep->name);
	if (h.type == MSG_ABORT) {
		if (h.len >= sizeof(why) || !read_all(ep, why, h.len))
			h.len = 0;
		why[h.len] = 0;
		fprintf(stderr, "migr-traffic: FAIL %s: the peer failed: %s\n",
			ep->name, why);
		exit(TR_EXIT_FAIL);
	}
	if (h.type != type || h.len != len)
		tr_die("%s: side channel: got message %u (%u bytes), expected %u (%u bytes): peer of another version?",
		       ep->name, h.type, h.len, type, len);
	if (len && !read_all(ep, p, len))
		tr_die("%s: side channel: message cut short", ep->name);
}

bool tr_chan_readable(struct tr_ep *ep)
{
	struct pollfd p = { .fd = ep->sock, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}
