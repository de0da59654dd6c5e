/*
 * record_cache: the pod route's copies of placement records, read from the
 * API (GET the ConfigMap `<jobset>-placement` in the pod's own namespace)
 * and kept for a few seconds, so that the 5,000 pods of a JobSet cost one
 * GET, not 5,000.
 *
 * An entry is keyed by namespace/JobSet name and holds the parsed record
 * (lib/topo/topo_record.h: runs and one block of selectors, no JSON tree)
 * with the uid it was written for. A lookup for a pod of another uid (a
 * JobSet deleted and made again under the same name) or of another restart
 * attempt, or an entry older than RECORD_CACHE_TTL_S, reads the API again;
 * a record of another attempt than the pod's does not pin it (each attempt
 * is placed afresh). A record written before records named their attempt
 * pins pods of any attempt. A record not found is not cached: the
 * controller may write it a moment later, and the Job controller retries
 * the pod.
 *
 * Only muster's records count: the ConfigMap must be controlled by the
 * JobSet of the pod's uid (record_owner.h, `controller: true`), else the
 * pod is refused and nothing is kept. Its text is parsed only then.
 *
 * Bounds: the entries hold at most `bytes_max` bytes of records in all
 * (topo_record_bytes); the oldest go first, expired ones are freed as soon
 * as any lookup runs, and a record larger than the whole bound pins the
 * lookup that read it and is not kept. At most RECORD_CACHE_ENTRIES
 * entries. Records of more than RECORD_CACHE_LARGE bytes of text are
 * parsed one at a time and their parse memory given back (malloc_trim).
 *
 * An entry counts from the moment its GET was sent, so a record is never
 * used longer than RECORD_CACHE_TTL_S after the API served it (the
 * controller waits that long before acting on a rewritten record).
 *
 * Threads and time: each read uses one of the cache's readers (API
 * clients, one read each at a time), so reads of different JobSets run
 * side by side and a slow or hanging apiserver holds up only the lookups
 * that wait for that read. Lookups of one JobSet that miss together make
 * one GET and share what it read. Every lookup answers within `deadline_ms`
 * of its start: a lookup that cannot get a reader in time (RECORD_CACHE_WAIT_MS,
 * and never later than the deadline less the readers' request timeout), or
 * whose JobSet's read, begun by another, does not end within
 * RECORD_CACHE_WAIT_MS, is refused saying so (the Job controller retries
 * it). So a lookup holds its webhook thread for a read of its own (at most
 * the request timeout) or a short wait, never a hanging read of another. The first
 * lookup that finds its entry within RECORD_CACHE_AHEAD_S of expiry reads
 * the record again when a reader is free at once, and is answered from
 * what it read; the others go on using the fresh entry. A read ahead that
 * fails is not tried again before the entry expires. Without readers every
 * lookup fails with a sentence saying so.
 */
#ifndef MUSTER_RECORD_CACHE_H
#define MUSTER_RECORD_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "kube_client.h"

#define RECORD_CACHE_ENTRIES 256
#define RECORD_CACHE_TTL_S 10
#define RECORD_CACHE_AHEAD_S 3
/* The bytes all entries' records may hold together. */
#define RECORD_CACHE_BYTES_MAX (16u * 1024u * 1024u)
/* Every lookup's answer within this (the apiserver's webhook timeout is 5 s). */
#define RECORD_CACHE_DEADLINE_MS 3000u
/* How long a lookup waits for another's read of its record, or for a free
 * reader, before it is refused (normal reads take milliseconds; a lookup
 * holds one of the webhook's threads while it waits). */
#define RECORD_CACHE_WAIT_MS 500u
/* Records with more text than this are parsed one at a time. */
#define RECORD_CACHE_LARGE (64u * 1024u)
/* Most readers a cache takes. */
#define RECORD_CACHE_READERS_MAX 64

struct record_cache_options {
	/* The API clients that read records, each used by one read at a time
	 * (borrowed, must outlive the cache); none: every lookup is refused
	 * saying there is no API access. At most RECORD_CACHE_READERS_MAX. */
	struct kube_client *const *readers;
	size_t reader_count;
	/* How long one GET may take (the readers' request timeout), in ms. */
	unsigned request_timeout_ms;
	unsigned deadline_ms; /* 0: RECORD_CACHE_DEADLINE_MS */
	size_t bytes_max; /* 0: RECORD_CACHE_BYTES_MAX */
};

struct record_cache;

int record_cache_new(const struct record_cache_options *options, struct record_cache **out, char **cause);
void record_cache_free(struct record_cache *cache);

/* The selector of one pod, copied into `selector`: 1 found, 0 the record
 * has no entry for the pod (*cause says so), -1 no record, not muster's,
 * the API failed or the deadline passed (*cause says which). */
int record_cache_selector(struct record_cache *cache, const char *namespace, const char *jobset,
			  const char *uid, uint32_t attempt, const char *replicated_job, uint32_t job_index,
			  uint32_t completion, char *selector, size_t size, char **cause);

/* The selector of a whole Job (completion indexes 0..completions-1, the
 * Job half of the pin route): 1 when the record gives all of its pods one
 * selector (copied into `selector`), 2 when it holds the Job's first pod but
 * its pods go to more than one domain (they are pinned one by one; `selector`
 * is then what its pod template gets, topo_record_job_template, or ""), 0 the
 * record has no such Job, -1 no record or the API failed (*cause says which,
 * in words for a Job: JobSet makes it again once the JobSet is placed). */
int record_cache_job_selector(struct record_cache *cache, const char *namespace, const char *jobset,
			      const char *uid, uint32_t attempt, const char *replicated_job,
			      uint32_t job_index, uint32_t completions, char *selector, size_t size,
			      char **cause);

/* What the cache holds now: entries and their records' bytes (tests,
 * metrics). */
void record_cache_usage(struct record_cache *cache, size_t *entries, size_t *bytes);

/* Tests: the clock in seconds the cache counts entries' age with (default:
 * monotonic; NULL restores it). Deadlines always use the monotonic clock. */
void record_cache_set_clock(struct record_cache *cache, time_t (*clock)(void *arg), void *arg);

#endif
