/*
 * topo_property: random small cases, the core against an exhaustive search
 * (contract in topo_property.h). The rules are checked by violation(),
 * written from docs/topology.md; it reads the tree's domains (parent,
 * level) and nothing else of lib/topo.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_property.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place.h"
#include "topo_tree.h"

#define P_NODES 6
#define P_GROUPS 3
#define P_INSTANCES 7
#define P_PODS 7 /* in all */
#define P_HYPERNODES 5
#define P_NONE UINT32_MAX
#define R_CPU 0
#define R_MEM 1
#define R_PODS 2
#define MEM_UNIT 1024

static const char *const LEVEL_SETS[][3] = {
	{ "block", "rack", NULL },
	{ "block", "rack", "kubernetes.io/hostname" },
	{ "rack", "kubernetes.io/hostname", NULL },
	{ "block", NULL, NULL },
};

struct pcase {
	uint64_t rng;
	struct topo_node nodes[P_NODES];
	struct topo_label labels[P_NODES][4];
	char names[P_NODES][8], blocks[P_NODES][8], racks[P_NODES][8];
	struct topo_cluster cluster;
	struct topo_hypernode hns[P_HYPERNODES];
	struct topo_member members[P_HYPERNODES][P_NODES + P_HYPERNODES];
	char hn_names[P_HYPERNODES][8];
	int hypernodes;
	struct topo_tree *t;
	struct topo_group g[P_GROUPS];
	struct topo_preference prefer[P_GROUPS]; /* a group's preferred node affinity */
	struct topo_request req;
	size_t instances;
	uint32_t inst_group[P_INSTANCES], inst_job[P_INSTANCES];
	int64_t cap[P_NODES][3]; /* free: allocatable - used */
	/* The exhaustive search's state: what is left, per instance and rank a node. */
	int64_t free[P_NODES][3];
	uint32_t at[P_INSTANCES][P_PODS];
	uint32_t placed[P_INSTANCES];
	size_t leaves;
	int held_preferred; /* the rules hold preferred levels as required ones */
};

static const struct topo_label POOL_A = { "pool", "a" };
static const char *const POOL_B_VALUES[] = { "b" };
/* Preferred node affinity for the few nodes of pool b: it pulls pods away
 * from where the greedy choice would put them, and must never lose a
 * placement that exists nor break a rule. */
static const struct topo_requirement POOL_B = { "pool", TOPO_OP_IN, POOL_B_VALUES, 1, 0 };

static uint32_t rnd(struct pcase *c, uint32_t n)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return n ? (uint32_t)(c->rng % n) : 0;
}

/* ---- the rules, from docs/topology.md ---- */

/* The domain that lists node n (its leaf's parent). */
static uint32_t lowest(const struct pcase *c, uint32_t n)
{
	return c->t->domains[c->t->node_domain[n]].parent;
}

static uint32_t common(const struct topo_tree *t, uint32_t a, uint32_t b)
{
	while (a != b) {
		if (t->domains[a].level > t->domains[b].level)
			a = t->domains[a].parent;
		else if (t->domains[b].level > t->domains[a].level)
			b = t->domains[b].parent;
		else {
			a = t->domains[a].parent;
			b = t->domains[b].parent;
		}
	}
	return a;
}

/* Whether the pods on nodes[0..count) lie within `level`: the lowest domain
 * holding all of them (one node: the domain listing it) at that level or
 * deeper; at the nodes' level, all on one node. */
static int within(const struct pcase *c, const uint32_t *nodes, size_t count, size_t level)
{
	uint32_t d;

	if (count == 0)
		return 1;
	if (level >= c->t->node_level) {
		for (size_t i = 1; i < count; i++)
			if (nodes[i] != nodes[0])
				return 0;
		return 1;
	}
	d = lowest(c, nodes[0]);
	for (size_t i = 1; i < count; i++)
		d = common(c->t, d, lowest(c, nodes[i]));
	return c->t->domains[d].level >= level;
}

