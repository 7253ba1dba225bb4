// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The traffic loop: post, take completions (busy polling, or epoll on the
 * completion channels), watch the side channel, and end in order: stop
 * posting, drain, tell the peer what we sent (DONE), wait until we have
 * received everything the peer sent.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "traffic.h"

#define POLL_BATCH 32

static volatile sig_atomic_t signals;

static void on_signal(int sig)
{
	/* First signal: stop posting and drain. Second: leave now. */
	if (signals++)
		_exit(128 + sig);
}

/*
 * --hold-recvs: SIGUSR1 stops RC RECVs (the QPs' or the SRQ's) from being
 * posted again for a while, so the peer's SENDs wait (RNR) with its send
 * queue full behind them: the state a live switch meets when a receiver
 * stalls. A second SIGUSR1 ends the hold before its time: a test lets go
 * once its switch is done, however long that took.
 */
static volatile sig_atomic_t hold_asked;
static double hold_until;
static bool hold_exhausted;

static void on_usr1(int sig)
{
	(void)sig;
	hold_asked = 1;
}

/* Before any setup: a SIGUSR1 that comes early is kept, not fatal */
void tr_hold_init(const struct tr_opts *o)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	if (o->hold_recvs > 0)
		sigaction(SIGUSR1, &sa, NULL);
}

/* Every RC RECV posted before the hold was consumed: the peer's SENDs
 * now wait on RNR, which is what a test holds the receives for. */
static bool recvs_exhausted(struct tr_ep **eps, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		if (eps[i]->srq) {
			if (eps[i]->n_srq_owed < eps[i]->rdepth)
				return false;
			continue;
		}
		for (j = 0; j < eps[i]->nqps; j++)
			if (eps[i]->qps[j].recv_owed < eps[i]->rdepth)
				return false;
	}
	return true;
}

bool tr_recvs_held(void)
{
	return hold_until > 0;
}

static void hold_recvs(struct tr_ep **eps, unsigned int n, double now)
{
	uint64_t owed = 0;
	unsigned int i, j;

	if (hold_asked && !hold_until) {
		hold_asked = 0;
		hold_until = now + eps[0]->o->hold_recvs;
		hold_exhausted = false;
		printf("migr-traffic: holding receives for %.0f s\n",
		       eps[0]->o->hold_recvs);
		fflush(stdout);
	} else if (hold_asked) {
		hold_asked = 0;
		hold_until = now;
	}
	if (hold_until && now < hold_until && !hold_exhausted &&
	    recvs_exhausted(eps, n)) {
		hold_exhausted = true;
		printf("migr-traffic: no receive left, the peer's SENDs wait\n");
		fflush(stdout);
	}
	if (!hold_until || now < hold_until)
		return;
	hold_until = 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < eps[i]->n_srq_owed; j++, owed++)
			tr_post_srq_slot(eps[i], eps[i]->srq_owed[j]);
		eps[i]->n_srq_owed = 0;
		for (j = 0; j < eps[i]->nqps; j++) {
			struct tr_qp *q = &eps[i]->qps[j];

			for (; q->recv_owed; q->recv_owed--, owed++)
				tr_post_recv(eps[i], q);
		}
	}
	printf("migr-traffic: receives posted again (%llu)\n",
	       (unsigned long long)owed);
	fflush(stdout);
}

double tr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void drain_cq(struct tr_ep *ep, bool send)
{
	struct tr_wc wc[POLL_BATCH];
	unsigned int n, i;

	do {
		n = tr_poll(ep, send, wc, POLL_BATCH);
		for (i = 0; i < n; i++) {
			if (send)
				tr_check_send(ep, &wc[i]);
			else
				tr_check_recv(ep, &wc[i]);
		}
	} while (n == POLL_BATCH);
}

/* Datagrams that did not come within TR_UD_GRACE are lost (counted, and
 * judged against --ud-max-loss); without that option, none may be. */
static bool ud_quiet(struct tr_ep *ep, struct tr_qp *q)
{
	return ep->o->ud_max_loss > 0 && tr_now() - q->ud_last > TR_UD_GRACE;
}

/* All the peer's UD messages arrived or are given up as lost. */
static bool ud_received(struct tr_ep *ep, struct tr_qp *q)
{
	return ep->peer_done &&
	       (q->msgs_next >= q->peer_msgs || ud_quiet(ep, q));
}

