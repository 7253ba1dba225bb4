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
	strcpy(c->key_file, MIGRD_KEY);
	/* Peers are off until an address is configured */
	strcpy(c->listen, "none");
	c->port = MIGRD_PORT;
	c->max_clients = 64;
	c->max_peers = 16;
	strcpy(c->state_dir, MIGRD_STATE_DIR);
	strcpy(c->criu, MIGRD_CRIU);
	strcpy(c->criu_plugins, MIGRD_CRIU_PLUGINS);
	c->hold_numbers = true;
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

/* Setting name to val: 0, 1 for an invalid value, -1 for no such setting */
static int conf_set(struct conf *c, const char *name, const char *val)
{
	int bad;

	if (!strcmp(name, "socket"))
		bad = set_str(c->socket, sizeof(c->socket), val) ||
		      val[0] != '/';
	else if (!strcmp(name, "key_file"))
		bad = set_str(c->key_file, sizeof(c->key_file), val);
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
		return -1;
	return bad != 0;
}

int conf_load(struct conf *c, const char *path, int required, char *err,
	      size_t errlen)
{
	char line[512], *name, *val, *eq;
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
		bad = conf_set(c, name, val);
		if (bad < 0) {
			snprintf(err, errlen, "%s:%d: unknown setting '%s'",
				 path, lineno, name);
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
