/*
 * topo_place_domain: the domain search of the placement core. One context
 * holds the free resources per node, the capacity of the instance being
 * placed per domain, and a log of what each placed instance took, so a
 * failed branch of the search is undone exactly. Each instance goes to the
 * tightest domain that holds it (slices whole), then, for a required level,
 * the other domains there are tried with backtracking, within a budget.
 * Also the descent from a chosen domain down to nodes, and the order the
 * instances are placed in. Not the capacities and takes it counts
 * (topo_place_capacity.c), the request's checks or the output
 * (topo_place.c), the node-level search (topo_place_node.c) or the choice
 * between orders (topo_place_order.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place_int.h"

/* Both orders put the higher preferred affinity score first. */
static int by_value_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return x->domain < y->domain ? -1 : x->domain > y->domain;
}

static int by_value_asc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->domain < y->domain ? -1 : x->domain > y->domain;
}

/* The nodes under d with room for the instance being placed (capacity computed). */
static size_t nodes_with_room(const struct ctx *x, uint32_t d)
{
	size_t n = 0;

	for (uint32_t c = d; c < x->t->domains[d].end; c++)
		n += x->t->domains[c].node != TOPO_NONE && x->usable[c] > 0;
	return n;
}

/* Puts `need` pods of group g under domain d, which holds them (usable[d] >=
 * need): the children by preferred affinity score, then largest first; the
 * first child that holds the rest gives way to the tightest one of its
 * score that holds it (of equally tight ones the one with the least free
 * room when room breaks ties, else the first in tree order, as Kueue's
 * BestFit), a child that does not is taken whole. */
static void descend(struct ctx *x, uint32_t g, uint32_t d, uint64_t need);

/* At most this many domains counted again by the slice-by-slice descents of
 * one placement, all its passes and backtracking included (each costs its
 * slices times the domains under their domain); beyond, the plain descent,
 * whose slices may straddle domains below their level. */
#define SLICES_WHOLE_WORK (1u << 20)

/* Several slices into a domain of their level: one slice at a time, each by
 * the descent below (the tightest child holding it whole, as for a Job of
 * its own), so that a slice stays in one domain below its level when one
 * holds it. A slice that is a Job is then pinned whole (its pods need no
 * admission call of their own), and its pods talk inside one rack. Only for
 * one layer of slices and no exclusivity (topo_place_compute's other rules). */
static int descend_slices(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	const struct topo_group *grp = &x->req->groups[g];
	uint64_t size, work;
	size_t level;

	if (!x->slices_whole || grp->exclusive || grp->inner_count)
		return 0;
	topo_place_slicing(x, grp, &size, &level);
	if (size <= 1 || x->t->domains[d].level != level || need <= size || need % size)
		return 0;
	work = need / size * (x->t->domains[d].end - d);
	if (work > SLICES_WHOLE_WORK - x->slice_work)
		return 0;
	x->slice_work += work;
	x->slices_whole = 0; /* the descent of one slice is the plain one */
	x->sliced_now = 1;
	for (uint64_t left = need; left > 0; left -= size) {
		descend(x, g, d, size);
		topo_place_recount(x, g, d, size);
	}
	x->slices_whole = 1;
	return 1;
}

static void descend(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	const struct topo_domain *dom = x->t->domains;
	size_t slice_level, base = x->scratch_used, k = 0, i = 0;
	struct ranked *kids = x->scratch + base;

	if (dom[d].node != TOPO_NONE) {
		topo_place_take(x, g, dom[d].node, (uint32_t)need);
		return;
	}
	if (descend_slices(x, g, d, need))
		return;
	slice_level = topo_place_deepest_slices(x, &x->req->groups[g]);
	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end) {
		if ((dom[d].level < slice_level && dom[c].level > slice_level) ||
		    topo_place_skips_layer(x, &x->req->groups[g], dom[d].level, dom[c].level))
			continue;
		if (x->usable[c] > 0)
			kids[k++] = (struct ranked){ x->usable[c], c, x->score[c] };
	}
	x->scratch_used += k;
	qsort(kids, k, sizeof(*kids), by_value_desc);
	while (need > 0 && i < k) {
		if (kids[i].value >= need) {
			size_t lo = i, hi = i + 1; /* the last child of kids[i]'s score holding `need` */

			while (hi < k && kids[hi].score == kids[i].score)
				hi++;
			while (hi - lo > 1) {
				size_t mid = (lo + hi) / 2;

				if (kids[mid].value >= need)
					lo = mid;
				else
					hi = mid;
			}
			for (size_t j = lo; j-- > i && kids[j].value == kids[lo].value;)
				if (!x->room_ties || x->room[kids[j].domain] <= x->room[kids[lo].domain])
					lo = j;
			descend(x, g, kids[lo].domain, need);
			need = 0;
		} else {
			/* Of equally large children, the one whose room sits on the
			 * fewest nodes: the pods use fewer hosts (Kueue pools the
			 * hosts of the chosen domains and gets as few). */
			for (size_t j = i + 1; j < k && kids[j].value == kids[i].value; j++)
				if (nodes_with_room(x, kids[j].domain) < nodes_with_room(x, kids[i].domain)) {
					struct ranked swap = kids[i];

					kids[i] = kids[j];
					kids[j] = swap;
				}
			descend(x, g, kids[i].domain, kids[i].value);
			need -= kids[i].value;
			i++;
		}
	}
	x->scratch_used = base;
}