/* Nothing left to post and every posted WR completed. */
static bool sending_finished(struct tr_ep *ep)
{
	const struct tr_opts *o = ep->o;
	unsigned int i;

	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];
		bool stopped =
			ep->stopping || (o->iters && q->posted >= o->iters);

		if (q->posted != q->completed)
			return false;
		if (!q->ud && !stopped)
			return false;
		/* UD: the leader waits for the echoes, the echoing side
		 * for all the leader's messages. */
		if (q->ud && ep->id == 0 &&
		    (!stopped ||
		     (tr_ud_accounted(q) < q->msgs_posted && !ud_quiet(ep, q))))
			return false;
		if (q->ud && ep->id != 0 &&
		    (!ud_received(ep, q) || q->posted < q->msgs_recv))
			return false;
	}
	return true;
}

static void send_done(struct tr_ep *ep)
{
	struct tr_done d = { .nqps = ep->nall };
	unsigned int i;

	for (i = 0; i < ep->nall; i++) {
		d.qp[i].posted = ep->qps[i].posted;
		d.qp[i].msgs = ep->qps[i].msgs_posted;
		d.qp[i].atomic = ep->qps[i].atomic_val;
	}
	tr_chan_send(ep, MSG_DONE, &d, sizeof(d));
	ep->done_sent = true;
}

static void peer_message(struct tr_ep *ep)
{
	struct tr_done d;
	unsigned int i;

	tr_chan_recv(ep, MSG_DONE, &d, sizeof(d));
	for (i = 0; i < ep->nall; i++) {
		ep->qps[i].peer_posted = d.qp[i].posted;
		ep->qps[i].peer_msgs = d.qp[i].msgs;
		ep->qps[i].peer_atomic = d.qp[i].atomic;
	}
	ep->peer_done = true;
	tr_check_done(ep);
}

static void check_ud_loss(struct tr_ep *ep, struct tr_qp *q)
{
	uint64_t lost;

	if (q->msgs_next > q->peer_msgs)
		tr_fail(ep, q, "received message %llu, the peer sent only %llu",
			(unsigned long long)q->msgs_next - 1,
			(unsigned long long)q->peer_msgs);
	lost = q->lost + q->peer_msgs - q->msgs_next;
	if (lost > q->peer_msgs * ep->o->ud_max_loss / 100)
		tr_fail(ep, q,
			"%llu of the peer's %llu datagrams lost (over --ud-max-loss %g%%)",
			(unsigned long long)lost,
			(unsigned long long)q->peer_msgs, ep->o->ud_max_loss);
	q->lost = lost;
}

/* All we sent is acknowledged and all the peer sent has arrived. */
static bool complete(struct tr_ep *ep)
{
	unsigned int i;

	if (!ep->done_sent || !ep->peer_done)
		return false;
	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];

		if (q->ud) {
			if (!ud_received(ep, q))
				return false;
			continue;
		}
		if (q->msgs_recv > q->peer_msgs)
			tr_fail(ep, q,
				"received %llu messages, the peer sent only %llu",
				(unsigned long long)q->msgs_recv,
				(unsigned long long)q->peer_msgs);
		if (q->msgs_recv < q->peer_msgs)
			return false;
	}
	for (i = 0; i < ep->nall; i++)
		if (ep->qps[i].ud)
			check_ud_loss(ep, &ep->qps[i]);
	return true;
}

/* Waiting on our own work (not only on a slower peer) with no completion
 * for --stall-timeout: name what is missing. */
static void check_stall(struct tr_ep *ep, double now)
{
	unsigned int i;

	if (!ep->o->stall_timeout ||
	    now - ep->t_progress < ep->o->stall_timeout)
		return;
	for (i = 0; i < ep->nall; i++) {
		struct tr_qp *q = &ep->qps[i];

		if (q->posted != q->completed)
			tr_fail(ep, q,
				"no completion for %.0f s: seq %llu..%llu outstanding",
				now - ep->t_progress,
				(unsigned long long)q->completed,
				(unsigned long long)q->posted - 1);
		if (ep->peer_done && !q->ud && q->msgs_recv < q->peer_msgs)
			tr_fail(ep, q,
				"no completion for %.0f s: received %llu of the peer's %llu messages",
				now - ep->t_progress,
				(unsigned long long)q->msgs_recv,
				(unsigned long long)q->peer_msgs);
		if (q->ud && ep->id == 0 && tr_ud_accounted(q) < q->msgs_posted)
			tr_fail(ep, q,
				"no completion for %.0f s: echoes for messages %llu..%llu missing (datagrams lost?)",
				now - ep->t_progress,
				(unsigned long long)tr_ud_accounted(q),
				(unsigned long long)q->msgs_posted - 1);
		if (q->ud && ep->peer_done && q->msgs_next < q->peer_msgs)
			tr_fail(ep, q,
				"no completion for %.0f s: messages %llu..%llu of the peer missing (datagrams lost?)",
				now - ep->t_progress,
				(unsigned long long)q->msgs_next,
				(unsigned long long)q->peer_msgs - 1);
	}
}

