// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migrd's peer link (tls.c): a server and a client over a socketpair, and
 * what an attacker or an older migrd tries against it
 */
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>

#include "sockio.h"
#include "tls.h"
#include "unit.h"
#include "wire.h"

#define REQ_LIMIT 4096 /* the server's cap, as migrd's (REQ_MAX) */

static const uint8_t key[] = "a shared key of 32 bytes, really";
static const uint8_t other[] = "another key, just as long as it!";
static char err[256];

/*
 * The hosts: the server is "b", its one peer "a" (key); a client is "a"
 * unless a test names another, and knows "b" by the key it is given
 */
#define SERVER "b"
static const char *client_name = "a";

/* A side's key ring: arg is the key, for the one peer name it knows */
struct ring {
	const char *peer;
	const uint8_t *key;
};
static struct ring server_ring = { "a", key };

static int key_of(const char *name, uint8_t *k, size_t *len, void *arg)
{
	const struct ring *r = arg;

	if (strcmp(name, r->peer))
		return -1;
	memcpy(k, r->key, 32);
	*len = 32;
	return 0;
}

/* A server on one end of a socketpair: it echoes each frame */
struct srv {
	SSL_CTX *ctx;
	int fd;
	int timeout_ms;
	bool ok; /* handshake done */
	int reqs; /* frames answered */
	long long took; /* ms to the handshake's end */
	char peer[TLS_NAME_MAX]; /* who the client is, by its key */
	char err[256];
	pthread_t th;
};

static void *serve(void *arg)
{
	struct srv *v = arg;
	long long t0 = io_now_ms();
	uint8_t buf[REQ_LIMIT + 8];
	SSL *s;
	long n;

	s = tls_accept(v->ctx, v->fd, v->timeout_ms, v->peer, v->err,
		       sizeof(v->err));
	v->took = io_now_ms() - t0;
	v->ok = s;
	while (s) {
		n = tls_read_frame(s, buf + 5, REQ_LIMIT, 2000, v->err,
				   sizeof(v->err));
		if (n < 0)
			break;
		memcpy(buf, "echo ", 5);
		if (tls_write_frame(s, buf, n + 5, 2000, v->err,
				    sizeof(v->err)))
			break;
		v->reqs++;
	}
	tls_free(s);
	close(v->fd);
	return NULL;
}

static void srv_start(struct srv *v, SSL_CTX *ctx, int fd, int timeout_ms)
{
	memset(v, 0, sizeof(*v));
	v->ctx = ctx;
	v->fd = fd;
	v->timeout_ms = timeout_ms;
	pthread_create(&v->th, NULL, serve, v);
}

/* A client's rings: one per key it is given (contexts live to the end) */
static struct ring rings[16];
static int nrings;

/* The server (its ring), or a client named client_name with key k */
static SSL_CTX *ctx_new(bool server, const uint8_t *k, const char *alpn)
{
	struct ring *r = server ? &server_ring : &rings[nrings++ % 16];
	SSL_CTX *ctx;

	if (!server)
		*r = (struct ring){ SERVER, k };
	ctx = tls_ctx_new(server, server ? SERVER : client_name, key_of, r,
			  alpn, err, sizeof(err));

	if (!ctx)
		fprintf(stderr, "tls_ctx_new: %s\n", err);
	return ctx;
}

/*
 * A client (key ck, version alpn) asks a server (key sk): the client's
 * 0 or -1 (err), the server's outcome in *v
 */
static int call(const uint8_t *ck, const char *alpn, SSL_CTX *sctx,
		struct srv *v, const char *req, char *reply, size_t rlen)
{
	SSL_CTX *cctx = ctx_new(false, ck, alpn);
	int sv[2], ret = -1;
	SSL *s;
	long n;

	err[0] = 0;
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	srv_start(v, sctx, sv[1], 3000);
	s = tls_connect(cctx, sv[0], SERVER, 3000, err, sizeof(err));
	if (s &&
	    !tls_write_frame(s, req, strlen(req), 3000, err, sizeof(err))) {
		n = tls_read_frame(s, (uint8_t *)reply, rlen - 1, 3000, err,
				   sizeof(err));
		if (n >= 0) {
			reply[n] = 0;
			ret = 0;
		}
	}
	tls_free(s);
	close(sv[0]);
	pthread_join(v->th, NULL);
	tls_ctx_free(cctx);
	return ret;
}

