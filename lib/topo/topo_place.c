/*
 * topo_place: the placement core (contract in topo_place.h, reasoning in
 * docs/topology.md). One context holds the free resources per node, the
 * capacity of the instance being placed per domain, and a log of what each
 * placed instance took, so a failed branch of the search is undone exactly.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_place.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The node-level search (mixed shapes, see node_search) runs on requests of
 * at most this many instances and nodes, and stops after this many steps. */
#define NODE_SEARCH_INSTANCES 16
#define NODE_SEARCH_NODES 256
#define NODE_SEARCH_BUDGET 1000000u

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

struct ranked {
	uint64_t value;
	uint32_t domain;
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
	int scarce; /* the request's scarcest resource, or -1 (room counts pod slots) */
	int room_ties; /* equally tight domains: the least free room first (else tree order) */
	struct ranked *scratch; /* children lists of the descent, a stack */
	size_t scratch_used;
	struct take *log;
	size_t log_used, log_cap;
	struct instance *order;
	size_t instance_count;
	size_t *start; /* per order position: its first log entry */
	uint32_t *domain; /* per order position: the domain it was placed in */
	uint32_t *placed; /* per order position: pods placed (fewer than wanted only when elastic) */
	size_t descents, budget, scope_descents, level_start;
	size_t node_steps; /* the node-level search's work, against NODE_SEARCH_BUDGET */
	int budget_hit;
	int elastic; /* this pass may place fewer slices (min_slices) */
	char *first_cause;
};

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *format(const char *fmt, ...)
{
	va_list ap;
	char buf[768];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return strdup(buf);
}

static int tolerated(const struct topo_shape *shape, const struct topo_taint *taint)
{
	for (size_t i = 0; i < shape->toleration_count; i++) {
		const struct topo_toleration *tol = &shape->tolerations[i];
		const char *key = tol->key ? tol->key : "";

		if (!tol->any_effect && tol->effect != taint->effect)
			continue;
		if (tol->exists) {
			if (!key[0] || strcmp(key, taint->key ? taint->key : "") == 0)
				return 1;
		} else if (strcmp(key, taint->key ? taint->key : "") == 0 &&
			   strcmp(tol->value ? tol->value : "", taint->value ? taint->value : "") == 0) {
			return 1;
		}
	}
	return 0;
}

static int affinity_holds(const struct topo_node *node, const struct topo_shape *shape)
{
	for (size_t i = 0; i < shape->affinity_count; i++) {
		const struct topo_term *term = &shape->affinity[i];

		if (term->requirement_count &&
		    topo_requirements_match(node, term->requirements, term->requirement_count))
			return 1;
	}
	return shape->affinity_count == 0;
}

static const char *exclusion(const struct topo_node *node, const struct topo_shape *shape)
{
	if (node->not_ready)
		return "is not Ready";
	if (node->unschedulable)
		return "is cordoned (unschedulable)";
	for (size_t i = 0; i < node->taint_count; i++)
		if (node->taints[i].effect != TOPO_PREFER_NO_SCHEDULE && !tolerated(shape, &node->taints[i]))
			return "has a taint the pods do not tolerate";
	for (size_t i = 0; i < shape->node_selector_count; i++) {
		const struct topo_label *want = &shape->node_selector[i];
		size_t k;

		for (k = 0; k < node->label_count; k++)
			if (node->labels[k].key && want->key && strcmp(node->labels[k].key, want->key) == 0)
				break;
		if (k == node->label_count || strcmp(node->labels[k].value ? node->labels[k].value : "",
						     want->value ? want->value : "") != 0)
			return "does not match the node selector";
	}
	if (!affinity_holds(node, shape))
		return "does not match the required node affinity";
	return NULL;
}

static uint32_t fit_free(const struct topo_cluster *cluster, const int64_t *free,
			 const struct topo_shape *shape)
{
	int64_t fit = TOPO_PODS_MAX;

	for (size_t r = 0; r < cluster->resource_count; r++) {
		int pods = cluster->resources[r] && strcmp(cluster->resources[r], "pods") == 0;
		int64_t want = pods ? 1 : shape->requests[r];
		int64_t f;

		if (want <= 0)
			continue;
		f = free[r] <= 0 ? 0 : free[r] / want;
		if (f < fit)
			fit = f;
	}
	return (uint32_t)fit;
}

uint32_t topo_node_fit(const struct topo_cluster *cluster, const struct topo_node *node, const int64_t *free,
		       const struct topo_shape *shape, const char **reason)
{
	const char *why = exclusion(node, shape);

	if (reason)
		*reason = why;
	return why ? 0 : fit_free(cluster, free, shape);
}

static uint32_t slice_size_of(const struct topo_group *g)
{
	return g->slice_size > 1 ? g->slice_size : 1;
}

/* The slice size and level in force for a group (1 and the node level without slices). */
static void slicing(const struct ctx *x, const struct topo_group *g, uint64_t *size, size_t *level)
{
	*size = g->slice_size > 1 ? g->slice_size : 1;
	*level = g->slice_size > 1 ? g->slice_level : x->t->node_level;
}

/* The slice size required at `level` (1: none): the outer slices' at the
 * slice level, an inner layer's at its level. */
static uint64_t layer_size(const struct ctx *x, const struct topo_group *g, size_t level)
{
	uint64_t size;
	size_t slice_level;

	slicing(x, g, &size, &slice_level);
	if (level == slice_level)
		return size;
	for (size_t i = 0; size > 1 && i < g->inner_count; i++)
		if (g->inner[i].level == level)
			return g->inner[i].size;
	return 1;
}

/* The deepest level with slices (the node level without slices). */
/* Whether a slice layer's level lies strictly between two levels: a domain
 * of `below` directly under one of `above` is then in no domain of that
 * layer, and its pods form no slice of it. */
static int skips_layer(const struct ctx *x, const struct topo_group *g, size_t above, size_t below)
{
	uint64_t size;
	size_t slice_level;

	slicing(x, g, &size, &slice_level);
	if (size <= 1)
		return 0;
	if (above < slice_level && slice_level < below)
		return 1;
	for (size_t i = 0; i < g->inner_count; i++)
		if (above < g->inner[i].level && g->inner[i].level < below)
			return 1;
	return 0;
}

static size_t deepest_slices(const struct ctx *x, const struct topo_group *g)
{
	uint64_t size;
	size_t slice_level;

	slicing(x, g, &size, &slice_level);
	return size > 1 && g->inner_count ? g->inner[g->inner_count - 1].level : slice_level;
}

