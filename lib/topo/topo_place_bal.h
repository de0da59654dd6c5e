/*
 * topo_place_bal: the private header of balanced placement's two files.
 *
 *   topo_place_balanced.c   Kueue's balanced choice: thresholds, pruning,
 *                           the optimal set of domains, and the entry point
 *                           topo_place_balanced() (topo_place_int.h); also
 *                           Kueue's counts per domain (domainState) and the
 *                           orders over them, which both files use
 *   topo_place_bestfit.c    Kueue's BestFit inside it: the counts taken
 *                           over a list of domains, the descent to the
 *                           leaves, the takes on the nodes, and the
 *                           fallback for a group with a leader
 */
#ifndef MUSTER_TOPO_PLACE_BAL_H
#define MUSTER_TOPO_PLACE_BAL_H

#include <stdint.h>

#include "topo_place_int.h"

struct bal {
	struct ctx *x;
	/* Kueue's domainState per domain: podCount, podCountWithLeader,
	 * sliceCount, sliceCountWithLeader (signed: Kueue's arithmetic may go
	 * below zero) and leaderCount. */
	int64_t *kp, *kpl, *ks, *ksl;
	uint8_t *lc;
	uint32_t *leader_node; /* per Kueue leaf: the node the leader would take */
	size_t slice_level; /* Kueue's sliceLevelIdx as a tree level */
	int64_t size; /* slice size */
	/* Kueue's sliceSizeAtLevel by tree level: the inner slice layers' sizes
	 * from just below the slice level down to each layer's level (0: no
	 * layer); off while pruning recounts, as Kueue's passes none there. */
	int64_t inner[TOPO_LEVELS_MAX + 2];
	int inner_off;
	int required; /* the level is required: Kueue's level search never climbs */
	int64_t leaders; /* 0 or 1 */
	uint32_t group, leader_group; /* the workers' and the leader's */
};

struct list {
	uint32_t *v;
	size_t n;
};

typedef int (*order_fn)(const struct bal *, uint32_t, uint32_t);

/* ---- topo_place_balanced.c: the counts and their orders ---- */

/* Kueue's counts for n domains (0, or -1 without memory: release anyway). */
int bal_alloc(struct bal *b, size_t n);
void bal_release(struct bal *b);
/* Whether d is a Kueue domain (not a node leaf). */
int bal_is_domain(const struct ctx *x, uint32_t d);
/* Whether d has domain children (else it is a Kueue leaf). */
int bal_has_domain_children(const struct ctx *x, uint32_t d);
/* Appends d's Kueue children (not node leaves) to out (room for them). */
void bal_children(const struct ctx *x, uint32_t d, struct list *out);
/* Kueue's counts of d's subtree as fillInCounts leaves them; -1 where the
 * tree is not Kueue's (a domain holding both nodes and domains). */
int bal_reset(struct bal *b, uint32_t d);
/* Sorts l by cmp with the counts as context (every order total). */
void bal_sort(const struct bal *b, struct list *l, order_fn cmp);
/* Kueue's sortedDomains (BestFit) and sortedDomainsWithLeader. */
int bal_by_best_fit(const struct bal *b, uint32_t a, uint32_t c);
int bal_by_best_fit_leader(const struct bal *b, uint32_t a, uint32_t c);

/* ---- topo_place_bestfit.c ---- */

/* Kueue's updateCountsToMinimumGeneric (BestFit): `count` pods (in slices
 * of `size` when `slices`) and `leaders` over l's domains, appended to
 * out; -1 when they do not hold it. */
int bal_update_counts(struct bal *b, struct list *l, int64_t count, int64_t leaders, int64_t size, int slices,
		      struct list *out);
/* Kueue's descent from l's domains to its leaves (left in l); -1 when a
 * step does not hold them. */
int bal_descend_kueue(struct bal *b, struct list *l, uint32_t *scratch, uint32_t *scratch2);
/* The workers' pods of each leaf of l, then the leader; -1 when a leaf's
 * nodes do not hold them (the caller undoes). */
int bal_take_all(struct bal *b, uint32_t g, const struct list *l, uint32_t *leader_leaf,
		 size_t *leader_start);
/* The lowest domain holding the domains of l that get pods. */
uint32_t bal_top_of(const struct bal *b, const struct list *l);
/* Kueue's BestFit for a group with a leader: the level search, then the
 * descent; the leaves in fit, the lowest domain holding them in *top. */
int bal_best_fit_with_leader(struct bal *b, uint32_t scope, size_t level, int64_t count, struct list *fit,
			     uint32_t *scratch, uint32_t *scratch2, uint32_t *top);

#endif
