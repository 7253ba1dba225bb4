// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A migration's image directories and their stream (images.h) */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "images.h"
#include "img_stream.h"
#include "migr_json.h"
#include "migrd.h"
#include "peer.h"
#include "req.h"
#include "wire.h"

#define IMG_FRAME_MS 30000 /* between two frames of a stream */

static int mkdir_ok(const char *p)
{
	return mkdir(p, 0700) && errno != EEXIST ? -1 : 0;
}

int img_path(const char *id, const char *sub, bool create, char *path,
	     size_t len, char *err, size_t errlen)
{
	const char *sd = migrd.conf.state_dir;

	snprintf(path, len, "%s/migrations", sd);
	if (create && (mkdir_ok(sd) || mkdir_ok(path)))
		goto fail;
	snprintf(path, len, "%s/migrations/%s", sd, id);
	if (create && mkdir_ok(path))
		goto fail;
	if (!sub)
		return 0;
	snprintf(path, len, "%s/migrations/%s/%s", sd, id, sub);
	if (create && mkdir(path, 0700))
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "cannot create %s: %s (migrd.conf: state_dir)",
		 path, strerror(errno));
	return -1;
}

static bool is_log(const char *name)
{
	size_t n = strlen(name);

	return (n > 4 && !strcmp(name + n - 4, ".log")) ||
	       !strcmp(name, "criu.out");
}

/*
 * Remove what dfd holds (a migration's directories hold no deeper ones);
 * CRIU's logs stay if keep_logs
 */
static void remove_in(int dfd, int depth, bool keep_logs)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int sub;

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_DIR && depth < 2) {
			sub = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (sub >= 0)
				remove_in(sub, depth + 1, keep_logs);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		} else if (!keep_logs || !is_log(e->d_name)) {
			unlinkat(dirfd(d), e->d_name, 0);
		}
	}
	closedir(d);
}

void img_remove(const char *id, bool keep_logs)
{
	char path[512], err[64];
	int fd;

	if (img_path(id, NULL, false, path, sizeof(path), err, sizeof(err)))
		return;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	remove_in(fd, 0, keep_logs);
	rmdir(path);
}

void img_sweep(bool (*each)(const char *id))
{
	char path[512];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/migrations", migrd.conf.state_dir);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && img_name_ok(e->d_name)) {
			if (!each(e->d_name))
				img_remove(e->d_name, true);
		}
	closedir(d);
}

#define RESTORING_MARK "restoring"

static bool boot_id(char *id, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool ok = f && fgets(id, len, f);

	if (f)
		fclose(f);
	if (ok)
		id[strcspn(id, "\n")] = 0;
	return ok;
}

/* Now, in the clock ticks of a process's start time (/proc/PID/stat) */
static unsigned long long boot_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * (unsigned long long)sysconf(_SC_CLK_TCK) +
	       ts.tv_nsec / (1000000000 / sysconf(_SC_CLK_TCK));
}

int img_mark_restoring(const char *dir, char *err, size_t errlen)
{
	char path[600], boot[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, RESTORING_MARK);
	f = fopen(path, "wxe");
	if (!f || !boot_id(boot, sizeof(boot)) ||
	    fprintf(f, "%s %llu\n", boot, boot_ticks()) < 0 || fclose(f)) {
		snprintf(err, errlen, "cannot write %.400s: %s", path,
			 strerror(errno ?: EIO));
		return -1;
	}
	return 0;
}

bool img_restoring(const char *dir, unsigned long long *t0)
{
	char path[600], boot[64], now_boot[64];
	FILE *f;
	int got;

	snprintf(path, sizeof(path), "%s/%s", dir, RESTORING_MARK);
	f = fopen(path, "re");
	if (!f)
		return false;
	got = fscanf(f, "%63s %llu", boot, t0);
	fclose(f);
	return got == 2 && boot_id(now_boot, sizeof(now_boot)) &&
	       !strcmp(boot, now_boot);
}