static void test_round_trip(SSL_CTX *sctx)
{
	SSL_CTX *cctx = ctx_new(false, key, TLS_ALPN);
	char reply[64];
	struct srv v;
	int sv[2], i;
	SSL *s;
	long n;

	CHECK(!call(key, TLS_ALPN, sctx, &v, "migrd/1 hello\n", reply,
		    sizeof(reply)));
	CHECK(!strcmp(reply, "echo migrd/1 hello\n"));
	CHECK(v.ok && v.reqs == 1);
	/* the server saw the end between frames: no error to log */
	CHECK(!strcmp(v.err, "connection closed"));

	/* What was agreed: TLS 1.3, the PSK, ECDHE too, our version */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	srv_start(&v, sctx, sv[1], 3000);
	s = tls_connect(cctx, sv[0], SERVER, 3000, err, sizeof(err));
	CHECK(s);
	if (s) {
		const unsigned char *p;
		unsigned int len;

		CHECK(SSL_version(s) == TLS1_3_VERSION);
		CHECK(SSL_session_reused(s) == 1); /* the external PSK */
		CHECK(!strcmp(SSL_get_cipher_name(s),
			      "TLS_AES_128_GCM_SHA256"));
		/* psk_dhe_ke: a key share was exchanged */
		CHECK(SSL_get_negotiated_group(s) != 0);
		SSL_get0_alpn_selected(s, &p, &len);
		CHECK(len == 7 && !memcmp(p, "migrd/1", 7));
		/* several requests on one connection, in order */
		for (i = 0; i < 3; i++) {
			char req[16];

			snprintf(req, sizeof(req), "req %d\n", i);
			CHECK(!tls_write_frame(s, req, strlen(req), 3000, err,
					       sizeof(err)));
			n = tls_read_frame(s, (uint8_t *)reply,
					   sizeof(reply) - 1, 3000, err,
					   sizeof(err));
			CHECK(n == (long)strlen(req) + 5 &&
			      !memcmp(reply + 5, req, strlen(req)));
		}
		/* no session ticket to resume with later */
		CHECK(!SSL_SESSION_is_resumable(SSL_get0_session(s)));
		/* an empty body is a frame too */
		CHECK(!tls_write_frame(s, "", 0, 3000, err, sizeof(err)));
		n = tls_read_frame(s, (uint8_t *)reply, sizeof(reply) - 1, 3000,
				   err, sizeof(err));
		CHECK(n == 5);
	}
	tls_free(s);
	close(sv[0]);
	pthread_join(v.th, NULL);
	CHECK(v.reqs == 4);
	tls_ctx_free(cctx);
}

static void test_wrong_key(SSL_CTX *sctx)
{
	long long t0 = io_now_ms();
	char reply[64];
	struct srv v;

	CHECK(call(other, TLS_ALPN, sctx, &v, "migrd/1 hello\n", reply,
		   sizeof(reply)) == -1);
	/* both sides name it, well before any deadline */
	CHECK(io_now_ms() - t0 < 1500);
	CHECK(!v.ok && v.reqs == 0);
	CHECK(!strncmp(v.err, "wrong key (", 11));
	CHECK(!strncmp(
		err,
		"refused the TLS handshake: wrong key, or this host is not its peer? (",
		68));
	printf("wrong key: server \"%s\", client \"%s\"\n", v.err, err);
}

static void test_versions(SSL_CTX *sctx)
{
	SSL_CTX *odd;
	char reply[64];
	struct srv v;

	/* A client of another version: the server says which both speak */
	CHECK(call(key, "migrd/2", sctx, &v, "migrd/1 hello\n", reply,
		   sizeof(reply)) == -1);
	CHECK(!v.ok && !strcmp(v.err, "peer speaks protocol migrd/2, this "
				      "migrd speaks migrd/1"));
	CHECK(strstr(err, "refused the TLS handshake: it does not speak "
			  "migrd/2") == err);
	printf("other version: server \"%s\", client \"%s\"\n", v.err, err);

	/* A client that names no version */
	CHECK(call(key, NULL, sctx, &v, "migrd/1 hello\n", reply,
		   sizeof(reply)) == -1);
	CHECK(!v.ok && !strcmp(v.err, "peer named no protocol version "
				      "(ALPN), this migrd speaks migrd/1"));
	CHECK(v.reqs == 0);

	/* A server that selects none: the client refuses it */
	odd = ctx_new(true, key, TLS_ALPN);
	SSL_CTX_set_alpn_select_cb(odd, NULL, NULL);
	CHECK(call(key, TLS_ALPN, odd, &v, "migrd/1 hello\n", reply,
		   sizeof(reply)) == -1);
	CHECK(!strcmp(err, "selected no protocol version (ALPN), this migrd "
			   "speaks migrd/1"));
	CHECK(v.reqs == 0);
	tls_ctx_free(odd);
}

