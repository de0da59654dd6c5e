/*
 * topo_input: files of Kubernetes objects, JSON or YAML, into the placement
 * input (contract in topo_input.h). Each file becomes one cJSON tree
 * (lib/base/yaml_json.h); its items go through the object decoders of
 * lib/topo (topo_objects.h, topo_jobset.h), which copy what they keep into
 * the input's store, and the tree is freed before the call returns. What is
 * left here is what only files have: lists of items, the order the inputs
 * are read in, which resources the cluster tracks, unique node names, and
 * adding the pods' requests to their nodes.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_input.h"

#include "cause.h"
#include "kjson.h"
#include "yaml_json.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The store's limit is TOPO_STORE_LIMIT_DEFAULT, as the header promises. */
_Static_assert(TOPO_STORE_LIMIT_DEFAULT == TOPO_INPUT_STORED_MAX, "one limit of decoded storage");

void topo_input_free(struct topo_input *in)
{
	if (!in)
		return;
	topo_store_free(&in->store);
	memset(in, 0, sizeof(*in));
}

/* A file's tree: at most TOPO_INPUT_BYTES_MAX, JSON or YAML. */
static cJSON *parse_file(const char *data, size_t size, const char *what, char **cause)
{
	if (size > TOPO_INPUT_BYTES_MAX) {
		cause_replace(cause, "%s: above %u bytes", what, TOPO_INPUT_BYTES_MAX);
		return NULL;
	}
	return yaml_json_parse(data, size, what, cause);
}

/* The items of a List, of a bare list (YAML documents), or the object itself. */
static int items_of(const cJSON *root, const cJSON **items, size_t *count)
{
	const cJSON *list = kjson_value(root, "items");

	if (cJSON_IsArray(root))
		list = root;
	if (cJSON_IsArray(list)) {
		*items = list->child;
		*count = (size_t)cJSON_GetArraySize(list);
		return 0;
	}
	if (!cJSON_IsObject(root))
		return -1;
	*items = root;
	*count = 1;
	return 0;
}

/* A parsed root has no siblings, so its next is NULL as a list's last item's. */
static const cJSON *next_item(const cJSON *it)
{
	return it->next;
}

/* One input's items: read at most once (*read), its items found (at most
 * max). Returns root (the caller deletes it) or NULL with the cause, root
 * deleted. */
static cJSON *list_of(int *read, cJSON *root, const char *what, const char *kind, size_t max,
		      const cJSON **first, size_t *count, char **cause)
{
	if (*read) {
		cause_replace(cause, "%s: read twice", what);
	} else if (*read = 1, items_of(root, first, count)) {
		cause_replace(cause, "%s: not a List, a list or a %s", what, kind);
	} else if (*count > max) {
		cause_replace(cause, "%s: %zu items, at most %zu", what, *count, max);
	} else {
		return root;
	}
	cJSON_Delete(root);
	return NULL;
}

/* A file's tree, then the decoder of parsed input. */
static int from_file(struct topo_input *in, const char *data, size_t size, const char *what,
		     int (*decode)(struct topo_input *, struct cJSON *, char **), char **cause)
{
	cJSON *root;

	*cause = NULL;
	root = parse_file(data, size, what, cause);
	return root ? decode(in, root, cause) : -1;
}

/* ---- nodes ---- */

static int requested_by_jobset(const struct topo_input *in, const char *name)
{
	for (size_t g = 0; g < in->jobset.group_count; g++)
		for (size_t r = 0; r < in->jobset.groups[g].pod.request_count; r++)
			if (strcmp(in->jobset.groups[g].pod.request_names[r], name) == 0)
				return 1;
	return 0;
}

/* Rank of a resource for the TOPO_RESOURCES_MAX slots: lower is kept first. */
static int resource_rank(const struct topo_input *in, const char *name)
{
	if (requested_by_jobset(in, name))
		return 0;
	return strchr(name, '/') ? 1 : 2;
}

struct ranked_name {
	const char *name;
	int rank;
};

static int by_rank_then_name(const void *a, const void *b)
{
	const struct ranked_name *x = a, *y = b;

	return x->rank != y->rank ? x->rank - y->rank : strcmp(x->name, y->name);
}

