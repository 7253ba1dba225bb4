// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sockio.h"

long long io_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int io_left_ms(long long deadline)
{
	long long left = deadline - io_now_ms();

	return left > 0 ? left : 0;
}

/* Wait for events on fd until the deadline; 0, or -1 with errno */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline - io_now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(&p, 1, left > 60000 ? 60000 : left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

int io_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	long long deadline = io_now_ms() + timeout_ms;
	const char *p = buf;
	ssize_t n;

	while (len) {
		if (wait_fd(fd, POLLOUT, deadline))
			return -1;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int io_read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	long long deadline = io_now_ms() + timeout_ms;
	char *p = buf;
	ssize_t n;

	while (len) {
		if (wait_fd(fd, POLLIN, deadline))
			return -1;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

ssize_t io_read_line(int fd, char **out, size_t max, int timeout_ms)
{
	long long deadline = io_now_ms() + timeout_ms;
	size_t len = 0, cap = max < 256 ? max : 256;
	char *buf = malloc(cap + 1), *nl;
	ssize_t n;

	if (!buf)
		return -1;
	for (;;) {
		if (len == cap) {
			char *p;

			if (cap >= max) {
				errno = EMSGSIZE;
				goto err;
			}
			cap = cap * 2 > max ? max : cap * 2;
			p = realloc(buf, cap + 1);
			if (!p)
				goto err;
			buf = p;
		}
		if (wait_fd(fd, POLLIN, deadline))
			goto err;
		/* Peek, so nothing after the newline is consumed */
		n = recv(fd, buf + len, cap - len, MSG_DONTWAIT | MSG_PEEK);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			goto err;
		}
		if (n == 0) {
			errno = ECONNRESET;
			goto err;
		}
		nl = memchr(buf + len, '\n', n);
		if (nl)
			n = nl - (buf + len) + 1;
		n = recv(fd, buf + len, n, MSG_DONTWAIT);
		if (n <= 0)
			goto err;
		len += n;
		if (nl) {
			buf[len] = 0;
			*out = buf;
			return len;
		}
	}
err:
	n = errno;
	free(buf);
	errno = n;
	return -1;
}

/* Give fd back its blocking mode: callers may use plain read()/write() */
static int set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

static int set_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int io_connect_unix(const char *path, int timeout_ms)
{
	return io_connect_unix_fd(-1, path, timeout_ms);
}

/* path (a leading @: abstract) as an address; 0 or ENAMETOOLONG */
static int unix_addr(const char *path, struct sockaddr_un *sun, socklen_t *len)
{
	size_t n = strlen(path);

	if (n >= sizeof(sun->sun_path))
		return ENAMETOOLONG;
	memcpy(sun->sun_path, path, n);
	*len = offsetof(struct sockaddr_un, sun_path) + n;
	if (path[0] == '@')
		sun->sun_path[0] = 0; /* abstract: no terminating NUL */
	else
		(*len)++;
	return 0;
}

/*
 * A blocking connect to a listener that never accepts waits for
 * good once its backlog is full; non-blocking, AF_UNIX says EAGAIN
 * then (no EINPROGRESS), so retry until the deadline. 0, or an errno.
 */
static int connect_until(int fd, const struct sockaddr_un *sun, socklen_t len,
			 long long deadline)
{
	socklen_t elen;
	int err;

	for (;;) {
		if (!connect(fd, (const struct sockaddr *)sun, len))
			return 0;
		err = errno;
		if (err == EINPROGRESS) {
			if (wait_fd(fd, POLLOUT, deadline))
				return errno;
			elen = sizeof(err);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen))
				return errno;
			return err;
		}
		if (err != EAGAIN && err != EINTR)
			return err;
		if (io_now_ms() >= deadline)
			return ETIMEDOUT;
		if (err == EAGAIN)
			usleep(10000);
	}
}

int io_connect_unix_fd(int fd, const char *path, int timeout_ms)
{
	long long deadline = io_now_ms() + timeout_ms;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	int err;

	err = unix_addr(path, &sun, &len);
	if (err)
		goto fail;
	if (fd < 0)
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
	if (fd < 0 || set_nonblocking(fd))
		goto fail_errno;
	err = connect_until(fd, &sun, len, deadline);
	if (err)
		goto fail;
	if (set_blocking(fd))
		goto fail_errno;
	return fd;
fail_errno:
	err = errno;
fail:
	close(fd);
	errno = err;
	return -1;
}
