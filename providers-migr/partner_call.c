// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The moving side of the partner protocol (partner.h): one request line to
 * this host's migrd per step, which relays it to the partner's host and
 * process and answers with one JSON line. The library never holds migrd's
 * key; without migrd a partner in another process cannot be reached and
 * the switch is refused before anything is touched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "partner.h"

#define CALL_TIMEOUT_S 45
#define REPLY_MAX 8192
/* rkey pairs per "keys" request: well under migrd's line limit */
#define KEYS_PER_LINE 160

static void gid_hex(const union ibv_gid *gid, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", gid->raw[i]);
}

/* Where the partner's migrd is: the address inside its RoCE v2 GID */
static int gid_host(const union ibv_gid *gid, char *host, size_t len)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(gid->raw, v4mapped, sizeof(v4mapped)))
		return inet_ntop(AF_INET, gid->raw + 12, host, len) ? 0 : -1;
	/* fe80::/10 needs an interface to mean anything */
	if (gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80)
		return -1;
	return inet_ntop(AF_INET6, gid->raw, host, len) ? 0 : -1;
}

/* The value after "key": in a JSON line (numbers and booleans) */
static const char *json_at(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p ? p + strlen(pat) : NULL;
}

static bool json_true(const char *json, const char *key)
{
	const char *p = json_at(json, key);

	return p && !strncmp(p, "true", 4);
}

static bool json_u64(const char *json, const char *key, uint64_t *v)
{
	const char *p = json_at(json, key);
	char *end;

	if (!p)
		return false;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return !errno && end != p;
}

/* The "error" string, unescaped enough for a one-line message */
static void json_error(const char *json, char *err, size_t errlen)
{
	const char *p = json_at(json, "error");
	size_t n = 0;

	if (!p || *p != '"') {
		snprintf(err, errlen, "no reason given");
		return;
	}
	for (p++; *p && *p != '"' && n + 1 < errlen; p++) {
		if (*p == '\\' && p[1])
			p++;
		err[n++] = *p;
	}
	err[n] = 0;
}

static int read_line(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len) {
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			return n < 0 ? errno : ECONNRESET;
		got += n;
		buf[got] = 0;
		if (memchr(buf, '\n', got))
			return 0;
	}
	return EMSGSIZE;
}

/*
 * One step: "OP QPN GID ARGS" to the partner of p through migrd; the reply's JSON
 * in reply. 0; EBUSY if the partner is switching itself; else an errno
 * with err set.
 */
static int call(struct migr_partner *p, char *reply, char *err, size_t errlen,
		const char *op, const char *fmt, ...)
{
	struct timeval tv = { .tv_sec = CALL_TIMEOUT_S };
	char line[4096], gid[33];
	const char *path;
	uint64_t pid;
	va_list ap;
	int fd, n, m, ret;

	gid_hex(&p->gid, gid);
	n = snprintf(line, sizeof(line),
		     "migrd/1 partner %s %d %u %s %s %u %s ", p->host, p->pid,
		     p->qpn, gid, op, p->qpn, gid);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0 || n + m + 1 >= (int)sizeof(line))
		return EMSGSIZE;
	n += m;
	line[n++] = '\n';

	fd = migr_migrd_connect(0, &path);
	if (fd < 0) {
		snprintf(
			err, errlen,
			"migrd is not running (%s: %s); QP 0x%x has its partner in another process, which only migrd can reach",
			path, strerror(errno), p->mqp->vqp.qp.qp_num);
		return EHOSTUNREACH;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send(fd, line, n, MSG_NOSIGNAL) != n)
		ret = errno ? errno : EIO;
	else
		ret = read_line(fd, reply, REPLY_MAX);
	close(fd);
	if (ret) {
		snprintf(err, errlen, "no answer from migrd: %s",
			 strerror(ret));
		return ret;
	}
	if (json_u64(reply, "pid", &pid) && pid)
		p->pid = pid;
	if (json_true(reply, "ok"))
		return 0;
	json_error(reply, err, errlen);
	return json_true(reply, "busy") ? EBUSY : EREMOTEIO;
}

int migr_partner_init(struct migr_partner *p, struct migr_qp *mqp, char *err,
		      size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->mqp = mqp;
	p->qpn = mqp->attr.dest_qp_num;
	p->gid = mqp->attr.ah_attr.grh.dgid;
	if (!mqp->attr.ah_attr.is_global ||
	    gid_host(&p->gid, p->host, sizeof(p->host))) {
		snprintf(
			err, errlen,
			"QP 0x%x: its partner is in another process but has no routable GID (RoCE v2 with an IP address is needed to find it)",
			mqp->vqp.qp.qp_num);
		return EOPNOTSUPP;
	}
	return 0;
}

static void fail_reason(struct migr_partner *p, const char *step, char *err,
			size_t errlen)
{
	char why[256];

	snprintf(why, sizeof(why), "%s", err);
	snprintf(err, errlen, "partner of QP 0x%x (QP 0x%x at %s): %s: %s",
		 p->mqp->vqp.qp.qp_num, p->qpn, p->host, step, why);
}

