/*
 * topo_place_int: what the files of the placement core share, and nothing a
 * user of it sees (that is topo_place.h). The placement is split by idea:
 *
 *   topo_place.c         the entry (topo_place): the request's checks, the
 *                        context, a node's fit, the output
 *   topo_place_capacity.c  what the search counts: the slices in force,
 *                        capacity per domain, the takes and their undo
 *   topo_place_domain.c  the domain search: the greedy descent (slice by
 *                        slice for slices), the backtracking over domains,
 *                        the order of the instances
 *   topo_place_node.c    the node-level search, complete within its step
 *                        budget, when the domain search gives up
 *   topo_place_order.c   the choice between candidates: the spec's order
 *                        against the search's, Kueue's BestFit, the best
 *                        placement kept
 *   topo_place_balanced.c  Kueue's balanced placement of one instance, with
 *   topo_place_bestfit.c   Kueue's BestFit inside it (their own private
 *                          header: topo_place_bal.h), and for the whole
 *                          request as a candidate
 *
 * Only this header's structs and prototypes cross between them (and
 * topo_place_bal.h's between the two balanced files); every other helper
 * stays static in its file. Pure like the rest of lib/topo: no I/O,
 * no clock, no logging. Not an API: include it from these files only.
 */
#ifndef MUSTER_TOPO_PLACE_INT_H
#define MUSTER_TOPO_PLACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "topo_place.h"

/* One child Job to place. Co-placed instances (topo_group.together) form a
 * unit: they are adjacent in the order, the first is the unit's leader. */
struct instance {
	uint32_t group, job;
	uint32_t pods, min_pods; /* wanted, and at least (min_slices) */
	uint32_t unit_group; /* the lowest group index of its unit (itself when alone) */
	uint64_t unit_pods; /* pods of the whole unit */
	int required;
	uint32_t leader; /* order position of the unit's first instance */
};

/* What an instance took from a node; count 0 closes the node instead (an
 * exclusive instance's domain), undone by reopening it. */
struct take {
	uint32_t node, count;
};

/* A domain and its value in a choice; `score` (preferred node affinity,
 * 0 where it plays no part) comes first, the higher the better. */
struct ranked {
	uint64_t value;
	uint32_t domain;
	uint64_t score;
};

struct ctx {
	const struct topo_tree *t;
	const struct topo_cluster *c;
	const struct topo_request *req;
	size_t resources;
	int pods_resource;
	int64_t *free; /* node_count x resources */
	uint32_t *taken; /* per node: pods of this request placed there */
	uint8_t *closed; /* per node: inside a domain an exclusive instance holds */
	uint8_t *occupied; /* per domain, for the instance being placed: pods of the request or closed */
	uint8_t *eligible; /* group_count x node_count */
	uint64_t *pods, *usable; /* per domain, for the instance being placed */
	uint64_t *room; /* per domain, for the instance being placed: free room of `scarce` on its nodes */
	/* Preferred node affinity: per group and node the node's score (NULL
	 * when no group has preferences), and per domain, for the instance
	 * being placed, the sum over its nodes the group may use, full or not
	 * (Kueue's affinityScore). */
	uint32_t *prefer;
	uint64_t *score;
	int scarce; /* the request's scarcest resource, or -1 (room counts pod slots) */
	int room_ties; /* equally tight domains: the least free room first (else tree order) */
	int slices_whole; /* the descent keeps each slice whole below its level when it can */
	struct ranked *scratch; /* children lists of the descent, a stack */
	size_t scratch_used;
	struct take *log;
	size_t log_used, log_cap;
	struct instance *order;
	size_t instance_count;
	size_t *start; /* per order position: its first log entry */
	uint32_t *domain; /* per order position: the domain it was placed in */
	uint32_t *placed; /* per order position: pods placed (fewer than wanted only when elastic) */
	uint8_t *sliced; /* per order position: its takes go slice by slice (descend_slices) */
	int sliced_now; /* set by the descent when it went slice by slice */
	uint64_t slice_work; /* domains counted again by slice-by-slice descents so far */
	size_t descents, budget, scope_descents, level_start;
	size_t exact_steps, exact_budget; /* the node-level search's work and its budget */
	int exact_cut; /* the node-level search stopped at its budget */
	int exact_prefer; /* the node-level search holds preferred levels as required */
	int budget_hit;
	int elastic; /* this pass may place fewer slices (min_slices) */
	char *first_cause;
};

