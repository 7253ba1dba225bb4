// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Where a partner QP is (locate.h) */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "locate.h"

#define GID_HEX 32
#define PATH_LEN 512

/* path = a/b; false if it does not fit (then it is skipped) */
static bool join(char *path, const char *a, const char *b)
{
	int n = snprintf(path, PATH_LEN, "%s/%s", a, b);

	return n > 0 && n < PATH_LEN;
}

/* addr as an IPv6 address, IPv4 as IPv4-mapped; false if it is neither */
static bool to_in6(const char *addr, struct in6_addr *a)
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, addr, a) == 1)
		return true;
	if (inet_pton(AF_INET, addr, &a4) != 1)
		return false;
	memset(a, 0, sizeof(*a));
	a->s6_addr[10] = a->s6_addr[11] = 0xff;
	memcpy(&a->s6_addr[12], &a4, 4);
	return true;
}

bool addr_is_local(const char *addr)
{
	struct ifaddrs *ifs, *i;
	struct in6_addr want, have;
	bool found = false;

	if (!to_in6(addr, &want) || getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			memset(&have, 0, sizeof(have));
			have.s6_addr[10] = have.s6_addr[11] = 0xff;
			memcpy(&have.s6_addr[12],
			       &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
			       4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			have = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		} else {
			continue;
		}
		found = !memcmp(&want, &have, sizeof(want));
	}
	freeifaddrs(ifs);
	return found;
}

/* One GID table entry, "xxxx:xxxx:...:xxxx", as 32 lowercase hex digits */
static bool read_gid(const char *path, char hex[GID_HEX + 1])
{
	char buf[64];
	ssize_t n;
	int fd, i, k = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1); /* unused entries may fail */
	close(fd);
	if (n <= 0)
		return false;
	for (i = 0; i < n && buf[i] != '\n'; i++) {
		if (buf[i] == ':')
			continue;
		if (!isxdigit((unsigned char)buf[i]) || k == GID_HEX)
			return false;
		hex[k++] = tolower((unsigned char)buf[i]);
	}
	hex[k] = 0;
	return k == GID_HEX;
}

const char *twin_device(const char *name)
{
	size_t n = strlen(TWIN_PREFIX);

	return strncmp(name, TWIN_PREFIX, n) ? "" : name + n;
}

/* Does test(path of an entry, gid) hold for any entry of dir? */
static bool any_entry(const char *dir, const char *gid,
		      bool (*test)(const char *path, const char *gid))
{
	char path[PATH_LEN];
	struct dirent *e;
	bool found = false;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !join(path, dir, e->d_name))
			continue;
		found = test(path, gid);
	}
	closedir(d);
	return found;
}

/* The table entry gid_is() matched last (under memo_lock) */
static char hit[PATH_LEN];

static bool gid_is(const char *path, const char *gid)
{
	char hex[GID_HEX + 1];

	if (!read_gid(path, hex) || strcmp(hex, gid))
		return false;
	strcpy(hit, path);
	return true;
}

/* Does one port directory's GID table hold gid? */
static bool port_has(const char *port, const char *gid)
{
	char dir[PATH_LEN];

	return join(dir, port, "gids") && any_entry(dir, gid, gid_is);
}

static bool dev_has(const char *root, const char *dev, const char *gid)
{
	char dir[PATH_LEN], path[PATH_LEN];

	return join(path, root, dev) && join(dir, path, "ports") &&
	       any_entry(dir, gid, port_has);
}

/* Every device with gid, and the table entry where each has it */
static int scan(const char *root, const char *gid,
		char (*devs)[LOCATE_NAME_MAX], char (*paths)[PATH_LEN])
{
	struct dirent *e;
	int n = 0;
	DIR *d;

	d = opendir(root);
	if (!d)
		return -1;
	while (n < LOCATE_DEV_MAX && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= LOCATE_NAME_MAX)
			continue;
		if (!dev_has(root, e->d_name, gid))
			continue;
		strcpy(devs[n], e->d_name);
		strcpy(paths[n++], hit);
	}
	closedir(d);
	return n;
}

/*
 * A scan reads every entry of every GID table (rxe has 1024 per port):
 * a third of a second on an idle TCG guest, seconds on a busy one, for
 * each QP a partner request names. What was found is kept and trusted
 * while each entry found still holds the GID, up to MEMO_KEEP_S; a
 * device that took the GID since is seen by a recheck (a caller that
 * missed) once the result is MEMO_S old.
 */
#define MEMO_N 8
#define MEMO_S 10
#define MEMO_KEEP_S 600

struct gid_memo {
	char root[PATH_LEN], gid[GID_HEX + 1];
	int n;
	char devs[LOCATE_DEV_MAX][LOCATE_NAME_MAX];
	char paths[LOCATE_DEV_MAX][PATH_LEN];
	time_t at;
};

static struct gid_memo memo[MEMO_N];
static unsigned int memo_next;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* A result for gid younger than max_age s whose entries still hold it */
static struct gid_memo *remembered(const char *root, const char *gid,
				   time_t max_age)
{
	struct gid_memo *m;
	int i, j;

	for (i = 0; i < MEMO_N; i++) {
		m = &memo[i];
		if (!m->n || strcmp(m->gid, gid) || strcmp(m->root, root) ||
		    now_s() - m->at >= max_age)
			continue;
		for (j = 0; j < m->n; j++)
			if (!gid_is(m->paths[j], gid))
				break;
		if (j == m->n)
			return m;
		m->n = 0;
	}
	return NULL;
}

static void forget(const char *root, const char *gid)
{
	int i;

	for (i = 0; i < MEMO_N; i++)
		if (!strcmp(memo[i].gid, gid) && !strcmp(memo[i].root, root))
			memo[i].n = 0;
}

static int lookup(const char *root, const char *gid,
		  char (*devs)[LOCATE_NAME_MAX], int max, time_t max_age)
{
	struct gid_memo *m;
	int n, i;

	if (strlen(gid) != GID_HEX ||
	    strspn(gid, "0") == GID_HEX) /* an unused entry */
		return 0;
	if (strlen(root) >= PATH_LEN) {
		errno = ENAMETOOLONG;
		return -1;
	}
	pthread_mutex_lock(&memo_lock);
	m = remembered(root, gid, max_age);
	if (!m) {
		forget(root, gid);
		m = &memo[memo_next++ % MEMO_N];
		n = scan(root, gid, m->devs, m->paths);
		m->n = n > 0 ? n : 0;
		strcpy(m->root, root);
		strcpy(m->gid, gid);
		m->at = now_s();
		if (n <= 0) {
			pthread_mutex_unlock(&memo_lock);
			return n;
		}
	}
	n = m->n < max ? m->n : max;
	for (i = 0; i < n; i++)
		strcpy(devs[i], m->devs[i]);
	pthread_mutex_unlock(&memo_lock);
	return n;
}

int gid_devices(const char *root, const char *gid,
		char (*devs)[LOCATE_NAME_MAX], int max)
{
	return lookup(root, gid, devs, max, MEMO_KEEP_S);
}

int gid_devices_recheck(const char *root, const char *gid,
			char (*devs)[LOCATE_NAME_MAX], int max)
{
	return lookup(root, gid, devs, max, MEMO_S);
}