int migr_partner_prepare(struct migr_partner *p, unsigned int wait_ms,
			 char *err, size_t errlen)
{
	const struct ibv_qp_attr *a = &p->mqp->attr;
	char reply[REPLY_MAX];
	uint64_t v;
	int ret;

	ret = call(p, reply, err, errlen, "prepare", "%u %u %d %u",
		   p->mqp->vqp.qp.qp_num, MIGR_PARTNER_LEASE_MS + wait_ms,
		   a->qp_access_flags, a->max_rd_atomic);
	if (ret) {
		if (ret != EBUSY)
			fail_reason(p, "prepare", err, errlen);
		return ret;
	}
	p->prepared = true;
	p->access = json_u64(reply, "access", &v) ? (int)v : 0;
	p->rd_atomic = json_u64(reply, "rd_atomic", &v) ? (uint8_t)v : 0;
	return 0;
}

int migr_partner_suspend(struct migr_partner *p, unsigned int wait_ms,
			 char *err, size_t errlen)
{
	char reply[REPLY_MAX];
	int ret;

	ret = call(p, reply, err, errlen, "suspend", "%u", wait_ms);
	if (!ret && !json_u64(reply, "consumers", &p->consumers)) {
		snprintf(err, errlen, "no send count in its reply");
		ret = EPROTO;
	}
	if (ret) {
		fail_reason(p, "suspend", err, errlen);
		return ret;
	}
	p->suspended = true;
	return 0;
}

/* Our rkeys, virtual:physical: the partner's posts translate with them */
static int push_keys(struct migr_partner *p, char *err, size_t errlen)
{
	struct migr_context *ctx = p->mqp->ctx;
	char reply[REPLY_MAX], pairs[KEYS_PER_LINE * 18 + 1];
	struct migr_mr *mmr;
	unsigned int n = 0;
	size_t len = 0;
	int ret;

	list_for_each (&ctx->rec.mrs, mmr, entry) {
		if (!mmr->lower)
			continue;
		len += sprintf(pairs + len, "%s%x:%x", n ? "," : "",
			       mmr->vmr.ibv_mr.rkey, mmr->lower->rkey);
		if (++n < KEYS_PER_LINE)
			continue;
		ret = call(p, reply, err, errlen, "keys", "%s", pairs);
		if (ret)
			return ret;
		n = len = 0;
	}
	if (!n)
		return 0;
	return call(p, reply, err, errlen, "keys", "%s", pairs);
}

int migr_partner_reconnect(struct migr_partner *p, char *err, size_t errlen)
{
	struct migr_qp *mqp = p->mqp;
	struct migr_context *ctx = mqp->ctx;
	char reply[REPLY_MAX], gid[33];
	union ibv_gid ours;
	uint64_t v;
	int ret;

	if (ibv_query_gid(ctx->lower, mqp->attr.ah_attr.port_num,
			  mqp->attr.ah_attr.grh.sgid_index, &ours)) {
		snprintf(err, errlen, "QP 0x%x: its GID is gone",
			 mqp->vqp.qp.qp_num);
		return ENOENT;
	}
	gid_hex(&ours, gid);
	ret = push_keys(p, err, errlen);
	if (!ret)
		ret = call(p, reply, err, errlen, "reconnect", "%u %s %" PRIu64,
			   mqp->lower->qp_num, gid, mqp->n_consumers);
	if (!ret && (!json_u64(reply, "qpn", &v) || !v || v >> 24)) {
		snprintf(err, errlen, "no QP number in its reply");
		ret = EPROTO;
	}
	if (ret) {
		fail_reason(p, "reconnect", err, errlen);
		return ret;
	}
	p->new_qpn = v;
	/* Our QP connects to its new QP under the number we know it by */
	ret = migr_xlate_set(&ctx->remote, MIGR_XLATE_QPN_PHYS, p->qpn,
			     p->new_qpn);
	if (!ret)
		ret = migr_xlate_set(&ctx->remote, MIGR_XLATE_QPN, p->new_qpn,
				     p->qpn);
	if (ret)
		snprintf(err, errlen, "recording QP 0x%x's new number failed",
			 p->qpn);
	migr_qp_update_slow(mqp);
	return ret;
}

void migr_partner_resume(struct migr_partner *p, bool abort)
{
	char reply[REPLY_MAX], err[256];
	unsigned int tries;
	int ret;

	if (!p->prepared)
		return;
	/* A partner busy with its own switch lets go of its lock soon */
	for (tries = 0; tries < 20; tries++) {
		ret = call(p, reply, err, sizeof(err),
			   abort ? "abort" : "resume", "");
		if (ret != EBUSY)
			break;
		usleep(100000);
	}
	if (ret)
		verbs_err(&p->mqp->ctx->vctx,
			  "partner of QP 0x%x at %s did not %s: %s\n",
			  p->mqp->vqp.qp.qp_num, p->host,
			  abort ? "abort" : "resume", err);
	p->prepared = p->suspended = false;
}
