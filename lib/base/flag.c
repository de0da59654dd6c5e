/*
 * flag: `--name value`, `--name=value` and ranged numbers (flag.h).
 */
#include "flag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int flag_take(int argc, char **argv, int *i, char name[FLAG_NAME_MAX], const char **flag, const char **value)
{
	const char *arg = argv[*i];
	const char *equals = strchr(arg, '=');

	*flag = arg;
	*value = NULL;
	if (equals && (size_t)(equals - arg) < FLAG_NAME_MAX) {
		memcpy(name, arg, (size_t)(equals - arg));
		name[equals - arg] = '\0';
		*flag = name;
		*value = equals + 1;
		return 0;
	}
	if (*i + 1 >= argc)
		return -1;
	*value = argv[++*i];
	return 0;
}

int flag_number(const char *text, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end = NULL;

	errno = 0;
	*out = strtoul(text, &end, 10);
	return errno || end == text || *end || *out < min || *out > max || text[0] == '-' ? -1 : 0;
}
