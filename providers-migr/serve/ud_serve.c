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
 * busy) and each context's control path for writing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "contexts.h"
#include "migr_json.h"
#include "partner.h"
#include "ud_redirect.h"
#include "ud_serve.h"

#define LOCK_MS 300
#define MAX_CTXS 64
#define MAX_PAIRS 256

struct pair {
	uint32_t from, to, known;
};

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

/* One hex number up to 24 bits at *s, ended by one of ends */
static bool hex24(const char **s, const char *ends, uint32_t *v)
{
	unsigned long x;
	char *end;

	x = strtoul(*s, &end, 16);
	if (end == *s || x > 0xffffff || !strchr(ends, *end))
		return false;
	*v = x;
	*s = *end ? end + 1 : end;
	return true;
}

/* "FROM:TO:KNOWN,..." (hex) into v; how many, or -1 */
static int parse_pairs(const char *s, struct pair *v)
{
	int n = 0;

	while (*s) {
		if (n == MAX_PAIRS || !hex24(&s, ":", &v[n].from) ||
		    !hex24(&s, ":", &v[n].to) || !hex24(&s, ",", &v[n].known))
			return -1;
		n++;
	}
	return n;
}

static void moved(FILE *out, struct migr_context **v, unsigned int n,
		  const char *args)
{
	char fromhex[33], tohex[33], why[256] = "";
	union ibv_gid from_gid, to_gid;
	unsigned int i, changed = 0;
	struct pair *pairs;
	int np, k, used = 0, ret = 0;

	pairs = calloc(MAX_PAIRS, sizeof(*pairs));
	if (!pairs) {
		fprintf(out, "{\"ok\":false,\"error\":\"out of memory\"}\n");
		return;
	}
	if (sscanf(args, "%32s %32s %n", fromhex, tohex, &used) != 2 || !used ||
	    migr_gid_parse(fromhex, &from_gid) ||
	    migr_gid_parse(tohex, &to_gid) ||
	    (np = parse_pairs(args + used, pairs)) <= 0) {
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
	unsigned int n;

	if (!migr_contexts_lock_within(LOCK_MS)) {
		fprintf(out,
			"{\"ok\":false,\"busy\":true,\"error\":\"switching itself\"}\n");
		return;
	}
	n = migr_contexts_get(v, MAX_CTXS);
	if (!strcmp(line, "probe"))
		probe(out, v, n);
	else if (!strncmp(line, "moved ", 6))
		moved(out, v, n, line + 6);
	else
		fprintf(out, "{\"ok\":false,\"error\":\"bad ud request\"}\n");
	migr_contexts_unlock();
}
