/*
 * libFuzzer target for topo_input: any bytes must decode or fail cleanly with
 * a cause. The first byte picks the decoder (nodes, pods, JobSet,
 * HyperNodes, a quantity, or a Kueue Topology); the others get a small fixed input, and
 * whatever decodes goes on through the tree, the request and the placement,
 * so the core sees hostile values too. The fixed JobSet uses co-placement,
 * partitions with a minimum, required and preferred node affinity and a
 * JobSet-wide level.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "quantity.h"
#include "topo_objects.h"
#include "yaml_json.h"
#include "topo_input.h"
#include "topo_place.h"
#include "topo_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char NODES[] =
	"{\"items\":[{\"metadata\":{\"name\":\"n1\",\"labels\":{\"block\":\"b\",\"rack\":\"r\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"8\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"n2\",\"labels\":{\"block\":\"b\",\"rack\":\"s\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"4\",\"pods\":\"110\"}}}]}";
static const char JOBSET[] =
	"metadata:\n  name: j\n  annotations: {muster.dev/topology-preferred: block}\n"
	"spec:\n  replicatedJobs:\n"
	"  - name: w\n    replicas: 2\n    template:\n      spec:\n        parallelism: 2\n"
	"        template:\n          metadata:\n            annotations:\n"
	"              kueue.x-k8s.io/podset-required-topology: rack\n"
	"              kueue.x-k8s.io/podset-group-name: g\n"
	"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n"
	"  - name: l\n    replicas: 2\n    template:\n      spec:\n        template:\n"
	"          metadata:\n            annotations:\n"
	"              kueue.x-k8s.io/podset-required-topology: rack\n"
	"              kueue.x-k8s.io/podset-group-name: g\n"
	"          spec:\n            affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:\n"
	"              {nodeSelectorTerms: [{matchExpressions: [{key: rack, operator: NotIn, values: [x]}]}]},\n"
	"              preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, preference:\n"
	"              {matchExpressions: [{key: rack, operator: In, values: [s]}]}}]}}\n"
	"            containers: [{resources: {requests: {cpu: 500m}}}]\n"
	"  - name: p\n    template:\n      spec:\n        parallelism: 4\n        template:\n"
	"          metadata:\n            annotations:\n"
	"              muster.dev/partition-policy: '{totalPartitions: 2, partitionSize: 2, minPartitions: 1,\n"
	"                networkTopology: {mode: hard, highestTierAllowed: 1}}'\n"
	"          spec: {tolerations: [{operator: Exists}], containers: [{resources: {requests: {cpu: 1}}}]}\n";

/* A quantity: never negative except -1, never above the maximum. */
static void fuzz_quantity(const char *data, size_t size)
{
	char text[128];
	long long q;

	snprintf(text, sizeof(text), "%.*s", (int)(size < sizeof(text) - 1 ? size : sizeof(text) - 1), data);
	q = quantity_parse(text);
	if (q < -1 || q > QUANTITY_MAX)
		abort();
}

/* A Kueue Topology: 1..TOPO_LEVELS_MAX distinct labels, or a cause. */
static void fuzz_kueue_topology(const char *data, size_t size)
{
	struct topo_store s = { 0 };
	struct topo_levels levels;
	char *cause = NULL;
	cJSON *root = yaml_json_parse(data, size, "topology", &cause);

	if (!root) {
		if (!cause)
			abort();
		free(cause);
		return;
	}
	if (topo_kueue_topology_decode(&s, root, "topology", &levels, &cause) == 0) {
		if (levels.count < 1 || levels.count > TOPO_LEVELS_MAX || !levels.name)
			abort();
	} else if (!cause) {
		abort();
	}
	free(cause);
	cJSON_Delete(root);
	topo_store_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct topo_input in;
	struct topo_tree *t = NULL;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	struct topo_placement *p = NULL;
	const char *levels[] = { "block", "rack" };
	const char *text;
	char *cause = NULL;
	int which, ok = 1;

	if (size < 1)
		return 0;
	which = data[0] % 6;
	text = (const char *)data + 1;
	size--;
	if (which == 4) {
		fuzz_quantity(text, size);
		return 0;
	}
	if (which == 5) {
		fuzz_kueue_topology(text, size);
		return 0;
	}
	memset(&in, 0, sizeof(in));
#define STEP(call)                                                                                           \
	do {                                                                                                 \
		if (ok && (call) != 0) {                                                                     \
			if (!cause)                                                                          \
				abort(); /* every failure says why */                                        \
			free(cause);                                                                         \
			cause = NULL;                                                                        \
			ok = 0;                                                                              \
		}                                                                                            \
	} while (0)
	STEP(which == 0 ? topo_input_nodes(&in, text, size, &cause)
			: topo_input_nodes(&in, NODES, sizeof(NODES) - 1, &cause));
	if (which == 1)
		STEP(topo_input_pods(&in, text, size, &cause));
	STEP(which == 2 ? topo_input_jobset(&in, text, size, &cause)
			: topo_input_jobset(&in, JOBSET, sizeof(JOBSET) - 1, &cause));
	if (which == 3)
		STEP(topo_input_hypernodes(&in, text, size, &cause));
	if (ok) {
		t = which == 3 ? topo_tree_from_hypernodes(&in.cluster, in.hypernodes, in.hypernode_count,
							   &cause)
			       : topo_tree_from_levels(&in.cluster, levels, 2, &cause);
		if (!t && !cause)
			abort();
		if (t) {
			if (topo_jobset_place(&in.jobset, t, groups, &req, &p, &cause) == 0) {
				if (p->pod_count > TOPO_PODS_MAX)
					abort();
			} else if (!cause) {
				abort();
			}
		}
	}
	free(cause);
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);
	return 0;
}
