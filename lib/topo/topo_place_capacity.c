/*
 * topo_place_capacity: what the placement core counts while it searches.
 * The slices in force for a group; the capacity of the instance being
 * placed per domain (in pods, in pods forming whole slices, in free room of
 * the scarcest resource, and the preferred-affinity score), counted for a
 * scope and again under one domain after some of its pods were taken; and
 * the takes themselves (a node's pods, a closed node), logged so that a
 * failed branch of the search is undone exactly; and the free pods of the
 * request's shapes per domain, which candidates are measured in.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place_int.h"

/* The slice size and level in force for a group (1 and the node level without slices).
 * Slices of one pod at a level (Volcano partitions of size 1 under a hard
 * tier) keep their level: each pod must be on a node inside a domain of it,
 * which a Node listed directly in a higher-tier HyperNode is not. */
void topo_place_slicing(const struct ctx *x, const struct topo_group *g, uint64_t *size, size_t *level)
{
	*size = g->slice_size > 1 ? g->slice_size : 1;
	*level = g->slice_size > 1 || g->slice_level ? g->slice_level : x->t->node_level;
}

/* The slice size required at `level` (1: none): the outer slices' at the
 * slice level, an inner layer's at its level. */
static uint64_t layer_size(const struct ctx *x, const struct topo_group *g, size_t level)
{
	uint64_t size;
	size_t slice_level;

	topo_place_slicing(x, g, &size, &slice_level);
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
int topo_place_skips_layer(const struct ctx *x, const struct topo_group *g, size_t above, size_t below)
{
	uint64_t size;
	size_t slice_level;

	topo_place_slicing(x, g, &size, &slice_level);
	if (above < slice_level && slice_level < below)
		return 1;
	if (size <= 1)
		return 0;
	for (size_t i = 0; i < g->inner_count; i++)
		if (above < g->inner[i].level && g->inner[i].level < below)
			return 1;
	return 0;
}

size_t topo_place_deepest_slices(const struct ctx *x, const struct topo_group *g)
{
	uint64_t size;
	size_t slice_level;

	topo_place_slicing(x, g, &size, &slice_level);
	return size > 1 && g->inner_count ? g->inner[g->inner_count - 1].level : slice_level;
}

/* For an exclusive instance placed inside `scope`, deeper than its level
 * (a JobSet-wide required level below the exclusive one): whether the
 * domain of that level holding scope exists and holds no pod of the request
 * and is held by no exclusive instance. The rest of that domain lies outside
 * the scope, so its nodes are looked at here. */
static int exclusive_domain_free(const struct ctx *x, uint32_t scope, size_t level)
{
	const struct topo_domain *dom = x->t->domains;
	uint32_t a = topo_place_ancestor_at(x, scope, level);

	if (dom[a].level != level)
		return 0;
	for (uint32_t d = a; d < dom[a].end; d++)
		if (dom[d].node != TOPO_NONE && (x->taken[dom[d].node] || x->closed[dom[d].node]))
			return 0;
	return 1;
}

/* Node n's pods of group g and free room (leaf domain d); none when
 * `blocked`, not eligible or closed. */
static void count_node(struct ctx *x, uint32_t g, uint32_t d, uint32_t n, int blocked)
{
	x->pods[d] = !blocked && x->eligible[(size_t)g * x->c->node_count + n] && !x->closed[n]
			     ? topo_place_fit_free(x->c, x->free + (size_t)n * x->resources,
						   &x->req->groups[g].shape)
			     : 0;
	x->room[d] = x->pods[d];
	if (x->pods[d] && x->scarce >= 0) {
		int64_t f = x->free[(size_t)n * x->resources + (size_t)x->scarce];

		x->room[d] = f > 0 ? (uint64_t)f : 0;
	}
}

/* Capacity of group g per domain of the subtree `scope`: pods[] in pods,
 * usable[] in pods that form whole slices inside domains of the slice
 * levels (each layer's slices whole inside the layer above). */
void topo_place_compute(struct ctx *x, uint32_t g, uint32_t scope)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *grp = &x->req->groups[g];
	uint32_t end = dom[scope].end;
	size_t slice_level = topo_place_deepest_slices(x, grp);
	uint64_t size = layer_size(x, grp, slice_level);

	/* An exclusive instance inside a scope deeper than its level: only when
	 * the domain of its level around the scope is free. */
	int blocked = grp->exclusive && dom[scope].level > grp->constraint.level &&
		      !exclusive_domain_free(x, scope, grp->constraint.level);

	memset(x->pods + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->usable + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->room + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->score + scope, 0, (end - scope) * sizeof(uint64_t));
	memset(x->occupied + scope, 0, end - scope);
	for (uint32_t d = end; d-- > scope;) {
		size_t level = dom[d].level;

		if (dom[d].node != TOPO_NONE) {
			uint32_t n = dom[d].node;

			count_node(x, g, d, n, blocked);
			x->occupied[d] = x->taken[n] > 0 || x->closed[n];
			/* Every node the group may use counts, full or not (Kueue). */
			if (x->prefer && x->eligible[(size_t)g * x->c->node_count + n])
				x->score[d] = x->prefer[(size_t)g * x->c->node_count + n];
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
			x->score[dom[d].parent] += x->score[d];
			x->occupied[dom[d].parent] |= x->occupied[d];
			if (level <= slice_level &&
			    !topo_place_skips_layer(x, grp, dom[dom[d].parent].level, level))
				x->usable[dom[d].parent] += x->usable[d];
		}
	}
}