void topo_place_descend(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	descend(x, g, d, need);
}

/* Fills gaps for an unconstrained instance: the nodes under d (with slices
 * at a level, the domains of that level, each slice whole in one) with the
 * highest preferred affinity score first, then those with the least room
 * for the pods (ties in tree order). */
static void fill_gaps(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *grp = &x->req->groups[g];
	size_t base = x->scratch_used, k = 0;
	size_t level = grp->slice_size > 1 && grp->slice_level ? grp->slice_level : x->t->node_level;
	struct ranked *gaps = x->scratch + base;

	for (uint32_t c = d; c < dom[d].end; c++)
		if (dom[c].level == level && x->usable[c] > 0)
			gaps[k++] = (struct ranked){ x->usable[c], c, x->score[c] };
	x->scratch_used += k;
	qsort(gaps, k, sizeof(*gaps), by_value_asc);
	for (size_t i = 0; i < k && need > 0; i++) {
		uint64_t n = gaps[i].value < need ? gaps[i].value : need;

		descend(x, g, gaps[i].domain, n);
		need -= n;
	}
	x->scratch_used = base;
}

static void place(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	if (x->req->groups[g].constraint.mode == TOPO_MODE_UNCONSTRAINED) {
		fill_gaps(x, g, d, need);
	} else {
		x->slices_whole = 1;
		descend(x, g, d, need);
		x->slices_whole = 0;
	}
}

/* Instance k's `want` pods into domain d (capacity computed), which an
 * exclusive instance then holds alone. */
static void place_instance(struct ctx *x, size_t k, uint32_t d, uint32_t want)
{
	uint32_t g = x->order[k].group;

	x->sliced_now = 0;
	place(x, g, d, want);
	x->domain[k] = d;
	x->placed[k] = want;
	x->sliced[k] = (uint8_t)x->sliced_now;
	/* The domain of its level (d, or d's ancestor when a JobSet-wide level
	 * below it confines the search; topo_place_compute checked it free). */
	if (x->req->groups[g].exclusive)
		topo_place_close(x, topo_place_ancestor_at(x, d, x->req->groups[g].constraint.level));
}

/* The level at which a required instance's domains are compared inside scope. */
size_t topo_place_required_level(const struct ctx *x, const struct topo_group *grp, uint32_t scope)
{
	size_t level = x->t->domains[scope].level;

	return grp->constraint.level > level ? grp->constraint.level : level;
}

/* The ancestor of d (or d) at `level`, or the first one above it when the
 * tree skips that level there. */
uint32_t topo_place_ancestor_at(const struct ctx *x, uint32_t d, size_t level)
{
	while (x->t->domains[d].level > level)
		d = x->t->domains[d].parent;
	return d;
}

uint32_t topo_place_common(const struct ctx *x, uint32_t a, uint32_t b)
{
	const struct topo_domain *dom = x->t->domains;

	if (a == TOPO_NONE)
		return b;
	if (b == TOPO_NONE)
		return a;
	while (a != b) {
		if (dom[a].level >= dom[b].level && dom[a].parent != TOPO_NONE)
			a = dom[a].parent;
		else
			b = dom[b].parent;
	}
	return a;
}