/* Capacity of group g per domain of the subtree `scope`: pods[] in pods,
 * usable[] in pods that form whole slices inside domains of the slice
 * levels (each layer's slices whole inside the layer above). */
static void compute(struct ctx *x, uint32_t g, uint32_t scope)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *grp = &x->req->groups[g];
	uint32_t end = dom[scope].end;
	size_t slice_level = deepest_slices(x, grp);
	uint64_t size = layer_size(x, grp, slice_level);

	memset(x->pods + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->usable + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->room + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->occupied + scope, 0, end - scope);
	for (uint32_t d = end; d-- > scope;) {
		size_t level = dom[d].level;

		if (dom[d].node != TOPO_NONE) {
			uint32_t n = dom[d].node;

			x->pods[d] = x->eligible[(size_t)g * x->c->node_count + n] && !x->closed[n]
					     ? fit_free(x->c, x->free + (size_t)n * x->resources, &grp->shape)
					     : 0;
			x->room[d] = x->pods[d];
			if (x->pods[d] && x->scarce >= 0) {
				int64_t f = x->free[(size_t)n * x->resources + (size_t)x->scarce];

				x->room[d] = f > 0 ? (uint64_t)f : 0;
			}
			x->occupied[d] = x->taken[n] > 0 || x->closed[n];
		}
		if (level == slice_level) {
			x->usable[d] = x->pods[d] / size * size;
		} else if (level > slice_level) {
			x->usable[d] = x->pods[d];
		} else if (grp->inner_count) {
			uint64_t outer = layer_size(x, grp, level); /* an outer layer: whole slices of it */

			x->usable[d] = x->usable[d] / outer * outer;
		}
		/* An exclusive instance takes only a domain nobody else is in. */
		if (grp->exclusive && level == grp->constraint.level && x->occupied[d])
			x->pods[d] = x->usable[d] = 0;
		if (d != scope) {
			x->pods[dom[d].parent] += x->pods[d];
			x->room[dom[d].parent] += x->room[d];
			x->occupied[dom[d].parent] |= x->occupied[d];
			if (level <= slice_level && !skips_layer(x, grp, dom[dom[d].parent].level, level))
				x->usable[dom[d].parent] += x->usable[d];
		}
	}
}

static void take(struct ctx *x, uint32_t g, uint32_t node, uint32_t count)
{
	const struct topo_group *grp = &x->req->groups[g];
	int64_t *free = x->free + (size_t)node * x->resources;

	for (size_t r = 0; r < x->resources; r++)
		free[r] -=
			(int)r == x->pods_resource ? (int64_t)count : grp->shape.requests[r] * (int64_t)count;
	x->taken[node] += count;
	x->log[x->log_used++] = (struct take){ node, count };
}

/* Closes every node under d that is open (an exclusive instance's domain). */
static void close_domain(struct ctx *x, uint32_t d)
{
	const struct topo_domain *dom = x->t->domains;

	for (uint32_t c = d; c < dom[d].end; c++) {
		uint32_t n = dom[c].node;

		if (n != TOPO_NONE && !x->closed[n]) {
			x->closed[n] = 1;
			x->log[x->log_used++] = (struct take){ n, 0 };
		}
	}
}

static void undo(struct ctx *x, uint32_t g, size_t mark)
{
	const struct topo_group *grp = &x->req->groups[g];

	while (x->log_used > mark) {
		struct take *tk = &x->log[--x->log_used];
		int64_t *free = x->free + (size_t)tk->node * x->resources;

		if (tk->count == 0) {
			x->closed[tk->node] = 0;
			continue;
		}
		x->taken[tk->node] -= tk->count;
		for (size_t r = 0; r < x->resources; r++)
			free[r] += (int)r == x->pods_resource ? (int64_t)tk->count
							      : grp->shape.requests[r] * (int64_t)tk->count;
	}
}

static int by_value_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return x->domain < y->domain ? -1 : x->domain > y->domain;
}

static int by_value_asc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->domain < y->domain ? -1 : x->domain > y->domain;
}

/* Puts `need` pods of group g under domain d, which holds them (usable[d] >=
 * need): the tightest child that holds the rest, else the largest child whole. */
static void descend(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	const struct topo_domain *dom = x->t->domains;
	size_t slice_level, base = x->scratch_used, k = 0, i = 0;
	struct ranked *kids = x->scratch + base;

	if (dom[d].node != TOPO_NONE) {
		take(x, g, dom[d].node, (uint32_t)need);
		return;
	}
	slice_level = deepest_slices(x, &x->req->groups[g]);
	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end) {
		if ((dom[d].level < slice_level && dom[c].level > slice_level) ||
		    skips_layer(x, &x->req->groups[g], dom[d].level, dom[c].level))
			continue;
		if (x->usable[c] > 0)
			kids[k++] = (struct ranked){ x->usable[c], c };
	}
	x->scratch_used += k;
	qsort(kids, k, sizeof(*kids), by_value_desc);
	while (need > 0 && i < k) {
		if (kids[i].value >= need) {
			size_t lo = i, hi = k; /* the last child still holding `need` */

			while (hi - lo > 1) {
				size_t mid = (lo + hi) / 2;

				if (kids[mid].value >= need)
					lo = mid;
				else
					hi = mid;
			}
			descend(x, g, kids[lo].domain, need);
			need = 0;
		} else {
			descend(x, g, kids[i].domain, kids[i].value);
			need -= kids[i].value;
			i++;
		}
	}
	x->scratch_used = base;
}

/* Fills gaps for an unconstrained instance: the nodes under d with the least
 * room for the pods first (ties in tree order). */
static void fill_gaps(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	const struct topo_domain *dom = x->t->domains;
	size_t base = x->scratch_used, k = 0;
	struct ranked *nodes = x->scratch + base;

	for (uint32_t c = d; c < dom[d].end; c++)
		if (dom[c].node != TOPO_NONE && x->usable[c] > 0)
			nodes[k++] = (struct ranked){ x->usable[c], c };
	x->scratch_used += k;
	qsort(nodes, k, sizeof(*nodes), by_value_asc);
	for (size_t i = 0; i < k && need > 0; i++) {
		uint64_t n = nodes[i].value < need ? nodes[i].value : need;

		take(x, g, dom[nodes[i].domain].node, (uint32_t)n);
		need -= n;
	}
	x->scratch_used = base;
}