/* The domain of exactly `level` above node n, or P_NONE. */
static uint32_t exactly_at(const struct pcase *c, uint32_t n, size_t level)
{
	uint32_t d = c->t->node_domain[n];

	while (c->t->domains[d].level > level)
		d = c->t->domains[d].parent;
	return c->t->domains[d].level == level ? d : P_NONE;
}

static int eligible(const struct pcase *c, const struct topo_group *g, uint32_t n)
{
	const struct topo_node *node = &c->nodes[n];

	if (c->t->node_domain[n] == TOPO_NONE || node->unschedulable)
		return 0;
	if (g->shape.node_selector_count) {
		for (size_t i = 0; i < node->label_count; i++)
			if (strcmp(node->labels[i].key, "pool") == 0)
				return strcmp(node->labels[i].value, "a") == 0;
		return 0;
	}
	return 1;
}

/* The slice layers as the request states them: (level, size), outermost first. */
static size_t layers(const struct topo_group *g, size_t *level, uint32_t *size)
{
	size_t n = 0;

	if (g->slice_level == 0)
		return 0;
	level[n] = g->slice_level;
	size[n++] = g->slice_size > 1 ? g->slice_size : 1;
	for (size_t i = 0; g->slice_size > 1 && i < g->inner_count; i++) {
		level[n] = g->inner[i].level;
		size[n++] = g->inner[i].size;
	}
	return n;
}

static uint32_t slice_of(const struct topo_group *g)
{
	return g->slice_size > 1 ? g->slice_size : 1;
}

/* Whether g's level must hold its Jobs: a required level, and with
 * held_preferred a preferred one. */
static int holds(const struct pcase *c, const struct topo_group *g)
{
	return g->constraint.mode == TOPO_MODE_REQUIRED ||
	       (c->held_preferred && g->constraint.mode == TOPO_MODE_PREFERRED && g->constraint.level > 0);
}

/* What the assignment in c->at / c->placed breaks, or NULL. */
static const char *violation(const struct pcase *c)
{
	static char why[160];
	int64_t use[P_NODES][3] = { { 0 } };
	uint32_t set[P_PODS * P_INSTANCES];
	size_t n;

	for (size_t k = 0; k < c->instances; k++) {
		const struct topo_group *g = &c->g[c->inst_group[k]];
		uint32_t size = slice_of(g), least = g->min_slices ? g->min_slices * size : g->pods;
		size_t lv[TOPO_SLICE_LAYERS_MAX];
		uint32_t sz[TOPO_SLICE_LAYERS_MAX];
		size_t nl = layers(g, lv, sz);

		if (c->placed[k] > g->pods || c->placed[k] < least || c->placed[k] % size)
			return "an instance placed a count of pods it may not";
		for (uint32_t r = 0; r < g->pods; r++) {
			uint32_t node = c->at[k][r];

			if ((node == P_NONE) != (r >= c->placed[k]))
				return "the pods placed are not the first ranks";
			if (node == P_NONE)
				continue;
			if (!eligible(c, g, node))
				return "a pod on a node it may not use";
			use[node][R_CPU] += g->shape.requests[R_CPU];
			use[node][R_MEM] += g->shape.requests[R_MEM];
			use[node][R_PODS] += 1;
		}
		if (holds(c, g) && !within(c, c->at[k], c->placed[k], g->constraint.level))
			return "a Job outside one domain of its required level";
		for (size_t l = 0; l < nl; l++)
			for (uint32_t from = 0; from < c->placed[k]; from += sz[l])
				if (!within(c, c->at[k] + from, sz[l], lv[l])) {
					snprintf(why, sizeof(why),
						 "a slice of layer %zu (ranks %u..) outside one domain",
						 l + 1, from);
					return why;
				}
		if (g->exclusive) {
			uint32_t held = exactly_at(c, c->at[k][0], g->constraint.level);

			if (held == P_NONE)
				return "an exclusive Job in no domain of its level";
			for (uint32_t r = 0; r < c->placed[k]; r++)
				if (exactly_at(c, c->at[k][r], g->constraint.level) != held)
					return "an exclusive Job over two domains";
			for (size_t o = 0; o < c->instances; o++)
				for (uint32_t r = 0; o != k && r < c->placed[o]; r++)
					if (exactly_at(c, c->at[o][r], g->constraint.level) == held)
						return "another Job's pod in an exclusive Job's domain";
		}
	}
	for (uint32_t node = 0; node < c->cluster.node_count; node++)
		for (int r = 0; r < 3; r++)
			if (use[node][r] > c->cap[node][r])
				return "a node over its capacity";
	/* Co-placed units: job j of each group with the same `together`. */
	for (size_t k = 0; k < c->instances; k++) {
		const struct topo_group *g = &c->g[c->inst_group[k]];

		if (!g->together || !holds(c, g))
			continue;
		n = 0;
		for (size_t o = 0; o < c->instances; o++)
			if (c->g[c->inst_group[o]].together == g->together &&
			    c->inst_job[o] == c->inst_job[k])
				for (uint32_t r = 0; r < c->placed[o]; r++)
					set[n++] = c->at[o][r];
		if (!within(c, set, n, g->constraint.level))
			return "a co-placed unit outside one domain of its level";
	}
	if (c->req.whole.mode == TOPO_MODE_REQUIRED ||
	    (c->held_preferred && c->req.whole.mode == TOPO_MODE_PREFERRED)) {
		n = 0;
		for (size_t k = 0; k < c->instances; k++)
			for (uint32_t r = 0; !c->g[c->inst_group[k]].outside_whole && r < c->placed[k]; r++)
				set[n++] = c->at[k][r];
		if (!within(c, set, n, c->req.whole.level))
			return "the JobSet outside one domain of its required level";
	}
	return NULL;
}

