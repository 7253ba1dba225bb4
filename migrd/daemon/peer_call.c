// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Asking the migrd of another host (migrd to migrd over TCP): TLS 1.3
 * (tls.h), one request frame, one reply, on a connection of its own or
 * one kept from the call before; and the TLS contexts of both sides,
 * keyed once
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "migrd.h"
#include "peer.h"
#include "sockio.h"
#include "tls.h"
#include "wire.h"

#define PEER_CALL_MS 5000 /* a client's handshake, and sending its request */

/* One context per side; a handshake takes its peer's key (key_of()) */
static SSL_CTX *ctxs[2];
static char ctx_err[160];
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

/* The key of the peer named name, read at start (migrd.c) */
static int key_of(const char *name, uint8_t *key, size_t *len, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < migrd.conf.npeers; i++) {
		if (strcmp(migrd.conf.peers[i].name, name))
			continue;
		memcpy(key, migrd.keys[i].key, migrd.keys[i].len);
		*len = migrd.keys[i].len;
		return 0;
	}
	return -1;
}

static void ctx_init(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		ctxs[i] = tls_ctx_new(i, migrd.conf.name, key_of, NULL,
				      TLS_ALPN, ctx_err, sizeof(ctx_err));
		if (!ctxs[i])
			log_err("%s", ctx_err);
	}
}

SSL_CTX *peer_tls_ctx(bool server, char *err, size_t errlen)
{
	pthread_once(&ctx_once, ctx_init);
	if (!ctxs[server])
		snprintf(err, errlen, "%s", ctx_err);
	return ctxs[server];
}

static int tcp_connect(const char *host, unsigned int port, int timeout_ms,
		       char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *a;
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = timeout_ms % 1000 * 1000 };
	char svc[8];
	int fd = -1, rc, one = 1;

	snprintf(svc, sizeof(svc), "%u", port);
	rc = getaddrinfo(host, svc, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", host,
			 gai_strerror(rc));
		return -1;
	}
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		/* Bounds connect() too */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		/* Small frames, each answered: no Nagle delay */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (!connect(fd, a->ai_addr, a->ai_addrlen))
			break;
		rc = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		char why[128];

		/* SO_SNDTIMEO ends a connect() that hangs with EINPROGRESS */
		if (!rc || rc == EINPROGRESS || rc == EAGAIN)
			rc = ETIMEDOUT;
		snprintf(why, sizeof(why), "%s", strerror(rc));
		why[0] = tolower((unsigned char)why[0]);
		snprintf(err, errlen,
			 "migrd on %s is unreachable: %s (port %u)", host, why,
			 port);
	}
	return fd;
}

/* A failed call's one-line reason, naming the peer */
static void peer_err(const char *host, char *err, size_t errlen)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s", err);
	if (!strcmp(tmp, "connection closed"))
		snprintf(err, errlen,
			 "peer %s closed the connection (see its log)", host);
	else if (!strcmp(tmp, "connection closed during the TLS handshake"))
		snprintf(
			err, errlen,
			"peer %s closed the connection during the TLS handshake (an older migrd? see its log)",
			host);
	else if (!strncmp(tmp, "refused ", 8))
		snprintf(err, errlen, "peer %s %s", host, tmp);
	else
		snprintf(err, errlen, "peer %s: %s", host, tmp);
}

struct peer_conn {
	int fd;
	SSL *s;
	uint8_t *buf; /* WIRE_BODY_MAX: one reply */
	char host[REQ_HOST_MAX];
	unsigned int calls; /* requests made by peer_call() */
};

void peer_close(struct peer_conn *pc)
{
	if (!pc)
		return;
	tls_free(pc->s);
	if (pc->fd >= 0)
		close(pc->fd);
	free(pc->buf);
	free(pc);
}

/*
 * The configured peer host names or is at, and the address to dial: only
 * those, whoever asks for another
 */
static const struct conf_peer *peer_of(const char *host, const char **addr,
				       char *err, size_t errlen)
{
	int i = conf_peer_find(migrd.conf.peers, migrd.conf.npeers, host);
	const struct conf_peer *p;

	if (i < 0) {
		snprintf(
			err, errlen,
			"%s is not a peer of this host: migrd asks only the peers its configuration names (peer = NAME ADDRESS KEY_FILE, migrd(8) PEERS)",
			host);
		return NULL;
	}
	p = &migrd.conf.peers[i];
	*addr = strcmp(p->name, host) ? host : p->addrs[0];
	return p;
}

struct peer_conn *peer_open(const char *host, char *err, size_t errlen)
{
	const struct conf_peer *p;
	struct peer_conn *pc;
	const char *addr;
	SSL_CTX *ctx;

