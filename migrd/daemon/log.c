// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* migrd's log: stderr, with syslog priority prefixes when the journal
 * reads it (systemd sets JOURNAL_STREAM), so levels survive. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "log.h"

bool log_debug_on;

void logm(int level, const char *fmt, ...)
{
	static const char *const names[8] = {
		[3] = "error", [4] = "warning", [6] = "info", [7] = "debug"
	};
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;

	if (level == LOG_DEBUG_ && !log_debug_on)
		return;
	pthread_mutex_lock(&lock);
	if (getenv("JOURNAL_STREAM")) {
		fprintf(stderr, "<%d>", level);
	} else {
		/* with --debug, the time of day: the journal adds its own */
		if (log_debug_on) {
			struct timeval tv;
			struct tm tm;

			gettimeofday(&tv, NULL);
			localtime_r(&tv.tv_sec, &tm);
			fprintf(stderr, "%02d:%02d:%02d.%03ld ", tm.tm_hour,
				tm.tm_min, tm.tm_sec, (long)tv.tv_usec / 1000);
		}
		fprintf(stderr, "migrd: %s: ", names[level & 7]);
	}
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&lock);
}