int topo_place_inside_level(const struct ctx *x, uint32_t d, size_t level)
{
	const struct topo_domain *dom = x->t->domains;

	if (dom[d].level < x->t->node_level || d == 0)
		return dom[d].level >= level;
	return dom[dom[d].parent].level >= level;
}

/* How close domain d is to the pods of the request already placed: the
 * deepest level of an ancestor of d (d included) holding some (occupied,
 * from topo_place_compute), or -1. */
static int affinity(const struct ctx *x, uint32_t d)
{
	for (;; d = x->t->domains[d].parent) {
		if (x->occupied[d])
			return (int)x->t->domains[d].level;
		if (d == 0)
			return -1;
	}
}

/* Whether a domain may hold an instance of a group with a required level:
 * at or above that level, or inside a domain of it (a Node listed directly
 * in a higher-tier HyperNode is in no domain of the lower tier). */
static int within_level(const struct ctx *x, uint32_t d, const struct topo_group *grp)
{
	size_t lowest = grp->constraint.mode == TOPO_MODE_REQUIRED ? grp->constraint.level : 0;

	return !lowest || x->t->domains[d].level <= lowest || topo_place_inside_level(x, d, lowest);
}

/* Whether a node taken whole as an instance's domain lies inside a domain
 * of its deepest slice level: a Node listed directly in a higher-tier
 * HyperNode is in none, so even slices of one pod (partitions under a tier)
 * may not go there. Domains are checked by the capacity roll-up. */
static int within_slices(const struct ctx *x, uint32_t d, const struct topo_group *grp)
{
	const struct topo_domain *dom = x->t->domains;
	size_t level = grp->slice_level; /* the deepest layer above the nodes */

	for (size_t i = 0; grp->slice_size > 1 && i < grp->inner_count; i++)
		if (grp->inner[i].level < x->t->node_level && grp->inner[i].level > level)
			level = grp->inner[i].level;
	if (!grp->slice_level || dom[d].node == TOPO_NONE || level >= x->t->node_level)
		return 1;
	return dom[dom[d].parent].level >= level;
}

/* Whether domain d is tighter than domain e for the instance being placed:
 * fewer pod slots, or as many and less free room of the scarcest resource
 * (of two racks with room for 10 pods, the one with 20 free cpu is taken
 * and the one with 22 left whole). */
static int tighter(const struct ctx *x, uint32_t d, uint32_t e)
{
	if (x->usable[d] != x->usable[e])
		return x->usable[d] < x->usable[e];
	return x->room_ties && x->room[d] < x->room[e];
}

/* Among the domains of `level` in scope holding `want` pods, those with the
 * highest preferred affinity score, the tightest of them (large domains
 * stay whole), then among equally tight ones the one nearest the pods
 * already placed (the JobSet stays together), then the one with the least
 * free room, then in tree order. */
static uint32_t nearest_tightest(struct ctx *x, uint32_t scope, uint64_t want, size_t level)
{
	const struct topo_domain *dom = x->t->domains;
	uint32_t best = TOPO_NONE;
	int best_near = -2;

	for (uint32_t d = scope; d < dom[scope].end; d++) {
		int near;

		if (dom[d].level != level || x->usable[d] < want)
			continue;
		near = affinity(x, d);
		if (best != TOPO_NONE && x->score[d] != x->score[best]) {
			if (x->score[d] > x->score[best]) {
				best = d;
				best_near = near;
			}
			continue;
		}
		if (best == TOPO_NONE || x->usable[d] < x->usable[best] ||
		    (x->usable[d] == x->usable[best] &&
		     (near > best_near ||
		      (near == best_near && x->room_ties && x->room[d] < x->room[best])))) {
			best = d;
			best_near = near;
		}
	}
	return best;
}

/* The domain in scope holding `want` pods, at the deepest level that has
 * one and that the constraint allows: of the highest preferred affinity
 * score there, the tightest; TOPO_NONE if none. */
