/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A migr process's reply to a control line (ctl_line.h): one JSON object
 * on one line, read as every JSON of migr is (migr_json.h: parsed whole,
 * no key twice), by its keys: "ok" at its top, "error" there or in the
 * first report of the array named after the request ("switch", "park",
 * "resume"...), each report's "partner_error".
 */
#ifndef MIGR_CTL_REPLY_H
#define MIGR_CTL_REPLY_H

#include <stdbool.h>
#include <stddef.h>

/* Is s[0..len) one JSON object (what migrd relays and embeds)? */
bool ctl_reply_valid(const char *reply, size_t len);

/* The process's own verdict: its reply's top-level "ok" */
bool ctl_reply_ok(const char *reply);

/*
 * The verdict, and if false the first error it names (that of its array
 * key[0], or its own), else "KEY failed"
 */
bool ctl_reply_verdict(const char *reply, const char *key, char *err,
		       size_t len);

/*
 * The first non-empty "error" of the reply: its own, else that of a
 * report of its array key. false if none names one.
 */
bool ctl_reply_first_error(const char *reply, const char *key, char *err,
			   size_t len);

/* How many reports the reply's array key holds */
size_t ctl_reply_reports(const char *reply, const char *key);

/*
 * true with the first "partner_error" of its array key: a resume that
 * succeeded may have left a partner behind (a rollback takes along the
 * partners it can reach), naming the QP, the partner and the step
 */
bool ctl_reply_partner_error(const char *reply, const char *key, char *err,
			     size_t len);

#endif /* MIGR_CTL_REPLY_H */
