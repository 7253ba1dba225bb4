// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"

void conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->socket, MIGRD_SOCKET);
	/* Peers are off until an address is configured */
	strcpy(c->listen, "none");
	c->port = MIGRD_PORT;
	c->max_clients = 64;
	c->max_peers = 16;
	strcpy(c->state_dir, MIGRD_STATE_DIR);
	strcpy(c->criu, MIGRD_CRIU);
	strcpy(c->criu_plugins, MIGRD_CRIU_PLUGINS);
	c->hold_numbers = true;
	/* the host's name on the peer link: its host name up to the first dot */
	if (gethostname(c->name, sizeof(c->name) - 1) || !c->name[0])
		strcpy(c->name, "localhost");
	c->name[strcspn(c->name, ".")] = 0;
	/* root never arrives unless configured */
	uid_ranges_parse("1-4294967294", &c->arrive_uids);
}

int conf_add_peer(struct conf *c, const char *val, char *err, size_t errlen)
{
	struct conf_peer p;
	int i, k;

	if (conf_peer_parse(val, &p, err, errlen))
		return -1;
	if (c->npeers == PEERS_MAX) {
		snprintf(err, errlen, "at most %d peers", PEERS_MAX);
		return -1;
	}
	/* a name or an address names one peer only */
	for (k = -1; k < p.naddrs; k++) {
		i = conf_peer_find(c->peers, c->npeers,
				   k < 0 ? p.name : p.addrs[k]);
		if (i >= 0) {
			snprintf(err, errlen, "%s is peer %s already",
				 k < 0 ? p.name : p.addrs[k], c->peers[i].name);
			return -1;
		}
	}
	c->peers[c->npeers++] = p;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && strchr(" \t\r\n", e[-1]))
		*--e = 0;
	return s;
}

static int set_str(char *dst, size_t cap, const char *v)
{
	if (!*v || strlen(v) >= cap)
		return -1;
	strcpy(dst, v);
	return 0;
}

static int set_bool(bool *dst, const char *v)
{
	if (strcmp(v, "yes") && strcmp(v, "no"))
		return -1;
	*dst = !strcmp(v, "yes");
	return 0;
}

static int set_uint(unsigned int *dst, const char *v, unsigned int min,
		    unsigned int max)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || !*v || n < min || n > max)
		return -1;
	*dst = n;
	return 0;
}

/*
 * The settings of the peer link (conf_peer.h): 0, 1 for an invalid value,
 * 2 with err written, -1 for no such setting
 */
static int conf_set_peer(struct conf *c, const char *name, const char *val,
			 char *err, size_t errlen)
{
	if (!strcmp(name, "name"))
		return !peer_name_ok(val) ||
		       set_str(c->name, sizeof(c->name), val);
	if (!strcmp(name, "peer"))
		return conf_add_peer(c, val, err, errlen) ? 2 : 0;
	if (!strcmp(name, "arrive_uids"))
		return uid_ranges_parse(val, &c->arrive_uids) != 0;
	if (!strcmp(name, "key_file")) {
		snprintf(
			err, errlen,
			"key_file is gone: each peer has a key of its own (peer = NAME ADDRESS KEY_FILE, migrd(8) PEERS)");
		return 2;
	}
	return -1;
}

/* Setting name to val: as conf_set_peer() */
static int conf_set(struct conf *c, const char *name, const char *val,
		    char *err, size_t errlen)
{
	int bad;

	if (!strcmp(name, "socket"))
		bad = set_str(c->socket, sizeof(c->socket), val) ||
		      val[0] != '/';
	else if (!strcmp(name, "listen"))
		bad = set_str(c->listen, sizeof(c->listen), val);
	else if (!strcmp(name, "port"))
		bad = set_uint(&c->port, val, 1, 65535);
	else if (!strcmp(name, "max_clients"))
		bad = set_uint(&c->max_clients, val, 1, 1024);
	else if (!strcmp(name, "max_peers"))
		bad = set_uint(&c->max_peers, val, 1, 1024);
	else if (!strcmp(name, "state_dir"))
		bad = set_str(c->state_dir, sizeof(c->state_dir), val) ||
		      val[0] != '/';
	else if (!strcmp(name, "criu"))
		bad = set_str(c->criu, sizeof(c->criu), val) || val[0] != '/';
	else if (!strcmp(name, "criu_plugins"))
		bad = set_str(c->criu_plugins, sizeof(c->criu_plugins), val) ||
		      val[0] != '/';
	else if (!strcmp(name, "hold_numbers"))
		bad = set_bool(&c->hold_numbers, val);
	else
		return conf_set_peer(c, name, val, err, errlen);
	return bad != 0;
}

int conf_load(struct conf *c, const char *path, int required, char *err,
	      size_t errlen)
{
	char line[512], *name, *val, *eq, why[256];
	int lineno = 0, bad;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT && !required)
			return 0;
		snprintf(err, errlen, "cannot read %s: %s", path,
			 strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		name = trim(line);
		if (!*name || *name == '#')
			continue;
		eq = strchr(name, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'name = value'",
				 path, lineno);
			goto fail;
		}
		*eq = 0;
		name = trim(name);
		val = trim(eq + 1);
		bad = conf_set(c, name, val, why, sizeof(why));
		if (bad < 0) {
			snprintf(err, errlen, "%s:%d: unknown setting '%s'",
				 path, lineno, name);
			goto fail;
		}
		if (bad == 2) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			goto fail;
		}
		if (bad) {
			snprintf(err, errlen,
				 "%s:%d: invalid value for %s: '%s'", path,
				 lineno, name, val);
			goto fail;
		}
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	return -1;
}

/*
 * How many bits of secret a key holds at most, estimated from how its
 * bytes are spread (their Shannon entropy times its length): a phrase of
 * a few words, a byte repeated, a short text key fall short; 32 random
 * bytes, as base64 or hex, do not
 */
unsigned int key_bits(const uint8_t *key, size_t len)
{
	unsigned int count[256] = { 0 };
	double h = 0, p;
	size_t i;

	for (i = 0; i < len; i++)
		count[key[i]]++;
	for (i = 0; i < 256; i++) {
		if (!count[i])
			continue;
		p = (double)count[i] / len;
		h -= p * log2(p);
	}
	return (unsigned int)(h * len);
}

int key_load(const char *path, uint8_t *key, size_t *len, char *err,
	     size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open key file %s: %s", path,
			 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "key file %s is not a regular file",
			 path);
		goto fail;
	}
	if (st.st_uid != 0 || (st.st_mode & 07777) != 0600) {
		snprintf(
			err, errlen,
			"key file %s must be owned by root with mode 0600 (is uid %u, mode %04o); refusing it",
			path, (unsigned int)st.st_uid,
			(unsigned int)(st.st_mode & 07777));
		goto fail;
	}
	n = read(fd, key, WIRE_KEY_MAX + 1);
	while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
		n--;
	if (n < WIRE_KEY_MIN || n > WIRE_KEY_MAX) {
		snprintf(err, errlen,
			 "key file %s must hold %d to %d bytes (has %zd)", path,
			 WIRE_KEY_MIN, WIRE_KEY_MAX, n);
		goto fail;
	}
	if (key_bits(key, n) < KEY_BITS_MIN) {
		snprintf(
			err, errlen,
			"key file %s is too weak (about %u bits, at least %d): make one with head -c 32 /dev/urandom | base64",
			path, key_bits(key, n), KEY_BITS_MIN);
		goto fail;
	}
	*len = n;
	close(fd);
	return 0;
fail:
	close(fd);
	return -1;
}