/* What the placement reports as the JobSet's domain breaks, or NULL: under
 * a required JobSet level it holds every pod the level covers and lies at
 * that level or deeper (past a skipped tier: never the domain above it). */
static const char *whole_violation(const struct pcase *c, const struct topo_placement *p)
{
	uint32_t d = P_NONE;

	if (c->req.whole.mode != TOPO_MODE_REQUIRED)
		return NULL;
	for (size_t k = 0; k < c->instances; k++)
		for (uint32_t r = 0; !c->g[c->inst_group[k]].outside_whole && r < c->placed[k]; r++)
			d = d == P_NONE ? c->t->node_domain[c->at[k][r]]
					: common(c->t, d, c->t->node_domain[c->at[k][r]]);
	if (d == P_NONE)
		return NULL;
	if (c->t->domains[p->whole_domain].level < c->req.whole.level)
		return "the JobSet's domain reported above its required level";
	while (d != p->whole_domain && d != 0)
		d = c->t->domains[d].parent;
	return d == p->whole_domain ? NULL : "the JobSet's domain reported does not hold its pods";
}

/* ---- the exhaustive search ---- */

static int search_instance(struct pcase *c, size_t k, int fewer);

/* Pods within an innermost slice (or a Job without slices) are alike: their
 * nodes are tried in nondecreasing order only. */
static uint32_t alike_run(const struct topo_group *g)
{
	size_t lv[TOPO_SLICE_LAYERS_MAX];
	uint32_t sz[TOPO_SLICE_LAYERS_MAX];
	size_t nl = layers(g, lv, sz);

	if (nl)
		return sz[nl - 1];
	return g->slice_size > 1 ? g->slice_size : g->pods;
}

