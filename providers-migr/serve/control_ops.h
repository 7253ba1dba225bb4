/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The control socket's handlers (control_ops.c), one per request of
 * ctl_line.h, as control.c's table runs them: each writes its one JSON
 * line to out, on the thread the table names.
 */
#ifndef MIGR_CONTROL_OPS_H
#define MIGR_CONTROL_OPS_H

#include <stdio.h>

#include "ctl_line.h"

typedef void ctl_handler(FILE *out, const struct ctl_req *q);

ctl_handler ctl_do_status; /* the contexts and QPs, or that it is parked */
ctl_handler ctl_do_switch; /* switch and rebuild (no target) */
ctl_handler ctl_do_park; /* the switch's first half, kept (park.h) */
ctl_handler ctl_do_resume; /* its second half, here or on the device left */
ctl_handler ctl_do_fence; /* a restored copy's own fence armed (fence.h) */
ctl_handler ctl_do_commit; /* ...and disarmed */
ctl_handler ctl_do_partner; /* a moving partner's step (partner_call.h) */
ctl_handler ctl_do_ud; /* a UD peer's (ud_redirect.h) */

#endif /* MIGR_CONTROL_OPS_H */
