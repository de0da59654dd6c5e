/*
 * flag: the command-line conventions shared by muster's daemons
 * (muster-controller, muster-webhook): `--name value` and `--name=value`,
 * decimal numbers checked against a range, and each daemon's flags as one
 * table that both the parser and the usage text read. No state, no I/O
 * besides the messages flag_parse prints.
 */
#ifndef MUSTER_FLAG_H
#define MUSTER_FLAG_H

#include <stddef.h>
#include <stdio.h>

/* Longest flag name taken from a `--name=value` argument, with its NUL. */
#define FLAG_NAME_MAX 64

/* Reads argv[*i] as a flag with a value. `--name=value` gives name (copied
 * into name, FLAG_NAME_MAX bytes) and the text after '='; `--name value`
 * gives argv[*i] and argv[*i + 1], and advances *i past the value. Returns
 * 0, or -1 when a separate value is missing (*flag then names the flag). */
int flag_take(int argc, char **argv, int *i, char name[FLAG_NAME_MAX], const char **flag, const char **value);

/* Parses a decimal number in min..max (no sign, no spaces, nothing after).
 * Returns 0 and *out, or -1. */
int flag_number(const char *text, unsigned long min, unsigned long max, unsigned long *out);

/* One row of a daemon's flag table. */
enum flag_type {
	FLAG_SECTION, /* a heading in the usage text: only `help` */
	FLAG_TEXT, /* a value kept as given: out is `const char **` */
	FLAG_NUMBER, /* a decimal in min..max: out is `unsigned long *` */
	FLAG_BOOL, /* true/false/1/0: out is `int *` */
	FLAG_SWITCH, /* no value; sets *out (an `int *`) to 1 */
};

struct flag_def {
	enum flag_type type;
	const char *name; /* "--threads" */
	const char *arg; /* the value's placeholder in the usage text: "N", "PATH" */
	/* The usage text; '\n' starts a continuation line under the first. */
	const char *help;
	unsigned long min, max; /* FLAG_NUMBER */
	/* FLAG_TEXT: NULL when the value is fine, else why not ("not an image
	 * reference"); NULL check: any value. FLAG_NUMBER: unused, the why is
	 * "not a number from MIN to MAX". */
	const char *(*check)(const char *value);
	void *out;
};

/* Writes `head`, the table's flags (and headings) aligned, then `tail`. */
void flag_usage(FILE *out, const char *head, const struct flag_def *table, size_t count, const char *tail);

/* Parses argv[1..] against the table. --help and -h print the usage (head,
 * table, tail) to stdout and return 1; --version prints "PROGRAM VERSION"
 * and returns 1. A bad flag prints one line "PROGRAM: FLAG 'VALUE': WHY
 * (see --help)" to stderr and returns 2. Returns 0 when all were taken. */
int flag_parse(int argc, char **argv, const char *program, const char *version, const char *head,
	       const struct flag_def *table, size_t count, const char *tail);

#endif