void topo_place_compute_under(struct ctx *x, uint32_t g, uint32_t d)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *grp = &x->req->groups[g];
	size_t slice_level = topo_place_deepest_slices(x, grp);
	uint64_t size = layer_size(x, grp, slice_level);

	topo_place_compute(x, g, d);
	/* Each ancestor summed again from its children, as the full count
	 * adds them up (one layer of slices, no exclusivity). */
	for (uint32_t a = dom[d].parent; a != TOPO_NONE; a = dom[a].parent) {
		size_t level = dom[a].level;

		x->pods[a] = x->usable[a] = x->room[a] = x->score[a] = 0;
		x->occupied[a] = 0;
		for (uint32_t c = a + 1; c < dom[a].end; c = dom[c].end) {
			x->pods[a] += x->pods[c];
			x->room[a] += x->room[c];
			x->score[a] += x->score[c];
			x->occupied[a] |= x->occupied[c];
			if (dom[c].level <= slice_level &&
			    !topo_place_skips_layer(x, grp, level, dom[c].level))
				x->usable[a] += x->usable[c];
		}
		if (level == slice_level)
			x->usable[a] = x->pods[a] / size * size;
		else if (level > slice_level)
			x->usable[a] = x->pods[a];
	}
}

/* The capacities under d (a domain of the group's slice level) counted again
 * after some of its pods were taken, as topo_place_compute counts them. */
void topo_place_recount(struct ctx *x, uint32_t g, uint32_t d, uint64_t size)
{
	const struct topo_domain *dom = x->t->domains;
	uint32_t end = dom[d].end;

	memset(x->pods + d, 0, (end - d) * sizeof(uint64_t));
	memset(x->room + d, 0, (end - d) * sizeof(uint64_t));
	for (uint32_t c = end; c-- > d;) {
		if (dom[c].node != TOPO_NONE)
			count_node(x, g, c, dom[c].node, 0);
		x->usable[c] = c == d ? x->pods[c] / size * size : x->pods[c];
		if (c != d) {
			x->pods[dom[c].parent] += x->pods[c];
			x->room[dom[c].parent] += x->room[c];
		}
	}
}

int64_t topo_place_request(const struct ctx *x, const struct topo_shape *shape, size_t r)
{
	return (int)r == x->pods_resource ? 1 : shape->requests[r];
}

void topo_place_take(struct ctx *x, uint32_t g, uint32_t node, uint32_t count)
{
	const struct topo_group *grp = &x->req->groups[g];
	int64_t *free = x->free + (size_t)node * x->resources;

	for (size_t r = 0; r < x->resources; r++)
		free[r] -= topo_place_request(x, &grp->shape, r) * (int64_t)count;
	x->taken[node] += count;
	x->log[x->log_used++] = (struct take){ node, count };
}

/* Closes every node under d that is open (an exclusive instance's domain). */
void topo_place_close(struct ctx *x, uint32_t d)
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

void topo_place_undo(struct ctx *x, uint32_t g, size_t mark)
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
			free[r] += topo_place_request(x, &grp->shape, r) * (int64_t)tk->count;
	}
}

void topo_place_free_pods(struct ctx *x)
{
	const struct topo_domain *dom = x->t->domains;

	memset(x->pods, 0, x->t->domain_count * sizeof(*x->pods));
	for (size_t g = 0; g < x->req->group_count; g++) {
		const struct topo_shape *shape = &x->req->groups[g].shape;
		size_t e;

		for (e = 0; e < g; e++)
			if (memcmp(&x->req->groups[e].shape, shape, sizeof(*shape)) == 0)
				break;
		if (e < g)
			continue; /* that shape is counted */
		for (uint32_t d = 0; d < x->t->domain_count; d++) {
			uint32_t n = dom[d].node;

			if (n != TOPO_NONE && !x->closed[n] && x->eligible[g * x->c->node_count + n])
				x->pods[d] +=
					topo_place_fit_free(x->c, x->free + (size_t)n * x->resources, shape);
		}
	}
	for (uint32_t d = x->t->domain_count; d-- > 1;)
		x->pods[dom[d].parent] += x->pods[d];
}