uint64_t img_pages_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	uint64_t n = 0;

	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "pages-", 6) &&
		    !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			n += st.st_size;
	if (d)
		closedir(d);
	return n;
}

static int send_text(struct peer_conn *pc, char *err, size_t errlen,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int send_text(struct peer_conn *pc, char *err, size_t errlen,
		     const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return peer_send(pc, buf, n, err, errlen);
}

static int send_file(struct peer_conn *pc, int dfd, const char *name,
		     uint8_t *buf, uint64_t *bytes, char *err, size_t errlen)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	uint64_t left;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "cannot read image %s: %s", name,
			 strerror(errno));
		goto fail;
	}
	if (send_text(pc, err, errlen, "file %s %" PRIu64, name,
		      (uint64_t)st.st_size))
		goto fail;
	for (left = st.st_size; left; left -= n) {
		n = read(fd, buf, left < WIRE_DATA_MAX ? left : WIRE_DATA_MAX);
		if (n <= 0) {
			snprintf(err, errlen, "reading image %s: %s", name,
				 n ? strerror(errno) : "it shrank");
			goto fail;
		}
		if (peer_send(pc, buf, n, err, errlen))
			goto fail;
		*bytes += n;
	}
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * Each file and link of directory d as a frame after the mig-put line,
 * then the end line; 0, or -1 with err
 */
static int send_entries(struct peer_conn *pc, DIR *d, uint8_t *buf,
			uint64_t *bytes, char *err, size_t errlen)
{
	unsigned int files = 0;
	char target[256];
	struct dirent *e;
	ssize_t n;

	while ((e = readdir(d))) {
		/* CRIU's logs stay here; everything else is the image */
		if (!img_name_ok(e->d_name) || is_log(e->d_name))
			continue;
		if (e->d_type == DT_LNK) {
			n = readlinkat(dirfd(d), e->d_name, target,
				       sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = 0;
			if (send_text(pc, err, errlen, "link %s %s", e->d_name,
				      target))
				return -1;
		} else if (e->d_type == DT_REG) {
			if (send_file(pc, dirfd(d), e->d_name, buf, bytes, err,
				      errlen))
				return -1;
		} else {
			continue;
		}
		files++;
	}
	return send_text(pc, err, errlen, "end %u %" PRIu64, files, *bytes);
}

/*
 * The destination's answer to a stream of sub: whatever happened, it
 * says most. 0 if it took it; else -1, with its error in err unless the
 * stream had failed already (ret), whose error err keeps
 */
static int put_answer(struct peer_conn *pc, int ret, const char *sub, char *err,
		      size_t errlen)
{
	struct sbuf reply = {};
	char spare[REQ_MAX];

	if (peer_reply(pc, ret ? 2000 : IMG_FRAME_MS, &reply, ret ? spare : err,
		       ret ? sizeof(spare) : errlen) == 0) {
		json_t *j = migr_json_parse(reply.p, reply.len);

		if (!migr_json_true(j, "ok")) {
			if (!migr_json_text(j, "error", err, errlen))
				snprintf(err, errlen,
					 "the destination refused %s", sub);
			ret = -1;
		}
		json_decref(j);
	} else {
		ret = -1;
	}
	sb_free(&reply);
	return ret;
}

int img_send(struct peer_conn *pc, const char *id, const char *sub,
	     uint64_t *bytes, char *err, size_t errlen)
{
	struct req r = { .op = REQ_MIG_PUT };
	uint8_t *buf = malloc(WIRE_DATA_MAX);
	char path[512], line[REQ_MAX];
	DIR *d = NULL;
	int ret = -1;

	*bytes = 0;
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.name, sizeof(r.name), "%s", sub);
	if (!buf || req_format(&r, line, sizeof(line)) < 0 ||
	    img_path(id, sub, false, path, sizeof(path), err, errlen)) {
		if (!buf)
			snprintf(err, errlen, "out of memory");
		goto out;
	}
	d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "cannot read %s: %s", path,
			 strerror(errno));
		goto out;
	}
	if (peer_send(pc, line, strlen(line), err, errlen))
		goto out;
	ret = send_entries(pc, d, buf, bytes, err, errlen);
