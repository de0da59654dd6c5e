/*
 * name_table: Kubernetes objects by namespace/name. A chained hash table
 * that doubles when it holds as many entries as buckets, so that an event
 * finds its object in constant time however many there are. Used by the
 * controller's registry of JobSets (an event of a pod finds its JobSet) and
 * by the informer's store (lib/kube/kube_informer).
 *
 * What it holds: nodes the caller embeds in its own struct. It does not
 * allocate or free them, and it does not lock: the caller's lock guards the
 * table and what hangs off its nodes.
 *
 * Lifecycle: a zeroed struct name_table is empty and valid;
 * name_table_clear frees the table (not the nodes).
 */
#ifndef MUSTER_NAME_TABLE_H
#define MUSTER_NAME_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* Embedded in the caller's struct; namespace and name point into it. */
struct name_node {
	struct name_node *next; /* in its bucket */
	uint64_t hash;
	const char *namespace, *name;
};

struct name_table {
	struct name_node **buckets;
	size_t bucket_count; /* a power of two, or 0 */
	size_t count;
};

/* The node of namespace/name, or NULL (hash: name_table_hash of the key). */
struct name_node *name_table_find(const struct name_table *table, const char *namespace, const char *name);

/* Adds node (its namespace and name set). Returns 0, or -1 when there is no
 * memory for a table. */
int name_table_insert(struct name_table *table, struct name_node *node);

/* Unlinks node (which must be in the table). */
void name_table_remove(struct name_table *table, struct name_node *node);

/* Calls fn for every node; fn may remove (and free) the node it is given,
 * and no other. */
void name_table_each(struct name_table *table, void (*fn)(void *arg, struct name_node *node), void *arg);

/* The hash of a key, as nodes hold it. */
uint64_t name_table_hash(const char *namespace, const char *name);

/* Frees the table; the nodes are the caller's. */
void name_table_clear(struct name_table *table);

#endif
