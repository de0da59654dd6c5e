/*
 * jobset_registry: JobSets by namespace/name (see jobset_registry.h).
 */
#include "jobset_registry.h"

#include <stdlib.h>
#include <string.h>

#define REGISTRY_BUCKETS_MIN 64u

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

struct registry_node *jobset_registry_find(const struct jobset_registry *r, const char *namespace,
					   const char *name)
{
	uint64_t h = key_hash(namespace, name);

	if (!r->bucket_count)
		return NULL;
	for (struct registry_node *n = r->buckets[h & (r->bucket_count - 1)]; n; n = n->next)
		if (n->hash == h && strcmp(n->namespace, namespace) == 0 && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

/* Doubles the table (or makes the first one). On no memory the table stays
 * as it is: chains only get longer. */
static void registry_grow(struct jobset_registry *r)
{
	size_t count = r->bucket_count ? r->bucket_count * 2 : REGISTRY_BUCKETS_MIN;
	struct registry_node **buckets = calloc(count, sizeof(*buckets));

	if (!buckets)
		return;
	for (size_t b = 0; b < r->bucket_count; b++) {
		struct registry_node *n = r->buckets[b], *next;

		for (; n; n = next) {
			next = n->next;
			n->next = buckets[n->hash & (count - 1)];
			buckets[n->hash & (count - 1)] = n;
		}
	}
	free(r->buckets);
	r->buckets = buckets;
	r->bucket_count = count;
}

int jobset_registry_insert(struct jobset_registry *r, struct registry_node *node)
{
	if (r->count >= r->bucket_count)
		registry_grow(r);
	if (!r->bucket_count)
		return -1;
	node->hash = key_hash(node->namespace, node->name);
	node->next = r->buckets[node->hash & (r->bucket_count - 1)];
	r->buckets[node->hash & (r->bucket_count - 1)] = node;
	r->count++;
	return 0;
}

void jobset_registry_remove(struct jobset_registry *r, struct registry_node *victim)
{
	for (struct registry_node **link = &r->buckets[victim->hash & (r->bucket_count - 1)]; *link;
	     link = &(*link)->next) {
		if (*link == victim) {
			*link = victim->next;
			r->count--;
			return;
		}
	}
}

void jobset_registry_each(struct jobset_registry *r, void (*fn)(void *arg, struct registry_node *node),
			  void *arg)
{
	for (size_t b = 0; b < r->bucket_count; b++) {
		struct registry_node *n = r->buckets[b], *next;

		for (; n; n = next) {
			next = n->next;
			fn(arg, n);
		}
	}
}

void jobset_registry_clear(struct jobset_registry *r)
{
	free(r->buckets);
	memset(r, 0, sizeof(*r));
}
