/*
 * topo_objects: the decoders of the cluster objects that placement reads,
 * one per kind, from a cJSON tree of one object (an item of a LIST, the
 * object of a watch event, a document of a file): no file, YAML or HTTP
 * knowledge. What a decoded object keeps is copied into a topo_store
 * (topo_store.h), so the tree can be freed at once; everything is bounded
 * (the limits below) and every failure names the object and the field:
 * `nodes: items[3] (n-7): status.allocatable["nvidia.com/gpu"]: bad quantity x`.
 *
 *   Node       name, labels, spec.taints, spec.unschedulable, the Ready
 *              condition, status.allocatable (of the resources tracked)
 *   Pod        as usage: the node it is bound to, whether it holds resources
 *              (bound and not Succeeded or Failed), and its effective request
 *              as kube-scheduler counts it: max(sum of containers, max over
 *              init containers, where a sidecar (restartPolicy Always) adds
 *              to the containers and to the init containers after it) +
 *              spec.overhead; pod-level spec.resources (cpu, memory) replace
 *              the containers' sum; a container's limit stands for a missing
 *              request (API defaulting)
 *   pod spec   what placement needs of a pod template: its request (as for
 *              pods), nodeSelector, required node affinity (nodeSelectorTerms,
 *              matchExpressions In / NotIn / Exists / DoesNotExist / Gt / Lt,
 *              matchFields on metadata.name), preferred node affinity
 *              (the same terms, each with a weight of 1 to 100) and
 *              tolerations
 *   HyperNode  topology.volcano.sh/v1alpha1: name, spec.tier, spec.tierName,
 *              spec.members (exactMatch, regexMatch, labelMatch with
 *              matchLabels and matchExpressions)
 *   Topology   kueue.x-k8s.io (v1beta1, v1beta2): name and
 *              spec.levels[].nodeLabel, outermost first
 *
 * The JobSet's placement request is decoded by topo_jobset.h. Pure: 0, or
 * -1 and a malloc'd cause (docs/errors.md); after a failure the output is
 * unspecified and what was stored stays in the store until it is freed.
 */
#ifndef MUSTER_TOPO_OBJECTS_H
#define MUSTER_TOPO_OBJECTS_H

#include <stddef.h>

#include "topo_place.h"
#include "topo_store.h"
#include "topo_tree.h"

#define TOPO_OBJ_KEY_MAX 317 /* a label key: DNS prefix (253) / name (63) */
#define TOPO_OBJ_LABELS_MAX 512 /* per node (node feature discovery adds many) */
#define TOPO_OBJ_TAINTS_MAX 64
#define TOPO_OBJ_MEMBERS_MAX 10000
#define TOPO_OBJ_TOLERATIONS_MAX 64
#define TOPO_OBJ_TERMS_MAX 32 /* node selector terms */
#define TOPO_OBJ_EXPRESSIONS_MAX 64 /* per term or label selector */
#define TOPO_OBJ_VALUES_MAX 256 /* per expression */
#define TOPO_OBJ_CONTAINERS_MAX 256 /* per pod, containers and init containers each */
#define TOPO_OBJ_REQUESTS_MAX 32 /* distinct resources requested by one pod */
#define TOPO_OBJ_PATTERN_MAX 1024 /* a regexMatch pattern */

struct cJSON;

/* Resource amounts by name, in thousandths of their unit (quantity.h). */
struct topo_amounts {
	const char *names[TOPO_OBJ_REQUESTS_MAX];
	long long values[TOPO_OBJ_REQUESTS_MAX];
	size_t count;
};

/* a + b, capped at the largest quantity (quantity.h). */
long long topo_amount_add(long long a, long long b);

/* ---- Node ---- */

struct topo_node_object {
	/* name, labels, taints, unschedulable, allocatable[] for the resources
	 * of the cluster given (the resource "pods" in pods); used[] 0 */
	struct topo_node node;
	int ready; /* condition Ready: 1 True, 0 False or Unknown, -1 not reported */
};

/* Decodes a Node. `where` names it ("nodes: items[3]"); the name is added
 * once known. `resources` gives the resources tracked (its nodes are not
 * read); allocatable amounts of other resources are checked and dropped. */
int topo_node_decode(struct topo_store *s, const struct cJSON *node, const char *where,
		     const struct topo_cluster *resources, struct topo_node_object *out, char **cause);

/* ---- Pod, as usage ---- */

struct topo_pod_usage {
	const char *name; /* metadata.name, or NULL */
	const char *node_name; /* spec.nodeName, or NULL when not bound */
	int holds; /* bound and not Succeeded or Failed: its request counts */
	struct topo_amounts requests; /* when it holds; "pods" not included */
};

/* Decodes a pod as usage. Nothing is copied: names point into the tree. */
int topo_pod_usage_decode(const struct cJSON *pod, const char *where, struct topo_pod_usage *out,
			  char **cause);

/* ---- a pod template's scheduling ---- */

struct topo_pod_scheduling {
	const char *request_names[TOPO_OBJ_REQUESTS_MAX];
	long long request_values[TOPO_OBJ_REQUESTS_MAX];
	size_t request_count;
	struct topo_label *selector;
	size_t selector_count;
	struct topo_term *affinity;
	size_t affinity_count;
	struct topo_toleration *tolerations;
	size_t toleration_count;
	struct topo_preference *preferred;
	size_t preferred_count;
};

/* Decodes a pod spec's request, nodeSelector, required and preferred node
 * affinity and tolerations; `prefix` names the spec in causes
 * ("template.spec.template.spec"). */
int topo_pod_scheduling_decode(struct topo_store *s, const struct cJSON *pod_spec, const char *where,
			       const char *prefix, struct topo_pod_scheduling *out, char **cause);

/* ---- HyperNode ---- */

/* Decodes a HyperNode (also the design document's short form: a top-level
 * name, members with a bare name). */
int topo_hypernode_decode(struct topo_store *s, const struct cJSON *hypernode, const char *where,
			  struct topo_hypernode *out, char **cause);

/* ---- Kueue Topology ---- */

struct topo_levels {
	const char *name; /* metadata.name */
	const char *labels[TOPO_LEVELS_MAX]; /* node label of each level, outermost first */
	size_t count;
};

/* Decodes a Kueue Topology: 1 to TOPO_LEVELS_MAX levels (Kueue allows 16;
 * more than muster handles is a cause saying so), each a distinct node
 * label. */
int topo_kueue_topology_decode(struct topo_store *s, const struct cJSON *topology, const char *where,
			       struct topo_levels *out, char **cause);

#endif
