// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The peer link: TLS 1.3, external PSK, ALPN as the version (tls.h) */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/kdf.h>

#include "conf_peer.h"
#include "sockio.h"
#include "tls.h"
#include "wire.h"

/* HKDF's salt and label: a PSK for this link only, never the file itself */
static char psk_salt[] = "migrd peer link";
static char psk_info[] = "migrd/1 tls13 external psk";
static char psk_digest[] = "SHA256";

/*
 * TLS 1.3's mandatory suite, the only one offered: an external PSK has
 * one hash (SHA-256), the suite's
 */
#define TLS_SUITE "TLS_AES_128_GCM_SHA256"
static const unsigned char suite_id[] = { 0x13, 0x01 };

/* A context's names, keys and version, its app data */
struct tls_key {
	char self[TLS_NAME_MAX]; /* this host's name */
	tls_key_fn key_of;
	void *arg;
	char alpn[32]; /* "" for none (tests) */
	unsigned char proto[33]; /* alpn as ALPN's wire list */
};

/* A connection's app data: its socket, its peer, why a callback refused */
struct tls_conn {
	int fd;
	bool psk_offered; /* server: the client named a PSK */
	char peer[TLS_NAME_MAX]; /* client: whom it dials; server: who came */
	char why[200];
};

int tls_psk_derive(const uint8_t *key, size_t len, const char *client,
		   const char *server, uint8_t psk[TLS_PSK_LEN])
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	char info[sizeof(psk_info) + 2 * TLS_NAME_MAX + 2];
	OSSL_PARAM p[5];
	int ret = -1, n;

	/* both names in the key: one pair's key opens no other direction */
	n = snprintf(info, sizeof(info), "%s %s>%s", psk_info, client, server);
	if (!kc || n < 0 || n >= (int)sizeof(info))
		goto out;
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						psk_digest, 0);
	p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						 (void *)key, len);
	p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, psk_salt,
						 sizeof(psk_salt) - 1);
	p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n);
	p[4] = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kc, psk, TLS_PSK_LEN, p) == 1)
		ret = 0;
out:
	EVP_KDF_CTX_free(kc);
	EVP_KDF_free(kdf);
	return ret;
}

/*
 * The session both sides resume: the PSK of the key shared with peer,
 * from client to server, the suite, TLS 1.3; NULL with c->why
 */
static SSL_SESSION *psk_session(SSL *s, const char *client, const char *server,
				const char *peer)
{
	const struct tls_key *k = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
	const SSL_CIPHER *c = SSL_CIPHER_find(s, suite_id);
	struct tls_conn *tc = SSL_get_app_data(s);
	uint8_t key[WIRE_KEY_MAX + 1], psk[TLS_PSK_LEN];
	SSL_SESSION *sess = NULL;
	size_t len = 0;

	if (k->key_of(peer, key, &len, k->arg)) {
		snprintf(
			tc->why, sizeof(tc->why),
			"%s is not a peer of this host (no peer line names it)",
			peer);
		goto out;
	}
	sess = SSL_SESSION_new();
	if (!sess || !c || tls_psk_derive(key, len, client, server, psk) ||
	    !SSL_SESSION_set1_master_key(sess, psk, TLS_PSK_LEN) ||
	    !SSL_SESSION_set_cipher(sess, c) ||
	    !SSL_SESSION_set_protocol_version(sess, TLS1_3_VERSION)) {
		SSL_SESSION_free(sess);
		sess = NULL;
	}
out:
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(psk, sizeof(psk));
	return sess;
}

