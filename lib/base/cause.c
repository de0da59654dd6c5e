/*
 * cause: -1 plus a malloc'd sentence (cause.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "cause.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set(char **cause, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void set(char **cause, const char *fmt, va_list ap)
{
	char buf[CAUSE_MAX];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* A precision or CAUSE_MAX may cut a character of a quoted value: the
	 * sentence goes to users and logs as text. */
	utf8_repair(buf, strlen(buf));
	*cause = strdup(buf);
}

int cause_fail(char **cause, const char *fmt, ...)
{
	va_list ap;

	if (!cause)
		return -1;
	va_start(ap, fmt);
	set(cause, fmt, ap);
	va_end(ap);
	return -1;
}

int cause_replace(char **cause, const char *fmt, ...)
{
	va_list ap;

	if (!cause)
		return -1;
	free(*cause);
	va_start(ap, fmt);
	set(cause, fmt, ap);
	va_end(ap);
	return -1;
}

char *cause_vformat(const char *fmt, va_list ap)
{
	va_list copy;
	char *text;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0 || !(text = malloc((size_t)n + 1)))
		return NULL;
	vsnprintf(text, (size_t)n + 1, fmt, ap);
	utf8_repair(text, (size_t)n); /* a precision ("%.512s") may cut a character */
	return text;
}

int cause_verr(char **cause, int err, const char *fmt, va_list ap)
{
	if (cause && !*cause)
		*cause = cause_vformat(fmt, ap);
	return err;
}

int cause_err(char **cause, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cause_verr(cause, err, fmt, ap);
	va_end(ap);
	return err;
}
