/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The serving side of UD peers: "ud LINE" on the control socket, from
 * migrd's relay of another process's announcement (calls/ud_announce.c);
 * the tables it writes are datapath/ud_redirect.h's.
 */
#ifndef MIGR_UD_SERVE_H
#define MIGR_UD_SERVE_H

#include <stdio.h>

void migr_ud_serve(FILE *out, const char *line);

#endif /* MIGR_UD_SERVE_H */