static int search_rank(struct pcase *c, size_t k, uint32_t r, int fewer)
{
	const struct topo_group *g = &c->g[c->inst_group[k]];
	uint32_t run = alike_run(g), from = r % run ? c->at[k][r - 1] : 0;

	if (r == c->placed[k])
		return search_instance(c, k + 1, fewer);
	for (uint32_t n = from; n < c->cluster.node_count; n++) {
		int ok;

		if (!eligible(c, g, n) || c->free[n][R_CPU] < g->shape.requests[R_CPU] ||
		    c->free[n][R_MEM] < g->shape.requests[R_MEM] || c->free[n][R_PODS] < 1)
			continue;
		c->free[n][R_CPU] -= g->shape.requests[R_CPU];
		c->free[n][R_MEM] -= g->shape.requests[R_MEM];
		c->free[n][R_PODS] -= 1;
		c->at[k][r] = n;
		ok = search_rank(c, k, r + 1, fewer);
		c->free[n][R_CPU] += g->shape.requests[R_CPU];
		c->free[n][R_MEM] += g->shape.requests[R_MEM];
		c->free[n][R_PODS] += 1;
		if (ok)
			return 1;
	}
	c->at[k][r] = P_NONE;
	return 0;
}

/* Instances k..: every count (all pods, or with `fewer` whole trailing
 * slices left out down to the minimum), every node per rank. */
static int search_instance(struct pcase *c, size_t k, int fewer)
{
	const struct topo_group *g;
	uint32_t size, least;

	if (k == c->instances) {
		c->leaves++;
		return violation(c) == NULL;
	}
	g = &c->g[c->inst_group[k]];
	size = slice_of(g);
	least = fewer && g->min_slices ? g->min_slices * size : g->pods;
	for (uint32_t p = g->pods; p >= least && p > 0; p -= size) {
		for (uint32_t r = 0; r < g->pods; r++)
			c->at[k][r] = P_NONE;
		c->placed[k] = p;
		if (search_rank(c, k, 0, fewer))
			return 1;
		if (p < size)
			break;
	}
	return 0;
}

/* ---- random cases ---- */

static void make_nodes(struct pcase *c)
{
	size_t count = 2 + rnd(c, P_NODES - 1);

	c->cluster.resources[R_CPU] = "cpu";
	c->cluster.resources[R_MEM] = "memory";
	c->cluster.resources[R_PODS] = "pods";
	c->cluster.resource_count = 3;
	c->cluster.nodes = c->nodes;
	c->cluster.node_count = count;
	for (size_t i = 0; i < count; i++) {
		struct topo_node *n = &c->nodes[i];

		snprintf(c->names[i], sizeof(c->names[i]), "n%u", (unsigned)(i % 100));
		snprintf(c->blocks[i], sizeof(c->blocks[i]), "b%u", rnd(c, 2));
		snprintf(c->racks[i], sizeof(c->racks[i]), "r%u", rnd(c, 2)); /* repeats across blocks */
		c->labels[i][0] = (struct topo_label){ "block", c->blocks[i] };
		c->labels[i][1] = (struct topo_label){ "rack", c->racks[i] };
		c->labels[i][2] = (struct topo_label){ "kubernetes.io/hostname", c->names[i] };
		c->labels[i][3] = (struct topo_label){ "pool", rnd(c, 4) ? "a" : "b" };
		n->name = c->names[i];
		n->labels = c->labels[i];
		n->label_count = 4;
		n->unschedulable = rnd(c, 16) == 0;
		n->allocatable[R_CPU] = 1000 * (2 + (int64_t)rnd(c, 4));
		n->allocatable[R_MEM] = MEM_UNIT * (2 + (int64_t)rnd(c, 4));
		n->allocatable[R_PODS] = 1 + rnd(c, 5);
		n->used[R_CPU] = 500 * (int64_t)rnd(c, 3);
		if (n->used[R_CPU] > n->allocatable[R_CPU])
			n->used[R_CPU] = n->allocatable[R_CPU];
		for (int r = 0; r < 3; r++)
			c->cap[i][r] = c->free[i][r] = n->allocatable[r] - n->used[r];
	}
}

