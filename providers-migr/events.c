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
#include <sys/epoll.h>
#include <unistd.h>

#include "migr.h"

int migr_event_fd_init(int lower_fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int flags, epfd;

	/* Reads on the lower fd never block: waiting is done on our fd */
	flags = fcntl(lower_fd, F_GETFL);
	if (flags < 0 || fcntl(lower_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -1;
	ev.data.fd = lower_fd;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, lower_fd, &ev)) {
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

	mch->lower = ibv_create_comp_channel(ctx_of(context)->lower);
	if (!mch->lower)
		goto err;

	mch->channel.fd = migr_event_fd_init(mch->lower->fd);
	if (mch->channel.fd < 0)
		goto err_lower;
	mch->channel.context = context;
	mch->channel.refcnt = 0;
	return &mch->channel;

err_lower:
	ibv_destroy_comp_channel(mch->lower);
err:
	free(mch);
	return NULL;
}

int migr_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct migr_comp_channel *mch = to_mcomp_channel(channel);
	struct ibv_context *context = channel->context;
	int ret;

	pthread_mutex_lock(&context->mutex);
	if (channel->refcnt) {
		ret = EBUSY;
		goto out;
	}
	ret = ibv_destroy_comp_channel(mch->lower);
	if (ret)
		goto out;
	close(channel->fd);
	free(mch);
out:
	pthread_mutex_unlock(&context->mutex);
	return ret;
}

struct cq_event_read {
	struct ibv_comp_channel *lower;
	struct ibv_cq *lcq;
	void *lctx;
};

static int read_cq_event(void *arg)
{
	struct cq_event_read *r = arg;

	return ibv_get_cq_event(r->lower, &r->lcq, &r->lctx);
}

int migr_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		      void **cq_context)
{
	struct cq_event_read r = { .lower = lower_channel(channel) };
	struct migr_cq *mcq;

	if (migr_event_read(channel->fd, read_cq_event, &r))
		return -1;

	/* The lower CQ was created with our CQ as its cq_context */
	mcq = r.lctx;
	ibv_ack_cq_events(r.lcq, 1);

	pthread_mutex_lock(&mcq->vcq.cq.mutex);
	mcq->comp_events++;
	pthread_mutex_unlock(&mcq->vcq.cq.mutex);

	*cq = &mcq->vcq.cq;
	*cq_context = mcq->vcq.cq.cq_context;
	return 0;
}

struct async_event_read {
	struct ibv_context *lower;
	struct ibv_async_event ev;
};

static int read_async_event(void *arg)
{
	struct async_event_read *r = arg;

	return ibv_get_async_event(r->lower, &r->ev);
}

/* Count an event handed out on obj, so its destroy waits for the ack */
static void count_event(pthread_mutex_t *mutex, uint32_t *delivered)
{
	pthread_mutex_lock(mutex);
	(*delivered)++;
	pthread_mutex_unlock(mutex);
}

int migr_get_async_event(struct ibv_context *context,
			 struct ibv_async_event *event)
{
	struct async_event_read r = { .lower = ctx_of(context)->lower };

	if (migr_event_read(context->async_fd, read_async_event, &r))
		return -1;

	event->event_type = r.ev.event_type;
	switch (r.ev.event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct migr_cq *mcq = r.ev.element.cq->cq_context;

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
		struct migr_qp *mqp = r.ev.element.qp->qp_context;

		count_event(&mqp->vqp.qp.mutex, &mqp->async_events);
		event->element.qp = &mqp->vqp.qp;
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct migr_srq *msrq = r.ev.element.srq->srq_context;

		count_event(&msrq->vsrq.srq.mutex, &msrq->async_events);
		event->element.srq = &msrq->vsrq.srq;
		break;
	}
	case IBV_EVENT_WQ_FATAL: {
		struct migr_wq *mwq = r.ev.element.wq->wq_context;

		count_event(&mwq->wq.mutex, &mwq->async_events);
		event->element.wq = &mwq->wq;
		break;
	}
	default:
		event->element.port_num = r.ev.element.port_num;
		break;
	}

	/* Our objects count the application's acks; the lower is done */
	ibv_ack_async_event(&r.ev);
	return 0;
}
