/*
 * metrics: a Prometheus metrics registry, rendered in the text exposition
 * format 0.0.4 (what /metrics serves, see lib/http/http_serve.h).
 *
 * Two kinds of series:
 *
 * - Registered series: counters (uint64), gauges (double) and histograms with
 *   fixed buckets, each with a fixed label set chosen at registration. A
 *   family (one metric name) may hold several series that differ by their
 *   labels, e.g. muster_api_errors_total{code="409"} and {code="500"}:
 *   register each once at start-up and keep the handles. Updating a handle
 *   is lock-free (C11 atomics), never allocates, and may happen from any
 *   thread; every update function accepts NULL and then does nothing, so a
 *   caller that runs without metrics needs no branches.
 *
 * - Collected series: a collector callback, called at every render, writes
 *   series computed from its owner's state (e.g. one gauge per JobSet:
 *   muster_group_pods_started{namespace="a",jobset="b"}) through a writer
 *   that validates names, escapes label values and emits HELP and TYPE once
 *   per family, grouping a family's samples even when the collector
 *   interleaves families (one pass over its objects is enough).
 *
 * Rendering follows the format exactly: "# HELP" (backslash and newline
 * escaped) and "# TYPE" lines, then the samples; label values escape
 * backslash, double quote and newline, and bytes that are not valid UTF-8
 * become U+FFFD, so a scrape never fails on a bad value; histograms render
 * cumulative _bucket{le="..."} series ending with le="+Inf", then _sum and
 * _count (equal to the +Inf bucket). Registered labels are rendered sorted by
 * name; collected labels in the order given. Numbers are the shortest text
 * that reads back to the same double ("0.1", "+Inf", "NaN"); this assumes the
 * "C" numeric locale, which muster never changes.
 *
 * Not a snapshot: a render reads each atomic once, so a histogram's _sum may
 * lag its _count by an observation in flight.
 *
 * Errors: functions that can fail return 0 or a negative code of lib/base/errors.h
 * (MUSTER_EINVAL bad name, labels or buckets; MUSTER_ECONFLICT series already registered;
 * MUSTER_ETOOBIG output over the limit; MUSTER_ENOMEM), with *cause set to a malloc'd
 * sentence the caller frees (NULL when even that allocation failed).
 *
 * Lifecycle: metrics_registry_new() succeeds fully or leaves nothing;
 * handles and collectors live until metrics_registry_free() (accepts NULL),
 * which must come after the last render and the last update.
 */
#ifndef MUSTER_METRICS_H
#define MUSTER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

/* Largest rendered text (bytes) unless metrics_registry_new() is given one. */
#define METRICS_RENDER_MAX_DEFAULT (64u * 1024u * 1024u)
/* Largest limit metrics_registry_new() accepts. */
#define METRICS_RENDER_MAX_LIMIT (1024u * 1024u * 1024u)
/* Longest metric or label name. */
#define METRICS_NAME_MAX 128u
/* Most labels on one series. */
#define METRICS_LABELS_MAX 8u
/* Most bucket bounds of a histogram (the +Inf bucket is implicit). */
#define METRICS_BUCKETS_MAX 32u
/* Most collectors on a registry. */
#define METRICS_COLLECTORS_MAX 8u
/* Most families the collectors of one render may write. */
#define METRICS_WRITER_FAMILIES_MAX 64u

/* Bucket bounds for latencies in seconds, 5 ms to 60 s:
 * `static const double bounds[] = { METRICS_SECONDS_BUCKETS };` */
#define METRICS_SECONDS_BUCKETS 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60

/* One label. Names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__";
 * values are any NUL-terminated text. */
struct metrics_label {
	const char *name;
	const char *value;
};

struct metrics_registry;
struct metrics_counter;
struct metrics_gauge;
struct metrics_histogram;
struct metrics_writer;

/* Makes an empty registry whose renders are refused beyond render_max bytes
 * (0: METRICS_RENDER_MAX_DEFAULT; at most METRICS_RENDER_MAX_LIMIT). Returns
 * 0, MUSTER_EINVAL (render_max too large) or MUSTER_ENOMEM. */
int metrics_registry_new(size_t render_max, struct metrics_registry **out);

