/*
 * topo_view: the tree with its free room, as text or JSON. See topo_view.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_view.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

uint64_t *topo_view_free_pods(const struct topo_tree *t, const struct topo_request *req)
{
	const struct topo_cluster *c = t->cluster;
	size_t groups = req->group_count ? req->group_count : 1;
	uint64_t *free_pods = calloc(t->domain_count * groups, sizeof(uint64_t));
	int64_t res[TOPO_RESOURCES_MAX];

	if (!free_pods)
		return NULL;
	for (size_t g = 0; g < req->group_count; g++)
		for (size_t d = t->domain_count; d-- > 0;) {
			uint32_t n = t->domains[d].node;

			if (n != TOPO_NONE) {
				for (size_t r = 0; r < c->resource_count; r++)
					res[r] = c->nodes[n].allocatable[r] - c->nodes[n].used[r];
				free_pods[d * groups + g] =
					topo_node_fit(c, &c->nodes[n], res, &req->groups[g].shape, NULL);
			}
			if (d > 0)
				free_pods[t->domains[d].parent * groups + g] += free_pods[d * groups + g];
		}
	return free_pods;
}

/* A resource's column name and the divisor from thousandths of its unit
 * (topo_input.h) to the unit shown. */
static const char *resource_column(const char *resource, uint64_t *divisor)
{
	if (strcmp(resource, "cpu") == 0) {
		*divisor = 1;
		return "cpu(m)";
	}
	if (strcmp(resource, "memory") == 0) {
		*divisor = 1000ull * 1024 * 1024;
		return "memory(Mi)";
	}
	*divisor = strcmp(resource, "pods") == 0 ? 1 : 1000;
	return resource;
}

uint64_t *topo_view_free_resources(const struct topo_tree *t, const char **names, size_t *count)
{
	const struct topo_cluster *c = t->cluster;
	size_t n = c->resource_count ? c->resource_count : 1;
	uint64_t *values = calloc(t->domain_count * n, sizeof(uint64_t)), divisor[TOPO_RESOURCES_MAX];

	if (!values)
		return NULL;
	for (size_t r = 0; r < c->resource_count; r++)
		names[r] = resource_column(c->resources[r], &divisor[r]);
	*count = c->resource_count;
	for (size_t d = t->domain_count; d-- > 0;) {
		uint32_t node = t->domains[d].node;

		if (node != TOPO_NONE && !c->nodes[node].unschedulable && !c->nodes[node].not_ready)
			for (size_t r = 0; r < c->resource_count; r++) {
				int64_t left = c->nodes[node].allocatable[r] - c->nodes[node].used[r];

				values[d * n + r] = left > 0 ? (uint64_t)left / divisor[r] : 0;
			}
		if (d > 0)
			for (size_t r = 0; r < c->resource_count; r++)
				values[t->domains[d].parent * n + r] += values[d * n + r];
	}
	return values;
}

size_t topo_view_default_depth(const struct topo_tree *t)
{
	return t->domain_count <= TOPO_VIEW_FULL_TREE_DOMAINS ? TOPO_LEVELS_MAX + 1 : 1;
}

/* How many domains are above d: its indent, so that a node sits under its
 * real parent even where the tree skips a level. */
static int depth_of(const struct topo_tree *t, uint32_t d)
{
	int n = 0;

	for (; d != 0; d = t->domains[d].parent)
		n++;
	return n;
}

