/*
 * record_cache: the pod route's copies of placement records, read from the
 * API (GET the ConfigMap `<jobset>-placement`) and kept for a few seconds,
 * so that the 5,000 pods of a JobSet cost one GET, not 5,000.
 *
 * An entry is keyed by namespace/JobSet name and holds the parsed record
 * (lib/topo/topo_record.h) with the uid it was written for. A lookup for a
 * pod of another uid (a JobSet deleted and made again under the same name)
 * or of another restart attempt, or an entry older than RECORD_CACHE_TTL_S,
 * reads the API again; a record of another attempt than the pod's does not
 * pin it (each attempt is placed afresh). A record written before records
 * named their attempt pins pods of any attempt. A record
 * not found is not cached: the controller may write it a moment later, and
 * the Job controller retries the pod.
 *
 * An entry counts from the moment its GET was sent, so a record is never
 * used longer than RECORD_CACHE_TTL_S after the API served it (the
 * controller waits that long before acting on a rewritten record).
 *
 * Threads: lookups run concurrently under one short lock; the GET is made
 * outside it, one at a time (a second lock), and lookups that waited for a
 * GET use what it read instead of reading again. The first lookup that
 * finds its entry within RECORD_CACHE_AHEAD_S of expiry reads the record
 * again and is answered from what it read, while the others go on using the
 * fresh entry: under a steady stream of pods one lookup per JobSet and
 * period waits for the API, not all of them (when all of them waited at each
 * expiry, a busy apiserver held every pod create of the JobSet for hundreds
 * of milliseconds every 10 s). A read ahead that fails is not tried again
 * before the entry expires. Without an API client every lookup fails with a
 * sentence saying so.
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

struct record_cache;

/* client may be NULL (no API access); it is used under the cache's lock. */
int record_cache_new(struct kube_client *client, struct record_cache **out, char **cause);
void record_cache_free(struct record_cache *cache);

/* The selector of one pod, copied into `selector`: 1 found, 0 the record
 * has no entry for the pod (*cause says so), -1 no record or the API failed
 * (*cause says which). */
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

/* Tests: the clock in seconds the cache counts with (default: monotonic;
 * NULL restores it). */
void record_cache_set_clock(struct record_cache *cache, time_t (*clock)(void *arg), void *arg);

#endif