static void place(struct ctx *x, uint32_t g, uint32_t d, uint64_t need)
{
	if (x->req->groups[g].constraint.mode == TOPO_MODE_UNCONSTRAINED)
		fill_gaps(x, g, d, need);
	else
		descend(x, g, d, need);
}

/* Instance k's `want` pods into domain d (capacity computed), which an
 * exclusive instance then holds alone. */
static void place_instance(struct ctx *x, size_t k, uint32_t d, uint32_t want)
{
	uint32_t g = x->order[k].group;

	place(x, g, d, want);
	x->domain[k] = d;
	x->placed[k] = want;
	if (x->req->groups[g].exclusive)
		close_domain(x, d);
}

/* The level at which a required instance's domains are compared inside scope. */
static size_t required_level(const struct ctx *x, const struct topo_group *grp, uint32_t scope)
{
	size_t level = x->t->domains[scope].level;

	return grp->constraint.level > level ? grp->constraint.level : level;
}

/* The ancestor of d (or d) at `level`, or the first one above it when the
 * tree skips that level there. */
static uint32_t ancestor_at(const struct ctx *x, uint32_t d, size_t level)
{
	while (x->t->domains[d].level > level)
		d = x->t->domains[d].parent;
	return d;
}

/* How close domain d is to the pods of the request already placed: the
 * deepest level of an ancestor of d (d included) holding some (occupied,
 * from compute), or -1. */
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

	return !lowest || x->t->domains[d].level <= lowest ||
	       x->t->domains[ancestor_at(x, d, lowest)].level == lowest;
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

/* Among the domains of `level` in scope holding `want` pods, the tightest
 * (large domains stay whole), then among equally tight ones the one nearest
 * the pods already placed (the JobSet stays together), then the one with
 * the least free room, then in tree order. */
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

/* The tightest domain in scope holding `want` pods, at the deepest level
 * that has one and that the constraint allows; TOPO_NONE if none. */
