// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A control reply read by its keys, over migr_json (ctl_reply.h) */
#include <stdio.h>
#include <string.h>

#include "ctl_reply.h"
#include "migr_json.h"

static json_t *parse(const char *reply)
{
	return migr_json_parse(reply, strlen(reply));
}

bool ctl_reply_valid(const char *reply, size_t len)
{
	json_t *j = migr_json_parse(reply, len);
	bool ok = j != NULL;

	json_decref(j);
	return ok;
}

bool ctl_reply_ok(const char *reply)
{
	json_t *j = parse(reply);
	bool ok = migr_json_true(j, "ok");

	json_decref(j);
	return ok;
}

bool ctl_reply_verdict(const char *reply, const char *key, char *err,
		       size_t len)
{
	json_t *j = parse(reply);
	const json_t *v = json_array_get(json_object_get(j, key), 0);
	bool ok = migr_json_true(j, "ok");

	if (!ok && !(v && migr_json_text(v, "error", err, len) && err[0]) &&
	    !(migr_json_text(j, "error", err, len) && err[0]))
		snprintf(err, len, "%s failed", key);
	json_decref(j);
	return ok;
}

/* The first non-empty string field of an element of j's array key */
static bool first_in(const json_t *j, const char *key, const char *field,
		     char *err, size_t len)
{
	const json_t *a = json_object_get(j, key);
	bool found = false;
	size_t i;

	for (i = 0; i < json_array_size(a) && !found; i++)
		found = migr_json_text(json_array_get(a, i), field, err, len) &&
			err[0];
	return found;
}

bool ctl_reply_first_error(const char *reply, const char *key, char *err,
			   size_t len)
{
	json_t *j = parse(reply);
	bool found = (migr_json_text(j, "error", err, len) && err[0]) ||
		     first_in(j, key, "error", err, len);

	json_decref(j);
	return found;
}

size_t ctl_reply_reports(const char *reply, const char *key)
{
	json_t *j = parse(reply);
	size_t n = json_array_size(json_object_get(j, key));

	json_decref(j);
	return n;
}

bool ctl_reply_partner_error(const char *reply, const char *key, char *err,
			     size_t len)
{
	json_t *j = parse(reply);
	bool found = first_in(j, key, "partner_error", err, len);

	json_decref(j);
	return found;
}