/* A client of OpenSSL's own, blocking with a timeout, for the odd cases */
static const char *raw_identity;
static uint8_t raw_psk[TLS_PSK_LEN];

static unsigned int raw_psk_cb(SSL *s, const char *hint, char *id,
			       unsigned int max_id, unsigned char *psk,
			       unsigned int max_psk)
{
	snprintf(id, max_id, "%s", raw_identity);
	memcpy(psk, raw_psk, TLS_PSK_LEN);
	return TLS_PSK_LEN;
}

static int raw_client(int version, const char *identity, struct srv *v,
		      SSL_CTX *sctx)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	struct timeval tv = { .tv_sec = 3 };
	static const unsigned char alpn[] = "\x07migrd/1";
	int sv[2], ret;
	SSL *s;

	raw_identity = identity;
	tls_psk_derive(key, 32, identity ? identity : "", SERVER, raw_psk);
	SSL_CTX_set_min_proto_version(ctx, version);
	SSL_CTX_set_max_proto_version(ctx, version);
	if (version == TLS1_2_VERSION)
		SSL_CTX_set_cipher_list(ctx, "PSK-AES128-GCM-SHA256");
	/* the callback Python's ssl and openssl s_client use */
	if (identity)
		SSL_CTX_set_psk_client_callback(ctx, raw_psk_cb);
	SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	srv_start(v, sctx, sv[1], 3000);
	s = SSL_new(ctx);
	SSL_set_fd(s, sv[0]);
	ret = -1;
	/* one frame, "hi", and its echo */
	if (SSL_connect(s) == 1 && SSL_write(s, "\0\0\0\2hi", 6) == 6 &&
	    SSL_read(s, err, sizeof(err)) == 4 + 7)
		ret = 0;
	ERR_clear_error();
	SSL_free(s);
	close(sv[0]);
	pthread_join(v->th, NULL);
	SSL_CTX_free(ctx);
	return ret;
}

static void test_raw_clients(SSL_CTX *sctx)
{
	struct srv v;

	/* OpenSSL's plain PSK client callback (identity: its name) works */
	CHECK(raw_client(TLS1_3_VERSION, "a", &v, sctx) == 0);
	CHECK(v.ok && v.reqs == 1 && !strcmp(v.peer, "a"));
	/* a name the server has no key for: refused, whatever the key */
	CHECK(raw_client(TLS1_3_VERSION, "mallory", &v, sctx) == -1);
	CHECK(!v.ok && !strcmp(v.err, "mallory is not a peer of this host "
				      "(no peer line names it)"));
	/* not a host name at all */
	CHECK(raw_client(TLS1_3_VERSION, "a b", &v, sctx) == -1);
	CHECK(!v.ok && !strcmp(v.err, "peer named itself 'a b', not a host "
				      "name"));
	/* no PSK at all: a TLS client, but not a migrd */
	CHECK(raw_client(TLS1_3_VERSION, NULL, &v, sctx) == -1);
	CHECK(!v.ok &&
	      !strcmp(v.err, "client offered no pre-shared key, not a "
			     "migrd (no suitable signature algorithm)"));
	/* TLS 1.2, even with the right PSK: refused */
	CHECK(raw_client(TLS1_2_VERSION, "a", &v, sctx) == -1);
	CHECK(!v.ok && v.reqs == 0 &&
	      !strcmp(v.err, "TLS handshake failed: unsupported protocol"));
	printf("TLS 1.2: server \"%s\"\n", v.err);
}

/* Bytes that never make a whole hello, one every 50 ms */
static void *trickle(void *arg)
{
	int fd = *(int *)arg, i;
	/* a handshake record of 300 bytes: ClientHello, then nothing */
	static const uint8_t hdr[] = { 0x16, 0x03, 0x01, 0x01, 0x2c, 0x01 };

	for (i = 0; i < 40; i++) {
		if (send(fd, i < (int)sizeof(hdr) ? &hdr[i] : hdr, 1,
			 MSG_NOSIGNAL) != 1)
			break;
		usleep(50000);
	}
	return NULL;
}

