// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's main: options, listeners, one thread per accepted connection */
#define _GNU_SOURCE /* ppoll, struct ucred */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "criu_run.h"
#include "images.h"
#include "log.h"
#include "migrate.h"
#include "migrd.h"
#include "peer.h"
#include "qpowner.h"
#include "registry.h"
#include "slots.h"
#include "sockio.h"
#include "tls.h"

#define PRUNE_EVERY_S 10

struct migrd migrd;

static volatile sig_atomic_t stop;

struct conn {
	int fd;
	struct slot_owner o;
	char who[64];
};

static void on_signal(int sig)
{
	stop = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migrd [-f] [--debug] [--config FILE] [--socket PATH]\n"
		"             [--port N] [--listen ADDR|none] [--name NAME]\n"
		"             [--peer 'NAME ADDRESS[,ADDRESS...] KEY_FILE']...\n"
		"             [--arrive-uids all|none|LO[-HI],...]\n"
		"             [--test-qp-owners FILE] [--test-own-netns] [--test-hold DIR]\n");
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;

	if (c->o.peer)
		peer_serve(c->fd, c->who);
	else
		local_serve(c->fd);
	slot_put(&c->o);
	free(c);
	return NULL;
}

static void spawn(int fd, struct slot_owner *o, const char *who)
{
	struct conn *c = calloc(1, sizeof(*c));
	pthread_attr_t attr;
	char why[64];
	pthread_t th;

	if (!c) {
		close(fd);
		return;
	}
	if (slot_get(o, why, sizeof(why))) {
		log_warn("%s%s refused: %s", o->peer ? "peer " : "", who, why);
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->o = *o;
	snprintf(c->who, sizeof(c->who), "%s", who);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, conn_thread, c)) {
		close(fd);
		slot_put(&c->o);
		free(c);
	}
	pthread_attr_destroy(&attr);
}

static int listen_local(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)], *slash;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_err("socket path %s is too long", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			log_err("cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	/*
	 * A socket left by a migrd that died is removed; a live one is not,
	 * also when it is too busy to take us (its backlog full)
	 */
	fd = io_connect_unix(path, 1000);
	if (fd >= 0 || (errno != ECONNREFUSED && errno != ENOENT)) {
		if (fd >= 0)
			close(fd);
		log_err("another migrd is already serving %s", path);
		return -1;
	}
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    chmod(path, 0666) || listen(fd, 64)) {
		log_err("cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int listen_peer(const char *addr, unsigned int port)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(port) };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	struct sockaddr *s = (struct sockaddr *)&sa;
	socklen_t len = sizeof(sa);
	int fd, one = 1;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) != 1) {
			log_err("invalid listen address '%s'", addr);
			return -1;
		}
		s = (struct sockaddr *)&sa6;
		len = sizeof(sa6);
	}
	fd = socket(s->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, s, len) || listen(fd, 16)) {
		log_err("cannot listen on %s port %u: %s", addr, port,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The config file (--config, else the default), before the options */
static int load_config(int argc, char **argv)
{
	const char *config = MIGRD_CONFIG;
	bool config_given = false;
	char err[512];
	int i;

	for (i = 1; i < argc - 1; i++)
		if (!strcmp(argv[i], "--config") || !strcmp(argv[i], "-c")) {
			config = argv[i + 1];
			config_given = true;
		}
	conf_defaults(&migrd.conf);
	if (conf_load(&migrd.conf, config, config_given, err, sizeof(err))) {
		fprintf(stderr, "migrd: error: %s\n", err);
		return -1;
	}
	return 0;
}

/* Option o (getopt_long()'s) with optarg; 0, or -1 said on stderr */
/* The peer link's options (conf_peer.h): 0, or -1 having said why */
static int set_peer_option(int o)
{
	char err[300];

	switch (o) {
	case 'n':
		if (!peer_name_ok(optarg)) {
			fprintf(stderr,
				"migrd: error: --name: '%s' is not a host name (A-Z a-z 0-9 . _ -)\n",
				optarg);
			return -1;
		}
		strcpy(migrd.conf.name, optarg);
		break;
	case 'P':
		if (conf_add_peer(&migrd.conf, optarg, err, sizeof(err))) {
			fprintf(stderr, "migrd: error: --peer: %s\n", err);
			return -1;
		}
		break;
	case 'U':
		if (uid_ranges_parse(optarg, &migrd.conf.arrive_uids)) {
			fprintf(stderr,
				"migrd: error: --arrive-uids: '%s' is not all, none or LO[-HI],...\n",
				optarg);
			return -1;
		}
		break;
	case 'k':
		fprintf(stderr,
			"migrd: error: --key is gone: each peer has a key of its own (--peer 'NAME ADDRESS KEY_FILE', migrd(8) PEERS)\n");
		return -1;
	default:
		usage(stderr);
		return -1;
	}
	return 0;
}

static int set_option(int o, bool *fg)
{
	char *end;

	switch (o) {
	case 'f':
		*fg = true;
		break;
	case 'd':
		log_debug_on = true;
		break;
	case 'c':
		break;
	case 's':
		if (optarg[0] != '/' ||
		    strlen(optarg) >= sizeof(migrd.conf.socket)) {
			fprintf(stderr,
				"migrd: error: --socket needs an absolute path\n");
			return -1;
		}
		strcpy(migrd.conf.socket, optarg);
		break;
	case 'p':
		migrd.conf.port = strtoul(optarg, &end, 10);
		if (*end || !migrd.conf.port || migrd.conf.port > 65535) {
			fprintf(stderr, "migrd: error: invalid port '%s'\n",
				optarg);
			return -1;
		}
		break;
	case 'l':
		snprintf(migrd.conf.listen, sizeof(migrd.conf.listen), "%s",
			 optarg);
		break;
	case 'T':
		migrd.test_qp_owners = optarg;
		qpowner_stand_in(optarg);
		break;
	case 'N':
		migrd.test_own_netns = true;
		break;
	case 'H':
		migrd.test_hold = optarg;
		break;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		return set_peer_option(o);
	}
	return 0;
}

static int parse_args(int argc, char **argv, bool *fg)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "key", required_argument, NULL, 'k' },
		{ "name", required_argument, NULL, 'n' },
		{ "peer", required_argument, NULL, 'P' },
		{ "arrive-uids", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ "test-qp-owners", required_argument, NULL, 'T' },
		{ "test-own-netns", no_argument, NULL, 'N' },
		{ "test-hold", required_argument, NULL, 'H' },
		{}
	};
	int o;

	/* The config first, so options given override it */
	if (load_config(argc, argv))
		return -1;
	while ((o = getopt_long(argc, argv, "fdc:s:p:l:k:n:h", opts, NULL)) !=
	       -1)
		if (set_option(o, fg))
			return -1;
	if (optind < argc) {
		fprintf(stderr, "migrd: error: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	return 0;
}

/*
 * Peers need their keys, to listen and to ask them (also with listen =
 * none): none configured turns peers off; a configured one that is
 * missing or unsafe is fatal.
 */
static int load_keys(void)
{
	const struct conf_peer *p;
	char err[512];
	int i;

	if (!migrd.conf.npeers) {
		log_info(
			"no peers configured (peer = NAME ADDRESS KEY_FILE): peer daemons are off");
		strcpy(migrd.conf.listen, "none");
		return 0;
	}
	for (i = 0; i < migrd.conf.npeers; i++) {
		p = &migrd.conf.peers[i];
		if (key_load(p->key_file, migrd.keys[i].key, &migrd.keys[i].len,
			     err, sizeof(err))) {
			log_err("peer %s: %s", p->name, err);
			return -1;
		}
	}
	return 0;
}

static void accept_one(int lfd, bool peer)
{
	struct slot_owner o = { .peer = peer };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char who[64] = "local client";
	struct ucred cred;
	int fd;

	fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (peer) {
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET,
				  &((struct sockaddr_in *)&ss)->sin_addr,
				  o.addr, sizeof(o.addr));
		else
			inet_ntop(AF_INET6,
				  &((struct sockaddr_in6 *)&ss)->sin6_addr,
				  o.addr, sizeof(o.addr));
		snprintf(who, sizeof(who), "%s", o.addr);
	} else {
		/* the pool a local client takes a slot from is its user's */
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			close(fd);
			return;
		}
		o.uid = cred.uid;
		snprintf(who, sizeof(who), "local client uid %u",
			 (unsigned int)cred.uid);
	}
	spawn(fd, &o, who);
}