/* Picks the tracked resources from every node's allocatable (topo_input.h). */
static int choose_resources(struct topo_input *in, const cJSON *first, size_t count, char **cause)
{
	struct ranked_name seen[64];
	size_t n = 0, i = 0;
	const cJSON *it, *x;

	in->cluster.resources[0] = "cpu";
	in->cluster.resources[1] = "memory";
	in->cluster.resources[2] = "pods";
	in->cluster.resource_count = 3;
	for (it = first; it && i < count; it = next_item(it), i++)
		cJSON_ArrayForEach(x, kjson_path(it, "status", "allocatable", NULL))
		{
			size_t k;

			if (!x->string || topo_resource_index(&in->cluster, x->string) >= 0)
				continue;
			for (k = 0; k < n && strcmp(seen[k].name, x->string) != 0; k++)
				;
			if (k == n && n < sizeof(seen) / sizeof(seen[0]))
				seen[n++] = (struct ranked_name){ x->string, resource_rank(in, x->string) };
		}
	qsort(seen, n, sizeof(seen[0]), by_rank_then_name);
	for (i = 0; i < n && in->cluster.resource_count < TOPO_RESOURCES_MAX; i++) {
		const char *copy = topo_store_string(&in->store, seen[i].name);

		if (!copy)
			return topo_store_nomem(&in->store, cause);
		in->cluster.resources[in->cluster.resource_count++] = copy;
	}
	return 0;
}

struct name_index {
	const char *name;
	uint32_t index;
};

/* By name only: to look a name up among unique names. */
static int by_name_only(const void *a, const void *b)
{
	return strcmp(((const struct name_index *)a)->name, ((const struct name_index *)b)->name);
}

