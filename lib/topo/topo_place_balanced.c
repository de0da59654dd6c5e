/*
 * topo_place_balanced: Kueue's balanced placement (TASBalancedPlacement,
 * pkg/cache/scheduler/tas_balanced_placement.go) for one instance with a
 * preferred level L, step by step as Kueue's code does it:
 *
 *   1. for each domain B of level L-1 (the root when L is 1), with the
 *      counts of its subtree: the greedy count of domains one level below L
 *      (L itself when L is the slice level) that hold the slices, largest
 *      first; T = slices / that count, at most the last domain's slices;
 *   2. prune B's subtree below T (the children of the level-L domains with
 *      fewer than T slices, then the level-L domains), and count the level-L
 *      domains the greedy takes; B is the best when T is higher, or equal
 *      with fewer level-L domains;
 *   3. when L is above the slice level, the optimal set of level-L domains
 *      (as few as the greedy takes; then the least capacity, the most
 *      slices, the most even children (entropy), tree order), then their
 *      children;
 *   4. the optimal set of those (as few; the least capacity; tree order);
 *      each takes T slices, the rest goes to them in order (most slices
 *      first) up to what each holds.
 *
 * The pods of each chosen domain then go down the tree by the usual descent.
 * Anything Kueue's code does not place this way (no B holds the request, a
 * step finds no set) returns 0, and the caller places the instance as
 * without the option (Kueue falls back to BestFit the same way).
 *
 * "Domains" here are Kueue's: the user levels; node leaves are not domains
 * (a hostname level is, one node each).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place_int.h"

/* The DP over sets stops (falls back) beyond this many states, or states
 * visited. */
#define BALANCED_STATES_MAX (1u << 22)
#define BALANCED_WORK_MAX (1u << 26)

struct bal {
	struct ctx *x;
	uint64_t *kp, *ks; /* Kueue's podCount and sliceCount per domain */
	size_t slice_level; /* Kueue's sliceLevelIdx as a tree level */
	uint64_t size; /* slice size */
};

struct list {
	uint32_t *v;
	size_t n;
};

static int is_domain(const struct ctx *x, uint32_t d)
{
	return x->t->domains[d].node == TOPO_NONE;
}

/* Appends d's Kueue children (not node leaves) to out (room for them). */
static void children(const struct ctx *x, uint32_t d, struct list *out)
{
	const struct topo_domain *dom = x->t->domains;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (is_domain(x, c))
			out->v[out->n++] = c;
}

/* The counts of d's subtree as the capacity computation left them. */
static void reset(struct bal *b, uint32_t d)
{
	const struct ctx *x = b->x;

	for (uint32_t e = d; e < x->t->domains[d].end; e++) {
		b->kp[e] = x->pods[e];
		b->ks[e] = x->t->domains[e].level <= b->slice_level ? x->usable[e] / b->size : 0;
	}
}

static void clear(struct bal *b, uint32_t d)
{
	uint32_t end = b->x->t->domains[d].end;

	memset(b->kp + d, 0, (end - d) * sizeof(*b->kp));
	memset(b->ks + d, 0, (end - d) * sizeof(*b->ks));
}

/* Kueue's fillInCountsHelper without leaders: counts from the leaves up. */
static void recount(struct bal *b, uint32_t d)
{
	const struct topo_domain *dom = b->x->t->domains;
	uint64_t pods = 0, slices = 0;
	int any = 0;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end) {
		if (!is_domain(b->x, c)) {
			pods += b->kp[c];
			continue;
		}
		recount(b, c);
		pods += b->kp[c];
		slices += b->ks[c];
		any = 1;
	}
	if (!any) { /* a Kueue leaf: its pods stand */
		if (dom[d].level == b->slice_level)
			b->ks[d] = b->kp[d] / b->size;
		return;
	}
	b->kp[d] = pods;
	b->ks[d] = dom[d].level == b->slice_level ? pods / b->size : slices;
}

/* Kueue's sortedDomains (BestFit): slices descending, pods ascending, tree order. */
static int by_best_fit(const struct bal *b, uint32_t a, uint32_t c)
{
	if (b->ks[a] != b->ks[c])
		return b->ks[a] < b->ks[c] ? 1 : -1;
	if (b->kp[a] != b->kp[c])
		return b->kp[a] < b->kp[c] ? -1 : 1;
	return a < c ? -1 : a > c;
}

