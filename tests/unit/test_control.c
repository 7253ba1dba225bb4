// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The control socket (providers-migr/serve/control.c) against hostile
 * clients: another user's connections, clients that vanish before their
 * reply or never send, a reply carrying injected JSON, a squatted socket
 * name.
 * Everything control.c calls beyond the socket is stubbed here. Needs
 * root (a child connects as another uid); exits 77 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "ctl_line.h"
#include "park.h"
#include "partner.h"
#include "switch.h"
#include "ud_serve.h"
#include "unit.h"
#include "unit_migrd.h"
#include "verbs.h"

/* control.c's MAX_CONNS */
#define CAP 16
#define NOBODY 65534

/*
 * Weak: against a control.c without it this still links and the checks
 * that need it fail, rather than the test not building.
 */
bool migr_control_listening(void) __attribute__((weak));

/* The text of the switch failure: quotes and a newline to break out */
#define INJECT "boom\",\"ok\":true,\"x\":\"\nsecond line"

static char logged[1024];

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...)
{
	va_list ap;

	if (level != VERBS_LOG_ERR)
		return;
	va_start(ap, fmt);
	vsnprintf(logged, sizeof(logged), fmt, ap);
	va_end(ap);
}

int migr_switch(struct migr_context **ctxs, unsigned int n, const char *target,
		unsigned int wait_ms, struct migr_switch_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->contexts = n;
	snprintf(rep->from, sizeof(rep->from), "migr_test0");
	snprintf(rep->to, sizeof(rep->to), "%s", target ? target : "");
	snprintf(rep->error, sizeof(rep->error), "%s", INJECT);
	return EIO;
}

/* The park layer's stand-in: parked after "park", until "resume" */
static bool parked_now;
static unsigned int park_wait_ms, park_lease_ms;
static uint64_t resume_token;
/* what the stand-in's next resume says it left behind, if anything */
static const char *resume_lost;

int migr_park(struct migr_context **ctxs, unsigned int n, unsigned int wait_ms,
	      unsigned int lease_ms, struct migr_switch_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->contexts = n;
	rep->qps = 3;
	snprintf(rep->from, sizeof(rep->from), "migr_test0");
	park_wait_ms = wait_ms;
	park_lease_ms = lease_ms;
	parked_now = true;
	return 0;
}

int migr_resume(const char *target, uint64_t token,
		struct migr_switch_report *rep)
{
	resume_token = token;
	memset(rep, 0, sizeof(*rep));
	snprintf(rep->to, sizeof(rep->to), "%s",
		 target ? target : "migr_test0");
	if (resume_lost)
		snprintf(rep->partner_error, sizeof(rep->partner_error), "%s",
			 resume_lost);
	if (!parked_now) {
		snprintf(rep->error, sizeof(rep->error),
			 "the process is not parked");
		return ENOENT;
	}
	parked_now = false;
	return 0;
}

bool migr_parked(struct migr_switch_report *rep)
{
	if (parked_now && rep) {
		memset(rep, 0, sizeof(*rep));
		rep->contexts = 1;
		rep->qps = 3;
		snprintf(rep->from, sizeof(rep->from), "migr_test0");
	}
	return parked_now;
}

void migr_partner_serve(FILE *out, const char *line)
{
	fprintf(out, "{\"ok\":false}\n");
}

void migr_ud_serve(FILE *out, const char *line)
{
	fprintf(out, "{\"ok\":false}\n");
}

const char *migr_record_blocker(struct migr_context *ctx)
{
	return "ibv_x \"y\"";
}

int migr_quiesce_init(void)
{
	return 0;
}

bool migr_xlate_phys_of(struct migr_xlate *x, enum migr_xlate_kind kind,
			uint32_t virt, uint32_t *phys)
{
	return false;
}

void migr_qp_update_slow(struct migr_qp *mqp)
{
}

static struct ibv_device fake_dev = { .name = "migr_test0" };
static struct migr_context mctx;

static void fake_ctx_init(void)
{
	mctx.vctx.context.device = &fake_dev;
	pthread_rwlock_init(&mctx.ctl_lock, NULL);
	pthread_mutex_init(&mctx.rec.lock, NULL);
	list_head_init(&mctx.rec.qps);
	list_head_init(&mctx.rec.mrs);
	list_head_init(&mctx.rec.mws);
}

static double now(void)
{
	return now_ms();
}

/* A connected socket to "migr/<pid>", or -1 */
static int connect_ctl(pid_t pid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "migr/%d",
		       pid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, len)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Read until EOF, an error or ms: bytes read, -1 on error or time out */
static ssize_t read_all(int fd, char *buf, size_t size, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	double end = now() + ms;
	size_t len = 0;

	while (len < size - 1) {
		ssize_t n;
		int left = end - now();

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0)
			return -1;
		if (!n)
			break;
		len += n;
	}
	buf[len] = 0;
	return len;
}

