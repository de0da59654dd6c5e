/*
 * topo_jobset: a JobSet's placement request, decoded from its tree (no file
 * or YAML knowledge, except that an annotation's value may be JSON or YAML),
 * then resolved against a topology tree into the request of topo_place.h.
 *
 * The JobSet's names, replicas, parallelism and completions come from the
 * one JobSet model (lib/muster/jobset_model.h, in its written form); this
 * decoder adds what placement reads of each replicated job's pod template
 * (topo_objects.h: requests, nodeSelector, required node affinity,
 * tolerations) and the topology annotations:
 *
 *   on a pod template
 *     kueue.x-k8s.io/podset-required-topology      LEVEL
 *     kueue.x-k8s.io/podset-preferred-topology     LEVEL
 *     kueue.x-k8s.io/podset-unconstrained-topology "true"
 *     kueue.x-k8s.io/podset-slice-required-topology LEVEL (with
 *     kueue.x-k8s.io/podset-slice-size N)
 *     kueue.x-k8s.io/podset-slice-required-topology-constraints
 *                 [{topology: LEVEL, size: N}, ...] (1 to 3 layers, outermost
 *                 first, each size dividing the one before)
 *     kueue.x-k8s.io/podset-group-name             NAME (co-placed)
 *     muster.dev/network-topology   Volcano's networkTopology {mode,
 *                                   highestTierAllowed | highestTierName}
 *     muster.dev/partition-policy   Volcano's partitionPolicy {totalPartitions,
 *                                   partitionSize, minPartitions, networkTopology};
 *                                   soft: the tier first, else anywhere in the job's
 *                                   domain (topo_jobset_place)
 *     At most one of required / preferred / unconstrained / network-topology,
 *     and slices or a partition policy, not both; any other
 *     kueue.x-k8s.io/podset-* annotation is refused (it would otherwise be
 *     ignored). Kueue's annotations hold for the PodSet: the replicated
 *     job's pods taken together (replicas x min(parallelism, completions),
 *     as Kueue counts them); Volcano's per child Job.
 *   upstream JobSet's alpha.jobset.sigs.k8s.io/exclusive-topology: LABEL, on the
 *     JobSet or a replicated job's Job template (which wins): each child Job
 *     alone in one domain of that level (not with Kueue's or Volcano's
 *     annotations on the same replicated job)
 *   on the JobSet (the whole JobSet), at most one of
 *     muster.dev/topology-required, muster.dev/topology-preferred (LEVEL),
 *     muster.dev/network-topology (Volcano's job-level networkTopology),
 *     holding the replicated jobs muster.dev/topology-replicated-jobs names
 *     (comma separated; absent: all)
 *   muster.dev/topology-balanced: "true" | "false" on the JobSet: Kueue's
 *     balanced placement for each replicated job with a preferred level
 *
 * LEVEL is a node label of the levels, a HyperNode tierName, "tier N", or a
 * bare number N (Volcano's highestTierAllowed: the highest tier not above N).
 *
 * Pure: 0, or -1 and a malloc'd cause naming the field (docs/errors.md).
 */
#ifndef MUSTER_TOPO_JOBSET_H
#define MUSTER_TOPO_JOBSET_H

#include <stddef.h>

#include "topo_objects.h"
#include "topo_place.h"
#include "topo_store.h"
#include "topo_tree.h"

/* A Volcano networkTopology as written. */
struct topo_network_request {
	int set; /* given at all */
	int hard; /* mode hard (Volcano's default), else soft */
	int tier; /* highestTierAllowed, 0 when not given */
	const char *tier_name; /* highestTierName, or NULL */
};

/* A replicated job as written; levels are resolved against a tree later. */
struct topo_jobset_group {
	const char *name;
	unsigned replicas, pods;
	const char *required, *preferred, *slice_level; /* Kueue level names or NULL */
	unsigned slice_size;
	/* Slices inside the slices (podset-slice-required-topology-constraints
	 * beyond its first layer, which is slice_level / slice_size). */
	const char *inner_levels[TOPO_SLICE_LAYERS_MAX - 1];
	unsigned inner_sizes[TOPO_SLICE_LAYERS_MAX - 1];
	size_t inner_count;
	int unconstrained;
	const char *podset_group; /* kueue.x-k8s.io/podset-group-name, or NULL */
	struct topo_network_request network;
	/* muster.dev/partition-policy; partitions 0 when absent */
	unsigned partitions, partition_size, min_partitions;
	struct topo_network_request partition_network;
	struct topo_pod_scheduling pod; /* of its pod template */
	/* alpha.jobset.sigs.k8s.io/exclusive-topology of its Job template, else
	 * the JobSet's, else NULL */
	const char *exclusive;
	int outside_whole; /* not named by muster.dev/topology-replicated-jobs */
};

struct topo_jobset {
	const char *name; /* metadata.name, or NULL */
	struct topo_jobset_group groups[TOPO_GROUPS_MAX];
	size_t group_count;
	const char *whole_required, *whole_preferred;
	struct topo_network_request whole_network;
	/* muster.dev/topology-balanced: 1 "true", 0 "false", -1 absent (the
	 * caller's default decides; topo_jobset_request takes it as false) */
	int balanced;
};

struct cJSON;

/* Decodes a JobSet's placement request; what it keeps is in the store. */
int topo_jobset_decode(struct topo_store *s, const struct cJSON *jobset, struct topo_jobset *out,
		       char **cause);

struct jobset_model;

/* The same with the JobSet's counted spec (lib/muster/jobset_model.h) the
 * caller decoded from the same object (NULL: decoded here as written): an
 * admission decodes each part of a JobSet once. */
int topo_jobset_decode_counted(struct topo_store *s, const struct cJSON *jobset,
			       const struct jobset_model *counted, struct topo_jobset *out, char **cause);

/* Builds the placement request for `tree` (levels resolved by name,
 * resources by name, co-placed groups numbered); groups must have room for
 * group_count entries. The request points into `jobset` and `groups`. */
int topo_jobset_request(const struct topo_jobset *jobset, const struct topo_tree *tree,
			struct topo_group *groups, struct topo_request *request, char **cause);

/* The pods of one replicated job as placement sees them against `cluster`'s
 * resources (requests, nodeSelector, required affinity, tolerations;
 * pointing into `group`): 0, or -1 with *missing (may be NULL) the first
 * resource requested that the cluster does not track (the shape then holds
 * every other resource). */
int topo_jobset_shape(const struct topo_jobset_group *group, const struct topo_cluster *cluster,
		      struct topo_shape *out, const char **missing);

/* Builds the request and places it (topo_place.h). A soft preference
 * (Volcano's soft partitions) is tried first as if hard; when that is
 * refused, again without it: soft never refuses for topology. On success
 * *out is the placement (topo_placement_free) and *request the request it
 * answers, pointing into `jobset` and `groups`; else -1 and *cause. */
int topo_jobset_place(const struct topo_jobset *jobset, const struct topo_tree *tree,
		      struct topo_group *groups, struct topo_request *request, struct topo_placement **out,
		      char **cause);

#endif
