// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The request line parser: everything a client sends is checked here */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "req.h"

#define MAX_TOKENS                                                             \
	8 /* after "migrd/1": the op, at most 7 arguments (mig-check) */
#define PARTNER_ARGS 4 /* HOST PID QPN GID, then the line */
#define UDPEERS_ARGS 1 /* HOST, then the line */

static const struct {
	const char *name;
	enum req_op op;
	int min_args, max_args;
} ops[] = {
	{ "register", REQ_REGISTER, 1, 1 },
	{ "status", REQ_STATUS, 0, 1 },
	{ "switch", REQ_SWITCH, 3, 3 },
	{ "hello", REQ_HELLO, 0, 0 },
	{ "qpn-owner", REQ_QPN_OWNER, 3, 3 },
	{ "peer-ping", REQ_PEER_PING, 1, 1 },
	{ "partner", REQ_PARTNER, PARTNER_ARGS, PARTNER_ARGS },
	{ "udpeers", REQ_UDPEERS, UDPEERS_ARGS, UDPEERS_ARGS },
	{ "migrate", REQ_MIGRATE, 5, 5 },
	{ "mig-check", REQ_MIG_CHECK, 6, 7 },
	{ "mig-put", REQ_MIG_PUT, 2, 2 },
	{ "mig-restore", REQ_MIG_RESTORE, 2, 2 },
	{ "mig-end", REQ_MIG_END, 2, 2 },
	{ "mig-grants", REQ_MIG_GRANTS, 2, 2 },
	{ "mig-hold", REQ_MIG_HOLD, 3, 3 },
};

int req_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int parse_uint(const char *s, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || *end || *out < min || *out > max)
		return -1;
	return 0;
}

/* Device names as the kernel and libibverbs make them */
static int valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= REQ_NAME_MAX)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

/* Host names, IPv4 and bracket-less IPv6 addresses */
static int valid_host(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= REQ_HOST_MAX || *s == '-')
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789.-:") == n;
}

/* A partner's address: an IPv4 or IPv6 literal, no names, no scope */
static int valid_addr(const char *s)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (strlen(s) >= INET6_ADDRSTRLEN)
		return 0;
	return inet_pton(AF_INET, s, &a4) == 1 ||
	       inet_pton(AF_INET6, s, &a6) == 1;
}

/* HOST of a relayed request: an address, or "-" for this host */
static int parse_relay_host(struct req *r, const char *tok, char *err,
			    size_t errlen)
{
	if (!strcmp(tok, "-"))
		return 0;
	if (!valid_addr(tok))
		return req_fail(
			err, errlen,
			"invalid host '%s' (an IPv4 or IPv6 address, or -)",
			tok);
	strcpy(r->host, tok);
	return 0;
}

/* The line a relayed request ends in; never echoed in errors */
static int parse_line(struct req *r, const char *rest, const char *what,
		      char *err, size_t errlen)
{
	static const char line_chars[] = "abcdefghijklmnopqrstuvwxyz"
					 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					 "0123456789 :,._-";
	size_t n = strlen(rest);

	if (!n || rest[0] == ' ')
		return req_fail(err, errlen, "%s request without a line", what);
	if (n > REQ_PARTNER_LINE_MAX)
		return req_fail(err, errlen, "%s line longer than %d bytes",
				what, REQ_PARTNER_LINE_MAX);
	if (strspn(rest, line_chars) != n)
		return req_fail(
			err, errlen,
			"%s line has a character other than A-Z a-z 0-9 space : , . _ -",
			what);
	memcpy(r->line, rest, n + 1);
	return 0;
}

