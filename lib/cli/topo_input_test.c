/*
 * Unit tests of topo_input, the CLI's decoder: `kubectl get
 * nodes -o json` (labels, allocatable with extended resources, taints,
 * cordons, the resources tracked); pods as usage (bound and not ended only,
 * the init-container, sidecar, overhead and pod-level rules, limits standing
 * for requests); JobSets in JSON and YAML (Kueue podset annotations, Volcano
 * networkTopology and partitionPolicy, the JobSet-wide level, node selector,
 * required node affinity, tolerations); HyperNodes in YAML with exact, regex
 * and label members; that nothing points into a freed parse tree; and that
 * malformed inputs fail with a cause naming the field. A few cases go on
 * through topo_tree and topo_place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo_input.h"
#include "topo_place.h"
#include "topo_tree.h"

/* ---- helpers ---- */

typedef int (*decoder)(struct topo_input *, const char *, size_t, char **);

/* Decodes text from a heap copy that is freed at once, so a pointer kept
 * into the input (or into a parse tree) would be caught by ASan. */
static int decode(struct topo_input *in, decoder fn, const char *text, char **cause)
{
	size_t n = strlen(text);
	char *copy = malloc(n + 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, text, n + 1);
	rc = fn(in, copy, n, cause);
	memset(copy, 'X', n);
	free(copy);
	return rc;
}

static void decode_ok(struct topo_input *in, decoder fn, const char *text)
{
	char *cause = NULL;

	if (decode(in, fn, text, &cause) != 0)
		fail_msg("decode failed: %s", cause ? cause : "(no cause)");
	assert_null(cause);
}

/* The decoder fails and its cause contains every one of the NULL-ended texts. */
static void decode_fails(decoder fn, const char *text, ...)
{
	struct topo_input in;
	char *cause = NULL;
	const char *want;
	va_list ap;

	memset(&in, 0, sizeof(in));
	if (fn == topo_input_pods)
		decode_ok(&in, topo_input_nodes, "{\"items\":[]}");
	if (decode(&in, fn, text, &cause) == 0)
		fail_msg("decoded, expected a failure: %s", text);
	assert_non_null(cause);
	va_start(ap, text);
	while ((want = va_arg(ap, const char *)) != NULL)
		if (!strstr(cause, want))
			fail_msg("cause \"%s\" lacks \"%s\"", cause, want);
	va_end(ap);
	free(cause);
	topo_input_free(&in);
}

static int64_t res(const struct topo_input *in, size_t node, const char *resource, int used)
{
	int r = topo_resource_index(&in->cluster, resource);

	if (r < 0)
		fail_msg("resource %s not tracked", resource);
	return used ? in->nodes[node].used[r] : in->nodes[node].allocatable[r];
}

static const char *label(const struct topo_node *n, const char *key)
{
	return topo_node_label(n, key);
}

/* ---- nodes ---- */

/* Shaped like `kubectl get nodes -o json` (trimmed). */
static const char NODES_JSON[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":["
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\",\"labels\":{"
	"\"block\":\"b1\",\"rack\":\"r1\",\"kubernetes.io/hostname\":\"gpu-1\","
	"\"node.kubernetes.io/instance-type\":\"a3-highgpu-8g\"}},"
	"\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\","
	"\"effect\":\"NoSchedule\"},{\"key\":\"soon\",\"effect\":\"PreferNoSchedule\"}]},"
	"\"status\":{\"capacity\":{\"cpu\":\"8\"},\"allocatable\":{\"cpu\":\"7910m\",\"ephemeral-storage\":"
	"\"95Gi\",\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"8\","
	"\"pods\":\"110\"},\"conditions\":[]}},"
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"cpu-1\",\"labels\":{"
	"\"block\":\"b1\",\"rack\":\"r2\"}},\"spec\":{\"unschedulable\":true},"
	"\"status\":{\"allocatable\":{\"cpu\":\"1e3\",\"memory\":\"131072Mi\",\"pods\":\"250\"}}},"
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"cpu-2\"},"
	"\"spec\":{\"taints\":[{\"key\":\"maintenance\",\"effect\":\"NoExecute\"}]},"
	"\"status\":{\"allocatable\":{\"cpu\":4,\"memory\":\"8G\",\"pods\":\"2\"}}}]}";

static void nodes_from_kubectl_json(void **state)
{
	struct topo_input in;
	const struct topo_node *n;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, NODES_JSON);
	assert_int_equal(in.cluster.node_count, 3);
	n = &in.nodes[0];
	assert_string_equal(n->name, "gpu-1");
	assert_int_equal(n->label_count, 4);
	assert_string_equal(label(n, "rack"), "r1");
	assert_string_equal(label(n, "node.kubernetes.io/instance-type"), "a3-highgpu-8g");
	assert_null(label(n, "zone"));
	/* cpu, memory, pods first, then extended resources, then the others by name. */
	assert_string_equal(in.cluster.resources[0], "cpu");
	assert_string_equal(in.cluster.resources[1], "memory");
	assert_string_equal(in.cluster.resources[2], "pods");
	assert_string_equal(in.cluster.resources[3], "nvidia.com/gpu");
	assert_string_equal(in.cluster.resources[4], "ephemeral-storage");
	assert_int_equal(in.cluster.resource_count, 7);
	assert_int_equal(res(&in, 0, "cpu", 0), 7910);
	assert_int_equal(res(&in, 0, "memory", 0), 64LL * 1073741824 * 1000);
	assert_int_equal(res(&in, 0, "nvidia.com/gpu", 0), 8000);
	assert_int_equal(res(&in, 0, "pods", 0), 110); /* pods are counted in pods */
	assert_int_equal(res(&in, 1, "cpu", 0), 1000000); /* 1e3 cores */
	assert_int_equal(res(&in, 1, "memory", 0), 131072LL * 1048576 * 1000);
	assert_int_equal(res(&in, 2, "cpu", 0), 4000); /* a JSON number */
	assert_int_equal(res(&in, 2, "memory", 0), 8000000000000LL);
	assert_int_equal(res(&in, 1, "nvidia.com/gpu", 0), 0);
	assert_int_equal(n->taint_count, 2);
	assert_string_equal(n->taints[0].key, "nvidia.com/gpu");
	assert_string_equal(n->taints[0].value, "present");
	assert_int_equal(n->taints[0].effect, TOPO_NO_SCHEDULE);
	assert_int_equal(n->taints[1].effect, TOPO_PREFER_NO_SCHEDULE);
	assert_null(n->taints[1].value);
	assert_int_equal(in.nodes[2].taints[0].effect, TOPO_NO_EXECUTE);
	assert_false(in.nodes[0].unschedulable);
	assert_true(in.nodes[1].unschedulable);
	assert_int_equal(in.nodes[2].label_count, 0);
	assert_true(in.store.stored > 0);
	topo_input_free(&in);
	assert_null(in.store.blocks);
}

static void nodes_from_yaml_and_single_node(void **state)
{
	struct topo_input in;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(
		&in, topo_input_nodes,
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    rack: \"7\"\n    empty: \"\"\n"
		"spec:\n  unschedulable: true\n  taints: null\nstatus:\n  allocatable:\n    cpu: 2\n    memory: 1Gi\n"
		"    pods: '110'\n");
	assert_int_equal(in.cluster.node_count, 1);
	assert_string_equal(in.nodes[0].name, "n1");
	assert_string_equal(label(&in.nodes[0], "rack"), "7");
	assert_string_equal(label(&in.nodes[0], "empty"), "");
	assert_true(in.nodes[0].unschedulable);
	assert_int_equal(res(&in, 0, "cpu", 0), 2000);
	assert_int_equal(res(&in, 0, "pods", 0), 110);
	topo_input_free(&in);
	/* A bare JSON list works too, and an empty List is no nodes. */
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, "[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}]");
	assert_int_equal(in.cluster.node_count, 2);
	topo_input_free(&in);
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, "{\"kind\":\"NodeList\",\"items\":[]}");
	assert_int_equal(in.cluster.node_count, 0);
	topo_input_free(&in);
}

