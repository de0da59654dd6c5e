/*
 * topo_property: the placement core (lib/topo/topo_place.h) against an
 * exhaustive search of its own, on random cases small enough for one.
 *
 * Each case is a random topology (label levels, or a Volcano HyperNode tree
 * that may skip tiers and leave Nodes directly in a higher tier) of up to 5
 * nodes with random free cpu, memory and pod slots, some cordoned or outside
 * a node selector, and a random JobSet of up to 6 pods: 1 to 3 replicated
 * jobs of mixed shapes, each required, preferred, unconstrained or without
 * a level, with slices (one to three layers) or partitions with a minimum,
 * exclusivity, co-placement, and a JobSet-wide required or preferred level
 * that may leave some replicated jobs out.
 *
 * The exhaustive search assigns every pod (rank) of every Job to a node, or
 * with a minimum leaves whole trailing slices out, and checks the result
 * against the rules as docs/topology.md states them, written here from
 * scratch (no helper of the core is called): capacity per node and
 * resource, eligible nodes, "the lowest domain holding a set of pods is at
 * the level or deeper" (a single node counts as the domain listing it) for
 * a Job's required level, each slice of each layer, a co-placed unit and
 * the JobSet's required level, and an exclusive Job alone in one domain of
 * exactly its level.
 *
 * Properties, per case: a placement the core returns keeps every rule;
 * it meets every preferred level (the groups' and the JobSet's) whenever
 * some placement meets them all, unless preferred node affinity or
 * balanced placement may rank first;
 * the core never refuses where the exhaustive search finds a placement;
 * it never places fewer partitions where every one fits; its answer maps to
 * the CLI's exit codes (0 placed, 1 refused, 2 a request no cluster can
 * hold), 2 only where nothing can be placed; and no search is cut.
 *
 * Pure: no I/O. Deterministic for a seed.
 */
#ifndef MUSTER_TOPO_PROPERTY_H
#define MUSTER_TOPO_PROPERTY_H

#include <stddef.h>
#include <stdint.h>

struct topo_property_counts {
	size_t cases, hypernode_cases; /* run; of them on HyperNode trees */
	size_t placed_full, placed_partial; /* the core's placements */
	size_t refused, refused_request; /* the core's refusals: exit 1, exit 2 */
	size_t exhaustive_full, exhaustive_any; /* cases where the exhaustive search found one */
	size_t with_slices, with_layers, with_minimum, with_exclusive, with_group, with_whole;
	size_t with_balanced; /* cases with Kueue's balanced placement asked */
	size_t mixed_shapes;
	size_t exhaustive_leaves; /* complete assignments the exhaustive search checked */
	/* Placements with preferred levels (and no affinity or balanced
	 * placement) that met every one of them. */
	size_t preferred_met;
};

/* Runs `cases` random cases from `seed`, adding to *counts. 0 when every
 * property held; else -1 and *failure (malloc'd, the caller frees): the
 * case's seed and what broke. */
int topo_property_run(uint64_t seed, size_t cases, struct topo_property_counts *counts, char **failure);

#endif
