/*
 * muster-topology: reads nodes (kubectl get nodes -o json), optionally pods
 * for usage, a topology (--levels or a HyperNode file) and a JobSet; prints
 * the topology tree with the free capacity per domain for each replicated
 * job's pod shape, then the placement or the refusal. Exit 0 placed,
 * 1 refused, 2 bad input. The JobSet is read before the nodes so that the
 * resources it requests are among those tracked (topo_input.h).
 *
 *   muster-topology --nodes nodes.json [--pods pods.json]
 *                   (--levels block,rack,... | --hypernodes hn.yaml)
 *                   --jobset jobset.yaml [--depth N]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_input.h"
#include "topo_place.h"
#include "topo_tree.h"

static char *read_file(const char *name, size_t *size)
{
	FILE *f = fopen(name, "rb");
	char *buf = NULL;
	size_t used = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t n;

		if (used == cap) {
			char *b;

			if (cap >= TOPO_INPUT_BYTES_MAX)
				goto fail;
			cap = cap ? cap * 2 : 65536;
			b = realloc(buf, cap + 1);
			if (!b)
				goto fail;
			buf = b;
		}
		n = fread(buf + used, 1, cap - used, f);
		used += n;
		if (n == 0)
			break;
	}
	if (ferror(f))
		goto fail;
	fclose(f);
	buf[used] = '\0';
	*size = used;
	return buf;
fail:
	fclose(f);
	free(buf);
	return NULL;
}

static int load(struct topo_input *in, const char *file,
		int (*decode)(struct topo_input *, const char *, size_t, char **))
{
	size_t size = 0;
	char *data = read_file(file, &size), *cause = NULL;
	int rc;

	if (!data) {
		fprintf(stderr, "muster-topology: cannot read %s\n", file);
		return -1;
	}
	rc = decode(in, data, size, &cause);
	free(data);
	if (rc)
		fprintf(stderr, "muster-topology: %s: %s\n", file, cause ? cause : "out of memory");
	free(cause);
	return rc;
}

/* The tree with, per domain, the free capacity in pods of each group's shape. */
static void print_tree(const struct topo_tree *t, const struct topo_request *req, size_t depth)
{
	const struct topo_cluster *c = t->cluster;
	uint64_t *free_pods =
		calloc(t->domain_count * (req->group_count ? req->group_count : 1), sizeof(uint64_t));
	int64_t res[TOPO_RESOURCES_MAX];

	if (!free_pods)
		return;
	for (size_t g = 0; g < req->group_count; g++)
		for (size_t d = t->domain_count; d-- > 0;) {
			uint32_t n = t->domains[d].node;

			if (n != TOPO_NONE) {
				for (size_t r = 0; r < c->resource_count; r++)
					res[r] = c->nodes[n].allocatable[r] - c->nodes[n].used[r];
				free_pods[d * req->group_count + g] =
					topo_node_fit(c, &c->nodes[n], res, &req->groups[g].shape, NULL);
			}
			if (d > 0)
				free_pods[t->domains[d].parent * req->group_count + g] +=
					free_pods[d * req->group_count + g];
		}
	printf("topology (free pods per replicated job:");
	for (size_t g = 0; g < req->group_count; g++)
		printf(" %s", req->groups[g].name);
	printf(")\n");
	for (size_t d = 0; d < t->domain_count; d++) {
		if (t->domains[d].level > depth)
			continue;
		printf("%*s%s %s", (int)t->domains[d].level * 2, "", t->level_names[t->domains[d].level],
		       d ? t->domains[d].name : "");
		for (size_t g = 0; g < req->group_count; g++)
			printf(" %llu", (unsigned long long)free_pods[d * req->group_count + g]);
		printf("\n");
	}
	for (size_t i = 0; i < t->excluded_count; i++)
		printf("excluded: node %s %s%s%s\n", c->nodes[t->excluded[i].node].name,
		       t->excluded[i].reason, t->excluded[i].detail ? " " : "",
		       t->excluded[i].detail ? t->excluded[i].detail : "");
	free(free_pods);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: muster-topology --nodes FILE [--pods FILE] (--levels L1,L2,... | --hypernodes FILE)\n"
		"                       --jobset FILE [--depth N]\n");
}