static void test_stall(SSL_CTX *sctx)
{
	struct srv v;
	pthread_t th;
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	srv_start(&v, sctx, sv[1], 500);
	pthread_create(&th, NULL, trickle, &sv[0]);
	pthread_join(v.th, NULL);
	/* one deadline for the whole handshake, however it trickles */
	CHECK(!v.ok && v.took >= 450 && v.took < 1000);
	CHECK(!strcmp(v.err, "timed out during the TLS handshake"));
	pthread_join(th, NULL);
	close(sv[0]);

	/* Not TLS at all: refused at once */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	srv_start(&v, sctx, sv[1], 3000);
	CHECK(write(sv[0], "MGRD\1\1\0\0garbage, not a TLS record\n", 35) ==
	      35);
	pthread_join(v.th, NULL);
	CHECK(!v.ok && v.took < 1000 &&
	      !strcmp(v.err, "not TLS 1.3, an older migrd? (wrong version "
			     "number)"));
	printf("plain bytes: server \"%s\"\n", v.err);
	close(sv[0]);
}

/* A server that never answers: the client gives up at its deadline */
static void test_client_deadline(void)
{
	SSL_CTX *cctx = ctx_new(false, key, TLS_ALPN);
	long long t0 = io_now_ms(), took;
	int sv[2];
	SSL *s;

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	s = tls_connect(cctx, sv[0], SERVER, 300, err, sizeof(err));
	took = io_now_ms() - t0;
	CHECK(!s && took >= 250 && took < 800);
	CHECK(!strcmp(err, "timed out during the TLS handshake"));
	close(sv[0]);
	close(sv[1]);
	tls_ctx_free(cctx);
}

static void test_sizes(SSL_CTX *sctx)
{
	SSL_CTX *cctx = ctx_new(false, key, TLS_ALPN);
	static char big[WIRE_DATA_MAX + 1];
	char reply[64];
	struct srv v;
	int sv[2];
	SSL *s;

	memset(big, 'x', sizeof(big));
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	srv_start(&v, sctx, sv[1], 3000);
	s = tls_connect(cctx, sv[0], SERVER, 3000, err, sizeof(err));
	CHECK(s);
	/* over what this side ever sends: not sent */
	CHECK(tls_write_frame(s, big, WIRE_DATA_MAX + 1, 3000, err,
			      sizeof(err)) == -1);
	CHECK(!strcmp(err, "frame of 65537 bytes exceeds 65536"));
	/* the longest request passes; a reply over the reader's cap not */
	CHECK(!tls_write_frame(s, big, REQ_LIMIT, 3000, err, sizeof(err)));
	CHECK(tls_read_frame(s, (uint8_t *)reply, sizeof(reply), 3000, err,
			     sizeof(err)) == -1);
	CHECK(!strcmp(err, "frame of 4101 bytes exceeds 64"));
	tls_free(s);
	close(sv[0]);
	pthread_join(v.th, NULL);
	CHECK(v.reqs == 1);

	/* A request over the server's cap: refused, nothing answered */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	srv_start(&v, sctx, sv[1], 3000);
	s = tls_connect(cctx, sv[0], SERVER, 3000, err, sizeof(err));
	CHECK(!tls_write_frame(s, big, REQ_LIMIT + 1, 3000, err, sizeof(err)));
	CHECK(tls_read_frame(s, (uint8_t *)reply, sizeof(reply), 3000, err,
			     sizeof(err)) == -1);
	tls_free(s);
	close(sv[0]);
	pthread_join(v.th, NULL);
	CHECK(v.ok && v.reqs == 0 &&
	      !strcmp(v.err, "frame of 4097 bytes exceeds 4096"));
	tls_ctx_free(cctx);
}

/* Copies a client's bytes to a server and back, keeping the client's */
struct relay {
	int c, s;
	uint8_t rec[65536];
	size_t len;
};

static void *relay(void *arg)
{
	struct relay *r = arg;
	struct pollfd p[2] = { { .fd = r->c, .events = POLLIN },
			       { .fd = r->s, .events = POLLIN } };
	uint8_t buf[4096];
	ssize_t n;

	while (poll(p, 2, 3000) > 0) {
		if (p[0].revents) {
			n = read(r->c, buf, sizeof(buf));
			if (n <= 0)
				break;
			if (r->len + n <= sizeof(r->rec)) {
				memcpy(r->rec + r->len, buf, n);
				r->len += n;
			}
			if (write(r->s, buf, n) != n)
				break;
		}
		if (p[1].revents) {
			n = read(r->s, buf, sizeof(buf));
			if (n <= 0)
				break;
			if (write(r->c, buf, n) != n)
				break;
		}
	}
	shutdown(r->s, SHUT_WR);
	shutdown(r->c, SHUT_WR);
	return NULL;
}

/*
 * What a client sent, replayed whole to a new connection: the server's
 * fresh random and key share give new handshake keys, under which the
 * recorded Finished and request do not decrypt (and TLS 1.3's record
 * sequence numbers refuse a record repeated inside one connection)
 */
