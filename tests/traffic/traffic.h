/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * migr-traffic: an ordinary verbs application that generates RDMA traffic
 * and verifies it end to end. Shared types and the functions each file
 * provides.
 *
 * Model: each side ("endpoint") is requester and responder at once. In
 * server/client mode a process holds one endpoint; in loopback it holds
 * both, driven by one loop. Endpoints exchange addresses, keys and final
 * counts over a TCP side channel (a socketpair in loopback).
 */
#ifndef MIGR_TRAFFIC_H
#define MIGR_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define TR_MAX_QPS 64
#define TR_UD_GRH 40
#define TR_NONE UINT64_MAX
#define TR_BIND_WRID (UINT64_MAX - 1) /* --mw: the window's bind */
#define TR_UD_GRACE 1.0 /* s without a datagram: the rest is lost */

/* Exit codes: verification failure vs usage vs environment. */
enum { TR_EXIT_OK = 0, TR_EXIT_FAIL = 1, TR_EXIT_USAGE = 2, TR_EXIT_ERROR = 3 };

enum tr_op {
	OP_SEND,
	OP_SEND_IMM,
	OP_WRITE,
	OP_WRITE_IMM,
	OP_READ,
	OP_CAS,
	OP_FAA,
	OP_NUM,
	OP_RECV = OP_NUM, /* wr_id kind of receive WRs */
	KIND_PATTERN, /* header kind of a block its owner wrote at setup */
};

enum tr_role { ROLE_SERVER, ROLE_CLIENT, ROLE_LOOPBACK };
enum tr_api { API_LEGACY, API_WR, API_MIXED };
enum tr_mode { MODE_POLL, MODE_EVENT };
enum tr_cqkind { CQ_LEGACY, CQ_EX };
enum tr_fault {
	FAULT_NONE,
	FAULT_PAYLOAD,
	FAULT_WRITE,
	FAULT_IMM,
	FAULT_FAA,
	FAULT_UDLOSS,
};

struct tr_opts {
	const char *dev;
	int gid_idx; /* -1: first IPv4-mapped GID */
	int ib_port;
	enum tr_role role;
	const char *host;
	const char *port;
	unsigned int nqps;
	bool srq;
	bool ud;
	/* peers address the regions through memory windows of this type */
	unsigned int mw;
	unsigned int ops_mask; /* 1 << enum tr_op */
	enum tr_api api;
	enum tr_mode mode;
	enum tr_cqkind cq;
	unsigned int depth;
	unsigned int size;
	double duration; /* 0: run --iters */
	uint64_t iters;
	double report_interval;
	bool json;
	double stall_timeout;
	double connect_timeout;
	double connect_delay; /* after the hello, before the QPs connect */
	double ud_max_loss; /* percent of UD datagrams that may be lost */
	enum tr_fault fault;
	unsigned int clients; /* a server's, on one device context */
	double hold_recvs; /* SIGUSR1: no RC RECV posted for so long */
	unsigned int rate; /* WRs a second per QP at most; 0: no limit */
};

/* What the requester must check when a send-queue WR completes. */
struct tr_pend {
	uint64_t seq;
	uint8_t op;
	uint64_t expect_seq; /* READ: seq of the WRITE read back, or TR_NONE */
	uint64_t expect_msg;
	uint64_t atomic_old; /* CAS/FAA: the value the peer's counter held */
};

/* One QP of an endpoint: RC, or the UD QP (index nqps). */
struct tr_qp {
	unsigned int idx;
	bool ud;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	uint32_t psn;

	/* Requester side. */
	uint8_t *sbuf; /* depth slots: SEND/WRITE sources */
	uint8_t *res; /* depth slots: READ/atomic results (RC) */
	struct tr_pend *pend;
	uint64_t posted, completed; /* send-queue sequence numbers */
	uint64_t msgs_posted; /* receive-consuming messages */
	uint64_t write_since_msg; /* last plain WRITE not yet named */
	uint64_t last_write_seq, last_write_msg;
	uint64_t atomic_val; /* the peer's counter as it must be */
	uint64_t op_done[OP_NUM];
	uint64_t batches;