static uint32_t choose(struct ctx *x, const struct instance *in, uint32_t scope, uint64_t want)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_constraint *con = &x->req->groups[in->group].constraint;
	uint32_t best[TOPO_LEVELS_MAX + 2];
	uint64_t top[TOPO_LEVELS_MAX +
		     2]; /* per level: the highest score of an allowed domain, fitting or not */
	size_t lowest = con->mode == TOPO_MODE_REQUIRED ? con->level : 0;

	if (con->mode == TOPO_MODE_UNCONSTRAINED)
		return x->usable[scope] >= want ? scope : TOPO_NONE;
	for (size_t l = 0; l <= x->t->node_level; l++) {
		best[l] = TOPO_NONE;
		top[l] = 0;
	}
	for (uint32_t d = scope; d < dom[scope].end; d++) {
		size_t l = dom[d].level;

		if (l < lowest || (x->req->groups[in->group].exclusive &&
				   l != topo_place_required_level(x, &x->req->groups[in->group], scope)))
			continue;
		/* Below the required level only inside a domain of it: a Node listed
		 * directly in a higher-tier HyperNode is in no domain of the lower
		 * tier (Volcano's highestTierAllowed). */
		if (!within_level(x, d, &x->req->groups[in->group]) ||
		    !within_slices(x, d, &x->req->groups[in->group]))
			continue;
		if (x->score[d] > top[l])
			top[l] = x->score[d];
		if (x->usable[d] < want)
			continue;
		if (best[l] == TOPO_NONE || x->score[d] > x->score[best[l]] ||
		    (x->score[d] == x->score[best[l]] && tighter(x, d, best[l])))
			best[l] = d;
	}
	/* A required or preferred level: the tightest domain of that level (the
	 * descent then takes the tightest part of it that holds the pods), so
	 * the pods do not cut into another, larger domain of the level because
	 * it has a tight node; preferred climbs from there. Without a level: the
	 * deepest level that has one. Preferred node affinity first: a required
	 * level takes the highest score among the domains that hold the pods;
	 * a preferred level is met only by a domain of the level's highest
	 * score, else the search climbs (Kueue: the pods then split over the
	 * domains of that score and others, rather than go whole into a domain
	 * of a lower score). */
	if (con->mode == TOPO_MODE_REQUIRED || con->mode == TOPO_MODE_PREFERRED) {
		size_t target = topo_place_required_level(x, &x->req->groups[in->group], scope);
		int met = best[target] != TOPO_NONE &&
			  (con->mode == TOPO_MODE_REQUIRED || x->score[best[target]] == top[target]);

		if (met)
			return nearest_tightest(x, scope, want, target);
		for (size_t l = target; l-- > 0;)
			if (best[l] != TOPO_NONE && x->score[best[l]] == top[l])
				return best[l];
		/* No domain of the level holds it, yet one deeper may, where the
		 * tree skips the level there (a tier-1 HyperNode directly under a
		 * tier-3 one): within the limit, and the tightest fit. */
		for (size_t l = target + 1; l <= x->t->node_level; l++)
			if (best[l] != TOPO_NONE)
				return best[l];
		return TOPO_NONE;
	}
	for (size_t l = x->t->node_level + 1; l-- > 0;)
		if (best[l] != TOPO_NONE)
			return best[l];
	return TOPO_NONE;
}

/* The most pods of the instance one allowed domain in scope holds (capacity
 * computed), in whole slices. */
static uint64_t largest_fit(struct ctx *x, const struct instance *in, uint32_t scope)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *grp = &x->req->groups[in->group];
	uint64_t most = 0, size = slice_size_of(grp);

	if (grp->constraint.mode != TOPO_MODE_REQUIRED) {
		most = x->usable[scope];
	} else {
		size_t level = topo_place_required_level(x, grp, scope);

		for (uint32_t d = scope; d < dom[scope].end; d++)
			if (dom[d].level == level && x->usable[d] > most)
				most = x->usable[d];
	}
	return most / size * size;
}

