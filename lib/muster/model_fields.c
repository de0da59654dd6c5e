/*
 * model_fields: name limits and the decimal reader. See model_fields.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "model_fields.h"

#include <string.h>

/* Parses a decimal number of at most `max_digits` digits into *value, no sign
 * and no spaces. Returns 0 or -1. */
int model_parse_decimal(const char *text, unsigned max_digits, uint64_t limit, uint64_t *value)
{
	uint64_t v = 0;
	size_t n = strlen(text);

	if (n == 0 || n > max_digits)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (text[i] < '0' || text[i] > '9')
			return -1;
		d = (unsigned)(text[i] - '0');
		if (v > (limit - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*value = v;
	return 0;
}