static int setup_epoll(struct tr_ep **eps, unsigned int n)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int i;
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0)
		tr_die("epoll_create1: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		ev.data.ptr = eps[i];
		if (epoll_ctl(fd, EPOLL_CTL_ADD, eps[i]->ch->fd, &ev))
			tr_die("epoll_ctl on the completion channel: %s",
			       strerror(errno));
		tr_arm(eps[i]);
		/*
		 * What completed before the arm raises no event: the peer
		 * may already have used every RECV we posted, and then no
		 * new completion (and event) comes. Poll both CQs once.
		 */
		eps[i]->scq_evt = eps[i]->rcq_evt = true;
	}
	return fd;
}

/* Event mode: sleep until a channel fd is readable, take its events. The
 * CQs are polled only after an event, so lost events show as a stall. */
static void wait_events(int epfd, double timeout)
{
	struct epoll_event ev[4];
	int n, i, ms = timeout * 1000;

	n = epoll_wait(epfd, ev, 4, ms < 1 ? 1 : ms > 100 ? 100 : ms);
	if (n < 0 && errno != EINTR)
		tr_die("epoll_wait: %s", strerror(errno));
	for (i = 0; i < n; i++)
		tr_get_events(ev[i].data.ptr);
}

static void take_completions(struct tr_ep *ep)
{
	if (ep->o->mode == MODE_POLL || ep->scq_evt)
		drain_cq(ep, true);
	if (ep->o->mode == MODE_POLL || ep->rcq_evt)
		drain_cq(ep, false);
	ep->scq_evt = ep->rcq_evt = false;
}

void tr_run(struct tr_ep **eps, unsigned int n)
{
	const struct tr_opts *o = eps[0]->o;
	struct sigaction sa = { .sa_handler = on_signal };
	double t0 = tr_now(), now, next_chan = 0, deadline = 0;
	double next_report = t0 + o->report_interval;
	unsigned int i, j, left = n;
	int epfd = -1;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o->duration > 0)
		deadline = t0 + o->duration;
	if (o->mode == MODE_EVENT)
		epfd = setup_epoll(eps, n);
	for (i = 0; i < n; i++) {
		eps[i]->t_start = eps[i]->t_progress = eps[i]->last_report_t =
			t0;
		for (j = 0; j < eps[i]->nall; j++)
			eps[i]->qps[j].ud_last = t0;
	}

	while (left) {
		now = tr_now();
		hold_recvs(eps, n, now);
		for (i = 0; i < n; i++) {
			struct tr_ep *ep = eps[i];

			if (signals || (deadline && now >= deadline))
				ep->stopping = true;
			for (j = 0; j < ep->nall; j++)
				tr_refill(ep, &ep->qps[j]);
		}
		if (epfd >= 0)
			wait_events(epfd, o->report_interval > 0 ?
						  next_report - now :
						  0.1);
		for (i = 0; i < n; i++)
			take_completions(eps[i]);
		/* a rate-limited poller need not spin */
		if (o->rate && epfd < 0)
			usleep(200);

		now = tr_now();
		for (i = 0; i < n; i++) {
			struct tr_ep *ep = eps[i];

			if (ep->complete)
				continue;
			if (now >= next_chan && !ep->peer_done &&
			    tr_chan_readable(ep))
				peer_message(ep);
			if (!ep->done_sent && sending_finished(ep))
				send_done(ep);
			if (complete(ep)) {
				ep->complete = true;
				ep->t_end = now;
				left--;
				continue;
			}
			check_stall(ep, now);
		}
		if (now >= next_chan)
			next_chan = now + 0.005;
		if (o->report_interval > 0 && now >= next_report) {
			for (i = 0; i < n; i++)
				tr_report(eps[i], now);
			next_report += o->report_interval;
			if (next_report < now)
				next_report = now + o->report_interval;
		}
	}
	if (epfd >= 0)
		close(epfd);
}
