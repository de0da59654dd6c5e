/*
 * topo_cache: the cluster as placement sees it, kept from watch events:
 * every Node (labels, taints, cordon, Ready, allocatable) and the requests
 * of every pod bound and not ended (DaemonSets, static pods, other tenants:
 * free = allocatable - used, as kube-scheduler counts requests, init
 * containers and overhead included; topo_objects.h decodes both). A
 * snapshot gives the topo_cluster a tree is built from.
 *
 * Compact by design, for clusters of 10,000 nodes and 100,000 pods: a pod
 * is its key, the node it holds (shared with the node's other pods) and an
 * interned request vector (pods of one template share one); a node is its
 * decoded object in a small store of its own, freed when it changes or
 * goes. Pods may arrive before their node (a watch's order is per
 * resource): their use waits on the node's name and counts once it comes.
 *
 * Pure: no I/O, no lock (the caller's watch threads serialize). Errors:
 * -1 and a cause (docs/errors.md); a bad object changes nothing.
 */
#ifndef MUSTER_TOPO_CACHE_H
#define MUSTER_TOPO_CACHE_H

#include <stddef.h>

#include "topo_tree.h"

struct cJSON;
struct topo_cache;

/* A cache tracking `resources` (cpu, memory, pods and any extended ones, at
 * most TOPO_RESOURCES_MAX; copied). */
int topo_cache_new(const char *const *resources, size_t count, struct topo_cache **out, char **cause);

void topo_cache_free(struct topo_cache *cache);

/* A Node added or changed (watch ADDED/MODIFIED, or a LIST item). */
int topo_cache_node_put(struct topo_cache *cache, const struct cJSON *node, char **cause);

/* A Node deleted; its pods' use stays waiting on the name. */
void topo_cache_node_delete(struct topo_cache *cache, const char *name);

/* A pod added or changed: its use counts while it is bound and not ended,
 * and is dropped when it ends. */
int topo_cache_pod_put(struct topo_cache *cache, const struct cJSON *pod, char **cause);

/* A pod deleted. */
void topo_cache_pod_delete(struct topo_cache *cache, const char *namespace, const char *name);

/* Every node known, with its use, as a cluster (nodes in name order; a
 * node reported NotReady has not_ready set, and placement leaves it out). Valid until the next call on the
 * cache. */
int topo_cache_cluster(struct topo_cache *cache, struct topo_cluster *out, char **cause);

struct topo_cache_stats {
	size_t nodes, pods, shapes; /* Nodes, pods holding resources, distinct request vectors */
	size_t node_bytes, pod_bytes; /* memory held for each kind, tables included */
};

void topo_cache_stats(const struct topo_cache *cache, struct topo_cache_stats *out);

#endif
