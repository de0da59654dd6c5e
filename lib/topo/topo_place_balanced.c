/*
 * topo_place_balanced: Kueue's balanced placement (TASBalancedPlacement,
 * pkg/cache/scheduler/tas_balanced_placement.go) for one instance with a
 * preferred level L, or for a Kueue group of it and a leader of one pod
 * (podset-group-name), step by step as Kueue's code does it:
 *
 *   1. for each domain B of level L-1 (the root when L is 1), with the
 *      counts of its subtree: the greedy count of domains one level below L
 *      (L itself when L is the slice level) that hold the slices, the
 *      leader's domains first, then the largest; T = slices / that count,
 *      at most the last domains' slices (with and without the leader);
 *   2. prune B's subtree below T (the children of the level-L domains with
 *      fewer than T slices, then the level-L domains; a domain too small
 *      for T with the leader loses its leader room), and count the level-L
 *      domains the greedy takes (with a leader, once more with the lower T
 *      that leaves the leader its room when the first does not fit); B is
 *      the best when T is higher, or equal with fewer level-L domains;
 *   3. when L is above the slice level, the optimal set of level-L domains
 *      (as few as the greedy takes, the leader in one; then the least
 *      capacity, the most slices, the most even children (entropy), tree
 *      order), then their children;
 *   4. the optimal set of those (as few; the least capacity; tree order);
 *      each takes T slices, the rest goes to them in order (the leader's
 *      first, then the most slices) up to what each holds;
 *   5. Kueue's descent from there to its leaves: at each level the children
 *      of each domain sorted by Kueue's BestFit (most slices, then fewest
 *      pods: below the slice level, where no domain counts slices, the
 *      smallest first), taken whole in order, the last one the tightest
 *      that holds the rest (the leader's first when there is one).
 *
 * Steps 1 to 4 are here; Kueue's BestFit (the counts over a list, step 5's
 * descent, the takes and the fallback with a leader) is in
 * topo_place_bestfit.c, through the private topo_place_bal.h.
 *
 * Anything Kueue's code does not place this way (no B holds the request, a
 * step finds no set) returns 0, and the caller places the instance as
 * without the option; Kueue falls back to BestFit the same way, and for a
 * group with a leader that fallback is Kueue's BestFit too (its level
 * search and descent), since muster's own placement puts the leader after
 * the workers, not with them.
 *
 * "Domains" here are Kueue's: the user levels; node leaves are not domains
 * (a hostname level is, one node each). Inside a Kueue leaf with several
 * nodes the pods go by the usual descent (the leader first, on the node
 * that leaves the workers the most room).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place_bal.h"

/* The DP over sets stops (falls back) beyond this many states, or states
 * visited. */
#define BALANCED_STATES_MAX (1u << 22)
#define BALANCED_WORK_MAX (1u << 26)

int bal_is_domain(const struct ctx *x, uint32_t d)
{
	return x->t->domains[d].node == TOPO_NONE;
}

/* Whether d has domain children (else it is a Kueue leaf). */
int bal_has_domain_children(const struct ctx *x, uint32_t d)
{
	const struct topo_domain *dom = x->t->domains;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (bal_is_domain(x, c))
			return 1;
	return 0;
}

/* Appends d's Kueue children (not node leaves) to out (room for them). */
void bal_children(const struct ctx *x, uint32_t d, struct list *out)
{
	const struct topo_domain *dom = x->t->domains;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (bal_is_domain(x, c))
			out->v[out->n++] = c;
}

static void clear(struct bal *b, uint32_t d)
{
	uint32_t end = b->x->t->domains[d].end;

	memset(b->kp + d, 0, (end - d) * sizeof(*b->kp));
	memset(b->kpl + d, 0, (end - d) * sizeof(*b->kpl));
	memset(b->ks + d, 0, (end - d) * sizeof(*b->ks));
	memset(b->ksl + d, 0, (end - d) * sizeof(*b->ksl));
	memset(b->lc + d, 0, end - d);
}

/* Kueue's clearLeaderCapacity. */
static void clear_leader(struct bal *b, uint32_t d)
{
	uint32_t end = b->x->t->domains[d].end;

	memset(b->kpl + d, 0, (end - d) * sizeof(*b->kpl));
	memset(b->ksl + d, 0, (end - d) * sizeof(*b->ksl));
	memset(b->lc + d, 0, end - d);
}