static int use_session(SSL *s, const EVP_MD *md, const unsigned char **id,
		       size_t *idlen, SSL_SESSION **sessp)
{
	const struct tls_key *k = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
	struct tls_conn *c = SSL_get_app_data(s);
	SSL_SESSION *sess = psk_session(s, k->self, c->peer, c->peer);

	if (!sess)
		return 0;
	/* Only one suite is offered, so a retried hello keeps its hash */
	if (md && md != SSL_CIPHER_get_handshake_digest(
				SSL_SESSION_get0_cipher(sess))) {
		SSL_SESSION_free(sess);
		return 0;
	}
	/* the identity is this host's name: the server picks its key by it */
	*id = (const unsigned char *)k->self;
	*idlen = strlen(k->self);
	*sessp = sess;
	return 1;
}

static int find_session(SSL *s, const unsigned char *id, size_t idlen,
			SSL_SESSION **sessp)
{
	const struct tls_key *k = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
	struct tls_conn *c = SSL_get_app_data(s);
	char name[TLS_NAME_MAX];
	size_t i;

	*sessp = NULL;
	c->psk_offered = true;
	for (i = 0; i < idlen && i < sizeof(name) - 1; i++)
		name[i] = isprint(id[i]) ? id[i] : '?';
	name[i] = 0;
	if (idlen >= sizeof(name) || !peer_name_ok(name)) {
		snprintf(c->why, sizeof(c->why),
			 "peer named itself '%.40s', not a host name", name);
		return 0;
	}
	*sessp = psk_session(s, name, k->self, name);
	if (*sessp)
		snprintf(c->peer, sizeof(c->peer), "%s", name);
	return *sessp != NULL;
}

/* The versions a client offers, printable, for the refusal */
static void offered(const unsigned char *in, unsigned int inlen, char *out,
		    size_t outlen)
{
	size_t o = 0;
	unsigned int i, n;

	out[0] = 0;
	for (i = 0; i < inlen && o + 4 < outlen; i += n) {
		n = in[i++];
		if (o)
			out[o++] = ',';
		for (; n && i < inlen && o + 4 < outlen; n--, i++)
			out[o++] = isprint(in[i]) ? in[i] : '?';
		if (n)
			break;
	}
	out[o] = 0;
}

static int alpn_select(SSL *s, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	const struct tls_key *k = arg;
	struct tls_conn *c = SSL_get_app_data(s);
	size_t want = strlen(k->alpn);
	char what[64];
	unsigned int i;

	/* An exact match only, among the client's list */
	for (i = 0; i < inlen; i += 1 + in[i]) {
		if (in[i] == want && i + 1 + want <= inlen &&
		    !memcmp(in + i + 1, k->alpn, want)) {
			*out = in + i + 1;
			*outlen = want;
			return SSL_TLSEXT_ERR_OK;
		}
	}
	offered(in, inlen, what, sizeof(what));
	snprintf(c->why, sizeof(c->why),
		 "peer speaks protocol %s, this migrd speaks %s", what,
		 k->alpn);
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

SSL_CTX *tls_ctx_new(bool server, const char *self, tls_key_fn key_of,
		     void *arg, const char *alpn, char *err, size_t errlen)
{
	struct tls_key *k = calloc(1, sizeof(*k));
	SSL_CTX *ctx = NULL;

	if ((alpn && strlen(alpn) >= sizeof(k->alpn)) || !peer_name_ok(self)) {
		free(k);
		snprintf(err, errlen, "ALPN name %s or host name %s unfit",
			 alpn ? alpn : "", self);
		return NULL;
	}
	if (!k)
		goto fail;
	strcpy(k->self, self);
	k->key_of = key_of;
	k->arg = arg;
	if (alpn) {
		strcpy(k->alpn, alpn);
		k->proto[0] = strlen(alpn);
		memcpy(k->proto + 1, alpn, k->proto[0]);
	}
	ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(ctx, TLS_SUITE) ||
	    !SSL_CTX_set_num_tickets(ctx, 0) ||
	    !SSL_CTX_set_max_early_data(ctx, 0) ||
	    !SSL_CTX_set_recv_max_early_data(ctx, 0))
		goto fail;
	/*
	 * Nothing to resume: no tickets, no cache. SSL_OP_ALLOW_NO_DHE_KEX
	 * stays off, so the PSK always comes with an ECDHE exchange.
	 */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (server) {
		SSL_CTX_set_psk_find_session_callback(ctx, find_session);
		SSL_CTX_set_alpn_select_cb(ctx, alpn_select, k);
	} else {
		SSL_CTX_set_psk_use_session_callback(ctx, use_session);
		/* 0 is success here */
		if (alpn &&
		    SSL_CTX_set_alpn_protos(ctx, k->proto, k->proto[0] + 1))
			goto fail;
	}
	SSL_CTX_set_app_data(ctx, k);
	return ctx;
fail:
	snprintf(err, errlen, "cannot set up TLS: %s",
		 ERR_reason_error_string(ERR_get_error()) ?: "out of memory");
	SSL_CTX_free(ctx);
	if (k)
		OPENSSL_cleanse(k, sizeof(*k));
	free(k);
	return NULL;
}

