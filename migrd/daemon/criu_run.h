/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Running the host's CRIU (migrd.conf "criu") for a migration, bounded */
#ifndef MIGRD_CRIU_RUN_H
#define MIGRD_CRIU_RUN_H

#include <stddef.h>
#include <sys/types.h>

/*
 * criu with args (a NULL-terminated list, without the program) in dir,
 * its output in dir/criu.out, killed after timeout_ms. migr's plugin
 * leaves a process it restores parked: migrd resumes it
 * (MIGR_RESUME_BY=migrd). 0 when it exited 0; else -1 with err naming
 * what (its first "Error" line of log, a file in dir, if there is one).
 */
int criu_run(const char *const args[], const char *dir, const char *log,
	     int timeout_ms, char *err, size_t errlen);
/* The same with fd3, if not -1, as CRIU's fd 3 (its --inherit-fd fd[3]) */
int criu_run_fd(const char *const args[], const char *dir, const char *log,
		int fd3, int timeout_ms, char *err, size_t errlen);

/*
 * A CRIU an earlier migrd left running (it died mid-restore): CRIU works
 * in its images directory, so every process whose working directory is
 * dir or below is killed (at most 16), and waited for up to 5 s. How many.
 */
int criu_kill_in(const char *dir);

/* Wait for a child within timeout_ms: its wait status, or -1 (killed) */
int criu_wait_bounded(pid_t pid, int timeout_ms);

/*
 * The version "criu --version" prints ("4.1.1"), run in dir; 0 or -1.
 * Then, once per boot, CRIU's kernel probe, so no dump or restore waits
 * for it
 */
int criu_version(const char *dir, char *ver, size_t len, char *err,
		 size_t errlen);

/*
 * At start, in the background: CRIU's kernel probe, unless this boot has
 * it, so the first migration's checks do not wait for it (seconds, and
 * on each host, in a slow guest)
 */
void criu_warm_at_start(void);

#define CRIU_PLUGIN "migr_plugin.so"

/*
 * Is migr's plugin missing from migrd.conf's criu_plugins? -1 with err
 * (where: " here", or "" for the destination's answer), else 0
 */
int criu_plugin_missing(const char *where, char *err, size_t errlen);

#endif
