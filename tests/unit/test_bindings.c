// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's bindings of virtual QP numbers to their owners (bindings.h) */
#include <stdio.h>
#include <string.h>

#include "bindings.h"
#include "registry.h"
#include "unit.h"

/* The processes that ended, by pid: registry.c reads /proc */
static int ended_pid;

bool proc_ended(int pid, unsigned long long start)
{
	return pid == ended_pid || start == 0;
}

static void owners(void)
{
	struct binding b;

	CHECK(!bind_find("rxe0", 41, &b, 0));
	bind_owner("rxe0", 41, 100, 7, 0);
	CHECK(bind_find("rxe0", 41, &b, 1) && !b.moved && b.pid == 100 &&
	      b.start == 7);
	/* a number is per device */
	CHECK(!bind_find("rxe1", 41, &b, 1));
	CHECK(!bind_find("rxe0", 42, &b, 1));
	/* bound again: the latest owner */
	bind_owner("rxe0", 41, 101, 8, 2);
	CHECK(bind_find("rxe0", 41, &b, 3) && b.pid == 101);
	CHECK(bind_count() == 1);
	/* its owner ended: dropped, not found */
	ended_pid = 101;
	CHECK(!bind_find("rxe0", 41, &b, 4) && bind_count() == 0);
	ended_pid = 0;
	bind_owner("rxe0", 43, 100, 7, 0);
	bind_drop("rxe0", 43);
	CHECK(!bind_find("rxe0", 43, &b, 1) && bind_count() == 0);
	/* a name too long for the table is not bound */
	bind_owner(
		"0123456789012345678901234567890123456789012345678901234567890123",
		1, 100, 7, 0);
	CHECK(bind_count() == 0);
}

static void moved(void)
{
	struct binding b;

	bind_owner("rxe0", 50, 100, 7, 0);
	bind_moved("rxe0", 50, "00000000000000ab", 1000);
	CHECK(bind_find("rxe0", 50, &b, 1000 + BIND_MOVED_MS) && b.moved &&
	      !strcmp(b.id, "00000000000000ab"));
	/* kept BIND_MOVED_MS, then the device's again */
	CHECK(!bind_find("rxe0", 50, &b, 1001 + BIND_MOVED_MS));
	CHECK(bind_count() == 0);
	/* a restore here binds it to its new owner */
	bind_moved("rxe0", 51, "00000000000000ab", 0);
	bind_owner("rxe0", 51, 200, 9, 5);
	CHECK(bind_find("rxe0", 51, &b, 6) && !b.moved && b.pid == 200);
	bind_drop("rxe0", 51);
}

/* Full: the stale go first, then the oldest; never more than BIND_MAX */
static void bounds(void)
{
	struct binding b;
	uint32_t q;

	for (q = 1; q <= BIND_MAX; q++)
		bind_owner("rxe0", q, q == 5 ? 300 : 100, 7, 10 + q);
	CHECK(bind_count() == BIND_MAX);
	ended_pid = 300;
	bind_owner("rxe1", 1, 100, 7, 100000);
	ended_pid = 0;
	CHECK(bind_count() == BIND_MAX && bind_find("rxe1", 1, &b, 100001));
	/* the stale one went, the oldest live one stays */
	CHECK(!bind_find("rxe0", 5, &b, 100001) &&
	      bind_find("rxe0", 1, &b, 100001));
	/* none stale: the oldest goes */
	bind_owner("rxe1", 2, 100, 7, 100002);
	CHECK(bind_count() == BIND_MAX && !bind_find("rxe0", 1, &b, 100003) &&
	      bind_find("rxe0", 2, &b, 100003) &&
	      bind_find("rxe1", 2, &b, 100003));
}

int main(void)
{
	owners();
	moved();
	bounds();
	return unit_done("migrd_bindings");
}