static void test_replay(SSL_CTX *sctx)
{
	static struct relay r;
	SSL_CTX *cctx = ctx_new(false, key, TLS_ALPN);
	int a[2], b[2];
	char reply[64];
	struct srv v;
	pthread_t th;
	SSL *s;

	socketpair(AF_UNIX, SOCK_STREAM, 0, a);
	socketpair(AF_UNIX, SOCK_STREAM, 0, b);
	r.c = a[1];
	r.s = b[0];
	pthread_create(&th, NULL, relay, &r);
	srv_start(&v, sctx, b[1], 3000);
	s = tls_connect(cctx, a[0], SERVER, 3000, err, sizeof(err));
	CHECK(s && !tls_write_frame(s, "migrd/1 hello\n", 14, 3000, err,
				    sizeof(err)));
	CHECK(tls_read_frame(s, (uint8_t *)reply, sizeof(reply), 3000, err,
			     sizeof(err)) == 19);
	tls_free(s);
	close(a[0]);
	pthread_join(v.th, NULL);
	pthread_join(th, NULL);
	close(a[1]);
	close(b[0]);
	CHECK(v.reqs == 1 && r.len > 100);

	socketpair(AF_UNIX, SOCK_STREAM, 0, a);
	srv_start(&v, sctx, a[1], 3000);
	CHECK(write(a[0], r.rec, r.len) == (ssize_t)r.len);
	pthread_join(v.th, NULL);
	CHECK(!v.ok && v.reqs == 0 && v.took < 1000);
	printf("replayed: server \"%s\"\n", v.err);
	close(a[0]);
	tls_ctx_free(cctx);
}

static void test_psk(void)
{
	uint8_t a[TLS_PSK_LEN], b[TLS_PSK_LEN], c[TLS_PSK_LEN];
	uint8_t d[TLS_PSK_LEN], e[TLS_PSK_LEN];

	/*
	 * derived, not the file itself; the same file and names, the same
	 * PSK; either name, or the direction, changed: another
	 */
	CHECK(!tls_psk_derive(key, 32, "a", "b", a) &&
	      !tls_psk_derive(key, 32, "a", "b", b) &&
	      !tls_psk_derive(other, 32, "a", "b", c) &&
	      !tls_psk_derive(key, 32, "b", "a", d) &&
	      !tls_psk_derive(key, 32, "a", "c", e));
	CHECK(!memcmp(a, b, sizeof(a)) && memcmp(a, c, sizeof(a)) &&
	      memcmp(a, key, sizeof(a)) && memcmp(a, d, sizeof(a)) &&
	      memcmp(a, e, sizeof(a)));
}

/*
 * Identities: the server knows a client by the key it holds. A host
 * with another pair's key, naming itself as the key's host, as a host
 * the server knows, or dialling the server as another host: refused.
 */
static void test_identity(SSL_CTX *sctx)
{
	char reply[64];
	struct srv v;

	/* a, with a's key: the server learns its name */
	CHECK(!call(key, TLS_ALPN, sctx, &v, "x\n", reply, sizeof(reply)));
	CHECK(v.ok && !strcmp(v.peer, "a"));
	/* c (unknown here), with a's key */
	client_name = "c";
	CHECK(call(key, TLS_ALPN, sctx, &v, "x\n", reply, sizeof(reply)));
	CHECK(!v.ok && !strcmp(v.err, "c is not a peer of this host (no "
				      "peer line names it)"));
	CHECK(strstr(err, "refused the TLS handshake: is c among its peers?"));
	printf("unknown host: client \"%s\"\n", err);
	/* c says it is a, with its own key (c's and b's): the binder fails */
	client_name = "a";
	CHECK(call(other, TLS_ALPN, sctx, &v, "x\n", reply, sizeof(reply)));
	CHECK(!v.ok && strstr(v.err, "wrong key"));
	CHECK(strstr(err, "wrong key, or this host is not its peer?"));
	printf("another host's identity: client \"%s\"\n", err);
}

int main(void)
{
	SSL_CTX *sctx;

	/* the tests' own clients write to closed sockets */
	signal(SIGPIPE, SIG_IGN);
	sctx = ctx_new(true, key, TLS_ALPN);
	if (!sctx)
		return 1;
	test_psk();
	test_round_trip(sctx);
	test_identity(sctx);
	test_wrong_key(sctx);
	test_versions(sctx);
	test_raw_clients(sctx);
	test_stall(sctx);
	test_client_deadline();
	test_sizes(sctx);
	test_replay(sctx);
	tls_ctx_free(sctx);
	return unit_done("test_tls");
}
