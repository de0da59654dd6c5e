/*
 * cause: the "-1 plus a malloc'd sentence" error convention of muster's pure
 * decoders and rule checkers (group_config, admission, jobset_validate,
 * jobset_mutate, group_decode), in one place.
 *
 *   if (bad)
 *           return cause_fail(cause, "spec.x is %d, not a port", x);
 *
 * The sentence is formatted into at most CAUSE_MAX bytes (longer ones are
 * cut) and strdup'ed into *cause, which the caller frees with free(). cause
 * may be NULL (the caller does not want the reason); *cause is NULL only when
 * memory for the sentence ran out. The API client has its own variant with
 * an error code (kube_cause in kube_error.h).
 */
#ifndef MUSTER_CAUSE_H
#define MUSTER_CAUSE_H

/* Longest sentence kept, with its NUL. */
#define CAUSE_MAX 1024

/* Sets *cause (when cause is not NULL) and returns -1. */
int cause_fail(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same, for a decoder that may fail again after a first cause was set
 * (the later, more specific sentence wins): frees *cause first, so *cause
 * must be NULL or a sentence from this module. */
int cause_replace(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>

/* The form of the layers whose errors are codes (kube_err, negative errno):
 * sets *cause unless cause is NULL or *cause is set already (the first,
 * most specific sentence wins), whatever its length, and returns `err`, so
 * that `return cause_err(cause, -EINVAL, "...")` reads as one step. */
int cause_err(char **cause, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The same with a va_list. */
int cause_verr(char **cause, int err, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The sentence alone, malloc'd (NULL without memory): for a cause kept
 * elsewhere than a `char **`. */
char *cause_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
