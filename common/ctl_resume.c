// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Who resumes a restored process, and where (ctl_resume.h) */
#include <stdlib.h>
#include <string.h>

#include "ctl_line.h"
#include "ctl_resume.h"

enum ctl_resumer ctl_resumer(void)
{
	const char *by = getenv("MIGR_RESUME_BY");
	const char *want = strchr(CTL_RESUME_BY_MIGRD_ENV, '=') + 1;

	return by && !strcmp(by, want) ? CTL_RESUMER_MIGRD : CTL_RESUMER_PLUGIN;
}

int ctl_resume_line(char *buf, size_t len)
{
	const char *dev = getenv("MIGR_RESUME_DEVICE");
	size_t n = dev ? strlen(dev) : 0;
	struct ctl_req q = { .op = CTL_RESUME };

	if (n && n < 64 &&
	    strspn(dev, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			"0123456789_.-") == n) {
		q.nargs = 1;
		q.dev = dev;
	}
	return ctl_format(&q, buf, len);
}