static uint32_t choose(struct ctx *x, const struct instance *in, uint32_t scope, uint64_t want)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_constraint *con = &x->req->groups[in->group].constraint;
	uint32_t best[TOPO_LEVELS_MAX + 2];
	size_t lowest = con->mode == TOPO_MODE_REQUIRED ? con->level : 0;

	if (con->mode == TOPO_MODE_UNCONSTRAINED)
		return x->usable[scope] >= want ? scope : TOPO_NONE;
	for (size_t l = 0; l <= x->t->node_level; l++)
		best[l] = TOPO_NONE;
	for (uint32_t d = scope; d < dom[scope].end; d++) {
		size_t l = dom[d].level;

		if (x->usable[d] < want || l < lowest || (x->req->groups[in->group].exclusive && l != lowest))
			continue;
		/* Below the required level only inside a domain of it: a Node listed
		 * directly in a higher-tier HyperNode is in no domain of the lower
		 * tier (Volcano's highestTierAllowed). */
		if (!within_level(x, d, &x->req->groups[in->group]))
			continue;
		if (best[l] == TOPO_NONE || tighter(x, d, best[l]))
			best[l] = d;
	}
	/* A required or preferred level: the tightest domain of that level (the
	 * descent then takes the tightest part of it that holds the pods), so
	 * the pods do not cut into another, larger domain of the level because
	 * it has a tight node; preferred climbs from there. Without a level: the
	 * deepest level that has one. */
	if (con->mode == TOPO_MODE_REQUIRED || con->mode == TOPO_MODE_PREFERRED) {
		size_t target = required_level(x, &x->req->groups[in->group], scope);

		if (best[target] != TOPO_NONE)
			return nearest_tightest(x, scope, want, target);
		for (size_t l = target; l-- > 0;)
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
		size_t level = required_level(x, grp, scope);

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
				why = exclusion(&x->c->nodes[n], &grp->shape);
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
		size_t level = required_level(x, grp, scope);

		for (uint32_t d = scope; d < dom[scope].end; d++)
			if (dom[d].level == level && x->usable[d] > most)
				most = x->usable[d];
		x->first_cause =
			format("%s: at most %llu of %u pods fit in any one domain%s%s (replicated job %s, "
			       "%s%s)%s",
			       t->level_names[grp->constraint.level], (unsigned long long)most, in->pods,
			       slices, least, grp->name ? grp->name : "", job, where, note);
	} else {
		x->first_cause =
			format("at most %llu of %u pods fit%s%s in the %s (replicated job %s, %s%s)%s",
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
	int ok = 0;

	compute(x, in->group, near);
	first = choose(x, in, near, want);
	if (first == TOPO_NONE) {
		note_refusal(x, in, near);
	} else if (budget_left(x)) {
		place_instance(x, k, first, want);
		if (dfs(x, k + 1, scope))
			return 1;
		undo(x, in->group, mark);
	}
	if (grp->constraint.mode != TOPO_MODE_REQUIRED || x->budget_hit)
		return 0;
	/* The other domains at the required level, tightest first. */
	compute(x, in->group, near);
	level = required_level(x, grp, near);
	alts = malloc((dom[near].end - near) * sizeof(*alts));
	if (!alts)
		return 0;
	for (uint32_t d = near; d < dom[near].end; d++)
		if (dom[d].level == level && x->usable[d] >= want && d != first && within_level(x, d, grp))
			alts[alt_count++] = (struct ranked){ x->usable[d], d };
	qsort(alts, alt_count, sizeof(*alts), by_value_asc);
	for (size_t a = 0; a < alt_count && !ok; a++) {
		if (!budget_left(x))
			break;
		compute(x, in->group, near);
		place_instance(x, k, alts[a].domain, want);
		ok = dfs(x, k + 1, scope);
		if (!ok)
			undo(x, in->group, mark);
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
	compute(x, in->group, near);
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
	near = ancestor_at(x, x->domain[in->leader], required_level(x, grp, scope));
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

static char *check_group(const struct topo_tree *t, const struct topo_request *req, size_t g)
{
	const struct topo_group *grp = &req->groups[g];
	const char *name = grp->name ? grp->name : "";
	uint32_t size = slice_size_of(grp);
	enum topo_mode mode = grp->constraint.mode;

	if (grp->pods == 0 || grp->pods > TOPO_PODS_MAX)
		return format("request: replicated job %s has %u pods per job, 1 to %u supported", name,
			      grp->pods, TOPO_PODS_MAX);
	if (mode > TOPO_MODE_UNCONSTRAINED)
		return format("request: replicated job %s: unknown constraint mode %d", name, (int)mode);
	if ((mode == TOPO_MODE_REQUIRED || mode == TOPO_MODE_PREFERRED) &&
	    (grp->constraint.level < 1 || grp->constraint.level >= t->node_level))
		return format("request: replicated job %s: level %u is not a level of the topology", name,
			      grp->constraint.level);
	if (grp->exclusive && (mode != TOPO_MODE_REQUIRED || grp->together || grp->job_pods))
		return format(
			"request: replicated job %s: an exclusive job needs a required level of its own "
			"(not co-placed, one child Job per instance)",
			name);
	if (grp->job_pods && grp->pods % grp->job_pods)
		return format(
			"request: replicated job %s: %u pods per job do not divide the %u pods placed as one",
			name, grp->job_pods, grp->pods);
	if (grp->pods % size)
		return format("request: replicated job %s: slice size %u does not divide %u pods", name, size,
			      grp->pods);
	if (grp->slice_size > 1 && grp->slice_level != 0) {
		size_t lowest =
			mode == TOPO_MODE_REQUIRED || mode == TOPO_MODE_PREFERRED ? grp->constraint.level : 1;

		if (mode == TOPO_MODE_UNCONSTRAINED)
			return format("request: replicated job %s: an unconstrained job takes no slice level",
				      name);
		if (grp->slice_level < lowest || grp->slice_level > t->node_level)
			return format(
				"request: replicated job %s: the slice level must be at or below the job's level",
				name);
	}
	if (grp->inner_count > TOPO_SLICE_LAYERS_MAX - 1)
		return format("request: replicated job %s: at most %d slice layers", name,
			      TOPO_SLICE_LAYERS_MAX);
	for (size_t i = 0; i < grp->inner_count; i++) {
		uint32_t outer_size = i ? grp->inner[i - 1].size : grp->slice_size;
		uint8_t outer_level = i ? grp->inner[i - 1].level : grp->slice_level;

		if (grp->slice_size < 2 || grp->slice_level == 0 || grp->min_slices)
			return format("request: replicated job %s: inner slices need outer slices at a level "
				      "(and no minimum)",
				      name);
		if (grp->inner[i].size < 1 || outer_size % grp->inner[i].size)
			return format(
				"request: replicated job %s: slice layer %zu: size %u does not divide the "
				"layer above's %u",
				name, i + 2, grp->inner[i].size, outer_size);
		if (grp->inner[i].level <= outer_level || grp->inner[i].level > t->node_level)
			return format(
				"request: replicated job %s: slice layer %zu must be at a lower level than "
				"the layer above",
				name, i + 2);
	}
	if (grp->min_slices > grp->pods / size)
		return format("request: replicated job %s: at least %u slices asked, it has %u", name,
			      grp->min_slices, grp->pods / size);
	if (grp->together) {
		if (mode != TOPO_MODE_REQUIRED && mode != TOPO_MODE_PREFERRED)
			return format(
				"request: replicated job %s: co-placed jobs need a required or preferred level",
				name);
		for (size_t h = 0; h < req->group_count; h++) {
			const struct topo_group *other = &req->groups[h];

			if (h == g || other->together != grp->together)
				continue;
			if (other->replicas != grp->replicas || other->constraint.mode != mode ||
			    other->constraint.level != grp->constraint.level)
				return format(
					"request: co-placed replicated jobs %s and %s need equal replicas and "
					"an equal topology constraint",
					name, other->name ? other->name : "");
		}
	}
	return NULL;
}

static char *check_request(const struct topo_tree *t, const struct topo_request *req, uint64_t *total_pods,
			   size_t *instances)
{
	const struct topo_constraint *w = &req->whole;

	*total_pods = 0;
	*instances = 0;
	if (!req->groups || req->group_count == 0 || req->group_count > TOPO_GROUPS_MAX)
		return format("request: between 1 and %d replicated jobs are needed", TOPO_GROUPS_MAX);
	if (w->mode != TOPO_MODE_NONE && w->mode != TOPO_MODE_REQUIRED && w->mode != TOPO_MODE_PREFERRED)
		return format("request: the JobSet's constraint must be required, preferred or none");
	if (w->mode != TOPO_MODE_NONE && (w->level < 1 || w->level >= t->node_level))
		return format("request: the JobSet's topology level %u is not a level of the topology",
			      w->level);
	for (size_t g = 0, covered = 0; g < req->group_count; g++) {
		const struct topo_group *grp = &req->groups[g];
		char *bad = check_group(t, req, g);

		covered += !grp->outside_whole;
		if (w->mode != TOPO_MODE_NONE && g + 1 == req->group_count && !covered)
			return format("request: the JobSet's constraint holds none of its replicated jobs");
		if (grp->outside_whole && grp->together)
			return format("request: replicated job %s: a co-placed job is held by the JobSet's "
				      "constraint",
				      grp->name ? grp->name : "");

		if (bad)
			return bad;
		*instances += grp->replicas;
		*total_pods += (uint64_t)grp->replicas * grp->pods;
		if (*instances > TOPO_INSTANCES_MAX || *total_pods > TOPO_PODS_MAX)
			return format("request: at most %u jobs and %u pods supported", TOPO_INSTANCES_MAX,
				      TOPO_PODS_MAX);
	}
	return NULL;
}

static void ctx_free(struct ctx *x)
{
	free(x->free);
	free(x->eligible);
	free(x->pods);
	free(x->usable);
	free(x->room);
	free(x->scratch);
	free(x->log);
	free(x->order);
	free(x->start);
	free(x->domain);
	free(x->placed);
	free(x->taken);
	free(x->closed);
	free(x->occupied);
	free(x->first_cause);
}

void topo_placement_free(struct topo_placement *p)
{
	if (!p)
		return;
	free(p->pods);
	free(p->counts);
	free(p->instance_domain);
	free(p->instance_pods);
	free(p);
}

/* Rank order: by the lowest domain (the leaf's parent) in tree order, then
 * by the leaf, so that each lowest domain gets one run of ranks even where a
 * HyperNode has both Node and HyperNode members. */
static int rank_before(const struct topo_tree *t, const struct take *a, const struct take *b)
{
	uint32_t x = t->node_domain[a->node], y = t->node_domain[b->node];
	uint32_t px = t->domains[x].parent, py = t->domains[y].parent;

	if (px != py)
		return px < py;
	return x < y;
}

/* The pod of rank `rank` in instance j, named by its own Job (job_pods),
 * not placed yet. */
static struct topo_pod own_job(const struct topo_group *grp, uint32_t g, uint32_t j, uint32_t rank)
{
	struct topo_pod pod = {
		.group = g, .job_index = j, .completion = rank, .node = TOPO_NONE, .domain = TOPO_NONE
	};

	if (grp->job_pods) {
		pod.job_index = j * (grp->pods / grp->job_pods) + rank / grp->job_pods;
		pod.completion = rank % grp->job_pods;
	}
	return pod;
}

static struct topo_placement *build_output(struct ctx *x, uint32_t whole)
{
	const struct topo_tree *t = x->t;
	struct topo_placement *p = calloc(1, sizeof(*p));
	size_t *first_instance = calloc(x->req->group_count + 1, sizeof(size_t));
	size_t *pod_base = calloc(x->req->group_count + 1, sizeof(size_t));
	size_t *position = calloc(x->instance_count + 1, sizeof(size_t));

	if (!p || !first_instance || !pod_base || !position)
		goto fail;
	for (size_t g = 0; g < x->req->group_count; g++) {
		first_instance[g + 1] = first_instance[g] + x->req->groups[g].replicas;
		pod_base[g + 1] = pod_base[g] + (size_t)x->req->groups[g].replicas * x->req->groups[g].pods;
	}
	p->pod_count = pod_base[x->req->group_count];
	p->instance_count = x->instance_count;
	p->pods = calloc(p->pod_count + 1, sizeof(*p->pods));
	p->counts = calloc(p->pod_count + 1, sizeof(*p->counts)); /* at most one per pod */
	p->instance_domain = calloc(x->instance_count + 1, sizeof(uint32_t));
	p->instance_pods = calloc(x->instance_count + 1, sizeof(uint32_t));
	if (!p->pods || !p->counts || !p->instance_domain || !p->instance_pods)
		goto fail;
	p->whole_domain = whole;
	p->descents = x->descents;
	/* Sort each instance's takes into rank order (insertion: few per instance). */
	for (size_t k = 0; k < x->instance_count; k++) {
		size_t from = x->start[k], to = k + 1 < x->instance_count ? x->start[k + 1] : x->log_used;

		position[first_instance[x->order[k].group] + x->order[k].job] = k;
		for (size_t i = from + 1; i < to; i++) {
			struct take cur = x->log[i];
			size_t j = i;

			while (j > from && rank_before(t, &cur, &x->log[j - 1])) {
				x->log[j] = x->log[j - 1];
				j--;
			}
			x->log[j] = cur;
		}
	}
	/* Output in (group, job) order. */
	for (size_t g = 0; g < x->req->group_count; g++) {
		const struct topo_group *grp = &x->req->groups[g];

		for (uint32_t j = 0; j < grp->replicas; j++) {
			size_t k = position[first_instance[g] + j];
			size_t from = x->start[k],
			       to = k + 1 < x->instance_count ? x->start[k + 1] : x->log_used;
			size_t slot = pod_base[g] + (size_t)j * grp->pods;
			uint32_t completion = 0;

			p->instance_domain[first_instance[g] + j] = x->domain[k];
			p->instance_pods[first_instance[g] + j] = x->placed[k];
			for (size_t i = from; i < to; i++) {
				uint32_t leaf = t->node_domain[x->log[i].node];
				uint32_t lowest = t->domains[leaf].parent;

				for (uint32_t c = 0; c < x->log[i].count; c++, completion++) {
					struct topo_pod pod = own_job(grp, (uint32_t)g, j, completion);
					struct topo_count *last =
						p->count_count ? &p->counts[p->count_count - 1] : NULL;

					pod.node = x->log[i].node;
					pod.domain = lowest;
					p->pods[slot + completion] = pod;
					if (last && last->group == g && last->job_index == pod.job_index &&
					    last->domain == lowest)
						last->count++;
					else
						p->counts[p->count_count++] =
							(struct topo_count){ (uint32_t)g, pod.job_index,
									     lowest, 1 };
				}
			}
			/* Partitions left out (min_slices). */
			for (; completion < grp->pods; completion++)
				p->pods[slot + completion] = own_job(grp, (uint32_t)g, j, completion);
		}
	}
	free(first_instance);
	free(pod_base);
	free(position);
	return p;
fail:
	free(first_instance);
	free(pod_base);
	free(position);
	topo_placement_free(p);
	return NULL;
}

/* For a refusal: the most pods of the request that the free capacity of
 * one domain of `level` holds, each group counted on its own shape and
 * groups taken in order (an upper bound; the search also keeps instances
 * and slices whole). */
static uint64_t whole_fit(struct ctx *x, size_t level)
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
			compute(x, g, d);
			have = x->usable[d];
			fit += have < want ? have : want;
		}
		if (fit > best)
			best = fit;
	}
	return best;
}

