// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Command line of migr-traffic. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traffic.h"

static const char *const op_names[] = {
	[OP_SEND] = "send",	    [OP_SEND_IMM] = "send_imm",
	[OP_WRITE] = "write",	    [OP_WRITE_IMM] = "write_imm",
	[OP_READ] = "read",	    [OP_CAS] = "cas",
	[OP_FAA] = "faa",	    [OP_RECV] = "recv",
	[KIND_PATTERN] = "pattern",
};

const char *tr_op_name(unsigned int op)
{
	if (op < sizeof(op_names) / sizeof(op_names[0]) && op_names[op])
		return op_names[op];
	return "?";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migr-traffic -d DEV [-g GIDIDX] (--server [--port P] | --client HOST [--port P] | --loopback) [options]\n"
		"\n"
		"RDMA traffic generator and checker: RC QPs (optionally an SRQ and a UD\n"
		"pair), every completion and every byte verified end to end. Both sides\n"
		"send and receive; a TCP side channel carries addresses, keys and counts.\n"
		"Both sides need the same --qps, --ud and --size.\n"
		"\n"
		"  -d, --dev DEV              RDMA device (required)\n"
		"  -g, --gid-idx N            GID index (default: first IPv4-mapped GID)\n"
		"  -i, --ib-port N            port number (default 1)\n"
		"      --server               wait for a client on --port\n"
		"      --clients N            the server serves N clients (1 or 2) from\n"
		"                             one device context\n"
		"      --client HOST          connect to the server at HOST\n"
		"      --loopback             both sides in this process, on DEV\n"
		"  -p, --port P               TCP side-channel port (default 18600)\n"
		"  -q, --qps N                RC QPs (default 2, at most %d)\n"
		"      --srq                  receive through one SRQ shared by the RC QPs\n"
		"      --ud                   add a UD QP pair (address handle, SEND)\n"
		"      --mw[=TYPE]            show the peer each RC QP's region through a\n"
		"                             memory window of TYPE (1, the default, or 2:\n"
		"                             bound by a WR on the QP): its WRITEs, READs\n"
		"                             and atomics use the window's rkey\n"
		"      --ud-max-loss PCT      tolerate losing up to PCT%% of UD datagrams\n"
		"                             (default 0: any loss fails; use across hosts)\n"
		"      --ops LIST             comma list of send,send_imm,write,write_imm,\n"
		"                             read,cas,faa (default: all); write needs read\n"
		"                             or a message op, which verifies it\n"
		"      --api legacy|wr|mixed  ibv_post_send, ibv_wr_*, or alternating (default legacy)\n"
		"      --mode poll|event      busy polling (default), or a completion channel\n"
		"                             in epoll\n"
		"      --cq legacy|ex         ibv_poll_cq (default), or ibv_start_poll on an\n"
		"                             extended CQ\n"
		"  -t, --depth N              send/receive queue depth per QP (default 32)\n"
		"  -s, --size N               message size in bytes (default 2048, at least 64)\n"
		"  -D, --duration SEC         post for SEC seconds\n"
		"      --rate N               post at most N WRs a second per QP (and\n"
		"                             up to --depth at once); a polling loop\n"
		"                             then rests 0.2 ms a turn (default: as\n"
		"                             fast as the device completes them)\n"
		"  -n, --iters N              post N WRs per QP and side (default 1000)\n"
		"  -r, --report-interval SEC  print a progress line every SEC seconds\n"
		"      --json                 final summary as one JSON line\n"
		"      --stall-timeout SEC    fail if nothing completes for SEC (default 60, 0: never)\n"
		"      --connect-timeout SEC  keep trying to reach the server (default 10)\n"
		"      --connect-delay SEC    connect the QPs SEC after the peer's hello\n"
		"                             (its QPs are connected first)\n"
		"      --hold-recvs SEC       at SIGUSR1, post no RECV for SEC seconds, or\n"
		"                             until the next SIGUSR1 (the\n"
		"                             peer's SENDs wait), to a QP or to the SRQ\n"
		"  -h, --help                 this text\n"
		"\n"
		"SIGINT/SIGTERM stop posting; outstanding work drains and is verified.\n"
		"Exit: 0 all verified, 1 a violation (one line names QP, seq and what),\n"
		"2 usage error, 3 setup or environment error.\n",
		TR_MAX_QPS);
}

