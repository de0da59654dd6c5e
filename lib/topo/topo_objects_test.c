/*
 * Unit tests of the object decoders of lib/topo (topo_objects.h,
 * topo_jobset.h) on single objects as a watch event or a LIST item carries
 * them: a Node with its Ready condition, a pod as usage, a pod template's
 * scheduling, a HyperNode, a Kueue Topology; and that what they keep lives
 * in the store, not in the tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "topo_jobset.h"
#include "topo_objects.h"

static cJSON *tree(const char *json)
{
	cJSON *t = cJSON_Parse(json);

	assert_non_null(t);
	return t;
}

/* rc and *cause after the call; the cause is freed and set to NULL. */
static void fails(int rc, char **cause, const char *want)
{
	assert_int_equal(rc, -1);
	assert_non_null(*cause);
	if (!strstr(*cause, want))
		fail_msg("cause \"%s\" lacks \"%s\"", *cause, want);
	free(*cause);
	*cause = NULL;
}

static const struct topo_cluster RESOURCES = {
	.resources = { "cpu", "memory", "pods", "nvidia.com/gpu" },
	.resource_count = 4,
};

static void node_from_a_watch_object(void **state)
{
	struct topo_store s = { 0 };
	struct topo_node_object n;
	char *cause = NULL;
	cJSON *t = tree(
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n-1\",\"labels\":{\"rack\":\"r1\"}},"
		"\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]},"
		"\"status\":{\"allocatable\":{\"cpu\":\"7910m\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\","
		"\"hugepages-2Mi\":\"0\"},\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":"
		"\"False\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}");

	(void)state;
	assert_int_equal(topo_node_decode(&s, t, "node", &RESOURCES, &n, &cause), 0);
	cJSON_Delete(t); /* nothing kept points into the tree */
	assert_string_equal(n.node.name, "n-1");
	assert_int_equal(n.node.label_count, 1);
	assert_string_equal(n.node.labels[0].value, "r1");
	assert_int_equal(n.node.taint_count, 1);
	assert_string_equal(n.node.taints[0].key, "k");
	assert_true(n.node.unschedulable);
	assert_int_equal(n.ready, 1);
	assert_false(n.node.not_ready);
	assert_int_equal(n.node.allocatable[0], 7910);
	assert_int_equal(n.node.allocatable[2], 110);
	assert_int_equal(n.node.allocatable[3], 8000);
	assert_true(s.stored > 0);

	t = tree("{\"metadata\":{\"name\":\"n-2\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
		 "\"status\":\"Unknown\"}]}}");
	assert_int_equal(topo_node_decode(&s, t, "node", &RESOURCES, &n, &cause), 0);
	assert_int_equal(n.ready, 0);
	assert_true(n.node.not_ready); /* placement leaves it out */
	cJSON_Delete(t);
	t = tree("{\"metadata\":{\"name\":\"n-3\"}}");
	assert_int_equal(topo_node_decode(&s, t, "node", &RESOURCES, &n, &cause), 0);
	assert_int_equal(n.ready, -1);
	assert_false(n.node.not_ready); /* no condition yet: taken as ready */
	cJSON_Delete(t);
	t = tree("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}");
	fails(topo_node_decode(&s, t, "node", &RESOURCES, &n, &cause), &cause,
	      "node: kind Pod, expected Node");
	cJSON_Delete(t);
	t = tree("{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"cpu\":\"lots\"}}}");
	fails(topo_node_decode(&s, t, "node", &RESOURCES, &n, &cause), &cause,
	      "node (n): status.allocatable[\"cpu\"]: bad quantity lots");
	cJSON_Delete(t);
	topo_store_free(&s);
	assert_null(s.blocks);
}

