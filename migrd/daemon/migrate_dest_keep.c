// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The destination of a migration (migrate_dest_table.h): what the coming
 * process keeps until its restore, its partner grants (mig-grants) and
 * the numbers held for it on the device (mig-hold)
 */
#include <pthread.h>
#include <rdma/migr_rxe_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "migrate_dest_keep.h"
#include "pauth.h"
#include "reply.h"
#include "sockio.h"

/* mig-grants: kept until the restore (PAUTH_MAX at most) */
void dest_grants(const struct req *r, struct sbuf *out)
{
	const char *p = r->line;
	struct req_grant g, *v;
	struct dest_mig *m;
	int n = 0;

	m = dest_get(r->id, D_CHECKED, out);
	if (!m)
		return;
	pthread_mutex_lock(&dest_lock);
	while (req_grant_next(&p, &g) == 1) {
		if (m->ngrants >= PAUTH_MAX) {
			pthread_mutex_unlock(&dest_lock);
			reply_error(out, "too many partner grants");
			return;
		}
		v = realloc(m->grants, (m->ngrants + 1) * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&dest_lock);
			reply_error(out, "out of memory");
			return;
		}
		m->grants = v;
		m->grants[m->ngrants++] = g;
		n++;
	}
	pthread_mutex_unlock(&dest_lock);
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"grants\":%d}", REQ_VERSION, n);
}

/*
 * The restored migr process k (pid, start) may go on with the partner
 * sessions its park opened on the source: before it resumes and asks
 * for them. A grant without an owner is the first migr process's.
 */
void dest_give_grants(struct dest_mig *m, int k)
{
	struct pauth_key key = { .pid = m->hpids[k], .start = m->hstarts[k] };
	int i, mine = 0, given = 0;

	for (i = 0; i < m->ngrants; i++) {
		const struct req_grant *g = &m->grants[i];

		if (g->owner ? g->owner != m->movers[k] : k)
			continue;
		mine++;
		key.qpn = g->qpn;
		memcpy(key.gid, g->gid, sizeof(key.gid));
		snprintf(key.host, sizeof(key.host), "%s", g->host);
		if (!pauth_grant(&key, g->ppid, io_now_ms()))
			given++;
	}
	if (mine)
		log_info("migration %s: pid %d has %d of %d partner grants",
			 m->id, key.pid, given, mine);
}

/* a migration's hold fits in one holder's bound of rdma_rxe */
_Static_assert(DEST_HOLD_MAX <= MIGR_RXE_HOLD_MAX,
	       "DEST_HOLD_MAX above rdma_rxe's MIGR_RXE_HOLD_MAX");

/*
 * n numbers of rxe's kind held for m, under the lock: how many, or -1
 * with err; err also says why none were (hold_numbers = no, too many
 * asked, or a device without migr's rdma_rxe)
 */
static int hold_some(struct dest_mig *m, int kind, const uint32_t *v, int n,
		     char *err, size_t len)
{
	int held = 0;

	pthread_mutex_lock(&dest_lock);
	if (!migrd.conf.hold_numbers && !m->why_not_held[0])
		snprintf(m->why_not_held, sizeof(m->why_not_held),
			 "hold_numbers = no here");
	if (m->asked + n > DEST_HOLD_MAX)
		snprintf(m->why_not_held, sizeof(m->why_not_held),
			 "more than %d numbers asked", DEST_HOLD_MAX);
	m->asked += n;
	if (!m->hold && !m->why_not_held[0]) {
		m->hold = numhold_open(m->dev, m->why_not_held,
				       sizeof(m->why_not_held));
		if (!m->hold)
			log_info("migration %s: no numbers held for it: %s",
				 m->id, m->why_not_held);
	}
	if (m->hold && !m->why_not_held[0])
		held = numhold_reserve(m->hold, kind, v, n, err, len);
	else
		snprintf(err, len, "%s", m->why_not_held);
	pthread_mutex_unlock(&dest_lock);
	return held;
}

/*
 * mig-hold: numbers held on the device of the restore until it (numhold.h).
 * A device that cannot hold them is no refusal: the reply says why.
 */
void dest_hold(const struct req *r, struct sbuf *out)
{
	static const struct {
		int rxe;
		const char *what;
	} hold_kinds[REQ_HOLD_KINDS] = {
		[REQ_HOLD_QPN] = { MIGR_RXE_KIND_QPN, "QP numbers" },
		[REQ_HOLD_MR] = { MIGR_RXE_KIND_MR_KEY, "MR keys" },
		[REQ_HOLD_MW] = { MIGR_RXE_KIND_MW_KEY, "window keys" },
	};
	int kind = req_hold_kind(r->name);
	uint32_t v[REQ_HOLD_MAX];
	const char *p = r->line;
	char err[300] = "";
	struct dest_mig *m;
	int n = 0, held;

	if (kind < 0) { /* the parser refuses it: never */
		reply_error(out, "invalid kind");
		return;
	}
	m = dest_get(r->id, D_CHECKED, out);
	if (!m)
		return;
	while (n < REQ_HOLD_MAX && req_hold_next(&p, &v[n]) == 1)
		n++;
	held = hold_some(m, hold_kinds[kind].rxe, v, n, err, sizeof(err));
	if (held < 0)
		log_warn("migration %s: %s", m->id, err);
	else if (!err[0])
		log_info("migration %s: %d of %d %s held here for the restore",
			 m->id, held, n, hold_kinds[kind].what);
	sb_printf(out, "{\"v\":%d,\"ok\":true,\"held\":%d", REQ_VERSION,
		  held > 0 ? held : 0);
	if (err[0]) {
		sb_add(out, ",\"why\":", 7);
		sb_json_str(out, err);
	}
	sb_add(out, "}", 1);
}
