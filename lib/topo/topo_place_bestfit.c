/*
 * topo_place_bestfit: Kueue's BestFit, as
 * pkg/cache/scheduler/tas_flavor_snapshot.go does it: the counts taken over
 * a list of domains in order, the descent to Kueue's leaves, the takes on
 * the nodes, and the level search then the descent for one PodSet (with a
 * leader or without). Balanced placement falls back to it
 * (topo_place_bal.h), and the order choice (topo_place_order.c) scores
 * Kueue's own placement of the whole request beside muster's, so that a
 * placement Kueue's beats on every measure is not the one kept.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place_bal.h"

/* Kueue's findBestFitDomainBy: the first domain of l (from `from`) with
 * the fewest `count` that still holds `need` (and the leaders), else the
 * first; only among the domains of the first one's preferred affinity
 * score (its topAffinityTierDomains, with TASRespectNodeAffinityPreferred
 * on, as step 1b follows it). */
static size_t best_fit_at(const struct bal *b, const struct list *l, size_t from, int64_t need,
			  int64_t leaders, const int64_t *count)
{
	size_t best = from;
	int64_t best_count = INT64_MAX;
	uint64_t tier = from < l->n ? b->x->score[l->v[from]] : 0;

	for (size_t i = from; i < l->n && b->x->score[l->v[i]] == tier; i++) {
		uint32_t d = l->v[i];

		if (b->lc[d] < leaders)
			continue;
		if (count[d] >= need && count[d] < best_count) {
			best = i;
			best_count = count[d];
		}
	}
	return best;
}

/* Kueue's prioritizeLeaderDomain: a leader domain whose leader costs no
 * more than the slack moved to the front. */
static void prioritize_leader(const struct bal *b, struct list *l, int64_t count, int64_t leaders,
			      int64_t size, int slices)
{
	int64_t need = slices ? count / size : count, have = 0;

	if (leaders == 0 || l->n < 2)
		return;
	for (size_t i = 0; i < l->n; i++)
		have += slices ? b->ks[l->v[i]] : b->kp[l->v[i]];
	for (size_t i = 0; i < l->n; i++) {
		uint32_t d = l->v[i];
		int64_t penalty = slices ? b->ks[d] - b->ksl[d] : b->kp[d] - b->kpl[d];

		if (b->lc[d] < leaders || have - penalty < need)
			continue;
		memmove(l->v + 1, l->v, i * sizeof(*l->v));
		l->v[0] = d;
		return;
	}
}

/* Kueue's updateCountsToMinimumGeneric (BestFit): `count` pods (in slices
 * of `size` when `slices`) and `leaders` over l's domains in l's order,
 * each taken whole, the last the tightest that holds the rest; sets kp,
 * ks and lc of the domains taken and appends them to out. 0, or -1 when
 * they do not hold it (Kueue logs "unexpected remainingCount"). */
int bal_update_counts(struct bal *b, struct list *l, int64_t count, int64_t leaders, int64_t size, int slices,
		      struct list *out)
{
	int64_t left = slices ? count / size : count, lead = leaders;
	int64_t unit = slices ? size : 1;
	int64_t *with = slices ? b->ksl : b->kpl, *plain = slices ? b->ks : b->kp;

	prioritize_leader(b, l, count, leaders, size, slices);
	for (size_t i = 0; i < l->n; i++) {
		uint32_t d = l->v[i];

		if (lead > 0) {
			if (with[d] >= left && b->lc[d] >= lead)
				d = l->v[best_fit_at(b, l, i, left, lead, with)];
			out->v[out->n++] = d;
			if (with[d] >= left && b->lc[d] >= lead) {
				plain[d] = left;
				b->lc[d] = (uint8_t)lead;
				b->kp[d] = left * unit;
				return 0;
			}
			if (with[d] > left)
				with[d] = left;
			if (b->lc[d] > lead)
				b->lc[d] = (uint8_t)lead;
			plain[d] = with[d];
			b->kp[d] = with[d] * unit;
			lead -= b->lc[d];
			left -= with[d];
			continue;
		}
		if (plain[d] >= left)
			d = l->v[best_fit_at(b, l, i, left, 0, plain)];
		b->lc[d] = 0;
		out->v[out->n++] = d;
		if (plain[d] >= left) {
			b->kp[d] = left * unit;
			plain[d] = left;
			return 0;
		}
		if (slices)
			b->kp[d] = plain[d] * size;
		left -= plain[d];
	}
	return -1;
}

