/*
 * topo_place_node: the placement core's node-level search, the complete one.
 * It runs when the domain search (topo_place_domain.c) gives up, on every
 * request: mixed pod shapes, slices (every layer), co-placement,
 * exclusivity, minimums, the JobSet's constraint, both kinds of tree. Not
 * the domain search, nor the order choice (topo_place_order.c).
 *
 * The domain search keeps each instance's spread inside its domain greedy:
 * a spread that leaves room for the next instances may exist where the
 * greedy one does not (R5, R7: a later slice finds no node left whole;
 * mixed shapes: small pods fill the node a larger one needed). This search
 * tries, for each instance in turn (the domain search's order: a co-placed
 * unit's leader first), every allowed domain and in it every count of pods
 * per node (the pods of an instance are alike; most pods on a node first),
 * keeping a count only when each slice layer's domains get whole slices,
 * then the instances after it, with undo on every branch. So it finds a
 * placement whenever one exists, as long as it finishes within its step
 * budget (topo_request.exact_budget, TOPO_EXACT_BUDGET_DEFAULT): every node
 * count tried and every node looked at is a step. Nodes that no instance
 * could tell apart (one parent, the same free resources, the same pods of
 * the request, eligible for the same groups) are tried in one order only.
 * Memory follows the budget: a domain's node lists (about 25 bytes a node,
 * 60 with three slice layers) are held while its instance is tried, and
 * each node listed was a step. topology/topo_property_test checks it
 * against an exhaustive search on random small cases.
 *
 * The rules are those of topo_place.h, stated as "the lowest domain holding
 * the pods": an instance's pods (a co-placed unit's, the JobSet's) lie in
 * one domain of its required level or deeper, where a single node counts
 * as the domain that lists it; so does each slice of each layer. With
 * label levels that is "one domain of the level". With HyperNodes a tier-1
 * HyperNode directly under a tier-3 one is within a limit of tier 2, and a
 * Node listed directly in a tier-2 HyperNode is within no limit of tier 1.
 * An exclusive instance holds one domain of exactly its level, which no
 * other pod of the request enters.
 */
#include <stdlib.h>

#include "topo_place_int.h"

/* The slice layers of a group, outermost first. A slice level with slices
 * of one pod (Volcano partitions of size 1 under a hard tier) is a layer of
 * size 1: each pod inside a domain of that level. */
struct layers {
	size_t count;
	size_t level[TOPO_SLICE_LAYERS_MAX];
	uint32_t size[TOPO_SLICE_LAYERS_MAX];
};

static void layers_of(const struct topo_group *g, struct layers *out)
{
	out->count = 0;
	if (g->slice_level == 0)
		return;
	out->level[0] = g->slice_level;
	out->size[0] = slice_size_of(g);
	out->count = 1;
	for (size_t i = 0; g->slice_size > 1 && i < g->inner_count && out->count < TOPO_SLICE_LAYERS_MAX;
	     i++) {
		out->level[out->count] = g->inner[i].level;
		out->size[out->count++] = g->inner[i].size > 1 ? g->inner[i].size : 1;
	}
}

/* The largest domain holding leaf d that lies within `level`: the highest
 * ancestor at that level or deeper (the leaf itself only when the level is
 * the nodes'); TOPO_NONE when the leaf's own domain is above the level. */
static uint32_t frontier(const struct ctx *x, uint32_t d, size_t level)
{
	const struct topo_domain *dom = x->t->domains;

	while (dom[d].parent != TOPO_NONE && dom[dom[d].parent].level >= level)
		d = dom[d].parent;
	if (dom[d].node != TOPO_NONE && level < x->t->node_level)
		return TOPO_NONE;
	return d;
}

/* Whether non-leaf domain d is the largest one within `level` (its parent above it). */
static int is_frontier(const struct ctx *x, uint32_t d, size_t level)
{
	const struct topo_domain *dom = x->t->domains;

	return dom[d].node == TOPO_NONE && dom[d].level >= level && dom[d].parent != TOPO_NONE &&
	       dom[dom[d].parent].level < level;
}

static int spend(struct ctx *x, size_t steps)
{
	x->exact_steps += steps;
	if (x->exact_steps > x->exact_budget) {
		x->exact_cut = 1;
		return 0;
	}
	return 1;
}

/* Whether the group's level holds its instance: a required level, and a
 * preferred one in the pass held to the preferences. */