static void note_refusal(struct ctx *x, const struct instance *in, uint32_t scope)
{
	const struct topo_tree *t = x->t;
	const struct topo_domain *dom = t->domains;
	const struct topo_group *grp = &x->req->groups[in->group];
	uint64_t most = 0;
	size_t excluded = 0;
	const char *why = NULL, *who = NULL;
	char where[600] = "", slices[64] = "", least[64] = "", note[400] = "", job[400];
	char path[512];

	if (x->first_cause)
		return;
	for (uint32_t d = scope; d < dom[scope].end; d++) {
		uint32_t n = dom[d].node;

		if (n != TOPO_NONE && !x->eligible[(size_t)in->group * x->c->node_count + n]) {
			if (!excluded++) {
				who = x->c->nodes[n].name;
				why = topo_place_exclusion(&x->c->nodes[n], &grp->shape);
			}
		}
	}
	if (scope != 0)
		snprintf(where, sizeof(where), ", inside %s %s", t->level_names[dom[scope].level],
			 topo_tree_path(t, scope, path, sizeof(path)));
	if (grp->slice_size > 1)
		snprintf(slices, sizeof(slices), " in whole slices of %u", grp->slice_size);
	if (in->min_pods < in->pods)
		snprintf(least, sizeof(least), ", at least %u needed", in->min_pods);
	if (excluded)
		snprintf(note, sizeof(note), "; %zu nodes excluded for these pods (node %s %s)", excluded,
			 who, why ? why : "");
	if (grp->job_pods)
		snprintf(job, sizeof(job), "its %u jobs as one", grp->pods / grp->job_pods);
	else
		snprintf(job, sizeof(job), "job %u", in->job);
	if (grp->exclusive) {
		size_t used = strlen(job);

		snprintf(job + used, sizeof(job) - used,
			 "; exclusive: a %s holding pods of another Job is not taken",
			 t->level_names[grp->constraint.level]);
	}
	if (grp->slice_size > 1 && grp->slice_level > 0 && grp->slice_level < t->node_level) {
		size_t used = strlen(job);

		snprintf(job + used, sizeof(job) - used, "; a slice in one %s",
			 t->level_names[grp->slice_level]);
	}
	if (grp->constraint.mode == TOPO_MODE_REQUIRED) {
		size_t level = topo_place_required_level(x, grp, scope);

		for (uint32_t d = scope; d < dom[scope].end; d++)
			if (dom[d].level == level && x->usable[d] > most)
				most = x->usable[d];
		x->first_cause = topo_place_format(
			"%s: at most %llu of %u pods fit in any one domain%s%s (replicated job %s, "
			"%s%s)%s",
			t->level_names[grp->constraint.level], (unsigned long long)most, in->pods, slices,
			least, grp->name ? grp->name : "", job, where, note);
	} else {
		x->first_cause = topo_place_format(
			"at most %llu of %u pods fit%s%s in the %s (replicated job %s, %s%s)%s",
			(unsigned long long)x->usable[scope], in->pods, slices, least,
			scope ? "domain" : "cluster", grp->name ? grp->name : "", job, where, note);
	}
}

static int budget_left(struct ctx *x)
{
	if (x->scope_descents >= x->budget) {
		x->budget_hit = 1;
		return 0;
	}
	x->scope_descents++;
	x->descents++;
	return 1;
}

static int dfs(struct ctx *x, size_t k, uint32_t scope);

/* The largest domain holding d that is within `level` (d itself when above
 * it): where a tree skips the level, a domain below it directly under a
 * higher one (a tier-2 HyperNode under the root, for a unit held to tier
 * 3) is the unit's domain, not the root. */
static uint32_t top_within(const struct ctx *x, uint32_t d, size_t level)
{
	const struct topo_domain *dom = x->t->domains;

	while (dom[d].parent != TOPO_NONE && dom[dom[d].parent].level >= level)
		d = dom[d].parent;
	return d;
}

/* Instance k with `want` pods inside `near` (its scope, or for a co-placed
 * instance the domain its unit's leader is in), the rest of the order inside
 * `scope`: the greedy choice, then for a required level the other domains
 * there, tightest first. */
