// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The moving side of a UD move (ud_redirect.h). A UD QP's peers are the hosts
 * its process's address handles name (RoCE v2 GIDs hold their address)
 * and the hosts datagrams came from: each RECV buffer of a UD QP starts
 * with the 40 bytes of a GRH, which on RoCE v2 over IPv4 hold the IP
 * header (sender and receiver addresses). Before anything is touched, each
 * of those hosts' migrd answers for its migr processes which UD QPs they
 * have (a sender we heard from must be one of them, or ours); after the
 * rebuild, each learns that our UD QPs were FROM on the old GID and are TO
 * on the new one. A host that cannot be reached refuses the switch before
 * it starts, or rolls it back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "migrd_call.h"
#include "ud_announce.h"
#include "ud_redirect.h"

#define UD_TIMEOUT_S 40 /* migrd asks every process there, over a hop */
#define UD_REPLY_MAX (1 << 16)
#define UD_LINE_MAX 3700 /* migrd takes 3800 bytes after its own words */
#define UD_GIDS_MAX 16 /* of a port, looked at for our own addresses */
#define GRH_LEN 40

static int add_host(struct migr_ud_hosts *hs, const char *host)
{
	unsigned int i;

	for (i = 0; i < hs->n; i++)
		if (!strcmp(hs->h[i], host))
			return 0;
	if (hs->n == MIGR_UD_HOSTS_MAX)
		return E2BIG;
	snprintf(hs->h[hs->n++], sizeof(hs->h[0]), "%s", host);
	return 0;
}

/* The hosts ctx's AHs name, but its own device; EOPNOTSUPP with why */
static int ah_hosts(struct migr_context *ctx, struct migr_ud_hosts *hs,
		    char *why, size_t why_len)
{
	char host[INET6_ADDRSTRLEN], hex[33];
	struct migr_ah *mah;

	list_for_each (&ctx->rec.ahs, mah, entry) {
		const struct ibv_ah_attr *a = &mah->attr;

		if (migr_ah_local(ctx, a))
			continue;
		migr_gid_hex(&a->grh.dgid, hex);
		if (a->grh.dgid.raw[0] == 0xff) {
			snprintf(
				why, why_len,
				"an address handle names multicast group %s: UD multicast cannot follow a switch yet",
				hex);
			return EOPNOTSUPP;
		}
		if (migr_gid_host(&a->grh.dgid, host, sizeof(host))) {
			snprintf(
				why, why_len,
				"an address handle names GID %s, which says no host whose UD peers could be told",
				hex);
			return EOPNOTSUPP;
		}
		if (add_host(hs, host)) {
			snprintf(why, why_len,
				 "UD peers are on more than %d hosts",
				 MIGR_UD_HOSTS_MAX);
			return EOPNOTSUPP;
		}
	}
	return 0;
}

/* The GIDs of port 1 of ctx's device (UD QPs receive on any of them) */
static unsigned int own_gids(struct migr_context *ctx, uint8_t port,
			     union ibv_gid *gids)
{
	unsigned int i, n = 0;

	for (i = 0; i < UD_GIDS_MAX; i++)
		if (!ibv_query_gid(ctx->lower, port, i, &gids[n]) &&
		    memcmp(&gids[n], &(union ibv_gid){}, sizeof(gids[n])))
			n++;
	return n;
}

/*
 * The sender's address in the GRH a datagram left at b, if it was sent to
 * one of our n GIDs and not from one of them (ours are in this process or
 * on this device: the senders check sees to those)
 */
static bool grh_sender(const uint8_t *b, const union ibv_gid *ours,
		       unsigned int n, char *host, size_t len)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *ip = b + 20;
	union ibv_gid src;
	bool to_us = false;
	unsigned int i;

	if (ip[0] == 0x45 && ip[9] == 17 /* UDP */) {
		/* RoCE v2 over IPv4: the IPv4 header in the last 20 bytes */
		memcpy(src.raw, v4mapped, sizeof(v4mapped));
		memcpy(src.raw + 12, ip + 12, 4);
		for (i = 0; i < n; i++)
			to_us |= !memcmp(ours[i].raw, v4mapped,
					 sizeof(v4mapped)) &&
				 !memcmp(ours[i].raw + 12, ip + 16, 4);
	} else if (b[0] >> 4 == 6) {
		/* an IPv6 header or an IB GRH: sender at 8, receiver at 24 */
		memcpy(src.raw, b + 8, sizeof(src.raw));
		for (i = 0; i < n; i++)
			to_us |= !memcmp(ours[i].raw, b + 24, 16);
	}
	if (!to_us)
		return false;
	for (i = 0; i < n; i++)
		if (!memcmp(&ours[i], &src, sizeof(src)))
			return false;
	return !migr_gid_host(&src, host, len);
}