/* A HyperNode tree of random tiers 1..3: each Node in a random HyperNode
 * (some in none), each HyperNode under a random one of a higher tier or
 * none; tiers may be skipped and Nodes may sit directly in tier 2 or 3. */
static struct topo_tree *make_hypernodes(struct pcase *c, char **cause)
{
	size_t count = 1 + rnd(c, P_HYPERNODES), members[P_HYPERNODES] = { 0 };

	for (size_t h = 0; h < count; h++) {
		snprintf(c->hn_names[h], sizeof(c->hn_names[h]), "h%u", (unsigned)(h % 100));
		c->hns[h] = (struct topo_hypernode){ .name = c->hn_names[h], .tier = 1 + (int)rnd(c, 3) };
	}
	for (size_t h = 0; h < count; h++) {
		size_t above[P_HYPERNODES], n = 0;

		for (size_t p = 0; p < count; p++)
			if (c->hns[p].tier > c->hns[h].tier)
				above[n++] = p;
		if (n && rnd(c, 4)) {
			size_t p = above[rnd(c, (uint32_t)n)];

			c->members[p][members[p]++] = (struct topo_member){ .kind = TOPO_MEMBER_HYPERNODE,
									    .exact = c->hn_names[h] };
		}
	}
	for (size_t i = 0; i < c->cluster.node_count; i++) {
		size_t h = rnd(c, (uint32_t)count + 1);

		if (h == count)
			continue; /* unclaimed: left out */
		c->members[h][members[h]++] =
			(struct topo_member){ .kind = TOPO_MEMBER_NODE, .exact = c->names[i] };
	}
	for (size_t h = 0; h < count; h++) {
		c->hns[h].members = c->members[h];
		c->hns[h].member_count = members[h];
	}
	return topo_tree_from_hypernodes(&c->cluster, c->hns, count, cause);
}

