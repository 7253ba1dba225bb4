/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A process's numbers in the pid namespaces it is in, from the NSpid line
 * of /proc/<pid>/status: one reader for migrd and the CRIU plugin. A migr
 * process names its control socket by its pid in its own (innermost)
 * namespace, so both need it to reach a process in a container.
 */
#ifndef MIGR_PROC_NS_H
#define MIGR_PROC_NS_H

/*
 * pid's number in its innermost pid namespace (NSpid's last field), or -1
 * if it is gone; *depth (if not NULL): how many namespaces it is in (1
 * on a host), 0 when unknown
 */
int migr_nspid(int pid, int *depth);

/* The NSpid line's fields (after "NSpid:") as above: the last, or -1 */
int migr_nspid_parse(const char *fields, int *depth);

/* pid's effective uid now (the Uid line's second field): 0, or -1 */
int migr_proc_euid(int pid, unsigned int *uid);

#endif /* MIGR_PROC_NS_H */
