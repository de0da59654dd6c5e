/*
 * topo_place: the placement core's entry (contract in topo_place.h,
 * reasoning in docs/topology.md): the request checked, the context made (the
 * free resources per node, which nodes each group may use), the searches run
 * in turn, the placement built from the log of what each instance took. A
 * node's fit for a pod shape is here too. The searches themselves are not:
 * the domain search (topo_place_domain.c), the node-level search
 * (topo_place_node.c) and the choice between orders (topo_place_order.c),
 * around topo_place_int.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_place.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "topo_place_int.h"

/* A refusal's sentence, by the one cause module (lib/base/cause.h). */
char *topo_place_format(const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	text = cause_vformat(fmt, ap);
	va_end(ap);
	return text;
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

uint32_t topo_node_preference(const struct topo_node *node, const struct topo_shape *shape)
{
	uint32_t score = 0;

	for (size_t i = 0; i < shape->preferred_count; i++) {
		const struct topo_preference *p = &shape->preferred[i];

		if (p->weight > 0 && p->term.requirement_count &&
		    topo_requirements_match(node, p->term.requirements, p->term.requirement_count))
			score += (uint32_t)p->weight;
	}
	return score;
}

const char *topo_place_exclusion(const struct topo_node *node, const struct topo_shape *shape)
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

uint32_t topo_place_fit_free(const struct topo_cluster *cluster, const int64_t *free,
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
	const char *why = topo_place_exclusion(node, shape);

	if (reason)
		*reason = why;
	return why ? 0 : topo_place_fit_free(cluster, free, shape);
}

static char *check_group(const struct topo_tree *t, const struct topo_request *req, size_t g)
{
	const struct topo_group *grp = &req->groups[g];
	const char *name = grp->name ? grp->name : "";
	uint32_t size = slice_size_of(grp);
	enum topo_mode mode = grp->constraint.mode;

	if (grp->pods == 0 || grp->pods > TOPO_PODS_MAX)
		return topo_place_format("request: replicated job %s has %u pods per job, 1 to %u supported",
					 name, grp->pods, TOPO_PODS_MAX);
	if (mode > TOPO_MODE_UNCONSTRAINED)
		return topo_place_format("request: replicated job %s: unknown constraint mode %d", name,
					 (int)mode);
	if ((mode == TOPO_MODE_REQUIRED || mode == TOPO_MODE_PREFERRED) &&
	    (grp->constraint.level < 1 || grp->constraint.level >= t->node_level))
		return topo_place_format(
			"request: replicated job %s: level %u is not a level of the topology", name,
			grp->constraint.level);
	if (grp->exclusive && (mode != TOPO_MODE_REQUIRED || grp->together || grp->job_pods))
		return topo_place_format(
			"request: replicated job %s: an exclusive job needs a required level of its own "
			"(not co-placed, one child Job per instance)",
			name);
	if (grp->job_pods && grp->pods % grp->job_pods)
		return topo_place_format(
			"request: replicated job %s: %u pods per job do not divide the %u pods placed as one",
			name, grp->job_pods, grp->pods);
	if (grp->pods % size)
		return topo_place_format("request: replicated job %s: slice size %u does not divide %u pods",
					 name, size, grp->pods);
	if (grp->slice_size > 1 && grp->slice_level != 0) {
		size_t lowest =
			mode == TOPO_MODE_REQUIRED || mode == TOPO_MODE_PREFERRED ? grp->constraint.level : 1;

		if (grp->slice_level < lowest || grp->slice_level > t->node_level)
			return topo_place_format(
				"request: replicated job %s: the slice level must be at or below the job's level",
				name);
	}
	if (grp->inner_count > TOPO_SLICE_LAYERS_MAX - 1)
		return topo_place_format("request: replicated job %s: at most %d slice layers", name,
					 TOPO_SLICE_LAYERS_MAX);
	for (size_t i = 0; i < grp->inner_count; i++) {
		uint32_t outer_size = i ? grp->inner[i - 1].size : grp->slice_size;
		uint8_t outer_level = i ? grp->inner[i - 1].level : grp->slice_level;

		if (grp->slice_size < 2 || grp->slice_level == 0 || grp->min_slices)
			return topo_place_format(
				"request: replicated job %s: inner slices need outer slices at a level "
				"(and no minimum)",
				name);
		if (grp->inner[i].size < 1 || outer_size % grp->inner[i].size)
			return topo_place_format(
				"request: replicated job %s: slice layer %zu: size %u does not divide the "
				"layer above's %u",
				name, i + 2, grp->inner[i].size, outer_size);
		if (grp->inner[i].level <= outer_level || grp->inner[i].level > t->node_level)
			return topo_place_format(
				"request: replicated job %s: slice layer %zu must be at a lower level than "
				"the layer above",
				name, i + 2);
	}
	if (grp->min_slices > grp->pods / size)
		return topo_place_format("request: replicated job %s: at least %u slices asked, it has %u",
					 name, grp->min_slices, grp->pods / size);
	if (grp->together) {
		if (mode != TOPO_MODE_REQUIRED && mode != TOPO_MODE_PREFERRED)
			return topo_place_format(
				"request: replicated job %s: co-placed jobs need a required or preferred level",
				name);
		for (size_t h = 0; h < req->group_count; h++) {
			const struct topo_group *other = &req->groups[h];

			if (h == g || other->together != grp->together)
				continue;
			if (other->replicas != grp->replicas || other->constraint.mode != mode ||
			    other->constraint.level != grp->constraint.level)
				return topo_place_format(
					"request: co-placed replicated jobs %s and %s need equal replicas and "
					"an equal topology constraint",
					name, other->name ? other->name : "");
		}
	}
	return NULL;
}

/* An exclusive job holds a domain of its level alone; a JobSet-wide
 * required level at or below that level puts every Job it holds inside one
 * such domain. Both hold only when the JobSet's constraint holds that one
 * Job alone (R3: one Job, exclusive per block, the JobSet in one rack); with
 * two or more Jobs no cluster can hold both, so the request is refused as
 * such, whatever the capacity. */
static char *check_exclusive_whole(const struct topo_tree *t, const struct topo_request *req)
{
	size_t covered = 0;

	if (req->whole.mode != TOPO_MODE_REQUIRED)
		return NULL;
	for (size_t g = 0; g < req->group_count; g++)
		if (!req->groups[g].outside_whole)
			covered += req->groups[g].replicas;
	for (size_t g = 0; g < req->group_count && covered > 1; g++) {
		const struct topo_group *grp = &req->groups[g];

		if (grp->exclusive && grp->replicas > 0 && !grp->outside_whole &&
		    req->whole.level >= grp->constraint.level)
			return topo_place_format(
				"request: replicated job %s is exclusive per %s (each Job alone in its "
				"%s), yet the JobSet's required %s puts all %zu of its Jobs in one %s: no "
				"placement holds both",
				grp->name ? grp->name : "", t->level_names[grp->constraint.level],
				t->level_names[grp->constraint.level], t->level_names[req->whole.level],
				covered, t->level_names[req->whole.level]);
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
		return topo_place_format("request: between 1 and %d replicated jobs are needed",
					 TOPO_GROUPS_MAX);
	if (w->mode != TOPO_MODE_NONE && w->mode != TOPO_MODE_REQUIRED && w->mode != TOPO_MODE_PREFERRED)
		return topo_place_format(
			"request: the JobSet's constraint must be required, preferred or none");
	if (w->mode != TOPO_MODE_NONE && (w->level < 1 || w->level >= t->node_level))
		return topo_place_format(
			"request: the JobSet's topology level %u is not a level of the topology", w->level);
	for (size_t g = 0, covered = 0; g < req->group_count; g++) {
		const struct topo_group *grp = &req->groups[g];
		char *bad = check_group(t, req, g);

		covered += !grp->outside_whole;
		if (w->mode != TOPO_MODE_NONE && g + 1 == req->group_count && !covered)
			return topo_place_format(
				"request: the JobSet's constraint holds none of its replicated jobs");
		if (grp->outside_whole && grp->together)
			return topo_place_format(
				"request: replicated job %s: a co-placed job is held by the JobSet's "
				"constraint",
				grp->name ? grp->name : "");

		if (bad)
			return bad;
		*instances += grp->replicas;
		*total_pods += (uint64_t)grp->replicas * grp->pods;
		if (*instances > TOPO_INSTANCES_MAX || *total_pods > TOPO_PODS_MAX)
			return topo_place_format("request: at most %u jobs and %u pods supported",
						 TOPO_INSTANCES_MAX, TOPO_PODS_MAX);
	}
	return check_exclusive_whole(t, req);
}

static void ctx_free(struct ctx *x)
{
	free(x->free);
	free(x->eligible);
	free(x->pods);
	free(x->usable);
	free(x->room);
	free(x->prefer);
	free(x->score);
	free(x->scratch);
	free(x->log);
	free(x->order);
	free(x->start);
	free(x->domain);
	free(x->placed);
	free(x->sliced);
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

/* Insertion sort of takes into rank order (few per slice or instance). */
static void sort_takes(const struct topo_tree *t, struct take *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct take cur = v[i];
		size_t j = i;

		while (j > 0 && rank_before(t, &cur, &v[j - 1])) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = cur;
	}
}

/* The pods whose takes are put in rank order together when an instance
 * went slice by slice: a Job of whole slices, or a slice of whole Jobs;
 * 0 (one rank order for the instance) when its pods form one Job or Jobs
 * and slices cut across each other. */
static uint32_t slice_unit(const struct topo_group *grp)
{
	uint32_t size = slice_size_of(grp);

	if (!grp->job_pods || size <= 1)
		return 0;
	if (grp->job_pods % size == 0)
		return grp->job_pods;
	return size % grp->job_pods == 0 ? size : 0;
}

/* An instance placed slice by slice (descend_slices): the slices of `size`
 * pods in the rank order of their first take, so that each keeps
 * consecutive ranks (a slice that is a Job stays in its domain), and the
 * takes of every `unit` pods (a Job of several slices, or a slice) in rank
 * order, so that a Job still holds one run per lowest domain. 0: the takes
 * do not split into whole slices, or no memory; the caller sorts them as
 * one. */
static int sort_slices(const struct topo_tree *t, struct take *v, size_t n, uint32_t size, uint32_t unit)
{
	size_t segs = 0, *seg = malloc((n + 1) * sizeof(*seg)), *idx = malloc((n + 1) * sizeof(*idx));
	struct take *copy = malloc((n + 1) * sizeof(*copy));
	uint64_t sum = 0;
	size_t out = 0;

	if (!seg || !idx || !copy || size <= 1 || !unit)
		goto fail;
	seg[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].count == 0)
			goto fail; /* a closed node: not a slice's take */
		if ((sum % size) + v[i].count > size)
			goto fail;
		sum += v[i].count;
		if (sum % size == 0)
			seg[++segs] = i + 1;
	}
	if (seg[segs] != n)
		goto fail;
	for (size_t s = 0; s < segs; s++) {
		sort_takes(t, v + seg[s], seg[s + 1] - seg[s]);
		idx[s] = s;
	}
	for (size_t i = 1; i < segs; i++) {
		size_t cur = idx[i], j = i;

		while (j > 0 && rank_before(t, &v[seg[cur]], &v[seg[idx[j - 1]]])) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = cur;
	}
	for (size_t s = 0; s < segs; s++)
		for (size_t i = seg[idx[s]]; i < seg[idx[s] + 1]; i++)
			copy[out++] = v[i];
	memcpy(v, copy, n * sizeof(*v));
	/* Each unit in rank order (its bounds are slice bounds: unit is a
	 * multiple of size). */
	sum = 0;
	for (size_t i = 0, from = 0; i < n; i++) {
		sum += v[i].count;
		if (sum % unit == 0) {
			sort_takes(t, v + from, i + 1 - from);
			from = i + 1;
		}
	}
	free(seg);
	free(idx);
	free(copy);
	return 1;
fail:
	free(seg);
	free(idx);
	free(copy);
	return 0;
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

struct topo_placement *topo_place_build_output(struct ctx *x, uint32_t whole)
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
	/* Sort each instance's takes into rank order, slice by slice when it
	 * was placed so. */
	for (size_t k = 0; k < x->instance_count; k++) {
		size_t from = x->start[k], to = k + 1 < x->instance_count ? x->start[k + 1] : x->log_used;
		const struct topo_group *grp = &x->req->groups[x->order[k].group];

		position[first_instance[x->order[k].group] + x->order[k].job] = k;
		if (!x->sliced[k] ||
		    !sort_slices(t, x->log + from, to - from, slice_size_of(grp), slice_unit(grp)))
			sort_takes(t, x->log + from, to - from);
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

int topo_place(const struct topo_tree *t, const struct topo_request *req, struct topo_placement **out,
	       char **cause)
{
	struct ctx x = { 0 };
	uint64_t total, covered;
	size_t instances;
	uint32_t whole = 0;
	int one_shape = 1, elastic = 0, ok = 0, ret = -1;
	size_t cut = 0; /* the steps of a node-level search cut at its budget */
	const struct topo_cluster *c;

	*out = NULL;
	*cause = NULL;
	if (!t || !req) {
		*cause = topo_place_format("request: no tree or request");
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
	x.exact_budget = req->exact_budget ? req->exact_budget : TOPO_EXACT_BUDGET_DEFAULT;
	x.instance_count = instances;
	x.free = malloc((c->node_count * x.resources + 1) * sizeof(int64_t));
	x.eligible = malloc(req->group_count * c->node_count + 1);
	x.pods = malloc(t->domain_count * sizeof(uint64_t));
	x.usable = malloc(t->domain_count * sizeof(uint64_t));
	x.room = malloc(t->domain_count * sizeof(uint64_t));
	x.score = calloc(t->domain_count + 1, sizeof(uint64_t));
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
	x.sliced = calloc(instances + 1, 1);
	if (!x.free || !x.eligible || !x.pods || !x.usable || !x.room || !x.score || !x.scratch || !x.log ||
	    !x.order || !x.start || !x.domain || !x.placed || !x.sliced || !x.taken || !x.closed ||
	    !x.occupied) {
		*cause = topo_place_format("placement: out of memory");
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
		/* Preferred node affinity, per group and node (NULL when no group
		 * has any: every score 0). */
		if (req->groups[g].shape.preferred_count && !x.prefer) {
			x.prefer = calloc(req->group_count * c->node_count + 1, sizeof(uint32_t));
			if (!x.prefer) {
				*cause = topo_place_format("placement: out of memory");
				goto out;
			}
		}
		for (size_t n = 0; n < c->node_count; n++) {
			x.eligible[g * c->node_count + n] =
				topo_place_exclusion(&c->nodes[n], &req->groups[g].shape) == NULL;
			if (x.prefer && x.eligible[g * c->node_count + n])
				x.prefer[g * c->node_count + n] =
					topo_node_preference(&c->nodes[n], &req->groups[g].shape);
		}
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
	x.scarce = topo_place_scarcest_resource(&x);
	x.room_ties = 1;
	topo_place_make_order(&x);
	/* The greedy descent and the domain search first (fast, and the
	 * placement they find is the tightest); when they give up, the
	 * node-level search, complete within its budget. Every slice of every
	 * instance is looked for first; only when none of that exists (the
	 * search finished) or it was cut, fewer slices (min_slices). */
	ok = topo_place_run_pass(&x, total, one_shape, &whole);
	if (!ok) {
		ok = topo_place_exact(&x, &whole);
		cut = x.exact_cut ? x.exact_steps : 0;
	}
	if (!ok && elastic) {
		/* Nowhere for every partition: place fewer, at least min_slices each. */
		x.elastic = 1;
		ok = topo_place_run_pass(&x, total, 0, &whole);
		if (!ok) {
			ok = topo_place_exact(&x, &whole);
			if (x.exact_cut && x.exact_steps > cut)
				cut = x.exact_steps;
		}
	}
	if (!ok) {
		char prefix[64] = "";

		/* A finished node-level search is a proof: nothing fits. A cut one
		 * is not, and the refusal says so. */
		if (cut)
			snprintf(prefix, sizeof(prefix), "search cut after %zu steps: ", cut);
		if (req->whole.mode == TOPO_MODE_REQUIRED)
			*cause = topo_place_format(
				"%s%s: no one domain holds the whole JobSet (%llu pods; at most %llu of "
				"them fit in any one %s by free capacity alone)%s%s",
				prefix, t->level_names[req->whole.level], (unsigned long long)covered,
				(unsigned long long)topo_place_whole_fit(&x, req->whole.level),
				t->level_names[req->whole.level], x.first_cause ? "; " : "",
				x.first_cause ? x.first_cause : "");
		else
			*cause = topo_place_format("%s%s", prefix,
						   x.first_cause ? x.first_cause : "no placement found");
		goto out;
	}
	*out = topo_place_build_output(&x, whole);
	if (!*out) {
		*cause = topo_place_format("placement: out of memory");
		goto out;
	}
	if (!x.elastic && (topo_place_second_order_allowed(&x) || topo_place_kueue_allowed(&x) ||
			   topo_place_preferred_search_allowed(&x)))
		*out = topo_place_best_of_orders(&x, total, one_shape, *out);
	ret = 0;
out:
	ctx_free(&x);
	return ret;
}