/* Kueue's descent for balanced placement: from the domains of `l` (their
 * counts set) down to Kueue's leaves, each domain's pods over its children
 * (phase 2b). Leaves the leaves in l; -1 when a step does not hold them. */
int bal_descend_kueue(struct bal *b, struct list *l, uint32_t *scratch, uint32_t *scratch2)
{
	struct ctx *x = b->x;

	while (l->n && bal_has_domain_children(x, l->v[0])) {
		struct list next = { scratch2, 0 };
		size_t level = x->t->domains[l->v[0]].level;
		/* Below the slice level, single pods unless an inner layer's
		 * size holds on the children's level (Kueue's sliceSizeAtLevel). */
		int64_t size = level < b->slice_level	 ? b->size
			       : b->inner[level + 1] > 0 ? b->inner[level + 1]
							 : 1;

		for (size_t i = 0; i < l->n; i++) {
			struct list kids = { scratch, 0 };
			uint32_t d = l->v[i];

			bal_children(x, d, &kids);
			bal_sort(b, &kids, bal_by_best_fit);
			if (size > 1)
				for (size_t c = 0; c < kids.n; c++) {
					b->ks[kids.v[c]] = b->kp[kids.v[c]] / size;
					b->ksl[kids.v[c]] = b->kpl[kids.v[c]] / size;
				}
			if (bal_update_counts(b, &kids, b->kp[d], b->lc[d], size, size > 1, &next))
				return -1;
		}
		memcpy(l->v, next.v, next.n * sizeof(*l->v));
		l->n = next.n;
	}
	return 0;
}

/* The workers' pods of each leaf of l, then the leader: the takes. The
 * leader goes on the node found for it (with the workers' pods of that
 * leaf then counted anew beside it); *leader_leaf gets its leaf and
 * *leader_start its first log entry. 0, or -1 when a leaf's nodes do not
 * hold its pods (nothing undone: the caller undoes). */
int bal_take_all(struct bal *b, uint32_t g, const struct list *l, uint32_t *leader_leaf, size_t *leader_start)
{
	struct ctx *x = b->x;
	const struct topo_domain *dom = x->t->domains;
	uint32_t leader_at = TOPO_NONE;

	for (size_t i = 0; i < l->n; i++) {
		uint32_t d = l->v[i];
		int64_t need = b->kp[d];

		if (b->lc[d] > 0 && leader_at == TOPO_NONE)
			leader_at = d;
		if (need <= 0)
			continue;
		if (b->lc[d] > 0 && b->leader_node[d] != TOPO_NONE) {
			/* Beside the leader's node: the node's room without it. */
			for (uint32_t c = d + 1; c < dom[d].end && need > 0; c++) {
				uint32_t n = dom[c].node, fit;
				int64_t left[TOPO_RESOURCES_MAX];
				const int64_t *free;

				if (n == TOPO_NONE || !x->pods[c])
					continue;
				free = x->free + (size_t)n * x->resources;
				memcpy(left, free, x->resources * sizeof(*left));
				if (n == b->leader_node[d])
					for (size_t r = 0; r < x->resources; r++)
						left[r] -= topo_place_request(
							x, &x->req->groups[b->leader_group].shape, r);
				fit = topo_place_fit_free(x->c, left, &x->req->groups[g].shape);
				if (fit > need)
					fit = (uint32_t)need;
				if (fit)
					topo_place_take(x, g, n, fit);
				need -= fit;
			}
			if (need > 0)
				return -1;
			continue;
		}
		if ((int64_t)x->usable[d] < need)
			return -1;
		topo_place_descend(x, g, d, (uint64_t)need);
	}
	*leader_start = x->log_used;
	if (b->leaders) {
		if (leader_at == TOPO_NONE || b->leader_node[leader_at] == TOPO_NONE)
			return -1;
		topo_place_take(x, b->leader_group, b->leader_node[leader_at], 1);
		*leader_leaf = leader_at;
	}
	return 0;
}

