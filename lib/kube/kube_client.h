/*
 * kube_client: typed-free access to the Kubernetes API over a kube_transport.
 *
 * What it does: GET, LIST (paginated with limit/continue, items handed to a
 * callback one at a time), CREATE, PATCH (merge, JSON and strategic merge),
 * UPDATE with retry on 409 Conflict, DELETE, label and field selectors, and
 * WATCH (list, then stream with bookmarks, resume from the last
 * resourceVersion, re-list on 410 Gone). Before every request it takes a
 * token from the client-side rate limiter (the config's QPS and burst);
 * connection errors, timeouts, 429 and 5xx are retried a bounded number of
 * times with exponential backoff and jitter.
 *
 * What it does not do: it does not know any resource kind. Responses arrive
 * as cJSON trees that the caller decodes into its own typed structs at once
 * (callbacks get a borrowed tree that dies when they return). Paths are
 * built by the caller, e.g. "/api/v1/namespaces/ns/configmaps/name".
 *
 * Errors: negative kube_err codes (kube_error.h); HTTP failures carry a cause
 * "METHOD path: HTTP 409: <the Status message>". Causes are malloc'd and
 * freed by the caller; `cause` may be NULL.
 *
 * Lifecycle: if kube_client_new fails there is nothing to free; after
 * success call kube_client_free (accepts NULL). The client borrows the
 * transport (ops and ctx), which must outlive it. A client is used by one
 * thread at a time: a controller gives its watch thread its own client.
 */
#ifndef MUSTER_KUBE_CLIENT_H
#define MUSTER_KUBE_CLIENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kube_config.h"
#include "kube_error.h"
#include "kube_transport.h"

/* Longest request path with its query string. */
#define KUBE_PATH_MAX 8192
/* Longest resourceVersion kept (they are opaque strings to clients). */
#define KUBE_RESOURCE_VERSION_MAX 128
/* Most pages one LIST follows; a server that keeps sending continue tokens
 * past this is treated as broken. */
#define KUBE_LIST_MAX_PAGES 100000
/* The limit a LIST without one takes when its whole answer is too large. */
#define KUBE_LIST_FIRST_SHRUNK_PAGE 256
/* Backoff between retries: base doubled per attempt, capped, jittered down
 * to half. */
#define KUBE_BACKOFF_BASE_MS 200
#define KUBE_BACKOFF_MAX_MS 10000
/* Watch re-connections back off up to this instead. */
#define KUBE_WATCH_BACKOFF_MAX_MS 30000

/* Time, injectable so that tests run instantly. NULL functions (or a NULL
 * struct) mean CLOCK_MONOTONIC and nanosleep. */
struct kube_clock {
	uint64_t (*now_ns)(void *arg);
	void (*sleep_ns)(void *arg, uint64_t ns);
	void *arg;
};

/* Selectors in Kubernetes syntax ("app=x,tier!=db", "metadata.name=y");
 * NULL or "" for none. They are URL-encoded by the client. */
struct kube_selectors {
	const char *label;
	const char *field;
};

enum kube_patch_type { KUBE_PATCH_MERGE, KUBE_PATCH_JSON, KUBE_PATCH_STRATEGIC };

struct kube_client;

/* Copies what it needs from cfg (rate limit, timeouts, limits, retries).
 * Returns 0 or MUSTER_EINVAL / MUSTER_ENOMEM. */
int kube_client_new(const struct kube_config *cfg, const struct kube_transport *ops, void *ctx,
		    const struct kube_clock *clock, struct kube_client **out, char **cause);

void kube_client_free(struct kube_client *client);

/* From now on kube_client_free also frees the transport's ctx with
 * free_ctx (kube_client_open uses it). */
void kube_client_own_transport(struct kube_client *client, void (*free_ctx)(void *ctx));

/* Every request of the client from now on gives up at once with
 * MUSTER_ESTOPPED once *stop is non-zero: before it is sent, while it is on
 * the wire, between LIST pages and items, and in its waits (rate limit,
 * backoff). NULL: never. kube_watch_run uses its own stop the same way
 * while it runs, when the client has none. Call it before the client's
 * thread uses it. */
