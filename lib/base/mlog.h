/*
 * mlog: one-line structured logging (key=value) for every muster binary.
 *
 * Each call writes exactly one line to standard error with a single write(2),
 * so lines from concurrent writers never interleave:
 *
 *   ts=2026-11-21T07:00:00.123Z level=info component=barrier pod=ns/name event=waiting attempt=2
 *
 * The component and the process's object (namespace/name) are set once with mlog_init()
 * and repeated on every line, so a line can be read on its own.
 *
 * It is not a general formatter: callers build the key=value tail with printf
 * syntax and quote values that may hold spaces with mlog_quote(). Peer-supplied
 * bytes must never be passed unquoted. Lines are cut at MLOG_LINE_MAX bytes.
 * The module keeps no heap memory and needs no cleanup.
 */
#ifndef MUSTER_MLOG_H
#define MUSTER_MLOG_H

#include <stddef.h>

#define MLOG_LINE_MAX 1024

enum mlog_level { MLOG_DEBUG, MLOG_INFO, MLOG_WARN, MLOG_ERROR };

/* Sets the component name and the object printed on every line as
 * `<object_key>=<object>` (e.g. "pod", "ns/name"); object NULL or empty prints
 * none. The strings are copied (and cut to 127 bytes); without a call the
 * component is "muster" and there is no object. */
void mlog_init(const char *component, const char *object_key, const char *object);

/* Writes one line: ts, level, component, object, event, then the formatted
 * tail (may be NULL). Never fails visibly: a failed write is dropped. */
void mlog(enum mlog_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes `value` into `out` as a double-quoted string, escaping '"', '\\' and
 * every byte outside printable ASCII as \xHH, so the result is one token of a
 * log line whatever the input. Cuts to fit `out_size` (at least 3). Returns
 * `out`. */
char *mlog_quote(char *out, size_t out_size, const char *value, size_t value_len);

#endif
