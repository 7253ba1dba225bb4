// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CRIU runs as a child of migrd: prepared before fork() (migrd has
 * threads: the child only calls what is safe there), waited for through
 * a pidfd within its bound, killed past it
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criu_run.h"
#include "ctl_resume.h"
#include "log.h"
#include "migrd.h"
#include "sockio.h"

#define CRIU_ARGS_MAX 32

/* Its first error line in dir/log, the cause (later ones follow from it) */
static void first_error(const char *dir, const char *log, char *buf, size_t len)
{
	char path[512], line[512], *e, *nl;
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, log);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		e = strstr(line, "Error (");
		if (!e)
			continue;
		nl = strchr(e, '\n');
		if (nl)
			*nl = 0;
		snprintf(buf, len, "%s", e);
		break;
	}
	fclose(f);
}

static void __attribute__((noreturn))
child(const char *prog, char *const argv[], char *const envp[], const char *dir,
      int out, int fd3)
{
	sigset_t none;
	int in = open("/dev/null", O_RDONLY);

	/* migrd's blocked and ignored signals are not CRIU's */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
	    chdir(dir))
		_exit(126);
	/* fd 3: what --inherit-fd names (dup2 drops O_CLOEXEC) */
	if (fd3 == 3 ? fcntl(3, F_SETFD, 0) : fd3 >= 0 && dup2(fd3, 3) < 0)
		_exit(126);
	setsid();
	execve(prog, argv, envp);
	_exit(127);
}

int criu_wait_bounded(pid_t pid, int timeout_ms)
{
	int pfd = syscall(SYS_pidfd_open, pid, 0), status = 0;
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	int rc;

	if (pfd >= 0) {
		do {
			rc = poll(&p, 1, timeout_ms);
		} while (rc < 0 && errno == EINTR);
		close(pfd);
		if (rc == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Is pid's working directory dir or below it? */
static bool works_in(const char *pid, const char *dir)
{
	char path[300], cwd[600];
	size_t n = strlen(dir);
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%s/cwd", pid);
	len = readlink(path, cwd, sizeof(cwd) - 1);
	if (len < 0)
		return false;
	cwd[len] = 0;
	return !strncmp(cwd, dir, n) && (!cwd[n] || cwd[n] == '/');
}

int criu_kill_in(const char *dir)
{
	int pfds[16], n = 0, i;
	struct pollfd p;
	struct dirent *d;
	long long until;
	DIR *proc;

	proc = opendir("/proc");
	while (proc && n < 16 && (d = readdir(proc))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
		    !works_in(d->d_name, dir))
			continue;
		pfds[n] = syscall(SYS_pidfd_open, atoi(d->d_name), 0);
		if (pfds[n] >= 0 &&
		    !syscall(SYS_pidfd_send_signal, pfds[n], SIGKILL, NULL, 0))
			n++;
		else if (pfds[n] >= 0)
			close(pfds[n]);
	}
	if (proc)
		closedir(proc);
	/* gone before what it restored is looked for: it adds no more */
	until = io_now_ms() + 5000;
	for (i = 0; i < n; i++) {
		p = (struct pollfd){ .fd = pfds[i], .events = POLLIN };
		while (poll(&p, 1, io_left_ms(until)) < 0 && errno == EINTR)
			;
		close(pfds[i]);
	}
	return n;
}

int criu_run(const char *const args[], const char *dir, const char *log,
	     int timeout_ms, char *err, size_t errlen)
{
	return criu_run_fd(args, dir, log, -1, timeout_ms, err, errlen);
}

int criu_run_fd(const char *const args[], const char *dir, const char *log,
		int fd3, int timeout_ms, char *err, size_t errlen)
{
	char *argv[CRIU_ARGS_MAX + 2], *envp[3], path[512], why[400];
	int out, status, n = 0;
	pid_t pid;

	static char criu[] = "criu",
		    path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		    resume_env[] = CTL_RESUME_BY_MIGRD_ENV;

	argv[n++] = criu;
	while (args[n - 1] && n <= CRIU_ARGS_MAX)
		argv[n] = (char *)args[n - 1], n++;
	argv[n] = NULL;
	envp[0] = path_env;
	envp[1] = resume_env;
	envp[2] = NULL;
	snprintf(path, sizeof(path), "%s/criu.out", dir);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path,
			 strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0)
		child(migrd.conf.criu, argv, envp, dir, out, fd3);
	close(out);
	if (pid < 0) {
		snprintf(err, errlen, "cannot run %s: %s", migrd.conf.criu,
			 strerror(errno));
		return -1;
	}
	status = criu_wait_bounded(pid, timeout_ms);
	if (status == 0)
		return 0;
	why[0] = 0;
	if (log)
		first_error(dir, log, why, sizeof(why));
	if (status < 0)
		snprintf(err, errlen,
			 "criu %s ran over its %d s and was killed", args[0],
			 timeout_ms / 1000);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		snprintf(err, errlen, "cannot run %s (migrd.conf: criu)",
			 migrd.conf.criu);
	else if (WIFEXITED(status))
		snprintf(err, errlen, "criu %s failed (exit %d)%s%s", args[0],
			 WEXITSTATUS(status), why[0] ? ": " : "", why);
	else
		snprintf(err, errlen, "criu %s died of signal %d", args[0],
			 WTERMSIG(status));
	log_warn("%s (see %s/%s)", err, dir, log ? log : "criu.out");
	return -1;
}

int criu_plugin_missing(const char *where, char *err, size_t errlen)
{
	char path[sizeof(migrd.conf.criu_plugins) + 32];

	snprintf(path, sizeof(path), "%s/%s", migrd.conf.criu_plugins,
		 CRIU_PLUGIN);
	if (!access(path, R_OK))
		return 0;
	snprintf(
		err, errlen,
		"migr's CRIU plugin is not installed%s (%s; package migr-criu-plugin)",
		where, path);
	return -1;
}

/*
 * CRIU probes the kernel on its first run after a boot and keeps what it
 * found in /run/criu.kdat: seconds, on a slow host, that would otherwise
 * fall into a migration's blackout
 */
static void warm_kdat(const char *dir)
{
	static const char *const args[] = { "check", NULL };
	char err[256];

	if (!access("/run/criu.kdat", F_OK))
		return;
	if (criu_run(args, dir, NULL, 60000, err, sizeof(err)))
		log_info("criu check (its kernel probe, ahead of a dump): %s",
			 err);
}

static void *warm_thread(void *arg)
{
	char dir[sizeof(migrd.conf.state_dir) + 16];

	(void)arg;
	snprintf(dir, sizeof(dir), "%s/probe", migrd.conf.state_dir);
	if ((mkdir(migrd.conf.state_dir, 0700) && errno != EEXIST) ||
	    (mkdir(dir, 0700) && errno != EEXIST))
		return NULL;
	warm_kdat(dir);
	return NULL;
}

void criu_warm_at_start(void)
{
	pthread_attr_t attr;
	pthread_t th;

	if (access(migrd.conf.criu, X_OK) || !access("/run/criu.kdat", F_OK))
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, warm_thread, NULL))
		log_info("criu check ahead of the first migration: no thread");
	pthread_attr_destroy(&attr);
}

