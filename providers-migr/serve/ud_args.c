// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* A "ud LINE" request's words (ud_args.h) */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ud_args.h"

enum migr_ud_op migr_ud_op(const char *line, const char **args)
{
	*args = NULL;
	if (!strcmp(line, "probe"))
		return MIGR_UD_PROBE;
	if (!strncmp(line, "moved ", 6)) {
		*args = line + 6;
		return MIGR_UD_MOVED;
	}
	return MIGR_UD_BAD;
}

/* One hex number up to 24 bits at *s, ended by one of ends */
static bool hex24(const char **s, const char *ends, uint32_t *v)
{
	unsigned long x;
	char *end;

	x = strtoul(*s, &end, 16);
	if (end == *s || x > 0xffffff || !strchr(ends, *end))
		return false;
	*v = x;
	*s = *end ? end + 1 : end;
	return true;
}

int migr_ud_read_pairs(const char *s, struct migr_ud_pair *v)
{
	int n = 0;

	while (*s) {
		if (n == MIGR_UD_PAIRS_MAX || !hex24(&s, ":", &v[n].from) ||
		    !hex24(&s, ":", &v[n].to) || !hex24(&s, ",", &v[n].known))
			return -1;
		n++;
	}
	return n;
}

int migr_ud_read_moved(const char *args, char fromhex[33], char tohex[33],
		       struct migr_ud_pair *v)
{
	int used = 0;

	if (sscanf(args, "%32s %32s %n", fromhex, tohex, &used) != 2 || !used)
		return -1;
	return migr_ud_read_pairs(args + used, v);
}
