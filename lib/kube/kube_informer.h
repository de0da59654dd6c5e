/*
 * kube_informer: a LIST+WATCH cache of one collection, keyed by
 * namespace/name, on top of kube_watch_run (which lists, watches from the
 * list's resourceVersion, resumes, and re-lists on 410 Gone).
 *
 * What it adds: the bookkeeping every watch of a controller would otherwise
 * write again. It keeps one record per object (its key, its
 * resourceVersion, and what the caller chose to keep of it) and turns the
 * stream of LIST items and watch events into add / update / delete
 * callbacks. A re-list (the first LIST, or one after 410 Gone or a broken
 * stream) is bracketed by relist_begin and relist_end; objects that were
 * known before and are not in the LIST are reported deleted (with `relist`
 * set and no object) just before relist_end.
 *
 * What it does not do: it does not decode objects. The caller's keep()
 * turns the borrowed cJSON tree into its own value (a small struct, or
 * nothing), so memory per object is the key, the resourceVersion and that
 * value: bounded by the caller, never the whole object.
 *
 * Threads: an informer is run by one thread (kube_informer_run) and its
 * callbacks are called on that thread; kube_informer_count may be read from
 * any thread.
 *
 * Lifecycle: kube_informer_new succeeds fully or leaves nothing;
 * kube_informer_free (accepts NULL) frees the kept values with release().
 */
#ifndef MUSTER_KUBE_INFORMER_H
#define MUSTER_KUBE_INFORMER_H

#include <stdatomic.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "kube_client.h"

/* Longest namespace and name kept (Kubernetes names are at most 253). */
#define KUBE_INFORMER_KEY_MAX 253
/* Longest resourceVersion kept per object, with its NUL: etcd's are
 * decimal 64-bit numbers. A longer one is kept as "" (the object still is). */
#define KUBE_INFORMER_VERSION_MAX 32
/* Most objects kept; beyond, new objects are reported but not kept. */
#define KUBE_INFORMER_OBJECTS_MAX 1000000u

enum kube_informer_change {
	KUBE_INFORMER_ADD, /* an object not kept before */
	KUBE_INFORMER_UPDATE, /* a kept object, again (a LIST item, ADDED or MODIFIED) */
	KUBE_INFORMER_DELETE, /* a DELETED event, or a kept object absent from a LIST */
};

/* What a change callback is told. Everything is borrowed for the call. */
struct kube_informer_event {
	enum kube_informer_change change;
	/* As received: ADDED for a LIST item, else the event's type; DELETED
	 * for an object absent from a LIST. */
	enum kube_watch_type type;
	int relist; /* from a LIST: an item, or absent from it */
	const char *namespace; /* "" for a cluster-scoped object */
	const char *name;
	const char *resource_version; /* the object's; "" when absent from a LIST */
	const char *old_resource_version; /* UPDATE, DELETE: the one kept before, else "" */
	const cJSON *object; /* NULL when absent from a LIST */
	void *value; /* ADD, UPDATE: what keep() made of the object (may be NULL) */
	void *old_value; /* UPDATE, DELETE: what was kept before (released after the call) */
};

/* The caller's side. Any function may be NULL. */
struct kube_informer_handlers {
	/* What to keep of an object: a value the informer holds until the next
	 * change of that object (then passed as old_value and released). NULL
	 * keeps nothing but the key and the resourceVersion. */
	void *(*keep)(void *arg, const cJSON *object);
	/* Frees a value made by keep(). */
	void (*release)(void *arg, void *value);
	/* A change, after the record is updated. Returns 0 to go on; non-zero
	 * ends kube_informer_run (see kube_watch_callbacks). */
	int (*on_change)(void *arg, const struct kube_informer_event *event);
	/* A LIST starts (may start again before it ends, if it fails midway);
	 * `reason` as kube_watch_callbacks.on_relist_begin says. */
	int (*on_relist_begin)(void *arg, const char *reason);
	/* A LIST completed, after the deletes of what it did not contain. */
	int (*on_relist_end)(void *arg, const char *resource_version);
	void *arg;
};

struct kube_informer;

/* Makes an empty informer. Returns 0, or MUSTER_ENOMEM with *cause
 * (malloc'ed, the caller frees). handlers is copied. */
int kube_informer_new(const struct kube_informer_handlers *handlers, struct kube_informer **out,
		      char **cause);

void kube_informer_free(struct kube_informer *informer);

/* kube_watch_run over path with the informer's bookkeeping; see there for
 * what ends it. The informer's records survive the call. */
int kube_informer_run(struct kube_informer *informer, struct kube_client *client, const char *path,
		      const struct kube_selectors *selectors, unsigned page_size, const atomic_int *stop,
		      char **cause);

/* Feeds the informer by hand (what kube_informer_run does for each LIST and
 * watch callback): for tests and replays. Same return values as the
 * handlers'. */
int kube_informer_relist_begin(struct kube_informer *informer, const char *reason);
int kube_informer_item(struct kube_informer *informer, const cJSON *object);
int kube_informer_relist_end(struct kube_informer *informer, const char *resource_version);
int kube_informer_event(struct kube_informer *informer, enum kube_watch_type type, const cJSON *object);

/* The value kept for namespace/name, or NULL (unknown, or nothing kept).
 * On the informer's thread only. */
void *kube_informer_get(const struct kube_informer *informer, const char *namespace, const char *name);

/* 1 when namespace/name is kept (whatever its value), else 0. On the
 * informer's thread only. */
int kube_informer_has(const struct kube_informer *informer, const char *namespace, const char *name);

/* Objects kept. Any thread. */
size_t kube_informer_count(const struct kube_informer *informer);

/* The resourceVersion of the last LIST or event seen ("" before any). On
 * the informer's thread only. */
const char *kube_informer_resource_version(const struct kube_informer *informer);

#endif
