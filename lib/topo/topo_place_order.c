/*
 * topo_place_order: the placement core's choice between candidate
 * placements, and the request's scarcest resource that breaks ties between
 * equally tight domains. Not the searches that place in a given order
 * (topo_place_domain.c, topo_place_node.c), nor Kueue's BestFit
 * (topo_place_bestfit.c).
 *
 * The search places the largest instances first (first-fit decreasing).
 * Kueue places PodSets in the order the JobSet lists them, and on some
 * clusters that order leaves the JobSet closer together or a larger domain
 * free. So, when a placement of every pod was found, more candidates are
 * made: the spec order (one more greedy descent per instance), each order
 * also with ties in tree order, Kueue's own BestFit when it may place the
 * request and, with a JobSet-wide level, Kueue's BestFit given that level
 * (topo_place_kueue_whole), and the node-level search held to the
 * preferred levels when no candidate meets them all. One is kept, chosen
 * over all of them at once (choose): the best on what the user asked for
 * (the pods' preferred node affinity, the sum over the pods of their
 * node's score, which Kueue puts before the placement policy; preferred
 * levels met; the JobSet's preferred level, met or else as near as the
 * JobSet came to it); of those, when Kueue's placement ties with them
 * there, the ones as good as Kueue's on every measure or keeping the Jobs
 * within fewer racks on as many hosts, and when Kueue's given the level
 * ties with them, the ones as good as that one on every measure (both at
 * once, else the one given the level alone: eligible); of those, the ones no
 * other covers (at least as good on every level's largest free domain in
 * pods of the request's shapes, on hosts and on domains used, and better
 * on one); of these, the best by the level of the smallest domain holding
 * the JobSet, the largest domain left free at the request's level, the
 * fewest domains used.
 */
#include <stdlib.h>
#include <string.h>

#include "topo_place_int.h"

struct order_score {
	uint64_t affinity;
	uint32_t preferred_met;
	/* The JobSet's preferred level, as Kueue meets a preferred level: the
	 * deepest level holding the JobSet in one domain, up to the one asked
	 * (missed, the level nearest it is the better, as the level search
	 * climbs one level at a time); 0 without a preferred level. */
	size_t whole_met;
	size_t jobset_level;
	uint64_t largest_free;
	size_t domains;
	/* The largest free domain at each level (1 .. the node level), in pods
	 * of the request's shapes (each shape counted on its own, summed):
	 * of two placements that tie on the measures above, one at least as
	 * good at every level and on domains is the better. */
	uint64_t free_at[TOPO_LEVELS_MAX + 2];
	size_t levels;
	size_t hosts; /* per Job, the nodes holding its pods, summed */
	/* per Job and level above the nodes, the domains holding its pods,
	 * summed: how far Jobs straddle racks and blocks */
	size_t straddles;
};

/* 1 when a is at least as good as b at every level's free domain, on
 * domains used and on hosts used. */
static int covers(const struct order_score *a, const struct order_score *b)
{
	if (a->domains > b->domains || a->hosts > b->hosts)
		return 0;
	for (size_t l = 1; l < a->levels; l++)
		if (a->free_at[l] < b->free_at[l])
			return 0;
	return 1;
}

/* Positive when a is better than b on what users asked for: the pods'
 * preferred node affinity, preferred levels met, the JobSet's preferred
 * level met. */
static int compare_asked(const struct order_score *a, const struct order_score *b)
{
	if (a->affinity != b->affinity)
		return a->affinity > b->affinity ? 1 : -1;
	if (a->preferred_met != b->preferred_met)
		return a->preferred_met > b->preferred_met ? 1 : -1;
	if (a->whole_met != b->whole_met)
		return a->whole_met > b->whole_met ? 1 : -1;
	return 0;
}

/* Positive when a is better than b on the rest, for placements neither of
 * which covers the other: the level of the smallest domain holding the
 * whole JobSet, the largest domain left free at the request's level, the
 * fewest domains used. */