/* Send req, read the whole reply into buf; its length or -1 */
static ssize_t request(const char *req, char *buf, size_t size)
{
	ssize_t n = -1;
	int fd = connect_ctl(getpid());

	if (fd < 0)
		return -1;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req))
		n = read_all(fd, buf, size, 5000);
	close(fd);
	return n;
}

/* request(), again for a while if a full server closes on us */
static ssize_t request_retry(const char *req, char *buf, size_t size)
{
	double end = now() + 5000;
	ssize_t n;

	do {
		n = request(req, buf, size);
		if (n > 0)
			return n;
		usleep(100000);
	} while (now() < end);
	return n;
}

/* q's line, as migrd and the plugin write them (ctl_line.h) */
static const char *line_of(const struct ctl_req *q)
{
	static __thread char line[CTL_LINE_MAX + 1];

	CHECK(ctl_format(q, line, sizeof(line)) > 0);
	return line;
}
#define LINE(...) line_of(&(struct ctl_req){ __VA_ARGS__ })
#define STATUS LINE(.op = CTL_STATUS)

static int threads(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/*
 * park and resume reach the park layer with their arguments; a parked
 * process says so in its status (its contexts unread: the mover holds
 * their locks) and refuses a switch until it is resumed
 */
static void test_park_requests(void)
{
	char buf[4096];

	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 1, .wait_ms = 1234),
			    buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"park\":[") && strstr(buf, "\"ok\":true}"));
	CHECK(parked_now && park_wait_ms == 1234 && park_lease_ms == 0);
	CHECK(request_retry(STATUS, buf, sizeof(buf)) > 0);
	CHECK(strstr(
		buf,
		"\"parked\":{\"from\":\"migr_test0\",\"contexts\":1,\"qps\":3}"));
	CHECK(request_retry(LINE(.op = CTL_SWITCH, .nargs = 1, .dev = "rxe1"),
			    buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "parked") && strstr(buf, "\"ok\":false"));
	CHECK(request_retry(LINE(.op = CTL_RESUME, .nargs = 1, .dev = "rxe1"),
			    buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"to\":\"rxe1\"") && strstr(buf, "\"ok\":true}"));
	CHECK(!parked_now);
	CHECK(request_retry(LINE(.op = CTL_RESUME), buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "not parked") && strstr(buf, "\"ok\":false}"));
	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 1, .wait_ms = 0), buf,
			    sizeof(buf)) > 0);
	CHECK(strstr(buf, "bad request") && !parked_now);
	/* a migration's park: partners hold for its lease, 10 min at most */
	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 2, .wait_ms = 1000,
				 .lease_ms = 600001),
			    buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "bad request") && !parked_now);
	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 2, .wait_ms = 1000,
				 .lease_ms = 465000),
			    buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"ok\":true}"));
	CHECK(parked_now && park_wait_ms == 1000 && park_lease_ms == 465000);
	CHECK(request_retry(LINE(.op = CTL_RESUME), buf, sizeof(buf)) > 0);
	CHECK(!parked_now && !resume_token);
	/* a migration's resume: the token of the numbers held for it */
	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 1, .wait_ms = 1000),
			    buf, sizeof(buf)) > 0);
	CHECK(request_retry(LINE(.op = CTL_RESUME, .nargs = 2, .dev = "rxe1",
				 .token = 0x0123456789abcdefULL),
			    buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"to\":\"rxe1\"") && strstr(buf, "\"ok\":true}"));
	CHECK(!parked_now && resume_token == 0x0123456789abcdefULL);
	/*
	 * A rollback's resume that could not take a partner along: it runs
	 * (ok), and its report says which partner was left and why, escaped
	 */
	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 1, .wait_ms = 1000),
			    buf, sizeof(buf)) > 0);
	resume_lost =
		"partner of QP 0x17 (QP 0x11 at 10.0.0.2, pid 974): keys: \"gone\"";
	CHECK(request_retry(LINE(.op = CTL_RESUME), buf, sizeof(buf)) > 0);
	resume_lost = NULL;
	CHECK(strstr(buf, "\"ok\":true") &&
	      strstr(buf,
		     "\"partner_error\":\"partner of QP 0x17 (QP 0x11 at 10.0.0.2, pid 974): keys: \\\"gone\\\"\""));
	CHECK(request_retry(LINE(.op = CTL_PARK, .nargs = 1, .wait_ms = 1000),
			    buf, sizeof(buf)) > 0);
	CHECK(request_retry(LINE(.op = CTL_RESUME), buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"partner_error\":\"\""));
}