/* Nine resources on the nodes: the JobSet's, read first, is kept. */
static void requested_resources_are_tracked_first(void **state)
{
	static const char nodes[] =
		"{\"items\":[{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"cpu\":\"1\","
		"\"memory\":\"1Gi\",\"pods\":\"10\",\"a.io/x\":\"1\",\"b.io/x\":\"1\",\"c.io/x\":\"1\","
		"\"d.io/x\":\"1\",\"e.io/x\":\"1\",\"zz.io/rare\":\"3\"}}}]}";
	static const char jobset[] = "{\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"template\":{\"spec\":{"
				     "\"template\":{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{"
				     "\"zz.io/rare\":\"1\"}}}]}}}}}]}}";
	struct topo_input in;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, nodes);
	assert_int_equal(in.cluster.resource_count, TOPO_RESOURCES_MAX);
	assert_int_equal(topo_resource_index(&in.cluster, "zz.io/rare"), -1);
	topo_input_free(&in);
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, jobset);
	decode_ok(&in, topo_input_nodes, nodes);
	assert_int_equal(topo_resource_index(&in.cluster, "zz.io/rare"), 3);
	assert_int_equal(res(&in, 0, "zz.io/rare", 0), 3000);
	assert_int_equal(topo_resource_index(&in.cluster, "e.io/x"), -1);
	topo_input_free(&in);
}

/* ---- pods ---- */

static const char TWO_NODES[] =
	"{\"items\":[{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":"
	"\"64\",\"memory\":\"256Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"}}},"
	"{\"metadata\":{\"name\":\"n2\"},\"status\":{\"allocatable\":{\"cpu\":\"64\","
	"\"memory\":\"256Gi\",\"pods\":\"110\"}}}]}";

static void pods_count_bound_and_running_only(void **state)
{
	static const char pods[] =
		"{\"kind\":\"List\",\"items\":["
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
		"\"memory\":\"1Gi\"}}},{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
		"\"status\":{\"phase\":\"Running\"}},"
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]},"
		"\"status\":{\"phase\":\"Pending\"}},"
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
		"\"status\":{\"phase\":\"Succeeded\"}},"
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
		"\"status\":{\"phase\":\"Failed\"}},"
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
		"\"status\":{\"phase\":\"Pending\"}},"
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"gone\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
		"\"status\":{\"phase\":\"Running\"}},"
		"{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
		"\"status\":{\"phase\":\"Pending\"}},"
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n2\","
		"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"3\","
		"\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}"
		"]}";
	struct topo_input in;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, TWO_NODES);
	decode_ok(&in, topo_input_pods, pods);
	/* The running pod (1.5 cpu) and the bound pending one (2 cpu). */
	assert_int_equal(res(&in, 0, "cpu", 1), 3500);
	assert_int_equal(res(&in, 0, "memory", 1), 1073741824000LL);
	assert_int_equal(res(&in, 0, "pods", 1), 2);
	/* Limits stand for missing requests (API defaulting). */
	assert_int_equal(res(&in, 1, "cpu", 1), 3000);
	assert_int_equal(res(&in, 1, "nvidia.com/gpu", 1), 1000);
	assert_int_equal(res(&in, 1, "pods", 1), 1);
	topo_input_free(&in);
}

static void pods_init_containers_sidecars_and_overhead(void **state)
{
	/* max(sum(containers) = 1 cpu, max(init) = 4 cpu) + overhead 250m = 4.25 cpu;
	 * memory: max(3Gi, 1Gi) + 0 = 3Gi. */
	static const char init_max[] = "items:\n"
				       "- kind: Pod\n"
				       "  metadata: {name: p}\n"
				       "  spec:\n"
				       "    nodeName: n1\n"
				       "    containers:\n"
				       "    - resources: {requests: {cpu: 500m, memory: 1Gi}}\n"
				       "    - resources: {requests: {cpu: 500m, memory: 2Gi}}\n"
				       "    initContainers:\n"
				       "    - resources: {requests: {cpu: 4}}\n"
				       "    - resources: {requests: {cpu: 2, memory: 1Gi}}\n"
				       "    overhead: {cpu: 250m}\n"
				       "  status: {phase: Running}\n";
	/* A sidecar (restartPolicy Always) of 1 cpu: containers 1 + 1 = 2; the
	 * init container after it needs 1.5 + 1 = 2.5; the one before it 2. */
	static const char sidecar[] = "items:\n"
				      "- kind: Pod\n"
				      "  spec:\n"
				      "    nodeName: n1\n"
				      "    containers:\n"
				      "    - resources: {requests: {cpu: 1}}\n"
				      "    initContainers:\n"
				      "    - name: before\n"
				      "      resources: {requests: {cpu: 2}}\n"
				      "    - name: mesh\n"
				      "      restartPolicy: Always\n"
				      "      resources: {requests: {cpu: 1}}\n"
				      "    - name: after\n"
				      "      resources: {requests: {cpu: 1500m}}\n"
				      "  status: {phase: Running}\n";
	/* Pod-level resources replace the containers' sum for cpu and memory. */
	static const char pod_level[] =
		"items:\n"
		"- kind: Pod\n"
		"  spec:\n"
		"    nodeName: n1\n"
		"    resources: {requests: {cpu: 6}, limits: {memory: 4Gi}}\n"
		"    containers:\n"
		"    - resources: {requests: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 2}}\n"
		"  status: {phase: Running}\n";
	struct topo_input in;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, TWO_NODES);
	decode_ok(&in, topo_input_pods, init_max);
	assert_int_equal(res(&in, 0, "cpu", 1), 4250);
	assert_int_equal(res(&in, 0, "memory", 1), 3LL * 1073741824000LL);
	topo_input_free(&in);
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, TWO_NODES);
	decode_ok(&in, topo_input_pods, sidecar);
	assert_int_equal(res(&in, 0, "cpu", 1), 2500);
	topo_input_free(&in);
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, TWO_NODES);
	decode_ok(&in, topo_input_pods, pod_level);
	assert_int_equal(res(&in, 0, "cpu", 1), 6000);
	assert_int_equal(res(&in, 0, "memory", 1), 4LL * 1073741824000LL);
	assert_int_equal(res(&in, 0, "nvidia.com/gpu", 1), 2000);
	topo_input_free(&in);
}

/* ---- JobSets ---- */

static const char JOBSET_JSON[] =
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"train\","
	"\"annotations\":{\"muster.dev/topology-preferred\":\"block\"}},\"spec\":{\"replicatedJobs\":["
	"{\"name\":\"workers\",\"replicas\":4,\"template\":{\"spec\":{\"parallelism\":8,\"completions\":8,"
	"\"template\":{\"metadata\":{\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"rack\","
	"\"kueue.x-k8s.io/podset-slice-required-topology\":\"kubernetes.io/hostname\","
	"\"kueue.x-k8s.io/podset-slice-size\":\"4\"}},\"spec\":{"
	"\"nodeSelector\":{\"pool\":\"a3\"},"
	"\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},"
	"{\"key\":\"team\",\"operator\":\"Equal\",\"value\":\"ml\"},{\"operator\":\"Exists\"}],"
	"\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
	"\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":"
	"[\"z1\",\"z2\"]},{\"key\":\"spot\",\"operator\":\"DoesNotExist\"}]},"
	"{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"4\"]}],"
	"\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"bad-node\"]}]}]}},"
	"\"podAffinity\":{}},"
	"\"containers\":[{\"name\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"16Gi\"},"
	"\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}}}},"
	"{\"name\":\"leader\",\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"l\"}]}}}}}"
	"]}}";