/* The lowest domain holding the domains of l that get pods. */
uint32_t bal_top_of(const struct bal *b, const struct list *l)
{
	uint32_t top = TOPO_NONE;

	for (size_t i = 0; i < l->n; i++)
		if (b->kp[l->v[i]] > 0 || b->lc[l->v[i]] > 0)
			top = topo_place_common(b->x, top, l->v[i]);
	return top;
}

/* Kueue's findLevelWithFitDomains for BestFit (the fallback of a group with
 * a leader, and Kueue's candidate): from `level` up, the level's domains in
 * scope, the tightest that holds it all, else (at the top) several; into
 * fit. At a required level it never climbs: when the first domain in
 * Kueue's order (by preferred affinity first) does not hold it, the first
 * other one that does, best fit from there. */
static int fit_level(struct bal *b, uint32_t scope, size_t level, int64_t count, struct list *fit,
		     uint32_t *scratch, size_t *found)
{
	const struct topo_domain *dom = b->x->t->domains;
	int64_t slices = count / b->size, left = slices, lead = b->leaders;
	struct list all = { scratch, 0 };
	size_t i = 0, top;

	for (;;) {
		all.n = 0;
		for (uint32_t d = scope; d < dom[scope].end; d++)
			if (dom[d].level == level && bal_is_domain(b->x, d))
				all.v[all.n++] = d;
		if (!all.n)
			return -1;
		bal_sort(b, &all, bal_by_best_fit_leader);
		top = 0;
		if (b->ksl[all.v[0]] >= slices && b->lc[all.v[0]] >= b->leaders)
			top = best_fit_at(b, &all, 0, slices, b->leaders, b->ksl);
		for (size_t j = 1; b->required && j < all.n &&
				   (b->ksl[all.v[top]] < slices || b->lc[all.v[top]] < b->leaders);
		     j++)
			if (b->ksl[all.v[j]] >= slices && b->lc[all.v[j]] >= b->leaders)
				top = best_fit_at(b, &all, j, slices, b->leaders, b->ksl);
		if (b->ksl[all.v[top]] >= slices && b->lc[all.v[top]] >= b->leaders) {
			fit->v[0] = all.v[top];
			fit->n = 1;
			*found = level;
			return 0;
		}
		if (b->required)
			return -1;
		if (level <= (dom[scope].level > 1 ? (size_t)dom[scope].level : 1))
			break;
		level--;
	}
	prioritize_leader(b, &all, count, b->leaders, b->size, 1);
	fit->n = 0;
	for (; lead > 0 && i < all.n && b->lc[all.v[i]] > 0; i++) {
		size_t at = i;

		if (b->ksl[all.v[i]] >= left)
			at = best_fit_at(b, &all, i, left, lead, b->ksl);
		fit->v[fit->n++] = all.v[at];
		lead -= b->lc[all.v[at]];
		left -= b->ksl[all.v[at]];
	}
	if (lead > 0)
		return -1;
	{
		struct list rest = { all.v + i, all.n - i };

		bal_sort(b, &rest, bal_by_best_fit);
		for (size_t j = 0; left > 0 && j < rest.n; j++) {
			size_t at = j;

			if (b->ks[rest.v[j]] >= left)
				at = best_fit_at(b, &rest, j, left, 0, b->ks);
			fit->v[fit->n++] = rest.v[at];
			left -= b->ks[rest.v[at]];
		}
	}
	if (left > 0)
		return -1;
	*found = level;
	return 0;
}

/* Kueue's BestFit for a group with a leader: the level search, then the
 * descent (above the slice level over all domains of a level at once). */
