/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
#ifndef MIGRCTL_H
#define MIGRCTL_H

#include "json.h"

/* show.c: human-readable renderings of migrd's replies */
void show_status(const struct json *j, int detail);
void show_switch(const struct json *j);
void show_qpn_owner(const struct json *j, const char *host);
void show_peer_ping(const struct json *j);

#endif