static int parse_partner(struct req *r, char **tok, const char *rest, char *err,
			 size_t errlen)
{
	unsigned long v;

	if (parse_relay_host(r, tok[0], err, errlen))
		return -1;
	if (parse_uint(tok[1], 0, REQ_PID_MAX, &v))
		return req_fail(err, errlen, "invalid pid '%s'", tok[1]);
	r->pid = v;
	if (parse_uint(tok[2], 0, 0xffffff, &v))
		return req_fail(err, errlen, "invalid qpn '%s' (0..16777215)",
				tok[2]);
	r->qpn = v;
	if (strlen(tok[3]) != REQ_GID_LEN ||
	    strspn(tok[3], "0123456789abcdef") != REQ_GID_LEN)
		return req_fail(err, errlen,
				"invalid gid '%s' (32 lowercase hex digits)",
				tok[3]);
	strcpy(r->gid, tok[3]);
	return parse_line(r, rest, "partner", err, errlen);
}

static int parse_id(struct req *r, const char *tok, char *err, size_t errlen)
{
	if (strlen(tok) != REQ_MIG_ID_LEN ||
	    strspn(tok, "0123456789abcdef") != REQ_MIG_ID_LEN)
		return req_fail(err, errlen,
				"invalid migration id '%s' (%d hex digits)",
				tok, REQ_MIG_ID_LEN);
	strcpy(r->id, tok);
	return 0;
}

/* A device, or "-" (empty: the one the process runs on) */
static int parse_dev_or_none(struct req *r, const char *tok, char *err,
			     size_t errlen)
{
	if (!strcmp(tok, "-"))
		return 0;
	if (!valid_name(tok))
		return req_fail(err, errlen, "invalid device name '%s'", tok);
	strcpy(r->dev, tok);
	return 0;
}

/* "TID,TID,...": at most REQ_MIG_TIDS_MAX, each a pid */
static int parse_tids(struct req *r, const char *tok, char *err, size_t errlen)
{
	unsigned long v;
	char buf[REQ_PARTNER_LINE_MAX + 1], *p, *t;
	int n = 0;

	if (strlen(tok) > REQ_PARTNER_LINE_MAX ||
	    strspn(tok, "0123456789,") != strlen(tok))
		return req_fail(err, errlen, "invalid thread id list");
	strcpy(buf, tok);
	for (p = buf; (t = strsep(&p, ","));)
		if (parse_uint(t, 1, REQ_PID_MAX, &v) || ++n > REQ_MIG_TIDS_MAX)
			return req_fail(
				err, errlen,
				"invalid thread id list (at most %d pids)",
				REQ_MIG_TIDS_MAX);
	strcpy(r->line, tok);
	return 0;
}

/* "aa:bb:cc:dd:ee:ff", lowercase hex */
static int valid_mac(const char *s)
{
	int i;

	if (strlen(s) != 17)
		return 0;
	for (i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != ':' :
				 !strchr("0123456789abcdef", s[i]) || !s[i])
			return 0;
	return 1;
}

/*
 * The tree's namespaces: "PIDNS,IF,MAC,ADDR/PREFIX" with PIDNS "own" (the
 * root is its pid namespace's init) or "host", and IF,MAC,ADDR all "-"
 * (migrd's network namespace) or its own's one interface and IPv4 address
 */