/* Kueue's fillInCountsHelper: counts from the leaves up; a child at a
 * level of an inner slice layer counts its pods in whole inner slices. */
static void recount(struct bal *b, uint32_t d)
{
	const struct topo_domain *dom = b->x->t->domains;
	int64_t pods = 0, slices = 0, min_pods = INT64_MAX, min_slices = INT64_MAX, with_slices = 0;
	int any = 0, contributor = 0;
	uint8_t leaders = 0;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end) {
		int64_t inner = b->inner_off ? 0 : b->inner[dom[c].level], cp, cpl;

		if (!bal_is_domain(b->x, c))
			continue;
		recount(b, c);
		cp = inner > 0 ? b->kp[c] / inner * inner : b->kp[c];
		cpl = inner > 0 ? b->kpl[c] / inner * inner : b->kpl[c];
		any = 1;
		pods += cp;
		slices += b->ks[c];
		if (!b->leaders || b->lc[c] > 0) {
			contributor = 1;
			if (cp - cpl < min_pods)
				min_pods = cp - cpl;
			if (b->ks[c] - b->ksl[c] < min_slices)
				min_slices = b->ks[c] - b->ksl[c];
		}
		if (b->lc[c] > leaders)
			leaders = b->lc[c];
	}
	if (!any) { /* a Kueue leaf: its pods stand */
		if (dom[d].level == b->slice_level) {
			b->ks[d] = b->kp[d] / b->size;
			b->ksl[d] = b->kpl[d] / b->size;
		}
		return;
	}
	b->kp[d] = pods;
	b->kpl[d] = contributor ? pods - min_pods : 0;
	with_slices = contributor ? slices - min_slices : 0;
	b->lc[d] = leaders;
	if (dom[d].level == b->slice_level) {
		slices = b->kp[d] / b->size;
		with_slices = b->kpl[d] / b->size;
	}
	b->ks[d] = slices;
	b->ksl[d] = with_slices;
}

/* Kueue's fillLeafCounts for a leaf's nodes: the workers' pods, and with a
 * leader whether one fits and the workers' pods beside it. */
static void leaf_counts(struct bal *b, uint32_t d)
{
	struct ctx *x = b->x;
	const struct topo_domain *dom = x->t->domains;
	const struct topo_group *lead = &x->req->groups[b->leader_group];
	int64_t best = -1;

	b->kp[d] = (int64_t)x->pods[d];
	b->kpl[d] = b->kp[d];
	b->lc[d] = 0;
	b->leader_node[d] = TOPO_NONE;
	if (!b->leaders)
		return;
	for (uint32_t c = d + 1; c < dom[d].end; c++) {
		uint32_t n = dom[c].node;
		const int64_t *free;
		int64_t left[TOPO_RESOURCES_MAX], beside;

		/* Kueue looks for the leader among the nodes the workers may use. */
		if (n == TOPO_NONE || x->closed[n] ||
		    !x->eligible[(size_t)b->leader_group * x->c->node_count + n] ||
		    !x->eligible[(size_t)b->group * x->c->node_count + n])
			continue;
		free = x->free + (size_t)n * x->resources;
		if (topo_place_fit_free(x->c, free, &lead->shape) < 1)
			continue;
		for (size_t r = 0; r < x->resources; r++)
			left[r] = free[r] - topo_place_request(x, &lead->shape, r);
		beside = x->pods[c]
				 ? (int64_t)topo_place_fit_free(x->c, left, &x->req->groups[b->group].shape)
				 : 0;
		beside = b->kp[d] - (int64_t)x->pods[c] + beside;
		if (beside > best) {
			best = beside;
			b->leader_node[d] = n;
		}
	}
	if (best >= 0) {
		b->lc[d] = 1;
		b->kpl[d] = best;
	} else {
		b->kpl[d] = 0;
	}
}

int bal_alloc(struct bal *b, size_t n)
{
	b->kp = malloc(n * sizeof(*b->kp));
	b->kpl = malloc(n * sizeof(*b->kpl));
	b->ks = malloc(n * sizeof(*b->ks));
	b->ksl = malloc(n * sizeof(*b->ksl));
	b->lc = malloc(n);
	b->leader_node = malloc(n * sizeof(*b->leader_node));
	return b->kp && b->kpl && b->ks && b->ksl && b->lc && b->leader_node ? 0 : -1;
}

