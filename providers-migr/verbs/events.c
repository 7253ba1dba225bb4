// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion channels and the async event fd. The fd the application sees
 * is an epoll instance holding the lower fd: it polls and selects like the
 * real one, and the lower fd inside can be replaced when the real objects
 * are rebuilt, without touching the application's own epoll registrations.
 * Events read from the lower fd are handed out with the migr objects.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "migr.h"
#include "verbs.h"

/* Put a lower fd (made non-blocking: we wait on our fd) in our epoll set */
int migr_event_fd_add(int epfd, int lower_fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lower_fd };
	int flags;

	flags = fcntl(lower_fd, F_GETFL);
	if (flags < 0 || fcntl(lower_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, lower_fd, &ev);
}

void migr_event_fd_del(int epfd, int lower_fd)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, lower_fd, NULL);
}

int migr_event_fd_init(int lower_fd)
{
	int epfd;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -1;
	if (migr_event_fd_add(epfd, lower_fd)) {
		close(epfd);
		return -1;
	}
	return epfd;
}

/*
 * Read one event through read_lower(), honouring O_NONBLOCK as the
 * application set it on its fd; a blocking read waits on that fd.
 */
int migr_event_read(int app_fd, int (*read_lower)(void *arg), void *arg)
{
	struct epoll_event ev;
	int flags;

	flags = fcntl(app_fd, F_GETFL);
	if (flags < 0)
		return -1;

	for (;;) {
		if (!read_lower(arg))
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (flags & O_NONBLOCK) {
			errno = EAGAIN;
			return -1;
		}
		if (epoll_wait(app_fd, &ev, 1, -1) < 0 && errno != EINTR)
			return -1;
	}
}

void migr_wait_acks(pthread_mutex_t *mutex, pthread_cond_t *cond,
		    const uint32_t *completed, uint32_t delivered)
{
	pthread_mutex_lock(mutex);
	while (*completed != delivered)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

struct ibv_comp_channel *migr_create_comp_channel(struct ibv_context *context)
{
	struct migr_comp_channel *mch;

	mch = calloc(1, sizeof(*mch));
	if (!mch)
		return migr_fail(ENOMEM);

	ctl_enter(context);
	mch->lower = ibv_create_comp_channel(to_mcontext(context)->lower);
	if (!mch->lower)
		goto err;

	mch->channel.fd = migr_event_fd_init(mch->lower->fd);
	if (mch->channel.fd < 0)
		goto err_lower;
	mch->synth_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mch->synth_fd < 0 ||
	    migr_event_fd_add(mch->channel.fd, mch->synth_fd))
		goto err_fd;
	pthread_mutex_init(&mch->synth_lock, NULL);
	mch->channel.context = context;
	mch->channel.refcnt = 0;
	migr_record_add(to_mcontext(context),
			&to_mcontext(context)->rec.channels, &mch->entry);
	ctl_leave(context);
	return &mch->channel;

err_fd:
	if (mch->synth_fd >= 0)
		close(mch->synth_fd);
	close(mch->channel.fd);
err_lower:
	ibv_destroy_comp_channel(mch->lower);
err:
	ctl_leave(context);
	free(mch);
	return NULL;
}

int migr_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct migr_comp_channel *mch = to_mcomp_channel(channel);
	struct ibv_context *context = channel->context;
	int ret;

	ctl_enter(context);
	pthread_mutex_lock(&context->mutex);
	if (channel->refcnt) {
		ret = EBUSY;
		goto out;
	}
	ret = ibv_destroy_comp_channel(mch->lower);
	if (ret)
		goto out;
	migr_record_del(to_mcontext(context), &mch->entry);
	close(mch->synth_fd);
	close(channel->fd);
	free(mch->synth);
	free(mch);
out:
	pthread_mutex_unlock(&context->mutex);
	ctl_leave(context);
	return ret;
}

/* An event a switch owes, oldest first; NULL when none is owed */
static struct migr_cq *take_synth(struct migr_comp_channel *mch)
{
	struct migr_cq *mcq = NULL;
	uint64_t cnt;

	pthread_mutex_lock(&mch->synth_lock);
	if (mch->nsynth) {
		mcq = mch->synth[0];
		memmove(mch->synth, mch->synth + 1,
			--mch->nsynth * sizeof(*mch->synth));
	}
	/* keep the eventfd readable exactly while events are owed */
	if (!mch->nsynth && read(mch->synth_fd, &cnt, sizeof(cnt)) < 0)
		cnt = 0;
	pthread_mutex_unlock(&mch->synth_lock);
	return mcq;
}

