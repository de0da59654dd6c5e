/*
 * topo_move: some Jobs of a placed JobSet placed again alone (topo_move.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_move.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "topo_place.h"

struct held_ctx {
	const struct topo_tree *tree;
	const struct topo_request *request; /* the whole JobSet's */
	const struct topo_move_job *jobs;
	size_t count;
	const uint32_t *leaf_of; /* per cluster node: its leaf domain, or TOPO_NONE */
	uint8_t *held;
};

static int is_moved(const struct topo_move_job *jobs, size_t count, const char *rj, uint32_t job)
{
	for (size_t i = 0; i < count; i++)
		if (jobs[i].job_index == job && strcmp(jobs[i].replicated_job, rj) == 0)
			return 1;
	return 0;
}

static const struct topo_group *group_of(const struct topo_request *r, const char *name)
{
	for (size_t g = 0; g < r->group_count; g++)
		if (strcmp(r->groups[g].name, name) == 0)
			return &r->groups[g];
	return NULL;
}

/* A staying Job's run: its nodes hold pods of the JobSet; an exclusive
 * Job's whole domain is closed. */
static int hold_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to, const char *selector)
{
	struct held_ctx *h = arg;
	const struct topo_cluster *c = h->tree->cluster;
	const struct topo_domain *dom = h->tree->domains;
	const struct topo_group *g = group_of(h->request, rj);

	(void)from;
	(void)to;
	if (!*selector || is_moved(h->jobs, h->count, rj, job))
		return 0;
	for (size_t n = 0; n < c->node_count; n++) {
		uint32_t d = h->leaf_of[n];

		if (d == TOPO_NONE || !topo_record_selector_matches(selector, &c->nodes[n]))
			continue;
		if (h->held[n] != TOPO_HELD_CLOSED)
			h->held[n] = TOPO_HELD_PODS;
		if (!g || !g->exclusive)
			continue;
		while (dom[d].parent != TOPO_NONE && dom[d].level > g->constraint.level)
			d = dom[d].parent;
		for (uint32_t k = d; k < dom[d].end; k++)
			if (dom[k].node != TOPO_NONE)
				h->held[dom[k].node] = TOPO_HELD_CLOSED;
	}
	return 0;
}

/* Why group g's Jobs cannot move alone, or NULL. */
static const char *tied(const struct topo_request *r, const struct topo_group *g)
{
	if (r->whole.mode != TOPO_MODE_NONE && !g->outside_whole)
		return "the JobSet's own topology request holds all its Jobs in one domain";
	/* Kueue's PodSet (every replica as one): a Job moves alone only when
	 * nothing PodSet-wide holds it, no level for the whole PodSet, and its
	 * slices never cross Jobs (the slice size divides a Job's pods). */
	if (g->job_pods &&
	    ((g->constraint.mode != TOPO_MODE_NONE && g->constraint.mode != TOPO_MODE_UNCONSTRAINED) ||
	     (g->slice_size > 1 && g->job_pods % g->slice_size != 0)))
		return "Kueue places the replicas of a replicated job as one PodSet (a level for the whole PodSet, "
		       "or slices across its Jobs)";
	if (g->together)
		return "it is co-placed with other replicated jobs (podset-group-name)";
	return NULL;
}