void topo_view_print_tree(FILE *out, const struct topo_tree *t, const char *title, const uint64_t *values,
			  size_t columns, const char *summary_label, size_t depth)
{
	const struct topo_cluster *c = t->cluster;
	size_t stride = columns ? columns : 1, shown = 0;

	fprintf(out, "%s\n", title);
	for (size_t d = 0; d < t->domain_count; d++) {
		const struct topo_domain *dom = &t->domains[d];

		if (dom->level > depth)
			continue;
		shown++;
		fprintf(out, "%*s%s %s", depth_of(t, (uint32_t)d) * 2, "",
			dom->node != TOPO_NONE ? "(node)" : t->level_names[dom->level], d ? dom->name : "");
		for (size_t k = 0; k < columns; k++)
			fprintf(out, " %llu", (unsigned long long)values[d * stride + k]);
		fprintf(out, "\n");
	}
	if (shown < t->domain_count) {
		fprintf(out, "levels (%zu of %zu domains shown; --depth all shows every one):\n", shown,
			t->domain_count);
		for (size_t l = 1; l <= t->node_level; l++) {
			size_t count = 0;
			uint64_t least = UINT64_MAX, most = 0;

			for (size_t d = 0; d < t->domain_count; d++) {
				uint64_t v = columns ? values[d * stride] : 0;

				if (t->domains[d].level != l)
					continue;
				count++;
				least = v < least ? v : least;
				most = v > most ? v : most;
			}
			fprintf(out, "  %s: %zu domains, free %s from %llu to %llu\n",
				l == t->node_level ? "nodes" : t->level_names[l], count, summary_label,
				count ? (unsigned long long)least : 0ULL, (unsigned long long)most);
		}
	}
	for (size_t i = 0; i < t->excluded_count; i++)
		fprintf(out, "excluded: node %s %s%s%s\n", c->nodes[t->excluded[i].node].name,
			t->excluded[i].reason, t->excluded[i].detail ? " " : "",
			t->excluded[i].detail ? t->excluded[i].detail : "");
}

int topo_view_excluded_json(cJSON *out, const struct topo_tree *t)
{
	const struct topo_cluster *c = t->cluster;
	cJSON *excluded = cJSON_AddArrayToObject(out, "excluded");
	char buf[1024];
	int ok = excluded != NULL;

	for (size_t i = 0; ok && i < t->excluded_count; i++) {
		cJSON *one = cJSON_CreateObject();

		ok = one && cJSON_AddItemToArray(excluded, one);
		ok = ok && cJSON_AddStringToObject(one, "node", c->nodes[t->excluded[i].node].name);
		snprintf(buf, sizeof(buf), "%s%s%s", t->excluded[i].reason, t->excluded[i].detail ? " " : "",
			 t->excluded[i].detail ? t->excluded[i].detail : "");
		ok = ok && cJSON_AddStringToObject(one, "reason", buf);
	}
	return ok ? 0 : -1;
}

cJSON *topo_view_tree_json(const struct topo_tree *t, const char *const *columns, const uint64_t *values,
			   size_t column_count)
{
	cJSON *out = cJSON_CreateObject(), *levels, *names, *domains;
	char buf[1024];
	int ok = out != NULL;

	ok = ok && (levels = cJSON_AddArrayToObject(out, "levels")) != NULL;
	for (size_t l = 1; ok && l < t->node_level; l++)
		ok = cJSON_AddItemToArray(levels, cJSON_CreateString(t->level_names[l]));
	ok = ok && (names = cJSON_AddArrayToObject(out, "columns")) != NULL;
	for (size_t k = 0; ok && k < column_count; k++)
		ok = cJSON_AddItemToArray(names, cJSON_CreateString(columns[k]));
	ok = ok && (domains = cJSON_AddArrayToObject(out, "domains")) != NULL;
	for (size_t d = 0; ok && d < t->domain_count; d++) {
		const struct topo_domain *dom = &t->domains[d];
		cJSON *one = cJSON_CreateObject(), *free_room;

		ok = one && cJSON_AddItemToArray(domains, one);
		ok = ok && cJSON_AddStringToObject(one, "level",
						   dom->node != TOPO_NONE ? "node"
						   : d == 0		  ? "root"
									  : t->level_names[dom->level]);
		ok = ok && cJSON_AddStringToObject(one, "name", dom->name ? dom->name : "");
		ok = ok &&
		     cJSON_AddStringToObject(one, "path", topo_tree_path(t, (uint32_t)d, buf, sizeof(buf)));
		ok = ok && cJSON_AddNumberToObject(one, "parent", d == 0 ? -1.0 : (double)dom->parent);
		ok = ok && (free_room = cJSON_AddArrayToObject(one, "free")) != NULL;
		for (size_t k = 0; ok && k < column_count; k++)
			ok = cJSON_AddItemToArray(free_room,
						  cJSON_CreateNumber((double)values[d * column_count + k]));
	}
	ok = ok && topo_view_excluded_json(out, t) == 0;
	if (!ok) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}