/* The same JobSet as YAML, as a user would write it. */
static const char JOBSET_YAML[] =
	"apiVersion: jobset.x-k8s.io/v1alpha2\n"
	"kind: JobSet\n"
	"metadata:\n"
	"  name: train\n"
	"  annotations:\n"
	"    muster.dev/topology-preferred: block\n"
	"spec:\n"
	"  replicatedJobs:\n"
	"  - name: workers\n"
	"    replicas: 4\n"
	"    template:\n"
	"      spec:\n"
	"        parallelism: 8\n"
	"        completions: 8\n"
	"        template:\n"
	"          metadata:\n"
	"            annotations:\n"
	"              kueue.x-k8s.io/podset-required-topology: rack\n"
	"              kueue.x-k8s.io/podset-slice-required-topology: kubernetes.io/hostname\n"
	"              kueue.x-k8s.io/podset-slice-size: \"4\"\n"
	"          spec:\n"
	"            nodeSelector:\n"
	"              pool: a3\n"
	"            tolerations:\n"
	"            - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
	"            - key: team\n"
	"              operator: Equal\n"
	"              value: ml\n"
	"            - operator: Exists\n"
	"            affinity:\n"
	"              nodeAffinity:\n"
	"                requiredDuringSchedulingIgnoredDuringExecution:\n"
	"                  nodeSelectorTerms:\n"
	"                  - matchExpressions:\n"
	"                    - {key: zone, operator: In, values: [z1, z2]}\n"
	"                    - {key: spot, operator: DoesNotExist}\n"
	"                  - matchExpressions:\n"
	"                    - {key: gen, operator: Gt, values: [\"4\"]}\n"
	"                    matchFields:\n"
	"                    - {key: metadata.name, operator: NotIn, values: [bad-node]}\n"
	"              podAffinity: {}\n"
	"            containers:\n"
	"            - name: t\n"
	"              resources:\n"
	"                requests: {cpu: 2, memory: 16Gi}\n"
	"                limits:\n"
	"                  nvidia.com/gpu: 8\n"
	"  - name: leader\n"
	"    template:\n"
	"      spec:\n"
	"        template:\n"
	"          spec:\n"
	"            containers:\n"
	"            - name: l\n";

static long long request_of(const struct topo_jobset_group *g, const char *name)
{
	for (size_t i = 0; i < g->pod.request_count; i++)
		if (strcmp(g->pod.request_names[i], name) == 0)
			return g->pod.request_values[i];
	return -1;
}

static void check_train_jobset(const struct topo_input *in)
{
	const struct topo_jobset_group *w = &in->jobset.groups[0], *l = &in->jobset.groups[1];

	assert_string_equal(in->jobset.name, "train");
	assert_string_equal(in->jobset.whole_preferred, "block");
	assert_null(in->jobset.whole_required);
	assert_false(in->jobset.whole_network.set);
	assert_int_equal(in->jobset.group_count, 2);
	assert_string_equal(w->name, "workers");
	assert_int_equal(w->replicas, 4);
	assert_int_equal(w->pods, 8);
	assert_string_equal(w->required, "rack");
	assert_null(w->preferred);
	assert_string_equal(w->slice_level, "kubernetes.io/hostname");
	assert_int_equal(w->slice_size, 4);
	assert_int_equal(request_of(w, "cpu"), 2000);
	assert_int_equal(request_of(w, "memory"), 16LL * 1073741824000LL);
	assert_int_equal(request_of(w, "nvidia.com/gpu"), 8000); /* from the limit */
	assert_int_equal(w->pod.selector_count, 1);
	assert_string_equal(w->pod.selector[0].key, "pool");
	assert_string_equal(w->pod.selector[0].value, "a3");
	assert_int_equal(w->pod.toleration_count, 3);
	assert_string_equal(w->pod.tolerations[0].key, "nvidia.com/gpu");
	assert_true(w->pod.tolerations[0].exists);
	assert_false(w->pod.tolerations[0].any_effect);
	assert_int_equal(w->pod.tolerations[0].effect, TOPO_NO_SCHEDULE);
	assert_false(w->pod.tolerations[1].exists);
	assert_string_equal(w->pod.tolerations[1].value, "ml");
	assert_true(w->pod.tolerations[1].any_effect);
	assert_true(w->pod.tolerations[2].exists);
	assert_null(w->pod.tolerations[2].key);
	assert_int_equal(w->pod.affinity_count, 2);
	assert_int_equal(w->pod.affinity[0].requirement_count, 2);
	assert_string_equal(w->pod.affinity[0].requirements[0].key, "zone");
	assert_int_equal(w->pod.affinity[0].requirements[0].op, TOPO_OP_IN);
	assert_int_equal(w->pod.affinity[0].requirements[0].value_count, 2);
	assert_string_equal(w->pod.affinity[0].requirements[0].values[1], "z2");
	assert_int_equal(w->pod.affinity[0].requirements[1].op, TOPO_OP_DOES_NOT_EXIST);
	assert_int_equal(w->pod.affinity[1].requirement_count, 2);
	assert_int_equal(w->pod.affinity[1].requirements[0].op, TOPO_OP_GT);
	assert_true(w->pod.affinity[1].requirements[1].on_name);
	assert_int_equal(w->pod.affinity[1].requirements[1].op, TOPO_OP_NOT_IN);
	assert_string_equal(l->name, "leader");
	assert_int_equal(l->replicas, 1);
	assert_int_equal(l->pods, 1);
	assert_int_equal(l->pod.request_count, 0);
	assert_null(l->required);
	assert_int_equal(l->pod.affinity_count, 0);
}

static void jobset_json_and_yaml_decode_alike(void **state)
{
	struct topo_input in;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, JOBSET_JSON);
	check_train_jobset(&in);
	topo_input_free(&in);
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, JOBSET_YAML);
	check_train_jobset(&in);
	topo_input_free(&in);
}

/* A JobSet with one replicated job whose pod template has `annotations` (YAML lines at 12 spaces). */
static void jobset_with(struct topo_input *in, const char *jobset_annotations, const char *annotations,
			const char *replicas, const char *parallelism)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "kind: JobSet\nmetadata:\n  name: js\n  annotations:\n    x: y\n%s"
		 "spec:\n  replicatedJobs:\n  - name: w\n    replicas: %s\n    template:\n      spec:\n"
		 "        parallelism: %s\n        template:\n          metadata:\n            annotations:\n"
		 "              x: y\n%s"
		 "          spec:\n            containers:\n            - resources: {requests: {cpu: 1}}\n",
		 jobset_annotations, replicas, parallelism, annotations);
	memset(in, 0, sizeof(*in));
	decode_ok(in, topo_input_jobset, text);
}

static void jobset_volcano_and_kueue_annotations(void **state)
{
	struct topo_input in;
	const struct topo_jobset_group *g = &in.jobset.groups[0];

	(void)state;
	jobset_with(&in,
		    "    muster.dev/network-topology: '{\"mode\": \"hard\", \"highestTierAllowed\": 2}'\n",
		    "              muster.dev/network-topology: '{mode: soft, highestTierName: nvlink}'\n"
		    "              muster.dev/partition-policy: |\n"
		    "                {totalPartitions: 4, partitionSize: 2, minPartitions: 3,\n"
		    "                 networkTopology: {mode: hard, highestTierAllowed: 1}}\n"
		    "              kueue.x-k8s.io/podset-group-name: lws\n",
		    "2", "8");
	assert_true(in.jobset.whole_network.set);
	assert_true(in.jobset.whole_network.hard);
	assert_int_equal(in.jobset.whole_network.tier, 2);
	assert_true(g->network.set);
	assert_false(g->network.hard);
	assert_string_equal(g->network.tier_name, "nvlink");
	assert_int_equal(g->partitions, 4);
	assert_int_equal(g->partition_size, 2);
	assert_int_equal(g->min_partitions, 3);
	assert_true(g->partition_network.hard);
	assert_int_equal(g->partition_network.tier, 1);
	assert_string_equal(g->podset_group, "lws");
	topo_input_free(&in);
	jobset_with(&in, "    muster.dev/topology-required: rack\n",
		    "              kueue.x-k8s.io/podset-unconstrained-topology: \"true\"\n", "1", "3");
	assert_string_equal(in.jobset.whole_required, "rack");
	assert_true(g->unconstrained);
	assert_int_equal(g->pods, 3);
	topo_input_free(&in);
}

