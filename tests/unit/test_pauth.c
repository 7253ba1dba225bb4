// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's reading of partner lines and its grants (pauth.h) */
#include <stdio.h>
#include <string.h>

#include "pauth.h"
#include "unit.h"

#define GID "20010db8000000000000000000000001"
#define GID2 "20010db8000000000000000000000002"

static struct pline pl;
static char err[256];

static int parse(const char *line)
{
	err[0] = 0;
	return pline_parse(line, GID, &pl, err, sizeof(err));
}

static void lines(void)
{
	char big[REQ_PARTNER_LINE_MAX + 1];
	int i, n;

	CHECK(!parse("prepare " GID " 17 18 10000 7 4"));
	CHECK(pl.step == PLINE_PREPARE && pl.nqp == 1 && pl.qpn[0] == 17);
	CHECK(!parse("suspend " GID " 17 5000 . 18 5000 . 16777215 5000"));
	CHECK(pl.step == PLINE_SUSPEND && pl.nqp == 3 && pl.qpn[1] == 18 &&
	      pl.qpn[2] == 0xffffff);
	CHECK(!parse("reconnect " GID " 17 33 " GID2 " 12"));
	CHECK(pl.step == PLINE_RECONNECT && pl.nqp == 1 && pl.qpn[0] == 17);
	/* keys: the pairs come first, the QPs after " . " */
	CHECK(!parse("keys " GID " 1a:2b,3c:4d . 17 . 18"));
	CHECK(pl.step == PLINE_KEYS && pl.nqp == 2 && pl.qpn[0] == 17 &&
	      pl.qpn[1] == 18);
	CHECK(parse("keys " GID " 1a:2b,3c:4d") &&
	      strstr(err, "keys line without QPs"));
	CHECK(!parse("resume " GID " 17 . 18") && pl.nqp == 2);
	CHECK(!parse("abort " GID " 17") && pl.step == PLINE_ABORT);
	CHECK(!parse("recvs " GID " 17 . 18") && pl.step == PLINE_RECVS &&
	      pl.nqp == 2 && pl.qpn[1] == 18);
	CHECK(!parse("fetch " GID " 17 18 19 00000000000000aa 0 -") &&
	      pl.step == PLINE_FETCH && pl.nqp == 1 && pl.qpn[0] == 17);

	/* faces: migrd's own step, made of a prepare's entries */
	CHECK(!parse("faces " GID " 17 18 10000 7 4 0 19 aa 20") &&
	      pl.step == PLINE_FACES && pl.nqp == 1);
	{
		uint32_t v = 0;

		CHECK(!pline_word(pl.at[0], PLINE_PARTNER_PHYS_WORD, &v) &&
		      v == 20);
		CHECK(!pline_word(pl.at[0], 0, &v) && v == 17);
		CHECK(pline_word(pl.at[0], 9, &v));
	}
	CHECK(!parse("prepare " GID " 17 18 . 19 20 10000 7 4 0 19 aa 21"));
	{
		uint32_t v = 0;

		/* an entry ends at " . ": the next one's words are not its */
		CHECK(pline_word(pl.at[0], 2, &v));
		CHECK(!pline_word(pl.at[1], PLINE_PARTNER_PHYS_WORD, &v) &&
		      v == 21);
	}

	/* Refused: what the library might read otherwise */
	CHECK(parse("fazes " GID " 17") && strstr(err, "no known step"));
	CHECK(parse("prepare") && strstr(err, "no known step"));
	CHECK(parse("resume " GID2 " 17") && strstr(err, "another GID"));
	CHECK(parse("resume " GID "0 17") && strstr(err, "another GID"));
	CHECK(parse("resume " GID) && strstr(err, "another GID"));
	CHECK(parse("resume  " GID " 17") && strstr(err, "another GID"));
	CHECK(parse("resume " GID "  17") && strstr(err, "invalid QP"));
	CHECK(parse("resume " GID " 16777216") && strstr(err, "invalid QP"));
	CHECK(parse("resume " GID " 4294967313") && strstr(err, "invalid QP"));
	CHECK(parse("resume " GID " 0x11") && strstr(err, "invalid QP"));
	CHECK(parse("resume " GID " 17 . ") && strstr(err, "invalid QP"));
	CHECK(parse("resume " GID " 17 . x") && strstr(err, "invalid QP"));
	CHECK(parse("resume " GID " -17") && strstr(err, "invalid QP"));
	/* At most 64 QPs, as the library takes them */
	n = snprintf(big, sizeof(big), "resume " GID " 1");
	for (i = 2; i <= PLINE_QPS_MAX; i++)
		n += snprintf(big + n, sizeof(big) - n, " . %d", i);
	CHECK(!parse(big) && pl.nqp == PLINE_QPS_MAX &&
	      pl.qpn[PLINE_QPS_MAX - 1] == PLINE_QPS_MAX);
	snprintf(big + n, sizeof(big) - n, " . 99");
	CHECK(parse(big) && strstr(err, "more than 64 QPs"));
	/* The line is never echoed */
	CHECK(parse("resume " GID " secret") && !strstr(err, "secret"));
}