int bal_best_fit_with_leader(struct bal *b, uint32_t scope, size_t level, int64_t count, struct list *fit,
			     uint32_t *scratch, uint32_t *scratch2, uint32_t *top)
{
	struct ctx *x = b->x;
	size_t at;

	if (bal_reset(b, scope) || fit_level(b, scope, level, count, fit, scratch, &at))
		return -1;
	{
		struct list out = { scratch, 0 };

		if (bal_update_counts(b, fit, count, b->leaders, b->size, 1, &out))
			return -1;
		memcpy(fit->v, out.v, (fit->n = out.n) * sizeof(*fit->v));
		*top = bal_top_of(b, fit);
	}
	for (; at < b->slice_level && fit->n && bal_has_domain_children(x, fit->v[0]); at++) {
		struct list lower = { scratch2, 0 }, out = { scratch, 0 };

		for (size_t i = 0; i < fit->n; i++)
			bal_children(x, fit->v[i], &lower);
		bal_sort(b, &lower, bal_by_best_fit);
		if (bal_update_counts(b, &lower, count, b->leaders, b->size, 1, &out))
			return -1;
		memcpy(fit->v, out.v, (fit->n = out.n) * sizeof(*fit->v));
	}
	return bal_descend_kueue(b, fit, scratch, scratch2);
}

int topo_place_kueue_allowed(const struct ctx *x)
{
	const struct topo_request *req = x->req;

	if (req->held || x->elastic || x->instance_count == 0 ||
	    (uint64_t)x->instance_count * x->t->domain_count > TOPO_KUEUE_PASS_WORK)
		return 0;
	for (size_t g = 0; g < req->group_count; g++) {
		const struct topo_group *grp = &req->groups[g];

		if (grp->together || grp->exclusive || grp->inner_count || grp->min_slices || grp->balanced ||
		    grp->outside_whole || grp->constraint.level < 1 ||
		    grp->constraint.level >= x->t->node_level ||
		    (grp->constraint.mode != TOPO_MODE_REQUIRED &&
		     grp->constraint.mode != TOPO_MODE_PREFERRED))
			return 0;
	}
	return 1;
}

/* Undoes instances `placed` .. 0 of the pass, last first. */
static void kueue_undo(struct ctx *x, size_t placed)
{
	for (size_t k = placed + 1; k-- > 0;)
		topo_place_undo(x, x->order[k].group, x->start[k]);
}

/* Kueue's pass over every instance inside domain `scope` (0: the cluster;
 * an instance whose level lies above it is held to the scope itself). 1
 * with the takes logged, *all the lowest domain holding every instance's
 * domain and *spans the lowest holding every pod; else 0, nothing taken. */
static int kueue_in(struct ctx *x, uint32_t scope, uint32_t *all, uint32_t *spans)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_request *req = x->req;
	size_t n = x->t->domain_count, k = 0;
	struct bal b = { .x = x };
	struct list fit = { malloc(n * sizeof(uint32_t)), 0 };
	uint32_t *scratch = malloc(2 * n * sizeof(uint32_t)), counted = 0;
	int ok = 0;

	*all = *spans = TOPO_NONE;
	if (bal_alloc(&b, n) || !fit.v || !scratch)
		goto done;
	for (; k < x->instance_count; k++) {
		const struct instance *in = &x->order[k];
		const struct topo_group *grp = &req->groups[in->group];
		size_t level = grp->constraint.level, leader_start;
		size_t search = level > dom[scope].level ? level : dom[scope].level;
		uint32_t top = TOPO_NONE, leader_leaf;

		x->start[k] = x->log_used;
		b.group = b.leader_group = in->group;
		b.size = slice_size_of(grp);
		b.required = grp->constraint.mode == TOPO_MODE_REQUIRED;
		b.slice_level = grp->slice_level ? grp->slice_level : x->t->node_level - 1;
		/* The scope once per group; after an instance of the same
		 * group, only under the domain its pods went to. */
		if (k > 0 && x->order[k - 1].group == in->group)
			topo_place_compute_under(x, in->group, counted);
		else
			topo_place_compute(x, in->group, scope);
		if (bal_best_fit_with_leader(&b, scope, search, in->pods, &fit, scratch, scratch + n, &top) ||
		    top == TOPO_NONE ||
		    (grp->constraint.mode == TOPO_MODE_REQUIRED && dom[top].level < level) ||
		    bal_take_all(&b, in->group, &fit, &leader_leaf, &leader_start))
			break;
		x->domain[k] = grp->constraint.mode == TOPO_MODE_REQUIRED
				       ? topo_place_ancestor_at(x, top, level)
				       : top;
		x->placed[k] = in->pods;
		x->sliced[k] = 0;
		counted = top;
		*all = topo_place_common(x, *all, x->domain[k]);
		for (size_t e = x->start[k]; e < x->log_used; e++)
			if (x->log[e].count)
				*spans = topo_place_common(x, *spans, x->t->node_domain[x->log[e].node]);
	}
	if (k < x->instance_count) {
		kueue_undo(x, k);
		goto done;
	}
	ok = 1;
