// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * migr's CRIU plugin (/usr/lib/criu/migr_plugin.so). A migr process that
 * was parked (its RDMA objects released, no device file or mapping held:
 * see providers-migr/park.h) is an ordinary process to CRIU; this plugin
 * makes the rest safe:
 *
 * - pre-dump: live uverbs mappings are accepted (HANDLE_DEVICE_VMA), or
 *   every pre-copy round of an RDMA process would fail; they are shared
 *   device memory, not the process's pages;
 * - dump: a process that still holds a uverbs file, its event file or a
 *   mapping is refused, naming the pid and the file (not parked, or not a
 *   migr process); a dumped migr process records the plugin in the
 *   inventory, so the restoring CRIU must load it too;
 * - dumps migrctl did not start (runc, crun, podman): an unparked migr
 *   process is asked to park (PAUSE_DEVICES, bounded), and resumed where
 *   it was if the dump fails;
 * - restore: the restored process is told to resume (RESUME_DEVICES_LATE),
 *   on MIGR_RESUME_DEVICE if set: the request waits in its socket until it
 *   runs again; not when migrd restores it (MIGR_RESUME_BY=migrd), which
 *   resumes it itself once this host knows what it needs (the grants of
 *   its partner sessions).
 *
 * Hooks answer -ENOTSUP for processes that are not theirs: CRIU stops at
 * the first plugin that answers anything else.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criu/criu-plugin.h>

#include "ask.h"
#include "ctl_line.h"
#include "ctl_reply.h"
#include "ctl_resume.h"
#include "proc_scan.h"

#define PLUGIN_NAME "migr"
/* A park drains the send queues (migr's default bound 5 s) and releases */
#define PARK_TIMEOUT_MS 20000
/*
 * A runtime's restore may come much later than its dump, or never: the
 * process's partners in other processes hold their posts toward it for
 * the longest lease a partner grants (10 min), then go on without it
 */
static const struct ctl_req park_req = { .op = CTL_PARK,
					 .nargs = 2,
					 .wait_ms = CTL_WAIT_DEFAULT_MS,
					 .lease_ms = CTL_LEASE_MAX_MS };
/* The longest reply read: a park's or a resume's report */
#define REPLY_MAX 16384
#define MAX_PAUSED 256

/* CRIU's own, found at load time in the criu binary (weak: tests) */
extern void print_on_level(unsigned int level, const char *fmt, ...)
	__attribute__((weak, format(printf, 2, 3)));
extern int add_inventory_plugin(const char *name) __attribute__((weak));
extern bool check_and_remove_inventory_plugin(const char *name, size_t n)
	__attribute__((weak));

enum { LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3 };