static double entropy(const struct bal *b, uint32_t d)
{
	const struct topo_domain *dom = b->x->t->domains;
	uint64_t total = 0;
	double e = 0.0;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (is_domain(b->x, c))
			total += b->kp[c];
	if (!total)
		return 0.0;
	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (is_domain(b->x, c) && b->kp[c] > 0) {
			double p = (double)b->kp[c] / (double)total;

			e += -p * log2(p);
		}
	return e;
}

/* Kueue's compareDomainCapacityAndEntropy: slices descending, the children's
 * entropy descending, tree order. */
static int by_capacity_entropy(const struct bal *b, uint32_t a, uint32_t c)
{
	double ea, ec;

	if (b->ks[a] != b->ks[c])
		return b->ks[a] < b->ks[c] ? 1 : -1;
	ea = entropy(b, a);
	ec = entropy(b, c);
	if (ea != ec)
		return ea < ec ? 1 : -1;
	return a < c ? -1 : a > c;
}

static int by_index(const struct bal *b, uint32_t a, uint32_t c)
{
	(void)b;
	return a < c ? -1 : a > c;
}

typedef int (*order_fn)(const struct bal *, uint32_t, uint32_t);

static void sift(const struct bal *b, uint32_t *v, size_t i, size_t n, order_fn cmp)
{
	for (size_t c; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && cmp(b, v[c], v[c + 1]) < 0)
			c++;
		if (cmp(b, v[i], v[c]) >= 0)
			return;
		uint32_t t = v[i];

		v[i] = v[c];
		v[c] = t;
	}
}

/* Heap sort with the counts as context (every order is total: tree order last). */
static void sort_with(const struct bal *b, struct list *l, order_fn cmp)
{
	for (size_t i = l->n / 2; i-- > 0;)
		sift(b, l->v, i, l->n, cmp);
	for (size_t n = l->n; n > 1; n--) {
		uint32_t t = l->v[0];

		l->v[0] = l->v[n - 1];
		l->v[n - 1] = t;
		sift(b, l->v, 0, n - 1, cmp);
	}
}

/* Kueue's evaluateGreedyAssignment without leaders: whether `slices` fit in
 * l's domains taken largest first, in how many, and the last one taken.
 * Sorts a copy (scratch, room for l->n). */
static int greedy(struct bal *b, const struct list *l, uint64_t slices, uint32_t *scratch, uint64_t *count,
		  uint32_t *last)
{
	struct list s = { scratch, l->n };
	uint64_t left = slices;

	memcpy(scratch, l->v, l->n * sizeof(*scratch));
	sort_with(b, &s, by_best_fit);
	*count = 0;
	*last = TOPO_NONE;
	for (size_t i = 0; left > 0 && i < s.n && b->ks[s.v[i]] > 0; i++) {
		(*count)++;
		*last = s.v[i];
		left = b->ks[s.v[i]] >= left ? 0 : left - b->ks[s.v[i]];
	}
	return left == 0;
}

/* Kueue's pruneDomainsBelowThreshold without leaders. */
static void prune(struct bal *b, const struct list *cands, uint64_t t)
{
	const struct topo_domain *dom = b->x->t->domains;

	for (size_t i = 0; i < cands->n; i++)
		for (uint32_t c = cands->v[i] + 1; c < dom[cands->v[i]].end; c = dom[c].end)
			if (is_domain(b->x, c) && b->ks[c] < t)
				clear(b, c);
	for (size_t i = 0; i < cands->n; i++) {
		recount(b, cands->v[i]);
		if (b->ks[cands->v[i]] < t)
			clear(b, cands->v[i]);
	}
}

/* A DP state: `left` pods still to place after the set ending in `d`, whose
 * previous state (one domain fewer) had `prev` left. */
struct state {
	int64_t left, prev;
	uint32_t d;
};

struct row {
	struct state *v;
	size_t n, cap;
};

static int64_t find_state(const struct row *r, int64_t left)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->v[mid].left < left)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && r->v[lo].left == left ? (int64_t)lo : -1;
}

/* Merges `add` (sorted by left) into r, states already there kept. */
static int merge(struct row *r, const struct state *add, size_t n, struct state *tmp)
{
	size_t i = 0, j = 0, k = 0;

	while (i < r->n || j < n) {
		if (j == n || (i < r->n && r->v[i].left <= add[j].left)) {
			if (j < n && r->v[i].left == add[j].left)
				j++;
			tmp[k++] = r->v[i++];
		} else {
			tmp[k++] = add[j++];
		}
	}
	if (k > r->cap) {
		struct state *v = realloc(r->v, k * sizeof(*v));

		if (!v)
			return -1;
		r->v = v;
		r->cap = k;
	}
	if (k)
		memcpy(r->v, tmp, k * sizeof(*tmp));
	r->n = k;
	return 0;
}

