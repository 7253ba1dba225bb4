// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrctl: ask this host's migrd about migr processes and move them */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "json.h"
#include "migrctl.h"
#include "req.h"
#include "sockio.h"

#define REPLY_MAX (16 << 20)

static const char *sock_path = MIGRD_SOCKET;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "migrctl: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn)) usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: migrctl [--socket PATH] COMMAND\n"
		"  status [--pid P] [--json]\n"
		"  switch --pid P --device DEV [--wait-ms N] [--json]\n"
		"  peer-ping HOST [--json]\n"
		"  qpn-owner [--host H] IBDEV QPN [--json]\n");
	exit(rc);
}

static unsigned long number(const char *what, const char *s, unsigned long min,
			    unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || *s == '-' || v < min || v > max)
		die("invalid %s '%s' (%lu..%lu)", what, s, min, max);
	return v;
}

/* Send r to migrd; returns its reply line (NUL-terminated, no newline) */
static char *call(const struct req *r, int timeout_ms)
{
	char line[REQ_MAX + 1], *reply;
	ssize_t n;
	int fd;

	if (req_format(r, line, sizeof(line)) < 0)
		die("request too long");
	fd = io_connect_unix(sock_path, 1000);
	if (fd < 0)
		die("cannot reach migrd at %s: %s (is migrd running?)",
		    sock_path, strerror(errno));
	if (io_write_all(fd, line, strlen(line), 5000))
		die("sending to migrd failed: %s", strerror(errno));
	n = io_read_line(fd, &reply, REPLY_MAX, timeout_ms);
	if (n < 0)
		die("no reply from migrd: %s", errno == ECONNRESET ?
						       "connection closed" :
						       strerror(errno));
	close(fd);
	reply[n - 1] = 0;
	return reply;
}

struct opts {
	int pid;
	const char *dev, *host;
	unsigned int wait_ms;
	int json;
	char **args;
	int nargs;
};

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "wait-ms", required_argument, NULL, 'w' },
		{ "host", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	o->wait_ms = 5000;
	optind = 1;
	opterr = 0; /* our errors are one line, "migrctl: error: ..." */
	while ((c = getopt_long(argc, argv, ":p:d:w:H:jh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->pid = number("pid", optarg, 1, REQ_PID_MAX);
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'w':
			o->wait_ms = number("wait", optarg, 1, REQ_WAIT_MAX);
			break;
		case 'H':
			o->host = optarg;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'h':
			usage(0);
		case ':':
			die("option '%s' needs a value", argv[optind - 1]);
		default:
			die("unknown option '%s' (see migrctl --help)",
			    argv[optind - 1]);
		}
	}
	o->args = argv + optind;
	o->nargs = argc - optind;
}

static void copy_name(char *dst, size_t cap, const char *what, const char *s)
{
	if (strlen(s) >= cap)
		die("%s '%s' is too long", what, s);
	strcpy(dst, s);
}

/* Parse a reply; a refusal becomes the one-line error */
static struct json *parse_reply(const char *reply, int json_out)
{
	size_t len = strlen(reply);
	int cap = len / 2 + 16;
	struct json *j = calloc(1, sizeof(*j));
	struct json_tok *t = calloc(cap, sizeof(*t));
	char err[512];

	if (!j || !t)
		die("out of memory");
	if (json_parse(j, reply, len, t, cap) || t[0].type != JSON_OBJECT)
		die("migrd sent a reply that is not JSON");
	if (json_num(j, json_get(j, 0, "v"), 0) != REQ_VERSION)
		die("migrd speaks another protocol version");
	if (json_bool(j, json_get(j, 0, "ok"), false))
		return j;
	if (json_out) {
		printf("%s\n", reply);
		fflush(stdout);
	}
	if (!json_str(j, json_get(j, 0, "error"), err, sizeof(err)))
		strcpy(err, "request failed");
	die("%s", err);
}

int main(int argc, char **argv)
{
	struct opts o = {};
	struct req r = {};
	const char *cmd;
	struct json *j;
	char *reply;
	int i = 1, timeout = 30000;

	if (getenv("MIGRD_SOCKET"))
		sock_path = getenv("MIGRD_SOCKET");
	if (i + 1 < argc && !strcmp(argv[i], "--socket")) {
		sock_path = argv[i + 1];
		i += 2;
	}
	if (i >= argc)
		usage(2);
	cmd = argv[i];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
		usage(0);
	parse_opts(argc - i, argv + i, &o);

	if (!strcmp(cmd, "status")) {
		if (o.nargs)
			die("status takes no arguments ('%s')", o.args[0]);
		r.op = REQ_STATUS;
		r.pid = o.pid;
	} else if (!strcmp(cmd, "switch")) {
		if (!o.pid || !o.dev)
			die("switch needs --pid P and --device DEV");
		if (o.nargs)
			die("switch takes no arguments ('%s')", o.args[0]);
		r.op = REQ_SWITCH;
		r.pid = o.pid;
		r.wait_ms = o.wait_ms;
		copy_name(r.dev, sizeof(r.dev), "device", o.dev);
		timeout = o.wait_ms + 60000;
	} else if (!strcmp(cmd, "peer-ping")) {
		if (o.nargs != 1)
			die("peer-ping needs one HOST");
		r.op = REQ_PEER_PING;
		copy_name(r.host, sizeof(r.host), "host", o.args[0]);
	} else if (!strcmp(cmd, "qpn-owner")) {
		if (o.nargs != 2)
			die("qpn-owner needs IBDEV and QPN");
		r.op = REQ_QPN_OWNER;
		if (o.host)
			copy_name(r.host, sizeof(r.host), "host", o.host);
		copy_name(r.dev, sizeof(r.dev), "device", o.args[0]);
		r.qpn = number("qpn", o.args[1], 0, 0xffffff);
	} else {
		die("unknown command '%s' (status, switch, peer-ping, qpn-owner)",
		    cmd);
	}

	reply = call(&r, timeout);
	j = parse_reply(reply, o.json);
	if (o.json)
		printf("%s\n", reply);
	else if (r.op == REQ_STATUS)
		show_status(j, o.pid != 0);
	else if (r.op == REQ_SWITCH)
		show_switch(j);
	else if (r.op == REQ_PEER_PING)
		show_peer_ping(j);
	else
		show_qpn_owner(j, o.host);
	return 0;
}
