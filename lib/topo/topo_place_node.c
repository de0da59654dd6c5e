/*
 * topo_place_node: the placement core's node-level search, for requests
 * whose pods differ in shape, tried when the domain search
 * (topo_place_domain.c) gives up. Not the domain search, nor the order
 * choice (topo_place_order.c).
 *
 * The domain search keeps each instance's packing inside a domain greedy.
 * With pods of different shapes that can fail where a packing exists: small
 * pods fill the node a larger one needed. When it gives up, this search
 * tries every way of spreading each instance's pods over the nodes of each
 * allowed domain (how many on each node: the pods of an instance are
 * alike), instances with the largest request first, with undo on every
 * branch. It is complete for requests it finishes within its budget (small
 * clusters and requests; topology/topo_test's exhaustive property test
 * checks it up to 6 nodes and 3 instances of 3 pods), and it runs only on
 * requests without slices, co-placement, exclusivity or a minimum.
 */
#include <stdlib.h>

#include "topo_place_int.h"

/* The node-level search (mixed shapes, see topo_place_node_search) runs on requests of
 * at most this many instances and nodes, and stops after this many steps. */
#define NODE_SEARCH_INSTANCES 16
#define NODE_SEARCH_NODES 256
#define NODE_SEARCH_BUDGET 1000000u

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
	return topo_place_fit_free(x->c, x->free + (size_t)n * x->resources, &x->req->groups[g].shape);
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
			topo_place_take(x, g, nodes[i], c);
		if (node_counts(x, k, d, nodes, count, i + 1, remaining - c, scope))
			return 1;
		topo_place_undo(x, g, mark);
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
	level = grp->constraint.mode == TOPO_MODE_REQUIRED ? topo_place_required_level(x, grp, scope)
							   : dom[scope].level;
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
int topo_place_node_search(struct ctx *x, uint32_t *whole)
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
