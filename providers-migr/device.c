// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The migr device and context: a twin of every real device (listed by the
 * libibverbs stacking support as migr_<lower>) whose context opens the lower
 * device and forwards every verb to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "datapath.h"
#include "migr.h"
#include "peer.h"
#include "verbs.h"

static struct verbs_device *
migr_alloc_stacked_device(struct verbs_device *lower)
{
	struct migr_device *mdev;

	/* Never stack on a stacked device */
	if (lower->lower)
		return NULL;

	mdev = calloc(1, sizeof(*mdev));
	if (!mdev)
		return NULL;
	return &mdev->vdev;
}

static void migr_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct migr_device, vdev));
}

static int migr_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	struct ibv_context *lower;
	int ret;

	ctl_enter(context);
	lower = to_mcontext(context)->lower;
	/* The caller's attr_size is passed on: older applications differ */
	ret = verbs_get_ctx(lower)->query_device_ex(lower, input, attr,
						    attr_size);
	ctl_leave(context);
	return ret;
}

static int migr_query_port(struct ibv_context *context, uint8_t port_num,
			   struct ibv_port_attr *port_attr)
{
	int ret;

	ctl_enter(context);
	ret = ibv_query_port(to_mcontext(context)->lower, port_num, port_attr);
	ctl_leave(context);
	return ret;
}

static int migr_query_rt_values(struct ibv_context *context,
				struct ibv_values_ex *values)
{
	return ibv_query_rt_values_ex(to_mcontext(context)->lower, values);
}

/* The agent is installed once, by the first context opened */
static pthread_once_t agent_once = PTHREAD_ONCE_INIT;

static void migr_free_context(struct ibv_context *context)
{
	struct migr_context *ctx = to_mcontext(context);

	if (migr_agent)
		migr_agent->closing(ctx);
	ibv_close_device(ctx->lower);
	migr_xlate_destroy(&ctx->xlate);
	migr_xlate_destroy(&ctx->remote);
	migr_peers_free(ctx);
	migr_replay_free(ctx);
	free(ctx->ud_moves);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}
static const struct verbs_context_ops migr_ctx_ops = {
	.advise_mr = migr_advise_mr,
	.alloc_dm = migr_alloc_dm,
	.alloc_mw = migr_alloc_mw,
	.alloc_null_mr = migr_alloc_null_mr,
	.alloc_parent_domain = migr_alloc_parent_domain,
	.alloc_pd = migr_alloc_pd,
	.alloc_td = migr_alloc_td,
	.attach_counters_point_flow = migr_attach_counters_point_flow,
	.attach_mcast = migr_attach_mcast,
	.bind_mw = migr_bind_mw,
	.close_xrcd = migr_close_xrcd,
	.create_ah = migr_create_ah,
	.create_comp_channel = migr_create_comp_channel,
	.create_counters = migr_create_counters,
	.create_cq = migr_create_cq,
	.create_cq_ex = migr_create_cq_ex,
	.create_flow = migr_create_flow,
	.create_flow_action_esp = migr_create_flow_action_esp,
	.create_qp = migr_create_qp,
	.create_qp_ex = migr_create_qp_ex,
	.create_rwq_ind_table = migr_create_rwq_ind_table,
	.create_srq = migr_create_srq,
	.create_srq_ex = migr_create_srq_ex,
	.create_wq = migr_create_wq,
	.dealloc_mw = migr_dealloc_mw,
	.dealloc_pd = migr_dealloc_pd,
	.dealloc_td = migr_dealloc_td,
	.dereg_mr = migr_dereg_mr,
	.destroy_ah = migr_destroy_ah,
	.destroy_comp_channel = migr_destroy_comp_channel,
	.destroy_counters = migr_destroy_counters,
	.destroy_cq = migr_destroy_cq,
	.destroy_flow = migr_destroy_flow,
	.destroy_flow_action = migr_destroy_flow_action,
	.destroy_qp = migr_destroy_qp,
	.destroy_rwq_ind_table = migr_destroy_rwq_ind_table,
	.destroy_srq = migr_destroy_srq,
	.destroy_wq = migr_destroy_wq,
	.detach_mcast = migr_detach_mcast,
	.free_context = migr_free_context,
	.free_dm = migr_free_dm,
	.get_async_event = migr_get_async_event,
	.get_cq_event = migr_get_cq_event,
	.get_srq_num = migr_get_srq_num,
	.import_dm = migr_import_dm,
	.import_mr = migr_import_mr,
	.import_pd = migr_import_pd,
	.modify_cq = migr_modify_cq,
	.modify_flow_action_esp = migr_modify_flow_action_esp,
	.modify_qp = migr_modify_qp,
	.modify_qp_rate_limit = migr_modify_qp_rate_limit,
	.modify_srq = migr_modify_srq,
	.modify_wq = migr_modify_wq,
	.open_qp = migr_open_qp,
	.open_xrcd = migr_open_xrcd,
	.poll_cq = migr_poll_cq,
	.post_recv = migr_post_recv,
	.post_send = migr_post_send,
	.post_srq_ops = migr_post_srq_ops,
	.post_srq_recv = migr_post_srq_recv,
	.query_device_ex = migr_query_device_ex,
	.query_ece = migr_query_ece,
	.query_port = migr_query_port,
	.query_qp = migr_query_qp,
	.query_qp_data_in_order = migr_query_qp_data_in_order,
	.query_rt_values = migr_query_rt_values,
	.query_srq = migr_query_srq,
	.read_counters = migr_read_counters,
	.reg_dm_mr = migr_reg_dm_mr,
	.reg_dmabuf_mr = migr_reg_dmabuf_mr,
	.reg_mr = migr_reg_mr,
	.req_notify_cq = migr_req_notify_cq,
	.rereg_mr = migr_rereg_mr,
	.resize_cq = migr_resize_cq,
	.set_ece = migr_set_ece,
	.unimport_dm = migr_unimport_dm,
	.unimport_mr = migr_unimport_mr,
	.unimport_pd = migr_unimport_pd,
};

