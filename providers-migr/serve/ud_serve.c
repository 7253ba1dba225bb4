// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What migrd's UD relay asks a migr process (ud_redirect.h), on its control
 * socket as "ud LINE", one JSON line back:
 *
 *   probe             its UD QPs' lower numbers: {"ok":true,"ud":[N,...]}
 *   moved FROMGID TOGID FROM:TO:KNOWN,...
 *                     a UD peer's QPs FROM (hex) on FROMGID are now TO on
 *                     TOGID, KNOWN the number its application knows: its
 *                     AHs send there from now on;
 *                     {"ok":true,"redirected":N} (AH entries changed)
 *
 * It holds the process's list of contexts (a switch of its own answers
 * busy) and each context's control path for writing. The words are read
 * by ud_args.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "contexts.h"
#include "migr_json.h"
#include "partner.h"
#include "ud_args.h"
#include "ud_redirect.h"
#include "ud_serve.h"

#define LOCK_MS 300
#define MAX_CTXS 64

static void probe(FILE *out, struct migr_context **v, unsigned int n)
{
	struct migr_qp *mqp;
	unsigned int i, k = 0;

	fprintf(out, "{\"ok\":true,\"ud\":[");
	for (i = 0; i < n; i++) {
		pthread_rwlock_rdlock(&v[i]->ctl_lock);
		list_for_each (&v[i]->rec.qps, mqp, entry)
			if (mqp->vqp.qp.qp_type == IBV_QPT_UD && mqp->lower)
				fprintf(out, "%s%u", k++ ? "," : "",
					mqp->lower->qp_num);
		pthread_rwlock_unlock(&v[i]->ctl_lock);
	}
	fprintf(out, "]}\n");
}

static void moved(FILE *out, struct migr_context **v, unsigned int n,
		  const char *args)
{
	char fromhex[33], tohex[33], why[256] = "";
	union ibv_gid from_gid, to_gid;
	unsigned int i, changed = 0;
	struct migr_ud_pair *pairs;
	int np, k, ret = 0;

	pairs = calloc(MIGR_UD_PAIRS_MAX, sizeof(*pairs));
	if (!pairs) {
		fprintf(out, "{\"ok\":false,\"error\":\"out of memory\"}\n");
		return;
	}
	np = migr_ud_read_moved(args, fromhex, tohex, pairs);
	if (np <= 0 || migr_gid_parse(fromhex, &from_gid) ||
	    migr_gid_parse(tohex, &to_gid)) {
		fprintf(out,
			"{\"ok\":false,\"error\":\"bad ud moved request\"}\n");
		free(pairs);
		return;
	}
	for (i = 0; i < n && !ret; i++) {
		unsigned int before = changed;

		if (!migr_ctl_lock_briefly(v[i])) {
			snprintf(why, sizeof(why), "its control path is busy");
			ret = EBUSY;
			break;
		}
		for (k = 0; k < np && !ret; k++)
			ret = migr_ud_redirect(v[i], &from_gid, pairs[k].from,
					       &to_gid, pairs[k].to,
					       pairs[k].known, &changed, why,
					       sizeof(why));
		pthread_rwlock_unlock(&v[i]->ctl_lock);
		if (changed > before)
			verbs_info(
				&v[i]->vctx,
				"UD peer at %s moved to %s: %u address handle entries follow\n",
				fromhex, tohex, changed - before);
	}
	free(pairs);
	if (ret) {
		fprintf(out, "{\"ok\":false,\"error\":");
		migr_json_str(out, why);
		fprintf(out, "}\n");
		return;
	}
	fprintf(out, "{\"ok\":true,\"redirected\":%u}\n", changed);
}

void migr_ud_serve(FILE *out, const char *line)
{
	struct migr_context *v[MAX_CTXS];
	const char *args;
	unsigned int n;

	if (!migr_contexts_lock_within(LOCK_MS)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"switching itself\"}\n");
		return;
	}
	n = migr_contexts_get(v, MAX_CTXS);
	switch (migr_ud_op(line, &args)) {
	case MIGR_UD_PROBE:
		probe(out, v, n);
		break;
	case MIGR_UD_MOVED:
		moved(out, v, n, args);
		break;
	default:
		fprintf(out, "{\"ok\":false,\"error\":\"bad ud request\"}\n");
	}
	migr_contexts_unlock();
}