void bal_release(struct bal *b)
{
	free(b->kp);
	free(b->kpl);
	free(b->ks);
	free(b->ksl);
	free(b->lc);
	free(b->leader_node);
}

/* Kueue's counts of d's subtree as fillInCounts leaves them (what Kueue's
 * clone of the subtree starts from); -1 where the tree is not Kueue's (a
 * domain holding both nodes and domains). */
int bal_reset(struct bal *b, uint32_t d)
{
	const struct ctx *x = b->x;
	const struct topo_domain *dom = x->t->domains;

	clear(b, d);
	for (uint32_t e = d; e < dom[d].end; e++) {
		int nodes = 0, domains = 0;

		if (!bal_is_domain(x, e))
			continue;
		for (uint32_t c = e + 1; c < dom[e].end; c = dom[c].end)
			*(bal_is_domain(x, c) ? &domains : &nodes) += 1;
		if (nodes && domains)
			return -1;
		if (!domains)
			leaf_counts(b, e);
	}
	recount(b, d);
	return 0;
}

static int tree_order(uint32_t a, uint32_t c)
{
	return a < c ? -1 : a > c;
}

/* The preferred node affinity score first, highest first, as Kueue sorts
 * with TASRespectNodeAffinityPreferred on (step 1b follows it); 0 on a tie. */
static int by_affinity(const struct bal *b, uint32_t a, uint32_t c)
{
	const uint64_t *score = b->x->score;

	return score[a] == score[c] ? 0 : score[a] < score[c] ? 1 : -1;
}

/* Kueue's sortedDomains (BestFit): affinity, slices descending, pods
 * ascending, tree order. */
int bal_by_best_fit(const struct bal *b, uint32_t a, uint32_t c)
{
	int o = by_affinity(b, a, c);

	if (o)
		return o;
	if (b->ks[a] != b->ks[c])
		return b->ks[a] < b->ks[c] ? 1 : -1;
	if (b->kp[a] != b->kp[c])
		return b->kp[a] < b->kp[c] ? -1 : 1;
	return tree_order(a, c);
}

/* Kueue's sortedDomainsWithLeader: leaders descending, affinity, slices
 * with the leader descending, pods with the leader ascending, tree order. */
int bal_by_best_fit_leader(const struct bal *b, uint32_t a, uint32_t c)
{
	int o;

	if (b->lc[a] != b->lc[c])
		return b->lc[a] < b->lc[c] ? 1 : -1;
	if ((o = by_affinity(b, a, c)) != 0)
		return o;
	if (b->ksl[a] != b->ksl[c])
		return b->ksl[a] < b->ksl[c] ? 1 : -1;
	if (b->kpl[a] != b->kpl[c])
		return b->kpl[a] < b->kpl[c] ? -1 : 1;
	return tree_order(a, c);
}

static double entropy(const struct bal *b, uint32_t d)
{
	const struct topo_domain *dom = b->x->t->domains;
	int64_t total = 0;
	double e = 0.0;

	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (bal_is_domain(b->x, c))
			total += b->kp[c];
	if (total <= 0)
		return 0.0;
	for (uint32_t c = d + 1; c < dom[d].end; c = dom[c].end)
		if (bal_is_domain(b->x, c) && b->kp[c] > 0) {
			double p = (double)b->kp[c] / (double)total;

			e += -p * log2(p);
		}
	return e;
}

/* Kueue's compareDomainCapacityAndEntropy: leaders descending, slices with
 * the leader descending, the children's entropy descending, tree order. */
static int by_capacity_entropy(const struct bal *b, uint32_t a, uint32_t c)
{
	double ea, ec;

	if (b->lc[a] != b->lc[c])
		return b->lc[a] < b->lc[c] ? 1 : -1;
	if (b->ksl[a] != b->ksl[c])
		return b->ksl[a] < b->ksl[c] ? 1 : -1;
	ea = entropy(b, a);
	ec = entropy(b, c);
	if (ea != ec)
		return ea < ec ? 1 : -1;
	return tree_order(a, c);
}