struct cq_event_read {
	struct migr_comp_channel *mch;
	struct migr_cq *mcq;
};

/*
 * Owed events first, then the lower channel's. The lower channel is looked
 * up each time under the context's lock: a switch may replace it while the
 * application waits on our fd.
 */
static int read_cq_event(void *arg)
{
	struct cq_event_read *r = arg;
	struct ibv_context *context = r->mch->channel.context;
	struct ibv_cq *lcq;
	void *lctx;
	int ret;

	r->mcq = take_synth(r->mch);
	if (r->mcq)
		return 0;
	pthread_rwlock_rdlock(&to_mcontext(context)->ev_lock);
	ret = ibv_get_cq_event(r->mch->lower, &lcq, &lctx);
	if (!ret) {
		/* The lower CQ was created with our CQ as its cq_context */
		r->mcq = lctx;
		ibv_ack_cq_events(lcq, 1);
	}
	pthread_rwlock_unlock(&to_mcontext(context)->ev_lock);
	return ret;
}

int migr_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		      void **cq_context)
{
	struct cq_event_read r = { .mch = to_mcomp_channel(channel) };
	struct migr_cq *mcq;

	if (migr_event_read(channel->fd, read_cq_event, &r))
		return -1;
	mcq = r.mcq;
	mcq->armed = false;

	pthread_mutex_lock(&mcq->vcq.cq.mutex);
	mcq->comp_events++;
	pthread_mutex_unlock(&mcq->vcq.cq.mutex);

	*cq = &mcq->vcq.cq;
	*cq_context = mcq->vcq.cq.cq_context;
	return 0;
}

/* Count an event handed out on obj, so its destroy waits for the ack */
static void count_event(pthread_mutex_t *mutex, uint32_t *delivered)
{
	pthread_mutex_lock(mutex);
	(*delivered)++;
	pthread_mutex_unlock(mutex);
}

/* The application's event for a lower one: same type, our objects */
static void to_app_event(const struct ibv_async_event *lev,
			 struct ibv_async_event *event)
{
	event->event_type = lev->event_type;
	switch (lev->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct migr_cq *mcq = lev->element.cq->cq_context;

		count_event(&mcq->vcq.cq.mutex, &mcq->async_events);
		event->element.cq = &mcq->vcq.cq;
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct migr_qp *mqp = lev->element.qp->qp_context;

		count_event(&mqp->vqp.qp.mutex, &mqp->async_events);
		event->element.qp = &mqp->vqp.qp;
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct migr_srq *msrq = lev->element.srq->srq_context;

		if (lev->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			migr_srq_limit_reached(msrq);
		count_event(&msrq->vsrq.srq.mutex, &msrq->async_events);
		event->element.srq = &msrq->vsrq.srq;
		break;
	}
	case IBV_EVENT_WQ_FATAL: {
		struct migr_wq *mwq = lev->element.wq->wq_context;

		count_event(&mwq->wq.mutex, &mwq->async_events);
		event->element.wq = &mwq->wq;
		break;
	}
	default:
		event->element.port_num = lev->element.port_num;
		break;
	}
}

struct async_event_read {
	struct ibv_context *context;
	struct ibv_async_event *event;
};

/*
 * Read, convert and ack a lower event while no switch can destroy the
 * lower objects (a lower destroy would wait for that ack).
 */
static int read_async_event(void *arg)
{
	struct async_event_read *r = arg;
	struct migr_context *ctx = to_mcontext(r->context);
	struct ibv_async_event lev;
	int ret;

	pthread_rwlock_rdlock(&ctx->ev_lock);
	ret = ibv_get_async_event(ctx->lower, &lev);
	if (!ret) {
		to_app_event(&lev, r->event);
		/* Our objects count the application's acks; the lower is done */
		ibv_ack_async_event(&lev);
	}
	pthread_rwlock_unlock(&ctx->ev_lock);
	return ret;
}

int migr_get_async_event(struct ibv_context *context,
			 struct ibv_async_event *event)
{
	struct async_event_read r = { .context = context, .event = event };

	return migr_event_read(context->async_fd, read_async_event, &r) ? -1 :
									  0;
}
