/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A line parser's refusal (ctl_line.c, partner_line.c): why, into err;
 * returns -1
 */
#ifndef MIGR_LINE_ERR_H
#define MIGR_LINE_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int __attribute__((format(printf, 3, 4)))
line_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

#endif /* MIGR_LINE_ERR_H */