void tls_ctx_free(SSL_CTX *ctx)
{
	struct tls_key *k;

	if (!ctx)
		return;
	k = SSL_CTX_get_app_data(ctx);
	SSL_CTX_free(ctx);
	OPENSSL_cleanse(k, sizeof(*k));
	free(k);
}

/* Send what OpenSSL left in its write BIO: records, an alert */
static int flush(SSL *s, long long deadline)
{
	struct tls_conn *c = SSL_get_app_data(s);
	BIO *w = SSL_get_wbio(s);
	char *p;
	long n = BIO_get_mem_data(w, &p);

	if (n <= 0)
		return 0;
	if (io_write_all(c->fd, p, n, io_left_ms(deadline)))
		return -1;
	(void)BIO_reset(w);
	return 0;
}

/* What the socket has (some of it), into OpenSSL's read BIO */
static int fill(SSL *s, long long deadline)
{
	struct tls_conn *c = SSL_get_app_data(s);
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	char buf[4096];
	ssize_t n;
	int left;

	for (;;) {
		left = io_left_ms(deadline);
		if (!left) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(&p, 1, left);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0)
			continue;
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (BIO_write(SSL_get_rbio(s), buf, n) != n) {
			errno = ENOMEM;
			return -1;
		}
		return 0;
	}
}

enum tls_op { TLS_HANDSHAKE, TLS_READ, TLS_WRITE };

/*
 * A socket's errno, in one line; an end between frames is "connection
 * closed" alone (peer.c tells it from a failure)
 */
static void io_error(int e, enum tls_op op, bool sending, char *err,
		     size_t errlen)
{
	const char *when = "";

	if (op == TLS_HANDSHAKE)
		when = " during the TLS handshake";
	else if (sending)
		when = " while sending";

	if (e == ECONNRESET || e == EPIPE)
		snprintf(err, errlen, "connection closed%s", when);
	else if (e == ETIMEDOUT)
		snprintf(err, errlen, "timed out%s",
			 *when ? when : " waiting for a frame");
	else
		snprintf(err, errlen, "%s%s", strerror(e), when);
}

/*
 * Why OpenSSL failed, in one line: a callback's reason first, then the
 * few a user can act upon, then OpenSSL's own reason
 */
