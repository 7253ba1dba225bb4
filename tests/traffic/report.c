// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Output: the one failure line, progress lines, the final summary. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "traffic.h"

void tr_die(const char *fmt, ...)
{
	va_list ap;

	fputs("migr-traffic: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(TR_EXIT_ERROR);
}

/* A violation: one line naming endpoint, QP and what; the peer is told
 * (ABORT) so that it stops too and says why. */
void tr_fail(struct tr_ep *ep, const struct tr_qp *q, const char *fmt, ...)
{
	char line[600], qp[32] = "";
	struct {
		uint32_t magic, type, len;
	} h = { 0x6d696772u, MSG_ABORT, 0 };
	va_list ap;
	int len;

	if (q)
		snprintf(qp, sizeof(qp),
			 q->ud ? " UD QP 0x%x" : " QP %u (0x%x)",
			 q->ud ? q->qp->qp_num : q->idx, q->qp->qp_num);
	len = snprintf(line, sizeof(line), "%s%s: ", ep->name, qp);
	va_start(ap, fmt);
	vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	va_end(ap);
	fprintf(stderr, "migr-traffic: FAIL %s\n", line);
	if (ep->o->json) {
		printf("{\"result\":\"fail\",\"error\":\"");
		for (len = 0; line[len]; len++)
			printf(strchr("\"\\", line[len]) ? "\\%c" : "%c",
			       line[len]);
		printf("\"}\n");
	}
	if (ep->sock >= 0) {
		h.len = strlen(line);
		send(ep->sock, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT);
		send(ep->sock, line, h.len, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	exit(TR_EXIT_FAIL);
}

uint64_t tr_ops_done(const struct tr_ep *ep)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < ep->nall; i++)
		n += ep->qps[i].completed;
	return n;
}

static uint64_t msgs_recv(const struct tr_ep *ep)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < ep->nall; i++)
		n += ep->qps[i].msgs_recv;
	return n;
}

/* One line a test driver can follow while traffic runs. */
void tr_report(struct tr_ep *ep, double now)
{
	uint64_t ops = tr_ops_done(ep);
	double dt = now - ep->last_report_t;
	unsigned int i;

	printf("progress %s t=%.1f ops=%llu rate=%.0f/s recv=%llu", ep->name,
	       now - ep->t_start, (unsigned long long)ops,
	       dt > 0 ? (ops - ep->last_report_ops) / dt : 0.0,
	       (unsigned long long)msgs_recv(ep));
	for (i = 0; i < ep->nall; i++) {
		if (ep->qps[i].ud)
			printf(" ud=%llu ud_lost=%llu",
			       (unsigned long long)ep->qps[i].completed,
			       (unsigned long long)ep->qps[i].lost);
		else
			printf(" qp%u=%llu", i,
			       (unsigned long long)ep->qps[i].completed);
	}
	printf("%s\n", ep->stopping ? " draining" : "");
	fflush(stdout);
	ep->last_report_ops = ops;
	ep->last_report_t = now;
}

static void summary_text(const struct tr_ep *ep)
{
	double t = ep->t_end - ep->t_start;
	uint64_t ops = tr_ops_done(ep), per_op[OP_NUM] = {};
	unsigned int i, op;

	for (i = 0; i < ep->nall; i++)
		for (op = 0; op < OP_NUM; op++)
			per_op[op] += ep->qps[i].op_done[op];
	printf("migr-traffic: %s: %llu WRs on %u RC QP%s%s verified in %.2f s (%.0f WR/s):",
	       ep->name, (unsigned long long)ops, ep->nqps,
	       ep->nqps > 1 ? "s" : "", ep->o->ud ? " + UD" : "", t,
	       t > 0 ? ops / t : 0.0);
	for (op = 0; op < OP_NUM; op++)
		if (per_op[op])
			printf(" %s %llu", tr_op_name(op),
			       (unsigned long long)per_op[op]);
	printf("; %llu messages received and verified",
	       (unsigned long long)msgs_recv(ep));
	if (ep->o->ud)
		printf(" (UD: %llu of the peer's %llu lost)",
		       (unsigned long long)ep->qps[ep->nqps].lost,
		       (unsigned long long)ep->qps[ep->nqps].peer_msgs);
	if (ep->o->mode == MODE_EVENT)
		printf("; %llu completion events",
		       (unsigned long long)ep->events);
	printf("\n");
}

static void summary_json(const struct tr_ep *ep, bool last)
{
	double t = ep->t_end - ep->t_start;
	uint64_t ops = tr_ops_done(ep), per_op[OP_NUM] = {};
	unsigned int i, op;

	for (i = 0; i < ep->nall; i++)
		for (op = 0; op < OP_NUM; op++)
			per_op[op] += ep->qps[i].op_done[op];
	printf("{\"name\":\"%s\",\"elapsed_s\":%.3f,\"ops_completed\":%llu,\"rate\":%.1f,\"messages_received\":%llu,\"events\":%llu,\"ops\":{",
	       ep->name, t, (unsigned long long)ops, t > 0 ? ops / t : 0.0,
	       (unsigned long long)msgs_recv(ep),
	       (unsigned long long)ep->events);
	for (op = 0; op < OP_NUM; op++)
		printf("%s\"%s\":%llu", op ? "," : "", tr_op_name(op),
		       (unsigned long long)per_op[op]);
	printf("},\"qps\":[");
	for (i = 0; i < ep->nall; i++) {
		const struct tr_qp *q = &ep->qps[i];

		printf("%s{\"qp\":%u,\"type\":\"%s\",\"completed\":%llu,\"messages_sent\":%llu,\"messages_received\":%llu,\"messages_lost\":%llu}",
		       i ? "," : "", i, q->ud ? "ud" : "rc",
		       (unsigned long long)q->completed,
		       (unsigned long long)q->msgs_posted,
		       (unsigned long long)q->msgs_recv,
		       (unsigned long long)q->lost);
	}
	printf("]}%s", last ? "" : ",");
}

void tr_summary(struct tr_ep **eps, unsigned int n)
{
	const struct tr_opts *o = eps[0]->o;
	uint64_t lost = 0;
	unsigned int i;

	if (o->json) {
		printf("{\"result\":\"pass\",\"endpoints\":[");
		for (i = 0; i < n; i++)
			summary_json(eps[i], i + 1 == n);
		printf("]}\n");
		return;
	}
	for (i = 0; i < n; i++) {
		summary_text(eps[i]);
		if (o->ud)
			lost += eps[i]->qps[eps[i]->nqps].lost;
	}
	printf("migr-traffic: PASS: every WR completed once and in order, all data and atomic results verified, counts match%s\n",
	       lost ? " (UD losses within --ud-max-loss)" : "");
}
