/*
 * Unit tests of topo_cache: use follows pods through binding, ending,
 * deletion and recreation; a pod before its Node, a Node that goes and comes
 * back; NotReady nodes left out; request vectors interned; a bad object
 * changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "topo_cache.h"

static const char *const RESOURCES[] = { "cpu", "memory", "pods" };

static void put(struct topo_cache *c, int pod, const char *json)
{
	cJSON *t = cJSON_Parse(json);
	char *cause = NULL;

	assert_non_null(t);
	if ((pod ? topo_cache_pod_put(c, t, &cause) : topo_cache_node_put(c, t, &cause)) != 0)
		fail_msg("%s: %s", json, cause);
	cJSON_Delete(t);
}

static void node(struct topo_cache *c, const char *name, const char *ready)
{
	char json[512];

	snprintf(
		json, sizeof(json),
		"{\"metadata\":{\"name\":\"%s\",\"labels\":{\"rack\":\"r1\"}},\"status\":{\"allocatable\":{\"cpu\":"
		"\"8\",\"memory\":\"16Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
		name, ready);
	put(c, 0, json);
}

static void pod(struct topo_cache *c, const char *name, const char *node_name, const char *cpu,
		const char *phase)
{
	char json[512];

	snprintf(
		json, sizeof(json),
		"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"%s\"},\"spec\":{\"nodeName\":\"%s\",\"containers\":[{"
		"\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"%s\"}}",
		name, node_name, cpu, phase);
	put(c, 1, json);
}

/* The cluster's use of `name` (cpu in millicores, pods), or -1 when absent. */
static int64_t used(struct topo_cache *c, const char *name, int resource)
{
	struct topo_cluster cl;
	char *cause = NULL;

	assert_int_equal(topo_cache_cluster(c, &cl, &cause), 0);
	for (size_t i = 0; i < cl.node_count; i++)
		if (strcmp(cl.nodes[i].name, name) == 0)
			return cl.nodes[i].used[resource];
	return -1;
}

/* 1 when the snapshot marks `name` not Ready, 0 when ready, -1 when absent. */
static int not_ready(struct topo_cache *c, const char *name)
{
	struct topo_cluster cl;
	char *cause = NULL;

	assert_int_equal(topo_cache_cluster(c, &cl, &cause), 0);
	for (size_t i = 0; i < cl.node_count; i++)
		if (strcmp(cl.nodes[i].name, name) == 0)
			return cl.nodes[i].not_ready;
	return -1;
}

static void use_follows_pods(void **state)
{
	struct topo_cache *c;
	struct topo_cache_stats st;
	char *cause = NULL;

	(void)state;
	assert_int_equal(topo_cache_new(RESOURCES, 3, &c, &cause), 0);
	node(c, "n1", "True");
	node(c, "n2", "True");
	pod(c, "a", "n1", "1", "Running");
	pod(c, "b", "n1", "500m", "Pending");
	pod(c, "c", "", "2", "Pending"); /* not bound: holds nothing */
	assert_int_equal(used(c, "n1", 0), 1500);
	assert_int_equal(used(c, "n1", 2), 2);
	assert_int_equal(used(c, "n2", 0), 0);
	/* A status update changes nothing; an ended pod holds nothing. */
	pod(c, "a", "n1", "1", "Running");
	assert_int_equal(used(c, "n1", 0), 1500);
	pod(c, "b", "n1", "500m", "Succeeded");
	assert_int_equal(used(c, "n1", 0), 1000);
	assert_int_equal(used(c, "n1", 2), 1);
	/* Deleted, then one of the same name on another node. */
	topo_cache_pod_delete(c, "ns", "a");
	assert_int_equal(used(c, "n1", 0), 0);
	pod(c, "a", "n2", "3", "Running");
	pod(c, "a", "n1", "3", "Running"); /* recreated elsewhere: moved, not added */
	assert_int_equal(used(c, "n2", 0), 0);
	assert_int_equal(used(c, "n1", 0), 3000);
	topo_cache_stats(c, &st);
	assert_int_equal(st.nodes, 2);
	assert_int_equal(st.pods, 1);
	assert_int_equal(st.shapes, 1);
	topo_cache_free(c);
}

static void pods_before_their_node(void **state)
{
	struct topo_cache *c;
	char *cause = NULL;

	(void)state;
	assert_int_equal(topo_cache_new(RESOURCES, 3, &c, &cause), 0);
	pod(c, "early", "n9", "2", "Running");
	assert_int_equal(used(c, "n9", 0), -1); /* no Node yet: no node in the cluster */
	node(c, "n9", "True");
	assert_int_equal(used(c, "n9", 0), 2000);
	/* The Node goes and comes back: its pods' use is still there. */
	topo_cache_node_delete(c, "n9");
	assert_int_equal(used(c, "n9", 0), -1);
	node(c, "n9", "True");
	assert_int_equal(used(c, "n9", 0), 2000);
	/* NotReady: kept, marked (placement leaves it out, a placed JobSet's
	 * domain still has it); readiness unknown (no condition yet): ready. */
	node(c, "n9", "False");
	assert_int_equal(used(c, "n9", 0), 2000);
	assert_int_equal(not_ready(c, "n9"), 1);
	put(c, 0, "{\"metadata\":{\"name\":\"fresh\"},\"status\":{\"allocatable\":{\"cpu\":\"4\"}}}");
	assert_int_equal(used(c, "fresh", 0), 0);
	assert_int_equal(not_ready(c, "fresh"), 0);
	topo_cache_pod_delete(c, "ns", "early");
	topo_cache_node_delete(c, "n9");
	topo_cache_node_delete(c, "absent");
	topo_cache_pod_delete(c, "ns", "absent");
	topo_cache_free(c);
}

static void shapes_are_shared_and_bad_objects_change_nothing(void **state)
{
	struct topo_cache *c;
	struct topo_cache_stats st;
	char *cause = NULL, name[32];
	cJSON *bad;

	(void)state;
	assert_int_equal(topo_cache_new(RESOURCES, 3, &c, &cause), 0);
	node(c, "n1", "True");
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		pod(c, name, "n1", i % 2 ? "100m" : "200m", "Running");
	}
	topo_cache_stats(c, &st);
	assert_int_equal(st.pods, 1000);
	assert_int_equal(st.shapes, 2);
	assert_int_equal(used(c, "n1", 0), 150000);
	bad = cJSON_Parse(
		"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p1\"},\"spec\":{\"nodeName\":\"n1\","
		"\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}");
	assert_int_equal(topo_cache_pod_put(c, bad, &cause), -1);
	assert_non_null(strstr(cause, "bad quantity"));
	free(cause);
	cause = NULL;
	cJSON_Delete(bad);
	assert_int_equal(used(c, "n1", 0), 150000);
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		topo_cache_pod_delete(c, "ns", name);
	}
	topo_cache_stats(c, &st);
	assert_int_equal(st.pods, 0);
	assert_int_equal(st.shapes, 0);
	assert_int_equal(used(c, "n1", 0), 0);
	topo_cache_free(c);
	topo_cache_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(use_follows_pods),
		cmocka_unit_test(pods_before_their_node),
		cmocka_unit_test(shapes_are_shared_and_bad_objects_change_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