void kube_client_set_stop(struct kube_client *client, const atomic_int *stop);

/* What a client has done since it was made, for metrics. Counters only
 * grow; another thread may read them at any time (kube_client_stats). */
#define KUBE_STATS_ERROR_SLOTS 32
struct kube_client_stats {
	uint64_t requests; /* requests sent, each retry and each watch stream included */
	uint64_t retries; /* requests repeated after a transient failure */
	/* Failed requests by code: errors[-err] for a kube_err err (MUSTER_ENOTFOUND,
	 * MUSTER_ECONFLICT... are counted too: the caller decides what they mean). */
	uint64_t errors[KUBE_STATS_ERROR_SLOTS];
	uint64_t watch_streams; /* watch connections opened */
	uint64_t relists; /* LISTs begun by kube_watch_run, the first one included */
	uint64_t watch_events; /* ADDED, MODIFIED and DELETED events delivered */
	uint64_t list_pages_shrunk; /* LIST pages asked again with half the items (too large) */
};

/* Copies the client's counters into *out. Safe from any thread while the
 * client is in use by its own (each counter is read atomically). */
void kube_client_stats(const struct kube_client *client, struct kube_client_stats *out);

/* GET path; on success *out is the parsed object, owned by the caller. */
int kube_get(struct kube_client *client, const char *path, cJSON **out, char **cause);

/* Called for each item of a list with a borrowed tree; returns 0 to go on or
 * a negative kube_err to abort the list, which then returns that value. */
typedef int (*kube_item_fn)(void *arg, const cJSON *item);

/* LISTs path (a collection) page by page with limit=page_size (0: no limit)
 * and the selectors, calling on_item for every item in order. A page larger
 * than the client's max_response_bytes is asked again with half the limit
 * (KUBE_LIST_FIRST_SHRUNK_PAGE when there was none), down to one item a
 * page, and counted in list_pages_shrunk: only one object larger than the
 * bound fails the LIST (MUSTER_ETOOBIG). On success
 * *resource_version (if not NULL) is a malloc'd copy of the list's
 * resourceVersion, to start a watch from. An expired continue token gives
 * MUSTER_EGONE; the caller starts over. */
int kube_list(struct kube_client *client, const char *path, const struct kube_selectors *selectors,
	      unsigned page_size, kube_item_fn on_item, void *arg, char **resource_version, char **cause);

/* A kube_item_fn that appends a copy of each item to the cJSON array `arg`
 * (MUSTER_ENOMEM when out of memory): a whole LIST as one tree. */
int kube_item_collect(void *arg, const cJSON *item);

/* POSTs object to the collection path; *out (if not NULL) is the created
 * object. An existing name gives MUSTER_ECONFLICT. */
int kube_create(struct kube_client *client, const char *path, const cJSON *object, cJSON **out, char **cause);

/* PATCHes path with the patch document (JSON text); *out (if not NULL) is the
 * patched object. */
int kube_patch(struct kube_client *client, const char *path, enum kube_patch_type type, const char *patch,
	       cJSON **out, char **cause);

/* PUTs object to path (it must carry metadata.resourceVersion for an
 * optimistic update). */
int kube_update(struct kube_client *client, const char *path, const cJSON *object, cJSON **out, char **cause);

/* Changes the fetched object in place. Returns 0 to PUT it, 1 when nothing
 * needs changing (kube_update_retry then succeeds without a PUT), or a
 * negative kube_err to give up. */
typedef int (*kube_mutate_fn)(void *arg, cJSON *object);

/* GET, mutate, PUT; on 409 Conflict the whole cycle is repeated, at most
 * max_attempts times in all (0 counts as 1). Gives MUSTER_ECONFLICT when the
 * attempts run out. *out (if not NULL) is the object as stored. */
int kube_update_retry(struct kube_client *client, const char *path, unsigned max_attempts,
		      kube_mutate_fn mutate, void *arg, cJSON **out, char **cause);

/* DELETEs path. A missing object gives MUSTER_ENOTFOUND. */
int kube_delete(struct kube_client *client, const char *path, char **cause);