static int parse_ns(struct req *r, const char *tok, char *err, size_t errlen)
{
	char buf[REQ_NS_MAX], *f[5], *p = buf, *slash;
	struct in_addr a4;
	unsigned long v;
	int n = 0;

	if (strlen(tok) >= sizeof(buf))
		return req_fail(err, errlen, "invalid namespaces '%.40s...'",
				tok);
	strcpy(buf, tok);
	while (n < 5 && (f[n] = strsep(&p, ",")))
		n++;
	if (n != 4)
		return req_fail(
			err, errlen,
			"invalid namespaces '%s' (PIDNS,IF,MAC,ADDR/PREFIX)",
			tok);
	if (strcmp(f[0], "own") && strcmp(f[0], "host"))
		return req_fail(err, errlen,
				"invalid pid namespace '%s' (own or host)",
				f[0]);
	r->ns.own_pidns = !strcmp(f[0], "own");
	if (!strcmp(f[1], "-") && !strcmp(f[2], "-") && !strcmp(f[3], "-"))
		return 0;
	if (!valid_name(f[1]) || strlen(f[1]) >= sizeof(r->ns.ifname))
		return req_fail(err, errlen, "invalid interface name '%s'",
				f[1]);
	if (!valid_mac(f[2]))
		return req_fail(err, errlen, "invalid MAC address '%s'", f[2]);
	slash = strchr(f[3], '/');
	if (!slash)
		return req_fail(err, errlen,
				"invalid address '%s' (ADDR/PREFIX)", f[3]);
	*slash = 0;
	if (inet_pton(AF_INET, f[3], &a4) != 1 ||
	    parse_uint(slash + 1, 1, 32, &v))
		return req_fail(err, errlen,
				"invalid address '%s/%s' (IPv4/1..32)", f[3],
				slash + 1);
	r->ns.own_netns = true;
	strcpy(r->ns.ifname, f[1]);
	strcpy(r->ns.mac, f[2]);
	strcpy(r->ns.addr, f[3]);
	r->ns.prefix = v;
	return 0;
}

/* mig-check's MOVERS: the tree's migr processes, root's pid alone if none */
static int parse_movers(struct req *r, const char *tok, char *err,
			size_t errlen)
{
	char buf[REQ_MOVERS_MAX * 8 + 1], *p, *t;
	unsigned long v;

	r->nmovers = 0;
	if (!tok) {
		r->movers[r->nmovers++] = r->pid;
		return 0;
	}
	if (strlen(tok) >= sizeof(buf) ||
	    strspn(tok, "0123456789,") != strlen(tok))
		return req_fail(err, errlen, "invalid migr process list");
	strcpy(buf, tok);
	for (p = buf; (t = strsep(&p, ","));) {
		if (parse_uint(t, 1, REQ_PID_MAX, &v) ||
		    r->nmovers == REQ_MOVERS_MAX)
			return req_fail(
				err, errlen,
				"invalid migr process list (at most %d pids)",
				REQ_MOVERS_MAX);
		r->movers[r->nmovers++] = v;
	}
	return 0;
}

/* migrate PID HOST DEVICE|- ROUNDS WAIT_MS */
static int parse_migrate(struct req *r, char **tok, char *err, size_t errlen)
{
	unsigned long v;

	if (parse_uint(tok[0], 1, REQ_PID_MAX, &v))
		return req_fail(err, errlen, "invalid pid '%s'", tok[0]);
	r->pid = v;
	if (!valid_host(tok[1]))
		return req_fail(err, errlen, "invalid host '%s'", tok[1]);
	strcpy(r->host, tok[1]);
	if (parse_dev_or_none(r, tok[2], err, errlen))
		return -1;
	if (parse_uint(tok[3], 0, REQ_PRECOPY_MAX, &v))
		return req_fail(err, errlen,
				"invalid pre-copy rounds '%s' (0..%d)", tok[3],
				REQ_PRECOPY_MAX);
	r->count = v;
	if (parse_uint(tok[4], 1, REQ_WAIT_MAX, &v))
		return req_fail(err, errlen, "invalid wait '%s' (1..600000 ms)",
				tok[4]);
	r->wait_ms = v;
	return 0;
}

/* mig-check's words after the id: PID DEVICE VERSION TIDS NS [MOVERS] */
static int parse_mig_check(struct req *r, char **tok, int n, char *err,
			   size_t errlen)
{
	unsigned long v;

	if (parse_uint(tok[1], 1, REQ_PID_MAX, &v))
		return req_fail(err, errlen, "invalid pid '%s'", tok[1]);
	r->pid = v;
	if (!valid_name(tok[2]))
		return req_fail(err, errlen, "invalid device name '%s'",
				tok[2]);
	strcpy(r->dev, tok[2]);
	if (!valid_name(tok[3]))
		return req_fail(err, errlen, "invalid version '%s'", tok[3]);
	strcpy(r->version, tok[3]);
	if (parse_tids(r, tok[4], err, errlen) ||
	    parse_ns(r, tok[5], err, errlen))
		return -1;
	return parse_movers(r, n > 6 ? tok[6] : NULL, err, errlen);
}

