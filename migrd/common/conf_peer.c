// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The settings name, peer and arrive_uids (conf_peer.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_peer.h"

bool peer_name_ok(const char *name)
{
	size_t n = strlen(name);

	/* the PSK's derivation joins two names with '>' (tls.c) */
	return n && n < PEER_NAME_MAX &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* ADDRESS[,ADDRESS...] into p->addrs: 0 or -1 */
static int parse_addrs(char *list, struct conf_peer *p, char *err,
		       size_t errlen)
{
	char *a, *save = NULL;

	for (a = strtok_r(list, ",", &save); a;
	     a = strtok_r(NULL, ",", &save)) {
		if (p->naddrs == PEER_ADDRS_MAX || strlen(a) >= PEER_ADDR_MAX) {
			snprintf(err, errlen,
				 "peer %s: at most %d addresses of %d bytes",
				 p->name, PEER_ADDRS_MAX, PEER_ADDR_MAX - 1);
			return -1;
		}
		strcpy(p->addrs[p->naddrs++], a);
	}
	if (!p->naddrs) {
		snprintf(err, errlen, "peer %s: no address", p->name);
		return -1;
	}
	return 0;
}

int conf_peer_parse(const char *val, struct conf_peer *p, char *err,
		    size_t errlen)
{
	char name[PEER_NAME_MAX + 1], addrs[PEER_ADDRS_MAX * PEER_ADDR_MAX];
	char key[sizeof(p->key_file)], extra;
	int n;

	memset(p, 0, sizeof(*p));
	n = sscanf(val, "%64s %255s %255s %c", name, addrs, key, &extra);
	if (n != 3) {
		snprintf(
			err, errlen,
			"expected 'peer = NAME ADDRESS[,ADDRESS...] KEY_FILE'");
		return -1;
	}
	if (!peer_name_ok(name)) {
		snprintf(
			err, errlen,
			"peer name '%.64s' must be 1 to %d of A-Z a-z 0-9 . _ -",
			name, PEER_NAME_MAX - 1);
		return -1;
	}
	strcpy(p->name, name);
	if (key[0] != '/') {
		snprintf(err, errlen, "peer %s: key file %s is not absolute",
			 name, key);
		return -1;
	}
	strcpy(p->key_file, key);
	return parse_addrs(addrs, p, err, errlen);
}

int conf_peer_find(const struct conf_peer *v, int n, const char *host)
{
	int i, k;

	for (i = 0; i < n; i++) {
		if (!strcmp(v[i].name, host))
			return i;
		for (k = 0; k < v[i].naddrs; k++)
			if (!strcmp(v[i].addrs[k], host))
				return i;
	}
	return -1;
}

static int parse_uid(const char *s, char **end, uid_t *uid)
{
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, end, 10);
	/* (uid_t)-1 is no user: chown(2)'s "unchanged" */
	if (errno || v >= (uid_t)-1)
		return -1;
	*uid = v;
	return 0;
}

int uid_ranges_parse(const char *val, struct uid_ranges *u)
{
	const char *s = val;
	char *end;

	memset(u, 0, sizeof(*u));
	if (!strcmp(val, "none"))
		return 0;
	if (!strcmp(val, "all")) {
		u->r[0].lo = 0;
		u->r[0].hi = (uid_t)-2;
		u->n = 1;
		return 0;
	}
	for (;;) {
		if (u->n == UID_RANGES_MAX ||
		    parse_uid(s, &end, &u->r[u->n].lo))
			return -1;
		u->r[u->n].hi = u->r[u->n].lo;
		if (*end == '-' && (parse_uid(end + 1, &end, &u->r[u->n].hi) ||
				    u->r[u->n].hi < u->r[u->n].lo))
			return -1;
		u->n++;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

bool uid_ranges_has(const struct uid_ranges *u, uid_t uid)
{
	int i;

	for (i = 0; i < u->n; i++)
		if (uid >= u->r[i].lo && uid <= u->r[i].hi)
			return true;
	return false;
}
