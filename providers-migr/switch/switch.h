/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A live switch: the whole RDMA state of a migr context moves to another
 * device while the application runs (see docs/switch.md, "The
 * phases"). Phases: suspend, drain, release, rebuild, replay.
 */
#ifndef MIGR_SWITCH_H
#define MIGR_SWITCH_H

#include <stdbool.h>

#include "migr.h"

/* Threads inside a post or poll leave it in microseconds */
#define QUIESCE_MS 2000

struct migr_switch_report {
	char from[IBV_SYSFS_NAME_MAX];
	char to[IBV_SYSFS_NAME_MAX];
	unsigned int contexts, pds, dms, mrs, mws, channels, cqs, srqs, qps,
		ahs;
	unsigned int partners; /* QPs whose partner is in another process */
	/* of them, partners whose new QP has the number of their old one */
	unsigned int partners_kept;
	/* rebuilt objects given the number they had (migr_rxe(7)), or not */
	unsigned int numbers_kept, numbers_translated;
	unsigned int numbers_claimed; /* held for it by migrd, taken over */
	unsigned int retries; /* tries a busy partner put off */
	unsigned int held_wrs; /* posted while suspended, replayed */
	unsigned int
		replayed_wrs; /* unfinished at the wait bound, posted again */
	/* the partners' unfinished WRs they posted again toward us */
	unsigned int partner_replayed_wrs;
	unsigned int reposted_recvs; /* posted before, unused, posted again */
	unsigned int flushed; /* WRs the released QPs flushed (unused RECVs) */
	unsigned int shadowed; /* completions taken off the old CQs */
	unsigned int lost; /* non-flush completions left in destroyed CQs */
	/* what the process held of the device between release and rebuild */
	int device_fds, device_maps;
	double ms_suspend, ms_drain, ms_release, ms_rebuild, ms_replay;
	double ms_partner; /* talking to partners (within the phases) */
	/* the longest a partner held its posts toward us: its blackout */
	double ms_partner_held;
	double ms_total;
	bool rolled_back;
	char error[256]; /* empty on success */
	/*
	 * A partner a rollback could not take along (its QP stays connected
	 * to our old one) or that did not resume: the first such, naming
	 * our QP, the partner's QP, host and pid and the step; else empty
	 */
	char partner_error[256];
};

/*
 * Move the n contexts in ctxs (all on one device, partners among them) to
 * the device named target (a real device, or its migr twin) together;
 * with target NULL, rebuild every object on the device they are on (new
 * physical numbers and keys, the same virtual ones). wait_ms bounds the
 * drain. Returns 0, or an errno with rep->error set; on
 * failure the contexts run on their original device.
 */
int migr_switch(struct migr_context **ctxs, unsigned int n, const char *target,
		unsigned int wait_ms, struct migr_switch_report *rep);

#endif /* MIGR_SWITCH_H */
