/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* A stand-in for this host's migrd: the socket the library calls */
#ifndef MIGR_UNIT_MIGRD_H
#define MIGR_UNIT_MIGRD_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

/*
 * Listens on a new dir/migrd.sock (dir from template, "/tmp/NAME.XXXXXX")
 * and points the library at it (MIGRD_SOCKET); returns the listening fd,
 * -1 on failure. path gets the socket's path.
 */
static inline int unit_migrd_listen(char *template, char *path, size_t size)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (!mkdtemp(template))
		return -1;
	snprintf(path, size, "%s/migrd.sock", template);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(fd, 4))
		return -1;
	setenv("MIGRD_SOCKET", path, 1);
	return fd;
}

#endif /* MIGR_UNIT_MIGRD_H */
