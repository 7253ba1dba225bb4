// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A connect to a QP in another process (partner_call.h): "fetch" asks that
 * process for its lower QP and, once per change of its tables, its rkeys;
 * "give" hands ours to a QP that withheld its question until connected.
 * Hosts that did not answer are not asked again for a while.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "migrd_call.h"
#include "partner_call.h"
#include "peer.h"
#include "verbs.h"

/* A host a fetch waited on in vain is asked again only after this */
#define FETCH_QUIET_MS 60000
#define FETCH_QUIET_HOSTS 16

/* What a fetch asks for and what its peer answered */
struct fetch {
	uint32_t our_phys; /* our lower QP */
	uint64_t known; /* the generation of its tables we hold */
	bool probe; /* no keys: its QP, context and generation only */
	unsigned int from; /* its MR to start the keys at */
	struct migr_xlate *x; /* where keys go; NULL for a probe */
	/* its answer */
	uint32_t phys;
	uint64_t peer, gen;
	unsigned int next, nkeys;
	bool gid_moved; /* the GID asked at is one it had: gid replaced it */
	union ibv_gid gid;
	bool withheld; /* not connected to us yet: it gives them when it is */
};

static int fetch_args(struct migr_partner *p, char *buf, size_t len, void *arg)
{
	struct fetch *f = arg;
	char from[16] = "-";

	if (!f->probe)
		snprintf(from, sizeof(from), "%u", f->from);
	snprintf(buf, len, "%u %u %016" PRIx64 " %" PRIu64 " %s",
		 p->mqp->vqp.qp.qp_num, f->our_phys, p->mqp->ctx->peers.id,
		 f->known, from);
	return 0;
}

/* Its rkeys, "V:P,V:P,..." in hex, into our replica of its tables */
static int fetch_keys(struct fetch *f, const json_t *res)
{
	const char *p = json_string_value(json_object_get(res, "keys")), *end;
	unsigned int n;

	if (!p)
		return EPROTO;
	if (migr_xlate_set_rkeys(f->x, p, &end, &n))
		return ENOMEM;
	f->nkeys += n;
	return *end ? EPROTO : 0;
}

static int fetch_take(struct migr_partner *p, const json_t *res, void *arg,
		      char *err, size_t errlen)
{
	struct fetch *f = arg;
	uint64_t v, next;

	if (!migr_json_u64(res, "phys", &v) || !v || v >> 24 ||
	    !migr_json_hex(res, "peer", &f->peer) ||
	    !migr_json_u64(res, "gen", &f->gen) ||
	    !migr_json_u64(res, "next", &next) || next > UINT32_MAX) {
		snprintf(err, errlen, "its reply lacks its QP or context");
		return EPROTO;
	}
	f->phys = v;
	f->next = next;
	f->gid_moved = migr_json_gid(res, "gid", &f->gid);
	f->withheld = migr_json_true(res, "withheld");
	if (f->x && fetch_keys(f, res)) {
		snprintf(err, errlen, "its keys are malformed");
		return EPROTO;
	}
	return 0;
}

/* One fetch step, again while the peer is busy with a switch of its own */
static int fetch_step(struct migr_partner *p, struct fetch *f, char *err,
		      size_t errlen)
{
	struct migr_pcall_step st = { .op = "fetch",
				      .args = fetch_args,
				      .take = fetch_take,
				      .arg = f,
				      .prepare = true,
				      .timeout_s = FETCH_TIMEOUT_S };

	return migr_pcall_patient(p, 1, &st, 10, err, errlen);
}

/* The peer's QP is at phys: our replica of its tables says so (or not) */
static int replica_qpn(struct migr_xlate *x, uint32_t vqpn, uint32_t phys)
{
	uint32_t old = migr_remote_qpn_to_phys(x, vqpn);

	if (old != vqpn && old != phys)
		migr_xlate_forget(x, MIGR_XLATE_QPN, old);
	if (phys == vqpn) {
		migr_xlate_forget(x, MIGR_XLATE_QPN_PHYS, vqpn);
		return 0;
	}
	return migr_xlate_set(x, MIGR_XLATE_QPN_PHYS, vqpn, phys) ?:
		       migr_xlate_set(x, MIGR_XLATE_QPN, phys, vqpn);
}