/* Kueue's selectOptimalDomainSetToFit without leaders: as few of l's domains
 * as the greedy takes, holding slices x size pods with the least left over;
 * the first such set in `order`'s order (l is sorted by it). Fills out (room
 * for l->n) in that order; 0, or -1 when no set (or too many states). */
static int optimal_set(struct bal *b, struct list *l, uint64_t slices, int by_entropy, uint32_t *scratch,
		       struct list *out)
{
	uint64_t m, pods = slices * b->size, states = 0, work = 0;
	uint32_t last;
	struct row *rows = NULL;
	struct state *add = NULL, *tmp = NULL;
	size_t add_cap = 0;
	int rc = -1;

	out->n = 0;
	if (!greedy(b, l, slices, scratch, &m, &last) || m == 0)
		return -1;
	sort_with(b, l, by_entropy ? by_capacity_entropy : by_index);
	rows = calloc(m + 1, sizeof(*rows));
	if (!rows)
		return -1;
	rows[0].v = malloc(sizeof(struct state));
	if (!rows[0].v)
		goto done;
	rows[0].v[0] = (struct state){ (int64_t)pods, 0, TOPO_NONE };
	rows[0].n = rows[0].cap = 1;
	for (size_t di = 0; di < l->n; di++) {
		uint32_t d = l->v[di];

		if (b->ks[d] == 0)
			continue;
		for (uint64_t i = m; i > 0; i--) {
			const struct row *before = &rows[i - 1];
			size_t n = 0;

			if (before->n + rows[i].n > add_cap) {
				size_t cap = before->n + rows[i].n;
				struct state *a2 = realloc(add, cap * sizeof(*add)), *t2;

				if (!a2)
					goto done;
				add = a2;
				t2 = realloc(tmp, cap * sizeof(*tmp));
				if (!t2)
					goto done;
				tmp = t2;
				add_cap = cap;
			}
			for (size_t s = 0; s < before->n; s++)
				if (before->v[s].left > 0)
					add[n++] = (struct state){ before->v[s].left - (int64_t)b->kp[d],
								   before->v[s].left, d };
			work += before->n + rows[i].n;
			if (work > BALANCED_WORK_MAX)
				goto done;
			states -= rows[i].n;
			if (merge(&rows[i], add, n, tmp))
				goto done;
			states += rows[i].n;
			if (states > BALANCED_STATES_MAX)
				goto done;
		}
	}
	{
		const struct row *r = &rows[m];
		int64_t at = -1;

		for (size_t s = 0; s < r->n && r->v[s].left <= 0; s++)
			at = (int64_t)s; /* the largest left that is <= 0 */
		if (at < 0)
			goto done;
		out->n = m;
		for (uint64_t i = m; i > 0; i--) {
			const struct state *st = &rows[i].v[at];

			out->v[i - 1] = st->d;
			at = find_state(&rows[i - 1], st->prev);
			if (at < 0 && i > 1)
				goto done;
		}
		rc = 0;
	}
done:
	for (uint64_t i = 0; rows && i <= m; i++)
		free(rows[i].v);
	free(rows);
	free(add);
	free(tmp);
	return rc;
}

/* The lowest domain holding both. */
static uint32_t common(const struct topo_domain *dom, uint32_t a, uint32_t c)
{
	while (a != c) {
		if (dom[a].level >= dom[c].level && dom[a].parent != TOPO_NONE)
			a = dom[a].parent;
		else
			c = dom[c].parent;
	}
	return a;
}

struct plan {
	uint32_t block; /* the level L-1 domain */
	uint64_t threshold, level_count;
};

/* Steps 1 and 2 over the level L-1 domains inside scope. */
static int best_block(struct bal *b, uint32_t scope, size_t level, uint64_t slices, struct list *cands,
		      struct list *lower, uint32_t *scratch, struct plan *best)
{
	const struct topo_domain *dom = b->x->t->domains;