static int held(const struct ctx *x, const struct topo_group *grp)
{
	return grp->constraint.mode == TOPO_MODE_REQUIRED ||
	       (x->exact_prefer && grp->constraint.mode == TOPO_MODE_PREFERRED && grp->constraint.level > 0);
}

/* Whether no node under d holds pods of the request or is held by an
 * exclusive instance. */
static int domain_free(const struct ctx *x, uint32_t d)
{
	const struct topo_domain *dom = x->t->domains;

	for (uint32_t c = d; c < dom[d].end; c++)
		if (dom[c].node != TOPO_NONE && (x->taken[dom[c].node] || x->closed[dom[c].node]))
			return 0;
	return 1;
}

/* Two adjacent nodes no later choice can tell apart: swapping their counts
 * in any placement gives a placement. */
static int alike(const struct ctx *x, uint32_t a, uint32_t b)
{
	const struct topo_tree *t = x->t;

	if (t->domains[t->node_domain[a]].parent != t->domains[t->node_domain[b]].parent ||
	    x->taken[a] != x->taken[b] || x->closed[a] != x->closed[b])
		return 0;
	for (size_t r = 0; r < x->resources; r++)
		if (x->free[(size_t)a * x->resources + r] != x->free[(size_t)b * x->resources + r])
			return 0;
	for (size_t g = 0; g < x->req->group_count; g++)
		if (x->eligible[g * x->c->node_count + a] != x->eligible[g * x->c->node_count + b])
			return 0;
	return 1;
}

static int exact_dfs(struct ctx *x, size_t k, uint32_t scope);

/* The nodes of domain d that instance k may use, with what the spread needs. */
struct spread {
	size_t count;
	uint32_t *node, *room, *cnt, *rem;
	uint64_t *suffix; /* room of nodes i.. */
	uint32_t *fid[TOPO_SLICE_LAYERS_MAX]; /* each layer's domain of the node */
	uint64_t *run[TOPO_SLICE_LAYERS_MAX]; /* pods in that domain up to the node */
	uint8_t *same; /* alike the node before */
};

static void spread_free(struct spread *s)
{
	free(s->node);
	free(s->room);
	free(s->cnt);
	free(s->rem);
	free(s->suffix);
	free(s->same);
	for (size_t l = 0; l < TOPO_SLICE_LAYERS_MAX; l++) {
		free(s->fid[l]);
		free(s->run[l]);
	}
}

/* Collects the nodes; 0 when the domain cannot hold `want` pods (or no memory). */
static int spread_make(struct ctx *x, uint32_t g, uint32_t d, uint32_t want, const struct layers *ly,
		       struct spread *s)
{
	const struct topo_domain *dom = x->t->domains;
	size_t cap = dom[d].end - d;
	uint64_t whole[TOPO_SLICE_LAYERS_MAX] = { 0 }, part[TOPO_SLICE_LAYERS_MAX] = { 0 };

	s->node = malloc(cap * sizeof(uint32_t));
	s->room = malloc(cap * sizeof(uint32_t));
	s->cnt = malloc(cap * sizeof(uint32_t));
	s->rem = malloc(cap * sizeof(uint32_t));
	s->suffix = malloc((cap + 1) * sizeof(uint64_t));
	s->same = malloc(cap);
	if (!s->node || !s->room || !s->cnt || !s->rem || !s->suffix || !s->same)
		return 0;
	for (size_t l = 0; l < ly->count; l++) {
		s->fid[l] = malloc(cap * sizeof(uint32_t));
		s->run[l] = malloc(cap * sizeof(uint64_t));
		if (!s->fid[l] || !s->run[l])
			return 0;
	}
	s->count = 0;
	for (uint32_t c = d; c < dom[d].end; c++) {
		uint32_t n = dom[c].node, room, f[TOPO_SLICE_LAYERS_MAX];
		size_t l, i = s->count;

		if (n == TOPO_NONE || !x->eligible[(size_t)g * x->c->node_count + n] || x->closed[n])
			continue;
		room = topo_place_fit_free(x->c, x->free + (size_t)n * x->resources,
					   &x->req->groups[g].shape);
		for (l = 0; l < ly->count; l++)
			if ((f[l] = frontier(x, c, ly->level[l])) == TOPO_NONE)
				break;
		if (room == 0 || l < ly->count)
			continue;
		s->node[i] = n;
		s->room[i] = room < want ? room : want;
		s->same[i] = i > 0 && alike(x, s->node[i - 1], n);
		for (l = 0; l < ly->count; l++) {
			/* Whole slices per layer domain: a bound on what the domain holds. */
			if (i > 0 && s->fid[l][i - 1] != f[l]) {
				whole[l] += part[l] / ly->size[l] * ly->size[l];
				part[l] = 0;
			}
			s->fid[l][i] = f[l];
			part[l] += s->room[i];
		}
		s->count++;
	}
	s->suffix[s->count] = 0;
	for (size_t i = s->count; i-- > 0;)
		s->suffix[i] = s->suffix[i + 1] + s->room[i];
	for (size_t l = 0; l < ly->count; l++)
		if (whole[l] + part[l] / ly->size[l] * ly->size[l] < want)
			return 0;
	return s->suffix[0] >= want;
}

