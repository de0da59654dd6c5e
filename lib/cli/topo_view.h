/*
 * topo_view: what the command-line tools (muster-topology, kubectl-muster)
 * show of a topology tree: the free room of each domain, as columns of
 * numbers (pods of each replicated job's shape, or free resources), printed
 * as an indented tree with a summary per level when it is large, or as one
 * JSON object for scripts. Pure: reads a tree, writes to a FILE or builds a
 * cJSON tree; no I/O of its own.
 *
 * Columns: `values` holds domain_count x column_count numbers, domain-major
 * (values[d * column_count + c]); a domain's value is the sum of its
 * nodes'.
 */
#ifndef MUSTER_TOPO_VIEW_H
#define MUSTER_TOPO_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "topo_place.h"
#include "topo_tree.h"

/* Above this many domains the tree is shown as a summary per level unless
 * a depth asks for more: a 10,000-node tree stays readable. */
#define TOPO_VIEW_FULL_TREE_DOMAINS 200

/* Free capacity per domain in pods of each group's shape (domain x group,
 * at least one column's room when the request has no group); NULL when
 * memory ran out. The caller frees it. */
uint64_t *topo_view_free_pods(const struct topo_tree *tree, const struct topo_request *request);

/* Free resources per domain, one column per resource of the cluster
 * (allocatable minus the use of bound pods, of Ready, schedulable nodes),
 * in display units: cpu in millicores ("cpu(m)"), memory in MiB
 * ("memory(Mi)"), pods in pods, others in their unit. *names gets the
 * column names (static or the cluster's strings). NULL when memory ran out. */
uint64_t *topo_view_free_resources(const struct topo_tree *tree, const char **names, size_t *count);

/* The depth shown by default: every level up to TOPO_VIEW_FULL_TREE_DOMAINS
 * domains, else the top level (and the summary). */
size_t topo_view_default_depth(const struct topo_tree *tree);

/* The tree down to `depth` levels under a header line `title`, each domain
 * followed by its columns, then, when domains were left out, per level the
 * domains' count and the smallest and largest value of column 0 ("free
 * <summary_label> from A to B"), then the nodes left out of the topology. */
void topo_view_print_tree(FILE *out, const struct topo_tree *tree, const char *title, const uint64_t *values,
			  size_t column_count, const char *summary_label, size_t depth);

/* The tree as JSON: {"levels": [...], "columns": [...], "domains":
 * [{"level", "name", "path", "parent", "free": [...]}], "excluded":
 * [{"node", "reason"}]}; the root is domains[0] (parent -1). NULL when
 * memory ran out. */
struct cJSON *topo_view_tree_json(const struct topo_tree *tree, const char *const *columns,
				  const uint64_t *values, size_t column_count);

/* Adds "excluded": [{"node", "reason"}] (the nodes the tree left out, and
 * why) to `out`. 0, or -1 when memory ran out. */
int topo_view_excluded_json(struct cJSON *out, const struct topo_tree *tree);

#endif