/* Frees the registry, every handle it gave out and its collectors. */
void metrics_registry_free(struct metrics_registry *registry);

/*
 * Registration. name matches [a-zA-Z_:][a-zA-Z0-9_:]* (at most
 * METRICS_NAME_MAX bytes); help may be NULL (no HELP line) and is copied;
 * labels (at most METRICS_LABELS_MAX, names distinct, at most 64 KiB once
 * rendered and escaped: MUSTER_ETOOBIG beyond) are copied. A family
 * registered again must keep its type and help, and each label set may be
 * registered once (MUSTER_ECONFLICT). On success *out is valid until the registry is
 * freed; on failure *out is NULL. Registration takes the registry's lock and
 * may run at any time, also while a render is under way.
 */
int metrics_counter_register(struct metrics_registry *registry, const char *name, const char *help,
			     const struct metrics_label *labels, size_t label_count,
			     struct metrics_counter **out, char **cause);
int metrics_gauge_register(struct metrics_registry *registry, const char *name, const char *help,
			   const struct metrics_label *labels, size_t label_count, struct metrics_gauge **out,
			   char **cause);
/* bounds: 1..METRICS_BUCKETS_MAX finite upper bounds in increasing order
 * (copied); the label "le" is reserved. */
int metrics_histogram_register(struct metrics_registry *registry, const char *name, const char *help,
			       const struct metrics_label *labels, size_t label_count, const double *bounds,
			       size_t bound_count, struct metrics_histogram **out, char **cause);

/* Updates: lock-free, no allocation, NULL ignored. A counter wraps at 2^64. */
void metrics_counter_inc(struct metrics_counter *counter);
void metrics_counter_add(struct metrics_counter *counter, uint64_t amount);
uint64_t metrics_counter_value(const struct metrics_counter *counter);
void metrics_gauge_set(struct metrics_gauge *gauge, double value);
void metrics_gauge_add(struct metrics_gauge *gauge, double delta);
double metrics_gauge_value(const struct metrics_gauge *gauge);
/* Counts value in the first bucket whose bound is >= value (NaN and values
 * above every bound land in +Inf only) and adds it to the sum. */
void metrics_histogram_observe(struct metrics_histogram *histogram, double value);

/*
 * A collector writes its series through the writer with metrics_write_*()
 * and returns 0, or a negative code of lib/base/errors.h that fails the render. It is
 * called without the registry's lock (it may take its own lock, and its owner
 * may register metrics while holding that lock), possibly from two renders at
 * once, and must not keep the writer. arg is borrowed and must outlive the
 * registry (or at least every render).
 */
typedef int (*metrics_collect_fn)(void *arg, struct metrics_writer *writer);

/* Adds a collector, called after the registered series at every render, in
 * the order added. Returns 0, or MUSTER_ETOOBIG beyond METRICS_COLLECTORS_MAX. */
int metrics_collector_register(struct metrics_registry *registry, metrics_collect_fn collect, void *arg,
			       char **cause);

/*
 * Writes one sample of a gauge or counter family. The first write of a
 * family emits its HELP (help may be NULL) and TYPE lines; later writes of
 * the family only add samples (their help is not looked at), and all of a family's samples come out
 * together in the order written. Names and labels are checked as at
 * registration; a family may not take the name of a registered family or
 * change its type. The first failure is kept: that write and every later one
 * return it, and the render fails with its cause. Returns 0 or a negative
 * code of lib/base/errors.h.
 */
int metrics_write_gauge(struct metrics_writer *writer, const char *name, const char *help,
			const struct metrics_label *labels, size_t label_count, double value);
int metrics_write_counter(struct metrics_writer *writer, const char *name, const char *help,
			  const struct metrics_label *labels, size_t label_count, double value);

/*
 * Renders every registered family (in registration order), then runs the
 * collectors. On success returns 0 with *text a malloc'd, NUL-terminated
 * string of *text_len bytes (never more than the registry's limit) that the
 * caller frees. On failure returns MUSTER_ETOOBIG (over the limit), MUSTER_ENOMEM, or the
 * error of a collector or a write, with *text NULL and *cause set.
 */
int metrics_render(struct metrics_registry *registry, char **text, size_t *text_len, char **cause);

#endif