	/* Responder side. */
	uint8_t *remote; /* counter, pattern, WRITE_IMM and WRITE slots */
	struct ibv_mr *remote_mr;
	struct ibv_mw *mw; /* --mw: bound over the remote region */
	uint8_t *rbuf; /* receive slots (no SRQ) */
	uint64_t recv_posted, recv_done;
	uint64_t recv_owed; /* not posted while receives are held */
	uint64_t msgs_recv;
	uint64_t peer_last_seq;

	/* UD: datagrams may be lost, never duplicated or reordered. */
	uint64_t msgs_next; /* next message number expected */
	uint64_t lost;
	uint64_t peer_lost; /* endpoint 0: losses the echoes reported */
	/* endpoint 0: its messages below this were given up waiting for */
	uint64_t ud_skip_to;
	double ud_last; /* last datagram or echo */

	/* The peer's side of this QP. */
	uint32_t peer_qpn, peer_psn, peer_rkey;
	uint64_t peer_addr;
	struct ibv_ah *ah; /* UD */

	/* From the peer's DONE message. */
	uint64_t peer_posted, peer_msgs, peer_atomic;
};

struct tr_hello_qp {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
};

/* Side-channel HELLO: all a peer needs to talk to us. Host byte order. */
struct tr_hello {
	uint32_t version;
	uint32_t id;
	uint32_t nqps, ud, size, nslots, ud_size, ud_depth;
	uint32_t ud_qkey, mw;
	uint16_t lid;
	uint8_t gid[16];
	struct tr_hello_qp qp[TR_MAX_QPS + 1];
};

/* Side-channel READY: --mw, the windows' rkeys (bound once connected) */
struct tr_ready {
	uint32_t rkey[TR_MAX_QPS + 1];
};

struct tr_done_qp {
	uint64_t posted, msgs, atomic;
};

struct tr_done {
	uint32_t nqps;
	struct tr_done_qp qp[TR_MAX_QPS + 1];
};

struct tr_final {
	uint32_t nqps;
	uint64_t msgs_recv[TR_MAX_QPS + 1];
};

struct tr_ep {
	int id; /* 0: server (UD leader), 1: client */
	const char *name;
	const struct tr_opts *o;
	unsigned int ops[OP_NUM], nops; /* RC op cycle */
	unsigned int ud_ops[2], ud_nops;

	struct ibv_context *ctx;
	bool ctx_shared; /* another endpoint's, which closes it */
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_cq_ex *scqx, *rcqx;
	unsigned int scq_unacked, rcq_unacked;
	bool scq_evt, rcq_evt; /* event mode: an event came, poll it */
	struct ibv_srq *srq;
	uint8_t *srq_buf;
	uint64_t *srq_wrid; /* per slot: wr_id of the posted WR, 0 if none */
	uint64_t srq_posts;
	/* --hold-recvs: slots free again, posted once the hold is over */
	unsigned int *srq_owed, n_srq_owed;
	struct ibv_mr *smr, *resmr, *rmr;
	uint8_t *sbase, *resbase, *rbase;
	size_t slen, reslen, rlen;

	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	union ibv_gid gid;
	int gid_idx;

	unsigned int nqps; /* RC QPs */
	unsigned int nall; /* RC + UD */
	unsigned int rdepth; /* receives per RC QP, or SRQ size */
	unsigned int nslots; /* WRITE/WRITE_IMM slots per QP (> rdepth) */
	unsigned int ud_size, ud_depth, ud_window;
	uint32_t ud_qkey;
	struct tr_qp qps[TR_MAX_QPS + 1];
	unsigned int peer_nslots;

	int sock;
	struct tr_hello peer;

	/* Loop state. */
	bool stopping, done_sent, peer_done, complete;
	uint64_t events;
	double t_start, t_end, t_progress;
	uint64_t last_report_ops;
	double last_report_t;
	bool fault_done;
};

/*
 * What an atomic's result slot holds from its post until the result lands:
 * never the value expected, so a success that wrote nothing shows.
 */
static inline uint64_t tr_atomic_poison(uint64_t expected)
{
	return ~expected;
}

/*
 * UD flow control, endpoint 0: its messages the peer has accounted for,
 * as echoed (received, or lost on the way there) or as echoes lost on the
 * way back. Fewer than ud_window beyond that keeps both receive queues
 * from running dry: each echo follows one received message.
 */