done:
	bal_release(&b);
	free(fit.v);
	free(scratch);
	return ok;
}

int topo_place_kueue(struct ctx *x, uint32_t *whole)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_request *req = x->req;
	uint32_t all, spans;

	*whole = 0;
	if (!kueue_in(x, 0, &all, &spans))
		return 0;
	if (req->whole.mode == TOPO_MODE_REQUIRED) {
		/* Kueue cannot ask for it: its placement holds when the pods
		 * happen to lie in one domain of the level. */
		if (spans == TOPO_NONE || !topo_place_inside_level(x, spans, req->whole.level)) {
			kueue_undo(x, x->instance_count - 1);
			return 0;
		}
		/* The highest domain holding them still inside the level (past a
		 * skipped tier, not the ancestor above it). */
		for (*whole = spans; *whole != 0 && dom[dom[*whole].parent].level >= req->whole.level;)
			*whole = dom[*whole].parent;
	} else if (req->whole.mode == TOPO_MODE_PREFERRED) {
		*whole = all;
	}
	return 1;
}

/* A candidate for the JobSet's domain and its free pods of the request's
 * shapes. */
struct room_of {
	uint64_t room;
	uint32_t d;
};

/* qsort's order of candidates: fewer free pods, then tree order. */
static int room_before(const void *pa, const void *pb)
{
	const struct room_of *a = pa, *b = pb;

	if (a->room != b->room)
		return a->room < b->room ? -1 : 1;
	return a->d < b->d ? -1 : a->d > b->d;
}

int topo_place_kueue_whole(struct ctx *x, uint32_t *whole)
{
	const struct topo_domain *dom = x->t->domains;
	const struct topo_request *req = x->req;
	size_t n = x->t->domain_count, top = req->whole.mode == TOPO_MODE_REQUIRED ? req->whole.level : 0;
	uint64_t *room = malloc(n * sizeof(uint64_t)), total = 0;
	struct room_of *by_room = malloc(n * sizeof(*by_room));
	size_t work = 0;
	int ok = 0;

	*whole = 0;
	if (!room || !by_room || req->whole.mode == TOPO_MODE_NONE)
		goto done;
	for (size_t g = 0; g < req->group_count; g++)
		total += (uint64_t)req->groups[g].pods * req->groups[g].replicas;
	topo_place_free_pods(x); /* x->pods, which the passes below reuse */
	memcpy(room, x->pods, n * sizeof(*room));
	for (size_t level = req->whole.level + 1; !ok && level-- > top;) {
		size_t m = 0;

		for (uint32_t d = 0; d < n; d++)
			if (dom[d].level == level && room[d] >= total)
				by_room[m++] = (struct room_of){ room[d], d };
		qsort(by_room, m, sizeof(*by_room), room_before); /* a level may have thousands */
		for (size_t i = 0; i < m && !ok; i++) {
			uint32_t all, spans, t = by_room[i].d;
			size_t cost = x->instance_count * (size_t)(dom[t].end - t);

			if (work + cost > TOPO_KUEUE_PASS_WORK)
				break;
			work += cost;
			if (kueue_in(x, t, &all, &spans)) {
				ok = 1;
				*whole = t;
			}
		}
	}
done:
	free(room);
	free(by_room);
	return ok;
}