static int try_count(struct ctx *x, size_t k, uint32_t near, uint32_t scope, uint32_t want)
{
	const struct instance *in = &x->order[k];
	const struct topo_group *grp = &x->req->groups[in->group];
	const struct topo_domain *dom = x->t->domains;
	struct ranked *alts = NULL;
	size_t alt_count = 0, mark = x->log_used, level;
	uint32_t first;
	int ok = 0, with;

	topo_place_compute(x, in->group, near);
	if (grp->balanced && (with = topo_place_balanced(x, k, near, want, &first)) > 0) {
		/* With a leader (with == 2) instance k + 1 is placed too. */
		if (!budget_left(x)) {
			/* Nothing of this instance left behind: the caller undoes
			 * only its own takes, with its own group's shape. */
			if (with == 2)
				topo_place_undo(x, x->order[k + 1].group, x->start[k + 1]);
			topo_place_undo(x, in->group, mark);
			return 0;
		}
		x->domain[k] = first;
		x->placed[k] = want;
		x->sliced[k] = 0;
		if (with == 2)
			x->sliced[k + 1] = 0;
		if (dfs(x, k + (size_t)with, scope))
			return 1;
		if (with == 2)
			topo_place_undo(x, x->order[k + 1].group, x->start[k + 1]);
		topo_place_undo(x, in->group, mark);
		topo_place_compute(x, in->group, near);
	}
	first = choose(x, in, near, want);
	if (first == TOPO_NONE) {
		note_refusal(x, in, near);
	} else if (budget_left(x)) {
		place_instance(x, k, first, want);
		if (dfs(x, k + 1, scope))
			return 1;
		topo_place_undo(x, in->group, mark);
	}
	if (grp->constraint.mode != TOPO_MODE_REQUIRED || x->budget_hit)
		return 0;
	/* The other domains at the required level, by preferred affinity score,
	 * then tightest first. */
	topo_place_compute(x, in->group, near);
	level = topo_place_required_level(x, grp, near);
	alts = malloc((dom[near].end - near) * sizeof(*alts));
	if (!alts)
		return 0;
	for (uint32_t d = near; d < dom[near].end; d++)
		if (dom[d].level == level && x->usable[d] >= want && d != first && within_level(x, d, grp) &&
		    within_slices(x, d, grp))
			alts[alt_count++] = (struct ranked){ x->usable[d], d, x->score[d] };
	qsort(alts, alt_count, sizeof(*alts), by_value_asc);
	for (size_t a = 0; a < alt_count && !ok; a++) {
		if (!budget_left(x))
			break;
		topo_place_compute(x, in->group, near);
		place_instance(x, k, alts[a].domain, want);
		ok = dfs(x, k + 1, scope);
		if (!ok)
			topo_place_undo(x, in->group, mark);
	}
	free(alts);
	return ok;
}

/* Every pod of instance k, then (elastic pass, min_slices) fewer whole slices,
 * the most that one allowed domain holds first, down to the minimum. */
static int try_counts(struct ctx *x, size_t k, uint32_t near, uint32_t scope)
{
	const struct instance *in = &x->order[k];
	uint32_t size = slice_size_of(&x->req->groups[in->group]);
	uint64_t most;

	if (try_count(x, k, near, scope, in->pods))
		return 1;
	if (!x->elastic || in->min_pods >= in->pods || x->budget_hit)
		return 0;
	topo_place_compute(x, in->group, near);
	most = largest_fit(x, in, near);
	if (most >= in->pods)
		most = in->pods - size; /* all of them failed further down */
	for (uint64_t want = most; want >= in->min_pods && !x->budget_hit; want -= size)
		if (try_count(x, k, near, scope, (uint32_t)want))
			return 1;
	return 0;
}

/* Places instances k.. inside scope, backtracking (see topo_place.h). */
static int dfs(struct ctx *x, size_t k, uint32_t scope)
{
	const struct instance *in;
	const struct topo_group *grp;
	uint32_t near;

	if (k == x->instance_count)
		return 1;
	in = &x->order[k];
	grp = &x->req->groups[in->group];
	x->start[k] = x->log_used;
	if (in->leader == k)
		return try_counts(x, k, grp->outside_whole ? 0 : scope, scope);
	/* Co-placed: inside the domain of the unit's level that holds the
	 * leader; a preferred unit may fall back to the whole scope. */
	near = top_within(x, x->domain[in->leader], topo_place_required_level(x, grp, scope));
	if (try_counts(x, k, near, scope))
		return 1;
	if (grp->constraint.mode != TOPO_MODE_PREFERRED || near == scope || x->budget_hit)
		return 0;
	return try_counts(x, k, scope, scope);
}

static int instance_order(const struct instance *x, const struct instance *y)
{
	if (x->required != y->required)
		return x->required ? -1 : 1;
	if (x->unit_pods != y->unit_pods)
		return x->unit_pods > y->unit_pods ? -1 : 1;
	if (x->unit_group != y->unit_group)
		return x->unit_group < y->unit_group ? -1 : 1;
	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	/* Inside a unit: the largest first (the leader), then by group. */
	if (x->pods != y->pods)
		return x->pods > y->pods ? -1 : 1;
	return x->group < y->group ? -1 : x->group > y->group;
}

/* Insertion into sorted order: instance lists are small (<= TOPO_INSTANCES_MAX)
 * and mostly sorted already. Then each unit's leader. */