/* mig-grants' list of grants */
static int parse_mig_grants(struct req *r, const char *list, char *err,
			    size_t errlen)
{
	const char *p = list;
	struct req_grant g;
	int ret, grants = 0;

	if (strlen(list) > REQ_PARTNER_LINE_MAX)
		return req_fail(err, errlen, "grant list too long");
	while ((ret = req_grant_next(&p, &g)) == 1)
		grants++;
	if (ret || !grants)
		return req_fail(err, errlen, "invalid grant list");
	strcpy(r->line, list);
	return 0;
}

/* mig-hold's KIND and list of numbers */
static int parse_mig_hold(struct req *r, const char *kind, const char *list,
			  char *err, size_t errlen)
{
	const char *p = list;
	uint32_t v32;
	int ret, k = 0;

	if (req_hold_kind(kind) < 0)
		return req_fail(err, errlen,
				"invalid kind '%s' (qpn, mr or mw)", kind);
	if (strlen(list) > REQ_PARTNER_LINE_MAX)
		return req_fail(err, errlen, "number list too long");
	while ((ret = req_hold_next(&p, &v32)) == 1)
		k++;
	if (ret || !k || k > REQ_HOLD_MAX)
		return req_fail(err, errlen,
				"invalid number list (1 to %d hex numbers)",
				REQ_HOLD_MAX);
	strcpy(r->name, kind);
	strcpy(r->line, list);
	return 0;
}

static int parse_mig(struct req *r, char **tok, int n, char *err, size_t errlen)
{
	if (r->op == REQ_MIGRATE)
		return parse_migrate(r, tok, err, errlen);
	if (parse_id(r, tok[0], err, errlen))
		return -1;
	switch (r->op) {
	case REQ_MIG_CHECK:
		return parse_mig_check(r, tok, n, err, errlen);
	case REQ_MIG_PUT:
		/* an image directory: a name of ours, never a path */
		if (!valid_name(tok[1]) || tok[1][0] == '.')
			return req_fail(err, errlen,
					"invalid image directory '%s'", tok[1]);
		strcpy(r->name, tok[1]);
		return 0;
	case REQ_MIG_RESTORE:
		if (!valid_name(tok[1]))
			return req_fail(err, errlen, "invalid device name '%s'",
					tok[1]);
		strcpy(r->dev, tok[1]);
		return 0;
	case REQ_MIG_GRANTS:
		return parse_mig_grants(r, tok[1], err, errlen);
	case REQ_MIG_HOLD:
		return parse_mig_hold(r, tok[1], tok[2], err, errlen);
	case REQ_MIG_END:
		if (strcmp(tok[1], "commit") && strcmp(tok[1], "abort") &&
		    strcmp(tok[1], "state"))
			return req_fail(
				err, errlen,
				"invalid mig-end '%s' (commit, abort or state)",
				tok[1]);
		strcpy(r->line, tok[1]);
		return 0;
	default:
		return req_fail(err, errlen, "unknown request");
	}
}

/* register DEVICE, switch PID DEVICE WAIT_MS */
static int parse_switch(struct req *r, char **tok, char *err, size_t errlen)
{
	unsigned long v;

	if (r->op == REQ_SWITCH) {
		if (parse_uint(tok[0], 1, REQ_PID_MAX, &v))
			return req_fail(err, errlen, "invalid pid '%s'",
					tok[0]);
		r->pid = v;
		tok++;
	}
	if (!valid_name(tok[0]))
		return req_fail(err, errlen, "invalid device name '%s'",
				tok[0]);
	strcpy(r->dev, tok[0]);
	if (r->op == REQ_SWITCH) {
		if (parse_uint(tok[1], 1, REQ_WAIT_MAX, &v))
			return req_fail(err, errlen,
					"invalid wait '%s' (1..600000 ms)",
					tok[1]);
		r->wait_ms = v;
	}
	return 0;
}