/* A random valid request for the tree, at most P_PODS pods. */
static void make_request(struct pcase *c)
{
	size_t user = c->t->node_level - 1, left = P_PODS, groups = 1 + rnd(c, P_GROUPS);
	int together = groups >= 2 && rnd(c, 4) == 0, same_shape = rnd(c, 2) == 0;
	enum topo_mode unit_mode = rnd(c, 2) ? TOPO_MODE_REQUIRED : TOPO_MODE_PREFERRED;
	uint8_t unit_level = (uint8_t)(1 + rnd(c, (uint32_t)user));
	size_t covered = 0;

	memset(c->g, 0, sizeof(c->g));
	c->req = (struct topo_request){ .groups = c->g };
	for (size_t k = 0; k < groups && left > 0; k++) {
		struct topo_group *g = &c->g[k];
		uint32_t lowest_slice;

		g->name = k == 0 ? "g0" : k == 1 ? "g1" : "g2";
		g->replicas = together && k == 1 ? c->g[0].replicas : 1 + rnd(c, 2);
		g->pods = 1 + rnd(c, 3);
		if (g->replicas * g->pods > left) {
			if (together && k == 1)
				break;
			g->replicas = 1;
			g->pods = (uint32_t)(g->pods < left ? g->pods : left);
		}
		if (same_shape && k > 0) {
			g->shape = c->g[0].shape;
		} else {
			g->shape.requests[R_CPU] = 500 * (1 + (int64_t)rnd(c, 3));
			g->shape.requests[R_MEM] = MEM_UNIT * (int64_t)rnd(c, 3);
			if (rnd(c, 4) == 0) {
				g->shape.node_selector = &POOL_A;
				g->shape.node_selector_count = 1;
			}
			if (rnd(c, 3) == 0) {
				c->prefer[k] = (struct topo_preference){ (int32_t)(1 + rnd(c, 100)),
									 { &POOL_B, 1 } };
				g->shape.preferred = &c->prefer[k];
				g->shape.preferred_count = 1;
			}
		}
		g->constraint.mode = (enum topo_mode)rnd(c, 4);
		g->constraint.level = (uint8_t)(1 + rnd(c, (uint32_t)user));
		if (together && k < 2) {
			g->constraint = (struct topo_constraint){ unit_mode, unit_level };
			g->together = 1;
		} else if (rnd(c, 8) == 0) {
			g->constraint.mode = TOPO_MODE_REQUIRED;
			g->exclusive = 1;
		}
		lowest_slice =
			g->constraint.mode == TOPO_MODE_REQUIRED || g->constraint.mode == TOPO_MODE_PREFERRED
				? g->constraint.level
				: 1;
		if (g->constraint.mode != TOPO_MODE_UNCONSTRAINED && rnd(c, 2) == 0) {
			uint32_t size = 1 + rnd(c, 3);

			if (size * 2 <= left && g->replicas == 1 && !g->together && rnd(c, 2))
				g->pods = size * 2;
			if (g->pods % size)
				size = 1;
			g->slice_size = size;
			g->slice_level = (uint8_t)(lowest_slice +
						   rnd(c, (uint32_t)(c->t->node_level - lowest_slice + 1)));
			if (size > 1 && rnd(c, 5) == 0)
				g->slice_level = 0; /* anywhere in the Job's domain */
			if (size > 1 && g->slice_level && g->slice_level < c->t->node_level && rnd(c, 3)) {
				uint32_t inner = rnd(c, 2) ? 1 : size;

				if (size % 2 == 0 && rnd(c, 2))
					inner = size / 2;
				g->inner[0].size = inner;
				g->inner[0].level =
					(uint8_t)(g->slice_level + 1 +
						  rnd(c, (uint32_t)(c->t->node_level - g->slice_level)));
				g->inner_count = 1;
			} else if (rnd(c, 2)) {
				g->min_slices = 1 + rnd(c, g->pods / size);
			}
		} else if (g->constraint.mode != TOPO_MODE_UNCONSTRAINED && rnd(c, 4) == 0) {
			g->min_slices = 1 + rnd(c, g->pods); /* partitions of one pod */
		}
		left -= g->replicas * g->pods;
		c->req.group_count = k + 1;
	}
	if (c->req.group_count < 2 && together)
		c->g[0].together = 0;
	c->req.whole.mode = (enum topo_mode)rnd(c, 3);
	c->req.whole.level = (uint8_t)(1 + rnd(c, (uint32_t)user));
	for (size_t k = 0; k < c->req.group_count; k++) {
		if (c->req.whole.mode != TOPO_MODE_NONE && !c->g[k].together && rnd(c, 4) == 0)
			c->g[k].outside_whole = 1;
		covered += !c->g[k].outside_whole;
	}
	if (!covered)
		c->g[0].outside_whole = 0;
	c->instances = 0;
	for (size_t k = 0; k < c->req.group_count; k++)
		for (uint32_t j = 0; j < c->g[k].replicas; j++) {
			c->inst_group[c->instances] = (uint32_t)k;
			c->inst_job[c->instances++] = j;
		}
}

/* ---- one case ---- */

