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
		"  drain --from LOWER --device DEV [--wait-ms N] [--json]\n"
		"  migrate --pid P --to HOST [--device DEV] [--pre-copy N] [--wait-ms N] [--json]\n"
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

/* Send r to migrd: the connection its reply comes on */
static int send_req(const struct req *r)
{
	char line[REQ_MAX + 1];
	int fd;

	if (req_format(r, line, sizeof(line)) < 0)
		die("request too long");
	fd = io_connect_unix(sock_path, 1000);
	if (fd < 0)
		die("cannot reach migrd at %s: %s (is migrd running?)",
		    sock_path, strerror(errno));
	if (io_write_all(fd, line, strlen(line), 5000))
		die("sending to migrd failed: %s", strerror(errno));
	return fd;
}

/* A reply line (NUL-terminated, no newline) within timeout_ms */
static char *read_reply(int fd, int timeout_ms)
{
	char *reply;
	ssize_t n;

	n = io_read_line(fd, &reply, REPLY_MAX, timeout_ms);
	if (n < 0)
		die("no reply from migrd: %s", errno == ECONNRESET ?
						       "connection closed" :
						       strerror(errno));
	reply[n - 1] = 0;
	return reply;
}

/* Send r to migrd; returns its reply line */
static char *call(const struct req *r, int timeout_ms)
{
	int fd = send_req(r);
	char *reply = read_reply(fd, timeout_ms);

	close(fd);
	return reply;
}