static void sort_instances(struct instance *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct instance cur = v[i];
		size_t j = i;

		while (j > 0 && instance_order(&v[j - 1], &cur) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = cur;
	}
	for (size_t i = 0; i < n; i++) {
		int same = i > 0 && v[i].unit_group == v[i - 1].unit_group && v[i].job == v[i - 1].job;

		v[i].leader = same ? v[i - 1].leader : (uint32_t)i;
	}
}

/* The instances of the request, with their units, in placement order. */
void topo_place_make_order(struct ctx *x)
{
	const struct topo_request *req = x->req;
	size_t k = 0;

	for (size_t g = 0; g < req->group_count; g++) {
		const struct topo_group *grp = &req->groups[g];
		uint32_t size = slice_size_of(grp);
		uint32_t least = grp->min_slices ? grp->min_slices * size : grp->pods;
		uint64_t unit_pods = grp->pods;
		uint32_t unit_group = (uint32_t)g;

		for (size_t h = 0; grp->together && h < req->group_count; h++)
			if (h != g && req->groups[h].together == grp->together) {
				unit_pods += req->groups[h].pods;
				if (h < unit_group)
					unit_group = (uint32_t)h;
			}
		for (uint32_t j = 0; j < grp->replicas; j++)
			x->order[k++] =
				(struct instance){ .group = (uint32_t)g,
						   .job = j,
						   .pods = grp->pods,
						   .min_pods = least < grp->pods ? least : grp->pods,
						   .unit_group = unit_group,
						   .unit_pods = unit_pods,
						   .required = grp->constraint.mode == TOPO_MODE_REQUIRED };
	}
	sort_instances(x->order, k);
}

/* For a refusal: the most pods of the request that the free capacity of
 * one domain of `level` holds, each group counted on its own shape and
 * groups taken in order (an upper bound; the search also keeps instances
 * and slices whole). */
uint64_t topo_place_whole_fit(struct ctx *x, size_t level)
{
	const struct topo_domain *dom = x->t->domains;
	uint64_t best = 0;

	for (uint32_t d = 0; d < x->t->domain_count; d++) {
		uint64_t fit = 0;

		if (dom[d].level != level)
			continue;
		for (uint32_t g = 0; g < x->req->group_count; g++) {
			const struct topo_group *grp = &x->req->groups[g];
			uint64_t want = (uint64_t)grp->pods * grp->replicas, have;

			if (grp->outside_whole)
				continue;
			topo_place_compute(x, g, d);
			have = x->usable[d];
			fit += have < want ? have : want;
		}
		if (fit > best)
			best = fit;
	}
	return best;
}

/* Whether domain d may hold the whole JobSet under its required level: at
 * or above it, or inside a domain of it. A Node listed directly in a
 * higher-tier HyperNode is in no domain of the lower tier, so a JobSet
 * held to that tier (Volcano's hard highestTierAllowed) may not use it. */
static int whole_within(const struct ctx *x, uint32_t d)
{
	size_t top = x->req->whole.mode == TOPO_MODE_REQUIRED ? x->req->whole.level : 0;

	return !top || x->t->domains[d].level <= top || topo_place_inside_level(x, d, top);
}

/* Whether candidate a goes before b: less room for the largest instance
 * (capacity computed), then the tighter ancestor from the parent up, then
 * tree order. Equally tight candidates go in their parents' order, so the
 * JobSet takes the tightest rack of the tightest block and the larger
 * block stays whole (two hosts with room for it, one in a block that holds
 * nothing more: that one). */
static int candidate_before(const struct ctx *x, uint32_t a, uint32_t b)
{
	const struct topo_domain *dom = x->t->domains;

	if (x->usable[a] != x->usable[b])
		return x->usable[a] < x->usable[b];
	for (uint32_t pa = dom[a].parent, pb = dom[b].parent; pa != pb && pa != TOPO_NONE && pb != TOPO_NONE;
	     pa = dom[pa].parent, pb = dom[pb].parent)
		if (x->usable[pa] != x->usable[pb])
			return x->usable[pa] < x->usable[pb];
	return a < b;
}

/* Sorts v[0..n) by candidate_before with tmp of n entries: a bottom-up
 * merge sort, as qsort passes no context. */
static void sort_candidates(const struct ctx *x, uint32_t *v, uint32_t *tmp, size_t n)
{
	for (size_t width = 1; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = lo + width < n ? lo + width : n,
			       hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = candidate_before(x, v[j], v[i]) ? v[j++] : v[i++];
			while (i < mid)
				tmp[k++] = v[i++];
			while (j < hi)
				tmp[k++] = v[j++];
		}
		memcpy(v, tmp, n * sizeof(*v));
	}
}

