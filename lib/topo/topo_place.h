/*
 * topo_place: places a whole JobSet on a topology tree (topo_tree.h) at once,
 * with no I/O: which domain each replicated-job instance goes to and which
 * lowest-level domain each pod goes to, or a refusal that says why.
 *
 * Request: groups (one per replicated job) of `replicas` instances of `pods`
 * pods each, all of one shape (requests, node selector, required and
 * preferred node affinity, tolerations); per instance a constraint (required / preferred
 * level, Kueue names; Volcano's hard / soft + highestTierAllowed or
 * highestTierName map to the same through topo_tree_tier_level and
 * topo_tree_level; or Kueue's unconstrained), optional slices (every
 * `slice_size` consecutive pods in one domain of `slice_level`, deeper than
 * or equal to the instance's level; Kueue slices, Volcano partitions) of
 * which at least `min_slices` must be placed (Volcano minPartitions), and one
 * constraint for the whole JobSet (every instance inside one domain of that
 * level). Groups with the same nonzero `together` are co-placed (Kueue
 * podset-group-name): instance j of each of them lands in one domain of
 * their common level.
 *
 * Algorithm (docs/topology.md): capacity per node = pods of the shape that
 * fit the scarcest resource, rolled up the tree (in whole slices above the
 * slice level). Instances go in order: required before preferred, larger
 * before smaller. One with a required or preferred level takes the tightest
 * domain of that level that holds it (ties: the one nearest the pods already
 * placed); preferred climbs a level at a time to the root, where the descent
 * combines domains greedily (largest first, then the tightest that holds the
 * rest); one without a level takes the tightest domain at the deepest level
 * that holds it. A found placement is compared with other candidates (the
 * JobSet's own order, Kueue's BestFit, the node-level search held to the
 * preferred levels when none meets them all) and the best kept
 * (docs/topology.md, step 6c). Each placed
 * instance's requests are taken off its nodes before the next is placed. If
 * the greedy path fails, a bounded depth-first search tries the other domains
 * at the required levels (`search_budget` descents); the whole JobSet's
 * constraint picks candidate domains tightest first the same way. If that
 * fails too, the node-level search (topo_place_node.c) tries every allowed
 * domain and every count of pods per node for each instance in turn, with
 * every rule of the request, so a placement is found whenever one exists
 * within its budget (`exact_budget` steps, TOPO_EXACT_BUDGET_DEFAULT); a
 * refusal after a search cut at the budget starts "search cut after N
 * steps: ", any other refusal is a proof that nothing fits.
 *
 * Preferred node affinity (Kueue's TASRespectNodeAffinityPreferred: "the
 * preferred affinity will take precedence over the placement policy"): a
 * node scores the sum of the weights of the shape's preferred terms it
 * meets (topo_node_preference), a domain the sum over its nodes the shape
 * may use, full or not. The score comes before tightness in every choice
 * above: a required level takes the highest score among the domains that
 * hold the instance; a preferred level is met only by a domain of the
 * level's highest score, else the search climbs; the descent takes
 * children by score, then largest first, its best fit only among children
 * of one score; unconstrained fills the highest scores first. Balanced
 * placement, the node-level search and Kueue's BestFit candidate ignore it
 * (the choice between candidates puts it first). No preferences: every
 * score 0, nothing changes.
 *
 * Rank order: inside an instance, completion indexes are handed out over the
 * nodes it got ordered by their lowest domain (the parent of the node's
 * leaf) in tree order, then by node in tree order; so each lowest domain
 * holds one run of consecutive ranks, the runs follow the tree, and each
 * slice of `slice_size` ranks lies in one domain. An instance whose slices
 * descended one at a time (one layer, not exclusive, job_pods a multiple or
 * a divisor of slice_size) is ordered so per Job of whole slices (or slice
 * of whole Jobs), the Jobs (slices) in the tree order of their first node:
 * each Job keeps one run per lowest domain, and a slice that is a Job keeps
 * the domain it was given.
 *
 * Unconstrained (Kueue podset-unconstrained-topology): no domain at all;
 * the pods fill the nodes with the least room for them first (fewest free
 * pods, then tree order), to close small gaps; with slices at a level, the
 * domains of that level in the same order, each slice whole in one.
 *
 * Partitions (min_slices): every partition is placed whole or not at all.
 * The placement first looks for room for every partition of every instance
 * (all the searches above); only when there is none anywhere (or the
 * node-level search was cut) does it place fewer, in the first JobSet-level
 * candidate that works, each instance taking as many partitions as fit in
 * one domain (never fewer than min_slices). The partitions left out are the
 * last ones (highest completion indexes).
 *
 * Gang: all or nothing (at the min_slices level). Deterministic: the same
 * input gives the same output.
 *
 * Ownership: topo_place() allocates *out (free with topo_placement_free) and
 * keeps no pointer to the request. On refusal or error it returns -1 with
 * *cause (malloc'd, the caller frees; NULL only if that allocation failed)
 * and *out NULL. The tree is only read.
 */
