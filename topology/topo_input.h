/*
 * topo_input: decodes what muster-topology reads into the plain structs of
 * topo_tree.h and topo_place.h, at the boundary (cJSON, libyaml). Each input
 * is parsed, decoded into typed structs and its parse tree freed before the
 * decoder returns: every string kept is a copy, bounded in length.
 *
 *   nodes      the JSON (or YAML) of `kubectl get nodes -o json`: a List, a
 *              bare list or one Node. Name, labels, spec.taints,
 *              spec.unschedulable, status.allocatable.
 *   pods       `kubectl get pods -A -o json`: every pod bound to a node
 *              (spec.nodeName) and not Succeeded or Failed counts as usage,
 *              its effective request as the scheduler counts it:
 *              max(sum of containers, max over init containers, where a
 *              sidecar (restartPolicy Always) adds to the containers and to
 *              the init containers after it) + spec.overhead; pod-level
 *              spec.resources (cpu, memory) replace the containers' sum. A
 *              container's limit stands for a missing request (API defaulting).
 *   jobset     a JobSet, JSON or YAML. Per replicated job: replicas,
 *              parallelism / completions, the pod template's requests (as
 *              for pods), nodeSelector, required node affinity
 *              (nodeSelectorTerms, matchExpressions In / NotIn / Exists /
 *              DoesNotExist / Gt / Lt, matchFields on metadata.name) and
 *              tolerations; its annotations:
 *                kueue.x-k8s.io/podset-required-topology      LEVEL
 *                kueue.x-k8s.io/podset-preferred-topology     LEVEL
 *                kueue.x-k8s.io/podset-unconstrained-topology "true"
 *                kueue.x-k8s.io/podset-slice-required-topology LEVEL (with
 *                kueue.x-k8s.io/podset-slice-size N)
 *                kueue.x-k8s.io/podset-group-name             NAME (co-placed)
 *                muster.dev/network-topology   Volcano's networkTopology
 *                                              {mode, highestTierAllowed |
 *                                              highestTierName}, JSON or YAML
 *                muster.dev/partition-policy   Volcano's partitionPolicy
 *                                              {totalPartitions, partitionSize,
 *                                              minPartitions, networkTopology}
 *              At most one of required / preferred / unconstrained /
 *              network-topology, and slices or a partition policy, not both;
 *              any other kueue.x-k8s.io/podset-* annotation is refused (it
 *              would otherwise be ignored). The constraint holds per child
 *              Job (instance), not for all replicas at once as Kueue's
 *              PodSet of a replicated job would.
 *              For the whole JobSet, the JobSet's annotations
 *              muster.dev/topology-required, muster.dev/topology-preferred
 *              (LEVEL) or muster.dev/network-topology (Volcano's job-level
 *              networkTopology), at most one.
 *   hypernodes HyperNodes (topology.volcano.sh), YAML documents separated by
 *              --- or a JSON List; members by exactMatch, regexMatch or
 *              labelMatch (matchLabels and matchExpressions).
 *
 * LEVEL is a node label of the levels, a HyperNode tierName, "tier N", or a
 * bare number N (Volcano's highestTierAllowed: the highest tier not above N).
 * Tiers in levels mode count from the bottom (topo_tree.h).
 *
 * Quantities ("500m", "64Gi", "1e3", "2"; lib/base/quantity.h) are held in thousandths of their
 * unit (millicores, millibytes, ...), except the resource "pods", held in
 * pods. The cluster tracks TOPO_RESOURCES_MAX resources: cpu, memory and
 * pods, then those the JobSet requests (when it was read first), then the
 * extended resources (names with a '/'), then the others, by name.
 *
 * Errors name the input, the item and the field, e.g.
 * `nodes: items[3] (n-7): status.allocatable["nvidia.com/gpu"]: bad quantity "x"`.
 *
 * Bounds: an input of at most TOPO_INPUT_BYTES_MAX, YAML expanding (aliases)
 * to no more than about 17 times its size, nesting depth 64, all decoded
 * storage of one topo_input at most TOPO_INPUT_STORED_MAX, and the counts
 * below.
 *
 * Lifecycle: zero a struct topo_input, call the decoders (each at most once;
 * the JobSet before the nodes gives its resources priority; pods after the
 * nodes), then topo_input_free(). Decoded structs point into storage the
 * input owns. Each decoder returns 0, or -1 with *cause (malloc'd, the
 * caller frees; NULL only when that allocation failed); after a failure
 * the input must still be freed and its decoded parts are unspecified.
 */