static inline uint32_t slice_size_of(const struct topo_group *g)
{
	return g->slice_size > 1 ? g->slice_size : 1;
}

/* ---- topo_place.c ---- */

/* A formatted sentence, malloc'd (NULL without memory). */
char *topo_place_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Why a node takes none of shape's pods (not Ready, cordoned, a taint, the
 * selector or affinity), or NULL when it may. */
const char *topo_place_exclusion(const struct topo_node *node, const struct topo_shape *shape);
/* How many pods of shape fit in free (one node's free resources). */
uint32_t topo_place_fit_free(const struct topo_cluster *cluster, const int64_t *free,
			     const struct topo_shape *shape);
/* The placement the context holds, whole the JobSet's domain; NULL without
 * memory. */
struct topo_placement *topo_place_build_output(struct ctx *x, uint32_t whole);

/* ---- topo_place_capacity.c: what the search counts and takes ---- */

/* The slice size and level in force for group g (1 and the node level
 * without slices). */
void topo_place_slicing(const struct ctx *x, const struct topo_group *g, uint64_t *size, size_t *level);
/* Whether a slice layer's level lies strictly between two levels. */
int topo_place_skips_layer(const struct ctx *x, const struct topo_group *g, size_t above, size_t below);
/* The deepest level with slices (the node level without slices). */
size_t topo_place_deepest_slices(const struct ctx *x, const struct topo_group *g);
/* Capacity of group g per domain of the subtree scope (pods, usable, room,
 * occupied). */
void topo_place_compute(struct ctx *x, uint32_t g, uint32_t scope);
/* Free pods of the request's shapes per domain into x->pods, each distinct
 * shape counted on its own and the counts summed, rolled up the tree (what
 * the candidates' free domains are measured in). */
void topo_place_free_pods(struct ctx *x);
/* The same after takes under d alone (g with no exclusivity and one layer
 * of slices at most, counted over the whole tree before): d's subtree
 * counted afresh, its ancestors summed again from their children. */
void topo_place_compute_under(struct ctx *x, uint32_t g, uint32_t d);
/* The same under d, a domain of g's one slice level, after some of its pods
 * were taken (pods, usable in slices of `size` at d, room). */
void topo_place_recount(struct ctx *x, uint32_t g, uint32_t d, uint64_t size);
/* Puts count pods of group g on node, logged for undo. */
/* What one pod of `shape` asks of resource r: 1 of "pods", whatever the
 * shape says, else its request. */
int64_t topo_place_request(const struct ctx *x, const struct topo_shape *shape, size_t r);
void topo_place_take(struct ctx *x, uint32_t g, uint32_t node, uint32_t count);
/* Closes every open node under d (an exclusive instance's domain), logged. */
void topo_place_close(struct ctx *x, uint32_t d);
/* Undoes the log back to mark (the takes of group g). */
void topo_place_undo(struct ctx *x, uint32_t g, size_t mark);

/* ---- topo_place_domain.c: the domain search ---- */

/* need pods of group g into d, down the tree (capacity computed). */
void topo_place_descend(struct ctx *x, uint32_t g, uint32_t d, uint64_t need);
size_t topo_place_required_level(const struct ctx *x, const struct topo_group *grp, uint32_t scope);
uint32_t topo_place_ancestor_at(const struct ctx *x, uint32_t d, size_t level);
/* The lowest domain holding both a and b (either may be TOPO_NONE: the
 * other). */
uint32_t topo_place_common(const struct ctx *x, uint32_t a, uint32_t b);
/* Whether domain d lies inside a domain of `level` or deeper (d itself, or
 * for a node, the domain that lists it): what a limit of that level asks.
 * Volcano's highestTierAllowed is "the highest tier a job may cross": a
 * tier-1 HyperNode is within a limit of tier 2 whatever its parent's tier,
 * and a Node listed directly in a tier-3 HyperNode is within none below. In
 * a tree of labels every node is inside a domain of each level, so this is
 * the plain "at or below the level". */
