/*
 * kube_informer: the keyed record of a watched collection (see
 * kube_informer.h). A table by namespace/name (lib/base/name_table);
 * each record is one allocation holding its key, its
 * resourceVersion and the caller's value. A LIST is told apart from the
 * one before by a serial number, so finding what it did not contain is one
 * pass over the table.
 */
#define _POSIX_C_SOURCE 200809L

#include "kube_informer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_error.h"
#include "name_table.h"

struct record {
	struct name_node node; /* first: a record is its node; namespace and name point into key */
	uint64_t listed; /* serial of the last LIST that contained it */
	void *value;
	char resource_version[KUBE_INFORMER_VERSION_MAX];
	char key[]; /* "namespace\0name\0" */
};

struct kube_informer {
	struct kube_informer_handlers handlers;
	struct name_table table;
	_Atomic size_t count; /* the table's, readable without the caller's lock */
	uint64_t list_serial; /* LISTs begun */
	char resource_version[KUBE_RESOURCE_VERSION_MAX];
};

static struct record *find(const struct kube_informer *informer, const char *namespace, const char *name)
{
	return (struct record *)name_table_find(&informer->table, namespace, name);
}

/* A new record (not yet with a value), or NULL when there is no room. */
static struct record *insert(struct kube_informer *informer, const char *namespace, const char *name)
{
	size_t namespace_len = strlen(namespace), name_len = strlen(name);
	struct record *r;

	if (atomic_load(&informer->count) >= KUBE_INFORMER_OBJECTS_MAX)
		return NULL;
	r = calloc(1, sizeof(*r) + namespace_len + name_len + 2);
	if (!r)
		return NULL;
	memcpy(r->key, namespace, namespace_len + 1);
	memcpy(r->key + namespace_len + 1, name, name_len + 1);
	r->node.namespace = r->key;
	r->node.name = r->key + namespace_len + 1;
	if (name_table_insert(&informer->table, &r->node)) {
		free(r);
		return NULL;
	}
	atomic_fetch_add(&informer->count, 1);
	return r;
}

static void release_value(struct kube_informer *informer, void *value)
{
	if (value && informer->handlers.release)
		informer->handlers.release(informer->handlers.arg, value);
}

/* Unlinks r and frees it, value included. */
static void drop(struct kube_informer *informer, struct record *r)
{
	name_table_remove(&informer->table, &r->node);
	release_value(informer, r->value);
	free(r);
	atomic_fetch_sub(&informer->count, 1);
}

int kube_informer_new(const struct kube_informer_handlers *handlers, struct kube_informer **out, char **cause)
{
	struct kube_informer *informer = calloc(1, sizeof(*informer));

	*out = NULL;
	if (!informer)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for an informer");
	informer->handlers = *handlers;
	*out = informer;
	return 0;
}

static void drop_each(void *arg, struct name_node *node)
{
	drop(arg, (struct record *)node);
}

void kube_informer_free(struct kube_informer *informer)
{
	if (!informer)
		return;
	name_table_each(&informer->table, drop_each, informer);
	name_table_clear(&informer->table);
	free(informer);
}

static const char *metadata_string(const cJSON *object, const char *key)
{
	const cJSON *value =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(object, "metadata"), key);

	return cJSON_IsString(value) ? value->valuestring : NULL;
}

static void copy_version(char *out, size_t size, const char *version)
{
	size_t len = version ? strlen(version) : 0;

	if (len >= size)
		len = 0; /* longer than any apiserver's: not kept */
	memcpy(out, version ? version : "", len);
	out[len] = '\0';
}

/* An object from a LIST (relist set) or the stream: the record made or
 * changed (or dropped for DELETED), then the caller told. An object without
 * a name, or a key too long, is skipped: it cannot be kept, and no
 * apiserver sends one. */
