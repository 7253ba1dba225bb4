// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's configuration file and the peer key's safety checks */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "unit.h"

static char dir[] = "/tmp/migrd-test-XXXXXX";
static char err[512];

static const char *file(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

static int load(const char *text)
{
	struct conf c;

	conf_defaults(&c);
	return conf_load(&c, file("c.conf", text, 0644), 1, err, sizeof(err));
}

static void test_conf(void)
{
	struct conf c;

	/* Peers off until an address is configured; pools of their own */
	conf_defaults(&c);
	CHECK(!strcmp(c.listen, "none"));
	CHECK(c.max_clients == 64 && c.max_peers == 16);
	CHECK(!conf_load(&c, file("peers.conf", "max_peers = 8\n", 0644), 1,
			 err, sizeof(err)));
	CHECK(c.max_peers == 8 && c.max_clients == 64);
	CHECK(load("max_peers = 0\n") &&
	      strstr(err, "invalid value for max_peers"));
	CHECK(load("max_peers = 1025\n") && strstr(err, "invalid value"));
	CHECK(c.hold_numbers);
	CHECK(!conf_load(&c, file("hold.conf", "hold_numbers = no\n", 0644), 1,
			 err, sizeof(err)) &&
	      !c.hold_numbers);
	CHECK(load("hold_numbers = 0\n") &&
	      strstr(err, "invalid value for hold_numbers"));

	conf_defaults(&c);
	CHECK(!conf_load(&c,
			 file("ok.conf",
			      "# comment\n\nport = 9000\n  listen=10.9.0.1 \n"
			      "socket = /run/x.sock\n",
			      0644),
			 1, err, sizeof(err)));
	CHECK(c.port == 9000 && !strcmp(c.listen, "10.9.0.1") &&
	      !strcmp(c.socket, "/run/x.sock"));
	CHECK(load("bogus = 1\n") &&
	      strstr(err, ":1: unknown setting 'bogus'"));
	CHECK(load("\nport = 0\n") &&
	      strstr(err, ":2: invalid value for port"));
	CHECK(load("port = 70000\n") && strstr(err, "invalid value"));
	CHECK(load("port = 12ab\n") && strstr(err, "invalid value"));
	CHECK(load("socket = relative\n") && strstr(err, "invalid value"));
	CHECK(load("port 7475\n") && strstr(err, "expected 'name = value'"));
	/* a missing file: fine unless it was asked for */
	conf_defaults(&c);
	CHECK(!conf_load(&c, "/nonexistent/migrd.conf", 0, err, sizeof(err)));
	CHECK(conf_load(&c, "/nonexistent/migrd.conf", 1, err, sizeof(err)));
}

/* Per-host identities: the host's name, its peers, who may arrive */
static void test_peers(void)
{
	struct conf c;

	conf_defaults(&c);
	CHECK(c.name[0] && !strchr(c.name, '.') && c.npeers == 0);
	/* root never arrives unless configured */
	CHECK(!uid_ranges_has(&c.arrive_uids, 0) &&
	      uid_ranges_has(&c.arrive_uids, 1000) &&
	      !uid_ranges_has(&c.arrive_uids, (uid_t)-1));
	CHECK(!conf_load(&c,
			 file("p.conf",
			      "name = host-a\n"
			      "peer = b 10.9.0.2,10.9.0.12 /etc/migr/b.key\n"
			      "peer = c 10.9.0.3 /etc/migr/c.key\n"
			      "arrive_uids = 0,1000-1999\n",
			      0644),
			 1, err, sizeof(err)));
	CHECK(!strcmp(c.name, "host-a") && c.npeers == 2 &&
	      c.peers[0].naddrs == 2 &&
	      !strcmp(c.peers[0].addrs[1], "10.9.0.12") &&
	      !strcmp(c.peers[1].key_file, "/etc/migr/c.key"));
	/* a peer is found by its name or any of its addresses, only */
	CHECK(conf_peer_find(c.peers, c.npeers, "b") == 0 &&
	      conf_peer_find(c.peers, c.npeers, "10.9.0.12") == 0 &&
	      conf_peer_find(c.peers, c.npeers, "10.9.0.3") == 1 &&
	      conf_peer_find(c.peers, c.npeers, "10.9.0.4") == -1 &&
	      conf_peer_find(c.peers, c.npeers, "10.9.0") == -1);
	CHECK(uid_ranges_has(&c.arrive_uids, 0) &&
	      uid_ranges_has(&c.arrive_uids, 1999) &&
	      !uid_ranges_has(&c.arrive_uids, 2000) &&
	      !uid_ranges_has(&c.arrive_uids, 1));
	/* one name or address, one peer */
	CHECK(load("peer = b 10.9.0.2 /k\npeer = b 10.9.0.3 /k\n") &&
	      strstr(err, ":2: b is peer b already"));
	CHECK(load("peer = b 10.9.0.2 /k\npeer = c 10.9.0.2 /k\n") &&
	      strstr(err, ":2: 10.9.0.2 is peer b already"));
	CHECK(load("peer = b 10.9.0.2\n") && strstr(err, ":1: expected "));
	CHECK(load("peer = b 10.9.0.2 k\n") && strstr(err, "not absolute"));
	CHECK(load("peer = b>c 10.9.0.2 /k\n") && strstr(err, "peer name"));
	CHECK(load("name = a b\n") && strstr(err, "invalid value for name"));
	CHECK(load("arrive_uids = 1-0\n") && strstr(err, "invalid value"));
	CHECK(load("arrive_uids = -1\n") && strstr(err, "invalid value"));
	CHECK(load("arrive_uids = 4294967295\n") &&
	      strstr(err, "invalid value"));
	CHECK(!load("arrive_uids = all\n") && !load("arrive_uids = none\n"));
	/* the shared key of before: refused, saying what replaced it */
	CHECK(load("key_file = /etc/migr/migrd.key\n") &&
	      strstr(err, ":1: key_file is gone: each peer has a key of its "
			  "own (peer = NAME ADDRESS KEY_FILE"));
}

static void test_key(void)
{
	uint8_t key[WIRE_KEY_MAX + 1];
	size_t len;
	const char *k;

	k = file("loose.key", "0123456789abcdef0123456789abcdef\n", 0644);
	CHECK(key_load(k, key, &len, err, sizeof(err)) == -1);
	CHECK(strstr(err, "mode 0600") != NULL);
	k = file("group.key", "0123456789abcdef0123456789abcdef\n", 0640);
	CHECK(key_load(k, key, &len, err, sizeof(err)) == -1);
	k = file("short.key", "short\n", 0600);
	CHECK(key_load(k, key, &len, err, sizeof(err)) == -1);
	/* weak: a byte repeated, a short phrase (issue 34: accepted before) */
	k = file("same.key", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		 0600);
	CHECK(key_load(k, key, &len, err, sizeof(err)) == -1);
	CHECK(geteuid() != 0 || strstr(err, "too weak") != NULL);
	k = file("phrase.key", "migr a test key\n", 0600);
	CHECK(key_load(k, key, &len, err, sizeof(err)) == -1);
	CHECK(key_bits((const uint8_t *)"aaaaaaaaaaaaaaaa", 16) == 0);
	CHECK(key_bits((const uint8_t *)"migr two-guest test key 2026", 28) <
	      KEY_BITS_MIN);
	/* 32 bytes as base64 (44 characters) and as hex pass */
	CHECK(key_bits((const uint8_t
				*)"1k14GPmAzoJxQ+vBBL62y+S4G98vGvs47LcfefOmne4=",
		       44) >= KEY_BITS_MIN);
	k = file("good.key", "0123456789abcdef0123456789abcdef\n", 0600);
	if (geteuid() == 0) {
		CHECK(!key_load(k, key, &len, err, sizeof(err)));
		CHECK(len == 32 && !memcmp(key, "0123456789abcdef", 16));
		CHECK(strstr(err, "must hold") != NULL); /* from short.key */
	} else {
		/* not root's: refused as well */
		CHECK(key_load(k, key, &len, err, sizeof(err)) == -1);
		CHECK(strstr(err, "owned by root") != NULL);
	}
	CHECK(key_load("/nonexistent/key", key, &len, err, sizeof(err)) == -1);
	CHECK(key_load(dir, key, &len, err, sizeof(err)) == -1);
}

int main(void)
{
	char cmd[64];
	int ret;

	if (!mkdtemp(dir))
		return 1;
	test_conf();
	test_peers();
	test_key();
	ret = unit_done("conf");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return ret;
}
