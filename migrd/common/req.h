/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Requests to migrd: one line of at most REQ_MAX bytes, "migrd/1 OP ARGS\n",
 * from local clients (its UNIX socket) and, for the peer operations, from
 * peer daemons. Every reply is one JSON line with "v" and "ok".
 *
 *   migrd/1 register DEVICE            (the migr library; pid from SO_PEERCRED)
 *   migrd/1 status [PID]
 *   migrd/1 switch PID DEVICE WAIT_MS
 *   migrd/1 hello
 *   migrd/1 qpn-owner HOST|- IBDEV QPN (HOST: ask that host's migrd)
 *   migrd/1 peer-ping HOST
 *   migrd/1 partner HOST|- PID QPN GID LINE...
 *                                      (from migr processes and root; peers
 *                                      with HOST "-" only: LINE goes to the
 *                                      process owning QP QPN with GID, here
 *                                      or through HOST's migrd; from a
 *                                      process that is not root, only for
 *                                      QPs facing its own: pauth.h)
 *   migrd/1 udpeers HOST|- LINE...     (from migr processes and root; peers
 *                                      with HOST "-" only: LINE goes to
 *                                      every migr process here, or on HOST
 *                                      through its migrd: udpeers.c)
 *   migrd/1 migrate PID HOST DEVICE|- PRECOPY WAIT_MS
 *                                      (root only: migrate.c; the reply
 *                                      is preceded by progress lines)
 * Between the two migrd of a migration (peers only: migrate_dest.c):
 *   migrd/1 mig-check ID PID DEVICE CRIU_VERSION TID,TID,... NS [MOVERS]
 *                                      (NS: PIDNS,IF,MAC,ADDR/PREFIX, see
 *                                      struct req_ns; "host,-,-,-" for a
 *                                      bare tree; MOVERS: PID,PID,... the
 *                                      tree's migr processes, as its pid
 *                                      namespace numbers them; without
 *                                      it, PID alone)
 *   migrd/1 mig-put ID NAME            (then a stream of frames: images.h)
 *   migrd/1 mig-grants ID PPID/QPN/GID/HOST[/OWNER],...
 *                                      (the parked processes' partner
 *                                      sessions: pauth.h; OWNER one of
 *                                      MOVERS, the first without it;
 *                                      before restore)
 *   migrd/1 mig-hold ID qpn|mr|mw HEX,HEX,...
 *                                      (numbers the tree's migr processes
 *                                      have: QPNs, MR keys or memory
 *                                      windows' rkeys, at most
 *                                      REQ_HOLD_MAX a line; held for them
 *                                      on DEVICE until the restore, where
 *                                      migr's rdma_rxe can: numhold.h)
 *   migrd/1 mig-restore ID DEVICE
 *   migrd/1 mig-end ID commit|abort|state
 */
#ifndef MIGRD_REQ_H
#define MIGRD_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "partner_line.h"

#define REQ_VERSION 1
#define REQ_MAX 4096
#define REQ_NAME_MAX 64
#define REQ_HOST_MAX 256
#define REQ_WAIT_MAX 600000
/*
 * A switch (or a migration's park) may take its drain's --wait-ms and
 * this for the rest: its partner steps go through both hosts' migrd, up
 * to 45 s each in the library; they took 10 to 40 s in all on a slow TCG
 * test bed, past the 30 s migrd allowed before. migrctl waits longer.
 */
#define REQ_SWITCH_STEPS_MS 120000
#define REQ_CTL_MARGIN_MS 30000
#define REQ_PID_MAX 4194304
#define REQ_GID_LEN PLINE_GID_LEN /* hex digits, lowercase */
#define REQ_PARTNER_LINE_MAX PLINE_LINE_MAX

enum req_op {
	REQ_REGISTER,
	REQ_STATUS,
	REQ_SWITCH,
	REQ_HELLO,
	REQ_QPN_OWNER,
	REQ_PEER_PING,
	REQ_PARTNER,
	REQ_UDPEERS,
	REQ_MIGRATE,
	REQ_MIG_CHECK,
	REQ_MIG_PUT,
	REQ_MIG_RESTORE,
	REQ_MIG_END,
	REQ_MIG_GRANTS,
	REQ_MIG_HOLD,
};

#define REQ_MIG_ID_LEN 16 /* hex digits */
#define REQ_PRECOPY_MAX 16 /* pre-copy rounds */
#define REQ_MIG_TIDS_MAX 512 /* threads of a migrated tree */
#define REQ_MOVERS_MAX 16 /* migr processes of a migrated tree */
#define REQ_HOLD_MAX 400 /* numbers in one mig-hold: 8 hex digits each */

/*
 * mig-grants: a grant of a partner session (pauth.h) moving with its
 * asker, "PPID/QPN/GID/HOST[/OWNER]" (QPN hex, HOST an address or "-",
 * OWNER the asker as its tree's pid namespace numbers it), several joined
 * by ','
 */
struct req_grant {
	int owner; /* 0: the tree's first migr process */
	int ppid; /* the partner process */
	uint32_t qpn; /* its QP */
	char gid[REQ_GID_LEN + 1];
	char host[REQ_HOST_MAX]; /* the partner's host; empty: the asker's */
};
/* One entry's longest text: pids, QPN, GID, an IPv6 address, separators */
#define REQ_GRANT_TEXT_MAX 104

#define REQ_NS_MAX 80

/* mig-check: the namespaces of the tree that comes (migrate_dest.c) */
struct req_ns {
	bool own_pidns; /* its root is the init of its own pid namespace */
	bool own_netns; /* then: its one interface and IPv4 address */
	char ifname[16];
	char mac[18];
	char addr[16];
	unsigned int prefix;
};

struct req {
	enum req_op op;
	int pid; /* 0: every process (status) */
	char dev[REQ_NAME_MAX];
	char host[REQ_HOST_MAX]; /* empty: this host */
	unsigned int wait_ms;
	uint32_t qpn;
	char gid[REQ_GID_LEN + 1]; /* partner */
	/* partner, udpeers: the rest, verbatim; mig-check: the tids;
	 * mig-end: what to do; mig-hold: the numbers */
	char line[REQ_PARTNER_LINE_MAX + 1];
	char id[REQ_MIG_ID_LEN + 1]; /* a migration's */
	char name[REQ_NAME_MAX]; /* mig-put: an image directory; mig-hold: kind */
	char version[REQ_NAME_MAX]; /* mig-check: CRIU's */
	unsigned int count; /* migrate: pre-copy rounds */
	struct req_ns ns; /* mig-check */
	int movers[REQ_MOVERS_MAX], nmovers; /* mig-check */
};

/*
 * Parse and validate one request (len bytes, ending in '\n'). Returns 0, or
 * -1 with a one-line reason in err.
 */
int req_parse(const char *buf, size_t len, struct req *r, char *err,
	      size_t errlen);

/* Print a one-line reason into err; returns -1, for "return req_fail()" */
int __attribute__((format(printf, 3, 4)))
req_fail(char *err, size_t errlen, const char *fmt, ...);

/*
 * The grant at *p of a mig-grants list: 1 (*p moved past it), 0 at the
 * end of the list, -1 if it is not one
 */
int req_grant_next(const char **p, struct req_grant *g);
/*
 * The number at *p of a mig-hold list: 1 (*p moved past it), 0 at the
 * end of the list, -1 if it is not one
 */
int req_hold_next(const char **p, uint32_t *v);

/* mig-hold's kinds of numbers, as a source collects and sends them */
enum req_hold_kind { REQ_HOLD_QPN, REQ_HOLD_MR, REQ_HOLD_MW, REQ_HOLD_KINDS };
/* "qpn", "mr", "mw": a kind's name on the line */
extern const char *const req_hold_names[REQ_HOLD_KINDS];
/* The kind named name, or -1 */
int req_hold_kind(const char *name);

/* A grant's text into buf; its length, or -1 if it does not fit */
int req_grant_format(const struct req_grant *g, char *buf, size_t len);

/* Format a request line (for clients); returns its length or -1 */
int req_format(const struct req *r, char *buf, size_t len);

#endif
