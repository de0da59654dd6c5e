/*
 * watch_hub: one LIST+WATCH of a collection, shared by the loops that need
 * it, so that a process opens one watch per kind (the gang loop and
 * placement both read JobSets and pods).
 *
 * Each consumer keeps its own kube_informer (its records and its handlers,
 * exactly as if it ran the watch itself); the hub runs the watch and feeds
 * every consumer's informer by hand (kube_informer_relist_begin, _item,
 * _relist_end, _event), in the order received. A consumer says what it
 * would have asked the apiserver for (a path and selectors) and gives a
 * filter that says the same of an object. When the active consumers ask the
 * same, that is what the hub asks, and nothing is filtered. Otherwise the
 * hub asks for its wide query (the whole collection, no selector) and
 * filters for each consumer: an object it wants is fed as received; one it
 * kept and no longer wants (its label removed, say) is fed as DELETED,
 * which is what the apiserver sends a watch whose selector the object
 * left. So each consumer sees what its own watch would have shown: its
 * re-lists (the first, after 410 Gone, after a broken stream), its
 * resourceVersion order, its deletes of objects a LIST no longer has.
 *
 * A consumer may join after the start (placement's pods, once a JobSet asks
 * for a placement): the watch is ended and begun again with the new query;
 * the consumers already there see one re-list, with the reason "a consumer
 * joined the watch".
 *
 * What it does not do: decide anything, or keep anything itself (the
 * consumers' informers do).
 *
 * Threads: the hub runs one thread of its own (watch_hub_start); every
 * consumer's handlers are called on it, one consumer after another.
 * watch_hub_join and watch_hub_stop may be called from any thread.
 *
 * Lifecycle: watch_hub_new succeeds fully or leaves nothing; watch_hub_add
 * its consumers (before the start); watch_hub_start; once the process's stop
 * flag is set, watch_hub_stop then watch_hub_wait (always, after a start,
 * even a failed one); watch_hub_free (accepts NULL; the consumers'
 * informers are theirs).
 */
#ifndef MUSTER_WATCH_HUB_H
#define MUSTER_WATCH_HUB_H

#include <stdatomic.h>

#include <cjson/cJSON.h>

#include "kube_client.h"
#include "kube_informer.h"

#define WATCH_HUB_CONSUMERS_MAX 4
/* Longest selector a consumer may ask for. */
#define WATCH_HUB_SELECTOR_MAX 256

struct watch_hub_consumer_spec {
	struct kube_informer *informer; /* the consumer's, fed by the hub on its thread */
	const char *path; /* what its own watch would ask: the collection's path */
	struct kube_selectors selectors; /* and selectors (copied; NULL: none) */
	/* 1 when it wants `object`: the selectors above, said of an object
	 * (used when the hub asks for more than this consumer). */
	int (*wants)(void *arg, const cJSON *object);
	void *arg;
};

struct watch_hub;

/* A hub watching with `client` (borrowed: used by the hub's thread only),
 * whose wide query is `wide_path` with no selector. Returns 0, or
 * MUSTER_ENOMEM / MUSTER_EINVAL with *cause. */
int watch_hub_new(struct kube_client *client, const char *wide_path, unsigned page_size,
		  struct watch_hub **out, char **cause);

void watch_hub_free(struct watch_hub *hub);

/* Adds a consumer, fed from the start when `active`, else once joined.
 * Returns its index, or -1 (more than WATCH_HUB_CONSUMERS_MAX, a path or
 * selector too long, or the hub started). */
int watch_hub_add(struct watch_hub *hub, const struct watch_hub_consumer_spec *spec, int active);

/* Makes consumer `index` active: the watch begins again with it. */
void watch_hub_join(struct watch_hub *hub, int index);

/* Starts the hub's thread. Returns 0, or MUSTER_ENOMEM with *cause after
 * setting *stop. When its watch ends with an error retrying cannot fix, the
 * hub sets *stop (so the loops around it stop too). */
int watch_hub_start(struct watch_hub *hub, atomic_int *stop, char **cause);

/* Ends the watch (at once: the stream is left within a second). */
void watch_hub_stop(struct watch_hub *hub);

/* Waits for the hub's thread. Returns 0, or the watch's error with *cause
 * "watch PATH: ..." (cause may be NULL). */
int watch_hub_wait(struct watch_hub *hub, char **cause);

#endif