/*
 * Hosts a fetch waited on in vain (no migrd there, a firewall, a dead
 * host): a process making many connections there must not wait each time.
 */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char host[64];
	double until;
} quiet[FETCH_QUIET_HOSTS];

static bool host_quiet(const char *host)
{
	double now = now_ms();
	bool found = false;
	unsigned int i;

	pthread_mutex_lock(&quiet_lock);
	for (i = 0; i < FETCH_QUIET_HOSTS && !found; i++)
		found = quiet[i].until > now && !strcmp(quiet[i].host, host);
	pthread_mutex_unlock(&quiet_lock);
	return found;
}

static void host_went_quiet(const char *host)
{
	unsigned int i, oldest = 0;

	pthread_mutex_lock(&quiet_lock);
	for (i = 0; i < FETCH_QUIET_HOSTS; i++)
		if (quiet[i].until < quiet[oldest].until)
			oldest = i;
	snprintf(quiet[oldest].host, sizeof(quiet[oldest].host), "%s", host);
	quiet[oldest].until = now_ms() + FETCH_QUIET_MS;
	pthread_mutex_unlock(&quiet_lock);
}

/*
 * The probe: the peer's QP, its context and the generation of its tables,
 * into f; *gid is the peer's GID now if it moved. 0 or an errno, err set.
 */
static int fetch_probe(struct migr_partner *p, const struct ibv_qp_attr *attr,
		       struct fetch *f, union ibv_gid *gid, char *err,
		       size_t errlen)
{
	int ret;

	p->gid = attr->ah_attr.grh.dgid;
	if (!attr->ah_attr.is_global ||
	    migr_gid_host(&p->gid, p->host, sizeof(p->host))) {
		snprintf(err, errlen, "its GID has no address to ask at");
		return EOPNOTSUPP;
	}
	if (host_quiet(p->host)) {
		snprintf(
			err, errlen,
			"%s did not answer a fetch within %d s lately; not asked",
			p->host, FETCH_TIMEOUT_S);
		return ETIMEDOUT;
	}
	ret = fetch_step(p, f, err, errlen);
	if (ret) {
		/* no answer in time (a refusal comes at once) */
		if (ret == EAGAIN || ret == ETIMEDOUT)
			host_went_quiet(p->host);
		return ret;
	}
	if (f->gid_moved) {
		*gid = f->gid;
		verbs_info(
			&p->mqp->ctx->vctx,
			"QP 0x%x: its peer 0x%x at %s moved to another GID since it gave it out; connecting there\n",
			p->mqp->vqp.qp.qp_num, p->qpn, p->host);
	}
	return 0;
}

/* Its keys into x once per change of its tables, in chunks; 0 or errno */
static int fetch_keys_all(struct migr_partner *p, struct fetch *f,
			  struct migr_xlate *x, char *err, size_t errlen)
{
	int ret;

	if (__atomic_load_n(&x->gen, __ATOMIC_ACQUIRE) == f->gen)
		return 0;
	f->known = x->gen;
	f->probe = false;
	f->x = x;
	f->from = 0;
	do {
		ret = fetch_step(p, f, err, errlen);
		f->from = f->next;
	} while (!ret && f->next && !f->withheld);
	if (ret)
		return ret;
	/* withheld: its give (give_one()) will say they are all in */
	if (!f->withheld)
		__atomic_store_n(&x->gen, f->gen, __ATOMIC_RELEASE);
	return 0;
}

