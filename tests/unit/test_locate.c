// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's partner lookup: this host's addresses, devices by GID */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "locate.h"
#include "unit.h"

#define GID_A "fe80:0000:0000:0000:0200:00ff:fe00:0001"
#define HEX_A "fe80000000000000020000fffe000001"
#define GID_B "0000:0000:0000:0000:0000:ffff:0a09:0002"
#define HEX_B "00000000000000000000ffff0a090002"
#define GID_0 "0000:0000:0000:0000:0000:0000:0000:0000"

static char root[64];

static void put(const char *dev, int port, int idx, const char *gid)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, dev);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports", root, dev);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports/%d", root, dev, port);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports/%d/gids", root, dev, port);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/ports/%d/gids/%d", root, dev, port,
		 idx);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", gid);
		fclose(f);
	}
}

static int has(char (*devs)[LOCATE_NAME_MAX], int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(devs[i], name))
			return 1;
	return 0;
}

static void test_gid(void)
{
	char devs[LOCATE_DEV_MAX][LOCATE_NAME_MAX], cmd[128];
	int n;

	strcpy(root, "/tmp/migr-locate-XXXXXX");
	if (!mkdtemp(root)) {
		CHECK(0);
		return;
	}
	put("rxe0", 1, 0, GID_A);
	put("rxe0", 1, 1, GID_B);
	put("rxe1", 1, 0, GID_0);
	put("rxe1", 1, 1, GID_B); /* a twin on the same netdev */
	put("mlx5_0", 1, 0, GID_0);
	put("mlx5_0", 2, 3, "FE80:0000:0000:0000:0200:00FF:FE00:0001");
	put("odd", 1, 0, "fe80::1");

	n = gid_devices(root, HEX_A, devs, LOCATE_DEV_MAX);
	CHECK(n == 2 && has(devs, n, "rxe0") && has(devs, n, "mlx5_0"));
	n = gid_devices(root, HEX_B, devs, LOCATE_DEV_MAX);
	CHECK(n == 2 && has(devs, n, "rxe0") && has(devs, n, "rxe1"));
	CHECK(gid_devices(root, HEX_B, devs, 1) == 1);
	/* unused entries never match, nor does anything unknown */
	CHECK(gid_devices(root, "00000000000000000000000000000000", devs,
			  LOCATE_DEV_MAX) == 0);
	CHECK(gid_devices(root, "fe800000000000000000000000000001", devs,
			  LOCATE_DEV_MAX) == 0);
	CHECK(gid_devices(root, "fe80", devs, LOCATE_DEV_MAX) == 0);
	CHECK(gid_devices("/nonexistent/migr", HEX_A, devs, LOCATE_DEV_MAX) ==
	      -1);

	/* Remembered, but not past a change of an entry it found */
	put("rxe0", 1, 1, GID_A);
	n = gid_devices(root, HEX_B, devs, LOCATE_DEV_MAX);
	CHECK(n == 1 && has(devs, n, "rxe1"));
	n = gid_devices(root, HEX_A, devs, LOCATE_DEV_MAX);
	CHECK(n == 2 && has(devs, n, "rxe0") && has(devs, n, "mlx5_0"));
	put("mlx5_0", 2, 3, GID_0);
	n = gid_devices(root, HEX_A, devs, LOCATE_DEV_MAX);
	CHECK(n == 1 && has(devs, n, "rxe0"));
	/* a device that takes it since is not scanned for (seconds) ... */
	put("rxe2", 1, 0, GID_A);
	n = gid_devices(root, HEX_A, devs, LOCATE_DEV_MAX);
	CHECK(n == 1 && has(devs, n, "rxe0"));
	/* ... nor by a recheck of a result less than 10 s old */
	n = gid_devices_recheck(root, HEX_A, devs, LOCATE_DEV_MAX);
	CHECK(n == 1 && has(devs, n, "rxe0"));
	/* but once an entry found changes, all is scanned again */
	put("rxe0", 1, 0, GID_0);
	put("rxe0", 1, 1, GID_0);
	n = gid_devices(root, HEX_A, devs, LOCATE_DEV_MAX);
	CHECK(n == 1 && has(devs, n, "rxe2"));

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

static void test_addr(void)
{
	CHECK(addr_is_local("127.0.0.1"));
	CHECK(addr_is_local("::ffff:127.0.0.1"));
	CHECK(!addr_is_local("192.0.2.1")); /* TEST-NET-1 */
	CHECK(!addr_is_local("2001:db8::1"));
	CHECK(!addr_is_local("localhost"));
	CHECK(!addr_is_local(""));
}

int main(void)
{
	test_gid();
	test_addr();
	return unit_done("locate");
}
