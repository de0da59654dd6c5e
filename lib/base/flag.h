/*
 * flag: the command-line conventions shared by muster's daemons
 * (muster-controller, muster-webhook): `--name value` and `--name=value`,
 * and decimal numbers checked against a range. No state, no I/O.
 */
#ifndef MUSTER_FLAG_H
#define MUSTER_FLAG_H

#include <stddef.h>

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

#endif