struct migr_xlate *migr_partner_fetch(struct migr_qp *mqp,
				      const struct ibv_qp_attr *attr,
				      uint32_t our_phys, union ibv_gid *gid,
				      char *err, size_t errlen)
{
	struct fetch f = { .our_phys = our_phys, .probe = true };
	struct migr_partner p = { .mqp = mqp, .qpn = attr->dest_qp_num };
	struct migr_xlate *x;
	int ret;

	ret = fetch_probe(&p, attr, &f, gid, err, errlen);
	if (ret)
		return migr_fail(ret);
	/* A peer whose tables never changed: the identity is right */
	if (!f.gen)
		return migr_fail(0);
	x = migr_peer_tables(mqp->ctx, f.peer);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return migr_fail(ENOMEM);
	}
	ret = fetch_keys_all(&p, &f, x, err, errlen);
	if (ret)
		return migr_fail(ret);
	if (replica_qpn(x, p.qpn, f.phys)) {
		snprintf(err, errlen, "out of memory");
		return migr_fail(ENOMEM);
	}
	if (f.withheld)
		verbs_info(
			&mqp->ctx->vctx,
			"QP 0x%x: its peer 0x%x at %s moved before, is QP 0x%x there; its keys are withheld until it connects\n",
			mqp->vqp.qp.qp_num, p.qpn, p.host, f.phys);
	else
		verbs_info(
			&mqp->ctx->vctx,
			"QP 0x%x: its peer 0x%x at %s moved before, is QP 0x%x there; %u of its keys fetched\n",
			mqp->vqp.qp.qp_num, p.qpn, p.host, f.phys, f.nkeys);
	return x;
}

/* A give's chunk of our rkeys, and the numbers it names */
struct give {
	uint32_t our_phys, partner_phys;
	uint64_t gen;
	char pairs[KEYS_PER_LINE * 18 + 2];
	bool last;
};

static int give_args(struct migr_partner *p, char *buf, size_t len, void *arg)
{
	struct give *g = arg;
	int n;

	/* A prepare's words (migrd checks it with the faces step), then ours */
	n = snprintf(buf, len,
		     "%u 0 0 0 0 %u %016" PRIx64 " %u %" PRIu64 " %d %s",
		     p->mqp->vqp.qp.qp_num, g->our_phys, p->mqp->ctx->peers.id,
		     g->partner_phys, g->gen, g->last, g->pairs);
	/* keys cut short would be wrong keys */
	return n < 0 || (size_t)n >= len ? E2BIG : 0;
}

int migr_partner_give(struct migr_qp *mqp, uint32_t dest_qpn,
		      const union ibv_gid *dgid, uint32_t our_phys,
		      uint32_t partner_phys, char *err, size_t errlen)
{
	struct migr_context *ctx = mqp->ctx;
	struct migr_partner p = { .mqp = mqp, .qpn = dest_qpn, .gid = *dgid };
	struct give g = { .our_phys = our_phys, .partner_phys = partner_phys };
	struct migr_pcall_step st = { .op = "give",
				      .args = give_args,
				      .arg = &g,
				      .prepare = true,
				      .timeout_s = FETCH_TIMEOUT_S };
	unsigned int start = 0, k;
	int ret;

	g.gen = __atomic_load_n(&ctx->xlate.gen, __ATOMIC_ACQUIRE);
	if (!g.gen)
		return 0;
	if (migr_gid_host(&p.gid, p.host, sizeof(p.host))) {
		snprintf(err, errlen, "its GID has no address to give at");
		return EOPNOTSUPP;
	}
	if (host_quiet(p.host)) {
		snprintf(err, errlen, "%s did not answer lately; not asked",
			 p.host);
		return ETIMEDOUT;
	}
	do {
		pthread_mutex_lock(&ctx->rec.lock);
		k = migr_rkey_pairs(ctx, start, KEYS_PER_LINE, g.pairs);
		pthread_mutex_unlock(&ctx->rec.lock);
		g.last = k < KEYS_PER_LINE;
		if (!k)
			snprintf(g.pairs, sizeof(g.pairs), "-");
		ret = migr_pcall_patient(&p, 1, &st, 10, err, errlen);
		start += k;
	} while (!ret && !g.last);
	return ret;
}