	err[0] = 0;
	p = peer_of(host, &addr, err, errlen);
	if (!p)
		return NULL;
	ctx = peer_tls_ctx(false, err, errlen);
	if (!ctx)
		return NULL;
	pc = calloc(1, sizeof(*pc));
	if (!pc || !(pc->buf = malloc(WIRE_BODY_MAX))) {
		free(pc);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(pc->host, sizeof(pc->host), "%s", host);
	pc->fd = tcp_connect(addr, migrd.conf.port, PEER_CALL_MS, err, errlen);
	if (pc->fd < 0)
		goto fail;
	pc->s = tls_connect(ctx, pc->fd, p->name, PEER_CALL_MS, err, errlen);
	if (!pc->s) {
		peer_err(host, err, errlen);
		goto fail;
	}
	return pc;
fail:
	peer_close(pc);
	return NULL;
}

int peer_send(struct peer_conn *pc, const void *body, size_t len, char *err,
	      size_t errlen)
{
	if (!tls_write_frame(pc->s, body, len, PEER_CALL_MS, err, errlen))
		return 0;
	peer_err(pc->host, err, errlen);
	return -1;
}

int peer_reply(struct peer_conn *pc, int timeout_ms, struct sbuf *out,
	       char *err, size_t errlen)
{
	long n = tls_read_frame(pc->s, pc->buf, WIRE_BODY_MAX, timeout_ms, err,
				errlen);

	if (n < 0) {
		peer_err(pc->host, err, errlen);
		return -1;
	}
	sb_add(out, (char *)pc->buf, n);
	return 0;
}

int peer_ask(struct peer_conn *pc, const char *line, int timeout_ms,
	     struct sbuf *out, char *err, size_t errlen)
{
	if (peer_send(pc, line, strlen(line), err, errlen))
		return -1;
	return peer_reply(pc, timeout_ms, out, err, errlen);
}

/*
 * One idle connection per host is kept for the next call: a TLS handshake
 * took 0.5 to 1 s in a busy test guest, and a partner's park makes three
 * calls in a row. It is kept well within the server's bounds (30 s idle,
 * 64 requests: peer_serve.c) and dropped if the peer closed it meanwhile
 * (a migrd that restarted), so a request is never sent twice.
 */
#define KEEP_MS 10000
#define KEEP_CALLS 48
#define KEEP_MAX 8

static struct {
	struct peer_conn *pc;
	long long since; /* io_now_ms() */
} kept[KEEP_MAX];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* Still open, and nothing from the peer waits on it */
static bool idle_open(struct peer_conn *pc)
{
	struct pollfd p = { .fd = pc->fd, .events = POLLIN };

	return !SSL_pending(pc->s) && poll(&p, 1, 0) == 0;
}

static struct peer_conn *kept_take(const char *host)
{
	struct peer_conn *pc = NULL, *old;
	long long now = io_now_ms();
	int i;

	pthread_mutex_lock(&kept_lock);
	for (i = 0; i < KEEP_MAX; i++) {
		old = kept[i].pc;
		if (!old)
			continue;
		if (!pc && !strcmp(old->host, host)) {
			pc = old;
			kept[i].pc = NULL;
			if (now - kept[i].since > KEEP_MS || !idle_open(pc)) {
				peer_close(pc);
				pc = NULL;
			}
		} else if (now - kept[i].since > KEEP_MS) {
			peer_close(old);
			kept[i].pc = NULL;
		}
	}
	pthread_mutex_unlock(&kept_lock);
	return pc;
}

static void kept_put(struct peer_conn *pc)
{
	int i, slot = -1;

	if (pc->calls >= KEEP_CALLS) {
		peer_close(pc);
		return;
	}
	pthread_mutex_lock(&kept_lock);
	/* one per host: the server takes 4 at once from an address */
	for (i = 0; i < KEEP_MAX; i++) {
		if (kept[i].pc && !strcmp(kept[i].pc->host, pc->host)) {
			slot = -1;
			break;
		}
		if (!kept[i].pc && slot < 0)
			slot = i;
	}
	if (slot >= 0) {
		kept[slot].pc = pc;
		kept[slot].since = io_now_ms();
		pc = NULL;
	}
	pthread_mutex_unlock(&kept_lock);
	peer_close(pc);
}

int peer_call(const char *host, const char *line, int timeout_ms,
	      struct sbuf *out, char *err, size_t errlen)
{
	struct peer_conn *pc = kept_take(host);
	int ret;

	if (!pc)
		pc = peer_open(host, err, errlen);
	if (!pc)
		return -1;
	pc->calls++;
	ret = peer_ask(pc, line, timeout_ms, out, err, errlen);
	if (ret)
		peer_close(pc);
	else
		kept_put(pc);
	return ret;
}
