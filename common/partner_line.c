// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The partner protocol's lines, one parser for the library and migrd */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "line_err.h"
#include "partner_line.h"

static const char *const steps[] = {
	[PLINE_PREPARE] = "prepare", [PLINE_SUSPEND] = "suspend",
	[PLINE_KEYS] = "keys",	     [PLINE_RECONNECT] = "reconnect",
	[PLINE_RESUME] = "resume",   [PLINE_ABORT] = "abort",
	[PLINE_RECVS] = "recvs",     [PLINE_FETCH] = "fetch",
	[PLINE_FACES] = "faces",     [PLINE_GIVE] = "give",
};

const char *pline_step_name(enum pline_step step)
{
	return step < sizeof(steps) / sizeof(steps[0]) ? steps[step] : "?";
}

/* A QP number: 1 to 8 decimal digits up to 0xffffff, ended by ' ' or NUL */
static int parse_qpn(const char *s, uint32_t *qpn)
{
	unsigned long v = 0;
	size_t i, n = strcspn(s, " ");

	if (!n || n > 8)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > 0xffffff)
		return -1;
	*qpn = v;
	return 0;
}

static int valid_gid(const char *p)
{
	return strspn(p, "0123456789abcdef") >= PLINE_GID_LEN;
}

int pline_parse(const char *line, const char *gid, struct pline *pl, char *err,
		size_t errlen)
{
	const char *p = line, *dot;
	unsigned int i;
	size_t n;

	memset(pl, 0, sizeof(*pl));
	if (strlen(line) > PLINE_LINE_MAX)
		return line_err(err, errlen,
				"partner line longer than %d bytes",
				PLINE_LINE_MAX);
	n = strcspn(p, " ");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (n == strlen(steps[i]) && !strncmp(p, steps[i], n))
			break;
	if (i == sizeof(steps) / sizeof(steps[0]) || p[n] != ' ')
		return line_err(err, errlen, "partner line has no known step");
	pl->step = i;
	p += n + 1;
	if (strlen(p) <= PLINE_GID_LEN || p[PLINE_GID_LEN] != ' ' ||
	    (gid ? strncmp(p, gid, PLINE_GID_LEN) : !valid_gid(p)))
		return line_err(
			err, errlen,
			gid ? "partner line names another GID than the request" :
			      "partner line has no valid GID");
	memcpy(pl->gid, p, PLINE_GID_LEN);
	p += PLINE_GID_LEN + 1;
	if (pl->step == PLINE_KEYS) {
		/* the pairs, then " . " before the first QP */
		dot = strstr(p, " . ");
		if (!dot || dot == p)
			return line_err(err, errlen,
					"partner keys line without QPs");
		pl->pairs = p;
		pl->pairs_len = dot - p;
		p = dot + 3;
	}
	for (;;) {
		if (pl->nqp == PLINE_QPS_MAX)
			return line_err(err, errlen,
					"partner line names more than %d QPs",
					PLINE_QPS_MAX);
		pl->at[pl->nqp] = p;
		if (parse_qpn(p, &pl->qpn[pl->nqp]))
			return line_err(
				err, errlen,
				"partner line has an invalid QP number");
		pl->nqp++;
		dot = strstr(p, " . ");
		if (!dot)
			break;
		p = dot + 3;
	}
	return 0;
}

int pline_entry(const struct pline *pl, int i, char *buf, size_t len)
{
	const char *dot = strstr(pl->at[i], " . ");
	size_t n = dot ? (size_t)(dot - pl->at[i]) : strlen(pl->at[i]);

	if (n >= len)
		return -1;
	memcpy(buf, pl->at[i], n);
	buf[n] = 0;
	return 0;
}

int pline_word(const char *at, int k, uint32_t *v)
{
	const char *p = at;

	/* an entry ends at " . " or the end of the line */
	while (k--) {
		p += strcspn(p, " ");
		if (*p++ != ' ' || *p == '.')
			return -1;
	}
	return parse_qpn(p, v);
}

int pline_reconnect(const char *at, uint32_t *qpn, char *gid)
{
	const char *p = at + strcspn(at, " ");
	size_t n;

	if (*p++ != ' ' || parse_qpn(p, qpn) || !*qpn)
		return -1;
	p += strcspn(p, " ");
	if (*p++ != ' ')
		return -1;
	n = strspn(p, "0123456789abcdef");
	if (n != PLINE_GID_LEN || (p[n] && p[n] != ' '))
		return -1;
	memcpy(gid, p, n);
	gid[n] = 0;
	return 0;
}