/* Run fn as uid/gid NOBODY in a child; true if it exited 0 */
static bool as_nobody(int (*fn)(pid_t), pid_t server)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(99);
		_exit(fn(server));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "child as uid %d: status 0x%x\n", NOBODY,
			status);
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

static int connect_close(pid_t server)
{
	int i, fd;

	for (i = 0; i < 50; i++) {
		fd = connect_ctl(server);
		if (fd < 0)
			return 1;
		close(fd);
	}
	for (i = 0; i < 50; i++) {
		fd = connect_ctl(server);
		if (fd < 0)
			return 2;
		send(fd, STATUS, strlen(STATUS), MSG_NOSIGNAL);
		close(fd);
	}
	return 0;
}

/* Refused: EOF and not one byte, whether the child sends or not */
static int refused(pid_t server)
{
	struct pollfd pfd;
	char buf[256];
	ssize_t n;
	int fd = connect_ctl(server);

	if (fd < 0)
		return 1;
	n = read_all(fd, buf, sizeof(buf), 4000);
	close(fd);
	if (n) {
		fprintf(stderr, "silent: %zd bytes: %s\n", n, n > 0 ? buf : "");
		return 2;
	}
	fd = connect_ctl(server);
	if (fd < 0)
		return 3;
	send(fd, STATUS, strlen(STATUS), MSG_NOSIGNAL);
	/* Closed on with our line unread: ECONNRESET is fine too */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, 4000) != 1) {
		close(fd);
		return 4;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n > 0) {
		fprintf(stderr, "sent: %zd bytes\n", n);
		return 5;
	}
	return 0;
}

/* (a), (b): another uid reaches nothing, kills nothing */
static void test_other_uid(void)
{
	struct sigaction sa;
	sigset_t mask;
	char buf[4096];
	int i;

	CHECK(as_nobody(connect_close, getpid()));
	/* The same, as us: replies that find their client gone */
	for (i = 0; i < 50; i++) {
		int fd = connect_ctl(getpid());

		CHECK(fd >= 0);
		if (fd < 0)
			break;
		send(fd, STATUS, strlen(STATUS), MSG_NOSIGNAL);
		close(fd);
	}
	usleep(500000);
	/* Still alive (a SIGPIPE would have ended us), still serving */
	CHECK(request_retry(STATUS, buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"pid\":") != NULL);
	CHECK(!sigaction(SIGPIPE, NULL, &sa));
	CHECK(sa.sa_handler == SIG_DFL);
	CHECK(!pthread_sigmask(SIG_BLOCK, NULL, &mask));
	CHECK(!sigismember(&mask, SIGPIPE));

	CHECK(as_nobody(refused, getpid()));
}