#ifndef MUSTER_TOPO_PLACE_H
#define MUSTER_TOPO_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "topo_tree.h"

#define TOPO_GROUPS_MAX 64
#define TOPO_INSTANCES_MAX 4096u
#define TOPO_PODS_MAX 1000000u
#define TOPO_SEARCH_BUDGET_DEFAULT 4096u
#define TOPO_EXACT_BUDGET_DEFAULT 1000000u
#define TOPO_SLICE_LAYERS_MAX 3 /* Kueue's multi-layer slice constraints */

/* NONE places compactly without a limit; UNCONSTRAINED fills gaps (see above). */
enum topo_mode { TOPO_MODE_NONE, TOPO_MODE_REQUIRED, TOPO_MODE_PREFERRED, TOPO_MODE_UNCONSTRAINED };

struct topo_constraint {
	enum topo_mode mode;
	uint8_t level; /* a tree level 1 .. node_level - 1 (ignored for NONE) */
};

/* Kubernetes semantics: a toleration matches a taint when its effect is
 * empty or equal, its key is empty (Exists only) or equal, and, for Equal,
 * the values are equal. Taints with PreferNoSchedule never exclude a node. */
struct topo_toleration {
	const char *key; /* NULL or "" with exists: every key */
	const char *value;
	int exists; /* operator Exists (else Equal) */
	int any_effect; /* no effect given: all effects */
	enum topo_effect effect;
};

/* A node selector term of required node affinity: all its requirements
 * hold. A term with no requirement matches no node (as in Kubernetes). */
struct topo_term {
	const struct topo_requirement *requirements;
	size_t requirement_count;
};

/* A term of preferred node affinity (preferredDuringSchedulingIgnoredDuringExecution):
 * a node that meets every requirement of the term earns its weight (1 to
 * 100); a term with no requirement matches no node (as in Kubernetes). A
 * node's score is the sum of the weights of the terms it meets. */
struct topo_preference {
	int32_t weight;
	struct topo_term term;
};

struct topo_shape {
	int64_t requests[TOPO_RESOURCES_MAX]; /* indexed as cluster->resources; "pods" is always 1 */
	const struct topo_label *node_selector; /* nodeSelector: every label equal */
	size_t node_selector_count;
	/* requiredDuringSchedulingIgnoredDuringExecution: at least one term
	 * matches; no terms: no affinity. */
	const struct topo_term *affinity;
	size_t affinity_count;
	const struct topo_toleration *tolerations;
	size_t toleration_count;
	/* preferredDuringSchedulingIgnoredDuringExecution: restricts nothing;
	 * where the placement chooses, the higher score wins (see the file
	 * comment). */
	const struct topo_preference *preferred;
	size_t preferred_count;
};

