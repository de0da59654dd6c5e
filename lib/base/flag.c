/*
 * flag: `--name value`, `--name=value` and ranged numbers (flag.h).
 */
#include "flag.h"

#include <errno.h>
#include <stdio.h>
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

/* Width of the "  --name ARG" column of the usage text. */
#define USAGE_COLUMN 27

void flag_usage(FILE *out, const char *head, const struct flag_def *table, size_t count, const char *tail)
{
	fputs(head, out);
	for (size_t i = 0; i < count; i++) {
		const struct flag_def *f = &table[i];
		const char *line = f->help, *end;
		int width;

		if (f->type == FLAG_SECTION) {
			fprintf(out, "%s\n", f->help);
			continue;
		}
		width = fprintf(out, "  %s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
		do {
			end = strchr(line, '\n');
			fprintf(out, "%*s%.*s\n", width < USAGE_COLUMN ? USAGE_COLUMN - width : 1, "",
				end ? (int)(end - line) : (int)strlen(line), line);
			width = 0;
			line = end ? end + 1 : NULL;
		} while (line);
	}
	fputs(tail, out);
}

static int bad(const char *program, const char *flag, const char *value, const char *why)
{
	fprintf(stderr, "%s: %s '%.100s': %s (see --help)\n", program, flag, value, why);
	return 2;
}

static int take_value(const struct flag_def *f, const char *program, const char *flag, const char *value)
{
	char why[96];
	unsigned long number;
	const char *problem;

	switch (f->type) {
	case FLAG_TEXT:
		problem = f->check ? f->check(value) : NULL;
		if (problem)
			return bad(program, flag, value, problem);
		*(const char **)f->out = value;
		return 0;
	case FLAG_NUMBER:
		if (flag_number(value, f->min, f->max, &number)) {
			snprintf(why, sizeof(why), "not a number from %lu to %lu", f->min, f->max);
			return bad(program, flag, value, why);
		}
		*(unsigned long *)f->out = number;
		return 0;
	case FLAG_BOOL:
		if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
			*(int *)f->out = 1;
		else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
			*(int *)f->out = 0;
		else
			return bad(program, flag, value, "not true or false");
		return 0;
	default:
		return bad(program, flag, value, "takes no value");
	}
}

int flag_parse(int argc, char **argv, const char *program, const char *version, const char *head,
	       const struct flag_def *table, size_t count, const char *tail)
{
	for (int i = 1; i < argc; i++) {
		const char *flag = argv[i], *value;
		const struct flag_def *f = NULL;
		char name[FLAG_NAME_MAX];

		if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
			flag_usage(stdout, head, table, count, tail);
			return 1;
		}
		if (strcmp(flag, "--version") == 0) {
			printf("%s %s\n", program, version);
			return 1;
		}
		for (size_t k = 0; k < count && !f; k++)
			if (table[k].type == FLAG_SWITCH && strcmp(table[k].name, flag) == 0)
				f = &table[k];
		if (f) {
			*(int *)f->out = 1;
			continue;
		}
		/* --flag=value and --flag value */
		if (flag_take(argc, argv, &i, name, &flag, &value)) {
			fprintf(stderr, "%s: %s needs a value (see --help)\n", program, flag);
			return 2;
		}
		for (size_t k = 0; k < count && !f; k++)
			if (table[k].type != FLAG_SECTION && strcmp(table[k].name, flag) == 0)
				f = &table[k];
		if (!f) {
			fprintf(stderr, "%s: unknown flag %s (see --help)\n", program, flag);
			return 2;
		}
		if (take_value(f, program, flag, value))
			return 2;
	}
	return 0;
}