int topo_move(const struct topo_jobset *jobset, const struct topo_tree *tree,
	      const struct topo_record *record, const struct topo_move_job *jobs, size_t count,
	      char **record_out, char *where, size_t where_size, char **cause)
{
	struct topo_group groups[TOPO_GROUPS_MAX], sub_groups[TOPO_GROUPS_MAX];
	uint32_t *maps[TOPO_GROUPS_MAX] = { 0 }, *leaf_of = NULL;
	struct topo_request request, sub = { 0 };
	struct topo_placement *pl = NULL;
	const struct topo_cluster *c = tree->cluster;
	uint8_t *held = NULL;
	uint64_t jobs_total = 0;
	int rc = -1;

	*record_out = NULL;
	*cause = NULL;
	if (where_size)
		where[0] = '\0';
	if (!count)
		return cause_fail(cause, "move: no Job named");
	if (topo_jobset_request(jobset, tree, groups, &request, cause))
		return -1;
	for (size_t g = 0; g < request.group_count; g++) {
		const char *why = tied(&request, &groups[g]);

		for (size_t i = 0; why && i < count; i++)
			if (strcmp(jobs[i].replicated_job, groups[g].name) == 0) {
				cause_fail(cause, "replicated job %s cannot move one Job alone: %s",
					   groups[g].name, why);
				return TOPO_MOVE_TIED;
			}
		jobs_total += jobset->groups[g].replicas;
	}
	if (count >= jobs_total) {
		cause_fail(cause, "every Job of the JobSet lost room");
		return TOPO_MOVE_TIED;
	}
	/* The request of the moved Jobs alone: each group with as many
	 * instances as it has Jobs moved, mapped back to their job indexes. */
	for (size_t g = 0; g < request.group_count; g++) {
		uint32_t moved = 0;

		for (size_t i = 0; i < count; i++)
			moved += strcmp(jobs[i].replicated_job, groups[g].name) == 0;
		if (!moved)
			continue;
		sub_groups[sub.group_count] = groups[g];
		sub_groups[sub.group_count].replicas = moved;
		sub_groups[sub.group_count].outside_whole = 0;
		if (groups[g].job_pods) { /* a PodSet's Jobs, each one instance here */
			sub_groups[sub.group_count].pods = groups[g].job_pods;
			sub_groups[sub.group_count].job_pods = 0;
		}
		if (!(maps[sub.group_count] = malloc(moved * sizeof(uint32_t)))) {
			cause_fail(cause, "move: out of memory");
			goto out;
		}
		moved = 0;
		for (size_t i = 0; i < count; i++)
			if (strcmp(jobs[i].replicated_job, groups[g].name) == 0) {
				if (jobs[i].job_index >= jobset->groups[g].replicas) {
					cause_fail(cause, "move: %s has no job %u", groups[g].name,
						   jobs[i].job_index);
					goto out;
				}
				maps[sub.group_count][moved++] = jobs[i].job_index;
			}
		sub.group_count++;
	}
	{
		size_t named = 0;

		for (size_t g = 0; g < sub.group_count; g++)
			named += sub_groups[g].replicas;
		if (named != count) {
			cause_fail(cause, "move: a Job named is of no replicated job of the JobSet");
			goto out;
		}
	}
	/* What the staying Jobs hold. */
	held = calloc(c->node_count + 1, 1);
	leaf_of = malloc((c->node_count + 1) * sizeof(uint32_t));
	if (!held || !leaf_of) {
		cause_fail(cause, "move: out of memory");
		goto out;
	}
	for (size_t n = 0; n < c->node_count; n++)
		leaf_of[n] = TOPO_NONE;
	for (uint32_t d = 0; d < tree->domain_count; d++)
		if (tree->domains[d].node != TOPO_NONE)
			leaf_of[tree->domains[d].node] = d;
	{
		struct held_ctx h = { tree, &request, jobs, count, leaf_of, held };

		topo_record_foreach(record, hold_run, &h);
	}
	sub.groups = sub_groups;
	sub.search_budget = request.search_budget;
	sub.held = held;
	if (topo_place(tree, &sub, &pl, cause)) {
		rc = *cause ? TOPO_MOVE_NO_ROOM : -1;
		goto out;
	}
	if (topo_record_encode_moved(record, tree, &sub, pl, (const uint32_t *const *)maps, record_out,
				     cause))
		goto out;
	{
		size_t at = 0, i = 0;

		for (size_t g = 0; g < sub.group_count; g++)
			for (uint32_t k = 0; k < sub_groups[g].replicas && i < pl->instance_count; k++, i++) {
				char path[200];

				topo_tree_path(tree, pl->instance_domain[i], path, sizeof(path));
				if (at + 2 < where_size)
					at += (size_t)snprintf(where + at, where_size - at, "%s%s/%u: %s",
							       at ? ", " : "", sub_groups[g].name, maps[g][k],
							       path[0] ? path : "(cluster)");
			}
	}
	rc = TOPO_MOVE_PLACED;
out:
	topo_placement_free(pl);
	for (size_t g = 0; g < TOPO_GROUPS_MAX; g++)
		free(maps[g]);
	free(held);
	free(leaf_of);
	return rc;
}