/* A new context's own state over its lower context; 0 or -1 */
static int init_context(struct migr_context *ctx, struct ibv_context *lower)
{
	ctx->lower = lower;
	migr_quirks_init(ctx);
	migr_xlate_init(&ctx->xlate);
	migr_xlate_init(&ctx->remote);
	migr_peers_init(ctx);
	migr_record_init(&ctx->rec);
	pthread_rwlock_init(&ctx->ctl_lock, NULL);
	pthread_rwlock_init(&ctx->ev_lock, NULL);
	pthread_mutex_init(&ctx->ud_src_lock, NULL);
	ctx->lower_async_fd = lower->async_fd;
	ctx->vctx.context.num_comp_vectors = lower->num_comp_vectors;
	ctx->vctx.context.async_fd = migr_event_fd_init(lower->async_fd);
	if (ctx->vctx.context.async_fd < 0)
		return -1;
	return migr_replay_init(ctx) ? -1 : 0;
}

static struct verbs_context *migr_alloc_context(struct ibv_device *device,
						int cmd_fd, void *private_data)
{
	struct verbs_device *vdev = verbs_get_device(device);
	struct migr_context *ctx;
	struct ibv_context *lower;
	int fd;

	/* The twin has no device file of its own (see the stacking patch) */
	if (cmd_fd >= 0)
		close(cmd_fd);

	lower = verbs_open_device(&vdev->lower->device, private_data);
	if (!lower)
		return NULL;
	vdev->core_support = vdev->lower->core_support;

	/*
	 * Library helpers that talk to the kernel directly on our context
	 * (GID and pkey queries) use a duplicate of the lower command fd.
	 */
	fd = fcntl(lower->cmd_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		goto err_lower;

	/* The kernel checks the driver id of every ioctl on that fd */
	ctx = verbs_init_and_alloc_context(device, fd, ctx, vctx,
					   vdev->sysfs->driver_id);
	if (!ctx)
		goto err_lower;

	if (init_context(ctx, lower))
		goto err_ctx;

	verbs_set_ops(&ctx->vctx, &migr_ctx_ops);
	pthread_once(&agent_once, migr_agent_install);
	if (migr_agent)
		migr_agent->opened(ctx);
	verbs_info(&ctx->vctx, "opened over %s\n", lower->device->name);
	return &ctx->vctx;

err_ctx:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
err_lower:
	ibv_close_device(lower);
	return NULL;
}

static const struct verbs_device_ops migr_dev_ops = {
	.name = "migr",
	.match_min_abi_version = 0,
	.match_max_abi_version = INT_MAX,
	.alloc_stacked_device = migr_alloc_stacked_device,
	.alloc_context = migr_alloc_context,
	.uninit_device = migr_uninit_device,
};
PROVIDER_DRIVER(migr, migr_dev_ops);
