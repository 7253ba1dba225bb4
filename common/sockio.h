/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Bounded, deadline-bound socket I/O shared by migrd, migrctl and the
 * control socket's client (ctl_client.h, which the CRIU plugin links too)
 */
#ifndef MIGRD_SOCKIO_H
#define MIGRD_SOCKIO_H

#include <stddef.h>
#include <sys/types.h>

/* Milliseconds of CLOCK_MONOTONIC: every deadline of migrd and migrctl */
long long io_now_ms(void);
/* Milliseconds left until deadline (io_now_ms() time), 0 once it passed */
int io_left_ms(long long deadline);
/* Write all of buf before timeout_ms; 0 or -1 (errno) */
int io_write_all(int fd, const void *buf, size_t len, int timeout_ms);
/* Read exactly len bytes; 0, or -1 (errno; ECONNRESET on early EOF) */
int io_read_full(int fd, void *buf, size_t len, int timeout_ms);
/*
 * Read up to and including the first '\n' (at most max bytes) into a new
 * NUL-terminated buffer. Returns its length, or -1 with errno (EMSGSIZE:
 * longer than max; ETIMEDOUT; ECONNRESET: EOF before the newline).
 */
ssize_t io_read_line(int fd, char **out, size_t max, int timeout_ms);
/*
 * Connect to a UNIX socket path ('@' first: abstract) before timeout_ms,
 * also when the listener's backlog is full (then ETIMEDOUT)
 */
int io_connect_unix(const char *path, int timeout_ms);
/* The same with fd, an AF_UNIX stream socket (closed on failure); -1: a new one */
int io_connect_unix_fd(int fd, const char *path, int timeout_ms);

#endif