/* Each Job alone in a rack and the whole JobSet in one rack: with two Jobs
 * the names alone say no cluster holds both, so the decoder refuses it (the
 * webhook's gate then refuses it at creation). One Job keeps both. Jobs are
 * counted as the core places them: a Kueue PodSet of 3 replicas is one
 * instance, and an exclusive replicated job of no replica makes no Job. */
static void exclusive_per_the_jobsets_own_level_with_two_jobs_is_refused(void **state)
{
	static const char *const top = "kind: JobSet\nmetadata:\n  name: js\n  annotations:\n"
				       "    muster.dev/topology-required: rack\n"
				       "    alpha.jobset.sigs.k8s.io/exclusive-topology: rack\n";
	static const char *const rest = "spec:\n  replicatedJobs:\n  - name: w\n    replicas: %s\n"
					"    template:\n      spec:\n        parallelism: 2\n"
					"        template:\n          spec:\n            containers:\n"
					"            - resources: {requests: {cpu: 1}}\n";
	char text[1024], tail[512];
	struct topo_input in;

	(void)state;
	snprintf(tail, sizeof(tail), rest, "2");
	snprintf(text, sizeof(text), "%s%s", top, tail);
	decode_fails(topo_input_jobset, text,
		     "jobset: replicated job w is exclusive per rack (each Job alone in its rack), yet the "
		     "JobSet's required rack puts all 2 of its Jobs in one rack: no placement holds both",
		     NULL);
	snprintf(tail, sizeof(tail), rest, "1");
	snprintf(text, sizeof(text), "%s%s", top, tail);
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, text);
	topo_input_free(&in);
	/* No replica of the exclusive one, and three of a Kueue PodSet, which
	 * the core places as one instance: one Job's worth, kept. */
	for (int replicas = 1; replicas >= 0; replicas--) {
		snprintf(text, sizeof(text),
			 "kind: JobSet\nmetadata:\n  name: js\n  annotations:\n"
			 "    muster.dev/topology-required: rack\n"
			 "spec:\n  replicatedJobs:\n  - name: w\n    replicas: %d\n    template:\n"
			 "      metadata:\n        annotations:\n"
			 "          alpha.jobset.sigs.k8s.io/exclusive-topology: rack\n"
			 "      spec:\n        parallelism: 2\n        template:\n          spec:\n"
			 "            containers:\n            - resources: {requests: {cpu: 1}}\n"
			 "  - name: k\n    replicas: 3\n    template:\n      spec:\n        parallelism: 2\n"
			 "        template:\n          metadata:\n            annotations:\n"
			 "              kueue.x-k8s.io/podset-required-topology: rack\n          spec:\n"
			 "            containers:\n            - resources: {requests: {cpu: 1}}\n",
			 replicas);
		if (replicas) {
			decode_fails(topo_input_jobset, text, "puts all 2 of its Jobs in one rack", NULL);
			continue;
		}
		memset(&in, 0, sizeof(in));
		decode_ok(&in, topo_input_jobset, text);
		topo_input_free(&in);
	}
}

/* ---- HyperNodes ---- */

static const char HYPERNODES_YAML[] = "apiVersion: topology.volcano.sh/v1alpha1\n"
				      "kind: HyperNode\n"
				      "metadata:\n"
				      "  name: spine-0\n"
				      "spec:\n"
				      "  tier: 2\n"
				      "  tierName: spine\n"
				      "  members:\n"
				      "  - type: HyperNode\n"
				      "    selector:\n"
				      "      regexMatch:\n"
				      "        pattern: ^leaf-[ab]$\n"
				      "---\n"
				      "apiVersion: topology.volcano.sh/v1alpha1\n"
				      "kind: HyperNode\n"
				      "metadata:\n"
				      "  name: leaf-a\n"
				      "spec:\n"
				      "  tier: 1\n"
				      "  tierName: leaf\n"
				      "  members:\n"
				      "  - type: Node\n"
				      "    selector:\n"
				      "      exactMatch:\n"
				      "        name: n1\n"
				      "  - type: Node\n"
				      "    selector:\n"
				      "      regexMatch:\n"
				      "        pattern: \"^n[23]$\"\n"
				      "---\n"
				      "apiVersion: topology.volcano.sh/v1alpha1\n"
				      "kind: HyperNode\n"
				      "metadata:\n"
				      "  name: leaf-b\n"
				      "spec:\n"
				      "  tier: \"1\"\n"
				      "  members:\n"
				      "  - type: Node\n"
				      "    selector:\n"
				      "      labelMatch:\n"
				      "        matchLabels:\n"
				      "          rack: r2\n"
				      "        matchExpressions:\n"
				      "        - {key: broken, operator: DoesNotExist}\n"
				      "---\n";

static const char HN_NODES[] =
	"{\"items\":["
	"{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"n2\"},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"n3\"},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"n4\",\"labels\":{\"rack\":\"r2\"}},\"status\":{\"allocatable\":{\"cpu\":\"4\","
	"\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"n5\",\"labels\":{\"rack\":\"r2\"}},\"status\":{\"allocatable\":{\"cpu\":\"4\","
	"\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"n6\",\"labels\":{\"rack\":\"r2\",\"broken\":\"yes\"}},\"status\":{"
	"\"allocatable\":{\"cpu\":\"4\",\"pods\":\"110\"}}}]}";

static void hypernodes_from_yaml(void **state)
{
	struct topo_input in;
	struct topo_tree *t;
	char *cause = NULL, path[128];

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_nodes, HN_NODES);
	decode_ok(&in, topo_input_hypernodes, HYPERNODES_YAML);
	assert_int_equal(in.hypernode_count, 3);
	assert_string_equal(in.hypernodes[0].name, "spine-0");
	assert_int_equal(in.hypernodes[0].tier, 2);
	assert_string_equal(in.hypernodes[0].tier_name, "spine");
	assert_int_equal(in.hypernodes[0].members[0].kind, TOPO_MEMBER_HYPERNODE);
	assert_string_equal(in.hypernodes[0].members[0].regex, "^leaf-[ab]$");
	assert_string_equal(in.hypernodes[1].members[0].exact, "n1");
	assert_int_equal(in.hypernodes[2].tier, 1); /* a string tier */
	assert_int_equal(in.hypernodes[2].members[0].match_label_count, 1);
	assert_int_equal(in.hypernodes[2].members[0].match_expression_count, 1);
	t = topo_tree_from_hypernodes(&in.cluster, in.hypernodes, in.hypernode_count, &cause);
	if (!t)
		fail_msg("%s", cause);
	assert_string_equal(topo_tree_path(t, t->node_domain[0], path, sizeof(path)), "spine-0/leaf-a/n1");
	assert_string_equal(topo_tree_path(t, t->node_domain[2], path, sizeof(path)), "spine-0/leaf-a/n3");
	assert_string_equal(topo_tree_path(t, t->node_domain[4], path, sizeof(path)), "spine-0/leaf-b/n5");
	assert_int_equal(t->node_domain[5], TOPO_NONE); /* labelled broken: excluded */
	assert_int_equal(t->excluded_count, 1);
	assert_int_equal(topo_tree_level(t, "leaf"), 2);
	assert_int_equal(topo_tree_level(t, "spine"), 1);
	topo_tree_free(t);
	topo_input_free(&in);
	/* Volcano's highestTierName, for the whole JobSet and per child Job, then placed. */
	{
		struct topo_group groups[TOPO_GROUPS_MAX];
		struct topo_request req;
		struct topo_placement *p = NULL;

		jobset_with(
			&in, "    muster.dev/network-topology: '{mode: hard, highestTierName: spine}'\n",
			"              muster.dev/network-topology: '{mode: hard, highestTierName: leaf}'\n",
			"2", "5");
		decode_ok(&in, topo_input_nodes, HN_NODES);
		decode_ok(&in, topo_input_hypernodes, HYPERNODES_YAML);
		t = topo_tree_from_hypernodes(&in.cluster, in.hypernodes, in.hypernode_count, &cause);
		assert_non_null(t);
		assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
		assert_int_equal(req.whole.mode, TOPO_MODE_REQUIRED);
		assert_int_equal(req.whole.level, 1);
		assert_int_equal(groups[0].constraint.mode, TOPO_MODE_REQUIRED);
		assert_int_equal(groups[0].constraint.level, 2);
		if (topo_place(t, &req, &p, &cause) != 0)
			fail_msg("%s", cause);
		/* The deepest domain holding the whole JobSet: leaf-a (n1-n3, 12 pods) holds both jobs of 5.
		 */
		assert_string_equal(topo_tree_path(t, p->whole_domain, path, sizeof(path)), "spine-0/leaf-a");
		assert_int_equal(p->instance_domain[0], p->whole_domain);
		assert_int_equal(p->instance_domain[1], p->whole_domain);
		topo_placement_free(p);
		topo_tree_free(t);
		topo_input_free(&in);
	}
	/* The design document's short form (a bare name per member) and a JSON List. */
	memset(&in, 0, sizeof(in));
	decode_ok(
		&in, topo_input_hypernodes,
		"{\"kind\":\"List\",\"items\":[{\"name\":\"s0\",\"spec\":{\"tier\":1,\"members\":[{\"name\":"
		"\"n1\"},{\"name\":\"s9\",\"type\":\"HyperNode\"}]}}]}");
	assert_string_equal(in.hypernodes[0].members[0].exact, "n1");
	assert_int_equal(in.hypernodes[0].members[1].kind, TOPO_MEMBER_HYPERNODE);
	topo_input_free(&in);
}