static void reconnects(void)
{
	char gid[REQ_GID_LEN + 1];
	uint32_t q;

	CHECK(!parse("reconnect " GID " 17 33 " GID2 " 12 . 18 34 " GID " 0"));
	CHECK(!pline_reconnect(pl.at[0], &q, gid) && q == 33 &&
	      !strcmp(gid, GID2));
	CHECK(!pline_reconnect(pl.at[1], &q, gid) && q == 34 &&
	      !strcmp(gid, GID));
	CHECK(!pline_reconnect("17 33 " GID, &q, gid) && q == 33);
	CHECK(pline_reconnect("17 0 " GID " 1", &q, gid));
	CHECK(pline_reconnect("17 16777216 " GID " 1", &q, gid));
	CHECK(pline_reconnect("17 +33 " GID " 1", &q, gid));
	CHECK(pline_reconnect("17  33 " GID " 1", &q, gid));
	CHECK(pline_reconnect("17 33 " GID "0 1", &q, gid));
	CHECK(pline_reconnect("17 33 2001:db8::1 1", &q, gid));
	CHECK(pline_reconnect("17 33 20010DB8000000000000000000000001 1", &q,
			      gid));
	CHECK(pline_reconnect("17 33", &q, gid));
	CHECK(pline_reconnect("17", &q, gid));
}

static void grants(void)
{
	struct pauth_key k = { .pid = 100, .start = 5, .gid = GID, .qpn = 17 };
	struct pauth_key other;

	CHECK(!pauth_check(&k, 200, 1000));
	CHECK(!pauth_grant(&k, 200, 1000));
	CHECK(pauth_check(&k, 200, 2000));
	/* another partner pid, asker, start time, QP, GID or host: no */
	CHECK(!pauth_check(&k, 201, 2000));
	other = k;
	other.pid = 101;
	CHECK(!pauth_check(&other, 200, 2000));
	other = k;
	other.start = 6;
	CHECK(!pauth_check(&other, 200, 2000));
	other = k;
	other.qpn = 18;
	CHECK(!pauth_check(&other, 200, 2000));
	other = k;
	strcpy(other.gid, GID2);
	CHECK(!pauth_check(&other, 200, 2000));
	other = k;
	strcpy(other.host, "10.0.0.2");
	CHECK(!pauth_check(&other, 200, 2000));
	/* Each use renews the lease; past it the grant is gone */
	CHECK(pauth_check(&k, 200, 2000 + PAUTH_LEASE_MS - 1));
	CHECK(pauth_check(&k, 200, 2000 + 2 * PAUTH_LEASE_MS - 2));
	CHECK(!pauth_check(&k, 200, 2000 + 3 * PAUTH_LEASE_MS));
	CHECK(!pauth_grant(&k, 200, 0));
	/* the same QP number granted for a second partner process: both hold */
	CHECK(!pauth_grant(&k, 300, 0));
	CHECK(pauth_check(&k, 200, 1) && pauth_check(&k, 300, 1));
	pauth_drop(&k, 200);
	CHECK(!pauth_check(&k, 200, 1));
	CHECK(pauth_check(&k, 300, 1));
	pauth_drop(&k, 300);
	CHECK(!pauth_check(&k, 300, 1));
	/* A full table refuses new grants, not the ones it has */
	for (k.qpn = 0; k.qpn < PAUTH_MAX; k.qpn++)
		CHECK(!pauth_grant(&k, 200, 0));
	CHECK(pauth_grant(&k, 200, 0) < 0);
	k.qpn = 3;
	CHECK(!pauth_grant(&k, 200, 0));
	/* ... until they expire */
	k.qpn = PAUTH_MAX;
	CHECK(!pauth_grant(&k, 200, PAUTH_LEASE_MS));
}

/* A migration lists an asker's live grants, to give them on its new host */
static void moved(void)
{
	struct pauth_key k = { .pid = 400,
			       .start = 9,
			       .gid = GID,
			       .qpn = 0x11,
			       .host = "10.9.0.2" };
	struct pauth_key other = k;
	struct req_grant v[4];

	CHECK(pauth_list(400, 9, v, 4, 1) == 0);
	CHECK(!pauth_grant(&k, 500, 1));
	k.qpn = 0x12;
	k.host[0] = 0;
	CHECK(!pauth_grant(&k, 501, 1));
	/* another asker's, or the same pid's earlier process's: not listed */
	other.pid = 401;
	CHECK(!pauth_grant(&other, 500, 1));
	other.pid = 400;
	other.start = 8;
	CHECK(!pauth_grant(&other, 500, 1));
	CHECK(pauth_list(400, 9, v, 4, 2) == 2);
	CHECK(v[0].ppid == 500 && v[0].qpn == 0x11 && !strcmp(v[0].gid, GID) &&
	      !strcmp(v[0].host, "10.9.0.2"));
	CHECK(v[1].ppid == 501 && v[1].qpn == 0x12 && !v[1].host[0]);
	/* counted beyond max; expired ones are not */
	CHECK(pauth_list(400, 9, v, 1, 2) == 2);
	CHECK(pauth_list(400, 9, v, 4, 1 + PAUTH_LEASE_MS) == 0);
}

int main(void)
{
	lines();
	reconnects();
	grants();
	moved();
	return unit_done("test_pauth");
}