static void __attribute__((noreturn)) bad(const char *msg, const char *arg)
{
	fprintf(stderr, "migr-traffic: %s%s%s\nTry 'migr-traffic --help'.\n",
		msg, arg ? ": " : "", arg ? arg : "");
	exit(TR_EXIT_USAGE);
}

static unsigned long num(const char *s, unsigned long lo, unsigned long hi,
			 const char *what)
{
	char *end;
	unsigned long v;

	v = strtoul(s, &end, 0);
	if (!*s || *end || v < lo || v > hi || *s == '-')
		bad(what, s);
	return v;
}

/* A non-negative number: seconds, or a percentage. */
static double seconds(const char *s, const char *what)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || v < 0 || v > 1e6)
		bad(what, s);
	return v;
}

static unsigned int parse_ops(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	unsigned int mask = 0, i;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < OP_NUM; i++)
			if (!strcmp(tok, op_names[i]))
				break;
		if (i == OP_NUM)
			bad("unknown op in --ops", tok);
		mask |= 1u << i;
	}
	free(copy);
	if (!mask)
		bad("--ops is empty", NULL);
	return mask;
}

static int pick(const char *arg, const char *const *names, const char *what)
{
	int i;

	for (i = 0; names[i]; i++)
		if (!strcmp(arg, names[i]))
			return i;
	bad(what, arg);
}

enum {
	O_SERVER = 256,
	O_CLIENT,
	O_LOOPBACK,
	O_SRQ,
	O_UD,
	O_MW,
	O_OPS,
	O_API,
	O_MODE,
	O_CQ,
	O_JSON,
	O_STALL,
	O_CONNECT,
	O_CONNECT_DELAY,
	O_UD_LOSS,
	O_FAULT,
	O_CLIENTS,
	O_HOLD,
	O_RATE,
};

