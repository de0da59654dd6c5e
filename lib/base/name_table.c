/*
 * name_table: objects by namespace/name (see name_table.h).
 */
#include "name_table.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_BUCKETS_MIN 64u

uint64_t name_table_hash(const char *namespace, const char *name)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */

	for (const char *p = namespace; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211u;
	h = (h ^ '/') * 1099511628211u;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211u;
	return h;
}

struct name_node *name_table_find(const struct name_table *r, const char *namespace, const char *name)
{
	uint64_t h = name_table_hash(namespace, name);

	if (!r->bucket_count)
		return NULL;
	for (struct name_node *n = r->buckets[h & (r->bucket_count - 1)]; n; n = n->next)
		if (n->hash == h && strcmp(n->namespace, namespace) == 0 && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

/* Doubles the table (or makes the first one). On no memory the table stays
 * as it is: chains only get longer. */
static void table_grow(struct name_table *r)
{
	size_t count = r->bucket_count ? r->bucket_count * 2 : TABLE_BUCKETS_MIN;
	struct name_node **buckets = calloc(count, sizeof(*buckets));

	if (!buckets)
		return;
	for (size_t b = 0; b < r->bucket_count; b++) {
		struct name_node *n = r->buckets[b], *next;

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

int name_table_insert(struct name_table *r, struct name_node *node)
{
	if (r->count >= r->bucket_count)
		table_grow(r);
	if (!r->bucket_count)
		return -1;
	node->hash = name_table_hash(node->namespace, node->name);
	node->next = r->buckets[node->hash & (r->bucket_count - 1)];
	r->buckets[node->hash & (r->bucket_count - 1)] = node;
	r->count++;
	return 0;
}

void name_table_remove(struct name_table *r, struct name_node *victim)
{
	for (struct name_node **link = &r->buckets[victim->hash & (r->bucket_count - 1)]; *link;
	     link = &(*link)->next) {
		if (*link == victim) {
			*link = victim->next;
			r->count--;
			return;
		}
	}
}

void name_table_each(struct name_table *r, void (*fn)(void *arg, struct name_node *node), void *arg)
{
	for (size_t b = 0; b < r->bucket_count; b++) {
		struct name_node *n = r->buckets[b], *next;

		for (; n; n = next) {
			next = n->next;
			fn(arg, n);
		}
	}
}

void name_table_clear(struct name_table *r)
{
	free(r->buckets);
	memset(r, 0, sizeof(*r));
}