int topo_place_inside_level(const struct ctx *x, uint32_t d, size_t level);
/* The instances in the search's order (largest units first). */
void topo_place_make_order(struct ctx *x);
/* One pass of the search over the whole request; 1 when every instance is
 * placed, with *whole the JobSet's domain. */
int topo_place_run_pass(struct ctx *x, uint64_t total, int one_shape, uint32_t *whole);
/* For a refusal: the most pods of the request one domain of level holds. */
uint64_t topo_place_whole_fit(struct ctx *x, size_t level);

/* ---- topo_place_balanced.c: Kueue's balanced placement ---- */

/* Instance k's `want` pods inside scope (capacity computed) by Kueue's
 * balanced placement when its group asks for it and it applies: 1 with the
 * takes logged and *where the domain holding them; 2 when k is the workers
 * of a Kueue group with a leader of one pod (instance k + 1, the rest of
 * its unit), placed with it: k + 1's start, domain and placed set too; else
 * 0 with nothing taken. */
int topo_place_balanced(struct ctx *x, size_t k, uint32_t scope, uint32_t want, uint32_t *where);

/* ---- topo_place_bestfit.c: Kueue's BestFit as a candidate ---- */

/* The Kueue pass's work bound: instances times domains (each instance
 * counts the whole tree once, about 25 ns a domain on the 2-vCPU VM), so
 * that it adds at most about 13 ms (16 Jobs on 10,000 nodes of three
 * levels: 328,000, 6 ms). */
#define TOPO_KUEUE_PASS_WORK (1u << 19)
/* Whether Kueue's BestFit may place the request: every group a PodSet of
 * its own with a required or preferred level, at most one layer of slices,
 * no co-placement, exclusivity, minimum, balanced placement or group
 * outside the JobSet's level, no Jobs held (a move), and the pass within
 * TOPO_KUEUE_PASS_WORK. A JobSet-wide level is checked on what it places
 * (a required one must hold). */
int topo_place_kueue_allowed(const struct ctx *x);
/* Kueue's BestFit for the whole request, in x->order (the caller sets the
 * spec's): each instance alone, by Kueue's level search and descent
 * (pkg/cache/scheduler/tas_flavor_snapshot.go), then the takes on the
 * nodes. 1 with the takes logged and *whole the JobSet's domain when every
 * instance was placed and the JobSet's required level holds; else 0 with
 * nothing taken. */
int topo_place_kueue(struct ctx *x, uint32_t *whole);
/* Kueue's BestFit given the JobSet-wide level as Kueue's level search meets
 * a PodSet's (the JobSet one PodSet): at that level, the domain with the
 * fewest free pods of the request's shapes where every instance fits by
 * Kueue's pass held inside it; none: refused when the level is required,
 * else one level up, the cluster last (the passes tried within
 * TOPO_KUEUE_PASS_WORK together, each counted as instances times the
 * domains of its scope; the candidates in O(m log m) per level). 1
 * with the takes logged and *whole that domain, else 0 with nothing taken.
 * 0 without a JobSet-wide level. */
int topo_place_kueue_whole(struct ctx *x, uint32_t *whole);

/* ---- topo_place_node.c: the node-level search ---- */

/* The complete search over the whole request (x->elastic: at least each
 * instance's minimum); 1 when it placed every instance, with *whole the
 * JobSet's domain; else 0, with x->exact_cut when it stopped at its budget. */
int topo_place_exact(struct ctx *x, uint32_t *whole);
/* The same with every preferred level (the groups' and the JobSet's) held
 * as a required one, within half the budget: a placement meeting them all
 * where the greedy path missed one. */
int topo_place_exact_preferred(struct ctx *x, uint32_t *whole);

/* ---- topo_place_order.c: the choice between candidates ---- */

/* The request's scarcest resource, or -1. */
int topo_place_scarcest_resource(const struct ctx *x);
/* Whether another order may be tried (no co-placement, no minimum, more
 * than one instance). */
int topo_place_second_order_allowed(const struct ctx *x);
/* Whether the node-level search held to the preferences may be tried
 * (a preferred level, no balanced placement). */
int topo_place_preferred_search_allowed(const struct ctx *x);
/* The best of first and the other orders' placements; the rest freed. */
struct topo_placement *topo_place_best_of_orders(struct ctx *x, uint64_t total, int one_shape,
						 struct topo_placement *first);

#endif