struct topo_group {
	const char *name; /* the replicated job */
	uint32_t replicas; /* instances (child Jobs) */
	uint32_t pods; /* pods per instance */
	struct topo_shape shape;
	struct topo_constraint constraint;
	uint32_t slice_size; /* 0 or 1: no slices (but see min_slices) */
	uint8_t slice_level; /* 0: the slices may be anywhere in the instance's domain */
	/* 0: every slice; else at least this many of pods / slice_size slices
	 * (slices of one pod when slice_size is 0 or 1). */
	uint32_t min_slices;
	/* Slices inside the slices (Kueue's multi-layer slice constraints), from
	 * the outer to the inner: every `size` consecutive pods of a slice in
	 * one domain of `level`. Each size divides the one before (slice_size
	 * first), each level is deeper than the one before (slice_level first,
	 * which must then be a level, not 0). */
	struct topo_slice_layer {
		uint32_t size;
		uint8_t level;
	} inner[TOPO_SLICE_LAYERS_MAX - 1];
	size_t inner_count;
	/* 0: alone; groups sharing a nonzero value are co-placed per job index.
	 * They need equal replicas and an equal required or preferred constraint. */
	uint32_t together;
	/* 0: an instance is one child Job. Else the pods of one child Job when an
	 * instance holds several (Kueue's PodSet: every replica of a replicated
	 * job placed as one, ranks job index * job_pods + completion index); it
	 * divides `pods`, and the output names each pod by its own Job. */
	uint32_t job_pods;
	/* Upstream JobSet's exclusive-topology: each instance alone in a domain
	 * of exactly its required level (constraint.level, mode REQUIRED): a
	 * domain already holding pods of this request is not taken, and no pod
	 * of the request goes into one an exclusive instance holds. Under a
	 * JobSet-wide required level at or below it, that holds only when the
	 * JobSet's constraint holds this one instance; two or more are refused
	 * as a request ("request: ... no placement holds both"). */
	int exclusive;
	/* Not held by the whole JobSet's constraint (topo_request.whole): its
	 * instances are placed anywhere in the cluster. */
	int outside_whole;
	/* Kueue's balanced placement (TASBalancedPlacement) for a preferred
	 * level L: the slices spread evenly over the fewest domains one level
	 * below L inside one domain of L-1 (docs/topology.md); a `together`
	 * unit of this group and a one-pod leader group is placed as one Kueue
	 * request with a leader. Where it does not apply, the placement is the
	 * one without it (for such a unit, Kueue's BestFit with the leader). */
	int balanced;
};

struct topo_request {
	const struct topo_group *groups;
	size_t group_count;
	struct topo_constraint whole; /* the whole JobSet */
	uint32_t search_budget; /* 0: TOPO_SEARCH_BUDGET_DEFAULT */
	uint32_t exact_budget; /* the node-level search's steps; 0: TOPO_EXACT_BUDGET_DEFAULT */
	/* NULL, or per cluster node what the JobSet's other Jobs already hold
	 * when some of its Jobs are placed again alone (topo_move.h):
	 * TOPO_HELD_PODS, pods of the JobSet (an exclusive instance takes no
	 * domain holding them); TOPO_HELD_CLOSED, inside a domain an exclusive
	 * instance holds (no pod of the request goes there). */
	const uint8_t *held;
};

enum { TOPO_HELD_NONE, TOPO_HELD_PODS, TOPO_HELD_CLOSED };

/* A pod of a partition left out (min_slices) has node and domain TOPO_NONE.
 * job_index and completion are the pod's own Job's (see job_pods). */
struct topo_pod {
	uint32_t group, job_index, completion;
	uint32_t node; /* cluster node index (a hint: kube-scheduler picks within the domain) */
	uint32_t domain; /* the lowest user-level domain: the parent of the node's leaf */
};

/* Pods of one child Job in one lowest-level domain. */
struct topo_count {
	uint32_t group, job_index, domain, count;
};

struct topo_placement {
	struct topo_pod *pods; /* by group, job index, completion index */
	size_t pod_count;
	struct topo_count *counts; /* by group, job index, then tree order */
	size_t count_count;
	/* Per instance (groups in order, then job index): the domain it was
	 * placed in and how many of its pods were placed (fewer than asked only
	 * with min_slices). */
	uint32_t *instance_domain;
	uint32_t *instance_pods;
	size_t instance_count;
	uint32_t whole_domain; /* the domain holding the whole JobSet (0 = the cluster) */
	size_t descents; /* work done: candidate descents tried */
};

/* Places the request on the tree with the cluster's current usage (see the
 * file comment). Returns 0 with *out set, or -1 with *cause. Refusals name
 * the constraint, the level and how much fits, e.g.
 * "rack: at most 12 of 16 pods fit in any one domain (replicated job w, job 0)". */
int topo_place(const struct topo_tree *tree, const struct topo_request *request, struct topo_placement **out,
	       char **cause);

void topo_placement_free(struct topo_placement *placement);

/* How many pods of `shape` fit on `node` given `free` (allocatable - used per
 * resource), or 0 when the node's taints, selector or cordon exclude it.
 * `reason` (may be NULL) gets a static text when it is excluded. */
uint32_t topo_node_fit(const struct topo_cluster *cluster, const struct topo_node *node, const int64_t *free,
		       const struct topo_shape *shape, const char **reason);

/* The preferred node affinity score of `node` for `shape`: the sum of the
 * weights of the preferred terms it meets (0 without any). */
uint32_t topo_node_preference(const struct topo_node *node, const struct topo_shape *shape);

#endif
