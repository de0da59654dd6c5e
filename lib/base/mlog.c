/*
 * mlog: one-line structured logging. See mlog.h for the contract.
 *
 * It formats into a stack buffer and issues one write(2), which keeps lines
 * whole and keeps the module usable from the static, libc-light barrier.
 */
#define _POSIX_C_SOURCE 200809L
#include "mlog.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char log_component[128] = "muster";
static char log_object_key[32];
static char log_object[128];

static const char *const level_names[] = {
	[MLOG_DEBUG] = "debug",
	[MLOG_INFO] = "info",
	[MLOG_WARN] = "warn",
	[MLOG_ERROR] = "error",
};

static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = src ? strnlen(src, size - 1) : 0;

	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

void mlog_init(const char *component, const char *object_key, const char *object)
{
	copy_cut(log_component, sizeof(log_component), component ? component : "muster");
	copy_cut(log_object_key, sizeof(log_object_key), object_key ? object_key : "object");
	copy_cut(log_object, sizeof(log_object), object);
}

void mlog(enum mlog_level level, const char *event, const char *fmt, ...)
{
	char line[MLOG_LINE_MAX];
	struct timespec now;
	struct tm tm;
	size_t used;
	int n;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	used = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line + used, sizeof(line) - used, ".%03ldZ level=%s component=%s%s%s%s%s event=%s",
		     now.tv_nsec / 1000000L, level_names[level], log_component, log_object[0] ? " " : "",
		     log_object[0] ? log_object_key : "", log_object[0] ? "=" : "", log_object, event);
	if (n > 0)
		used += (size_t)n < sizeof(line) - used ? (size_t)n : sizeof(line) - used - 1;
	if (fmt && used < sizeof(line) - 2) {
		va_list ap;

		line[used++] = ' ';
		va_start(ap, fmt);
		n = vsnprintf(line + used, sizeof(line) - used, fmt, ap);
		va_end(ap);
		if (n > 0)
			used += (size_t)n < sizeof(line) - used ? (size_t)n : sizeof(line) - used - 1;
	}
	/* Room for the newline was kept by every cut above. */
	line[used++] = '\n';
	(void)!write(STDERR_FILENO, line, used);
}

char *mlog_quote(char *out, size_t out_size, const char *value, size_t value_len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	out[o++] = '"';
	for (size_t i = 0; i < value_len; i++) {
		unsigned char c = (unsigned char)value[i];
		int plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
		size_t need = plain ? 1 : (c == '"' || c == '\\') ? 2 : 4;

		if (o + need + 2 > out_size)
			break;
		if (plain) {
			out[o++] = (char)c;
		} else if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}
