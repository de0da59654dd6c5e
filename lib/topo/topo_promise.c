/*
 * topo_promise: room promised to a placed JobSet's pods not bound yet
 * (topo_promise.h).
 */
#include "topo_promise.h"

#include <stdio.h>
#include <string.h>

#include "topo_objects.h"
#include "topo_place.h"

struct take {
	const struct topo_cluster *cluster;
	struct topo_node *nodes;
	const struct topo_jobset *jobset;
	topo_promise_bound_fn bound;
	void *arg;
	struct topo_promise *out;
	topo_promise_stranded_fn stranded;
	void *stranded_arg;
};

/* Adds one pod of `shape` to node `n`. */
static void take_room(const struct topo_cluster *c, struct topo_node *n, const struct topo_shape *shape)
{
	int pods = topo_resource_index(c, "pods");

	for (size_t r = 0; r < c->resource_count; r++)
		n->used[r] = topo_amount_add(n->used[r], shape->requests[r]);
	if (pods >= 0)
		n->used[pods] += 1;
}

/* How many pods of `shape` fit on `n` now, 0 with *why when it admits none. */
static uint32_t fits(const struct topo_cluster *c, const struct topo_node *n, const struct topo_shape *shape,
		     const char **why)
{
	int64_t free_room[TOPO_RESOURCES_MAX];
	uint32_t k;

	for (size_t r = 0; r < c->resource_count; r++)
		free_room[r] = n->allocatable[r] - n->used[r];
	k = topo_node_fit(c, n, free_room, shape, why);
	if (!k && !*why)
		*why = "full";
	return k;
}

/* "2 nodes: 1 is not Ready, 1 full": the domain's nodes by why they take no
 * pod of `shape` (the domain holds nodes lo..hi that match `selector`). */
static void describe(const struct take *t, const char *selector, size_t lo, size_t hi,
		     const struct topo_shape *shape)
{
	const char *reasons[8];
	unsigned counts[8], total = 0;
	size_t kinds = 0, at;
	char *out = t->out->why;
	size_t size = sizeof(t->out->why);

	for (size_t n = lo; n <= hi && n < t->cluster->node_count; n++) {
		const char *why = NULL;
		size_t k;

		if (!topo_record_selector_matches(selector, &t->nodes[n]))
			continue;
		total++;
		if (fits(t->cluster, &t->nodes[n], shape, &why))
			why = "with room";
		for (k = 0; k < kinds && reasons[k] != why; k++)
			;
		if (k == kinds && kinds < 8) {
			reasons[kinds] = why;
			counts[kinds++] = 0;
		}
		if (k < kinds)
			counts[k]++;
	}
	at = (size_t)snprintf(out, size, "%u node%s", total, total == 1 ? "" : "s");
	for (size_t k = 0; k < kinds && at < size; k++)
		at += (size_t)snprintf(out + at, size - at, "%s %u %s", k ? "," : ":", counts[k], reasons[k]);
}

static int take_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to, const char *selector)
{
	struct take *t = arg;
	const struct topo_cluster *c = t->cluster;
	const struct topo_jobset_group *group = NULL;
	struct topo_shape shape;
	size_t lo = 0, hi = 0, cursor;
	int matched = 0; /* lo..hi holds the domain's nodes; none: the domain is gone */
	uint64_t first = from;

	for (size_t g = 0; g < t->jobset->group_count && !group; g++)
		if (strcmp(t->jobset->groups[g].name, rj) == 0)
			group = &t->jobset->groups[g];
	if (!group || !*selector)
		return 0;
	/* Bound pods promise nothing; a run bound to its end needs no scan of
	 * the nodes (most runs, once a placed JobSet's pods are bound). */
	while (first <= to && t->bound(t->arg, rj, job, (uint32_t)first))
		first++;
	if (first > to)
		return 0;
	/* A resource no node tracks takes no room: the rest of the shape still does. */
	topo_jobset_shape(group, c, &shape, NULL);
	for (size_t n = 0; n < c->node_count; n++)
		if (topo_record_selector_matches(selector, &t->nodes[n])) {
			lo = matched ? lo : n;
			hi = n;
			matched = 1;
		}
	/* First fit: the pods of one run have one shape, and room only shrinks,
	 * so a node that took no more stays behind the cursor. */
	cursor = lo;
	for (uint64_t i = first; i <= to; i++) {
		struct topo_node *fit = NULL;
		const char *why = NULL;

		if (i > first && t->bound(t->arg, rj, job, (uint32_t)i))
			continue;
		for (; matched && cursor <= hi && cursor < c->node_count; cursor++)
			if (topo_record_selector_matches(selector, &t->nodes[cursor]) &&
			    fits(c, &t->nodes[cursor], &shape, &why)) {
				fit = &t->nodes[cursor];
				break;
			}
		t->out->reserved++;
		if (fit) {
			take_room(c, fit, &shape);
			continue;
		}
		if (t->stranded)
			t->stranded(t->stranded_arg, rj, job, (uint32_t)i);
		if (!t->out->stranded++) {
			snprintf(t->out->domain, sizeof(t->out->domain), "%s", selector);
			t->out->gone = !matched;
			if (matched)
				describe(t, selector, lo, hi, &shape);
			else
				snprintf(t->out->why, sizeof(t->out->why), "no node left");
		}
		if (matched) /* the promise still counts, on the domain's first node */
			take_room(c, &t->nodes[lo], &shape);
	}
	return 0;
}

void topo_promise_take_each(const struct topo_cluster *cluster, struct topo_node *nodes,
			    const struct topo_jobset *jobset, const struct topo_record *record,
			    topo_promise_bound_fn bound, void *arg, topo_promise_stranded_fn stranded,
			    void *stranded_arg, struct topo_promise *out)
{
	struct take t = { cluster, nodes, jobset, bound, arg, out, stranded, stranded_arg };

	memset(out, 0, sizeof(*out));
	topo_record_foreach(record, take_run, &t);
}

void topo_promise_take(const struct topo_cluster *cluster, struct topo_node *nodes,
		       const struct topo_jobset *jobset, const struct topo_record *record,
		       topo_promise_bound_fn bound, void *arg, struct topo_promise *out)
{
	topo_promise_take_each(cluster, nodes, jobset, record, bound, arg, NULL, NULL, out);
}