#ifndef MUSTER_TOPO_INPUT_H
#define MUSTER_TOPO_INPUT_H

#include <stddef.h>

#include "muster_api.h"

#include "topo_place.h"
#include "topo_tree.h"

#define TOPO_INPUT_BYTES_MAX (256u * 1024 * 1024)
#define TOPO_INPUT_STORED_MAX (1024u * 1024 * 1024)
#define TOPO_INPUT_DEPTH_MAX 64
#define TOPO_INPUT_KEY_MAX 317 /* a label key: DNS prefix (253) / name (63) */
#define TOPO_INPUT_LABELS_MAX 512 /* per node (node feature discovery adds many) */
#define TOPO_INPUT_TAINTS_MAX 64
#define TOPO_INPUT_MEMBERS_MAX 10000
#define TOPO_INPUT_TOLERATIONS_MAX 64
#define TOPO_INPUT_TERMS_MAX 32 /* node selector terms */
#define TOPO_INPUT_EXPRESSIONS_MAX 64 /* per term or label selector */
#define TOPO_INPUT_VALUES_MAX 256 /* per expression */
#define TOPO_INPUT_CONTAINERS_MAX 256 /* per pod, containers and init containers each */
#define TOPO_INPUT_REQUESTS_MAX 32 /* distinct resources requested by one pod */
#define TOPO_INPUT_PATTERN_MAX 1024 /* a regexMatch pattern */

/* A Volcano networkTopology as written. */
struct topo_input_network {
	int set; /* given at all */
	int hard; /* mode hard (Volcano's default), else soft */
	int tier; /* highestTierAllowed, 0 when not given */
	const char *tier_name; /* highestTierName, or NULL */
};

/* A replicated job as written; levels are resolved against a tree later. */
struct topo_input_group {
	const char *name;
	unsigned replicas, pods;
	const char *required, *preferred, *slice_level; /* Kueue level names or NULL */
	unsigned slice_size;
	int unconstrained;
	const char *podset_group; /* kueue.x-k8s.io/podset-group-name, or NULL */
	struct topo_input_network network;
	/* muster.dev/partition-policy; partitions 0 when absent */
	unsigned partitions, partition_size, min_partitions;
	struct topo_input_network partition_network;
	const char *request_names[TOPO_INPUT_REQUESTS_MAX];
	long long request_values[TOPO_INPUT_REQUESTS_MAX];
	size_t request_count;
	struct topo_label *selector;
	size_t selector_count;
	struct topo_term *affinity;
	size_t affinity_count;
	struct topo_toleration *tolerations;
	size_t toleration_count;
};

struct topo_input {
	struct topo_cluster cluster;
	struct topo_node *nodes;
	struct topo_hypernode *hypernodes;
	size_t hypernode_count;
	const char *jobset_name;
	struct topo_input_group groups[TOPO_GROUPS_MAX];
	size_t group_count;
	const char *whole_required, *whole_preferred;
	struct topo_input_network whole_network;
	int read_nodes, read_pods, read_jobset, read_hypernodes;
	/* Storage owned by the input: allocations and string chunks. */
	void **blocks;
	size_t block_count, block_cap;
	char *chunk;
	size_t chunk_left;
	size_t stored; /* bytes, at most TOPO_INPUT_STORED_MAX */
};

int topo_input_nodes(struct topo_input *in, const char *data, size_t size, char **cause);
int topo_input_pods(struct topo_input *in, const char *data, size_t size, char **cause);
int topo_input_jobset(struct topo_input *in, const char *data, size_t size, char **cause);
int topo_input_hypernodes(struct topo_input *in, const char *data, size_t size, char **cause);

/* Builds the placement request for `tree` (levels resolved by name, resources
 * by name, co-placed groups numbered); groups must have room for
 * group_count entries. The request points into `in` and `groups`. */
int topo_input_request(const struct topo_input *in, const struct topo_tree *tree, struct topo_group *groups,
		       struct topo_request *request, char **cause);

void topo_input_free(struct topo_input *in);

#endif
