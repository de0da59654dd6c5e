/*
 * kube_informer: the keyed record of a watched collection (see
 * kube_informer.h). A chained hash table by namespace/name that doubles as
 * it fills; each record is one allocation holding its key, its
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

#define BUCKETS_MIN 64u

struct record {
	struct record *next; /* in its bucket */
	uint64_t hash;
	uint64_t listed; /* serial of the last LIST that contained it */
	void *value;
	char resource_version[KUBE_INFORMER_VERSION_MAX];
	const char *name; /* points into key */
	char key[]; /* "namespace\0name\0" */
};

struct kube_informer {
	struct kube_informer_handlers handlers;
	struct record **buckets;
	size_t bucket_count; /* a power of two, or 0 */
	_Atomic size_t count;
	uint64_t list_serial; /* LISTs begun */
	char resource_version[KUBE_RESOURCE_VERSION_MAX];
};

static uint64_t key_hash(const char *namespace, const char *name)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */

	for (const char *p = namespace; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211u;
	h = (h ^ '/') * 1099511628211u;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211u;
	return h;
}

static struct record *find(const struct kube_informer *informer, const char *namespace, const char *name,
			   uint64_t hash)
{
	if (!informer->bucket_count)
		return NULL;
	for (struct record *r = informer->buckets[hash & (informer->bucket_count - 1)]; r; r = r->next)
		if (r->hash == hash && strcmp(r->key, namespace) == 0 && strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

/* Doubles the table (or makes the first one). Without memory it stays as it
 * is: chains only get longer. */
static void grow(struct kube_informer *informer)
{
	size_t count = informer->bucket_count ? informer->bucket_count * 2 : BUCKETS_MIN;
	struct record **buckets = calloc(count, sizeof(*buckets));

	if (!buckets)
		return;
	for (size_t b = 0; b < informer->bucket_count; b++) {
		struct record *r = informer->buckets[b], *next;

		for (; r; r = next) {
			next = r->next;
			r->next = buckets[r->hash & (count - 1)];
			buckets[r->hash & (count - 1)] = r;
		}
	}
	free(informer->buckets);
	informer->buckets = buckets;
	informer->bucket_count = count;
}

/* A new record (not yet with a value), or NULL when there is no room. */
static struct record *insert(struct kube_informer *informer, const char *namespace, const char *name,
			     uint64_t hash)
{
	size_t namespace_len = strlen(namespace), name_len = strlen(name);
	struct record *r;

	if (atomic_load(&informer->count) >= KUBE_INFORMER_OBJECTS_MAX)
		return NULL;
	if (atomic_load(&informer->count) >= informer->bucket_count)
		grow(informer);
	if (!informer->bucket_count)
		return NULL;
	r = calloc(1, sizeof(*r) + namespace_len + name_len + 2);
	if (!r)
		return NULL;
	memcpy(r->key, namespace, namespace_len + 1);
	memcpy(r->key + namespace_len + 1, name, name_len + 1);
	r->name = r->key + namespace_len + 1;
	r->hash = hash;
	r->next = informer->buckets[hash & (informer->bucket_count - 1)];
	informer->buckets[hash & (informer->bucket_count - 1)] = r;
	atomic_fetch_add(&informer->count, 1);
	return r;
}

static void release_value(struct kube_informer *informer, void *value)
{
	if (value && informer->handlers.release)
		informer->handlers.release(informer->handlers.arg, value);
}

/* Unlinks r (found at *link) and frees it, value included. */
static void drop(struct kube_informer *informer, struct record **link)
{
	struct record *r = *link;

	*link = r->next;
	release_value(informer, r->value);
	free(r);
	atomic_fetch_sub(&informer->count, 1);
}

static struct record **link_of(struct kube_informer *informer, const struct record *victim)
{
	struct record **link = &informer->buckets[victim->hash & (informer->bucket_count - 1)];

	while (*link != victim)
		link = &(*link)->next;
	return link;
}

int kube_informer_new(const struct kube_informer_handlers *handlers, struct kube_informer **out, char **cause)
{
	struct kube_informer *informer = calloc(1, sizeof(*informer));

	*out = NULL;
	if (!informer)
		return kube_cause(cause, KUBE_ENOMEM, "no memory for an informer");
	informer->handlers = *handlers;
	*out = informer;
	return 0;
}

void kube_informer_free(struct kube_informer *informer)
{
	if (!informer)
		return;
	for (size_t b = 0; b < informer->bucket_count; b++)
		while (informer->buckets[b])
			drop(informer, &informer->buckets[b]);
	free(informer->buckets);
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
	uint64_t hash;
	int ret = 0;

	if (!namespace)
	namespace = "";
	if (!name || strlen(namespace) > KUBE_INFORMER_KEY_MAX || strlen(name) > KUBE_INFORMER_KEY_MAX)
		return 0;
	if (version && !relist)
		copy_version(informer->resource_version, sizeof(informer->resource_version), version);
	hash = key_hash(namespace, name);
	r = find(informer, namespace, name, hash);
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
			drop(informer, link_of(informer, r));
		}
		if (informer->handlers.on_change)
			ret = informer->handlers.on_change(informer->handlers.arg, &event);
		release_value(informer, event.old_value);
		return ret;
	}
	event.change = r ? KUBE_INFORMER_UPDATE : KUBE_INFORMER_ADD;
	if (!r)
		r = insert(informer, namespace, name, hash); /* NULL: told, not kept */
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

int kube_informer_relist_begin(struct kube_informer *informer)
{
	informer->list_serial++;
	return informer->handlers.on_relist_begin ? informer->handlers.on_relist_begin(informer->handlers.arg)
						  : 0;
}

int kube_informer_item(struct kube_informer *informer, const cJSON *object)
{
	return apply(informer, KUBE_WATCH_ADDED, object, 1);
}

/* Every record the LIST did not contain is dropped and told as deleted. */
int kube_informer_relist_end(struct kube_informer *informer, const char *resource_version)
{
	int ret = 0;

	copy_version(informer->resource_version, sizeof(informer->resource_version), resource_version);
	for (size_t b = 0; b < informer->bucket_count; b++) {
		struct record **link = &informer->buckets[b];

		while (*link) {
			struct record *r = *link;
			struct kube_informer_event event = {
				.change = KUBE_INFORMER_DELETE,
				.type = KUBE_WATCH_DELETED,
				.relist = 1,
				.namespace = r->key,
				.name = r->name,
				.resource_version = "",
				.old_resource_version = r->resource_version,
				.old_value = r->value,
			};

			if (r->listed == informer->list_serial) {
				link = &r->next;
				continue;
			}
			*link = r->next; /* unlinked first: on_change may not see it */
			if (informer->handlers.on_change && !ret)
				ret = informer->handlers.on_change(informer->handlers.arg, &event);
			release_value(informer, r->value);
			free(r);
			atomic_fetch_sub(&informer->count, 1);
		}
	}
	if (ret)
		return ret;
	return informer->handlers.on_relist_end
		       ? informer->handlers.on_relist_end(informer->handlers.arg, resource_version)
		       : 0;
}

int kube_informer_event(struct kube_informer *informer, enum kube_watch_type type, const cJSON *object)
{
	return apply(informer, type, object, 0);
}

static int run_relist_begin(void *arg)
{
	return kube_informer_relist_begin(arg);
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
	const struct record *r = find(informer, namespace, name, key_hash(namespace, name));

	return r ? r->value : NULL;
}

size_t kube_informer_count(const struct kube_informer *informer)
{
	return atomic_load((_Atomic size_t *)&informer->count);
}

const char *kube_informer_resource_version(const struct kube_informer *informer)
{
	return informer->resource_version;
}
