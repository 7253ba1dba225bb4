// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migr-traffic: phases of a run. Each phase runs over every endpoint of
 * this process (one, or two in loopback) before the next starts, so the
 * same side-channel protocol works across hosts and within one process.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "traffic.h"

static void init_ep(struct tr_ep *ep, const struct tr_opts *o, int id)
{
	unsigned int op;

	ep->id = id;
	ep->name = id ? "client" : "server";
	ep->o = o;
	ep->sock = -1;
	for (op = 0; op < OP_NUM; op++)
		if (o->ops_mask & 1u << op)
			ep->ops[ep->nops++] = op;
	/* UD carries SEND and SEND_IMM only. */
	if (o->ops_mask & 1u << OP_SEND)
		ep->ud_ops[ep->ud_nops++] = OP_SEND;
	if (o->ops_mask & 1u << OP_SEND_IMM)
		ep->ud_ops[ep->ud_nops++] = OP_SEND_IMM;
	if (!ep->ud_nops)
		ep->ud_ops[ep->ud_nops++] = OP_SEND;
}

int main(int argc, char **argv)
{
	static struct tr_ep ep[2];
	struct tr_ep *eps[2] = { &ep[0], &ep[1] };
	struct tr_hello hello;
	struct tr_ready ready;
	struct tr_final fin;
	struct tr_opts o;
	unsigned int n = 1, i, j;
	int fds[2], lfd;

	tr_parse_opts(&o, argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	tr_hold_init(&o);

	/* Devices first: a bad name fails before any waiting. */
	if (o.role == ROLE_LOOPBACK) {
		n = 2;
		init_ep(&ep[0], &o, 0);
		init_ep(&ep[1], &o, 1);
		tr_setup(&ep[0]);
		tr_setup(&ep[1]);
		tr_chan_pair(fds);
		ep[0].sock = fds[0];
		ep[1].sock = fds[1];
	} else if (o.role == ROLE_SERVER) {
		/*
		 * Clients beyond the first share the first one's context, as
		 * a server's connections commonly do: its partners are then
		 * in several processes (or hosts) at once.
		 */
		n = o.clients;
		for (i = 0; i < n; i++) {
			init_ep(&ep[i], &o, 0);
			if (i) {
				ep[i].name = "server, second client";
				ep[i].ctx = ep[0].ctx;
				ep[i].ctx_shared = true;
			}
			tr_setup(&ep[i]);
		}
		lfd = tr_chan_listen(&o);
		for (i = 0; i < n; i++)
			ep[i].sock = tr_chan_accept(lfd);
		close(lfd);
	} else {
		init_ep(&ep[0], &o, 1);
		tr_setup(&ep[0]);
		ep[0].sock = tr_chan_connect(&o);
	}

	for (i = 0; i < n; i++) {
		tr_hello_fill(eps[i], &hello);
		tr_chan_send(eps[i], MSG_HELLO, &hello, sizeof(hello));
	}
	for (i = 0; i < n; i++)
		tr_chan_recv(eps[i], MSG_HELLO, &eps[i]->peer,
			     sizeof(eps[i]->peer));
	if (o.connect_delay > 0)
		usleep(o.connect_delay * 1e6);
	for (i = 0; i < n; i++)
		tr_connect(eps[i]);
	/* Nobody sends before both sides have posted their receives. */
	for (i = 0; i < n; i++) {
		tr_ready_fill(eps[i], &ready);
		tr_chan_send(eps[i], MSG_READY, &ready, sizeof(ready));
	}
	for (i = 0; i < n; i++) {
		tr_chan_recv(eps[i], MSG_READY, &ready, sizeof(ready));
		tr_ready_take(eps[i], &ready);
	}

	tr_run(eps, n);

	for (i = 0; i < n; i++) {
		fin = (struct tr_final){ .nqps = eps[i]->nall };
		for (j = 0; j < eps[i]->nall; j++)
			fin.msgs_recv[j] = eps[i]->qps[j].msgs_recv;
		tr_chan_send(eps[i], MSG_FINAL, &fin, sizeof(fin));
	}
	for (i = 0; i < n; i++) {
		tr_chan_recv(eps[i], MSG_FINAL, &fin, sizeof(fin));
		tr_check_final(eps[i], &fin);
	}
	/* Quiet now: every WR drained on both sides. The first goes last:
	 * it closes a context the others may share. */
	for (i = n; i-- > 0;) {
		tr_teardown(eps[i]);
		close(eps[i]->sock);
		eps[i]->sock = -1;
	}
	tr_summary(eps, n);
	return TR_EXIT_OK;
}