out:
	ret = put_answer(pc, ret, sub, err, errlen);
	if (d)
		closedir(d);
	free(buf);
	return ret;
}

/* Room for size more bytes in the state directory, with some to spare */
static int room_for(int dfd, uint64_t size, char *err, size_t errlen)
{
	struct statvfs v;

	if (fstatvfs(dfd, &v))
		return 0;
	return img_room((uint64_t)v.f_bavail * v.f_frsize, size,
			migrd.conf.state_dir, err, errlen);
}

/* The file rx announced, its bytes from the frames that follow */
static int recv_file(struct peer_link *l, int dfd, struct img_rx *rx,
		     uint8_t *buf, char *err, size_t errlen)
{
	int fd;
	long n;

	if (room_for(dfd, rx->size, err, errlen))
		return -1;
	fd = openat(dfd, rx->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create image %s: %s", rx->name,
			 strerror(errno));
		return -1;
	}
	while (rx->left) {
		n = peer_link_read(l, buf, WIRE_DATA_MAX, IMG_FRAME_MS, err,
				   errlen);
		if (n < 0 || img_rx_frame(rx, buf, n, err, errlen) != IMG_DATA)
			goto fail;
		if (write(fd, buf, n) != n) {
			snprintf(err, errlen, "writing image %s: %s", rx->name,
				 strerror(errno));
			goto fail;
		}
	}
	if (close(fd)) {
		snprintf(err, errlen, "writing image %s: %s", rx->name,
			 strerror(errno));
		return -1;
	}
	return 0;
fail:
	close(fd);
	return -1;
}

/* sub's directory of migration id, made for a stream; its fd or -1 */
static int recv_dir(const char *id, const char *sub, char *err, size_t errlen)
{
	char path[512];
	int dfd;

	if (img_path(id, NULL, false, path, sizeof(path), err, errlen))
		return -1;
	if (access(path, F_OK)) {
		snprintf(err, errlen, "no migration %s here", id);
		return -1;
	}
	if (img_path(id, sub, true, path, sizeof(path), err, errlen))
		return -1;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
	return dfd;
}

/*
 * One frame of the stream, of n bytes in buf (room for one more), into
 * dfd: 1 for more, 0 at its end, -1 with err, IMG_BAD if it is not one
 */
static int recv_frame(struct peer_link *l, int dfd, struct img_rx *rx,
		      uint8_t *buf, long n, char *err, size_t errlen)
{
	switch (img_rx_frame(rx, buf, n, err, errlen)) {
	case IMG_FILE:
		return recv_file(l, dfd, rx, buf, err, errlen) ? -1 : 1;
	case IMG_LINK:
		if (symlinkat(rx->target, dfd, rx->name)) {
			snprintf(err, errlen, "cannot link %s: %s", rx->name,
				 strerror(errno));
			return -1;
		}
		return 1;
	case IMG_DONE:
		return 0;
	case IMG_FAIL:
		return -1;
	default:
		return IMG_BAD;
	}
}

int img_recv(struct peer_link *l, const char *id, const char *sub,
	     uint64_t *bytes, char *err, size_t errlen)
{
	uint8_t *buf = malloc(WIRE_DATA_MAX + 1);
	struct img_rx rx;
	int dfd, ret = 1;
	long n;

	*bytes = 0;
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	img_rx_init(&rx, sub);
	dfd = recv_dir(id, sub, err, errlen);
	while (dfd >= 0 && ret > 0) {
		n = peer_link_read(l, buf, WIRE_DATA_MAX, IMG_FRAME_MS, err,
				   errlen);
		ret = n < 0 ? -1 : recv_frame(l, dfd, &rx, buf, n, err, errlen);
	}
	*bytes = rx.bytes;
	if (ret == IMG_BAD)
		snprintf(err, errlen, "invalid image stream from %s (%s)",
			 peer_link_who(l), sub);
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return dfd < 0 || ret ? -1 : 0;
}