/* Tries the whole JobSet inside each candidate scope of `level`, tightest first. */
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
	/* An exclusive job holds a domain of its level alone: a JobSet domain
	 * deeper than that could not show whether the rest of it is taken. */
	for (size_t g = 0; g < x->req->group_count; g++)
		if (x->req->groups[g].exclusive && !x->req->groups[g].outside_whole &&
		    level > x->req->groups[g].constraint.level)
			return 0;
	struct ranked *cands = NULL;
	size_t n = 0;
	int ok = 0;

	compute(x, big->group, 0);
	cands = malloc(x->t->domain_count * sizeof(*cands));
	if (!cands)
		return 0;
	for (uint32_t d = 0; d < x->t->domain_count; d++)
		if (dom[d].level == level && x->usable[d] >= need && (!one_shape || x->pods[d] >= total))
			cands[n++] = (struct ranked){ x->usable[d], d };
	qsort(cands, n, sizeof(*cands), by_value_asc);
	/* Each level has a budget of its own: a level whose candidates are
	 * many and fragmented cannot use up the search of the levels above
	 * it, so a preferred constraint always gets to try the root. */
	x->level_start = x->descents;
	for (size_t i = 0; i < n && !ok && x->descents - x->level_start < 8 * (size_t)x->budget; i++) {
		x->scope_descents = 0;
		x->budget_hit = 0;
		ok = dfs(x, 0, cands[i].domain);
		if (ok)
			*found = cands[i].domain;
	}
	free(cands);
	return ok;
}