void tr_parse_opts(struct tr_opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "server", no_argument, NULL, O_SERVER },
		{ "clients", required_argument, NULL, O_CLIENTS },
		{ "hold-recvs", required_argument, NULL, O_HOLD },
		{ "client", required_argument, NULL, O_CLIENT },
		{ "loopback", no_argument, NULL, O_LOOPBACK },
		{ "port", required_argument, NULL, 'p' },
		{ "qps", required_argument, NULL, 'q' },
		{ "srq", no_argument, NULL, O_SRQ },
		{ "ud", no_argument, NULL, O_UD },
		{ "mw", optional_argument, NULL, O_MW },
		{ "ud-max-loss", required_argument, NULL, O_UD_LOSS },
		{ "ops", required_argument, NULL, O_OPS },
		{ "api", required_argument, NULL, O_API },
		{ "mode", required_argument, NULL, O_MODE },
		{ "cq", required_argument, NULL, O_CQ },
		{ "depth", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'D' },
		{ "rate", required_argument, NULL, O_RATE },
		{ "iters", required_argument, NULL, 'n' },
		{ "report-interval", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, O_JSON },
		{ "stall-timeout", required_argument, NULL, O_STALL },
		{ "connect-timeout", required_argument, NULL, O_CONNECT },
		{ "connect-delay", required_argument, NULL, O_CONNECT_DELAY },
		/* Not in --help: makes the checker's own tests fail. */
		{ "inject-fault", required_argument, NULL, O_FAULT },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char *const apis[] = { "legacy", "wr", "mixed", NULL };
	static const char *const modes[] = { "poll", "event", NULL };
	static const char *const cqs[] = { "legacy", "ex", NULL };
	static const char *const faults[] = { "none", "payload", "write", "imm",
					      "faa",  "udloss",	 NULL };
	const unsigned int msg_ops =
		1u << OP_SEND | 1u << OP_SEND_IMM | 1u << OP_WRITE_IMM;
	int c, roles = 0;
	bool iters_set = false;

	*o = (struct tr_opts){
		.gid_idx = -1,
		.ib_port = 1,
		.port = "18600",
		.nqps = 2,
		.ops_mask = (1u << OP_NUM) - 1,
		.depth = 32,
		.size = 2048,
		.iters = 1000,
		.stall_timeout = 60,
		.connect_timeout = 10,
		.clients = 1,
	};
	while ((c = getopt_long(argc, argv, "d:g:i:p:q:t:s:D:n:r:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'g':
			o->gid_idx = num(optarg, 0, 65535, "bad --gid-idx");
			break;
		case 'i':
			o->ib_port = num(optarg, 1, 255, "bad --ib-port");
			break;
		case O_SERVER:
			o->role = ROLE_SERVER;
			roles++;
			break;
		case O_CLIENT:
			o->role = ROLE_CLIENT;
			o->host = optarg;
			roles++;
			break;
		case O_LOOPBACK:
			o->role = ROLE_LOOPBACK;
			roles++;
			break;
		case 'p':
			num(optarg, 1, 65535, "bad --port");
			o->port = optarg;
			break;
		case 'q':
			o->nqps = num(optarg, 1, TR_MAX_QPS, "bad --qps");
			break;
		case O_SRQ:
			o->srq = true;
			break;
		case O_UD:
			o->ud = true;
			break;
		case O_MW:
			o->mw = optarg ? num(optarg, 1, 2, "bad --mw") : 1;
			break;
		case O_OPS:
			o->ops_mask = parse_ops(optarg);
			break;
		case O_API:
			o->api = pick(optarg, apis, "bad --api");
			break;
		case O_MODE:
			o->mode = pick(optarg, modes, "bad --mode");
			break;
		case O_CQ:
			o->cq = pick(optarg, cqs, "bad --cq");
			break;
		case 't':
			o->depth = num(optarg, 1, 4096, "bad --depth");
			break;
		case 's':
			o->size = num(optarg, 64, 1u << 24, "bad --size");
			break;
		case 'D':
			o->duration = seconds(optarg, "bad --duration");
			break;
		case 'n':
			o->iters = num(optarg, 1, 1ul << 40, "bad --iters");
			iters_set = true;
			break;
		case 'r':
			o->report_interval =
				seconds(optarg, "bad --report-interval");
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_STALL:
			o->stall_timeout =
				seconds(optarg, "bad --stall-timeout");
			break;
		case O_CONNECT:
			o->connect_timeout =
				seconds(optarg, "bad --connect-timeout");
			break;
		case O_CONNECT_DELAY:
			o->connect_delay =
				seconds(optarg, "bad --connect-delay");
			break;
		case O_UD_LOSS:
			o->ud_max_loss = seconds(optarg, "bad --ud-max-loss");
			if (o->ud_max_loss > 100)
				bad("bad --ud-max-loss", optarg);
			break;
		case O_FAULT:
			o->fault = pick(optarg, faults, "bad --inject-fault");
			break;
		case O_CLIENTS:
			o->clients = num(optarg, 1, 2, "bad --clients");
			break;
		case O_HOLD:
			o->hold_recvs = seconds(optarg, "bad --hold-recvs");
			break;
		case O_RATE:
			o->rate = num(optarg, 1, 1000000, "bad --rate");
			break;
		case 'h':
			usage(stdout);
			exit(TR_EXIT_OK);
		default:
			fprintf(stderr, "Try 'migr-traffic --help'.\n");
			exit(TR_EXIT_USAGE);
		}
	}
	if (optind < argc)
		bad("unexpected argument", argv[optind]);
	if (!o->dev)
		bad("no device given (-d DEV)", NULL);
	if (roles != 1)
		bad("give exactly one of --server, --client HOST, --loopback",
		    NULL);
	if (o->clients > 1 && o->role != ROLE_SERVER)
		bad("--clients is for --server", NULL);
	/* A plain WRITE is checked by a later READ or named by the next
	 * message; without either it would go unverified. */
	if ((o->ops_mask & 1u << OP_WRITE) &&
	    !(o->ops_mask & (1u << OP_READ | msg_ops)))
		bad("--ops write needs read or a message op (send, send_imm, write_imm) to verify it",
		    NULL);
	if (o->duration > 0 && !iters_set)
		o->iters = 0;
}
