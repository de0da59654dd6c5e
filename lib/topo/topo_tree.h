/*
 * topo_tree: the topology of a cluster as one tree of domains, built either
 * from node-label levels (Kueue's Topology) or from Volcano HyperNodes, with
 * no I/O.
 *
 * Both inputs map to the same internal tree, so the placement core
 * (topo_place.h) knows one shape only:
 *
 *   level 0                the whole cluster (a virtual root);
 *   levels 1 .. n          the user's levels from the top down: the node
 *                          labels in order (block, rack, ...), or the
 *                          HyperNode tiers from the highest tier to tier 1;
 *   level n + 1            the nodes themselves (leaves).
 *
 * Levels mode: a domain is the tuple of label values from the top down to
 * its level, so rack-1 in block-1 and rack-1 in block-2 are two domains.
 * Nodes lacking any level label are left out, with a reason. Every node sits
 * at level n + 1 under the domain of its lowest label.
 *
 * HyperNode mode: tiers are distinct `spec.tier` values (1 is the fastest
 * network); a HyperNode with tier t is at the level of t, its members are
 * Nodes or HyperNodes chosen by exact name, by a regular expression on the
 * name (Go's RE2 syntax as far as POSIX extended expressions have it: \d \s
 * \w and (?: are translated, flags, lazy quantifiers and other escapes are
 * refused, and so are a++, counts above 1000 and nested repetitions that
 * would expand beyond 10,000 copies; a search, as Go's MatchString) or, for
 * Nodes, by a label selector (matchLabels and matchExpressions). A HyperNode
 * member must have a lower tier than its parent; a HyperNode or a Node
 * claimed by two HyperNodes, a cycle, two
 * HyperNodes of one name and an invalid pattern are errors. A HyperNode
 * nobody claims hangs under the root; a Node no HyperNode claims is left
 * out with a reason. A tree may skip tiers (a Node directly in a tier-2
 * HyperNode); the placement then sees no tier-1 domain above that Node.
 *
 * Tiers in levels mode: Volcano's discovery from labels numbers the levels
 * from the bottom, so the lowest user level is tier 1 and the top level is
 * tier n; topo_tree_tier_level() and the names "tier N" work in both modes.
 *
 * Order: a domain's inner domains come first, then its node leaves, each run
 * sorted by name (bytewise); domains are stored in preorder. So every
 * subtree is a contiguous index range, the leaves directly under one domain
 * are adjacent, and the output of the placement is the same for the same
 * input.
 *
 * Ownership: the tree keeps pointers into `cluster` and `topology` (names,
 * labels, resources); both must outlive it and stay unchanged. Constructors
 * return NULL with *cause set (malloc'd; NULL only if that allocation
 * failed; the caller frees) and leave nothing allocated on failure.
 * Threads: trees may be built on several threads at once (the sort keys are
 * thread-local); a built tree is read-only and may be shared by placements
 * running on several threads.
 */
#ifndef MUSTER_TOPO_TREE_H
#define MUSTER_TOPO_TREE_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on what comes from outside (kubectl output, a HyperNode file). */
#define TOPO_LEVELS_MAX 8 /* user levels (Kueue allows 8) or distinct tiers */
#define TOPO_NODES_MAX 200000u
#define TOPO_HYPERNODES_MAX 100000u
#define TOPO_RESOURCES_MAX 8 /* cpu, memory, pods and up to 5 extended resources */
#define TOPO_NAME_MAX 253 /* a node name, a label key (prefix/name) */
#define TOPO_VALUE_MAX 63 /* a label value */
#define TOPO_PATTERN_MAX 1024 /* a regexMatch pattern */
#define TOPO_NONE UINT32_MAX

enum topo_effect { TOPO_NO_SCHEDULE, TOPO_PREFER_NO_SCHEDULE, TOPO_NO_EXECUTE };

struct topo_label {
	const char *key;
	const char *value;
};

/* A label selector requirement (Kubernetes semantics): In and NotIn against
 * `values`, Exists, DoesNotExist, and for node affinity Gt / Lt (both sides
 * parsed as decimal integers; no match when either does not parse). NotIn and
 * DoesNotExist match a node without the label. With `on_name` the
 * requirement is on the node's name instead of a label (node affinity's
 * matchFields on metadata.name; In and NotIn only). */
enum topo_operator {
	TOPO_OP_IN,
	TOPO_OP_NOT_IN,
	TOPO_OP_EXISTS,
	TOPO_OP_DOES_NOT_EXIST,
	TOPO_OP_GT,
	TOPO_OP_LT
};

struct topo_requirement {
	const char *key;
	enum topo_operator op;
	const char *const *values;
	size_t value_count;
	int on_name;
};

struct topo_taint {
	const char *key;
	const char *value; /* may be NULL */
	enum topo_effect effect;
};

/* One node and what its bound pods use. Resources are indexed as in
 * topo_cluster.resources, in the caller's units (millicores, bytes, counts);
 * the resource named "pods" is counted as one per pod by the placement. */
