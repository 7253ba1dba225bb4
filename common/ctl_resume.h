/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Who resumes a migr process that CRIU restored parked, decided here
 * only: the CRIU plugin queues "resume" on its socket before it runs
 * again, unless migrd ran that CRIU (with CTL_RESUME_BY_MIGRD_ENV in its
 * environment), which resumes it itself once the host knows what it
 * needs (the grants of its partner sessions, the numbers held for it).
 */
#ifndef MIGR_CTL_RESUME_H
#define MIGR_CTL_RESUME_H

#include <stddef.h>

/* What migrd puts in the environment of the CRIU it runs */
#define CTL_RESUME_BY_MIGRD_ENV "MIGR_RESUME_BY=migrd"

enum ctl_resumer {
	CTL_RESUMER_PLUGIN, /* the plugin queues the resume */
	CTL_RESUMER_MIGRD, /* migrd sends it (migrate_dest.c) */
};

/* Who resumes what this CRIU restores (its environment says) */
enum ctl_resumer ctl_resumer(void);

/*
 * The plugin's resume line: on MIGR_RESUME_DEVICE if that names a device,
 * else on the device it left. Its length, or -1 if it does not fit.
 */
int ctl_resume_line(char *buf, size_t len);

#endif /* MIGR_CTL_RESUME_H */
