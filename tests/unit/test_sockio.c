// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's bounded socket I/O: line limits and connects that cannot hang */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sockio.h"
#include "unit.h"

/* A call that blocks for good fails the test instead of hanging it */
static void on_alarm(int sig)
{
	static const char msg[] = "test_sockio: a call did not return\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Send len bytes of 'x' then a newline; read it back with max */
static ssize_t line_of(size_t len, size_t max, char **out, int *err)
{
	char *buf = malloc(len + 1);
	int sv[2];
	ssize_t n;

	if (!buf || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	memset(buf, 'x', len);
	buf[len] = '\n';
	if (write(sv[1], buf, len + 1) != (ssize_t)len + 1)
		abort();
	*out = NULL;
	n = io_read_line(sv[0], out, max, 1000);
	*err = errno;
	close(sv[0]);
	close(sv[1]);
	free(buf);
	return n;
}

static void test_read_line(void)
{
	char *line;
	ssize_t n;
	int err;

	/* A max below the first allocation (256) counts too */
	n = line_of(199, 100, &line, &err);
	CHECK(n == -1 && err == EMSGSIZE);
	n = line_of(99, 100, &line, &err);
	CHECK(n == 100 && line && line[99] == '\n' && !line[100]);
	free(line);
	n = line_of(100, 100, &line, &err);
	CHECK(n == -1 && err == EMSGSIZE);
	n = line_of(0, 1, &line, &err);
	CHECK(n == 1 && line && !strcmp(line, "\n"));
	free(line);
	/* Above 256 as before */
	n = line_of(4095, 4096, &line, &err);
	CHECK(n == 4096);
	free(line);
	n = line_of(4096, 4096, &line, &err);
	CHECK(n == -1 && err == EMSGSIZE);
}

static void test_connect(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char name[64];
	int lfd, fds[16], n = 0, fd, i;
	long long t0, took;
	socklen_t len;

	/* A listener that never accepts, its backlog filled */
	snprintf(name, sizeof(name), "@migr-test-sockio/%d", (int)getpid());
	memcpy(sun.sun_path, name, strlen(name));
	sun.sun_path[0] = 0;
	len = offsetof(struct sockaddr_un, sun_path) + strlen(name);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(lfd >= 0 && !bind(lfd, (struct sockaddr *)&sun, len) &&
	      !listen(lfd, 1));
	while (n < 16) {
		fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (connect(fds[n], (struct sockaddr *)&sun, len)) {
			close(fds[n]);
			break;
		}
		n++;
	}
	CHECK(n < 16); /* the backlog is full */

	t0 = now_ms();
	fd = io_connect_unix(name, 500);
	took = now_ms() - t0;
	CHECK(fd == -1 && errno == ETIMEDOUT);
	CHECK(took >= 450 && took < 3000);

	/* Once one is accepted, the connect gets through */
	close(accept(lfd, NULL, NULL));
	fd = io_connect_unix(name, 500);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);

	/* Nobody there: fails at once */
	fd = io_connect_unix("@migr-test-sockio/none", 500);
	CHECK(fd == -1 && errno == ECONNREFUSED);
	for (i = 0; i < n; i++)
		close(fds[i]);
	close(lfd);
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(20);
	test_read_line();
	test_connect();
	return unit_done("sockio");
}
