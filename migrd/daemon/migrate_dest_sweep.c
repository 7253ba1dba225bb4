// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The destination of a migration (migrate_dest_table.h): what outlives migrd,
 * the mark of a commit, and at start the sweep of a copy an earlier
 * migrd restored and never saw committed (one that had resumed is taken
 * back: dest_take_back())
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "criu_run.h"
#include "images.h"
#include "log.h"
#include "migrate.h"
#include "migrate_dest_sweep.h"
#include "registry.h"

/*
 * A commit outlives this migrd: a source that asks again, of a migrd
 * started since, must not hear "none" and resume its own copy. A log, so
 * it stays when the images go (img_remove()).
 */
#define COMMITTED_MARK "committed.log"

void dest_mark_committed(const struct dest_mig *m)
{
	char dir[512], path[600], err[256];
	FILE *f;

	if (img_path(m->id, NULL, false, dir, sizeof(dir), err, sizeof(err)))
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, COMMITTED_MARK);
	f = fopen(path, "we");
	if (!f || fprintf(f, "committed: pid %d runs here\n", m->pid) < 0 ||
	    fclose(f))
		log_warn("migration %s: cannot write %s", m->id, path);
}

bool dest_was_committed(const char *id)
{
	char dir[512], path[600], err[256];

	if (img_path(id, NULL, false, dir, sizeof(dir), err, sizeof(err)))
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, COMMITTED_MARK);
	return !access(path, F_OK);
}

bool migrate_dest_sweep(const char *id)
{
	char dir[512], path[600], err[256],
		netns[sizeof(NETNS_PREFIX) + REQ_MIG_ID_LEN + 1];
	int pid = 0, killed;
	unsigned long long t0, start, hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	int got;

	if (img_path(id, NULL, false, dir, sizeof(dir), err, sizeof(err)) ||
	    !img_restoring(dir, &t0) || dest_was_committed(id))
		return false; /* another boot's (long gone), or committed */
	if (dest_take_back(id, dir))
		return true;
	/* Its CRIU first, if still there: nothing it restores after stays */
	if (criu_kill_in(dir) > 0)
		log_warn(
			"migration %s: the restore an earlier migrd left running is killed",
			id);
	/* The mark comes before the namespace: whatever it holds goes */
	snprintf(netns, sizeof(netns), "%s%s", NETNS_PREFIX, id);
	killed = netns_sweep(netns);
	if (killed >= 0)
		log_warn(
			"migration %s: network namespace %s, made for a restore never committed, is removed (%d processes in it killed)",
			id, netns, killed);
	snprintf(path, sizeof(path), "%s/restored.pid", dir);
	f = fopen(path, "re");
	got = f ? fscanf(f, "%d", &pid) : 0;
	if (f)
		fclose(f);
	if (got != 1 || pid <= 0) {
		/* a tree in a namespace of its own went with it */
		if (killed < 0)
			log_warn(
				"migration %s: a restore was under way when migrd stopped; a copy it may still restore stays stopped (criu --leave-stopped): kill it",
				id);
		return false;
	}
	/* Its copy: started within the restore's bound from the mark */
	if (!proc_start(pid, &start) && start >= t0 &&
	    start <= t0 + (MIG_RESTORE_MS / 1000 + 5) * hz) {
		dest_signal_tree(pid, SIGKILL);
		log_warn(
			"migration %s: pid %d, restored here but never committed (migrd stopped before the commit), is killed",
			id, pid);
	}
	return false;
}