static char *describe(const struct pcase *c, uint64_t seed, const char *what, const char *cause,
		      int placement)
{
	char buf[4096];
	size_t used = 0;

#define ADD(...)                                                                                             \
	do {                                                                                                 \
		if (used < sizeof(buf))                                                                      \
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, __VA_ARGS__);               \
	} while (0)
	ADD("case seed %llu: %s", (unsigned long long)seed, what);
	if (cause)
		ADD(" (core: %s)", cause);
	ADD("\n  tree (%s):", c->hypernodes ? "hypernodes" : "levels");
	for (uint32_t d = 0; d < c->t->domain_count; d++)
		ADD(" [%u %s L%u p%d]", d, c->t->domains[d].name, c->t->domains[d].level,
		    c->t->domains[d].parent == TOPO_NONE ? -1 : (int)c->t->domains[d].parent);
	for (size_t i = 0; i < c->cluster.node_count; i++)
		ADD("\n  node %s: free cpu %lld mem %lld pods %lld%s pool %s", c->names[i],
		    (long long)c->free[i][0], (long long)c->free[i][1], (long long)c->free[i][2],
		    c->nodes[i].unschedulable ? " cordoned" : "", c->labels[i][3].value);
	for (size_t k = 0; k < c->req.group_count; k++) {
		const struct topo_group *g = &c->g[k];

		ADD("\n  group %zu: %u x %u pods, cpu %lld mem %lld%s, mode %d level %u, slices %u at %u", k,
		    g->replicas, g->pods, (long long)g->shape.requests[0], (long long)g->shape.requests[1],
		    g->shape.node_selector_count ? " pool=a" : "", g->constraint.mode, g->constraint.level,
		    g->slice_size, g->slice_level);
		if (g->inner_count)
			ADD(" inner %u at %u", g->inner[0].size, g->inner[0].level);
		if (g->shape.preferred_count)
			ADD(" prefers pool=b (weight %d)", g->shape.preferred[0].weight);
		ADD(" min %u%s%s%s", g->min_slices, g->exclusive ? " exclusive" : "",
		    g->together ? " together" : "", g->outside_whole ? " outside" : "");
		if (g->balanced)
			ADD(" balanced");
	}
	ADD("\n  whole: mode %d level %u", c->req.whole.mode, c->req.whole.level);
	for (size_t k = 0; placement && k < c->instances; k++) {
		ADD("\n  core: group %u job %u:", c->inst_group[k], c->inst_job[k]);
		for (uint32_t r = 0; r < c->g[c->inst_group[k]].pods; r++)
			if (c->at[k][r] == P_NONE)
				ADD(" -");
			else
				ADD(" %s", c->names[c->at[k][r]]);
	}
#undef ADD
	return strdup(buf);
}

/* Reads the core's placement into c->at / c->placed; 0 when its layout is
 * as topo_place.h states (by group, job, completion). */
static int read_placement(struct pcase *c, const struct topo_placement *p)
{
	size_t slot = 0;

	if (p->instance_count != c->instances)
		return -1;
	for (size_t k = 0; k < c->instances; k++) {
		const struct topo_group *g = &c->g[c->inst_group[k]];

		c->placed[k] = p->instance_pods[k];
		for (uint32_t r = 0; r < g->pods; r++, slot++) {
			const struct topo_pod *pod = slot < p->pod_count ? &p->pods[slot] : NULL;

			if (!pod || pod->group != c->inst_group[k] || pod->job_index != c->inst_job[k] ||
			    pod->completion != r)
				return -1;
			c->at[k][r] = pod->node == TOPO_NONE ? P_NONE : pod->node;
		}
	}
	return slot == p->pod_count ? 0 : -1;
}

/* Whether the request has a preferred level and nothing that may rank
 * before it or set it aside: no preferred node affinity, no balanced
 * placement. */
static int preferences_only_levels(const struct pcase *c)
{
	int any = c->req.whole.mode == TOPO_MODE_PREFERRED;

	for (size_t k = 0; k < c->req.group_count; k++) {
		if (c->g[k].shape.preferred_count || c->g[k].balanced)
			return 0;
		any |= c->g[k].constraint.mode == TOPO_MODE_PREFERRED && c->g[k].constraint.level > 0;
	}
	return any;
}