static void say(unsigned int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(unsigned int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (print_on_level)
		print_on_level(level, "migr: %s\n", msg);
	else
		fprintf(stderr, "migr: %s\n", msg);
}

static int stage = -1;
static bool restore_active; /* the dump recorded us */
static bool recorded; /* in this dump's inventory already */
/* processes this plugin parked itself: resumed if the dump fails */
static pid_t paused[MAX_PAUSED];
static unsigned int npaused;

static int migr_plugin_init(int st)
{
	stage = st;
	recorded = false;
	npaused = 0;
	if (st == CR_PLUGIN_STAGE__RESTORE)
		restore_active = check_and_remove_inventory_plugin &&
				 check_and_remove_inventory_plugin(
					 PLUGIN_NAME, strlen(PLUGIN_NAME));
	return 0;
}

static void migr_plugin_exit(int st, int ret)
{
	char reply[512], line[16];
	unsigned int i;

	if (st != CR_PLUGIN_STAGE__DUMP || !ret)
		return;
	ctl_format(&(struct ctl_req){ .op = CTL_RESUME }, line, sizeof(line));
	/* The dump failed: what we parked runs on where it was */
	for (i = 0; i < npaused; i++) {
		if (migr_ask(paused[i], line, reply, sizeof(reply),
			     PARK_TIMEOUT_MS))
			say(LOG_ERROR,
			    "pid %d: resume after the failed dump: %s",
			    paused[i], reply);
		else
			say(LOG_INFO, "pid %d resumed after the failed dump",
			    paused[i]);
	}
	npaused = 0;
}

static int handle_device_vma(int fd, const struct stat *st)
{
	char path[64], target[256];
	ssize_t n;

	if (!S_ISCHR(st->st_mode) || !migr_is_uverbs(st->st_rdev))
		return -ENOTSUP;
	if (stage == CR_PLUGIN_STAGE__PRE_DUMP)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = 0;
	say(LOG_ERROR,
	    "a process maps %s: it is not parked (migrctl migrate parks migr processes; other RDMA processes cannot be dumped)",
	    n > 0 ? target : "an RDMA device");
	return -EBUSY;
}

static int dump_ext_file(int fd, int id)
{
	char path[64], target[256];
	ssize_t n;

	(void)id;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return -ENOTSUP;
	target[n] = 0;
	if (strncmp(target, "/dev/infiniband/uverbs", 22) &&
	    strcmp(target, "anon_inode:[infinibandevent]"))
		return -ENOTSUP;
	say(LOG_ERROR,
	    "a process holds %s: it is not parked (migrctl migrate parks migr processes; other RDMA processes cannot be dumped)",
	    target);
	return -EBUSY;
}

/* Best effort for dumps migrctl did not start: park what is not parked */
static int pause_devices(int pid)
{
	static char reply[REPLY_MAX];
	char what[320], line[64];

	if (stage != CR_PLUGIN_STAGE__DUMP || !migr_is_migr(pid) ||
	    migr_scan_rdma(pid, what, sizeof(what)) != 1)
		return -ENOTSUP;
	say(LOG_INFO, "pid %d holds %s: asking it to park", pid, what);
	ctl_format(&park_req, line, sizeof(line));
	if (migr_ask(pid, line, reply, sizeof(reply), PARK_TIMEOUT_MS) ||
	    !ctl_reply_ok(reply)) {
		/* CHECKPOINT_DEVICES refuses it with the reason */
		say(LOG_ERROR, "pid %d did not park: %.300s", pid, reply);
		return -ENOTSUP;
	}
	if (npaused < MAX_PAUSED)
		paused[npaused++] = pid;
	return -ENOTSUP;
}

/* All tasks frozen: none may hold a device; migr ones need us at restore */
static int checkpoint_devices(int pid)
{
	char what[320];
	int ret;

	if (stage != CR_PLUGIN_STAGE__DUMP)
		return -ENOTSUP;
	ret = migr_scan_rdma(pid, what, sizeof(what));
	if (ret == 1) {
		say(LOG_ERROR, "pid %d holds %s: it is not parked (%s)", pid,
		    what,
		    migr_is_migr(pid) ?
			    "park it first: migrctl migrate does" :
			    "not a migr process: run it on a migr_ device to make it migratable");
		return -EBUSY;
	}
	if (ret < 0) {
		say(LOG_ERROR, "pid %d: reading /proc/%d failed: %s", pid, pid,
		    strerror(errno));
		return -EIO;
	}
	if (!recorded && migr_is_migr(pid)) {
		if (add_inventory_plugin && add_inventory_plugin(PLUGIN_NAME)) {
			say(LOG_ERROR,
			    "recording the plugin in the inventory failed");
			return -ENOMEM;
		}
		recorded = true;
	}
	return -ENOTSUP;
}

/* Stopped before it runs again: the resume waits in its socket */
static int resume_devices_late(int pid)
{
	char reply[512], line[80];

	if (!restore_active || !migr_is_migr(pid))
		return -ENOTSUP;
	if (ctl_resumer() == CTL_RESUMER_MIGRD) {
		say(LOG_INFO, "pid %d: migrd resumes it", pid);
		return -ENOTSUP;
	}
	/* on MIGR_RESUME_DEVICE (migrd sets it), else the device it left */
	ctl_resume_line(line, sizeof(line));
	if (migr_ask(pid, line, reply, sizeof(reply), -1))
		say(LOG_ERROR, "pid %d: queueing its resume failed: %s", pid,
		    reply);
	else
		say(LOG_INFO, "pid %d: resume queued", pid);
	return -ENOTSUP;
}

CR_PLUGIN_REGISTER(PLUGIN_NAME, migr_plugin_init, migr_plugin_exit)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA, handle_device_vma)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__DUMP_EXT_FILE, dump_ext_file)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__PAUSE_DEVICES, pause_devices)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__CHECKPOINT_DEVICES, checkpoint_devices)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE,
			resume_devices_late)