/* The spread found: takes it, then the instances after k. */
static int spread_commit(struct ctx *x, size_t k, uint32_t d, uint32_t want, const struct spread *s,
			 size_t last, uint32_t scope)
{
	const struct instance *in = &x->order[k];
	const struct topo_group *grp = &x->req->groups[in->group];
	size_t mark = x->log_used;
	uint32_t where = TOPO_NONE;

	if (!spend(x, last + 1))
		return 0;
	for (size_t i = 0; i <= last; i++)
		if (s->cnt[i]) {
			topo_place_take(x, in->group, s->node[i], s->cnt[i]);
			where = topo_place_common(x, where, x->t->node_domain[s->node[i]]);
		}
	x->domain[k] = held(x, grp) ? d : where;
	x->placed[k] = want;
	x->sliced[k] = 0;
	if (grp->exclusive)
		topo_place_close(x, topo_place_ancestor_at(x, d, grp->constraint.level));
	if (exact_dfs(x, k + 1, scope))
		return 1;
	topo_place_undo(x, in->group, mark);
	return 0;
}

/* Every count of instance k's `want` pods per node of d, most on a node
 * first, with whole slices in each layer's domains; 1 when the rest of the
 * request then fits. */
static int spread_try(struct ctx *x, size_t k, uint32_t d, uint32_t want, uint32_t scope)
{
	const struct topo_group *grp = &x->req->groups[x->order[k].group];
	struct spread s = { 0 };
	struct layers ly;
	size_t pos = 0;
	int ok = 0;

	layers_of(grp, &ly);
	if (!spend(x, x->t->domains[d].end - d) || !spread_make(x, x->order[k].group, d, want, &ly, &s))
		goto out;
	s.rem[0] = want;
	s.cnt[0] = s.room[0] + 1;
	for (;;) {
		uint32_t rem;
		int whole = 1;

		if (s.cnt[pos] == 0) {
			if (pos == 0)
				break;
			pos--;
			continue;
		}
		s.cnt[pos]--;
		if (!spend(x, 1))
			break;
		rem = s.rem[pos] - s.cnt[pos];
		if (rem > s.suffix[pos + 1]) { /* fewer here leaves even more */
			s.cnt[pos] = 0;
			continue;
		}
		for (size_t l = 0; l < ly.count; l++) {
			uint64_t run =
				(pos > 0 && s.fid[l][pos] == s.fid[l][pos - 1] ? s.run[l][pos - 1] : 0) +
				s.cnt[pos];
			int closes = rem == 0 || pos + 1 == s.count || s.fid[l][pos + 1] != s.fid[l][pos];

			s.run[l][pos] = run;
			if (closes && run % ly.size[l])
				whole = 0;
		}
		if (!whole)
			continue;
		if (rem == 0) {
			if ((ok = spread_commit(x, k, d, want, &s, pos, scope)) || x->exact_cut)
				break;
			continue;
		}
		pos++;
		s.rem[pos] = rem;
		s.cnt[pos] = (s.room[pos] < rem ? s.room[pos] : rem);
		if (s.same[pos] && s.cnt[pos - 1] < s.cnt[pos])
			s.cnt[pos] = s.cnt[pos - 1]; /* alike nodes: counts not increasing */
		s.cnt[pos]++;
	}
out:
	spread_free(&s);
	return ok;
}

/* Instance k inside domain d of its required level (d holds the rest of
 * the request's scope): whether d may be its domain. */
static int domain_allowed(struct ctx *x, const struct topo_group *grp, uint32_t d)
{
	uint32_t held;

	if (!grp->exclusive)
		return 1;
	held = topo_place_ancestor_at(x, d, grp->constraint.level);
	return x->t->domains[held].level == grp->constraint.level && domain_free(x, held);
}

