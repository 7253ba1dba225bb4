// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The destination's table of migrations (migrate_dest_table.h): its
 * slots, the restored copy killed, the fence of a copy waiting for its
 * commit, and a resumed copy taken back after a restart
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dest_record.h"
#include "images.h"
#include "log.h"
#include "migrate_dest_table.h"
#include "ptree.h"
#include "registry.h"
#include "reply.h"
#include "sockio.h"

pthread_mutex_t dest_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t dest_changed = PTHREAD_COND_INITIALIZER;

static struct dest_mig migs[DEST_MAX];

struct dest_mig *dest_find(const char *id)
{
	int i;

	for (i = 0; i < DEST_MAX; i++)
		if (migs[i].state != D_FREE && !strcmp(migs[i].id, id))
			return &migs[i];
	return NULL;
}

/* The numbers held for it given back (what its restore did not claim) */
void dest_drop_hold(struct dest_mig *m)
{
	numhold_close(m->hold);
	m->hold = NULL;
}

/* A free slot: stale checks and finished ones are reused */
struct dest_mig *dest_slot(void)
{
	long long now = io_now_ms();
	int i;

	for (i = 0; i < DEST_MAX; i++) {
		struct dest_mig *m = &migs[i];

		if (m->state == D_CHECKED && now - m->born > DEST_STALE_MS) {
			img_remove(m->id, true);
			dest_drop_hold(m);
			m->state = D_FREE;
		}
		if (m->state == D_FREE || m->state == D_DONE)
			return m;
	}
	return NULL;
}

/* sig to the tree of pid as it is now (pid alone if it cannot be read) */
void dest_signal_tree(int pid, int sig)
{
	int pids[MIG_TREE_MAX], tids[MIG_TREE_MAX], np, nt;

	if (ptree_read(pid, pids, &np, tids, &nt, MIG_TREE_MAX))
		np = 1, pids[0] = pid;
	ptree_signal(pids, np, sig);
}

/* The restored tree, if it is still the one restored: killed */
void dest_kill_copy(struct dest_mig *m)
{
	unsigned long long start;

	if (proc_start(m->pid, &start) || start != m->start)
		return;
	dest_signal_tree(m->pid, SIGKILL);
}

/* A copy that did not stay: the network namespace made for it goes */
void dest_drop_netns(struct dest_mig *m)
{
	if (m->nsfd >= 0)
		close(m->nsfd);
	m->nsfd = -1;
	if (m->netns[0])
		netns_delete(m->netns);
	m->netns[0] = 0;
}

/* The fence: a restored copy without a commit by its deadline dies */
void *dest_fence(void *arg)
{
	struct dest_mig *m = arg;
	struct timespec ts;
	long long left;

	pthread_mutex_lock(&dest_lock);
	while (m->state == D_RESTORED && !m->committed &&
	       (left = m->deadline - io_now_ms()) > 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&dest_changed, &dest_lock, &ts);
	}
	if (m->state == D_RESTORED && !m->committed) {
		log_warn(
			"migration %s: no commit from %s in time: its restored copy (pid %d) is killed",
			m->id, m->who, m->pid);
		dest_kill_copy(m);
		dest_drop_netns(m);
		img_remove(m->id, true);
		m->state = D_DONE;
	}
	pthread_mutex_unlock(&dest_lock);
	return NULL;
}

/* The migration id in state want, or an error reply */
struct dest_mig *dest_get(const char *id, enum dest_state want,
			  struct sbuf *out)
{
	struct dest_mig *m;

	pthread_mutex_lock(&dest_lock);
	m = dest_find(id);
	if (m && m->state != want)
		m = NULL;
	pthread_mutex_unlock(&dest_lock);
	if (!m)
		reply_error(out, "no such migration in this state here");
	return m;
}

/*
 * A resumed copy an earlier migrd left, taken back as it was (restored,
 * waiting for the commit), its fence running again to the same deadline;
 * false if it cannot be (no record, the copy gone, no slot or thread)
 */
bool dest_take_back(const char *id, const char *dir)
{
	struct dest_record rec;
	struct dest_mig *m;
	char path[64];
	pthread_t th;

	if (!dest_record_alive(dir, &rec))
		return false;
	pthread_mutex_lock(&dest_lock);
	m = dest_slot();
	if (!m) {
		pthread_mutex_unlock(&dest_lock);
		return false;
	}
	memset(m, 0, sizeof(*m));
	snprintf(m->id, sizeof(m->id), "%s", id);
	snprintf(m->who, sizeof(m->who), "%s", rec.who);
	snprintf(m->netns, sizeof(m->netns), "%s", rec.netns);
	m->pid = rec.pid;
	m->start = rec.start;
	m->nmovers = rec.nmovers;
	memcpy(m->hpids, rec.hpids, sizeof(m->hpids));
	memcpy(m->hstarts, rec.hstarts, sizeof(m->hstarts));
	m->born = io_now_ms();
	m->deadline = rec.deadline;
	m->ns = rec.ns;
	snprintf(path, sizeof(path), "/run/netns/%s", rec.netns);
	m->nsfd = rec.netns[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	m->state = D_RESTORED;
	if ((rec.netns[0] && m->nsfd < 0) ||
	    pthread_create(&th, NULL, dest_fence, m)) {
		if (m->nsfd >= 0)
			close(m->nsfd);
		m->state = D_FREE;
		pthread_mutex_unlock(&dest_lock);
		return false;
	}
	pthread_detach(th);
	pthread_mutex_unlock(&dest_lock);
	log_warn(
		"migration %s: pid %d resumed here before migrd stopped: it waits for the commit from %s again, for %d s at most",
		id, rec.pid, rec.who, io_left_ms(rec.deadline) / 1000);
	return true;
}