static void pod_usage(void **state)
{
	struct topo_pod_usage u;
	char *cause = NULL;
	cJSON *t = tree(
		"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n-1\",\"containers\":[{"
		"\"resources\":{\"requests\":{\"cpu\":\"1\",\"pods\":\"3\"}}},{\"resources\":{\"limits\":"
		"{\"memory\":\"1Gi\"}}}],\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"4\"}}}],"
		"\"overhead\":{\"cpu\":\"100m\"}},\"status\":{\"phase\":\"Running\"}}");

	(void)state;
	assert_int_equal(topo_pod_usage_decode(t, "pod", &u, &cause), 0);
	assert_string_equal(u.name, "p");
	assert_string_equal(u.node_name, "n-1");
	assert_true(u.holds);
	/* max(1, 4) + 100m of cpu, the memory limit for its request; "pods" is not a request. */
	assert_int_equal(u.requests.count, 2);
	for (size_t i = 0; i < u.requests.count; i++) {
		if (strcmp(u.requests.names[i], "cpu") == 0)
			assert_int_equal(u.requests.values[i], 4100);
		else if (strcmp(u.requests.names[i], "memory") == 0)
			assert_true(u.requests.values[i] == 1073741824000LL);
		else
			fail_msg("unexpected resource %s", u.requests.names[i]);
	}
	cJSON_Delete(t);
	/* Ended or unbound: holds nothing, and its spec is not read. */
	t = tree("{\"spec\":{\"nodeName\":\"n-1\",\"containers\":{}},\"status\":{\"phase\":\"Succeeded\"}}");
	assert_int_equal(topo_pod_usage_decode(t, "pod", &u, &cause), 0);
	assert_false(u.holds);
	cJSON_Delete(t);
	t = tree("{\"spec\":{\"nodeName\":\"\"}}");
	assert_int_equal(topo_pod_usage_decode(t, "pod", &u, &cause), 0);
	assert_false(u.holds);
	assert_null(u.node_name);
	cJSON_Delete(t);
	t = tree("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"nodeName\":\"n\",\"containers\":[{\"resources\":"
		 "{\"requests\":{\"cpu\":\"1x\"}}}]}}");
	fails(topo_pod_usage_decode(t, "pod", &u, &cause), &cause,
	      "pod (q): spec.containers[0].resources.requests[\"cpu\"]: bad quantity \"1x\"");
	cJSON_Delete(t);
}

static void pod_template_scheduling(void **state)
{
	struct topo_store s = { 0 };
	struct topo_pod_scheduling p;
	char *cause = NULL;
	cJSON *t = tree(
		"{\"nodeSelector\":{\"pool\":\"a\"},\"tolerations\":[{\"operator\":\"Exists\"}],"
		"\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
		"{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
		"\"values\":[\"z1\"]}]}]}}},\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}");

	(void)state;
	assert_int_equal(topo_pod_scheduling_decode(&s, t, "job", "spec", &p, &cause), 0);
	cJSON_Delete(t);
	assert_int_equal(p.request_count, 1);
	assert_string_equal(p.request_names[0], "cpu");
	assert_int_equal(p.request_values[0], 2000);
	assert_int_equal(p.selector_count, 1);
	assert_string_equal(p.selector[0].key, "pool");
	assert_int_equal(p.toleration_count, 1);
	assert_true(p.tolerations[0].exists);
	assert_int_equal(p.affinity_count, 1);
	assert_string_equal(p.affinity[0].requirements[0].values[0], "z1");
	t = tree("{\"tolerations\":[{\"key\":\"k\",\"operator\":\"Like\"}]}");
	fails(topo_pod_scheduling_decode(&s, t, "job", "spec", &p, &cause), &cause,
	      "job: spec.tolerations[0].operator: Like is neither Exists nor Equal");
	cJSON_Delete(t);
	topo_store_free(&s);
}

/* preferredDuringSchedulingIgnoredDuringExecution: each term's weight
 * (1 to 100) and its preference, the same requirements as required
 * affinity; a term without any matches no node. */