/* Pods placed by the search that just succeeded, over every instance. */
static uint64_t pods_placed(const struct ctx *x)
{
	uint64_t sum = 0;

	for (size_t k = 0; k < x->instance_count; k++)
		sum += x->placed[k];
	return sum;
}

/* Undoes a successful search: every instance's takes, the last first. */
static void undo_all(struct ctx *x)
{
	for (size_t k = x->instance_count; k-- > 0;)
		topo_place_undo(x, x->order[k].group, x->start[k]);
}

/* Tries the whole JobSet inside each candidate scope of `level`, tightest
 * first (candidate_before): the first that holds it. In the elastic pass
 * (not every partition fits anywhere) every candidate is tried and the one
 * holding the most pods kept, the tightest of equal ones; the search is
 * deterministic, so it is run again there. */
static int try_level(struct ctx *x, size_t level, uint64_t total, int one_shape, uint32_t *found)
{
	const struct topo_domain *dom = x->t->domains;
	const struct instance *big;
	size_t first = 0;
	uint64_t need;

	/* The largest instance the JobSet's constraint holds decides the candidates. */
	while (first + 1 < x->instance_count && x->req->groups[x->order[first].group].outside_whole)
		first++;
	big = &x->order[first];
	need = x->elastic ? big->min_pods : big->pods;
	uint32_t *cands = NULL, *tmp = NULL, best = TOPO_NONE;
	uint64_t best_placed = 0, best_work = 0, all_pods = 0;
	size_t n = 0;
	int ok = 0;

	for (size_t k = 0; k < x->instance_count; k++)
		all_pods += x->order[k].pods;

	topo_place_compute(x, big->group, 0);
	cands = malloc(x->t->domain_count * sizeof(*cands));
	tmp = malloc(x->t->domain_count * sizeof(*tmp));
	if (!cands || !tmp)
		goto out;
	for (uint32_t d = 0; d < x->t->domain_count; d++)
		if (dom[d].level == level && x->usable[d] >= need && (!one_shape || x->pods[d] >= total) &&
		    whole_within(x, d))
			cands[n++] = d;
	sort_candidates(x, cands, tmp, n);
	/* Each level has a budget of its own: a level whose candidates are
	 * many and fragmented cannot use up the search of the levels above
	 * it, so a preferred constraint always gets to try the root. */
	x->level_start = x->descents;
	for (size_t i = 0; i < n && !ok && x->descents - x->level_start < 8 * (size_t)x->budget; i++) {
		uint64_t placed, work = x->slice_work;

		x->scope_descents = 0;
		x->budget_hit = 0;
		if (!dfs(x, 0, cands[i]))
			continue;
		if (!x->elastic) {
			ok = 1;
			*found = cands[i];
			break;
		}
		placed = pods_placed(x);
		undo_all(x);
		if (placed > best_placed) {
			best_placed = placed;
			best = cands[i];
			best_work = work;
		}
		if (placed == all_pods)
			break; /* none holds more */
	}
	if (best != TOPO_NONE) {
		/* The same search as when it was found: the slice-by-slice
		 * descents' work so far decides how they descend. */
		uint64_t spent = x->slice_work;

		x->slice_work = best_work;
		x->scope_descents = 0;
		x->budget_hit = 0;
		ok = dfs(x, 0, best);
		if (x->slice_work < spent)
			x->slice_work = spent;
		if (ok)
			*found = best;
	}
out:
	free(cands);
	free(tmp);
	return ok;
}

/* One pass over the request: without the JobSet constraint the cluster is
 * the scope; with it, candidate scopes from the deepest level up. */
int topo_place_run_pass(struct ctx *x, uint64_t total, int one_shape, uint32_t *whole)
{
	const struct topo_request *req = x->req;
	size_t top;

	x->budget_hit = 0;
	if (x->instance_count == 0)
		return 1;
	if (req->whole.mode == TOPO_MODE_NONE) {
		x->scope_descents = 0;
		return dfs(x, 0, 0);
	}
	top = req->whole.mode == TOPO_MODE_REQUIRED ? req->whole.level : 0;
	for (size_t level = x->t->node_level + 1; level-- > top;)
		if (try_level(x, level, total, one_shape, whole))
			return 1;
	return 0;
}