static int by_index(const struct bal *b, uint32_t a, uint32_t c)
{
	(void)b;
	return tree_order(a, c);
}

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
void bal_sort(const struct bal *b, struct list *l, order_fn cmp)
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

struct greedy_result {
	uint64_t count;
	uint32_t last, last_leader;
};

/* Kueue's evaluateGreedyAssignment: whether `slices` and the leader fit in
 * l's domains, the leader's first (most slices with it), then the largest;
 * in how many, the last ones taken. Sorts a copy (scratch, room for l->n). */
static int greedy(struct bal *b, const struct list *l, int64_t slices, uint32_t *scratch,
		  struct greedy_result *r)
{
	struct list s = { scratch, l->n };
	int64_t left = slices, leaders = b->leaders;
	size_t i = 0;

	memcpy(scratch, l->v, l->n * sizeof(*scratch));
	*r = (struct greedy_result){ 0, TOPO_NONE, TOPO_NONE };
	if (leaders > 0) {
		bal_sort(b, &s, bal_by_best_fit_leader);
		for (; leaders > 0 && i < s.n && b->lc[s.v[i]] > 0; i++) {
			r->count++;
			r->last_leader = s.v[i];
			leaders -= b->lc[s.v[i]];
			left -= b->ksl[s.v[i]];
		}
		s.v += i;
		s.n -= i;
	}
	bal_sort(b, &s, bal_by_best_fit);
	if (leaders > 0)
		return 0;
	for (i = 0; left > 0 && i < s.n && b->ks[s.v[i]] > 0; i++) {
		r->count++;
		r->last = s.v[i];
		left -= b->ks[s.v[i]];
	}
	return left <= 0;
}

/* Kueue's pruneDomainNodeBelowThreshold. */
static void prune_one(struct bal *b, uint32_t d, int64_t t)
{
	if (b->ks[d] < t) {
		clear(b, d);
		return;
	}
	if (b->leaders && b->lc[d] > 0 && b->ksl[d] < t)
		clear_leader(b, d);
}

/* Kueue's pruneDomainsBelowThreshold. */
static void prune(struct bal *b, const struct list *cands, int64_t t)
{
	const struct topo_domain *dom = b->x->t->domains;

	for (size_t i = 0; i < cands->n; i++)
		for (uint32_t c = cands->v[i] + 1; c < dom[cands->v[i]].end; c = dom[c].end)
			if (bal_is_domain(b->x, c))
				prune_one(b, c, t);
	b->inner_off = 1;
	for (size_t i = 0; i < cands->n; i++) {
		recount(b, cands->v[i]);
		prune_one(b, cands->v[i], t);
	}
	b->inner_off = 0;
}

/* A DP state: `lead` leaders and `left` pods still to place after the set
 * ending in `d`, whose previous state (one domain fewer) was (plead, prev);
 * seq orders the states made in one step as Kueue makes them. */
struct state {
	int64_t left, prev;
	int32_t lead, plead;
	uint32_t d;
	uint32_t seq;
};

struct row {
	struct state *v;
	size_t n, cap;
};

static int key_cmp(int32_t la, int64_t a, int32_t lc, int64_t c)
{
	if (la != lc)
		return la < lc ? -1 : 1;
	return a < c ? -1 : a > c;
}

static int by_key_seq(const void *pa, const void *pc)
{
	const struct state *a = pa, *c = pc;
	int k = key_cmp(a->lead, a->left, c->lead, c->left);

	return k ? k : (a->seq < c->seq ? -1 : a->seq > c->seq);
}

static int64_t find_state(const struct row *r, int32_t lead, int64_t left)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (key_cmp(r->v[mid].lead, r->v[mid].left, lead, left) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && !key_cmp(r->v[lo].lead, r->v[lo].left, lead, left) ? (int64_t)lo : -1;
}

/* Merges `add` (sorted by key, first of each key kept) into r, states
 * already there kept (Kueue's "alreadyThere"). */