/* ---- the request, and on through the placement ---- */

static const char RACK_NODES[] =
	"{\"items\":["
	"{\"metadata\":{\"name\":\"a1\",\"labels\":{\"block\":\"b1\",\"rack\":\"r1\"}},\"status\":{\"allocatable\":"
	"{\"cpu\":\"4\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"a2\",\"labels\":{\"block\":\"b1\",\"rack\":\"r1\"}},\"status\":{\"allocatable\":"
	"{\"cpu\":\"4\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"b1\",\"labels\":{\"block\":\"b1\",\"rack\":\"r2\"}},\"status\":{\"allocatable\":"
	"{\"cpu\":\"4\",\"pods\":\"110\"}}},"
	"{\"metadata\":{\"name\":\"b2\",\"labels\":{\"block\":\"b1\",\"rack\":\"r2\"}},\"status\":{\"allocatable\":"
	"{\"cpu\":\"4\",\"pods\":\"110\"}}}]}";

static const char *const LEVELS[] = { "block", "rack", "kubernetes.io/hostname" };

static void request_resolves_levels_tiers_and_groups(void **state)
{
	struct topo_input in;
	struct topo_tree *t;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	char *cause = NULL;

	(void)state;
	/* Volcano names in levels mode: tier 1 is rack (the lowest level of two). */
	jobset_with(
		&in, "    muster.dev/network-topology: '{\"mode\": \"soft\", \"highestTierAllowed\": 2}'\n",
		"              muster.dev/network-topology: '{mode: hard, highestTierAllowed: 1}'\n"
		"              muster.dev/partition-policy: '{totalPartitions: 4, partitionSize: 2, minPartitions: 2}'\n",
		"1", "8");
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_non_null(t);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
	assert_int_equal(req.whole.mode, TOPO_MODE_PREFERRED);
	assert_int_equal(req.whole.level, 1);
	assert_int_equal(groups[0].constraint.mode, TOPO_MODE_REQUIRED);
	assert_int_equal(groups[0].constraint.level, 2);
	assert_int_equal(groups[0].slice_size, 2);
	assert_int_equal(groups[0].slice_level, 0);
	assert_int_equal(groups[0].min_slices, 2);
	assert_int_equal(groups[0].shape.requests[0], 1000);
	topo_tree_free(t);
	topo_input_free(&in);
	/* An unknown level is named. */
	jobset_with(&in, "", "              kueue.x-k8s.io/podset-required-topology: zone\n", "1", "1");
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), -1);
	assert_non_null(strstr(cause, "jobset: w: zone is not a level of the topology"));
	free(cause);
	topo_tree_free(t);
	topo_input_free(&in);
	/* A tier name that does not exist. */
	jobset_with(&in, "", "              muster.dev/network-topology: '{highestTierName: spine}'\n", "1",
		    "1");
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), -1);
	assert_non_null(strstr(cause, "highestTierName spine is not a tier"));
	free(cause);
	topo_tree_free(t);
	topo_input_free(&in);
}

/* Leader and workers share a podset group: both land in one rack. */
/* Kueue's meaning: a replicated job is one PodSet. podset-required-topology
 * holds every pod of every replica in one domain; co-placed PodSets may have
 * different replica counts; slices run over the PodSet's ranks (job index x
 * pods per job + completion index); a group without a level is spread, not
 * refused. Each pod is still named by its own Job. */
/* Volcano's soft partitions: the tier first, as hard; when no domain of it
 * holds a partition, anywhere in the job's domain (soft never refuses for
 * topology). Hard partitions are refused there. */
/* Multi-layer slices from the annotation down to the placement: every 4
 * ranks in one block, every 2 of them in one rack. */
static void slice_layers_from_the_annotation(void **state)
{
	static const char jobset[] =
		"kind: JobSet\nspec:\n  replicatedJobs:\n"
		"  - name: w\n    replicas: 2\n    template:\n      spec:\n        parallelism: 4\n"
		"        template:\n          metadata:\n            annotations:\n"
		"              kueue.x-k8s.io/podset-slice-required-topology-constraints: >-\n"
		"                [{\"topology\": \"block\", \"size\": 4}, {\"topology\": \"rack\", \"size\": 2}]\n"
		"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n";
	struct topo_input in;
	struct topo_tree *t;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	struct topo_placement *p = NULL;
	char *cause = NULL;

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, jobset);
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_non_null(t);
	if (topo_jobset_place(&in.jobset, t, groups, &req, &p, &cause))
		fail_msg("%s", cause);
	assert_int_equal(groups[0].slice_size, 4);
	assert_int_equal(groups[0].inner_count, 1);
	assert_int_equal(groups[0].inner[0].size, 2);
	for (uint32_t r = 0; r < 8; r++)
		assert_int_equal(p->pods[r].domain, p->pods[r - r % 2].domain);
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);
}

static void soft_partitions_prefer_their_tier(void **state)
{
#define PARTITIONS(mode, size)                                                                               \
	"kind: JobSet\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n"                  \
	"        parallelism: " #size "\n        template:\n          metadata:\n            annotations:\n" \
	"              muster.dev/partition-policy: '{totalPartitions: 1, partitionSize: " #size             \
	", networkTopology: {mode: " mode ", highestTierAllowed: 1}}'\n"                                     \
	"          spec: {containers: [{resources: {requests: {cpu: 3}}}]}\n"
	static const char *const cases[][2] = { { PARTITIONS("soft", 2), "" },
						{ PARTITIONS("soft", 3), "" },
						{ PARTITIONS("hard", 3),
						  "at most 0 of 3 pods fit in whole slices of 3" } };
	const char *levels[] = { "block", "rack" };

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct topo_input in;
		struct topo_tree *t;
		struct topo_group groups[TOPO_GROUPS_MAX];
		struct topo_request req;
		struct topo_placement *p = NULL;
		char *cause = NULL;
		int rc;

		memset(&in, 0, sizeof(in));
		decode_ok(&in, topo_input_jobset, cases[c][0]);
		decode_ok(&in, topo_input_nodes, RACK_NODES); /* a pod of 3 cpu per node: 2 per rack */
		t = topo_tree_from_levels(&in.cluster, levels, 2, &cause);
		assert_non_null(t);
		rc = topo_jobset_place(&in.jobset, t, groups, &req, &p, &cause);
		if (cases[c][1][0]) {
			assert_int_equal(rc, -1);
			if (!cause || !strstr(cause, cases[c][1]))
				fail_msg("case %zu: %s", c, cause ? cause : "(no cause)");
		} else {
			if (rc)
				fail_msg("case %zu: %s", c, cause);
			/* A partition of 2 fits in one rack (its tier); one of 3 spans two. */
			if (c == 0)
				assert_int_equal(p->pods[0].domain, p->pods[1].domain);
			else
				assert_int_not_equal(p->pods[0].domain, p->pods[2].domain);
		}
		free(cause);
		topo_placement_free(p);
		topo_tree_free(t);
		topo_input_free(&in);
	}
