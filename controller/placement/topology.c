/*
 * placement/topology.c: the topology of a pass (--placement-levels, the Kueue
 * Topology named or found, or the HyperNodes), read outside the lock, and the
 * tree built from it over a cluster snapshot; the one level a JobSet names
 * when the cluster has no topology. Not here: the placement itself
 * (lib/topo/topo_place) and the snapshot (topo_cache).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "kube_path.h"
#include "topo_objects.h"

#define TOPOLOGIES_PATH "/apis/kueue.x-k8s.io/v1beta2/topologies"
#define TOPOLOGIES_PATH_V1BETA1 "/apis/kueue.x-k8s.io/v1beta1/topologies"
#define HYPERNODES_PATH "/apis/topology.volcano.sh/v1alpha1/hypernodes"

/* The items of a LIST (an array the caller deletes), or NULL with err. */
static cJSON *list_all(struct placement_loop *loop, const char *path, int *err, char **cause)
{
	cJSON *items = cJSON_CreateArray();

	if (!items) {
		*err = MUSTER_ENOMEM;
		return NULL;
	}
	*err = kube_list(loop->api[API_WRITES].client, path, NULL, PAGE_SIZE, kube_item_collect, items, NULL,
			 cause);
	if (*err) {
		cJSON_Delete(items);
		return NULL;
	}
	return items;
}

static void levels_of(struct topology *t, const struct topo_levels *found)
{
	for (size_t i = 0; i < found->count; i++)
		t->levels[i] = found->labels[i];
	t->level_count = found->count;
}

static int use_topology(struct topology *t, const cJSON *object, const char *where)
{
	struct topo_levels found;
	char *cause = NULL;

	if (topo_kueue_topology_decode(&t->store, object, where, &found, &cause)) {
		snprintf(t->problem, sizeof(t->problem), "%s", cause ? cause : "out of memory");
		free(cause);
		return -1;
	}
	levels_of(t, &found);
	return 0;
}

static int use_hypernodes(struct topology *t, const cJSON *items)
{
	const cJSON *item;
	size_t n = 0;
	char *cause = NULL;

	t->hypernode_count = (size_t)cJSON_GetArraySize(items);
	t->hypernodes = topo_store_alloc(&t->store, t->hypernode_count ? t->hypernode_count : 1,
					 sizeof(*t->hypernodes));
	if (!t->hypernodes) {
		snprintf(t->problem, sizeof(t->problem), "out of memory for the HyperNodes");
		return -1;
	}
	cJSON_ArrayForEach(item, items)
	{
		if (topo_hypernode_decode(&t->store, item, "hypernodes", &t->hypernodes[n++], &cause)) {
			snprintf(t->problem, sizeof(t->problem), "%s", cause ? cause : "out of memory");
			free(cause);
			return -1;
		}
	}
	t->from_hypernodes = 1;
	return 0;
}