/* qpn-owner HOST|- DEVICE QPN */
static int parse_qpn_owner(struct req *r, char **tok, char *err, size_t errlen)
{
	unsigned long v;

	if (strcmp(tok[0], "-")) {
		if (!valid_host(tok[0]))
			return req_fail(err, errlen, "invalid host '%s'",
					tok[0]);
		strcpy(r->host, tok[0]);
	}
	if (!valid_name(tok[1]))
		return req_fail(err, errlen, "invalid device name '%s'",
				tok[1]);
	strcpy(r->dev, tok[1]);
	if (parse_uint(tok[2], 0, 0xffffff, &v))
		return req_fail(err, errlen, "invalid qpn '%s' (0..16777215)",
				tok[2]);
	r->qpn = v;
	return 0;
}

static int parse_args(struct req *r, char **tok, int n, const char *rest,
		      char *err, size_t errlen)
{
	unsigned long v;

	switch (r->op) {
	case REQ_REGISTER:
	case REQ_SWITCH:
		return parse_switch(r, tok, err, errlen);
	case REQ_STATUS:
		if (n && parse_uint(tok[0], 1, REQ_PID_MAX, &v))
			return req_fail(err, errlen, "invalid pid '%s'",
					tok[0]);
		r->pid = n ? v : 0;
		return 0;
	case REQ_HELLO:
		return 0;
	case REQ_QPN_OWNER:
		return parse_qpn_owner(r, tok, err, errlen);
	case REQ_PEER_PING:
		if (!valid_host(tok[0]))
			return req_fail(err, errlen, "invalid host '%s'",
					tok[0]);
		strcpy(r->host, tok[0]);
		return 0;
	case REQ_PARTNER:
		return parse_partner(r, tok, rest, err, errlen);
	case REQ_UDPEERS:
		if (parse_relay_host(r, tok[0], err, errlen))
			return -1;
		return parse_line(r, rest, "udpeers", err, errlen);
	case REQ_MIGRATE:
	case REQ_MIG_CHECK:
	case REQ_MIG_PUT:
	case REQ_MIG_RESTORE:
	case REQ_MIG_END:
	case REQ_MIG_GRANTS:
	case REQ_MIG_HOLD:
		return parse_mig(r, tok, n, err, errlen);
	}
	return req_fail(err, errlen, "unknown request");
}

/* A hex number of at most digits digits, in [min, max] */
static int parse_hex(const char *s, size_t digits, unsigned long min,
		     unsigned long max, unsigned long *out)
{
	size_t n = strlen(s);
	char *end;

	if (!n || n > digits || strspn(s, "0123456789abcdef") != n)
		return -1;
	*out = strtoul(s, &end, 16);
	return *end || *out < min || *out > max ? -1 : 0;
}

const char *const req_hold_names[REQ_HOLD_KINDS] = {
	[REQ_HOLD_QPN] = "qpn",
	[REQ_HOLD_MR] = "mr",
	[REQ_HOLD_MW] = "mw",
};

int req_hold_kind(const char *name)
{
	int k;

	for (k = 0; k < REQ_HOLD_KINDS; k++)
		if (!strcmp(name, req_hold_names[k]))
			return k;
	return -1;
}

int req_hold_next(const char **p, uint32_t *v)
{
	char buf[9];
	size_t n = strcspn(*p, ",");
	unsigned long x;

	if (!**p)
		return 0;
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, *p, n);
	buf[n] = 0;
	if (parse_hex(buf, 8, 1, UINT32_MAX, &x))
		return -1;
	*v = x;
	*p += n;
	/* a separator is followed by another entry */
	if (**p == ',' && !*++*p)
		return -1;
	return 1;
}

