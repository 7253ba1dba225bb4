/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The lines of a migr process's control socket ("@migr/<pid>", served by
 * providers-migr/serve/control.c), as one grammar for the library that
 * reads them and for migrd, the CRIU plugin and the tests that write them:
 * a line written one way in one place and read another way in another
 * would be a hole at a trust boundary (partner_line.h is the same for the
 * partner protocol inside "partner LINE").
 *
 *   status
 *   switch DEV [WAIT_MS]
 *   rebuild [WAIT_MS]
 *   park [WAIT_MS [LEASE_MS]]
 *   resume [DEV [TOKEN]]
 *   fence MS
 *   commit
 *   partner LINE            (partner_line.h)
 *   ud LINE                 (serve/ud_serve.c)
 *
 * One line ending in '\n', single spaces between words, numbers in
 * decimal, TOKEN 1 to 16 lowercase hex digits, DEV printable ASCII
 * without spaces. LINE is everything up to the newline, read by its own
 * parser. The bounds of every argument are here, once.
 */
#ifndef MIGR_CTL_LINE_H
#define MIGR_CTL_LINE_H

#include <stddef.h>
#include <stdint.h>

#define CTL_LINE_MAX 4096 /* a request line, its newline included */
#define CTL_DEV_MAX 256 /* bytes of a device name */
#define CTL_WAIT_DEFAULT_MS 5000 /* a drain's bound unless given */
#define CTL_WAIT_MAX_MS 600000
#define CTL_LEASE_MAX_MS 600000 /* MIGR_PARTNER_LEASE_MAX_MS (partner_call.h) */
#define CTL_FENCE_MAX_MS 600000 /* migrd's restore bound, the source's lease */
#define CTL_TOKEN_DIGITS 16

enum ctl_op {
	CTL_STATUS,
	CTL_SWITCH,
	CTL_REBUILD,
	CTL_PARK,
	CTL_RESUME,
	CTL_FENCE,
	CTL_COMMIT,
	CTL_PARTNER,
	CTL_UD,
	CTL_OPS /* how many */
};

/*
 * One request. nargs says how many of the op's arguments the line has,
 * in the order of the grammar; the parser gives the others their
 * defaults (wait_ms CTL_WAIT_DEFAULT_MS, lease_ms 0, dev NULL, token 0).
 */
struct ctl_req {
	enum ctl_op op;
	unsigned int nargs;
	const char *dev; /* switch, resume */
	unsigned int wait_ms; /* switch, rebuild, park; fence's MS */
	unsigned int lease_ms; /* park: partners hold this long */
	uint64_t token; /* resume: the numbers migrd holds for it */
	const char *line; /* partner, ud: the rest of the line */
};

/* The op's word ("park"), or "?" */
const char *ctl_op_name(enum ctl_op op);

/*
 * Read the len bytes of buf (what a client sent, NUL after them) as one
 * request: 0, or -1 with a one-line reason in err (never echoing buf).
 * Words are cut in place: q's strings point into buf.
 */
int ctl_parse(char *buf, size_t len, struct ctl_req *q, char *err,
	      size_t errlen);

/*
 * q as its line into buf, newline included: its length, or -1 if q is not
 * one the grammar can say (a word with a space, a missing argument) or
 * does not fit. Numbers are written as given: their bounds are the
 * reader's (a test may send one out of them).
 */
int ctl_format(const struct ctl_req *q, char *buf, size_t len);

#endif /* MIGR_CTL_LINE_H */