#undef PARTITIONS
}

static void podsets_hold_every_replica(void **state)
{
	static const char jobset[] =
		"kind: JobSet\nmetadata: {name: lws}\nspec:\n  replicatedJobs:\n"
		"  - name: leader\n    template:\n      spec:\n        template:\n          metadata:\n"
		"            annotations:\n              kueue.x-k8s.io/podset-required-topology: rack\n"
		"              kueue.x-k8s.io/podset-group-name: g\n"
		"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n"
		"  - name: workers\n    replicas: 3\n    template:\n      spec:\n        parallelism: 2\n"
		"        template:\n          metadata:\n            annotations:\n"
		"              kueue.x-k8s.io/podset-required-topology: rack\n"
		"              kueue.x-k8s.io/podset-group-name: g\n"
		"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n";
	static const char spread[] =
		"kind: JobSet\nspec:\n  replicatedJobs:\n"
		"  - name: leader\n    template:\n      spec:\n        template:\n          metadata:\n"
		"            annotations: {kueue.x-k8s.io/podset-group-name: g}\n"
		"          spec: {containers: [{resources: {requests: {cpu: 4}}}]}\n"
		"  - name: workers\n    replicas: 3\n    template:\n      spec:\n        parallelism: 4\n"
		"        template:\n          metadata:\n            annotations:\n"
		"              kueue.x-k8s.io/podset-group-name: g\n"
		"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n";
	static const char sliced[] =
		"kind: JobSet\nspec:\n  replicatedJobs:\n"
		"  - name: workers\n    replicas: 3\n    template:\n      spec:\n        parallelism: 4\n"
		"        template:\n          metadata:\n            annotations:\n"
		"              kueue.x-k8s.io/podset-slice-required-topology: rack\n"
		"              kueue.x-k8s.io/podset-slice-size: '6'\n"
		"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n";
	struct topo_input in;
	struct topo_tree *t;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	struct topo_placement *p = NULL;
	char *cause = NULL, path[64], first[64] = "";

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, jobset);
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_non_null(t);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
	/* The workers' 3 Jobs are one PodSet of 6 pods, co-placed with the leader. */
	assert_int_equal(groups[1].replicas, 1);
	assert_int_equal(groups[1].pods, 6);
	assert_int_equal(groups[1].job_pods, 2);
	assert_int_equal(groups[0].together, groups[1].together);
	if (topo_place(t, &req, &p, &cause) != 0)
		fail_msg("%s", cause);
	assert_int_equal(p->pod_count, 7);
	for (size_t i = 0; i < p->pod_count; i++) {
		topo_tree_path(t, p->pods[i].domain, path, sizeof(path));
		if (!first[0])
			snprintf(first, sizeof(first), "%s", path);
		assert_string_equal(path, first); /* all 7 in one rack of 8 */
	}
	/* Pods named by their own Job: workers 0/0 0/1 1/0 1/1 2/0 2/1. */
	for (uint32_t i = 0; i < 6; i++) {
		assert_int_equal(p->pods[1 + i].group, 1);
		assert_int_equal(p->pods[1 + i].job_index, i / 2);
		assert_int_equal(p->pods[1 + i].completion, i % 2);
	}
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);

	/* Without a level, the group is not held together: the leader's 4 cpu
	 * and the 12 workers' pods (16 cpu in all) spread over both racks. */
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, spread);
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_non_null(t);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
	assert_int_equal(groups[0].together, 0);
	if (topo_place(t, &req, &p, &cause) != 0)
		fail_msg("%s", cause);
	assert_int_equal(p->pod_count, 13);
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);
	/* Slices run over the PodSet's ranks: 3 Jobs of 4 pods in slices of 6,
	 * so ranks 0-5 (job 0 and half of job 1) share a rack, 6-11 another. */
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, sliced);
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_non_null(t);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
	if (topo_place(t, &req, &p, &cause) != 0)
		fail_msg("%s", cause);
	for (uint32_t i = 0; i < 12; i++)
		assert_int_equal(p->pods[i].domain, p->pods[i / 6 * 6].domain);
	assert_int_not_equal(p->pods[0].domain, p->pods[6].domain); /* a rack holds 8 */
	assert_int_equal(p->pods[5].job_index, 1);
	assert_int_equal(p->pods[5].completion, 1);
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);
	/* Volcano partitions count per child Job: a replicated job with both a
	 * Kueue level and a partition policy is not merged into one PodSet
	 * (its minimum of partitions would then hold for all replicas). */
	{
		static const char both[] =
			"kind: JobSet\nspec:\n  replicatedJobs:\n"
			"  - name: w\n    replicas: 2\n    template:\n      spec:\n        parallelism: 4\n"
			"        template:\n          metadata:\n            annotations:\n"
			"              kueue.x-k8s.io/podset-preferred-topology: block\n"
			"              muster.dev/partition-policy: '{totalPartitions: 2, partitionSize: 2, minPartitions: 1}'\n"
			"          spec: {containers: [{resources: {requests: {cpu: 1}}}]}\n";

		memset(&in, 0, sizeof(in));
		decode_ok(&in, topo_input_jobset, both);
		decode_ok(&in, topo_input_nodes, RACK_NODES);
		t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
		assert_non_null(t);
		assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
		assert_int_equal(groups[0].replicas, 2);
		assert_int_equal(groups[0].pods, 4);
		assert_int_equal(groups[0].job_pods, 0);
		assert_int_equal(groups[0].min_slices, 1);
		topo_tree_free(t);
		topo_input_free(&in);
	}
	/* As in Kueue (issue 36 K1): a group takes single-level slices; the
	 * multi-layer constraints only behind a gate that is off by default. */
	decode_fails(
		topo_input_jobset,
		"spec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n"
		"          metadata:\n            annotations: {kueue.x-k8s.io/podset-group-name: g, "
		"kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{topology: rack, size: 1}]'}\n"
		"          spec: {}\n",
		"cannot be combined with kueue.x-k8s.io/podset-slice-required-topology, "
		"kueue.x-k8s.io/podset-slice-size or kueue.x-k8s.io/podset-group-name",
		NULL);
}

static void podset_group_co_places_leader_and_workers(void **state)
{
	static const char jobset[] =
		"kind: JobSet\nmetadata: {name: lws}\nspec:\n  replicatedJobs:\n"
		"  - name: leader\n    template:\n      spec:\n        template:\n          metadata:\n"
		"            annotations:\n              kueue.x-k8s.io/podset-required-topology: rack\n"
		"              kueue.x-k8s.io/podset-group-name: g\n"
		"          spec: {containers: [{resources: {requests: {cpu: 2}}}]}\n"
		"  - name: workers\n    template:\n      spec:\n        parallelism: 3\n        template:\n"
		"          metadata:\n            annotations:\n"
		"              kueue.x-k8s.io/podset-required-topology: rack\n"
		"              kueue.x-k8s.io/podset-group-name: g\n"
		"          spec: {containers: [{resources: {requests: {cpu: 2}}}]}\n";
	/* r1 has 1 cpu left on a1 and 4 on a2 (2 pods + ...), r2 has 4 + 4. */
	static const char pods[] = "items:\n"
				   "- spec: {nodeName: a1, containers: [{resources: {requests: {cpu: 3}}}]}\n"
				   "  status: {phase: Running}\n";
	struct topo_input in;
	struct topo_tree *t;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	struct topo_placement *p = NULL;
	char *cause = NULL, path[64];

	(void)state;
	memset(&in, 0, sizeof(in));
	decode_ok(&in, topo_input_jobset, jobset);
	decode_ok(&in, topo_input_nodes, RACK_NODES);
	decode_ok(&in, topo_input_pods, pods);
	t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause);
	assert_non_null(t);
	assert_int_equal(topo_jobset_request(&in.jobset, t, groups, &req, &cause), 0);
	assert_int_equal(groups[0].together, 1);
	assert_int_equal(groups[1].together, 1);
	if (topo_place(t, &req, &p, &cause) != 0)
		fail_msg("%s", cause);
	/* r1 holds 2 pods of 2 cpu: only r2 holds the leader and its 3 workers. */
	for (size_t i = 0; i < p->pod_count; i++)
		assert_string_equal(topo_tree_path(t, p->pods[i].domain, path, sizeof(path)), "b1/r2");
	topo_placement_free(p);
	topo_tree_free(t);
	topo_input_free(&in);
}

