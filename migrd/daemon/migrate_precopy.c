// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A migration's pre-copy (migrate_src.h): its numbers held there, then
 * criu pre-dump rounds sent while the tree runs; criu dump itself, which
 * the final dump shares
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "criu_run.h"
#include "images.h"
#include "migrate_src.h"
#include "sockio.h"

/*
 * The numbers collected, held on the destination for the restore: where
 * it cannot (no migr rdma_rxe there), it says why and the migration goes
 * on, its objects then asking for their numbers at the restore as ever
 */
void mig_hold_numbers(struct mig *m)
{
	struct req q = { .op = REQ_MIG_HOLD };
	char why[300] = "", saved[sizeof(m->err)];
	size_t i = 0, w, k, len, all = 0;
	json_t *j;

	for (w = 0; w < REQ_HOLD_KINDS; w++)
		all += m->nhold[w];
	if (!all)
		return;
	/* not the migration's error: it goes on */
	memcpy(saved, m->err, sizeof(saved));
	for (w = 0; w < REQ_HOLD_KINDS && !why[0]; w++)
		for (i = 0; i < m->nhold[w] && !why[0];) {
			snprintf(q.name, sizeof(q.name), "%s",
				 req_hold_names[w]);
			for (len = k = 0; i < m->nhold[w] && k < REQ_HOLD_MAX;
			     i++, k++)
				len += snprintf(q.line + len,
						sizeof(q.line) - len, "%s%x",
						len ? "," : "", m->hold[w][i]);
			j = mig_ask(m, &q, 10000);
			if (!j) {
				snprintf(why, sizeof(why), "%.290s", m->err);
				break;
			}
			m->numbers_held +=
				migr_json_int(j, "held", 0, UINT32_MAX, 0);
			/* the destination cannot hold them: it says why */
			if (!migr_json_text(j, "why", why, sizeof(why)))
				why[0] = 0;
			json_decref(j);
		}
	memcpy(m->err, saved, sizeof(saved));
	mig_progress(
		m, "hold",
		"%s holds %u of %zu QP numbers, MR and window keys for the restore%s%s",
		m->r->host, m->numbers_held, all, why[0] ? ": " : "", why);
}

/* criu dump or pre-dump of the tree into <dir>/<sub>, after <prev> */
int mig_dump(struct mig *m, const char *sub, const char *prev, bool final)
{
	char imgs[600], parent[80], pid[16], ext[64];
	const char *args[28];
	int n = 0;

	if (img_path(m->id, sub, true, imgs, sizeof(imgs), m->err,
		     sizeof(m->err)))
		return -1;
	snprintf(pid, sizeof(pid), "%d", m->r->pid);
	args[n++] = final ? "dump" : "pre-dump";
	args[n++] = "-t";
	args[n++] = pid;
	args[n++] = "-D";
	args[n++] = imgs;
	args[n++] = "-L";
	args[n++] = migrd.conf.criu_plugins;
	args[n++] = "--track-mem";
	if (prev) {
		snprintf(parent, sizeof(parent), "../%s", prev);
		args[n++] = "--prev-images-dir";
		args[n++] = parent;
	}
	if (final)
		args[n++] = "--leave-stopped";
	if (m->ns.own_netns) {
		/*
		 * The namespace stays here (its interface down, see
		 * lock_net()): CRIU's network lock (iptables, nftables) is
		 * not needed, nor installed
		 */
		snprintf(ext, sizeof(ext), "net[%lu]:%s", m->netns_ino,
			 NETNS_KEY);
		args[n++] = "--external";
		args[n++] = ext;
		args[n++] = "--tcp-established";
		args[n++] = "--network-lock";
		args[n++] = "skip";
	}
	args[n++] = "-o";
	args[n++] = "dump.log";
	args[n++] = "-v4";
	args[n] = NULL;
	return criu_run(args, imgs, "dump.log", MIG_DUMP_MS, m->err,
			sizeof(m->err));
}

int mig_send_dir(struct mig *m, const char *sub, uint64_t *sent, double *ms)
{
	long long t0 = io_now_ms();

	if (!mig_conn(m))
		return -1;
	if (img_send(m->pc, m->id, sub, sent, m->err, sizeof(m->err)))
		return -1;
	*ms = io_now_ms() - t0;
	return 0;
}

uint64_t mig_pages_of(const struct mig *m, const char *sub)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", m->dir, sub);
	return img_pages_bytes(path);
}

/* Pre-copy: rounds until the dirty set stops shrinking, or r->count */
int mig_precopy(struct mig *m)
{
	long long t0 = io_now_ms();
	char sub[16], prev[16];
	unsigned int k;

	for (k = 0; k < m->r->count; k++) {
		struct round *rd = &m->rounds[k];
		long long t = io_now_ms();

		snprintf(sub, sizeof(sub), "pre-%u", k + 1);
		if (mig_dump(m, sub, k ? prev : NULL, false))
			return -1;
		rd->ms_dump = io_now_ms() - t;
		rd->pages = mig_pages_of(m, sub);
		if (mig_send_dir(m, sub, &rd->sent, &rd->ms_send))
			return -1;
		m->nrounds = k + 1;
		mig_progress(
			m, "pre-copy",
			"pre-copy round %u: %.1f MiB of pages dumped in %.0f ms, sent in %.0f ms (%.1f MiB/s)",
			k + 1, rd->pages / 1048576.0, rd->ms_dump, rd->ms_send,
			mig_mib_s(rd->sent, rd->ms_send));
		snprintf(prev, sizeof(prev), "%s", sub);
		/* Converged: an eighth of the first round, or no smaller */
		if (k && (rd->pages * 8 <= m->rounds[0].pages ||
			  rd->pages >= m->rounds[k - 1].pages))
			break;
	}
	m->ms_precopy = io_now_ms() - t0;
	return 0;
}