int main(int argc, char **argv)
{
	const char *nodes = NULL, *pods = NULL, *levels = NULL, *hypernodes = NULL, *jobset = NULL;
	struct topo_input in;
	struct topo_tree *t = NULL;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	struct topo_placement *p = NULL;
	const char *level_list[TOPO_LEVELS_MAX];
	char *levels_copy = NULL, *cause = NULL, buf[1024];
	size_t level_count = 0, depth = TOPO_LEVELS_MAX + 1;
	int rc = 2;

	memset(&in, 0, sizeof(in));
	/* Every flag takes a value: flags at odd positions, values after them. */
	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			usage();
			return 2;
		}
		if (strcmp(argv[i], "--nodes") == 0)
			nodes = v;
		else if (strcmp(argv[i], "--pods") == 0)
			pods = v;
		else if (strcmp(argv[i], "--levels") == 0)
			levels = v;
		else if (strcmp(argv[i], "--hypernodes") == 0)
			hypernodes = v;
		else if (strcmp(argv[i], "--jobset") == 0)
			jobset = v;
		else if (strcmp(argv[i], "--depth") == 0) {
			char *end;

			depth = strtoul(v, &end, 10);
			if (*end || end == v) {
				usage();
				return 2;
			}
		} else {
			usage();
			return 2;
		}
	}
	if (!nodes || !jobset || !levels == !hypernodes) {
		usage();
		return 2;
	}
	if (load(&in, jobset, topo_input_jobset) || load(&in, nodes, topo_input_nodes) ||
	    (pods && load(&in, pods, topo_input_pods)) ||
	    (hypernodes && load(&in, hypernodes, topo_input_hypernodes)))
		goto out;
	if (levels) {
		char *save = NULL;

		levels_copy = strdup(levels);
		for (char *tok = levels_copy ? strtok_r(levels_copy, ",", &save) : NULL; tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (level_count == TOPO_LEVELS_MAX) {
				fprintf(stderr, "muster-topology: at most %d levels\n", TOPO_LEVELS_MAX);
				goto out;
			}
			level_list[level_count++] = tok;
		}
		t = topo_tree_from_levels(&in.cluster, level_list, level_count, &cause);
	} else {
		t = topo_tree_from_hypernodes(&in.cluster, in.hypernodes, in.hypernode_count, &cause);
	}
	if (!t || topo_jobset_request(&in.jobset, t, groups, &req, &cause)) {
		fprintf(stderr, "muster-topology: %s\n", cause ? cause : "out of memory");
		goto out;
	}
	print_tree(t, &req, depth);
	if (topo_place(t, &req, &p, &cause)) {
		printf("refused: %s\n", cause ? cause : "out of memory");
		rc = 1;
		goto out;
	}
	printf("placement of JobSet %s:\n", in.jobset.name ? in.jobset.name : "");
	for (size_t g = 0, k = 0; g < req.group_count; g++)
		for (uint32_t j = 0; j < req.groups[g].replicas; j++, k++)
			if (p->instance_pods[k] < req.groups[g].pods)
				printf("  %s-%u: %u of %u pods placed (minPartitions), the rest not placed\n",
				       req.groups[g].name, j, p->instance_pods[k], req.groups[g].pods);
	for (size_t i = 0; i < p->count_count; i++) {
		printf("  %s-%u: %u pods in %s", req.groups[p->counts[i].group].name, p->counts[i].job_index,
		       p->counts[i].count, topo_tree_path(t, p->counts[i].domain, buf, sizeof(buf)));
		if (!t->from_hypernodes)
			printf(" (nodeSelector %s)",
			       topo_tree_selector(t, p->counts[i].domain, TOPO_NONE, buf, sizeof(buf)));
		printf("\n");
	}
	/* The selector confines a pod to its domain: every level's label in
	 * levels mode; in HyperNode mode, where a domain is no label, the
	 * node's hostname. */
	printf("pods (replicated job, job index, completion index -> domain, nodeSelector):\n");
	for (size_t i = 0; i < p->pod_count; i++) {
		const struct topo_pod *pod = &p->pods[i];

		if (pod->domain == TOPO_NONE) {
			printf("  %s %u %u (not placed)\n", req.groups[pod->group].name, pod->job_index,
			       pod->completion);
			continue;
		}
		printf("  %s %u %u %s", req.groups[pod->group].name, pod->job_index, pod->completion,
		       topo_tree_path(t, pod->domain, buf, sizeof(buf)));
		printf(" %s\n", topo_tree_selector(t, pod->domain, pod->node, buf, sizeof(buf)));
	}
	rc = 0;
out:
	free(cause);
	free(levels_copy);
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);
	return rc;
}