static void ssl_error(SSL *s, int e, bool hs, char *err, size_t errlen)
{
	struct tls_conn *c = SSL_get_app_data(s);
	const struct tls_key *k = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
	unsigned long code = ERR_peek_error();
	const char *why = ERR_reason_error_string(code);
	char buf[128];

	if (!why) {
		ERR_error_string_n(code, buf, sizeof(buf));
		why = buf;
	}
	if (c->why[0])
		snprintf(err, errlen, "%s", c->why);
	else if (e == SSL_ERROR_ZERO_RETURN)
		snprintf(err, errlen, "connection closed");
	else if (ERR_GET_LIB(code) != ERR_LIB_SSL)
		snprintf(err, errlen, "TLS %s failed: %s",
			 hs ? "handshake" : "record", code ? why : "no reason");
	else if (SSL_is_server(s) && hs && !c->psk_offered &&
		 ERR_GET_REASON(code) == SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM)
		/* TLS, but not us: it wants a certificate */
		snprintf(err, errlen,
			 "client offered no pre-shared key, not a migrd (%s)",
			 why);
	else if (hs && ERR_GET_REASON(code) == SSL_R_WRONG_VERSION_NUMBER)
		snprintf(err, errlen, "not TLS 1.3, an older migrd? (%s)", why);
	else if (ERR_GET_REASON(code) == SSL_R_BINDER_DOES_NOT_VERIFY)
		snprintf(err, errlen, "wrong key (%s)", why);
	else if (hs &&
		 (ERR_GET_REASON(code) == SSL_R_TLSV1_ALERT_DECRYPT_ERROR ||
		  ERR_GET_REASON(code) == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER))
		/*
		 * A server whose binder check fails says illegal_parameter
		 * (OpenSSL 3.0), or decrypt_error (newer ones, as RFC 8446)
		 */
		snprintf(
			err, errlen,
			"refused the TLS handshake: wrong key, or this host is not its peer? (%s)",
			why);
	else if (hs && !SSL_is_server(s) &&
		 ERR_GET_REASON(code) == SSL_R_TLSV1_ALERT_INTERNAL_ERROR)
		/* its PSK callback found no key for this host's name */
		snprintf(
			err, errlen,
			"refused the TLS handshake: is %s among its peers? (%s)",
			k->self, why);
	else if (ERR_GET_REASON(code) ==
		 SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)
		snprintf(err, errlen,
			 "refused the TLS handshake: it does not speak %s (%s)",
			 k->alpn[0] ? k->alpn : "a version without ALPN", why);
	else
		snprintf(err, errlen, "TLS %s failed: %s",
			 hs ? "handshake" : "record", why);
	ERR_clear_error();
}

/*
 * One OpenSSL call until it is done, moving its bytes between the memory
 * BIOs and the socket, every wait before deadline. 0 or -1 with err.
 */
static int drive(SSL *s, enum tls_op op, void *buf, size_t len, size_t *done,
		 long long deadline, char *err, size_t errlen)
{
	int rc, e;

	for (;;) {
		ERR_clear_error();
		if (op == TLS_HANDSHAKE)
			rc = SSL_do_handshake(s);
		else if (op == TLS_READ)
			rc = SSL_read_ex(s, buf, len, done);
		else
			rc = SSL_write_ex(s, buf, len, done);
		e = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(s, rc);
		/* Also an alert that says why this side gives up */
		if (flush(s, deadline) && e != SSL_ERROR_SSL) {
			io_error(errno, op, true, err, errlen);
			return -1;
		}
		if (e == SSL_ERROR_NONE)
			return 0;
		if (e != SSL_ERROR_WANT_READ) {
			ssl_error(s, e, op == TLS_HANDSHAKE, err, errlen);
			return -1;
		}
		if (fill(s, deadline)) {
			io_error(errno, op, false, err, errlen);
			return -1;
		}
	}
}

static void conn_free(SSL *s)
{
	if (!s)
		return;
	free(SSL_get_app_data(s));
	SSL_free(s);
}

/* The version each side speaks, once the handshake is done */
static int check_alpn(SSL *s, bool server, char *err, size_t errlen)
{
	const struct tls_key *k = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
	const unsigned char *p;
	unsigned int n;

	SSL_get0_alpn_selected(s, &p, &n);
	if (n && n == strlen(k->alpn) && !memcmp(p, k->alpn, n))
		return 0;
	if (server)
		snprintf(
			err, errlen,
			"peer named no protocol version (ALPN), this migrd speaks %s",
			k->alpn);
	else
		snprintf(
			err, errlen,
			"selected no protocol version (ALPN), this migrd speaks %s",
			k->alpn[0] ? k->alpn : "none");
	return -1;
}

