// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What a migr process reads of the partner and UD requests migrd relays
 * to it ("partner LINE", "ud LINE" on its control socket) before it
 * touches a QP: the partner line's entries cut apart and each step's
 * arguments (serve/partner_args.c), the UD request's words and pairs
 * (serve/ud_args.c). Text only, no device. Any bytes, not only those
 * ctl_line.c and migrd let through: the readers must hold anyway. What
 * is read stays inside the line, at most the entries the protocol
 * allows, every QP number within 24 bits.
 */
#include <stdlib.h>
#include <string.h>

#include "ctl_line.h"
#include "fuzz.h"
#include "partner_args.h"
#include "ud_args.h"

#define GID "20010db8000000000000000000000001"
#define QPN_MAX 0xffffff

/* s, and the whole string from it, inside the len bytes at base */
static int inside(const char *s, const char *base, size_t len)
{
	return s >= base && s <= base + len && s + strlen(s) <= base + len;
}

static void prepare(const struct prepare_args *a)
{
	FUZZ_ASSERT(a->peer_qpn <= QPN_MAX && a->peer_phys <= QPN_MAX);
	FUZZ_ASSERT(a->partner_phys && a->partner_phys <= QPN_MAX);
}

/* Entry i's arguments, read as its step reads them */
static void step_args(enum pline_step step, const char *entry, const char *args)
{
	unsigned int u, qpn;
	struct prepare_args a;
	struct fetch_args f;
	const char *pairs;
	uint64_t x, y;
	char gid[33];
	int k, last;

	switch (step) {
	case PLINE_PREPARE:
	case PLINE_FACES:
		if (migr_pserve_read_prepare(entry, args, &a))
			prepare(&a);
		break;
	case PLINE_GIVE:
		if (migr_pserve_read_give(entry, args, &a, &x, &last, &pairs)) {
			prepare(&a);
			FUZZ_ASSERT(x && (last == 0 || last == 1));
			FUZZ_ASSERT(inside(pairs, args, strlen(args)));
		}
		break;
	case PLINE_FETCH:
		if (migr_pserve_read_fetch(args, &f)) {
			FUZZ_ASSERT(f.peer_qpn <= QPN_MAX &&
				    f.peer_phys <= QPN_MAX);
			FUZZ_ASSERT(f.start <= UINT32_MAX &&
				    (!f.probe || !f.start));
		}
		break;
	case PLINE_SUSPEND:
		/* a bad entry leaves the bound the others drain in */
		u = 4321;
		if (migr_pserve_read_suspend(args, &u))
			FUZZ_ASSERT(u >= 1 && u <= 600000);
		else
			FUZZ_ASSERT(u == 4321);
		break;
	case PLINE_RECVS:
		migr_pserve_read_recvs(args, &k, &x, &y);
		break;
	case PLINE_RECONNECT:
		if (migr_pserve_read_reconnect(args, &qpn, gid, &x))
			FUZZ_ASSERT(qpn && qpn <= QPN_MAX && strlen(gid) <= 32);
		break;
	default: /* keys (its pairs are the rkey tables'), resume, abort */
		break;
	}
}

/* line: an exact copy, so that ASan sees a read past it */
static void partner(const char *line)
{
	size_t len = strlen(line);
	struct pserve_cut c;
	struct pline pl;
	unsigned int i, n;
	char why[128];
	char *copy, *entry;
	uint32_t q;

	if (pline_parse(line, NULL, &pl, why, sizeof(why)))
		return;
	copy = strdup(line);
	if (!copy)
		abort();
	n = migr_pserve_cut(&pl, copy, line, &c);
	FUZZ_ASSERT(n == (unsigned int)pl.nqp && n >= 1 && n <= PLINE_QPS_MAX);
	if (pl.step == PLINE_KEYS)
		FUZZ_ASSERT(c.pairs && inside(c.pairs, copy, len) &&
			    strlen(c.pairs) == pl.pairs_len);
	else
		FUZZ_ASSERT(!c.pairs);
	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(inside(c.entry[i], copy, len));
		FUZZ_ASSERT(inside(c.args[i], c.entry[i], strlen(c.entry[i])));
		/* an entry ends where the next begins */
		FUZZ_ASSERT(!strstr(c.entry[i], " . "));
		FUZZ_ASSERT(!pline_word(c.entry[i], 0, &q) && q == pl.qpn[i]);
		/* each entry on its own: no reader reads on into the next */
		entry = strdup(c.entry[i]);
		if (!entry)
			abort();
		step_args(pl.step, entry, entry + (c.args[i] - c.entry[i]));
		free(entry);
	}
	free(copy);
}

static void ud(const char *line)
{
	struct migr_ud_pair *v = malloc(MIGR_UD_PAIRS_MAX * sizeof(*v));
	char from[33], to[33];
	const char *args;
	int i, n;

	if (!v)
		abort();
	if (migr_ud_op(line, &args) == MIGR_UD_MOVED) {
		FUZZ_ASSERT(args == line + 6);
		n = migr_ud_read_moved(args, from, to, v);
		FUZZ_ASSERT(n < 0 || (strlen(from) <= 32 && strlen(to) <= 32));
	} else {
		/* the pairs alone, from any bytes */
		n = migr_ud_read_pairs(line, v);
	}
	FUZZ_ASSERT(n <= MIGR_UD_PAIRS_MAX);
	for (i = 0; i < n; i++)
		FUZZ_ASSERT(v[i].from <= QPN_MAX && v[i].to <= QPN_MAX &&
			    v[i].known <= QPN_MAX);
	free(v);
}

/*
 * The input up to its first NUL is the line after "partner " or "ud ";
 * "ud " first sends the rest to the UD reader, anything else is read as
 * a partner line (and as a UD line too)
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line;

	/* the control socket reads no more (serve/control.c) */
	if (size > CTL_LINE_MAX)
		size = CTL_LINE_MAX;
	line = malloc(size + 1);
	if (!line)
		abort();
	memcpy(line, data, size);
	line[size] = 0;
	line = realloc(line, strlen(line) + 1);
	if (!line)
		abort();
	if (!strncmp(line, "ud ", 3)) {
		ud(line + 3);
	} else {
		partner(line);
		ud(line);
	}
	free(line);
	return 0;
}

void fuzz_seeds(void (*add)(const void *buf, size_t len))
{
	static const char *const s[] = {
		"prepare " GID " 17 18 10000 7 4 0 19 aa 20",
		"faces " GID " 17 18 10000 7 4 0 19 aa 20 . 21 22 10000 7 4 0 "
		"23 aa 24",
		"give " GID " 17 18 0 0 0 0 19 aa 20 3 1 1a:2b,3c:4d",
		"give " GID " 17 18 0 0 0 0 19 aa 20 3 0 -",
		"fetch " GID " 17 18 19 00000000000000aa 0 -",
		"fetch " GID " 17 18 19 00000000000000aa 2 64",
		"suspend " GID " 17 5000 . 18 5000",
		"recvs " GID " 17 1 100 120",
		"reconnect " GID " 17 33 20010db8000000000000000000000002 12",
		"keys " GID " 1a:2b,3c:4d . 17 . 18",
		"resume " GID " 17 . 18",
		"ud probe",
		"ud moved " GID " 20010db8000000000000000000000002 11:22:11,"
		"ffffff:1:2",
	};
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		add(s[i], strlen(s[i]));
}
