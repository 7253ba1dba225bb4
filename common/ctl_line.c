// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The control socket's lines: one grammar, read and written (ctl_line.h) */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl_line.h"
#include "line_err.h"

/* What an argument is, and so how it is read, bounded and written */
enum ctl_arg { A_DEV, A_WAIT, A_LEASE, A_TOKEN, A_FENCE, A_LINE };

struct ctl_spec {
	const char *name;
	unsigned char min, max; /* arguments */
	enum ctl_arg arg[2];
};

static const struct ctl_spec specs[CTL_OPS] = {
	[CTL_STATUS] = { "status", 0, 0 },
	[CTL_SWITCH] = { "switch", 1, 2, { A_DEV, A_WAIT } },
	[CTL_REBUILD] = { "rebuild", 0, 1, { A_WAIT } },
	[CTL_PARK] = { "park", 0, 2, { A_WAIT, A_LEASE } },
	[CTL_RESUME] = { "resume", 0, 2, { A_DEV, A_TOKEN } },
	[CTL_FENCE] = { "fence", 1, 1, { A_FENCE } },
	[CTL_COMMIT] = { "commit", 0, 0 },
	[CTL_PARTNER] = { "partner", 1, 1, { A_LINE } },
	[CTL_UD] = { "ud", 1, 1, { A_LINE } },
};

const char *ctl_op_name(enum ctl_op op)
{
	return op < CTL_OPS ? specs[op].name : "?";
}

/* A device name: 1 to CTL_DEV_MAX printable ASCII bytes, no space */
static bool valid_dev(const char *s)
{
	size_t n = strlen(s), i;

	if (!n || n > CTL_DEV_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

/* 1 to 10 decimal digits, min..max */
static int parse_uint(const char *s, unsigned long min, unsigned long max,
		      unsigned int *v)
{
	size_t n = strlen(s), i;
	unsigned long long x = 0;

	if (!n || n > 10)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	if (x < min || x > max)
		return -1;
	*v = x;
	return 0;
}

/* 1 to CTL_TOKEN_DIGITS lowercase hex digits */
static int parse_token(const char *s, uint64_t *v)
{
	size_t n = strlen(s), i;
	uint64_t x = 0;

	if (!n || n > CTL_TOKEN_DIGITS || strspn(s, "0123456789abcdef") != n)
		return -1;
	for (i = 0; i < n; i++)
		x = x << 4 | (s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
	*v = x;
	return 0;
}

static int parse_arg(enum ctl_arg a, char *w, struct ctl_req *q)
{
	switch (a) {
	case A_DEV:
		q->dev = w;
		return valid_dev(w) ? 0 : -1;
	case A_WAIT:
		return parse_uint(w, 1, CTL_WAIT_MAX_MS, &q->wait_ms);
	case A_LEASE:
		return parse_uint(w, 0, CTL_LEASE_MAX_MS, &q->lease_ms);
	case A_FENCE:
		return parse_uint(w, 1, CTL_FENCE_MAX_MS, &q->wait_ms);
	case A_TOKEN:
		return parse_token(w, &q->token);
	case A_LINE:
		q->line = w;
		return 0;
	}
	return -1;
}

/* The words after the op, each one space apart (args: NUL or its start) */
static int parse_args(const struct ctl_spec *s, char *args, struct ctl_req *q,
		      char *err, size_t errlen)
{
	char *w = args, *sp;

	if (s->min == 1 && s->max == 1 && s->arg[0] == A_LINE) {
		if (!args)
			return line_err(err, errlen, "%s needs its line",
					s->name);
		q->line = args;
		q->nargs = 1;
		return 0;
	}
	while (w) {
		if (q->nargs == s->max)
			return line_err(err, errlen,
					"%s takes at most %u arguments",
					s->name, s->max);
		sp = strchr(w, ' ');
		if (sp)
			*sp = 0;
		if (parse_arg(s->arg[q->nargs], w, q))
			return line_err(err, errlen,
					"%s: argument %u is invalid", s->name,
					q->nargs + 1);
		q->nargs++;
		w = sp ? sp + 1 : NULL;
	}
	if (q->nargs < s->min)
		return line_err(err, errlen, "%s needs %u arguments", s->name,
				s->min);
	return 0;
}

int ctl_parse(char *buf, size_t len, struct ctl_req *q, char *err,
	      size_t errlen)
{
	char *args;
	size_t n;
	int op;

	memset(q, 0, sizeof(*q));
	q->wait_ms = CTL_WAIT_DEFAULT_MS;
	if (!len || len > CTL_LINE_MAX || buf[len - 1] != '\n')
		return line_err(err, errlen, "not one line of at most %d bytes",
				CTL_LINE_MAX);
	if (memchr(buf, 0, len) || memchr(buf, '\n', len - 1))
		return line_err(err, errlen,
				"a NUL byte or more than one line");
	buf[len - 1] = 0;
	n = strcspn(buf, " ");
	args = buf[n] ? buf + n + 1 : NULL;
	for (op = 0; op < CTL_OPS; op++)
		if (strlen(specs[op].name) == n &&
		    !memcmp(buf, specs[op].name, n))
			break;
	if (op == CTL_OPS)
		return line_err(err, errlen, "unknown request");
	buf[n] = 0;
	q->op = op;
	return parse_args(&specs[op], args, q, err, errlen);
}

/* Argument i of q, after a space, at buf + off: the new offset, or -1 */
static int format_arg(const struct ctl_req *q, enum ctl_arg a, char *buf,
		      size_t len, size_t off)
{
	int n = -1;

	switch (a) {
	case A_DEV:
		if (q->dev && valid_dev(q->dev))
			n = snprintf(buf + off, len - off, " %s", q->dev);
		break;
	case A_WAIT:
	case A_FENCE:
		n = snprintf(buf + off, len - off, " %u", q->wait_ms);
		break;
	case A_LEASE:
		n = snprintf(buf + off, len - off, " %u", q->lease_ms);
		break;
	case A_TOKEN:
		n = snprintf(buf + off, len - off, " %016" PRIx64, q->token);
		break;
	case A_LINE:
		if (q->line && !strchr(q->line, '\n'))
			n = snprintf(buf + off, len - off, " %s", q->line);
		break;
	}
	if (n < 0 || (size_t)n >= len - off)
		return -1;
	return off + n;
}

int ctl_format(const struct ctl_req *q, char *buf, size_t len)
{
	const struct ctl_spec *s;
	unsigned int i;
	int off;

	if (q->op >= CTL_OPS || !len)
		return -1;
	s = &specs[q->op];
	if (q->nargs < s->min || q->nargs > s->max)
		return -1;
	off = snprintf(buf, len, "%s", s->name);
	for (i = 0; i < q->nargs && off >= 0; i++)
		off = format_arg(q, s->arg[i], buf, len, off);
	if (off < 0 || (size_t)off + 2 > len || off + 1 > CTL_LINE_MAX) {
		buf[0] = 0;
		return -1;
	}
	buf[off++] = '\n';
	buf[off] = 0;
	return off;
}
