/*
 * topo_retire: the Jobs a placement move listed to delete, as the
 * controller keeps them in the annotation muster.dev/placement-retire of
 * the record's ConfigMap (lib/muster/muster_api.h, lib/topo/topo_move.h):
 *
 *   <replicated job>/<job index>=<Job uid>@<unix seconds>;...
 *
 * Pure. Parsing skips an entry that does not read (and counts it), so one
 * bad entry (a hand edit) does not hide the others; a Job listed twice is
 * kept once, the later entry winning.
 */
#ifndef MUSTER_TOPO_RETIRE_H
#define MUSTER_TOPO_RETIRE_H

#include <stddef.h>
#include <stdint.h>

#define TOPO_RETIRE_NAME_MAX 64 /* a replicated job's name (63) and its NUL */
#define TOPO_RETIRE_UID_MAX 64
#define TOPO_RETIRE_ENTRIES_MAX 4096u

struct topo_retire {
	char replicated_job[TOPO_RETIRE_NAME_MAX];
	uint32_t job;
	char job_uid[TOPO_RETIRE_UID_MAX];
	double due; /* unix seconds */
};

/* Reads `len` bytes of `text`: 0 with *out (malloc'd, NULL when none),
 * *count and *skipped (entries that did not read, or beyond
 * TOPO_RETIRE_ENTRIES_MAX); -1 when out of memory (*out NULL). */
int topo_retire_parse(const char *text, size_t len, struct topo_retire **out, size_t *count, size_t *skipped);

/* Adds r to *list, or replaces the entry of the same Job: 0, or -1 when
 * out of memory (the list unchanged). */
int topo_retire_add(struct topo_retire **list, size_t *count, const struct topo_retire *r);

/* The annotation's text for `count` entries (malloc'd; "" for none), or
 * NULL when out of memory. */
char *topo_retire_format(const struct topo_retire *list, size_t count);

#endif