static int compare_rest(const struct order_score *a, const struct order_score *b)
{
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
int topo_place_scarcest_resource(const struct ctx *x)
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
		topo_place_compute(x, 0, 0);
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

/* free_at: per level, the most pods of the request's shapes one domain
 * of the level still takes (each distinct shape on its own, summed). */
static void free_pods_at_levels(struct ctx *x, uint64_t *free_at)
{
	const struct topo_domain *dom = x->t->domains;

	memset(free_at, 0, (x->t->node_level + 1) * sizeof(*free_at));
	topo_place_free_pods(x);
	for (uint32_t d = 0; d < x->t->domain_count; d++)
		if (x->pods[d] > free_at[dom[d].level])
			free_at[dom[d].level] = x->pods[d];
}

/* Per Job, the nodes holding its pods (s->hosts), and per Job and level
 * above the nodes the domains holding them (s->straddles: how far Jobs
 * straddle racks and blocks), each summed; one pass. A node with no domain
 * of a level (a HyperNode tree that skips a tier) is a domain of its own
 * there. Both SIZE_MAX without memory: then no placement covers another and
 * none keeps its Jobs closer. The pods come by group and job. */
static void spread_of(const struct ctx *x, const struct topo_placement *p, struct order_score *s)
{
	const struct topo_domain *dom = x->t->domains;
	size_t above = x->t->node_level > 1 ? x->t->node_level - 1 : 0; /* levels 1 .. node_level - 1 */
	uint32_t *seen = calloc(x->t->domain_count, sizeof(*seen));
	uint32_t job = 1;

	s->hosts = s->straddles = 0;
	if (!seen) {
		s->hosts = s->straddles = SIZE_MAX;
		return;
	}
	for (size_t i = 0; i < p->pod_count; i++) {
		uint32_t leaf = p->pods[i].node != TOPO_NONE ? x->t->node_domain[p->pods[i].node] : TOPO_NONE;
		size_t present = 0;

		if (i > 0 && (p->pods[i].group != p->pods[i - 1].group ||
			      p->pods[i].job_index != p->pods[i - 1].job_index))
			job++;
		if (leaf == TOPO_NONE || seen[leaf] == job)
			continue; /* this node and its domains are counted */
		seen[leaf] = job;
		s->hosts++;
		for (uint32_t d = dom[leaf].parent; d != TOPO_NONE && d != 0; d = dom[d].parent) {
			if (dom[d].level >= x->t->node_level)
				continue;
			present++;
			if (seen[d] != job) {
				seen[d] = job;
				s->straddles++;
			}
		}
		s->straddles += above > present ? above - present : 0;
	}
	free(seen);
}

/* The lowest domain holding the placed pods of p->pods[i .. i + count)
 * (their lowest domains' common ancestor; the root when none is placed). */
static uint32_t holding(const struct ctx *x, const struct topo_placement *p, size_t i, size_t count)
{
	uint32_t a = TOPO_NONE;

	for (size_t e = i + count < p->pod_count ? i + count : p->pod_count; i < e; i++)
		a = topo_place_common(x, a, p->pods[i].domain);
	return a == TOPO_NONE ? 0 : a;
}

/* Whether group g leads its co-placed unit with a preferred level (the
 * first group of its `together` value). */
static int leads_preferred_unit(const struct topo_request *req, size_t g)
{
	if (!req->groups[g].together || req->groups[g].constraint.mode != TOPO_MODE_PREFERRED)
		return 0;
	for (size_t h = 0; h < g; h++)
		if (req->groups[h].together == req->groups[g].together)
			return 0;
	return 1;
}

/* Co-placed units with a preferred level whose pods (every member's Job
 * of one index) lie within one domain of it. */
static uint32_t units_met(const struct ctx *x, const struct topo_placement *p)
{
	const struct topo_request *req = x->req;
	const struct topo_domain *dom = x->t->domains;
	uint32_t met = 0;

	for (size_t g = 0; g < req->group_count; g++) {
		if (!leads_preferred_unit(req, g))
			continue;
		for (uint32_t j = 0; j < req->groups[g].replicas; j++) {
			uint32_t a = TOPO_NONE;

			for (size_t h = g, at = 0; h < req->group_count; h++) {
				uint32_t b;

				if (h == g)
					for (size_t e = 0; e < g; e++)
						at += (size_t)req->groups[e].replicas * req->groups[e].pods;
				if (req->groups[h].together == req->groups[g].together &&
				    j < req->groups[h].replicas) {
					b = holding(x, p, at + (size_t)j * req->groups[h].pods,
						    req->groups[h].pods);
					a = topo_place_common(x, a, b);
				}
				at += (size_t)req->groups[h].replicas * req->groups[h].pods;
			}
			met += a != TOPO_NONE && dom[a].level >= req->groups[g].constraint.level;
		}
	}
	return met;
}

/* The score of placement p, with the context's free capacity as p left it. */
static struct order_score score_of(struct ctx *x, const struct topo_placement *p)
{
	const struct topo_domain *dom = x->t->domains;
	struct order_score s = { .domains = p->count_count };
	size_t level = 0;

	for (size_t g = 0, i = 0; g < x->req->group_count; g++) {
		const struct topo_group *grp = &x->req->groups[g];

		if ((grp->constraint.mode == TOPO_MODE_REQUIRED ||
		     grp->constraint.mode == TOPO_MODE_PREFERRED) &&
		    grp->constraint.level > level)
			level = grp->constraint.level;
		/* An instance's pods follow each other: the lowest domain holding
		 * them (one node: the domain listing it) at the level or deeper. */
		for (uint32_t j = 0; j < grp->replicas; j++, i += grp->pods)
			s.preferred_met += grp->constraint.mode == TOPO_MODE_PREFERRED &&
					   dom[holding(x, p, i, grp->pods)].level >= grp->constraint.level;
	}
	s.preferred_met += units_met(x, p);
	for (size_t l = x->t->node_level; l-- > 0 && p->pod_count;) {
		uint32_t first = TOPO_NONE;
		int same = 1;

		for (size_t i = 0; i < p->pod_count && same; i++) {
			uint32_t a;

			/* With a JobSet-wide level, the pods it holds. */
			if (p->pods[i].domain == TOPO_NONE ||
			    (x->req->whole.mode != TOPO_MODE_NONE &&
			     x->req->groups[p->pods[i].group].outside_whole))
				continue;
			a = topo_place_ancestor_at(x, p->pods[i].domain, l);
			if (dom[a].level != l || (first != TOPO_NONE && a != first))
				same = 0;
			first = a;
		}
		if (same) {
			s.jobset_level = l;
			break;
		}
	}
	for (size_t i = 0; x->prefer && i < p->pod_count; i++)
		if (p->pods[i].node != TOPO_NONE)
			s.affinity +=
				x->prefer[(size_t)p->pods[i].group * x->c->node_count + p->pods[i].node];
	if (level)
		s.largest_free = largest_free_room(x, level);
	if (x->req->whole.mode == TOPO_MODE_PREFERRED)
		s.whole_met = s.jobset_level < x->req->whole.level ? s.jobset_level : x->req->whole.level;
	s.levels = x->t->node_level + 1;
	free_pods_at_levels(x, s.free_at);
	spread_of(x, p, &s);
	return s;
}

int topo_place_second_order_allowed(const struct ctx *x)
{
	for (size_t g = 0; g < x->req->group_count; g++)
		if (x->req->groups[g].together || x->req->groups[g].min_slices || x->req->groups[g].balanced)
			return 0;
	return x->instance_count > 1;
}

int topo_place_preferred_search_allowed(const struct ctx *x)
{
	int any = x->req->whole.mode == TOPO_MODE_PREFERRED;

	for (size_t g = 0; g < x->req->group_count; g++) {
		if (x->req->groups[g].balanced)
			return 0;
		any |= x->req->groups[g].constraint.mode == TOPO_MODE_PREFERRED &&
		       x->req->groups[g].constraint.level > 0;
	}
	return any && !x->elastic;
}

/* Whether a placement of this score misses a preferred level. */
static int misses_a_preference(const struct ctx *x, const struct order_score *s)
{
	uint32_t preferred = 0;

	for (size_t g = 0; g < x->req->group_count; g++)
		if (x->req->groups[g].constraint.mode == TOPO_MODE_PREFERRED)
			preferred +=
				x->req->groups[g].replicas * (1u + (uint32_t)leads_preferred_unit(x->req, g));
	return s->preferred_met < preferred ||
	       (x->req->whole.mode == TOPO_MODE_PREFERRED && s->whole_met < x->req->whole.level);
}

/* Undoes every instance placed, last first. */
static void undo_all(struct ctx *x)
{
	for (size_t k = x->instance_count; k-- > 0;)
		topo_place_undo(x, x->order[k].group, x->start[k]);
}

/* Sets the order of the instances: the spec's (Kueue's), or the search's
 * (largest first, topo_place_make_order). */
static void set_order(struct ctx *x, int spec)
{
	size_t k = 0;

	if (!spec) {
		topo_place_make_order(x);
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

/* The candidates of one choice: at most `first`, three passes, Kueue's,
 * Kueue's given the JobSet-wide level and the preferred-level search. */
#define CANDIDATES_MAX 7

struct candidate {
	struct topo_placement *p;
	struct order_score score;
};

/* Adds p (NULL: nothing), scored with the context as p left it. */
static void add_candidate(struct ctx *x, struct candidate *c, size_t *n, struct topo_placement *p)
{
	if (!p)
		return;
	c[*n].p = p;
	c[*n].score = score_of(x, p);
	(*n)++;
}

/* 1 when a is at least as good as Kueue's placement k on every measure
 * users compare placements by: hosts used, each level's largest free
 * domain, the level of the smallest domain holding the JobSet. */
static int keeps_pace(const struct order_score *a, const struct order_score *k)
{
	if (a->hosts > k->hosts || a->jobset_level < k->jobset_level)
		return 0;
	for (size_t l = 1; l < a->levels; l++)
		if (a->free_at[l] < k->free_at[l])
			return 0;
	return 1;
}

/* Whether candidate i may be kept: none is better on what users asked for,
 * and, for each of Kueue's placements kueue[0..2) (SIZE_MAX: none) that
 * ties with it there, it keeps pace with Kueue's on every measure (Kueue's
 * always does) or keeps the Jobs closer: on as many hosts, over fewer racks
 * and blocks. */
static int eligible(const struct candidate *c, size_t n, const size_t kueue[2], size_t i)
{
	const struct order_score *a = &c[i].score, *k;

	for (size_t j = 0; j < n; j++)
		if (compare_asked(&c[j].score, a) > 0)
			return 0;
	for (int q = 0; q < 2; q++) {
		if (kueue[q] == SIZE_MAX || compare_asked(a, &c[kueue[q]].score) != 0)
			continue;
		k = &c[kueue[q]].score;
		if (!keeps_pace(a, k) && (q == 1 || !(k->straddles != SIZE_MAX &&
						      a->straddles < k->straddles && a->hosts <= k->hosts)))
			return 0;
	}
	return 1;
}

/* The one kept: of the eligible ones, those no other eligible one covers
 * strictly (covering is a partial order, so some remain), and of these
 * the best on the rest; ties keep the earlier. Choosing over the whole
 * set, not pair by pair, keeps the choice from depending on the order of
 * the candidates. */
static size_t choose(const struct candidate *c, size_t n, const size_t kueue[2])
{
	int ok[CANDIDATES_MAX];
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < n; i++)
		ok[i] = eligible(c, n, kueue, i);
	for (size_t i = 0; i < n; i++) {
		int out = !ok[i];

		for (size_t j = 0; j < n && !out; j++)
			out = ok[j] && compare_asked(&c[j].score, &c[i].score) == 0 &&
			      covers(&c[j].score, &c[i].score) && !covers(&c[i].score, &c[j].score);
		if (!out && (best == SIZE_MAX || compare_rest(&c[i].score, &c[best].score) > 0))
			best = i;
	}
	return best;
}

/* Whether some candidate meets every preferred level. */
static int some_meets_every_preference(const struct ctx *x, const struct candidate *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!misses_a_preference(x, &c[i].score))
			return 1;
	return 0;
}

/* The best of `first` (the search's order, ties broken by free room), three
 * more greedy passes when another order may be tried (the spec order, and
 * each order with ties left in tree order), Kueue's BestFit when Kueue
 * could state the request, and the node-level search held to the preferred
 * levels when none of these meets them all. The others are freed. */
struct topo_placement *topo_place_best_of_orders(struct ctx *x, uint64_t total, int one_shape,
						 struct topo_placement *first)
{
	static const struct {
		int spec, room_ties;
	} variants[] = { { 1, 1 }, { 0, 0 }, { 1, 0 } };
	struct candidate c[CANDIDATES_MAX];
	struct topo_placement *best;
	size_t n = 0, kept, kueue[2] = { SIZE_MAX, SIZE_MAX };

	add_candidate(x, c, &n, first);
	/* One greedy descent per instance: the order and ties are all that vary. */
	for (size_t v = 0; topo_place_second_order_allowed(x) && v < sizeof(variants) / sizeof(variants[0]);
	     v++) {
		uint32_t whole = 0;

		undo_all(x);
		set_order(x, variants[v].spec);
		x->room_ties = variants[v].room_ties;
		x->budget = x->instance_count + 1;
		if (topo_place_run_pass(x, total, one_shape, &whole))
			add_candidate(x, c, &n, topo_place_build_output(x, whole));
	}
	if (topo_place_kueue_allowed(x)) {
		/* Kueue's own placement of the request, in the spec's order. */
		uint32_t whole = 0;

		undo_all(x);
		set_order(x, 1);
		if (topo_place_kueue(x, &whole)) {
			kueue[0] = n;
			add_candidate(x, c, &n, topo_place_build_output(x, whole));
			kueue[0] = kueue[0] < n ? kueue[0] : SIZE_MAX;
		}
		/* And with the JobSet-wide level, as Kueue would meet it. */
		undo_all(x);
		if (topo_place_kueue_whole(x, &whole)) {
			kueue[1] = n;
			add_candidate(x, c, &n, topo_place_build_output(x, whole));
			kueue[1] = kueue[1] < n ? kueue[1] : SIZE_MAX;
		}
	}
	if (topo_place_preferred_search_allowed(x) && !some_meets_every_preference(x, c, n)) {
		/* A spread that meets every preferred level, where the greedy
		 * passes missed one (within half the node-level budget). */
		uint32_t whole = 0;

		undo_all(x);
		set_order(x, 0);
		if (topo_place_exact_preferred(x, &whole))
			add_candidate(x, c, &n, topo_place_build_output(x, whole));
	}
	kept = choose(c, n, kueue);
	if (kept == SIZE_MAX) {
		/* No candidate keeps pace with both of Kueue's placements: with
		 * the one given the JobSet-wide level alone (which keeps pace
		 * with itself), Kueue's reading of the whole request; Kueue's
		 * own ignores that level. */
		const size_t given[2] = { SIZE_MAX, kueue[1] };

		kept = choose(c, n, given);
	}
	if (kept == SIZE_MAX)
		kept = 0; /* not reached: the best on what was asked are eligible then */
	best = c[kept].p;
	for (size_t i = 0; i < n; i++)
		if (i != kept)
			topo_placement_free(c[i].p);
	best->descents = x->descents; /* every pass's */
	return best;
}
