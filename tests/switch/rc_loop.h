/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Connecting a QP to another QP of the same port, for the switch tests */
#ifndef RC_LOOP_H
#define RC_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/*
 * Take an INIT QP (RC, or UC if uc) to RTS toward QP dest behind gid:
 * NULL, or the state it could not reach ("RTR", "RTS") with errno set.
 */
const char *rc_loop_connect(struct ibv_qp *qp, uint32_t dest, int gid_index,
			    const union ibv_gid *gid, uint32_t rq_psn,
			    uint32_t sq_psn, bool uc);

#endif /* RC_LOOP_H */
