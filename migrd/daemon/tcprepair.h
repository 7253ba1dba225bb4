/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * criu dump --tcp-established --leave-stopped leaves the tree's TCP
 * sockets in repair mode (CRIU takes them out only for a tree it lets
 * run): a tree continued after a failed migration would hold connections
 * that neither send nor answer. migrd takes them out itself.
 */
#ifndef MIGRD_TCPREPAIR_H
#define MIGRD_TCPREPAIR_H

/* Every TCP socket of pids out of repair mode; how many, or -1 (errno) */
int tcp_repair_off(const int *pids, int n);

#endif