static void pod_template_preferred_affinity(void **state)
{
	struct topo_store s = { 0 };
	struct topo_pod_scheduling p;
	struct topo_shape shape = { 0 };
	struct topo_label labels[] = { { "zone", "z1" }, { "rack", "r2" } };
	struct topo_node node = { .name = "n1", .labels = labels, .label_count = 2 };
	char *cause = NULL;
	cJSON *t =
		tree("{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
		     "{\"weight\":10,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\","
		     "\"operator\":\"In\",\"values\":[\"z1\"]}]}},"
		     "{\"weight\":\"100\",\"preference\":{\"matchFields\":[{\"key\":\"metadata.name\","
		     "\"operator\":\"In\",\"values\":[\"n1\"]}]}},"
		     "{\"weight\":7,\"preference\":{\"matchExpressions\":[{\"key\":\"rack\","
		     "\"operator\":\"NotIn\",\"values\":[\"r2\"]}]}},"
		     "{\"weight\":5,\"preference\":{}}]}}}");

	(void)state;
	assert_int_equal(topo_pod_scheduling_decode(&s, t, "job", "spec", &p, &cause), 0);
	cJSON_Delete(t);
	assert_int_equal(p.affinity_count, 0);
	assert_int_equal(p.preferred_count, 4);
	assert_int_equal(p.preferred[0].weight, 10);
	assert_string_equal(p.preferred[0].term.requirements[0].key, "zone");
	assert_int_equal(p.preferred[1].weight, 100);
	assert_int_equal(p.preferred[3].term.requirement_count, 0);
	/* The score: 10 (zone) + 100 (its name); not 7 (rack r2), not 5 (empty term). */
	shape.preferred = p.preferred;
	shape.preferred_count = p.preferred_count;
	assert_int_equal(topo_node_preference(&node, &shape), 110);
	labels[1].value = "r3";
	assert_int_equal(topo_node_preference(&node, &shape), 117);
	/* The weight is the API server's 1 to 100; the term a map. */
	static const struct {
		const char *list, *cause;
	} bad[] = {
		{ "[{\"preference\":{}}]",
		  "preferredDuringSchedulingIgnoredDuringExecution[0].weight: missing" },
		{ "[{\"weight\":0}]",
		  "preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 (1 to 100)" },
		{ "[{\"weight\":1},{\"weight\":101}]",
		  "preferredDuringSchedulingIgnoredDuringExecution[1].weight" },
		{ "[{\"weight\":-3}]", "preferredDuringSchedulingIgnoredDuringExecution[0].weight" },
		{ "[{\"weight\":1.5}]", "preferredDuringSchedulingIgnoredDuringExecution[0].weight" },
		{ "[3]", "preferredDuringSchedulingIgnoredDuringExecution[0]: not a map" },
		{ "[{\"weight\":1,\"preference\":[]}]", "[0].preference: not a map" },
		{ "[{\"weight\":1,\"preference\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}}]",
		  "[0].preference.matchExpressions[0]" },
		{ "{}", "preferredDuringSchedulingIgnoredDuringExecution" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char json[512];

		snprintf(
			json, sizeof(json),
			"{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":%s}}}",
			bad[i].list);
		t = tree(json);
		fails(topo_pod_scheduling_decode(&s, t, "job", "spec", &p, &cause), &cause, bad[i].cause);
		cJSON_Delete(t);
	}
	/* At most TOPO_OBJ_TERMS_MAX terms. */
	{
		char json[8192];
		size_t used = (size_t)snprintf(
			json, sizeof(json),
			"{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[");

		for (int i = 0; i <= TOPO_OBJ_TERMS_MAX; i++)
			used += (size_t)snprintf(json + used, sizeof(json) - used, "%s{\"weight\":1}",
						 i ? "," : "");
		snprintf(json + used, sizeof(json) - used, "]}}}");
		t = tree(json);
		fails(topo_pod_scheduling_decode(&s, t, "job", "spec", &p, &cause), &cause,
		      "preferredDuringSchedulingIgnoredDuringExecution");
		cJSON_Delete(t);
	}
	topo_store_free(&s);
}

static void hypernode(void **state)
{
	struct topo_store s = { 0 };
	struct topo_hypernode h;
	char *cause = NULL;
	cJSON *t =
		tree("{\"apiVersion\":\"topology.volcano.sh/v1alpha1\",\"kind\":\"HyperNode\",\"metadata\":"
		     "{\"name\":\"s0\"},\"spec\":{\"tier\":2,\"tierName\":\"spine\",\"members\":[{\"type\":"
		     "\"HyperNode\",\"selector\":{\"exactMatch\":{\"name\":\"leaf-a\"}}},{\"type\":\"Node\","
		     "\"selector\":{\"regexMatch\":{\"pattern\":\"^gpu-.*\"}}}]}}");

	(void)state;
	assert_int_equal(topo_hypernode_decode(&s, t, "hypernode", &h, &cause), 0);
	cJSON_Delete(t);
	assert_string_equal(h.name, "s0");
	assert_int_equal(h.tier, 2);
	assert_string_equal(h.tier_name, "spine");
	assert_int_equal(h.member_count, 2);
	assert_int_equal(h.members[0].kind, TOPO_MEMBER_HYPERNODE);
	assert_string_equal(h.members[0].exact, "leaf-a");
	assert_string_equal(h.members[1].regex, "^gpu-.*");
	t = tree("{\"metadata\":{\"name\":\"h\"},\"spec\":{\"tier\":0}}");
	fails(topo_hypernode_decode(&s, t, "hypernode", &h, &cause), &cause,
	      "hypernode (h): spec.tier: missing or below 1");
	cJSON_Delete(t);
	topo_store_free(&s);
}

