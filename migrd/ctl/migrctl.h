/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
#ifndef MIGRCTL_H
#define MIGRCTL_H

#include <stdio.h>

#include "migr_json.h"

/* show.c: human-readable renderings of migrd's replies */
void show_status(const json_t *j, int detail);
void show_switch(const json_t *j);
void show_qpn_owner(const json_t *j, const char *host);
void show_peer_ping(const json_t *j);
void show_migrate(const json_t *j);

/* Text a reply supplies, made printable ASCII (others become '?') */
void show_clean(char *s);
/* migr_json_text(), then show_clean() */
bool show_str(const json_t *obj, const char *key, char *buf, size_t len);
/* A parsed reply as one line of printable ASCII JSON (--json) */
void show_json_line(FILE *f, const char *reply);
/* Did the process of a switch reply move (every device)? Else why in err */
bool show_switch_moved(const json_t *j, char *err, size_t len);

#endif
