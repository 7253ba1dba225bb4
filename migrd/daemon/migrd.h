/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* migrd: one per host, between operators (migrctl), the migr processes of
 * this host and the migrd of other hosts. See migrd(8). */
#ifndef MIGRD_H
#define MIGRD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "ctl_line.h"
#include "req.h"
#include "sbuf.h"

#define PROC_REPLY_MAX (1 << 20) /* a migr process's reply line */

struct migrd {
	struct conf conf;
	/* conf.peers' keys, read at start (a restart reads them again) */
	struct peer_key {
		uint8_t key[WIRE_KEY_MAX + 1];
		size_t len;
	} keys[PEERS_MAX];
	/* tests: "GID QPN PID ..." lines stand in for the kernel's QP owners */
	const char *test_qp_owners;
	/*
	 * tests: migr processes are looked for in migrd's own network
	 * namespace only, so that tests running side by side do not see
	 * each other's stand-ins
	 */
	bool test_own_netns;
	/*
	 * tests: a directory where a file named after a step of the
	 * destination's side ("resume", "commit") holds that step while it
	 * exists (test_hold(), migrate_dest.c)
	 */
	const char *test_hold;
};

extern struct migrd migrd;

struct peer_link;

/* Who asks: a local user (SO_PEERCRED) or a peer daemon */
struct client {
	uid_t uid;
	pid_t pid;
	bool peer;
	struct peer_link *link; /* a peer's connection (peer.h) */
	int fd; /* a local client's socket, for progress lines; else -1 */
};

/* ops.c: the reply (one JSON line, no newline) to r */
void ops_run(const struct req *r, const struct client *c, struct sbuf *out);

/* partner.c: the partner relay (req.h) */
void partner_run(const struct req *r, const struct client *c, struct sbuf *out);

/* udpeers.c: the UD relay (req.h) */
void udpeers_run(const struct req *r, const struct client *c, struct sbuf *out);

/*
 * proc.c: one request to a migr process's control socket: line is
 * ctl_format()'s (ctl_line.h); its reply, one JSON object, into *reply
 * (to free)
 */
int proc_request(int pid, const char *line, int timeout_ms, char **reply,
		 char *err, size_t errlen);
/* The same with q formatted here */
int proc_ask(int pid, const struct ctl_req *q, int timeout_ms, char **reply,
	     char *err, size_t errlen);

/*
 * A process's verdict on a park, resume or switch (its reply's "ok"), and
 * if false the first error it names (that of its array key[0], or its own):
 * ctl_reply_verdict()
 */
bool proc_verdict(const char *reply, const char *key, char *err, size_t len);

/*
 * A resume that succeeded may have left a partner behind (a rollback
 * takes along the partners it can reach): true with the first
 * "partner_error" of its array key, naming the QP, the partner and the
 * step that failed
 */
bool proc_partner_error(const char *reply, const char *key, char *err,
			size_t len);

/* One process of a fan-out, and what it answered */
struct proc_ask {
	int pid;
	int rc; /* 0: reply; -1: err */
	char *reply; /* its JSON line, to free */
	char err[256];
};

/*
 * line to every process of v[] at once (a few threads), each within per_ms
 * and all before deadline (io_now_ms() time): a fan-out is bounded as a
 * whole, whatever the processes do. A reply longer than max_reply counts
 * as none (what a fan-out holds is bounded too).
 */
void proc_ask_all(struct proc_ask *v, int n, const char *line, int per_ms,
		  long long deadline, size_t max_reply);

/* local.c: serve one accepted local connection, then close it */
void local_serve(int fd);

#endif