int req_grant_next(const char **p, struct req_grant *g)
{
	char buf[REQ_GRANT_TEXT_MAX + 1], *f[4], *rest;
	size_t n = strcspn(*p, ",");
	unsigned long v;
	int i;

	if (!**p)
		return 0;
	if (!n || n > REQ_GRANT_TEXT_MAX)
		return -1;
	memcpy(buf, *p, n);
	buf[n] = 0;
	rest = buf;
	for (i = 0; i < 4; i++)
		if (!(f[i] = strsep(&rest, "/")))
			return -1;
	g->owner = 0;
	if (rest) {
		if (parse_uint(rest, 1, REQ_PID_MAX, &v))
			return -1;
		g->owner = v;
	}
	if (parse_uint(f[0], 1, REQ_PID_MAX, &v))
		return -1;
	g->ppid = v;
	if (parse_hex(f[1], 6, 1, 0xffffff, &v))
		return -1;
	g->qpn = v;
	if (strlen(f[2]) != REQ_GID_LEN ||
	    strspn(f[2], "0123456789abcdef") != REQ_GID_LEN)
		return -1;
	strcpy(g->gid, f[2]);
	if (!strcmp(f[3], "-"))
		g->host[0] = 0;
	else if (valid_addr(f[3]))
		strcpy(g->host, f[3]);
	else
		return -1;
	*p += n;
	/* a separator is followed by another entry */
	if (**p == ',' && !*++*p)
		return -1;
	return 1;
}

int req_grant_format(const struct req_grant *g, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%d/%x/%s/%s", g->ppid, g->qpn, g->gid,
			 g->host[0] ? g->host : "-");

	if (n >= 0 && (size_t)n < len && g->owner)
		n += snprintf(buf + n, len - n, "/%d", g->owner);

	return n < 0 || (size_t)n >= len ? -1 : n;
}

/*
 * The next space-separated word of *p, NUL-terminated in place, or NULL;
 * *p is left just past the one space that ended it.
 */
static char *next_word(char **p)
{
	char *s = *p + strspn(*p, " "), *e;

	if (!*s)
		return NULL;
	e = s + strcspn(s, " ");
	if (*e)
		*e++ = 0;
	*p = e;
	return s;
}

