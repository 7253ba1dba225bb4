// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The partner's sessions and their leases (partner_session.h): a moving
 * partner holds a QP of ours from its prepare to its resume or abort, or
 * until it goes quiet for longer than its lease; then the watchdog lets
 * the QP run on as it is.
 */
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "contexts.h"
#include "partner.h"
#include "partner_session.h"
#include "qp_phase.h"
#include "switch_objects.h"
#include "verbs.h"

/* Under migr_contexts_lock_within() */
static LIST_HEAD(sessions);
static bool watchdog_started;

struct migr_psess *migr_psess_find(struct migr_context *ctx, uint32_t qpn)
{
	struct migr_psess *s;

	list_for_each (&sessions, s, entry)
		if (s->ctx == ctx && s->qpn == qpn)
			return s;
	return NULL;
}

/*
 * What never ran goes again before what was held, once the old QP is gone
 * (replaced by reconnect); else it is still on the old QP and goes on
 * there.
 */
static unsigned int resume_replay(struct migr_psess *s, struct migr_qp *mqp)
{
	unsigned int n = 0, lost = 0;

	if (s->reconnected && mqp->replay.n) {
		n = migr_qp_replay(mqp, &lost);
		if (!lost)
			verbs_info(
				&s->ctx->vctx,
				"QP 0x%x: %u unfinished WRs posted again toward its moved peer\n",
				s->qpn, n);
	}
	mqp->replay.n = mqp->replay.consumers = mqp->replay.markers = 0;
	return n;
}

/* The SRQ a session held, if the application has not destroyed it */
static void release_srq(struct migr_psess *s)
{
	struct migr_srq *msrq;

	if (!s->srq_held)
		return;
	list_for_each (&s->ctx->rec.srqs, msrq, entry)
		if (msrq == s->srq_held) {
			migr_srq_partner_release(msrq);
			break;
		}
	s->srq_held = NULL;
}

/*
 * Let the QP's posts through again; the session is over. The WRs posted
 * again toward the moved peer, for the mover's report.
 */
unsigned int migr_psess_end(struct migr_psess *s, struct migr_qp *mqp)
{
	unsigned int replayed = 0;

	if (mqp) {
		if (s->suspended) {
			replayed = resume_replay(s, mqp);
			migr_qp_resume(mqp);
			release_srq(s);
			__atomic_sub_fetch(&s->ctx->partner.sessions, 1,
					   __ATOMIC_RELEASE);
			migr_qp_settle_cqs(mqp);
		}
		mqp->partner.session = false;
		migr_marker_ungrant(mqp);
	} else if (s->suspended) {
		release_srq(s);
		__atomic_sub_fetch(&s->ctx->partner.sessions, 1,
				   __ATOMIC_RELEASE);
	}
	list_del(&s->entry);
	free(s);
	return replayed;
}

static void *watchdog(void *arg)
{
	for (;;) {
		struct migr_psess *s, *next;

		usleep(200000);
		if (!migr_contexts_lock_within(1000))
			continue;
		list_for_each_safe (&sessions, s, next, entry) {
			struct migr_context *ctx = s->ctx, *c2;
			struct migr_qp *mqp;

			if (now_ms() < s->deadline)
				continue;
			pthread_rwlock_wrlock(&ctx->ctl_lock);
			mqp = migr_contexts_find_qp(s->qpn, &s->gid, &c2);
			if (c2 != ctx)
				mqp = NULL;
			verbs_err(
				&ctx->vctx,
				"partner QP 0x%x: its peer 0x%x went quiet mid-switch; resuming on the QP it has\n",
				s->qpn, s->peer_qpn);
			migr_psess_end(s, mqp);
			pthread_rwlock_unlock(&ctx->ctl_lock);
		}
		migr_contexts_unlock();
	}
	return arg;
}

static void start_watchdog(void)
{
	pthread_attr_t attr;
	pthread_t th;

	if (watchdog_started)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	watchdog_started = !pthread_create(&th, &attr, watchdog, NULL);
	pthread_attr_destroy(&attr);
}

struct migr_psess *migr_psess_open(struct migr_context *ctx,
				   struct migr_qp *mqp,
				   const union ibv_gid *gid)
{
	struct migr_psess *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = ctx;
	s->qpn = mqp->vqp.qp.qp_num;
	s->gid = *gid;
	list_add_tail(&sessions, &s->entry);
	mqp->partner.session = true;
	start_watchdog();
	return s;
}

void migr_psess_renew(struct migr_psess *s, unsigned int lease_ms)
{
	if (lease_ms)
		s->lease_ms = lease_ms;
	s->deadline = now_ms() + s->lease_ms;
}

void migr_partner_forget_ctx(struct migr_context *ctx)
{
	struct migr_psess *s, *next;

	list_for_each_safe (&sessions, s, next, entry)
		if (s->ctx == ctx) {
			list_del(&s->entry);
			free(s);
		}
}
