/*
 * cause: -1 plus a malloc'd sentence (cause.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cause_fail(char **cause, const char *fmt, ...)
{
	char buf[CAUSE_MAX];
	va_list ap;

	if (!cause)
		return -1;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	*cause = strdup(buf);
	return -1;
}