/*
 * Where [addr, addr + len), as an SGE names it (an MR's IO virtual
 * address), is in the process: only inside memory it registered, else NULL
 */
static const uint8_t *registered(struct migr_context *ctx, uint64_t addr,
				 uint32_t len)
{
	struct migr_mr *mmr;

	list_for_each (&ctx->rec.mrs, mmr, entry) {
		uint64_t iova = mmr->iova;

		if (!mmr->dm && addr >= iova &&
		    addr + len <= iova + mmr->vmr.ibv_mr.length)
			return (const uint8_t *)mmr->vmr.ibv_mr.addr +
			       (addr - iova);
	}
	return NULL;
}

/* Senders' hosts in the GRHs of the RECVs a log still holds */
static int log_hosts(struct migr_context *ctx, const struct migr_rlog *log,
		     const union ibv_gid *ours, unsigned int n,
		     struct migr_ud_hosts *hs)
{
	char host[INET6_ADDRSTRLEN];
	uint64_t i, first;

	if (!log->ring.buf || !log->max_sge)
		return 0;
	first = log->head > log->ring.mask + 1 ?
			log->head - log->ring.mask - 1 :
			0;
	for (i = first; i < log->head; i++) {
		const struct migr_rlog_entry *e = migr_rlog_at(log, i);
		const struct ibv_sge *sg = &e->sge[0];
		const uint8_t *grh;

		if (!e->num_sge || sg->length < GRH_LEN)
			continue;
		grh = registered(ctx, sg->addr, GRH_LEN);
		if (grh && grh_sender(grh, ours, n, host, sizeof(host)) &&
		    add_host(hs, host))
			return E2BIG;
	}
	return 0;
}

/* The hosts ctx's UD QPs heard from, as their RECV buffers say */
static int grh_hosts(struct migr_context *ctx, struct migr_ud_hosts *hs,
		     char *why, size_t why_len)
{
	union ibv_gid ours[UD_GIDS_MAX];
	struct migr_qp *mqp;
	unsigned int n;
	int ret = 0;

	list_for_each (&ctx->rec.qps, mqp, entry) {
		if (mqp->vqp.qp.qp_type != IBV_QPT_UD)
			continue;
		n = own_gids(ctx, mqp->attr.port_num ? mqp->attr.port_num : 1,
			     ours);
		ret = log_hosts(ctx, &mqp->rlog, ours, n, hs);
		if (!ret && mqp->vqp.qp.srq)
			ret = log_hosts(ctx, &to_msrq(mqp->vqp.qp.srq)->rlog,
					ours, n, hs);
		if (ret) {
			snprintf(why, why_len,
				 "UD peers are on more than %d hosts",
				 MIGR_UD_HOSTS_MAX);
			return EOPNOTSUPP;
		}
	}
	return 0;
}

/*
 * LINE to every migr process of host, through migrd; why, or 0 and its
 * reply parsed into *rep if rep (to json_decref())
 */
static int relay(const char *host, const char *line, char *reply, json_t **rep,
		 char *why, size_t why_len)
{
	json_t *j;
	char req[UD_LINE_MAX + 128], err[256];
	const char *path;
	int n, ret;

	n = snprintf(req, sizeof(req), "migrd/1 udpeers %s %s\n", host, line);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(why, why_len, "UD peers at %s: request too long",
			 host);
		return E2BIG;
	}
	ret = migr_migrd_call(req, n, UD_TIMEOUT_S, reply, UD_REPLY_MAX, &path);
	if (ret == EHOSTUNREACH) {
		snprintf(
			why, why_len,
			"migrd is not running (%s: %s); UD peers at %s can only be told through it",
			path, strerror(errno), host);
		return ret;
	}
	if (ret) {
		snprintf(why, why_len,
			 "no answer from migrd about UD peers at %s: %s", host,
			 strerror(ret));
		return ret;
	}
	j = migr_json_parse(reply, strcspn(reply, "\n"));
	if (!migr_json_true(j, "ok")) {
		if (j)
			migr_json_error(j, err, sizeof(err));
		else
			snprintf(err, sizeof(err), "its reply is not JSON");
		snprintf(why, why_len, "UD peers at %s cannot be told: %s",
			 host, err);
		json_decref(j);
		return EREMOTEIO;
	}
	if (rep)
		*rep = j;
	else
		json_decref(j);
	return 0;
}

/* The UD QP numbers each process of a probe's reply gave, into known */
static void take_qpns(const json_t *rep, uint32_t *known, unsigned int max,
		      unsigned int *n)
{
	const json_t *procs = json_object_get(rep, "procs"), *ud;
	size_t i, k;

	for (i = 0; i < json_array_size(procs); i++) {
		ud = json_object_get(json_object_get(json_array_get(procs, i),
						     "reply"),
				     "ud");
		for (k = 0; k < json_array_size(ud) && *n < max; k++) {
			json_t *q = json_array_get(ud, k);

			if (json_is_integer(q) && json_integer_value(q) >= 0 &&
			    json_integer_value(q) <= 0xffffff)
				known[(*n)++] = json_integer_value(q);
		}
	}
}