/* One pass over the request: without the JobSet constraint the cluster is
 * the scope; with it, candidate scopes from the deepest level up. */
static int run_pass(struct ctx *x, uint64_t total, int one_shape, uint32_t *whole)
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

/* ---- the node-level search ----
 *
 * The search above keeps each instance's packing inside a domain greedy.
 * With pods of different shapes that can fail where a packing exists: small
 * pods fill the node a larger one needed. When it gives up, this search
 * tries every way of spreading each instance's pods over the nodes of each
 * allowed domain (how many on each node: the pods of an instance are
 * alike), instances with the largest request first, with undo on every
 * branch. It is complete for requests it finishes within its budget (small
 * clusters and requests; topology/topo_test's exhaustive property test
 * checks it up to 6 nodes and 3 instances of 3 pods), and it runs only on
 * requests without slices, co-placement, exclusivity or a minimum. */

/* An instance's request as a share of the cluster's free capacity, in its
 * scarcest resource: the order of the search, largest first. */
static double dominant_share(const struct ctx *x, uint32_t g)
{
	const struct topo_shape *shape = &x->req->groups[g].shape;
	double most = 0;

	for (size_t r = 0; r < x->resources; r++) {
		int64_t total = 0;
		double share;

		if ((int)r == x->pods_resource || shape->requests[r] <= 0)
			continue;
		for (size_t n = 0; n < x->c->node_count; n++)
			total += x->free[n * x->resources + r] > 0 ? x->free[n * x->resources + r] : 0;
		share = total > 0 ? (double)shape->requests[r] / (double)total : 1.0;
		if (share > most)
			most = share;
	}
	return most;
}

static uint32_t node_room(struct ctx *x, uint32_t g, uint32_t n)
{
	if (!x->eligible[(size_t)g * x->c->node_count + n] || x->closed[n])
		return 0;
	return fit_free(x->c, x->free + (size_t)n * x->resources, &x->req->groups[g].shape);
}

static int node_dfs(struct ctx *x, size_t k, uint32_t scope);

/* `remaining` pods of instance k on nodes[i..count) of domain d, then the
 * instances after it; most pods on a node first. */
static int node_counts(struct ctx *x, size_t k, uint32_t d, const uint32_t *nodes, size_t count, size_t i,
		       uint32_t remaining, uint32_t scope)
{
	uint32_t g = x->order[k].group, room;
	uint64_t left = 0;

	if (++x->node_steps > NODE_SEARCH_BUDGET)
		return 0;
	if (remaining == 0) {
		x->domain[k] = d;
		x->placed[k] = x->order[k].pods;
		return node_dfs(x, k + 1, scope);
	}
	for (size_t j = i; j < count && left < remaining; j++)
		left += node_room(x, g, nodes[j]);
	if (left < remaining)
		return 0;
	room = node_room(x, g, nodes[i]);
	for (uint32_t c = room < remaining ? room : remaining;; c--) {
		size_t mark = x->log_used;

		if (c)
			take(x, g, nodes[i], c);
		if (node_counts(x, k, d, nodes, count, i + 1, remaining - c, scope))
			return 1;
		undo(x, g, mark);
		if (c == 0 || x->node_steps > NODE_SEARCH_BUDGET)
			return 0;
	}
}

/* Instances k.. inside scope: each in every allowed domain in turn. */
static int node_dfs(struct ctx *x, size_t k, uint32_t scope)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *grp;
	uint32_t *nodes;
	size_t level;
	int ok = 0;

	if (k == x->instance_count)
		return 1;
	grp = &x->req->groups[x->order[k].group];
	x->start[k] = x->log_used;
	level = grp->constraint.mode == TOPO_MODE_REQUIRED ? required_level(x, grp, scope) : dom[scope].level;
	nodes = malloc((dom[scope].end - scope) * sizeof(*nodes));
	if (!nodes)
		return 0;
	for (uint32_t d = scope; d < dom[scope].end && !ok && x->node_steps <= NODE_SEARCH_BUDGET; d++) {
		size_t count = 0;

		if (dom[d].level != level || (d != scope && grp->constraint.mode != TOPO_MODE_REQUIRED))
			continue;
		for (uint32_t c = d; c < dom[d].end; c++)
			if (dom[c].node != TOPO_NONE && node_room(x, x->order[k].group, dom[c].node) > 0)
				nodes[count++] = dom[c].node;
		ok = node_counts(x, k, d, nodes, count, 0, x->order[k].pods, scope);
	}
	free(nodes);
	return ok;
}

static int share_desc(const struct instance *x, const struct instance *y, const double *share)
{
	if (share[x->group] != share[y->group])
		return share[x->group] > share[y->group] ? -1 : 1;
	if (x->pods != y->pods)
		return x->pods > y->pods ? -1 : 1;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->job < y->job ? -1 : x->job > y->job;
}

/* The node-level search over the whole request (see above); 1 when it
 * placed every instance, with *whole the JobSet's domain. */
static int node_search(struct ctx *x, uint32_t *whole)
{
	const struct topo_request *req = x->req;
	const struct topo_domain *dom = x->t->domains;
	double share[TOPO_GROUPS_MAX];

	if (x->instance_count > NODE_SEARCH_INSTANCES || x->c->node_count > NODE_SEARCH_NODES)
		return 0;
	for (size_t g = 0; g < req->group_count; g++) {
		const struct topo_group *grp = &req->groups[g];

		if (grp->slice_size > 1 || grp->inner_count || grp->together || grp->exclusive ||
		    grp->min_slices || grp->outside_whole)
			return 0;
		share[g] = dominant_share(x, (uint32_t)g);
	}
	for (size_t i = 1; i < x->instance_count; i++) { /* insertion: at most 16 */
		struct instance cur = x->order[i];
		size_t j = i;

		for (; j > 0 && share_desc(&cur, &x->order[j - 1], share) < 0; j--)
			x->order[j] = x->order[j - 1];
		x->order[j] = cur;
	}
	for (size_t k = 0; k < x->instance_count; k++)
		x->order[k].leader = (uint32_t)k;
	x->node_steps = 0;
	if (req->whole.mode != TOPO_MODE_REQUIRED) {
		*whole = 0;
		return node_dfs(x, 0, 0);
	}
	for (uint32_t d = 0; d < x->t->domain_count && x->node_steps <= NODE_SEARCH_BUDGET; d++)
		if (dom[d].level == req->whole.level && node_dfs(x, 0, d)) {
			*whole = d;
			return 1;
		}
	return 0;
}