struct opts {
	int pid;
	const char *dev, *host, *from, *to;
	unsigned int wait_ms, precopy;
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
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "pre-copy", required_argument, NULL, 'P' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	o->wait_ms = 5000;
	optind = 1;
	opterr = 0; /* our errors are one line, "migrctl: error: ..." */
	while ((c = getopt_long(argc, argv, ":p:d:w:H:f:t:P:jh", lo, NULL)) !=
	       -1) {
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
		case 'f':
			o->from = optarg;
			break;
		case 't':
			o->to = optarg;
			break;
		case 'P':
			o->precopy = number("pre-copy rounds", optarg, 0,
					    REQ_PRECOPY_MAX);
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

/* Parse a reply; one that is not migrd's is the one-line error */
static json_t *parse_json(const char *reply)
{
	json_t *j = migr_json_parse(reply, strlen(reply));

	if (!j)
		die("migrd sent a reply that is not JSON");
	if (migr_json_int(j, "v", 0, 255, 0) != REQ_VERSION)
		die("migrd speaks another protocol version");
	return j;
}

/* True if j says ok; else false with its error in err */
static bool reply_ok(const json_t *j, char *err, size_t len)
{
	if (migr_json_true(j, "ok"))
		return true;
	if (!show_str(j, "error", err, len) || !err[0])
		snprintf(err, len, "request failed");
	return false;
}

/* Parse a reply; a refusal becomes the one-line error */
static json_t *parse_reply(const char *reply, int json_out)
{
	json_t *j = parse_json(reply);
	char err[512];

	if (reply_ok(j, err, sizeof(err)))
		return j;
	if (json_out) {
		show_json_line(stdout, reply);
		fflush(stdout);
	}
	die("%s", err);
}

static void need_ibdev(const char *what, const char *name)
{
	char path[128];

	if (!name[0] || strchr(name, '/') || strlen(name) >= REQ_NAME_MAX)
		die("invalid %s name '%s'", what, name);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	if (access(path, F_OK))
		die("no RDMA device named %s on this host", name);
}

/* Whether a process's contexts (a status reply's array) include one over
 * lower */
static bool runs_over(const json_t *ctxs, const char *lower)
{
	const json_t *c;
	char name[64];
	size_t k;

	json_array_foreach (ctxs, k, c)
		if (migr_json_text(c, "lower", name, sizeof(name)) &&
		    !strcmp(name, lower))
			return true;
	return false;
}

/*
 * migrate: migrd drives it and sends progress lines before its reply;
 * each line comes within MIGRATE_LINE_MS (a pre-copy round, a dump, the
 * restore there), or migrctl gives up waiting (migrd goes on)
 */
#define MIGRATE_LINE_MS (10 * 60000)

static int migrate(const struct opts *o)
{
	struct req r = { .op = REQ_MIGRATE,
			 .pid = o->pid,
			 .wait_ms = o->wait_ms,
			 .count = o->precopy };
	char text[256], *reply;
	json_t *j;
	int fd;

	copy_name(r.host, sizeof(r.host), "host", o->to);
	if (o->dev)
		copy_name(r.dev, sizeof(r.dev), "device", o->dev);
	fd = send_req(&r);
	for (;;) {
		reply = read_reply(fd, MIGRATE_LINE_MS);
		j = parse_json(reply);
		if (!json_object_get(j, "progress"))
			break;
		if (!o->json && show_str(json_object_get(j, "progress"), "text",
					 text, sizeof(text))) {
			printf("%s\n", text);
			fflush(stdout);
		}
		json_decref(j);
		free(reply);
	}
	close(fd);
	json_decref(j);
	j = parse_reply(reply, o->json);
	if (o->json)
		show_json_line(stdout, reply);
	else
		show_migrate(j);
	return 0;
}

/*
 * Of migrd's status st, the pids that run over o->from, in pids: how
 * many; *unknown counts those that did not say where they run
 */
static int drain_list(const struct opts *o, const json_t *st, int *pids,
		      int *unknown)
{
	const json_t *procs = json_object_get(st, "processes"), *p;
	char err[512];
	int n = 0;
	size_t k;

	json_array_foreach (procs, k, p) {
		int pid = migr_json_int(p, "pid", 1, REQ_PID_MAX, 0);
		const json_t *ctxs = json_object_get(
			json_object_get(p, "status"), "contexts");

		if (!pid) {
			/* not a pid migrd sends: cannot be asked to move */
			(*unknown)++;
			if (!o->json)
				printf("a process without a valid pid: not moved\n");
		} else if (runs_over(ctxs, o->from)) {
			pids[n++] = pid;
		} else if (!ctxs) {
			/* it did not say where it runs: it may be there */
			(*unknown)++;
			if (!show_str(p, "error", err, sizeof(err)) || !err[0])
				snprintf(err, sizeof(err), "no status");
			if (!o->json)
				printf("pid %d: not moved, where it runs is not known: %s\n",
				       pid, err);
		}
	}
	return n;
}

/* pid switched to o->dev: true if it moved */
static bool drain_one(const struct opts *o, int pid)
{
	struct req r = { .op = REQ_SWITCH, .pid = pid, .wait_ms = o->wait_ms };
	bool moved = false;
	char err[512];
	char *reply;
	json_t *j;

	copy_name(r.dev, sizeof(r.dev), "device", o->dev);
	reply = call(&r, o->wait_ms + REQ_SWITCH_STEPS_MS + REQ_CTL_MARGIN_MS);
	j = parse_json(reply);
	if (o->json)
		show_json_line(stdout, reply);
	/* moved only if migrd and each of its devices say so */
	if (show_switch_moved(j, err, sizeof(err))) {
		moved = true;
		if (!o->json)
			show_switch(j);
	} else if (!o->json) {
		printf("pid %d: stayed on %s: %s\n", pid, o->from, err);
	}
	fflush(stdout);
	json_decref(j);
	return moved;
}

/*
 * drain: every migr process with a context over LOWER moves to DEV, one
 * after the other (all its contexts: a switch moves a whole process). One
 * that cannot move stays where it runs, as after any failed switch; the
 * others go on. Exit 1 if any stayed, or if one did not answer the status
 * (it may run over LOWER).
 */
static int drain(const struct opts *o)
{
	struct req r = { .op = REQ_STATUS };
	int i, n, moved = 0, unknown = 0;
	json_t *st;
	int *pids;

	need_ibdev("device", o->from);
	need_ibdev("device", o->dev);
	if (!strcmp(o->from, o->dev))
		die("drain: --from and --device both name %s", o->dev);
	st = parse_reply(call(&r, 30000), 0);
	pids = calloc(json_array_size(json_object_get(st, "processes")) + 1,
		      sizeof(*pids));
	if (!pids)
		die("out of memory");
	n = drain_list(o, st, pids, &unknown);
	if (!n && !unknown && !o->json)
		printf("no migr process runs over %s\n", o->from);
	for (i = 0; i < n; i++)
		moved += drain_one(o, pids[i]);
	if (!o->json && n)
		printf("%s: %d of %d processes moved to %s\n", o->from, moved,
		       n, o->dev);
	fflush(stdout);
	if (moved < n)
		die("%d of %d processes stayed on %s%s", n - moved, n, o->from,
		    unknown ? ", others may run there" : "");
	if (unknown == 1)
		die("1 process did not say where it runs: it may run over %s",
		    o->from);
	if (unknown)
		die("%d processes did not say where they run: they may run over %s",
		    unknown, o->from);
	return 0;
}

/*
 * The request of a command answered by one reply (status, switch,
 * peer-ping, qpn-owner) into r; its timeout
 */
static int simple_request(const char *cmd, const struct opts *o, struct req *r)
{
	if (!strcmp(cmd, "status")) {
		if (o->nargs)
			die("status takes no arguments ('%s')", o->args[0]);
		r->op = REQ_STATUS;
		r->pid = o->pid;
	} else if (!strcmp(cmd, "switch")) {
		if (!o->pid || !o->dev)
			die("switch needs --pid P and --device DEV");
		if (o->nargs)
			die("switch takes no arguments ('%s')", o->args[0]);
		r->op = REQ_SWITCH;
		r->pid = o->pid;
		r->wait_ms = o->wait_ms;
		copy_name(r->dev, sizeof(r->dev), "device", o->dev);
		return o->wait_ms + REQ_SWITCH_STEPS_MS + REQ_CTL_MARGIN_MS;
	} else if (!strcmp(cmd, "peer-ping")) {
		if (o->nargs != 1)
			die("peer-ping needs one HOST");
		r->op = REQ_PEER_PING;
		copy_name(r->host, sizeof(r->host), "host", o->args[0]);
	} else if (!strcmp(cmd, "qpn-owner")) {
		if (o->nargs != 2)
			die("qpn-owner needs IBDEV and QPN");
		r->op = REQ_QPN_OWNER;
		if (o->host)
			copy_name(r->host, sizeof(r->host), "host", o->host);
		copy_name(r->dev, sizeof(r->dev), "device", o->args[0]);
		r->qpn = number("qpn", o->args[1], 0, 0xffffff);
	} else {
		die("unknown command '%s' (status, switch, drain, migrate, peer-ping, qpn-owner)",
		    cmd);
	}
	return 30000;
}

int main(int argc, char **argv)
{
	struct opts o = {};
	struct req r = {};
	const char *cmd;
	json_t *j;
	char *reply;
	int i = 1, timeout;

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

	if (!strcmp(cmd, "drain")) {
		if (!o.from || !o.dev)
			die("drain needs --from LOWER and --device DEV");
		if (o.nargs)
			die("drain takes no arguments ('%s')", o.args[0]);
		return drain(&o);
	} else if (!strcmp(cmd, "migrate")) {
		if (!o.pid || !o.to)
			die("migrate needs --pid P and --to HOST");
		if (o.nargs)
			die("migrate takes no arguments ('%s')", o.args[0]);
		return migrate(&o);
	}
	timeout = simple_request(cmd, &o, &r);
	reply = call(&r, timeout);
	j = parse_reply(reply, o.json);
	if (o.json)
		show_json_line(stdout, reply);
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