static int merge(struct row *r, struct state *add, size_t n, struct state *tmp)
{
	size_t i = 0, j = 0, k = 0;

	if (n > 1)
		qsort(add, n, sizeof(*add), by_key_seq);
	while (i < r->n || j < n) {
		if (j > 0 && j < n && !key_cmp(add[j].lead, add[j].left, add[j - 1].lead, add[j - 1].left)) {
			j++;
			continue;
		}
		if (j == n ||
		    (i < r->n && key_cmp(r->v[i].lead, r->v[i].left, add[j].lead, add[j].left) <= 0)) {
			if (j < n && !key_cmp(r->v[i].lead, r->v[i].left, add[j].lead, add[j].left))
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

/* Kueue's selectOptimalDomainSetToFit: as few of l's domains as the greedy
 * takes, holding the leader and slices x size pods with the least left
 * over; the first such set in the order (l is sorted by it: Kueue's
 * capacity and entropy, else tree order). Fills out (room for l->n) in
 * that order; 0, or -1 when no set (or too many states). */
static int optimal_set(struct bal *b, struct list *l, int64_t slices, int by_entropy, uint32_t *scratch,
		       struct list *out)
{
	uint64_t m, states = 0, work = 0;
	int64_t pods = slices * b->size;
	struct greedy_result g;
	struct row *rows = NULL;
	struct state *add = NULL, *tmp = NULL;
	size_t add_cap = 0;
	int rc = -1;

	out->n = 0;
	if (!greedy(b, l, slices, scratch, &g) || g.count == 0)
		return -1;
	m = g.count;
	bal_sort(b, l, by_entropy ? by_capacity_entropy : by_index);
	rows = calloc(m + 1, sizeof(*rows));
	if (!rows)
		return -1;
	rows[0].v = malloc(sizeof(struct state));
	if (!rows[0].v)
		goto done;
	rows[0].v[0] = (struct state){ pods, 0, (int32_t)b->leaders, 0, TOPO_NONE, 0 };
	rows[0].n = rows[0].cap = 1;
	for (size_t di = 0; di < l->n; di++) {
		uint32_t d = l->v[di];

		if (b->ks[d] <= 0 && !(b->leaders && b->lc[d] > 0))
			continue;
		for (uint64_t i = m; i > 0; i--) {
			const struct row *before = &rows[i - 1];
			size_t n = 0;
			uint32_t seq = 0;

			if (2 * before->n + rows[i].n > add_cap) {
				size_t cap = 2 * before->n + rows[i].n;
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
			for (size_t s = 0; s < before->n; s++) {
				const struct state *st = &before->v[s];

				if (st->lead <= 0 && st->left <= 0)
					continue;
				if (st->lead > 0 && b->lc[d] > 0)
					add[n++] = (struct state){ st->left - b->kpl[d],
								   st->left,
								   st->lead - b->lc[d],
								   st->lead,
								   d,
								   seq++ };
				if (b->ks[d] > 0)
					add[n++] = (struct state){
						st->left - b->kp[d], st->left, st->lead, st->lead, d, seq++
					};
			}
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

		for (size_t s = 0; s < r->n && r->v[s].lead <= 0; s++)
			if (r->v[s].lead == 0 && r->v[s].left <= 0)
				at = (int64_t)s; /* the largest left that is <= 0 */
		if (at < 0)
			goto done;
		out->n = m;
		for (uint64_t i = m; i > 0; i--) {
			const struct state *st = &rows[i].v[at];

			out->v[i - 1] = st->d;
			at = find_state(&rows[i - 1], st->plead, st->prev);
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

struct plan {
	uint32_t block; /* the level L-1 domain */
	int64_t threshold;
	uint64_t level_count;
};

/* Step 1 and 2 for one domain B: its threshold, or 0. */
static int64_t block_threshold(struct bal *b, uint32_t blk, size_t level, int64_t slices, struct list *cands,
			       struct list *lower, uint32_t *scratch, int64_t best, uint64_t *level_count)
{
	struct greedy_result g;
	int64_t t, reserved;
	int fits;

	if (bal_reset(b, blk))
		return 0;
	cands->n = lower->n = 0;
	bal_children(b->x, blk, cands);
	if (level < b->slice_level)
		for (size_t i = 0; i < cands->n; i++)
			bal_children(b->x, cands->v[i], lower);
	else
		memcpy(lower->v, cands->v, (lower->n = cands->n) * sizeof(*lower->v));
	if (!greedy(b, lower, slices, scratch, &g) || g.count == 0)
		return 0;
	t = slices / (int64_t)g.count;
	if (g.last_leader != TOPO_NONE && b->ksl[g.last_leader] < t)
		t = b->ksl[g.last_leader];
	if (g.last != TOPO_NONE && b->ks[g.last] < t)
		t = b->ks[g.last];
	reserved = t;
	if (b->leaders && g.last != TOPO_NONE && b->ksl[g.last] < t)
		reserved = b->ksl[g.last];
	if (t < best)
		return 0;
	prune(b, cands, t);
	fits = greedy(b, cands, slices, scratch, &g);
	if (!fits && reserved < t) {
		/* Again with the lower threshold that leaves the leader its room. */
		if (reserved <= 0 || reserved < best)
			return 0;
		t = reserved;
		bal_reset(b, blk);
		prune(b, cands, t);
		fits = greedy(b, cands, slices, scratch, &g);
	}
	if (!fits)
		return 0;
	*level_count = g.count;
	return t;
}

/* Steps 1 and 2 over the level L-1 domains inside scope. */
static int best_block(struct bal *b, uint32_t scope, size_t level, int64_t slices, struct list *cands,
		      struct list *lower, uint32_t *scratch, struct plan *best)
{
	const struct topo_domain *dom = b->x->t->domains;

	*best = (struct plan){ TOPO_NONE, 0, 0 };
	for (uint32_t blk = scope; blk < dom[scope].end; blk++) {
		uint64_t level_count = 0;
		int64_t t;

		if (dom[blk].level != level - 1 || !bal_is_domain(b->x, blk))
			continue;
		t = block_threshold(b, blk, level, slices, cands, lower, scratch, best->threshold,
				    &level_count);
		if (t <= 0)
			continue;
		if (t > best->threshold || (t == best->threshold && level_count < best->level_count))
			*best = (struct plan){ blk, t, level_count };
	}
	return best->block != TOPO_NONE && best->threshold > 0;
}

/* Steps 3 and 4: the level-L (or L+1) domains with their counts, in fit. */
static int choose_domains(struct bal *b, const struct plan *p, size_t level, int64_t slices,
			  struct list *cands, struct list *fit, uint32_t *scratch, uint32_t *scratch2)
{
	struct ctx *x = b->x;
	struct list chosen = { scratch, 0 };
	int64_t extra, leaders = b->leaders;

	bal_reset(b, p->block);
	cands->n = 0;
	bal_children(x, p->block, cands);
	prune(b, cands, p->threshold);
	if (level < b->slice_level) {
		if (optimal_set(b, cands, slices, 1, scratch2, &chosen))
			return -1;
		fit->n = 0;
		for (size_t i = 0; i < chosen.n; i++)
			bal_children(x, chosen.v[i], fit);
	} else {
		memcpy(fit->v, cands->v, (fit->n = cands->n) * sizeof(*fit->v));
	}
	chosen.n = 0;
	if (optimal_set(b, fit, slices, 0, scratch2, &chosen))
		return -1;
	if (slices < (int64_t)chosen.n * p->threshold)
		return -1;
	bal_sort(b, &chosen, bal_by_best_fit_leader);
	extra = slices - (int64_t)chosen.n * p->threshold;
	for (size_t i = 0; i < chosen.n; i++) {
		uint32_t d = chosen.v[i];
		int64_t take = 0;

		if (leaders > 0) {
			take = b->ksl[d] - p->threshold < extra ? b->ksl[d] - p->threshold : extra;
			b->lc[d] = 1;
			leaders--;
		} else if (extra > 0) {
			take = b->ks[d] - p->threshold < extra ? b->ks[d] - p->threshold : extra;
			b->lc[d] = 0;
		} else {
			b->lc[d] = 0;
		}
		b->ks[d] = b->ksl[d] = p->threshold + take;
		b->kp[d] = b->ks[d] * b->size;
		b->kpl[d] = b->kp[d] - b->lc[d];
		extra -= take;
	}
	if (extra > 0 || leaders > 0)
		return -1;
	memcpy(fit->v, chosen.v, (fit->n = chosen.n) * sizeof(*fit->v));
	return 0;
}

/* The leader instance of instance k's group (k+1, one pod, the only other
 * member of the unit, with no slices, minimum or exclusivity of its own,
 * which Kueue's leader has not and this placement does not look at), or 0
 * when k is not such a group's workers. */
static int leader_of(const struct ctx *x, size_t k, uint32_t *group)
{
	const struct instance *in = &x->order[k];
	const struct topo_group *lead;

	if (k + 1 >= x->instance_count || x->order[k + 1].leader != k || x->order[k + 1].pods != 1 ||
	    in->unit_pods != (uint64_t)in->pods + 1)
		return 0;
	lead = &x->req->groups[x->order[k + 1].group];
	if (!lead->balanced || lead->slice_level || lead->slice_size > 1 || lead->inner_count ||
	    lead->min_slices || lead->exclusive)
		return 0;
	*group = x->order[k + 1].group;
	return 1;
}

int topo_place_balanced(struct ctx *x, size_t k, uint32_t scope, uint32_t want, uint32_t *where)
{
	const struct instance *in = &x->order[k];
	const struct topo_group *grp = &x->req->groups[in->group];
	const struct topo_domain *dom = x->t->domains;
	size_t level = grp->constraint.level, n = x->t->domain_count, mark = x->log_used,
	       leader_start = SIZE_MAX;
	struct bal b = { .x = x, .size = slice_size_of(grp), .group = in->group, .leader_group = in->group };
	struct list cands, fit, out;
	uint32_t *scratch, top = TOPO_NONE, leader_leaf = TOPO_NONE;
	struct plan p;
	int ok = 0, placed = 0;

	if (!grp->balanced || grp->constraint.mode != TOPO_MODE_PREFERRED || grp->exclusive ||
	    grp->min_slices || want != in->pods || level < 1 || level >= x->t->node_level ||
	    dom[scope].level > level - 1 || want % b.size)
		return 0;
	if (grp->together) {
		/* Kueue slices a group in one layer only (TASGroupedPodSetSlicing). */
		if (grp->inner_count || in->leader != k || !leader_of(x, k, &b.leader_group))
			return 0;
		b.leaders = 1;
	}
	b.slice_level = grp->slice_level ? grp->slice_level : x->t->node_level - 1;
	if (b.slice_level < level)
		return 0;
	/* Kueue's buildSliceSizeAtLevel: each inner layer's size on every level
	 * from just below the layer above down to its own. */
	for (size_t i = 0, from = b.slice_level + 1; i < grp->inner_count; from = grp->inner[i++].level + 1)
		for (size_t l = from; l <= grp->inner[i].level && l < sizeof(b.inner) / sizeof(b.inner[0]);
		     l++)
			b.inner[l] = grp->inner[i].size;
	cands.v = malloc(n * sizeof(*cands.v));
	fit.v = malloc(n * sizeof(*fit.v));
	scratch = malloc(2 * n * sizeof(*scratch));
	if (bal_alloc(&b, n) || !cands.v || !fit.v || !scratch)
		goto done;
	out = (struct list){ cands.v, 0 };
	if (best_block(&b, scope, level, want / b.size, &cands, &fit, scratch, &p) &&
	    !choose_domains(&b, &p, level, want / b.size, &cands, &fit, scratch, scratch + n) &&
	    !bal_update_counts(&b, &fit, want, b.leaders, b.size, 1, &out)) {
		/* Kueue's pass over the chosen domains (phase 2b's first step),
		 * then the descent. */
		memcpy(fit.v, out.v, (fit.n = out.n) * sizeof(*fit.v));
		top = bal_top_of(&b, &fit);
		ok = !bal_descend_kueue(&b, &fit, scratch, scratch + n);
	}
	if (!ok && b.leaders)
		ok = !bal_best_fit_with_leader(&b, scope, level, want, &fit, scratch, scratch + n, &top);
	if (ok && bal_take_all(&b, in->group, &fit, &leader_leaf, &leader_start)) {
		if (leader_start != SIZE_MAX)
			topo_place_undo(x, b.leader_group, leader_start);
		topo_place_undo(x, in->group, mark);
		ok = 0;
	}
	if (ok) {
		*where = top;
		placed = 1;
		if (b.leaders) {
			x->start[k + 1] = leader_start;
			x->domain[k + 1] = leader_leaf;
			x->placed[k + 1] = 1;
			placed = 2;
		}
	}
done:
	bal_release(&b);
	free(cands.v);
	free(fit.v);
	free(scratch);
	return placed;
}