/*
 * The version said by the CRIU binary last asked, kept while the file is
 * the same (a check on each side of every migration ran it: a second or
 * more in a busy guest)
 */
static struct {
	pthread_mutex_t lock;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char ver[64];
} known = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool same_file(const struct stat *st)
{
	return known.ver[0] && st->st_dev == known.dev &&
	       st->st_ino == known.ino &&
	       st->st_mtim.tv_sec == known.mtime.tv_sec &&
	       st->st_mtim.tv_nsec == known.mtime.tv_nsec;
}

int criu_version(const char *dir, char *ver, size_t len, char *err,
		 size_t errlen)
{
	static const char *const args[] = { "--version", NULL };
	char path[512], line[128], v[64];
	struct stat st;
	FILE *f;
	int ret = -1;

	if (access(migrd.conf.criu, X_OK) || stat(migrd.conf.criu, &st)) {
		snprintf(err, errlen, "no CRIU at %s (install criu)",
			 migrd.conf.criu);
		return -1;
	}
	pthread_mutex_lock(&known.lock);
	if (same_file(&st)) {
		snprintf(ver, len, "%s", known.ver);
		pthread_mutex_unlock(&known.lock);
		warm_kdat(dir);
		return 0;
	}
	pthread_mutex_unlock(&known.lock);
	if (criu_run(args, dir, NULL, 10000, err, errlen))
		return -1;
	snprintf(path, sizeof(path), "%s/criu.out", dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Version: %63s", v) == 1) {
			snprintf(ver, len, "%s", v);
			ret = 0;
			break;
		}
	if (f)
		fclose(f);
	if (ret) {
		snprintf(err, errlen, "%s --version did not say its version",
			 migrd.conf.criu);
		return ret;
	}
	pthread_mutex_lock(&known.lock);
	known.dev = st.st_dev;
	known.ino = st.st_ino;
	known.mtime = st.st_mtim;
	snprintf(known.ver, sizeof(known.ver), "%s", v);
	pthread_mutex_unlock(&known.lock);
	warm_kdat(dir);
	return ret;
}
