/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A restored copy that has resumed on this host, written down before the
 * source hears of its resume: a migrd that dies before the commit
 * leaves it running (partners reconnected to it, their traffic its
 * own), and the migrd started since takes it back from this record,
 * under the same fence, so that the source's commit still finds it.
 * Killing it instead would drop what it did since its resume.
 */
#ifndef MIGRD_DEST_RECORD_H
#define MIGRD_DEST_RECORD_H

#include <stdbool.h>

#include "req.h"

struct dest_record {
	char who[64]; /* the source, for logs */
	int pid; /* the tree's root, in migrd's pid namespace */
	unsigned long long start; /* its start time (/proc/PID/stat) */
	int nmovers;
	int hpids[REQ_MOVERS_MAX]; /* its migr processes here */
	unsigned long long hstarts[REQ_MOVERS_MAX];
	long long deadline; /* its fence, io_now_ms() (CLOCK_MONOTONIC) */
	char netns[32]; /* the network namespace made for it, or "" */
	struct req_ns ns;
};

/* Written in dir (the migration's images); 0, or -1 with err */
int dest_record_write(const char *dir, const struct dest_record *rec, char *err,
		      size_t errlen);
/*
 * Read from dir: true if there is one, well formed, and its copy is the
 * one alive now (each process's start time as recorded)
 */
bool dest_record_alive(const char *dir, struct dest_record *rec);

#endif /* MIGRD_DEST_RECORD_H */
