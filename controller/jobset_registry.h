/*
 * jobset_registry: the JobSets a controller loop tracks, by namespace/name.
 * A chained hash table that doubles when it holds as many entries as
 * buckets, so that a pod event finds its JobSet in constant time however
 * many JobSets there are.
 *
 * What it holds: nodes the caller embeds in its own per-JobSet struct (the
 * gang loop's entry with its tracker; a placement loop may embed the same
 * node in its own). It does not allocate or free them, and it does not lock:
 * the caller's lock guards the registry and what hangs off its nodes.
 *
 * Lifecycle: a zeroed struct jobset_registry is empty and valid;
 * jobset_registry_clear frees the table (not the nodes).
 */
#ifndef MUSTER_JOBSET_REGISTRY_H
#define MUSTER_JOBSET_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

/* Embedded in the caller's struct; namespace and name point into it. */
struct registry_node {
	struct registry_node *next; /* in its bucket */
	uint64_t hash;
	const char *namespace, *name;
};

struct jobset_registry {
	struct registry_node **buckets;
	size_t bucket_count; /* a power of two, or 0 */
	size_t count;
};

/* The node of namespace/name, or NULL. */
struct registry_node *jobset_registry_find(const struct jobset_registry *registry, const char *namespace,
					   const char *name);

/* Adds node (its namespace and name set). Returns 0, or -1 when there is no
 * memory for a table. */
int jobset_registry_insert(struct jobset_registry *registry, struct registry_node *node);

/* Unlinks node (which must be in the registry). */
void jobset_registry_remove(struct jobset_registry *registry, struct registry_node *node);

/* Calls fn for every node; fn may remove (and free) the node it is given. */
void jobset_registry_each(struct jobset_registry *registry, void (*fn)(void *arg, struct registry_node *node),
			  void *arg);

/* Frees the table; the nodes are the caller's. */
void jobset_registry_clear(struct jobset_registry *registry);

#endif