	*best = (struct plan){ TOPO_NONE, 0, 0 };
	for (uint32_t blk = scope; blk < dom[scope].end; blk++) {
		uint64_t count, t, level_count;
		uint32_t last;

		if (dom[blk].level != level - 1 || !is_domain(b->x, blk))
			continue;
		reset(b, blk);
		cands->n = lower->n = 0;
		children(b->x, blk, cands);
		if (level < b->slice_level)
			for (size_t i = 0; i < cands->n; i++)
				children(b->x, cands->v[i], lower);
		else
			memcpy(lower->v, cands->v, (lower->n = cands->n) * sizeof(*lower->v));
		if (!greedy(b, lower, slices, scratch, &count, &last) || count == 0)
			continue;
		t = slices / count;
		if (last != TOPO_NONE && b->ks[last] < t)
			t = b->ks[last];
		if (t < best->threshold)
			continue;
		prune(b, cands, t);
		if (!greedy(b, cands, slices, scratch, &level_count, &last))
			continue;
		if (t > best->threshold || (t == best->threshold && level_count < best->level_count))
			*best = (struct plan){ blk, t, level_count };
	}
	return best->block != TOPO_NONE && best->threshold > 0;
}

/* Steps 3 and 4, then the pods into the tree; 1 when placed. */
static int apply(struct bal *b, const struct plan *p, size_t level, uint32_t g, uint64_t slices,
		 struct list *cands, struct list *lower, uint32_t *scratch, uint32_t *where)
{
	struct ctx *x = b->x;
	const struct topo_domain *dom = x->t->domains;
	struct list *fit = cands, chosen = { scratch, 0 };
	uint32_t *scratch2 = scratch + x->t->domain_count;
	uint64_t extra;
	uint32_t top = TOPO_NONE;

	reset(b, p->block);
	cands->n = 0;
	children(x, p->block, cands);
	prune(b, cands, p->threshold);
	if (level < b->slice_level) {
		if (optimal_set(b, cands, slices, 1, scratch2, &chosen))
			return 0;
		lower->n = 0;
		for (size_t i = 0; i < chosen.n; i++)
			children(x, chosen.v[i], lower);
		fit = lower;
	}
	chosen.n = 0;
	if (optimal_set(b, fit, slices, 0, scratch2, &chosen))
		return 0;
	if (slices < chosen.n * p->threshold)
		return 0;
	sort_with(b, &chosen, by_best_fit);
	extra = slices - chosen.n * p->threshold;
	for (size_t i = 0; i < chosen.n; i++) {
		uint64_t room = b->ks[chosen.v[i]] - p->threshold;
		uint64_t take = extra < room ? extra : room;

		b->kp[chosen.v[i]] = (p->threshold + take) * b->size; /* now the pods it gets */
		extra -= take;
	}
	if (extra > 0)
		return 0;
	/* The pruned domains take nothing on the way down. */
	for (uint32_t d = p->block; d < dom[p->block].end; d++)
		if (is_domain(x, d) && b->ks[d] == 0 && dom[d].level <= b->slice_level)
			x->usable[d] = 0;
	for (size_t i = 0; i < chosen.n; i++) {
		topo_place_descend(x, g, chosen.v[i], b->kp[chosen.v[i]]);
		top = top == TOPO_NONE ? chosen.v[i] : common(dom, top, chosen.v[i]);
	}
	*where = top;
	return 1;
}

int topo_place_balanced(struct ctx *x, size_t k, uint32_t scope, uint32_t want, uint32_t *where)
{
	const struct instance *in = &x->order[k];
	const struct topo_group *grp = &x->req->groups[in->group];
	const struct topo_domain *dom = x->t->domains;
	size_t level = grp->constraint.level, n = x->t->domain_count;
	struct bal b = { x, NULL, NULL, 0, slice_size_of(grp) };
	struct list cands, lower;
	uint32_t *scratch;
	struct plan p;
	int ok = 0;

	if (!grp->balanced || grp->constraint.mode != TOPO_MODE_PREFERRED || grp->exclusive ||
	    grp->inner_count || grp->together || grp->min_slices || want != in->pods || level < 1 ||
	    level >= x->t->node_level || dom[scope].level > level - 1 || want % b.size)
		return 0;
	b.slice_level = grp->slice_level ? grp->slice_level : x->t->node_level - 1;
	if (b.slice_level < level)
		return 0;
	b.kp = malloc(n * sizeof(*b.kp));
	b.ks = malloc(n * sizeof(*b.ks));
	cands.v = malloc(n * sizeof(*cands.v));
	lower.v = malloc(n * sizeof(*lower.v));
	scratch = malloc(2 * n * sizeof(*scratch));
	if (b.kp && b.ks && cands.v && lower.v && scratch &&
	    best_block(&b, scope, level, want / b.size, &cands, &lower, scratch, &p))
		ok = apply(&b, &p, level, in->group, want / b.size, &cands, &lower, scratch, where);
	free(b.kp);
	free(b.ks);
	free(cands.v);
	free(lower.v);
	free(scratch);
	return ok;
}
