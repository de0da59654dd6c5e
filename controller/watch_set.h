/*
 * watch_set: the watch threads of a controller loop. Each watch is one
 * kube_informer run in its own thread with its own API client; when one ends
 * with an error retrying cannot fix, the shared stop flag is set so the
 * others (and the loop around them) stop too.
 *
 * What it does not do: decide what a watch means. The informers' handlers
 * are the loop's (placement's Node watch today; the JobSet and pod watches,
 * shared by both loops, are watch_hub's).
 *
 * Lifecycle: a zeroed struct watch_set is empty; watch_set_add up to
 * WATCH_SET_MAX watches, watch_set_start, then watch_set_join once *stop is
 * set (it always must be called after a start, even a failed one).
 */
#ifndef MUSTER_WATCH_SET_H
#define MUSTER_WATCH_SET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "kube_client.h"
#include "kube_informer.h"

#define WATCH_SET_MAX 8

struct watch_spec {
	struct kube_client *client; /* used by this watch's thread only */
	struct kube_informer *informer;
	char path[KUBE_PATH_MAX];
	struct kube_selectors selectors; /* borrowed strings, may be NULL */
	unsigned page_size; /* LIST page size */
};

/* One watch of a set, with its thread's outcome. */
struct watch_run {
	struct watch_spec spec;
	pthread_t thread;
	atomic_int *stop;
	int err;
	char *cause;
};

struct watch_set {
	size_t count, started;
	struct watch_run watches[WATCH_SET_MAX];
};

/* Adds a watch (spec copied). Returns 0, or -1 when the set is full. */
int watch_set_add(struct watch_set *set, const struct watch_spec *spec);

/* Starts a thread per watch. Returns 0, or MUSTER_ENOMEM with *cause after
 * setting *stop (the watches started stop; join them). */
int watch_set_start(struct watch_set *set, atomic_int *stop, char **cause);

/* Waits for every started watch. Returns 0, or the first watch's error with
 * *cause "watch PATH: ..." (cause may be NULL). */
int watch_set_join(struct watch_set *set, char **cause);

#endif