static inline uint64_t tr_ud_accounted(const struct tr_qp *q)
{
	uint64_t heard = q->msgs_next + q->peer_lost;

	/*
	 * Not a sum: echoes given up for may still come (held while a switch
	 * moved either end), and counting them twice would let the window
	 * grow past the receive queues for good
	 */
	return heard > q->ud_skip_to ? heard : q->ud_skip_to;
}

/* opts.c */
void tr_parse_opts(struct tr_opts *o, int argc, char **argv);
const char *tr_op_name(unsigned int op);

/* wire.c: wr_id, payload header, checksum */
uint64_t tr_wrid(unsigned int qp, unsigned int op, uint64_t seq);
void tr_wrid_split(uint64_t wrid, unsigned int *qp, unsigned int *op,
		   uint64_t *seq);
void tr_fill(uint8_t *buf, uint32_t len, unsigned int kind, unsigned int src,
	     unsigned int qp, uint64_t seq, uint64_t msg, uint64_t write_seq);
const char *tr_verify(const uint8_t *buf, uint32_t len, unsigned int kind,
		      unsigned int src, unsigned int qp, uint64_t seq,
		      uint64_t msg, uint64_t *write_seq);
uint64_t tr_hdr_seq(const uint8_t *buf);
uint64_t tr_hdr_msg(const uint8_t *buf);
uint64_t tr_atomic_init(unsigned int owner, unsigned int qp);
size_t tr_remote_len(unsigned int size, unsigned int nslots);
size_t tr_off_pattern(void);
size_t tr_off_wimm(unsigned int size, unsigned int slot);
size_t tr_off_write(unsigned int size, unsigned int nslots, unsigned int slot);

/* chan.c: TCP side channel */
enum { MSG_HELLO = 1, MSG_READY, MSG_DONE, MSG_FINAL, MSG_ABORT };
int tr_chan_listen(const struct tr_opts *o);
int tr_chan_accept(int lfd);
int tr_chan_connect(const struct tr_opts *o);
void tr_chan_pair(int fds[2]);
void tr_chan_send(struct tr_ep *ep, uint32_t type, const void *p, uint32_t len);
void tr_chan_recv(struct tr_ep *ep, uint32_t type, void *p, uint32_t len);
bool tr_chan_readable(struct tr_ep *ep);

/* setup.c: verbs resources */
void tr_setup(struct tr_ep *ep);
void tr_hello_fill(struct tr_ep *ep, struct tr_hello *h);
void tr_connect(struct tr_ep *ep);
void tr_ready_fill(struct tr_ep *ep, struct tr_ready *r);
void tr_ready_take(struct tr_ep *ep, const struct tr_ready *r);
void tr_teardown(struct tr_ep *ep);

/* post.c */
void tr_post_recv(struct tr_ep *ep, struct tr_qp *q);
void tr_post_srq_slot(struct tr_ep *ep, unsigned int slot);
unsigned int tr_refill(struct tr_ep *ep, struct tr_qp *q);

/* cq.c */
struct tr_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, qp_num, src_qp, imm;
	unsigned int wc_flags;
};
unsigned int tr_poll(struct tr_ep *ep, bool send, struct tr_wc *wc,
		     unsigned int max);
void tr_arm(struct tr_ep *ep);
void tr_flush_cause(struct tr_ep *ep);
void tr_get_events(struct tr_ep *ep);
void tr_ack_events(struct tr_ep *ep);

/* check.c */
void tr_check_send(struct tr_ep *ep, const struct tr_wc *wc);
void tr_check_recv(struct tr_ep *ep, const struct tr_wc *wc);
void tr_check_done(struct tr_ep *ep);
void tr_check_final(struct tr_ep *ep, const struct tr_final *f);

/* loop.c */
void tr_run(struct tr_ep **eps, unsigned int n);
bool tr_recvs_held(void);
double tr_now(void);
void tr_hold_init(const struct tr_opts *o);

/* report.c */
void __attribute__((noreturn, format(printf, 3, 4)))
tr_fail(struct tr_ep *ep, const struct tr_qp *q, const char *fmt, ...);
void __attribute__((noreturn, format(printf, 1, 2)))
tr_die(const char *fmt, ...);
void tr_report(struct tr_ep *ep, double now);
void tr_summary(struct tr_ep **eps, unsigned int n);
uint64_t tr_ops_done(const struct tr_ep *ep);

#endif
