/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A restored copy's own fence. migrd arms it on the destination of a
 * migration before it resumes the copy ("fence MS" on the control
 * socket): unless "commit" comes within MS, the process ends itself
 * (SIGKILL). migrd fences the copy too, but that fence dies with migrd; a
 * copy that ran on while its source resumed would be two live copies.
 */
#ifndef MIGR_FENCE_H
#define MIGR_FENCE_H

#include <stdbool.h>

/* Arm (or re-arm) the fence: ms from now */
void migr_fence_arm(unsigned int ms);
/* Disarm it; false if it was not armed */
bool migr_fence_commit(void);

#endif /* MIGR_FENCE_H */