static void kueue_topology(void **state)
{
	struct topo_store s = { 0 };
	struct topo_levels l;
	char *cause = NULL;
	cJSON *t = tree(
		"{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Topology\",\"metadata\":{\"name\":"
		"\"default\"},\"spec\":{\"levels\":[{\"nodeLabel\":\"cloud.provider.com/topology-block\"},"
		"{\"nodeLabel\":\"cloud.provider.com/topology-rack\"},{\"nodeLabel\":"
		"\"kubernetes.io/hostname\"}]}}");
	char levels[512], *p = levels;

	(void)state;
	assert_int_equal(topo_kueue_topology_decode(&s, t, "topology", &l, &cause), 0);
	cJSON_Delete(t);
	assert_string_equal(l.name, "default");
	assert_int_equal(l.count, 3);
	assert_string_equal(l.labels[0], "cloud.provider.com/topology-block");
	assert_string_equal(l.labels[2], "kubernetes.io/hostname");

	t = tree("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[]}}");
	fails(topo_kueue_topology_decode(&s, t, "topology", &l, &cause), &cause,
	      "topology (t): spec.levels: missing or empty");
	cJSON_Delete(t);
	t = tree("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[{\"nodeLabel\":\"a\"},{\"nodeLabel\":"
		 "\"a\"}]}}");
	fails(topo_kueue_topology_decode(&s, t, "topology", &l, &cause), &cause,
	      "topology (t): spec.levels[1].nodeLabel: a is also level 0");
	cJSON_Delete(t);
	t = tree("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[{\"label\":\"a\"}]}}");
	fails(topo_kueue_topology_decode(&s, t, "topology", &l, &cause), &cause,
	      "spec.levels[0].nodeLabel: missing");
	cJSON_Delete(t);
	t = tree("{\"kind\":\"HyperNode\",\"metadata\":{\"name\":\"t\"}}");
	fails(topo_kueue_topology_decode(&s, t, "topology", &l, &cause), &cause,
	      "kind HyperNode, expected Topology");
	cJSON_Delete(t);
	/* Kueue allows 16 levels; more than muster places on is said, not cut. */
	p += snprintf(p, sizeof(levels), "{\"metadata\":{\"name\":\"t\"},\"spec\":{\"levels\":[");
	for (int i = 0; i < TOPO_LEVELS_MAX + 1; i++)
		p += snprintf(p, sizeof(levels) - (size_t)(p - levels), "%s{\"nodeLabel\":\"l%d\"}",
			      i ? "," : "", i);
	snprintf(p, sizeof(levels) - (size_t)(p - levels), "]}}");
	t = tree(levels);
	fails(topo_kueue_topology_decode(&s, t, "topology", &l, &cause), &cause,
	      "spec.levels: 9 levels, muster places on at most 8");
	cJSON_Delete(t);
	topo_store_free(&s);
}

/* The JobSet's placement request from a tree, counts from the JobSet model. */
static void jobset_request_from_a_tree(void **state)
{
	struct topo_store s = { 0 };
	struct topo_jobset *js = malloc(sizeof(*js));
	char *cause = NULL;
	cJSON *t = tree(
		"{\"metadata\":{\"name\":\"train\",\"namespace\":\"ns\",\"uid\":\"u\",\"annotations\":{"
		"\"muster.dev/topology-preferred\":\"block\"}},\"spec\":{\"replicatedJobs\":[{\"name\":\"w\","
		"\"replicas\":3,\"template\":{\"spec\":{\"parallelism\":4,\"completions\":6,\"template\":{"
		"\"metadata\":{\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"rack\"}},"
		"\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}]}}");

	(void)state;
	assert_non_null(js);
	assert_int_equal(topo_jobset_decode(&s, t, js, &cause), 0);
	cJSON_Delete(t);
	assert_string_equal(js->name, "train");
	assert_string_equal(js->whole_preferred, "block");
	assert_int_equal(js->group_count, 1);
	assert_string_equal(js->groups[0].name, "w");
	assert_int_equal(js->groups[0].replicas, 3);
	assert_int_equal(js->groups[0].pods, 4);
	assert_string_equal(js->groups[0].required, "rack");
	assert_int_equal(js->groups[0].pod.request_values[0], 1000);
	/* A count the model refuses is refused here, in the model's words. */
	t = tree("{\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":\"-2\"}]}}");
	fails(topo_jobset_decode(&s, t, js, &cause), &cause,
	      "jobset: spec.replicatedJobs[0].replicas is not an integer in 0..2147483647");
	cJSON_Delete(t);
	free(js);
	topo_store_free(&s);
}

/* A store's limit holds: nothing past it is allocated, and the cause says so. */
static void store_limit(void **state)
{
	struct topo_store s = { .limit = 1000 };
	char *cause = NULL;

	(void)state;
	assert_non_null(topo_store_alloc(&s, 10, 90));
	assert_null(topo_store_alloc(&s, 2, 90));
	assert_null(topo_store_string(&s, "a string that needs a new chunk"));
	assert_int_equal(topo_store_nomem(&s, &cause), -1);
	assert_non_null(strstr(cause, "above 1000 bytes"));
	free(cause);
	topo_store_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(node_from_a_watch_object),
		cmocka_unit_test(pod_usage),
		cmocka_unit_test(pod_template_scheduling),
		cmocka_unit_test(pod_template_preferred_affinity),
		cmocka_unit_test(hypernode),
		cmocka_unit_test(kueue_topology),
		cmocka_unit_test(jobset_request_from_a_tree),
		cmocka_unit_test(store_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