/* ---- errors ---- */

static void malformed_inputs_name_the_field(void **state)
{
	(void)state;
	decode_fails(topo_input_nodes,
		     "{\"items\":[{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":"
		     "{\"nvidia.com/gpu\":\"lots\"}}}]}",
		     "nodes: items[0] (n1): status.allocatable[\"nvidia.com/gpu\"]: bad quantity lots", NULL);
	decode_fails(topo_input_nodes, "{\"items\":[{\"metadata\":{\"labels\":{}}}]}",
		     "nodes: items[0]: metadata.name: missing", NULL);
	decode_fails(topo_input_nodes, "{\"items\":[{\"metadata\":{\"name\":7}}]}",
		     "items[0]: metadata.name: not a string", NULL);
	decode_fails(topo_input_nodes, "{\"items\":[{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":1}}}]}",
		     "items[0] (n): metadata.labels[\"a\"]: not a string", NULL);
	decode_fails(topo_input_nodes,
		     "{\"items\":[{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":"
		     "\"k\",\"effect\":\"Sometimes\"}]}}]}",
		     "items[0] (n): spec.taints[0].effect: Sometimes is not", NULL);
	decode_fails(topo_input_nodes,
		     "{\"items\":[{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":{}}}]}",
		     "spec.taints: not a list", NULL);
	decode_fails(topo_input_nodes, "{\"items\":[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}]}",
		     "nodes: items[0]: kind Pod, expected Node", NULL);
	decode_fails(topo_input_nodes,
		     "[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}},"
		     "{\"metadata\":{\"name\":\"a\"}}]",
		     "nodes: items[2] (a): the name of items[0] too", NULL);
	decode_fails(topo_input_nodes, "{\"items\":[", "nodes: not valid JSON", NULL);
	decode_fails(topo_input_nodes, "items: [\n  - a: b\n c", "nodes: not valid YAML (line", NULL);
	decode_fails(topo_input_nodes, "\"just a string\"", "nodes: not a List", NULL);
	decode_fails(
		topo_input_pods,
		"{\"items\":[{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"nodeName\":\"n\","
		"\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1x\"}}}]}}]}",
		"pods: items[0] (p1): spec.containers[0].resources.requests[\"cpu\"]: bad quantity \"1x\"",
		NULL);
	decode_fails(topo_input_pods, "{\"items\":[{\"spec\":{\"nodeName\":\"n\",\"initContainers\":{}}}]}",
		     "pods: items[0]: spec.initContainers: not a list", NULL);
	decode_fails(topo_input_jobset, "{\"kind\":\"JobSet\",\"spec\":{}}",
		     "jobset: spec.replicatedJobs: missing, empty or not a list", NULL);
	decode_fails(topo_input_jobset, "kind: Job\nspec: {}\n", "jobset: kind Job, expected JobSet", NULL);
	decode_fails(topo_input_jobset, "spec:\n  replicatedJobs:\n  - name: w\n    replicas: -1\n",
		     "jobset: spec.replicatedJobs[0].replicas is not an integer in 0..2147483647", NULL);
	decode_fails(topo_input_jobset, "{\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1.5}]}}",
		     "jobset: spec.replicatedJobs[0].replicas is not an integer", NULL);
	decode_fails(topo_input_jobset, "spec:\n  replicatedJobs:\n  - name: w\n",
		     "(w): template.spec.template.spec: missing", NULL);
	decode_fails(topo_input_jobset, "spec:\n  replicatedJobs:\n  - replicas: 1\n",
		     "jobset: spec.replicatedJobs[0].name is missing", NULL);
	decode_fails(topo_input_jobset,
		     "spec:\n  replicatedJobs:\n  - name: w\n    template: {spec: {template: {spec: {}}}}\n"
		     "  - name: w\n    template: {spec: {template: {spec: {}}}}\n",
		     "jobset: replicated job name \"w\" appears twice", NULL);