/* The instances of the request, with their units, in placement order. */
static void make_order(struct ctx *x)
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

/* ---- two orders ----
 *
 * The search places the largest instances first (first-fit decreasing).
 * Kueue places PodSets in the order the JobSet lists them, and on some
 * clusters that order leaves the JobSet closer together or a larger domain
 * free. So, when a placement was found, the spec order is tried as well
 * (one more greedy descent per instance) and the better of the two kept, by
 * what users measure, in this order: preferred levels met, the level of the
 * smallest domain holding the whole JobSet, the largest domain left free at
 * the request's level, the fewest domains used. */

struct order_score {
	uint32_t preferred_met;
	size_t jobset_level;
	uint64_t largest_free;
	size_t domains;
};

/* Positive when a is better than b. */
static int compare_scores(const struct order_score *a, const struct order_score *b)
{
	if (a->preferred_met != b->preferred_met)
		return a->preferred_met > b->preferred_met ? 1 : -1;
	if (a->jobset_level != b->jobset_level)
		return a->jobset_level > b->jobset_level ? 1 : -1;
	if (a->largest_free != b->largest_free)
		return a->largest_free > b->largest_free ? 1 : -1;
	if (a->domains != b->domains)
		return a->domains < b->domains ? 1 : -1;
	return 0;
}

/* The request's scarcest resource: the one its pods ask the largest share
 * of the cluster's free capacity of (the pods count aside). */
static int scarcest_resource(const struct ctx *x)
{
	double most = -1;
	int best = -1;

	for (size_t r = 0; r < x->resources; r++) {
		int64_t total = 0, asked = 0;
		double share;

		if ((int)r == x->pods_resource)
			continue;
		for (size_t g = 0; g < x->req->group_count; g++)
			asked += x->req->groups[g].shape.requests[r] * (int64_t)x->req->groups[g].pods *
				 (int64_t)x->req->groups[g].replicas;
		if (asked <= 0)
			continue;
		for (size_t n = 0; n < x->c->node_count; n++)
			total += x->free[n * x->resources + r] > 0 ? x->free[n * x->resources + r] : 0;
		share = total > 0 ? (double)asked / (double)total : 1e300;
		if (share > most) {
			most = share;
			best = (int)r;
		}
	}
	return best;
}

/* The most free room of the request's scarcest resource (of pod slots when
 * it asks for none) that one domain of `level` has, as the context's free
 * capacity stands: what the next job can still have in one domain. */
static uint64_t largest_free_room(struct ctx *x, size_t level)
{
	const struct topo_domain *dom = x->t->domains;
	int r = x->scarce;
	uint64_t largest = 0;

	if (r < 0) {
		compute(x, 0, 0);
		for (uint32_t d = 0; d < x->t->domain_count; d++)
			if (dom[d].level == level && x->usable[d] > largest)
				largest = x->usable[d];
		return largest;
	}
	/* x->pods as scratch: the room summed up the tree. */
	memset(x->pods, 0, x->t->domain_count * sizeof(*x->pods));
	for (uint32_t d = x->t->domain_count; d-- > 0;) {
		if (dom[d].node != TOPO_NONE) {
			int64_t f = x->free[(size_t)dom[d].node * x->resources + (size_t)r];

			x->pods[d] = f > 0 ? (uint64_t)f : 0;
		}
		if (dom[d].level == level && x->pods[d] > largest)
			largest = x->pods[d];
		if (d)
			x->pods[dom[d].parent] += x->pods[d];
	}
	return largest;
}

/* The score of placement p, with the context's free capacity as p left it. */
static struct order_score score_of(struct ctx *x, const struct topo_placement *p)
{
	const struct topo_domain *dom = x->t->domains;
	struct order_score s = { .domains = p->count_count };
	size_t level = 0;

	for (size_t g = 0, k = 0; g < x->req->group_count; g++) {
		const struct topo_group *grp = &x->req->groups[g];

		if ((grp->constraint.mode == TOPO_MODE_REQUIRED ||
		     grp->constraint.mode == TOPO_MODE_PREFERRED) &&
		    grp->constraint.level > level)
			level = grp->constraint.level;
		for (uint32_t j = 0; j < grp->replicas; j++, k++)
			s.preferred_met += grp->constraint.mode == TOPO_MODE_PREFERRED &&
					   dom[p->instance_domain[k]].level >= grp->constraint.level;
	}
	for (size_t l = x->t->node_level; l-- > 0 && p->pod_count;) {
		uint32_t first = TOPO_NONE;
		int same = 1;

		for (size_t i = 0; i < p->pod_count && same; i++) {
			uint32_t a;

			if (p->pods[i].domain == TOPO_NONE)
				continue;
			a = ancestor_at(x, p->pods[i].domain, l);
			if (dom[a].level != l || (first != TOPO_NONE && a != first))
				same = 0;
			first = a;
		}
		if (same) {
			s.jobset_level = l;
			break;
		}
	}
	if (level)
		s.largest_free = largest_free_room(x, level);
	return s;
}

static int second_order_allowed(const struct ctx *x)
{
	for (size_t g = 0; g < x->req->group_count; g++)
		if (x->req->groups[g].together || x->req->groups[g].min_slices)
			return 0;
	return x->instance_count > 1;
}

/* Undoes every instance placed, last first. */
static void undo_all(struct ctx *x)
{
	for (size_t k = x->instance_count; k-- > 0;)
		undo(x, x->order[k].group, x->start[k]);
}

/* Sets the order of the instances: the spec's (Kueue's), or the search's
 * (largest first, make_order). */
static void set_order(struct ctx *x, int spec)
{
	size_t k = 0;

	if (!spec) {
		make_order(x);
		return;
	}
	for (size_t g = 0; g < x->req->group_count; g++)
		for (uint32_t j = 0; j < x->req->groups[g].replicas; j++, k++)
			x->order[k] = (struct instance){ .group = (uint32_t)g,
							 .job = j,
							 .pods = x->req->groups[g].pods,
							 .min_pods = x->req->groups[g].pods,
							 .unit_group = (uint32_t)g,
							 .unit_pods = x->req->groups[g].pods,
							 .required = x->req->groups[g].constraint.mode ==
								     TOPO_MODE_REQUIRED,
							 .leader = (uint32_t)k };
}

