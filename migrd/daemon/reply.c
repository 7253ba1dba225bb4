// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's refusal of a request: its one-line JSON error (reply.h) */
#include "reply.h"
#include "req.h"

void reply_error(struct sbuf *out, const char *err)
{
	sb_printf(out, "{\"v\":%d,\"ok\":false,\"error\":", REQ_VERSION);
	sb_json_str(out, err);
	sb_add(out, "}", 1);
}