static SSL *tls_open(SSL_CTX *ctx, int fd, char peer[TLS_NAME_MAX], bool server,
		     int timeout_ms, char *err, size_t errlen)
{
	long long deadline = io_now_ms() + timeout_ms;
	struct tls_conn *c = calloc(1, sizeof(*c));
	BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());
	SSL *s = SSL_new(ctx);

	if (!c || !r || !w || !s) {
		snprintf(err, errlen, "out of memory");
		BIO_free(r);
		BIO_free(w);
		SSL_free(s);
		free(c);
		return NULL;
	}
	c->fd = fd;
	if (!server)
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
	SSL_set_app_data(s, c);
	/* Our BIOs: sockio's bounded writes, never SIGPIPE (MSG_NOSIGNAL) */
	SSL_set_bio(s, r, w);
	if (server)
		SSL_set_accept_state(s);
	else
		SSL_set_connect_state(s);
	if (drive(s, TLS_HANDSHAKE, NULL, 0, NULL, deadline, err, errlen) ||
	    check_alpn(s, server, err, errlen)) {
		conn_free(s);
		return NULL;
	}
	if (server)
		snprintf(peer, TLS_NAME_MAX, "%s", c->peer);
	return s;
}

SSL *tls_accept(SSL_CTX *ctx, int fd, int timeout_ms, char peer[TLS_NAME_MAX],
		char *err, size_t errlen)
{
	return tls_open(ctx, fd, peer, true, timeout_ms, err, errlen);
}

SSL *tls_connect(SSL_CTX *ctx, int fd, const char *peer, int timeout_ms,
		 char *err, size_t errlen)
{
	char name[TLS_NAME_MAX];

	snprintf(name, sizeof(name), "%s", peer);
	return tls_open(ctx, fd, name, false, timeout_ms, err, errlen);
}

int tls_write_frame(SSL *s, const void *body, size_t len, int timeout_ms,
		    char *err, size_t errlen)
{
	long long deadline = io_now_ms() + timeout_ms;
	uint8_t *buf;
	size_t done;
	int ret;

	/* The largest any frame may be: a request's reader allows less */
	if (len > WIRE_DATA_MAX) {
		snprintf(err, errlen, "frame of %zu bytes exceeds %d", len,
			 WIRE_DATA_MAX);
		return -1;
	}
	/* One write for header and body */
	buf = malloc(WIRE_HDR_LEN + len);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	wire_put_len(buf, len);
	memcpy(buf + WIRE_HDR_LEN, body, len);
	ret = drive(s, TLS_WRITE, buf, WIRE_HDR_LEN + len, &done, deadline, err,
		    errlen);
	free(buf);
	return ret;
}

/* Exactly len bytes of the stream, before deadline */
static int read_full(SSL *s, uint8_t *buf, size_t len, long long deadline,
		     char *err, size_t errlen)
{
	size_t done;

	while (len) {
		if (drive(s, TLS_READ, buf, len, &done, deadline, err, errlen))
			return -1;
		buf += done;
		len -= done;
	}
	return 0;
}

long tls_read_frame(SSL *s, uint8_t *buf, size_t max, int timeout_ms, char *err,
		    size_t errlen)
{
	long long deadline = io_now_ms() + timeout_ms;
	uint8_t hdr[WIRE_HDR_LEN];
	long len;

	if (read_full(s, hdr, sizeof(hdr), deadline, err, errlen))
		return -1;
	len = wire_peek_len(hdr, max, err, errlen);
	if (len < 0)
		return -1;
	if (read_full(s, buf, len, deadline, err, errlen)) {
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "truncated frame: %s", tmp);
		return -1;
	}
	return len;
}

void tls_free(SSL *s)
{
	if (!s)
		return;
	/* close_notify, sent if the socket takes it at once; no answer awaited */
	if (SSL_shutdown(s) >= 0)
		flush(s, io_now_ms() + 100);
	conn_free(s);
}