int migr_ud_probe(struct migr_context *ctx, uint32_t *known, unsigned int max,
		  unsigned int *n, char *why, size_t why_len)
{
	struct migr_ud_hosts *hs = &ctx->ud_hosts;
	struct migr_qp *mqp;
	unsigned int i;
	char *reply;
	int ret;

	*n = 0;
	hs->n = 0;
	list_for_each (&ctx->rec.qps, mqp, entry) {
		mqp->ud_was = mqp->lower ? mqp->lower->qp_num : 0;
		mqp->ud_target = 0;
	}
	ret = ah_hosts(ctx, hs, why, why_len);
	if (!ret)
		ret = grh_hosts(ctx, hs, why, why_len);
	if (ret || !hs->n) {
		hs->n = 0;
		return ret;
	}
	reply = malloc(UD_REPLY_MAX);
	if (!reply)
		return ENOMEM;
	for (i = 0; i < hs->n && !ret; i++) {
		json_t *rep;

		ret = relay(hs->h[i], "probe", reply, &rep, why, why_len);
		if (!ret) {
			take_qpns(rep, known, max, n);
			json_decref(rep);
		}
	}
	free(reply);
	if (ret)
		hs->n = 0;
	return ret;
}

/*
 * "moved FROMGID TOGID FROM:TO:KNOWN,..." for ctx's UD QPs: from the numbers
 * before this switch (was) or on its target (!was), to their numbers now
 */
static int moved_line(struct migr_context *ctx, const union ibv_gid *from,
		      const union ibv_gid *to, bool was, char *line, size_t len)
{
	char fhex[33], thex[33];
	struct migr_qp *mqp;
	size_t off;
	int k = 0;

	migr_gid_hex(from, fhex);
	migr_gid_hex(to, thex);
	off = snprintf(line, len, "moved %s %s ", fhex, thex);
	list_for_each (&ctx->rec.qps, mqp, entry) {
		uint32_t old = was ? mqp->ud_was : mqp->ud_target;

		if (mqp->vqp.qp.qp_type != IBV_QPT_UD || !mqp->lower || !old)
			continue;
		off += snprintf(line + off, len - off, "%s%x:%x:%x",
				k++ ? "," : "", old, mqp->lower->qp_num,
				mqp->vqp.qp.qp_num);
		if (off >= len)
			return -1;
	}
	return k;
}

/* One line to every host; the first failure's why */
static int tell(const struct migr_ud_hosts *hs, const char *line, char *why,
		size_t why_len)
{
	char *reply = malloc(UD_REPLY_MAX);
	unsigned int i;
	int ret = 0;

	if (!reply)
		return ENOMEM;
	for (i = 0; i < hs->n && !ret; i++)
		ret = relay(hs->h[i], line, reply, NULL, why, why_len);
	free(reply);
	return ret;
}

int migr_ud_announce(struct migr_context *ctx,
		     const struct migr_gid_history *moves, bool rollback,
		     char *why, size_t why_len)
{
	const struct migr_ud_hosts *hs = &ctx->ud_hosts;
	char line[UD_LINE_MAX];
	struct migr_qp *mqp;
	unsigned int g;
	int ret = 0, k;

	if (!hs->n)
		return 0;
	/* Told or not, a peer may point there from now on */
	if (!rollback)
		list_for_each (&ctx->rec.qps, mqp, entry)
			if (mqp->lower)
				mqp->ud_target = mqp->lower->qp_num;
	/* Peers name us by any GID of the port: each says where it went */
	for (g = 0; g < moves->n && !ret; g++) {
		const union ibv_gid *orig = &moves->e[g].from,
				    *target = &moves->e[g].to;

		/*
		 * Back on the original device: peers may point at the target
		 * (told already) or at where we were (not told yet)
		 */
		if (rollback && moved_line(ctx, target, orig, false, line,
					   sizeof(line)) > 0)
			tell(hs, line, why, why_len);
		k = moved_line(ctx, orig, rollback ? orig : target, true, line,
			       sizeof(line));
		if (k < 0) {
			snprintf(why, why_len, "too many UD QPs to announce");
			ret = E2BIG;
		} else if (k > 0) {
			ret = tell(hs, line, why, why_len);
		}
	}
	if (rollback) {
		if (ret)
			verbs_err(&ctx->vctx,
				  "switch: rollback: UD peers not told: %s\n",
				  why);
		return 0;
	}
	return ret;
}