/* By name, then by index, so that the result does not depend on qsort. */
static int by_name(const void *a, const void *b)
{
	const struct name_index *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Nodes by name, sorted (the caller frees), or NULL when out of memory. */
static struct name_index *sorted_names(const struct topo_input *in)
{
	struct name_index *sorted = malloc((in->cluster.node_count + 1) * sizeof(*sorted));

	if (!sorted)
		return NULL;
	for (size_t i = 0; i < in->cluster.node_count; i++)
		sorted[i] = (struct name_index){ in->nodes[i].name, (uint32_t)i };
	qsort(sorted, in->cluster.node_count, sizeof(*sorted), by_name);
	return sorted;
}

int topo_input_nodes_tree(struct topo_input *in, struct cJSON *root, char **cause)
{
	struct name_index *sorted = NULL;
	const cJSON *first, *it;
	size_t count = 0, n = 0;
	int rc = -1;

	*cause = NULL;
	root = list_of(&in->read_nodes, root, "nodes", "Node", TOPO_NODES_MAX, &first, &count, cause);
	if (!root)
		return -1;
	in->nodes = topo_store_alloc(&in->store, count, sizeof(*in->nodes));
	if (!in->nodes || choose_resources(in, first, count, cause)) {
		if (!*cause)
			topo_store_nomem(&in->store, cause);
		goto out;
	}
	for (it = first; it && n < count; it = next_item(it), n++) {
		struct topo_node_object node;
		char where[48];

		snprintf(where, sizeof(where), "nodes: items[%zu]", n);
		if (topo_node_decode(&in->store, it, where, &in->cluster, &node, cause))
			goto out;
		in->nodes[n] = node.node;
	}
	in->cluster.nodes = in->nodes;
	in->cluster.node_count = n;
	/* Pods and HyperNode members name nodes: names must be unique. */
	sorted = sorted_names(in);
	if (!sorted) {
		topo_store_nomem(&in->store, cause);
		goto out;
	}
	for (size_t i = 1; i < n; i++)
		if (strcmp(sorted[i].name, sorted[i - 1].name) == 0) {
			cause_replace(cause, "nodes: items[%u] (%s): the name of items[%u] too",
				      sorted[i].index, sorted[i].name, sorted[i - 1].index);
			goto out;
		}
	rc = 0;
out:
	free(sorted);
	cJSON_Delete(root);
	return rc;
}

/* ---- pods ---- */

/* A pod's request, added to the node it is bound to when that node was read. */
static int add_pod(struct topo_input *in, const cJSON *it, size_t index, const struct name_index *sorted,
		   char **cause)
{
	struct topo_pod_usage pod;
	struct name_index key, *hit;
	struct topo_node *node;
	char where[48];
	int pods;

	snprintf(where, sizeof(where), "pods: items[%zu]", index);
	if (topo_pod_usage_decode(it, where, &pod, cause))
		return -1;
	if (!pod.holds)
		return 0;
	key.name = pod.node_name;
	hit = bsearch(&key, sorted, in->cluster.node_count, sizeof(*sorted), by_name_only);
	if (!hit)
		return 0; /* on a node not in the list */
	node = &in->nodes[hit->index];
	for (size_t i = 0; i < pod.requests.count; i++) {
		int r = topo_resource_index(&in->cluster, pod.requests.names[i]);

		if (r >= 0)
			node->used[r] = topo_amount_add(node->used[r], pod.requests.values[i]);
	}
	pods = topo_resource_index(&in->cluster, "pods");
	if (pods >= 0)
		node->used[pods]++;
	return 0;
}

int topo_input_pods_tree(struct topo_input *in, struct cJSON *root, char **cause)
{
	const cJSON *first, *it;
	struct name_index *sorted = NULL;
	size_t count = 0, n = 0;
	int rc = -1;

	*cause = NULL;
	if (!in->read_nodes || in->read_pods) {
		cJSON_Delete(root);
		return cause_replace(cause, "pods: read once, after the nodes");
	}
	root = list_of(&in->read_pods, root, "pods", "Pod", SIZE_MAX, &first, &count, cause);
	if (!root)
		return -1;
	sorted = sorted_names(in);
	if (!sorted) {
		topo_store_nomem(&in->store, cause);
		goto out;
	}
	for (it = first; it && n < count; it = next_item(it), n++)
		if (add_pod(in, it, n, sorted, cause))
			goto out;
	rc = 0;
out:
	free(sorted);
	cJSON_Delete(root);
	return rc;
}

/* ---- JobSet ---- */

int topo_input_jobset_tree(struct topo_input *in, struct cJSON *root, char **cause)
{
	int rc;

	*cause = NULL;
	if (in->read_jobset) {
		cJSON_Delete(root);
		return cause_replace(cause, "jobset: read twice");
	}
	in->read_jobset = 1;
	rc = topo_jobset_decode(&in->store, root, &in->jobset, cause);
	cJSON_Delete(root);
	return rc;
}

/* ---- HyperNodes ---- */

int topo_input_hypernodes_tree(struct topo_input *in, struct cJSON *root, char **cause)
{
	const cJSON *first, *it;
	size_t count = 0, n = 0;
	int rc = -1;

	*cause = NULL;
	root = list_of(&in->read_hypernodes, root, "hypernodes", "HyperNode", TOPO_HYPERNODES_MAX, &first,
		       &count, cause);
	if (!root)
		return -1;
	in->hypernodes = topo_store_alloc(&in->store, count, sizeof(*in->hypernodes));
	if (!in->hypernodes) {
		topo_store_nomem(&in->store, cause);
		goto out;
	}
	for (it = first; it && n < count; it = next_item(it), n++) {
		char where[48];

		snprintf(where, sizeof(where), "hypernodes: items[%zu]", n);
		if (topo_hypernode_decode(&in->store, it, where, &in->hypernodes[n], cause))
			goto out;
	}
	in->hypernode_count = n;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int topo_input_nodes(struct topo_input *in, const char *data, size_t size, char **cause)
{
	if (in->read_nodes) /* said before the file is parsed */
		return cause_replace(cause, "nodes: read twice");
	return from_file(in, data, size, "nodes", topo_input_nodes_tree, cause);
}

int topo_input_pods(struct topo_input *in, const char *data, size_t size, char **cause)
{
	if (!in->read_nodes || in->read_pods)
		return cause_replace(cause, "pods: read once, after the nodes");
	return from_file(in, data, size, "pods", topo_input_pods_tree, cause);
}

int topo_input_jobset(struct topo_input *in, const char *data, size_t size, char **cause)
{
	if (in->read_jobset)
		return cause_replace(cause, "jobset: read twice");
	return from_file(in, data, size, "jobset", topo_input_jobset_tree, cause);
}

int topo_input_hypernodes(struct topo_input *in, const char *data, size_t size, char **cause)
{
	if (in->read_hypernodes)
		return cause_replace(cause, "hypernodes: read twice");
	return from_file(in, data, size, "hypernodes", topo_input_hypernodes_tree, cause);
}