#define RJ(annotations, spec)                                                                                \
	"spec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        parallelism: 4\n"        \
	"        template:\n          metadata:\n            annotations: " annotations                      \
	"\n          spec: " spec "\n"
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-size: x, kueue.x-k8s.io/podset-slice-required-topology: r}",
		   "{}"),
		"(w): template.spec.template.metadata.annotations.kueue.x-k8s.io/podset-slice-size: \"x\" is not a "
		"positive integer",
		NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-size: '3', kueue.x-k8s.io/podset-slice-required-topology: r}",
		   "{}"),
		"podset-slice-size: 3 does not divide the job's 4 pods", NULL);
	decode_fails(topo_input_jobset, RJ("{kueue.x-k8s.io/podset-slice-size: '2'}", "{}"),
		     "podset-slice-required-topology and kueue.x-k8s.io/podset-slice-size go together", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-required-topology: rack, kueue.x-k8s.io/podset-preferred-topology: block}",
		   "{}"),
		"at most one of kueue.x-k8s.io/podset-required-topology", NULL);
	/* Multi-layer slices, as Kueue validates them. */
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{topology: block, size: 4}, "
		   "{topology: rack, size: 3}]'}",
		   "{}"),
		"podset-slice-required-topology-constraints[1]: size 3 does not evenly divide the parent "
		"layer's 4",
		NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{topology: a, size: 4}, "
		   "{topology: b, size: 2}, {topology: c, size: 2}, {topology: d, size: 1}]'}",
		   "{}"),
		"a list of 1 to 3 {topology, size} layers is needed", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{topology: rack, size: 2}, "
		   "{topology: rack, size: 1}]'}",
		   "{}"),
		"[1]: topology rack is also layer 0", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{topology: rack, size: 8}]'}",
		   "{}"),
		"[0]: size 8 is above the job's 4 pods", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{topology: rack, size: 2}]', "
		   "kueue.x-k8s.io/podset-slice-required-topology: rack, kueue.x-k8s.io/podset-slice-size: '2'}",
		   "{}"),
		"cannot be combined with kueue.x-k8s.io/podset-slice-required-topology", NULL);
	decode_fails(topo_input_jobset, RJ("{kueue.x-k8s.io/podset-unconstrained-topology: maybe}", "{}"),
		     "podset-unconstrained-topology: \"maybe\" is neither true nor false", NULL);
	/* Issue 36 L5: a sign or a space before the slice size, and an empty
	 * level, were taken (the JobSet then waited for a domain no node has,
	 * saying "exclusive-topology  is not a level"). */
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology: rack, kueue.x-k8s.io/podset-slice-size: '+2'}",
		   "{}"),
		"podset-slice-size: \"+2\" is not a positive integer", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{kueue.x-k8s.io/podset-slice-required-topology: rack, kueue.x-k8s.io/podset-slice-size: ' 2'}",
		   "{}"),
		"podset-slice-size: \" 2\" is not a positive integer", NULL);
	decode_fails(topo_input_jobset, RJ("{kueue.x-k8s.io/podset-required-topology: ''}", "{}"),
		     "podset-required-topology: empty", NULL);
	decode_fails(
		topo_input_jobset,
		"metadata:\n  annotations:\n    alpha.jobset.sigs.k8s.io/exclusive-topology: ''\n"
		"spec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        parallelism: 4\n"
		"        template:\n          spec: {}\n",
		"exclusive-topology: empty", NULL);
	decode_fails(
		topo_input_jobset, RJ("{muster.dev/network-topology: '{mode: hard}'}", "{}"),
		"annotation muster.dev/network-topology: mode hard needs highestTierAllowed or highestTierName",
		NULL);
	decode_fails(topo_input_jobset,
		     RJ("{muster.dev/network-topology: '{mode: firm, highestTierAllowed: 1}'}", "{}"),
		     "mode: firm is neither hard nor soft", NULL);
	decode_fails(topo_input_jobset,
		     RJ("{muster.dev/network-topology: '{highestTierAllowed: 1, highestTierName: x}'}", "{}"),
		     "highestTierAllowed and highestTierName cannot both be set", NULL);
	decode_fails(topo_input_jobset, RJ("{muster.dev/network-topology: '[1]'}", "{}"),
		     "annotation muster.dev/network-topology: not a map", NULL);
	decode_fails(topo_input_jobset,
		     RJ("{muster.dev/partition-policy: '{totalPartitions: 3, partitionSize: 2}'}", "{}"),
		     "totalPartitions x partitionSize = 3 x 2, the job has 4 pods", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{muster.dev/partition-policy: '{totalPartitions: 2, partitionSize: 2, minPartitions: 3}'}",
		   "{}"),
		"minPartitions 3 is above totalPartitions 2", NULL);
	decode_fails(
		topo_input_jobset, RJ("{}", "{containers: [{resources: {limits: {cpu: lots}}}]}"),
		"(w): template.spec.template.spec.containers[0].resources.limits[\"cpu\"]: bad quantity \"lots\"",
		NULL);
	decode_fails(topo_input_jobset, RJ("{}", "{tolerations: [{key: k, effect: Often}]}"),
		     "template.spec.template.spec.tolerations[0].effect: Often is not", NULL);
	decode_fails(topo_input_jobset, RJ("{}", "{tolerations: [{operator: Equal, value: v}]}"),
		     "tolerations[0].key: an empty key needs operator Exists", NULL);
	decode_fails(topo_input_jobset, RJ("{}", "{tolerations: [{key: k, operator: Like}]}"),
		     "tolerations[0].operator: Like is neither Exists nor Equal", NULL);
	decode_fails(topo_input_jobset, RJ("{}", "{nodeSelector: [a]}"),
		     "template.spec.template.spec.nodeSelector: not a map", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{}",
		   "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
		   "{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near, values: [x]}]}]}}}}"),
		"nodeSelectorTerms[0].matchExpressions[0].operator: Near is not supported here", NULL);
	decode_fails(topo_input_jobset,
		     RJ("{}", "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
			      "{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In}]}]}}}}"),
		     "matchExpressions[0].values: In takes 1 to 256 values", NULL);
	decode_fails(
		topo_input_jobset,
		RJ("{}",
		   "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
		   "{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Gt, values: ['1', '2']}]}]}}}}"),
		"matchExpressions[0].values: Gt takes exactly one value", NULL);
	decode_fails(topo_input_jobset,
		     RJ("{}",
			"{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
			"{nodeSelectorTerms: [{matchFields: [{key: spec.unschedulable, operator: In, values: "
			"['x']}]}]}}}}"),
		     "matchFields[0].key: only metadata.name is a node field", NULL);
	decode_fails(topo_input_jobset,
		     RJ("{}", "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
			      "{nodeSelectorTerms: []}}}}"),
		     "nodeSelectorTerms: empty (no node would match)", NULL);
	decode_fails(topo_input_hypernodes, "kind: HyperNode\nmetadata: {name: h}\nspec: {tier: 0}\n",
		     "hypernodes: items[0] (h): spec.tier: missing or below 1", NULL);
	decode_fails(topo_input_hypernodes,
		     "kind: HyperNode\nmetadata: {name: h}\nspec:\n  tier: 1\n  members:\n  - type: Node\n"
		     "    selector: {exactMatch: {name: a}, regexMatch: {pattern: b}}\n",
		     "(h): spec.members[0].selector.: exactly one of exactMatch, regexMatch, labelMatch",
		     NULL);
	decode_fails(topo_input_hypernodes,
		     "kind: HyperNode\nmetadata: {name: h}\nspec:\n  tier: 1\n  members:\n  - type: Rack\n",
		     "(h): spec.members[0].type: Rack is neither Node nor HyperNode", NULL);
	decode_fails(
		topo_input_hypernodes,
		"kind: HyperNode\nmetadata: {name: h}\nspec:\n  tier: 2\n  members:\n  - type: HyperNode\n"
		"    selector: {labelMatch: {matchLabels: {a: b}}}\n",
		"spec.members[0].selector.labelMatch: for Node members only", NULL);
	decode_fails(
		topo_input_hypernodes,
		"kind: HyperNode\nmetadata: {name: h}\nspec:\n  tier: 1\n  members:\n  - type: Node\n"
		"    selector: {labelMatch: {matchExpressions: [{key: a, operator: Gt, values: ['1']}]}}\n",
		"labelMatch.matchExpressions[0].operator: Gt is not supported here", NULL);
	decode_fails(topo_input_hypernodes, "kind: HyperNode\nmetadata: {name: h}\n", "(h): spec: missing",
		     NULL);
	decode_fails(topo_input_hypernodes, "", "hypernodes: empty", NULL);
}

static void bounds_hold(void **state)
{
	char *big, *p;
	size_t n = 0;

	(void)state;
	/* A YAML alias bomb does not expand without limit. */
	decode_fails(
		topo_input_nodes,
		"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
		"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
		"expanding too much", NULL);
	/* Too deep. */
	big = malloc(4096);
	assert_non_null(big);
	p = big;
	for (int i = 0; i < 100; i++)
		p += snprintf(p, 8, "- ");
	snprintf(p, 8, "x\n");
	decode_fails(topo_input_hypernodes, big, "too deep", NULL);
	free(big);
	/* Too many labels on one node. */
	big = malloc(16384);
	assert_non_null(big);
	p = big + snprintf(big, 16384, "{\"metadata\":{\"name\":\"n\",\"labels\":{");
	for (n = 0; n < TOPO_OBJ_LABELS_MAX + 1; n++)
		p += snprintf(p, 32, "%s\"k%zu\":\"v\"", n ? "," : "", n);
	snprintf(p, 8, "}}}");
	decode_fails(topo_input_nodes, big, "metadata.labels: more than 512 entries", NULL);
	free(big);
	/* A label value above 63 bytes, a name above 253. */
	decode_fails(
		topo_input_nodes,
		"{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"0123456789012345678901234567890123456789"
		"012345678901234567890123\"}}}",
		"not a string of at most 63 bytes", NULL);
	/* Each input once; pods after the nodes. */
	{
		struct topo_input in;
		char *cause = NULL;

		memset(&in, 0, sizeof(in));
		assert_int_equal(decode(&in, topo_input_pods, "{}", &cause), -1);
		assert_non_null(strstr(cause, "after the nodes"));
		free(cause);
		cause = NULL;
		decode_ok(&in, topo_input_nodes, "{\"items\":[]}");
		assert_int_equal(decode(&in, topo_input_nodes, "{\"items\":[]}", &cause), -1);
		assert_non_null(strstr(cause, "read twice"));
		free(cause);
		topo_input_free(&in);
		topo_input_free(NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nodes_from_kubectl_json),
		cmocka_unit_test(nodes_from_yaml_and_single_node),
		cmocka_unit_test(requested_resources_are_tracked_first),
		cmocka_unit_test(pods_count_bound_and_running_only),
		cmocka_unit_test(pods_init_containers_sidecars_and_overhead),
		cmocka_unit_test(jobset_json_and_yaml_decode_alike),
		cmocka_unit_test(jobset_volcano_and_kueue_annotations),
		cmocka_unit_test(exclusive_per_the_jobsets_own_level_with_two_jobs_is_refused),
		cmocka_unit_test(hypernodes_from_yaml),
		cmocka_unit_test(request_resolves_levels_tiers_and_groups),
		cmocka_unit_test(podset_group_co_places_leader_and_workers),
		cmocka_unit_test(podsets_hold_every_replica),
		cmocka_unit_test(soft_partitions_prefer_their_tier),
		cmocka_unit_test(slice_layers_from_the_annotation),
		cmocka_unit_test(malformed_inputs_name_the_field),
		cmocka_unit_test(bounds_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