static int one_case(uint64_t seed, struct topo_property_counts *counts, char **failure)
{
	struct pcase c;
	struct topo_placement *p = NULL;
	char *cause = NULL;
	const char *broken = NULL;
	int full, any, rc, code, partial = 0, ret = 0;

	memset(&c, 0, sizeof(c));
	c.rng = seed * 2654435761u + 0x9e3779b97f4a7c15ull;
	make_nodes(&c);
	c.hypernodes = rnd(&c, 2);
	if (c.hypernodes) {
		c.t = make_hypernodes(&c, &cause);
	} else {
		const char *const *set = LEVEL_SETS[rnd(&c, sizeof(LEVEL_SETS) / sizeof(LEVEL_SETS[0]))];
		size_t n = set[2] ? 3 : set[1] ? 2 : 1;

		c.t = topo_tree_from_levels(&c.cluster, set, n, &cause);
	}
	if (!c.t) {
		*failure = describe(&c, seed, "the tree was refused", cause, 0);
		free(cause);
		return -1;
	}
	free(cause);
	cause = NULL;
	make_request(&c);
	/* Kueue's balanced placement on a quarter of the cases, chosen by a hash
	 * of the seed apart from the case's random stream, so that every seed
	 * still makes the case it made before. */
	if (((seed * 0xd1b54a32d192ed03ull) >> 62) == 1)
		for (size_t k = 0; k < c.req.group_count; k++)
			c.g[k].balanced = 1;
	counts->cases++;
	counts->with_balanced += c.g[0].balanced;
	counts->hypernode_cases += (size_t)c.hypernodes;
	for (size_t k = 0; k < c.req.group_count; k++) {
		const struct topo_group *g = &c.g[k];

		counts->with_slices += g->slice_size > 1 || g->slice_level;
		counts->with_layers += g->inner_count > 0;
		counts->with_minimum += g->min_slices > 0;
		counts->with_exclusive += g->exclusive;
		counts->with_group += g->together && k == 0;
		counts->mixed_shapes += k > 0 && memcmp(&g->shape, &c.g[0].shape, sizeof(g->shape)) != 0;
	}
	counts->with_whole += c.req.whole.mode == TOPO_MODE_REQUIRED;

	full = search_instance(&c, 0, 0);
	any = full || search_instance(&c, 0, 1);
	counts->exhaustive_full += (size_t)full;
	counts->exhaustive_any += (size_t)any;
	counts->exhaustive_leaves += c.leaves;

	rc = topo_place(c.t, &c.req, &p, &cause);
	code = rc == 0 ? 0 : cause && strncmp(cause, "request: ", 9) == 0 ? 2 : 1;
	if (code == 0) {
		if (read_placement(&c, p) != 0)
			broken = "the placement's pods are not laid out by group, job and completion";
		else if (!(broken = violation(&c)))
			broken = whole_violation(&c, p);
		for (size_t k = 0; k < c.instances; k++)
			partial |= c.placed[k] < c.g[c.inst_group[k]].pods;
		if (!broken && partial && full)
			broken = "fewer partitions placed though every one fits";
		if (!broken && !any)
			broken = "placed where the exhaustive search found nothing (the search's fault?)";
		counts->placed_full += !partial;
		counts->placed_partial += (size_t)partial;
		if (!broken && !partial && preferences_only_levels(&c)) {
			/* Every preferred level met whenever some placement meets
			 * them all (the node-level search held to them, step 6c). */
			c.held_preferred = 1;
			if (violation(&c)) {
				c.leaves = 0;
				if (search_instance(&c, 0, 0))
					broken =
						"a preferred level missed though a placement meets every one";
			} else {
				counts->preferred_met++;
			}
			c.held_preferred = 0;
		}
	} else {
		if (any)
			broken = code == 2 ? "refused as a request (exit 2) though a placement exists"
					   : "refused (exit 1) though a placement exists";
		else if (cause && strstr(cause, "search cut"))
			broken = "the search was cut on a case this small";
		counts->refused += code == 1;
		counts->refused_request += code == 2;
	}
	if (broken) {
		*failure = describe(&c, seed, broken, cause, code == 0);
		ret = -1;
	}
	topo_placement_free(p);
	free(cause);
	topo_tree_free(c.t);
	return ret;
}

int topo_property_run(uint64_t seed, size_t cases, struct topo_property_counts *counts, char **failure)
{
	*failure = NULL;
	for (size_t i = 0; i < cases; i++)
		if (one_case(seed + i, counts, failure) != 0)
			return -1;
	return 0;
}