/* Reads the topology of this pass (outside the lock). */
static void read_topology(struct placement_loop *loop, struct topology *t)
{
	char path[KUBE_PATH_MAX], *cause = NULL;
	cJSON *object = NULL, *items = NULL;
	int err;

	t->read = 1;
	if (loop->levels) {
		char *save = NULL, *copy = (char *)topo_store_string(&t->store, loop->levels);

		for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL;
		     tok && t->level_count < TOPO_LEVELS_MAX; tok = strtok_r(NULL, ",", &save))
			t->levels[t->level_count++] = tok;
		return;
	}
	if (loop->topology) {
		err = kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES, NULL, loop->topology, &cause);
		if (!err)
			err = kube_get(loop->api[API_WRITES].client, path, &object, &cause);
		if (err == MUSTER_ENOTFOUND) {
			free(cause);
			cause = NULL;
			kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES_V1BETA1, NULL, loop->topology,
				  NULL);
			err = kube_get(loop->api[API_WRITES].client, path, &object, &cause);
		}
		if (err)
			snprintf(t->problem, sizeof(t->problem),
				 "the Kueue Topology %s (--placement-topology): %s", loop->topology,
				 err == MUSTER_ENOTFOUND ? "not found"
				 : cause		 ? cause
							 : muster_err_message(err));
		else
			use_topology(t, object, "topology");
		goto out;
	}
	if (loop->hypernodes) {
		if (!(items = list_all(loop, HYPERNODES_PATH, &err, &cause)))
			snprintf(t->problem, sizeof(t->problem), "the HyperNodes: %s",
				 cause ? cause : muster_err_message(err));
		else if (cJSON_GetArraySize(items) == 0)
			snprintf(t->problem, sizeof(t->problem),
				 "the cluster has no HyperNodes (--placement-hypernodes)");
		else
			use_hypernodes(t, items);
		goto out;
	}
	/* By default: the only Kueue Topology, else the HyperNodes. */
	items = list_all(loop, TOPOLOGIES_PATH, &err, &cause);
	if (!items && err == MUSTER_ENOTFOUND) { /* a cluster serving only Kueue's older version */
		free(cause);
		cause = NULL;
		items = list_all(loop, TOPOLOGIES_PATH_V1BETA1, &err, &cause);
	}
	if (items && cJSON_GetArraySize(items) == 1) {
		use_topology(t, cJSON_GetArrayItem(items, 0), "topology");
		goto out;
	}
	if (items && cJSON_GetArraySize(items) > 1) {
		snprintf(t->problem, sizeof(t->problem),
			 "the cluster has %d Kueue Topologies: name one with --placement-topology",
			 cJSON_GetArraySize(items));
		goto out;
	}
	cJSON_Delete(items);
	free(cause);
	cause = NULL;
	items = list_all(loop, HYPERNODES_PATH, &err, &cause);
	if (items && cJSON_GetArraySize(items) > 0) {
		use_hypernodes(t, items);
	} else {
		t->none = 1;
		snprintf(
			t->problem, sizeof(t->problem),
			"no topology: the cluster has no Kueue Topology and no HyperNodes, muster-controller has no "
			"--placement-levels, and the JobSet names more than one level (or a tier)");
	}
out:
	cJSON_Delete(object);
	cJSON_Delete(items);
	free(cause);
}
/* The one node label a JobSet's request names (its levels, slices,
 * exclusive-topology), or NULL when it names none, several, or tiers: with
 * no topology in the cluster, upstream JobSet's exclusive-topology and a
 * single Kueue level still mean a domain per value of that label. */
const char *placement_single_level(const struct topo_jobset *js)
{
	const char *found = NULL;

#define NOTE(level)                                                                                          \
	do {                                                                                                 \
		const char *l_ = (level);                                                                    \
		if (l_ && found && strcmp(l_, found) != 0)                                                   \
			return NULL;                                                                         \
		if (l_)                                                                                      \
			found = l_;                                                                          \
	} while (0)
	if (js->whole_network.set)
		return NULL;
	NOTE(js->whole_required);
	NOTE(js->whole_preferred);
	for (size_t g = 0; g < js->group_count; g++) {
		const struct topo_jobset_group *group = &js->groups[g];

		if (group->network.set || group->partitions)
			return NULL;
		NOTE(group->required);
		NOTE(group->preferred);
		NOTE(group->slice_level);
		NOTE(group->exclusive);
		for (size_t i = 0; i < group->inner_count; i++)
			NOTE(group->inner_levels[i]);
	}
#undef NOTE
	return found;
}

struct topo_tree *placement_build_tree(const struct topology *top, const struct topo_cluster *c, char **cause)
{
	if (top->from_hypernodes)
		return topo_tree_from_hypernodes(c, top->hypernodes, top->hypernode_count, cause);
	return topo_tree_from_levels(c, top->levels, top->level_count, cause);
}

/* Reads the topology only when something waits to be placed or a placed
 * JobSet may have to move: a pass with neither makes no API read. */
void placement_phase_topology(struct pass *p)
{
	struct placement_loop *loop = p->loop;
	struct pass probe = { .loop = loop };

	muster_lock(&loop->lock);
	name_table_each(&loop->jobsets, placement_collect_pending, &probe);
	p->placing = probe.pending_count > 0;
	loop->next_hold = probe.next_hold;
	if (!probe.pending_count && !loop->stranded) {
		loop->dirty = 0;
		loop->pods_changed = 0;
		loop->stats.waiting = probe.held;
		loop->retrying = 0;
		muster_unlock(&loop->lock);
		free(probe.pending);
		return;
	}
	free(probe.pending);
	muster_unlock(&loop->lock);
	read_topology(loop, &p->top);
}