/* (c): idle connections do not make threads; the server still answers */
static void test_thread_cap(void)
{
	int fds[100], base = threads(), peak, eof = 0, trickle;
	struct pollfd pfd;
	double t0;
	char buf[4096];
	unsigned int i;

	CHECK(base > 0);
	for (i = 0; i < 100; i++) {
		fds[i] = connect_ctl(getpid());
		CHECK(fds[i] >= 0);
	}
	usleep(300000);
	peak = threads();
	CHECK(peak <= base + CAP + 2);
	if (peak > base + CAP + 2)
		fprintf(stderr, "threads: %d before, %d with 100 idle\n", base,
			peak);
	/* Those over the cap were closed on at once (a second for a slow host) */
	t0 = now();
	do {
		for (i = 0; i < 100; i++) {
			pfd = (struct pollfd){ .fd = fds[i], .events = POLLIN };
			if (fds[i] >= 0 && poll(&pfd, 1, 0) == 1 &&
			    read(fds[i], buf, 1) == 0) {
				close(fds[i]);
				fds[i] = -1;
				eof++;
			}
		}
		usleep(50000);
	} while (eof < 100 - CAP && now() - t0 < 1000);
	CHECK(eof >= 100 - CAP);
	for (i = 0; i < 100; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	CHECK(request_retry(STATUS, buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, "\"pid\":") != NULL);

	/* One deadline for the whole request, however it trickles in */
	trickle = connect_ctl(getpid());
	CHECK(trickle >= 0);
	t0 = now();
	pfd = (struct pollfd){ .fd = trickle, .events = POLLIN };
	while (trickle >= 0 && now() - t0 < 8000) {
		if (send(trickle, "s", 1, MSG_NOSIGNAL) != 1 ||
		    poll(&pfd, 1, 300) != 0)
			break;
	}
	CHECK(now() - t0 < 3500);
	if (trickle >= 0)
		close(trickle);
}

/*
 * The top-level keys named key of the JSON object line: their values'
 * first characters go to vals. Strings are skipped with their escapes.
 */
static int top_keys(const char *s, const char *key, char *vals, int max)
{
	int depth = 0, n = 0;
	size_t klen = strlen(key);

	for (; *s; s++) {
		if (*s == '{' || *s == '[') {
			depth++;
		} else if (*s == '}' || *s == ']') {
			depth--;
		} else if (*s == '"') {
			const char *start = ++s;

			while (*s && *s != '"')
				s += *s == '\\' && s[1] ? 2 : 1;
			if (!*s)
				break;
			if (depth == 1 && s[1] == ':' &&
			    (size_t)(s - start) == klen &&
			    !strncmp(start, key, klen) && n < max)
				vals[n++] = s[2];
		}
	}
	return n;
}

/* (d): an injected reason stays inside its string */
static void test_injection(void)
{
	char buf[8192], vals[8];
	ssize_t n;

	n = request_retry(LINE(.op = CTL_SWITCH, .nargs = 2, .dev = "mlx5_9",
			       .wait_ms = 100),
			  buf, sizeof(buf));
	CHECK(n > 0);
	if (n <= 0)
		return;
	/* Exactly one line */
	CHECK(buf[n - 1] == '\n');
	CHECK(strchr(buf, '\n') == buf + n - 1);
	/* Its only top-level ok is false */
	CHECK(top_keys(buf, "ok", vals, 8) == 1);
	CHECK(vals[0] == 'f');
	/* The quote and the newline came through escaped */
	CHECK(strstr(buf, "boom\\\",\\\"ok\\\":true,\\\"x\\\":\\\"\\nsecond") !=
	      NULL);
	if (n > 0 && !strstr(buf, "boom\\\""))
		fprintf(stderr, "reply: %s", buf);

	/* status: the blocker's quotes too */
	n = request_retry(STATUS, buf, sizeof(buf));
	CHECK(n > 0 && strchr(buf, '\n') == buf + n - 1);
	CHECK(strstr(buf, "\"blocker\":\"ibv_x \\\"y\\\"\"") != NULL);
	/* the keys a migration holds on its destination: MRs' and windows' */
	CHECK(strstr(buf, "\"mrs\":[],\"mws\":[]") != NULL);
}

/* A stand-in migrd socket at dir/migrd.sock, listening */
static int fake_migrd(char *path, size_t size)
{
	char dir[] = "/tmp/test_control.XXXXXX";

	return unit_migrd_listen(dir, path, size);
}

static void fake_migrd_done(int fd, char *path)
{
	close(fd);
	unlink(path);
	*strrchr(path, '/') = 0;
	rmdir(path);
}

/* Did the process register with migrd (a connection waits on fd)? */
static bool registered(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 200) == 1;
}

/*
 * (e), in a child that has not opened the socket yet: the name is held by
 * someone else before the first context. No control socket, a one-line
 * error naming it, and no registration with migrd.
 */
static int squatted(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char path[128], name[64];
	socklen_t len;
	int fd, migrd, bad = 0;

	snprintf(name, sizeof(name), "migr/%d", getpid());
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "%s", name);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, len) || listen(fd, 4))
		return 10;
	migrd = fake_migrd(path, sizeof(path));
	if (migrd < 0)
		return 11;
	fake_ctx_init();
	migr_control_add(&mctx);
	migr_register(&mctx);
	if (!migr_control_listening || migr_control_listening()) {
		fprintf(stderr, "squatted: control socket said listening\n");
		bad |= 1;
	}
	if (!strstr(logged, name) ||
	    strchr(logged, '\n') != logged + strlen(logged) - 1) {
		fprintf(stderr, "squatted: no one-line error: %s\n", logged);
		bad |= 2;
	}
	if (registered(migrd)) {
		fprintf(stderr, "squatted: registered with migrd\n");
		bad |= 4;
	}
	fake_migrd_done(migrd, path);
	close(fd);
	return bad;
}

int main(void)
{
	char path[128];
	int status, migrd;
	pid_t pid;

	if (geteuid()) {
		printf("control: needs root (connects as another uid), skipped\n");
		return 77;
	}
	unsetenv("MIGR_CONTROL");

	/* First: a child of ours that opens no socket before this */
	pid = fork();
	if (!pid)
		_exit(squatted());
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Ours: the socket is served and migrd is told */
	migrd = fake_migrd(path, sizeof(path));
	CHECK(migrd >= 0);
	fake_ctx_init();
	migr_control_add(&mctx);
	CHECK(migr_control_listening && migr_control_listening());
	migr_register(&mctx);
	CHECK(migrd >= 0 && registered(migrd));
	if (migrd >= 0)
		fake_migrd_done(migrd, path);

	test_other_uid();
	test_thread_cap();
	test_injection();
	test_park_requests();
	return unit_done("control");
}