int req_parse(const char *buf, size_t len, struct req *r, char *err,
	      size_t errlen)
{
	char line[REQ_MAX + 1], *tok[MAX_TOKENS + 1], *p, *t;
	const char *rest = "";
	unsigned int i;
	int n = 0;

	memset(r, 0, sizeof(*r));
	if (len > REQ_MAX)
		return req_fail(err, errlen, "request longer than %d bytes",
				REQ_MAX);
	if (!len || buf[len - 1] != '\n')
		return req_fail(err, errlen, "truncated request (no newline)");
	for (i = 0; i < len - 1; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return req_fail(
				err, errlen,
				"request has a control or non-ASCII byte");
	memcpy(line, buf, len - 1);
	line[len - 1] = 0;
	for (p = line; (t = next_word(&p));) {
		if (n == MAX_TOKENS + 1)
			return req_fail(err, errlen,
					"too many words in request");
		tok[n++] = t;
		/* Relayed requests end in a line of their own: not words */
		if ((n == 2 + PARTNER_ARGS && !strcmp(tok[1], "partner")) ||
		    (n == 2 + UDPEERS_ARGS && !strcmp(tok[1], "udpeers"))) {
			rest = p;
			break;
		}
	}
	if (n < 2)
		return req_fail(err, errlen, "empty request");
	if (strncmp(tok[0], "migrd/", 6))
		return req_fail(err, errlen, "not a migrd request: '%s'",
				tok[0]);
	if (strcmp(tok[0] + 6, "1")) {
		snprintf(
			err, errlen,
			"unsupported protocol version '%s' (this migrd speaks %d)",
			tok[0] + 6, REQ_VERSION);
		return -1;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(tok[1], ops[i].name))
			break;
	if (i == sizeof(ops) / sizeof(ops[0]))
		return req_fail(err, errlen, "unknown request '%s'", tok[1]);
	r->op = ops[i].op;
	n -= 2;
	if (n < ops[i].min_args || n > ops[i].max_args)
		return req_fail(err, errlen,
				"wrong number of arguments for '%s'",
				ops[i].name);
	return parse_args(r, tok + 2, n, rest, err, errlen);
}

/* A mig-check line; its length as snprintf() counts it, or -1 */
static int format_mig_check(const struct req *r, char *buf, size_t len)
{
	int n, i;

	n = snprintf(buf, len, "migrd/1 mig-check %s %d %s %s %s %s,", r->id,
		     r->pid, r->dev, r->version, r->line,
		     r->ns.own_pidns ? "own" : "host");
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (r->ns.own_netns)
		n += snprintf(buf + n, len - n, "%s,%s,%s/%u", r->ns.ifname,
			      r->ns.mac, r->ns.addr, r->ns.prefix);
	else
		n += snprintf(buf + n, len - n, "-,-,-");
	for (i = 0; i < r->nmovers && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - n, "%c%d", i ? ',' : ' ',
			      r->movers[i]);
	if (n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "\n");
	return n;
}

/* migrate and the mig-* requests; as snprintf() counts, or -1 */
static int format_mig(const struct req *r, char *buf, size_t len)
{
	switch (r->op) {
	case REQ_MIGRATE:
		return snprintf(buf, len, "migrd/1 migrate %d %s %s %u %u\n",
				r->pid, r->host, r->dev[0] ? r->dev : "-",
				r->count, r->wait_ms);
	case REQ_MIG_CHECK:
		return format_mig_check(r, buf, len);
	case REQ_MIG_PUT:
		return snprintf(buf, len, "migrd/1 mig-put %s %s\n", r->id,
				r->name);
	case REQ_MIG_RESTORE:
		return snprintf(buf, len, "migrd/1 mig-restore %s %s\n", r->id,
				r->dev);
	case REQ_MIG_END:
		return snprintf(buf, len, "migrd/1 mig-end %s %s\n", r->id,
				r->line);
	case REQ_MIG_GRANTS:
		return snprintf(buf, len, "migrd/1 mig-grants %s %s\n", r->id,
				r->line);
	case REQ_MIG_HOLD:
		return snprintf(buf, len, "migrd/1 mig-hold %s %s %s\n", r->id,
				r->name, r->line);
	default:
		return -1;
	}
}

int req_format(const struct req *r, char *buf, size_t len)
{
	int n = -1;

	switch (r->op) {
	case REQ_REGISTER:
		n = snprintf(buf, len, "migrd/1 register %s\n", r->dev);
		break;
	case REQ_STATUS:
		if (r->pid)
			n = snprintf(buf, len, "migrd/1 status %d\n", r->pid);
		else
			n = snprintf(buf, len, "migrd/1 status\n");
		break;
	case REQ_SWITCH:
		n = snprintf(buf, len, "migrd/1 switch %d %s %u\n", r->pid,
			     r->dev, r->wait_ms);
		break;
	case REQ_HELLO:
		n = snprintf(buf, len, "migrd/1 hello\n");
		break;
	case REQ_QPN_OWNER:
		n = snprintf(buf, len, "migrd/1 qpn-owner %s %s %u\n",
			     r->host[0] ? r->host : "-", r->dev, r->qpn);
		break;
	case REQ_PEER_PING:
		n = snprintf(buf, len, "migrd/1 peer-ping %s\n", r->host);
		break;
	case REQ_PARTNER:
		n = snprintf(buf, len, "migrd/1 partner %s %d %u %s %s\n",
			     r->host[0] ? r->host : "-", r->pid, r->qpn, r->gid,
			     r->line);
		break;
	case REQ_UDPEERS:
		n = snprintf(buf, len, "migrd/1 udpeers %s %s\n",
			     r->host[0] ? r->host : "-", r->line);
		break;
	default:
		n = format_mig(r, buf, len);
	}
	return n < 0 || (size_t)n >= len || n > REQ_MAX ? -1 : n;
}
