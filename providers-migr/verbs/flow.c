// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Steering flows, flow actions and counters. Each call goes to the lower
 * context through the public verbs, so a lower provider lacking the verb
 * fails it with its own error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "migr.h"
#include "verbs.h"

/* Applications pack specs back to back: access them without alignment */
typedef __typeof__(((struct ibv_flow_spec *)NULL)->hdr) spec_hdr_t;

static spec_hdr_t spec_hdr(const void *spec)
{
	spec_hdr_t hdr;

	memcpy(&hdr, spec, sizeof(hdr));
	return hdr;
}

/* Where a spec keeps a pointer to a migr object, or 0 */
static size_t spec_object_offset(const spec_hdr_t *hdr)
{
	switch (hdr->type) {
	case IBV_FLOW_SPEC_ACTION_HANDLE:
		if (hdr->size < sizeof(struct ibv_flow_spec_action_handle))
			return 0;
		return offsetof(struct ibv_flow_spec_action_handle, action);
	case IBV_FLOW_SPEC_ACTION_COUNT:
		if (hdr->size < sizeof(struct ibv_flow_spec_counter_action))
			return 0;
		return offsetof(struct ibv_flow_spec_counter_action, counters);
	default:
		return 0;
	}
}

static void *lower_spec_object(const spec_hdr_t *hdr, void *obj)
{
	if (!obj)
		return NULL;
	if (hdr->type == IBV_FLOW_SPEC_ACTION_HANDLE)
		return to_mflow_action(obj)->lower;
	return to_mcounters(obj)->lower;
}

/*
 * Specs that point at a flow action or at counters must point at the lower
 * ones: providers reach their private object through that pointer. Returns
 * the caller's attr when nothing needs it, else a rewritten copy.
 */
static struct ibv_flow_attr *lower_flow_attr(struct ibv_flow_attr *attr)
{
	struct ibv_flow_attr *lattr;
	bool rewrite = false;
	spec_hdr_t hdr;
	size_t len;
	void *p;
	int i;

	p = attr + 1;
	for (i = 0; i < attr->num_of_specs; i++) {
		hdr = spec_hdr(p);
		rewrite |= spec_object_offset(&hdr) != 0;
		p += hdr.size;
	}
	if (!rewrite)
		return attr;

	len = p - (void *)attr;
	lattr = malloc(len);
	if (!lattr)
		return migr_fail(ENOMEM);
	memcpy(lattr, attr, len);

	p = lattr + 1;
	for (i = 0; i < lattr->num_of_specs; i++) {
		size_t off;
		void *obj;

		hdr = spec_hdr(p);
		off = spec_object_offset(&hdr);
		if (off) {
			memcpy(&obj, p + off, sizeof(obj));
			obj = lower_spec_object(&hdr, obj);
			memcpy(p + off, &obj, sizeof(obj));
		}
		p += hdr.size;
	}
	return lattr;
}

struct ibv_flow *migr_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *flow_attr)
{
	struct ibv_flow_attr *lattr;
	struct migr_flow *mflow;

	mflow = calloc(1, sizeof(*mflow));
	if (!mflow)
		return migr_fail(ENOMEM);
	lattr = lower_flow_attr(flow_attr);
	if (!lattr) {
		free(mflow);
		return NULL;
	}

	mflow->lower = ibv_create_flow(lower_qp(qp), lattr);
	if (lattr != flow_attr)
		free(lattr);
	if (!mflow->lower) {
		free(mflow);
		return NULL;
	}

	mflow->flow.comp_mask = mflow->lower->comp_mask;
	mflow->flow.context = qp->context;
	mflow->flow.handle = mflow->lower->handle;
	migr_record_unsupported(to_mcontext(qp->context), MIGR_UNSUP_FLOW, 1);
	return &mflow->flow;
}

int migr_destroy_flow(struct ibv_flow *flow)
{
	struct migr_flow *mflow = to_mflow(flow);
	int ret;

	ret = ibv_destroy_flow(mflow->lower);
	if (ret)
		return ret;
	migr_record_unsupported(to_mcontext(flow->context), MIGR_UNSUP_FLOW,
				-1);
	free(mflow);
	return 0;
}

/* Ours carries the lower's type and kernel handle, like a provider's own */
static struct ibv_flow_action *wrap_flow_action(struct migr_flow_action *mfa,
						struct ibv_context *context)
{
	struct verbs_flow_action *lv =
		container_of(mfa->lower, struct verbs_flow_action, action);

	mfa->vaction.action.context = context;
	mfa->vaction.type = lv->type;
	mfa->vaction.handle = lv->handle;
	migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_FLOW, 1);
	return &mfa->vaction.action;
}

struct ibv_flow_action *
migr_create_flow_action_esp(struct ibv_context *context,
			    struct ibv_flow_action_esp_attr *attr)
{
	struct migr_flow_action *mfa;

	mfa = calloc(1, sizeof(*mfa));
	if (!mfa)
		return migr_fail(ENOMEM);
	mfa->lower =
		ibv_create_flow_action_esp(to_mcontext(context)->lower, attr);
	if (!mfa->lower) {
		free(mfa);
		return NULL;
	}
	return wrap_flow_action(mfa, context);
}

int migr_modify_flow_action_esp(struct ibv_flow_action *action,
				struct ibv_flow_action_esp_attr *attr)
{
	return ibv_modify_flow_action_esp(to_mflow_action(action)->lower, attr);
}

int migr_destroy_flow_action(struct ibv_flow_action *action)
{
	struct migr_flow_action *mfa = to_mflow_action(action);
	int ret;

	ret = ibv_destroy_flow_action(mfa->lower);
	if (ret)
		return ret;
	migr_record_unsupported(to_mcontext(action->context), MIGR_UNSUP_FLOW,
				-1);
	free(mfa);
	return 0;
}

struct ibv_counters *
migr_create_counters(struct ibv_context *context,
		     struct ibv_counters_init_attr *init_attr)
{
	struct migr_counters *mcnt;

	mcnt = calloc(1, sizeof(*mcnt));
	if (!mcnt)
		return migr_fail(ENOMEM);
	mcnt->lower =
		ibv_create_counters(to_mcontext(context)->lower, init_attr);
	if (!mcnt->lower) {
		free(mcnt);
		return NULL;
	}
	mcnt->vcounters.counters.context = context;
	mcnt->vcounters.handle =
		container_of(mcnt->lower, struct verbs_counters, counters)
			->handle;
	migr_record_unsupported(to_mcontext(context), MIGR_UNSUP_COUNTERS, 1);
	return &mcnt->vcounters.counters;
}

int migr_destroy_counters(struct ibv_counters *counters)
{
	struct migr_counters *mcnt = to_mcounters(counters);
	int ret;

	ret = ibv_destroy_counters(mcnt->lower);
	if (ret)
		return ret;
	migr_record_unsupported(to_mcontext(counters->context),
				MIGR_UNSUP_COUNTERS, -1);
	free(mcnt);
	return 0;
}

int migr_attach_counters_point_flow(struct ibv_counters *counters,
				    struct ibv_counter_attach_attr *attr,
				    struct ibv_flow *flow)
{
	struct ibv_flow *lflow = flow ? to_mflow(flow)->lower : NULL;

	return ibv_attach_counters_point_flow(to_mcounters(counters)->lower,
					      attr, lflow);
}

int migr_read_counters(struct ibv_counters *counters, uint64_t *counters_value,
		       uint32_t ncounters, uint32_t flags)
{
	return ibv_read_counters(to_mcounters(counters)->lower, counters_value,
				 ncounters, flags);
}