/* DELETEs path only if the object there still has this metadata.uid (a
 * precondition the apiserver checks): an object made again under the name
 * since it was read is never deleted (MUSTER_ECONFLICT). */
int kube_delete_uid(struct kube_client *client, const char *path, const char *uid, char **cause);

/* The same with DeleteOptions.propagationPolicy ("Foreground", "Background",
 * "Orphan"; NULL: the kind's default, which orphans a batch/v1 Job's pods). */
int kube_delete_uid_propagated(struct kube_client *client, const char *path, const char *uid,
			       const char *propagation, char **cause);

/* ---- watch ---- */

enum kube_watch_type {
	KUBE_WATCH_ADDED,
	KUBE_WATCH_MODIFIED,
	KUBE_WATCH_DELETED,
	KUBE_WATCH_BOOKMARK,
	KUBE_WATCH_ERROR,
};

/* "ADDED", "MODIFIED", ... */
const char *kube_watch_type_name(enum kube_watch_type type);

struct kube_watch_event {
	enum kube_watch_type type;
	/* metadata.resourceVersion of the object; "" for ERROR. */
	char resource_version[KUBE_RESOURCE_VERSION_MAX];
	long code; /* ERROR: the Status code (410 for Gone), else 0 */
	cJSON *object; /* owned by the event; see kube_watch_event_clear */
};

/* Parses one watch line {"type": T, "object": {...}} of len bytes (need not
 * be NUL-terminated). For every type but ERROR the object must have a
 * non-empty metadata.resourceVersion shorter than KUBE_RESOURCE_VERSION_MAX.
 * Returns 0 and fills *out (free with kube_watch_event_clear), or MUSTER_EPARSE
 * / MUSTER_ENOMEM with a cause and *out holding nothing. */
int kube_watch_parse_event(const char *line, size_t len, struct kube_watch_event *out, char **cause);

/* Frees the event's object and zeroes it. Accepts NULL. */
void kube_watch_event_clear(struct kube_watch_event *event);

/* What kube_watch_run tells its caller. Any function may be NULL. Each
 * returns 0 to go on; non-zero ends kube_watch_run, which returns that value
 * if it is negative and MUSTER_OK otherwise. Objects are borrowed. */
/* The longest relist reason passed to on_relist_begin, NUL included. */
#define KUBE_RELIST_REASON_MAX 256

struct kube_watch_callbacks {
	/* A (re-)list starts: mark all known objects as unseen. May be called
	 * again without on_relist_end if a list fails midway. `reason` says
	 * why, in one line: "first list", or "the watch ended: <cause>" (410
	 * Gone, an ERROR event, a line that is not an event, an HTTP status,
	 * a transport error), or "the list failed: <cause>". */
	int (*on_relist_begin)(void *arg, const char *reason);
	int (*on_item)(void *arg, const cJSON *object);
	/* The list completed: forget the objects not seen since begin. */
	int (*on_relist_end)(void *arg, const char *resource_version);
	/* ADDED, MODIFIED or DELETED from the stream, in order. */
	int (*on_event)(void *arg, enum kube_watch_type type, const cJSON *object);
	void *arg;
};

/* Keeps a collection in view until *stop becomes non-zero: lists it
 * (page_size items a page), then watches from the list's resourceVersion with
 * bookmarks. Every event (bookmarks too) advances the resourceVersion; a
 * stream the server ends, or one idle for the watch timeout, is resumed from
 * it. 410 Gone (as a status or an ERROR event), any other ERROR event, an
 * unparsable or over-long line lead to a re-list. Connection errors, 429 and
 * 5xx are retried forever with capped backoff, and so is a 404 once the
 * collection was listed in this call (an apiserver just restarted serves
 * custom resources again a moment later), with a re-list; other errors
 * (401/403, a 404 on the first LIST, bad request) end the call with that
 * error. Returns MUSTER_OK when stopped. */
int kube_watch_run(struct kube_client *client, const char *path, const struct kube_selectors *selectors,
		   unsigned page_size, const struct kube_watch_callbacks *callbacks, const atomic_int *stop,
		   char **cause);

#endif