/* The best of `first` (the search's order, ties broken by free room) and
 * three more greedy passes: the spec order, and each order with ties left
 * in tree order. The others are freed; ties keep the earlier. */
static struct topo_placement *best_of_orders(struct ctx *x, uint64_t total, int one_shape,
					     struct topo_placement *first)
{
	static const struct {
		int spec, room_ties;
	} variants[] = { { 1, 1 }, { 0, 0 }, { 1, 0 } };
	struct topo_placement *best = first;
	struct order_score best_score = score_of(x, first);

	/* One greedy descent per instance: the order and ties are all that vary. */
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct topo_placement *other;
		struct order_score score;
		uint32_t whole = 0;

		undo_all(x);
		set_order(x, variants[v].spec);
		x->room_ties = variants[v].room_ties;
		x->budget = x->instance_count + 1;
		if (!run_pass(x, total, one_shape, &whole))
			continue;
		other = build_output(x, whole);
		if (!other)
			continue;
		score = score_of(x, other);
		if (compare_scores(&score, &best_score) > 0) {
			topo_placement_free(best);
			best = other;
			best_score = score;
		} else {
			topo_placement_free(other);
		}
	}
	best->descents = x->descents; /* every pass's */
	return best;
}

int topo_place(const struct topo_tree *t, const struct topo_request *req, struct topo_placement **out,
	       char **cause)
{
	struct ctx x = { 0 };
	uint64_t total, covered;
	size_t instances;
	uint32_t whole = 0;
	int one_shape = 1, elastic = 0, ok = 0, ret = -1;
	const struct topo_cluster *c;

	*out = NULL;
	*cause = NULL;
	if (!t || !req) {
		*cause = format("request: no tree or request");
		return -1;
	}
	c = t->cluster;
	*cause = check_request(t, req, &total, &instances);
	if (*cause)
		return -1;
	covered = total;
	x.t = t;
	x.c = c;
	x.req = req;
	x.resources = c->resource_count;
	x.pods_resource = topo_resource_index(c, "pods");
	x.budget = req->search_budget ? req->search_budget : TOPO_SEARCH_BUDGET_DEFAULT;
	x.instance_count = instances;
	x.free = malloc((c->node_count * x.resources + 1) * sizeof(int64_t));
	x.eligible = malloc(req->group_count * c->node_count + 1);
	x.pods = malloc(t->domain_count * sizeof(uint64_t));
	x.usable = malloc(t->domain_count * sizeof(uint64_t));
	x.room = malloc(t->domain_count * sizeof(uint64_t));
	x.scratch = malloc(t->domain_count * sizeof(*x.scratch));
	x.taken = calloc(c->node_count + 1, sizeof(uint32_t));
	x.closed = calloc(c->node_count + 1, 1);
	x.occupied = calloc(t->domain_count + 1, 1);
	x.log_cap = total + c->node_count + 1; /* a node is closed at most once at a time */
	x.log = malloc(x.log_cap * sizeof(*x.log));
	x.order = malloc((instances + 1) * sizeof(*x.order));
	x.start = malloc((instances + 1) * sizeof(size_t));
	x.domain = malloc((instances + 1) * sizeof(uint32_t));
	x.placed = malloc((instances + 1) * sizeof(uint32_t));
	if (!x.free || !x.eligible || !x.pods || !x.usable || !x.room || !x.scratch || !x.log || !x.order ||
	    !x.start || !x.domain || !x.placed || !x.taken || !x.closed || !x.occupied) {
		*cause = format("placement: out of memory");
		goto out;
	}
	for (size_t n = 0; n < c->node_count; n++)
		for (size_t r = 0; r < x.resources; r++)
			x.free[n * x.resources + r] = c->nodes[n].allocatable[r] - c->nodes[n].used[r];
	/* What the JobSet's other Jobs hold (a move): never undone. */
	for (size_t n = 0; req->held && n < c->node_count; n++) {
		x.taken[n] = req->held[n] == TOPO_HELD_PODS;
		x.closed[n] = req->held[n] == TOPO_HELD_CLOSED;
	}
	for (size_t g = 0; g < req->group_count; g++) {
		for (size_t n = 0; n < c->node_count; n++)
			x.eligible[g * c->node_count + n] =
				exclusion(&c->nodes[n], &req->groups[g].shape) == NULL;
		if (req->groups[g].outside_whole) {
			one_shape = 0; /* the JobSet's domain holds only some of the pods */
			covered -= (uint64_t)req->groups[g].replicas * req->groups[g].pods;
		}
		if (g > 0 &&
		    memcmp(&req->groups[g].shape, &req->groups[0].shape, sizeof(struct topo_shape)) != 0)
			one_shape = 0;
		if (req->groups[g].slice_size > 1)
			one_shape = 0; /* slices make pod totals only an upper bound */
		if (req->groups[g].min_slices)
			elastic = 1;
	}
	x.scarce = scarcest_resource(&x);
	x.room_ties = 1;
	make_order(&x);
	ok = run_pass(&x, total, one_shape, &whole);
	if (!ok && !elastic && !one_shape)
		ok = node_search(&x, &whole); /* mixed shapes: node-level packings too */
	if (!ok && elastic) {
		/* Nowhere for every partition: place fewer, at least min_slices each. */
		x.elastic = 1;
		ok = run_pass(&x, total, 0, &whole);
	}
	if (!ok) {
		const char *budget = x.budget_hit ? " (search budget spent)" : "";

		if (req->whole.mode == TOPO_MODE_REQUIRED)
			*cause =
				format("%s: no one domain holds the whole JobSet (%llu pods; at most %llu of "
				       "them fit in any one %s by free capacity alone)%s%s%s",
				       t->level_names[req->whole.level], (unsigned long long)covered,
				       (unsigned long long)whole_fit(&x, req->whole.level),
				       t->level_names[req->whole.level], x.first_cause ? "; " : "",
				       x.first_cause ? x.first_cause : "", budget);
		else
			*cause = format("%s%s", x.first_cause ? x.first_cause : "no placement found", budget);
		goto out;
	}
	*out = build_output(&x, whole);
	if (!*out) {
		*cause = format("placement: out of memory");
		goto out;
	}
	if (!x.elastic && second_order_allowed(&x))
		*out = best_of_orders(&x, total, one_shape, *out);
	ret = 0;
out:
	ctx_free(&x);
	return ret;
}
