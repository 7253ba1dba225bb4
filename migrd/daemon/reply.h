/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* migrd's refusal of a request, as the one JSON line it answers with */
#ifndef MIGRD_REPLY_H
#define MIGRD_REPLY_H

#include "sbuf.h"

/* {"v":REQ_VERSION,"ok":false,"error":ERR} into out */
void reply_error(struct sbuf *out, const char *err);

#endif
