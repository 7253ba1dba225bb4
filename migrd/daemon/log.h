/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
#ifndef MIGRD_LOG_H
#define MIGRD_LOG_H

#include <stdbool.h>

enum { LOG_ERR_ = 3, LOG_WARN_ = 4, LOG_INFO_ = 6, LOG_DEBUG_ = 7 };

extern bool log_debug_on;

void logm(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...) logm(LOG_ERR_, __VA_ARGS__)
#define log_warn(...) logm(LOG_WARN_, __VA_ARGS__)
#define log_info(...) logm(LOG_INFO_, __VA_ARGS__)
#define log_dbg(...) logm(LOG_DEBUG_, __VA_ARGS__)

#endif