static int apply(struct kube_informer *informer, enum kube_watch_type type, const cJSON *object, int relist)
{
	const char *namespace = metadata_string(object, "namespace");
	const char *name = metadata_string(object, "name");
	const char *version = metadata_string(object, "resourceVersion");
	struct kube_informer_event event = { .type = type, .relist = relist, .old_resource_version = "" };
	char old_version[KUBE_INFORMER_VERSION_MAX];
	struct record *r;
	int ret = 0;

	if (!namespace)
	namespace = "";
	if (!name || strlen(namespace) > KUBE_INFORMER_KEY_MAX || strlen(name) > KUBE_INFORMER_KEY_MAX)
		return 0;
	if (version && !relist)
		copy_version(informer->resource_version, sizeof(informer->resource_version), version);
	r = find(informer, namespace, name);
	event.namespace = namespace;
	event.name = name;
	event.resource_version = version ? version : "";
	event.object = object;
	if (r) {
		memcpy(old_version, r->resource_version, sizeof(old_version));
		event.old_resource_version = old_version;
		event.old_value = r->value;
	}
	if (type == KUBE_WATCH_DELETED) {
		event.change = KUBE_INFORMER_DELETE;
		if (r) {
			r->value = NULL; /* old_value: released after the call */
			drop(informer, r);
		}
		if (informer->handlers.on_change)
			ret = informer->handlers.on_change(informer->handlers.arg, &event);
		release_value(informer, event.old_value);
		return ret;
	}
	event.change = r ? KUBE_INFORMER_UPDATE : KUBE_INFORMER_ADD;
	if (!r)
		r = insert(informer, namespace, name); /* NULL: told, not kept */
	event.value =
		informer->handlers.keep ? informer->handlers.keep(informer->handlers.arg, object) : NULL;
	if (r) {
		r->value = event.value;
		copy_version(r->resource_version, sizeof(r->resource_version), version);
		if (relist)
			r->listed = informer->list_serial;
	}
	if (informer->handlers.on_change)
		ret = informer->handlers.on_change(informer->handlers.arg, &event);
	release_value(informer, event.old_value);
	if (!r)
		release_value(informer, event.value);
	return ret;
}

int kube_informer_relist_begin(struct kube_informer *informer, const char *reason)
{
	informer->list_serial++;
	return informer->handlers.on_relist_begin
		       ? informer->handlers.on_relist_begin(informer->handlers.arg, reason ? reason : "")
		       : 0;
}

int kube_informer_item(struct kube_informer *informer, const cJSON *object)
{
	return apply(informer, KUBE_WATCH_ADDED, object, 1);
}

struct sweep {
	struct kube_informer *informer;
	int ret; /* the first handler's error: the others are not told */
};

/* A record the last LIST did not contain: unlinked first (on_change may not
 * see it), told as deleted, freed. */
static void sweep_one(void *arg, struct name_node *node)
{
	struct sweep *sweep = arg;
	struct kube_informer *informer = sweep->informer;
	struct record *r = (struct record *)node;
	struct kube_informer_event event = {
		.change = KUBE_INFORMER_DELETE,
		.type = KUBE_WATCH_DELETED,
		.relist = 1,
		.namespace = r->node.namespace,
		.name = r->node.name,
		.resource_version = "",
		.old_resource_version = r->resource_version,
		.old_value = r->value,
	};

	if (r->listed == informer->list_serial)
		return;
	name_table_remove(&informer->table, &r->node);
	if (informer->handlers.on_change && !sweep->ret)
		sweep->ret = informer->handlers.on_change(informer->handlers.arg, &event);
	release_value(informer, r->value);
	free(r);
	atomic_fetch_sub(&informer->count, 1);
}

/* Every record the LIST did not contain is dropped and told as deleted. */
int kube_informer_relist_end(struct kube_informer *informer, const char *resource_version)
{
	struct sweep sweep = { informer, 0 };

	copy_version(informer->resource_version, sizeof(informer->resource_version), resource_version);
	name_table_each(&informer->table, sweep_one, &sweep);
	if (sweep.ret)
		return sweep.ret;
	return informer->handlers.on_relist_end
		       ? informer->handlers.on_relist_end(informer->handlers.arg, resource_version)
		       : 0;
}

int kube_informer_event(struct kube_informer *informer, enum kube_watch_type type, const cJSON *object)
{
	return apply(informer, type, object, 0);
}

static int run_relist_begin(void *arg, const char *reason)
{
	return kube_informer_relist_begin(arg, reason);
}

static int run_item(void *arg, const cJSON *object)
{
	return kube_informer_item(arg, object);
}

static int run_relist_end(void *arg, const char *resource_version)
{
	return kube_informer_relist_end(arg, resource_version);
}

static int run_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	return kube_informer_event(arg, type, object);
}

int kube_informer_run(struct kube_informer *informer, struct kube_client *client, const char *path,
		      const struct kube_selectors *selectors, unsigned page_size, const atomic_int *stop,
		      char **cause)
{
	const struct kube_watch_callbacks callbacks = { run_relist_begin, run_item, run_relist_end, run_event,
							informer };

	return kube_watch_run(client, path, selectors, page_size, &callbacks, stop, cause);
}

void *kube_informer_get(const struct kube_informer *informer, const char *namespace, const char *name)
{
	const struct record *r = find(informer, namespace, name);

	return r ? r->value : NULL;
}

int kube_informer_has(const struct kube_informer *informer, const char *namespace, const char *name)
{
	return find(informer, namespace, name) != NULL;
}

size_t kube_informer_count(const struct kube_informer *informer)
{
	return atomic_load((_Atomic size_t *)&informer->count);
}

const char *kube_informer_resource_version(const struct kube_informer *informer)
{
	return informer->resource_version;
}