/* The local socket, and the peers' unless listen is none; 0 or -1 */
static int open_listeners(struct pollfd *pf)
{
	pf[0].fd = listen_local(migrd.conf.socket);
	if (pf[0].fd < 0)
		return -1;
	if (strcmp(migrd.conf.listen, "none")) {
		pf[1].fd = listen_peer(migrd.conf.listen, migrd.conf.port);
		if (pf[1].fd < 0) {
			unlink(migrd.conf.socket);
			return -1;
		}
	}
	pf[0].events = pf[1].events = POLLIN;
	return 0;
}

/* Connections accepted, and the registry pruned, until a signal */
static void serve(struct pollfd *pf, const sigset_t *orig)
{
	struct timespec ts = { .tv_sec = PRUNE_EVERY_S };

	while (!stop) {
		int n = ppoll(pf, 2, &ts, orig);

		if (n < 0 && errno != EINTR) {
			log_err("poll: %s", strerror(errno));
			break;
		}
		if (n > 0 && (pf[0].revents & POLLIN))
			accept_one(pf[0].fd, false);
		if (n > 0 && (pf[1].revents & POLLIN))
			accept_one(pf[1].fd, true);
		if (n == 0)
			registry_prune();
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct pollfd pf[2] = { { .fd = -1 }, { .fd = -1 } };
	sigset_t block, orig;
	bool fg = false;

	if (parse_args(argc, argv, &fg) || load_keys())
		return 1;
	img_sweep(migrate_dest_sweep);
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Only ppoll() below takes the signals: worker threads never do */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &orig);

	if (open_listeners(pf))
		return 1;
	if (!fg && daemon(0, 1)) {
		log_err("cannot daemonize: %s", strerror(errno));
		return 1;
	}
	/* after daemon(): its thread would not survive the fork */
	criu_warm_at_start();
	log_info("listening on %s%s%s%s", migrd.conf.socket,
		 pf[1].fd >= 0 ? ", peers on " : " (no peers)",
		 pf[1].fd >= 0 ? migrd.conf.listen : "",
		 pf[1].fd >= 0 ? "" : "");
	if (pf[1].fd >= 0)
		log_info("peer port %u; this host is %s, with %d peers",
			 migrd.conf.port, migrd.conf.name, migrd.conf.npeers);
	serve(pf, &orig);
	log_info("stopping (signal %d)", (int)stop);
	unlink(migrd.conf.socket);
	return 0;
}
