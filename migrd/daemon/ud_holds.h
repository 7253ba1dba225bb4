/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Whether a process could be a UD mover's peer at all: a process that
 * holds no UD QP cannot have been sent its datagrams, so the UD relay
 * (udpeers.c) need not hear from it.
 */
#ifndef MIGRD_UD_HOLDS_H
#define MIGRD_UD_HOLDS_H

#include <stddef.h>

/*
 * Does process tgid hold a UD QP on a device of this host, by the
 * kernel's resource tracking (the test stand-in's: on every GID it
 * names)? 1 yes (a QP of its whose type the kernel did not say counts),
 * 0 no, -1 with err if a device's QPs could not be listed.
 */
int ud_holds(int tgid, char *err, size_t errlen);

#endif