/* Instances k.. of the order inside scope (the JobSet's domain, or the root). */
static int exact_dfs(struct ctx *x, size_t k, uint32_t scope)
{
	const struct topo_domain *dom = x->t->domains;
	const struct instance *in;
	const struct topo_group *grp;
	uint32_t region, size, least;
	size_t level;

	if (k == x->instance_count)
		return 1;
	in = &x->order[k];
	grp = &x->req->groups[in->group];
	x->start[k] = x->log_used;
	region = grp->outside_whole ? 0 : scope;
	/* A co-placed member: inside its leader's domain of their level. */
	if (in->leader != k && held(x, grp))
		region = x->domain[in->leader];
	size = slice_size_of(grp);
	least = x->elastic ? in->min_pods : in->pods;
	level = held(x, grp) ? grp->constraint.level : 0;
	for (uint32_t want = in->pods; want >= least && want > 0; want -= size) {
		if (!level || dom[region].level >= level) {
			if (domain_allowed(x, grp, region) && spread_try(x, k, region, want, scope))
				return 1;
		} else {
			if (!spend(x, dom[region].end - region))
				return 0;
			for (uint32_t d = region; d < dom[region].end; d++) {
				int take = grp->exclusive ? dom[d].level == level : is_frontier(x, d, level);

				if (!take)
					continue;
				if (domain_allowed(x, grp, d) && spread_try(x, k, d, want, scope))
					return 1;
				if (x->exact_cut)
					return 0;
				d = dom[d].end - 1; /* not inside it again */
			}
		}
		if (x->exact_cut || want < size)
			return 0;
	}
	return 0;
}

/* Whether the nodes under d have, per resource, the free room the pods the
 * JobSet's constraint holds ask in all (at least each minimum in the
 * elastic pass): a bound that skips most candidate domains at no search. */
static int scope_may_hold(struct ctx *x, uint32_t d)
{
	const struct topo_domain *dom = x->t->domains;
	int64_t asked[TOPO_RESOURCES_MAX] = { 0 }, have[TOPO_RESOURCES_MAX] = { 0 };

	for (size_t k = 0; k < x->instance_count; k++) {
		const struct topo_group *grp = &x->req->groups[x->order[k].group];
		int64_t pods = x->elastic ? x->order[k].min_pods : x->order[k].pods;

		for (size_t r = 0; !grp->outside_whole && r < x->resources; r++)
			asked[r] += pods * topo_place_request(x, &grp->shape, r);
	}
	if (!spend(x, dom[d].end - d))
		return 0;
	for (uint32_t c = d; c < dom[d].end; c++)
		for (size_t r = 0; dom[c].node != TOPO_NONE && !x->closed[dom[c].node] && r < x->resources;
		     r++) {
			int64_t f = x->free[(size_t)dom[c].node * x->resources + r];

			have[r] += f > 0 ? f : 0;
		}
	for (size_t r = 0; r < x->resources; r++)
		if (asked[r] > have[r])
			return 0;
	return 1;
}

int topo_place_exact(struct ctx *x, uint32_t *whole)
{
	const struct topo_request *req = x->req;
	const struct topo_domain *dom = x->t->domains;

	x->exact_steps = 0;
	x->exact_cut = 0;
	*whole = 0;
	if (x->instance_count == 0)
		return 1;
	if (req->whole.mode != TOPO_MODE_REQUIRED &&
	    !(x->exact_prefer && req->whole.mode == TOPO_MODE_PREFERRED)) {
		if (!exact_dfs(x, 0, 0))
			return 0;
		if (req->whole.mode == TOPO_MODE_PREFERRED) {
			uint32_t common = TOPO_NONE;

			for (size_t k = 0; k < x->instance_count; k++)
				if (!req->groups[x->order[k].group].outside_whole)
					common = topo_place_common(x, common, x->domain[k]);
			*whole = common == TOPO_NONE ? 0 : common;
		}
		return 1;
	}
	for (uint32_t d = 0; d < x->t->domain_count; d++) {
		if (!is_frontier(x, d, req->whole.level))
			continue;
		if (scope_may_hold(x, d) && exact_dfs(x, 0, d)) {
			*whole = d;
			return 1;
		}
		if (x->exact_cut)
			return 0;
		d = dom[d].end - 1;
	}
	return 0;
}

int topo_place_exact_preferred(struct ctx *x, uint32_t *whole)
{
	size_t budget = x->exact_budget;
	int ok;

	x->exact_prefer = 1;
	x->exact_budget = budget / 2;
	ok = topo_place_exact(x, whole);
	x->exact_prefer = 0;
	x->exact_budget = budget;
	return ok;
}