struct topo_node {
	const char *name;
	const struct topo_label *labels;
	size_t label_count;
	const struct topo_taint *taints;
	size_t taint_count;
	int unschedulable; /* spec.unschedulable (cordoned) */
	int not_ready; /* condition Ready False or Unknown: the scheduler binds nothing there */
	int64_t allocatable[TOPO_RESOURCES_MAX];
	int64_t used[TOPO_RESOURCES_MAX]; /* sum of requests of all pods bound to it */
};

struct topo_cluster {
	const char *resources[TOPO_RESOURCES_MAX];
	size_t resource_count;
	const struct topo_node *nodes;
	size_t node_count;
};

enum topo_member_kind { TOPO_MEMBER_NODE, TOPO_MEMBER_HYPERNODE };

/* Exactly one selector: exact, regex, or a label selector (Nodes only). The
 * label selector is in force when match_labels or match_expressions is
 * non-NULL; both must hold (AND); non-NULL lists of zero entries select
 * every node, as an empty Kubernetes label selector does. */
struct topo_member {
	enum topo_member_kind kind;
	const char *exact;
	const char *regex;
	const struct topo_label *match_labels;
	size_t match_label_count;
	const struct topo_requirement *match_expressions;
	size_t match_expression_count;
};

struct topo_hypernode {
	const char *name;
	int tier; /* >= 1 */
	const char *tier_name; /* may be NULL */
	const struct topo_member *members;
	size_t member_count;
};

struct topo_domain {
	uint32_t parent; /* TOPO_NONE for the root */
	uint32_t end; /* the subtree is [index, end) */
	uint32_t node; /* index in cluster->nodes for a leaf, else TOPO_NONE */
	uint8_t level; /* 0 root .. node_level */
	const char *name; /* label value, HyperNode or node name; "" for the root */
};

/* Why a node is not in the tree. */
struct topo_exclusion {
	uint32_t node;
	const char *reason; /* static text */
	const char *detail; /* the label key or similar, points into the input; may be NULL */
};

struct topo_tree {
	const struct topo_cluster *cluster;
	struct topo_domain *domains; /* preorder; domains[0] is the root */
	size_t domain_count;
	uint32_t *node_domain; /* cluster node -> its leaf domain, TOPO_NONE if left out */
	size_t node_level; /* the level of the leaves: user levels + 1 */
	/* level_names[l]: the node label (levels mode) or "tier N" / tierName. */
	const char *level_names[TOPO_LEVELS_MAX + 2];
	int level_tiers[TOPO_LEVELS_MAX + 2]; /* tier of a level (levels mode: counted from the bottom) */
	int from_hypernodes;
	struct topo_exclusion *excluded;
	size_t excluded_count;
	char tier_label_storage[TOPO_LEVELS_MAX][16];
};

/* Builds the tree of `levels` (node label keys, top down, 1..TOPO_LEVELS_MAX
 * distinct keys). Fails on bad arguments, a cluster above the bounds or no
 * memory. Nodes lacking a level's label are left out (tree->excluded). */
struct topo_tree *topo_tree_from_levels(const struct topo_cluster *cluster, const char *const *levels,
					size_t level_count, char **cause);

/* Builds the tree of HyperNodes (see the file comment for the rules). */
struct topo_tree *topo_tree_from_hypernodes(const struct topo_cluster *cluster,
					    const struct topo_hypernode *hypernodes, size_t hypernode_count,
					    char **cause);

/* Frees the tree; NULL is accepted. */
void topo_tree_free(struct topo_tree *tree);

/* The level whose name (label key, "tier N" or tier name) is `name`, or -1. */
int topo_tree_level(const struct topo_tree *tree, const char *name);

/* The level a Volcano highestTierAllowed maps to: the highest tier not above
 * `tier`; -1 when every tier is above it. In levels mode tier 1 is the
 * lowest user level (Volcano's discovery from labels). */
int topo_tree_tier_level(const struct topo_tree *tree, int tier);

/* Writes the names from level 1 down to `domain` joined by '/', truncated to
 * size; returns buf. The root is "". */
char *topo_tree_path(const struct topo_tree *tree, uint32_t domain, char *buf, size_t size);

/* Writes the node selector that confines a pod to `domain`, as
 * "key=value,key=value" (truncated to size; returns buf):
 * - levels mode: one label per level from the top down to the domain's
 *   level (values are unique only as a tuple, so every level is named);
 * - HyperNode mode, where a domain is no label: the hostname of `node`
 *   (a cluster node index, TOPO_NONE for none), "kubernetes.io/hostname=NAME",
 *   or "" when no node is given.
 * A node's hostname is its label kubernetes.io/hostname, else its name. */
char *topo_tree_selector(const struct topo_tree *tree, uint32_t domain, uint32_t node, char *buf,
			 size_t size);

/* 1 when the node meets every requirement (an empty list: 1). */
int topo_requirements_match(const struct topo_node *node, const struct topo_requirement *requirements,
			    size_t count);

/* The value of a node's label, or NULL when it has none. */
const char *topo_node_label(const struct topo_node *node, const char *key);

/* Index of a resource by name in the cluster, or -1. */
int topo_resource_index(const struct topo_cluster *cluster, const char *name);

#endif
