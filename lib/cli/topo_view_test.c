/*
 * Unit tests of lib/cli/topo_view: free resources and free pods summed up
 * the tree, the tree as text (whole, and as a summary per level when a
 * depth cuts it) and as JSON, on nodes decoded by topo_input.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "topo_input.h"
#include "topo_view.h"

/* 2 racks: r1 holds n1 (4 CPU, 8 Gi, 1.5 CPU used) and n2 (cordoned);
 * r2 holds n3 (2 CPU). n4 has no rack: left out. */
static const char NODES[] =
	"{\"items\":["
	"{\"metadata\":{\"name\":\"n1\",\"labels\":{\"rack\":\"r1\",\"kubernetes.io/hostname\":\"n1\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"10\"}}},"
	"{\"metadata\":{\"name\":\"n2\",\"labels\":{\"rack\":\"r1\",\"kubernetes.io/hostname\":\"n2\"}},"
	"\"spec\":{\"unschedulable\":true},"
	"\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"10\"}}},"
	"{\"metadata\":{\"name\":\"n3\",\"labels\":{\"rack\":\"r2\",\"kubernetes.io/hostname\":\"n3\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}},"
	"{\"metadata\":{\"name\":\"n4\",\"labels\":{\"kubernetes.io/hostname\":\"n4\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}}]}";
static const char PODS[] = "{\"items\":[{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},"
			   "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{"
			   "\"requests\":{\"cpu\":\"1500m\",\"memory\":\"1Gi\"}}}]},"
			   "\"status\":{\"phase\":\"Running\"}}]}";

struct fixture {
	struct topo_input in;
	struct topo_tree *tree;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *levels[] = { "rack" };
	char *cause = NULL;

	assert_non_null(f);
	assert_int_equal(topo_input_nodes(&f->in, NODES, strlen(NODES), &cause), 0);
	assert_int_equal(topo_input_pods(&f->in, PODS, strlen(PODS), &cause), 0);
	f->tree = topo_tree_from_levels(&f->in.cluster, levels, 1, &cause);
	assert_non_null(f->tree);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	topo_tree_free(f->tree);
	topo_input_free(&f->in);
	free(f);
	return 0;
}

/* The column of resource `name` in names, or fails. */
static size_t column(const char **names, size_t count, const char *name)
{
	for (size_t k = 0; k < count; k++)
		if (strcmp(names[k], name) == 0)
			return k;
	fail_msg("no column %s", name);
	return 0;
}

static void free_resources_sum_up_the_tree(void **state)
{
	struct fixture *f = *state;
	const char *names[TOPO_RESOURCES_MAX];
	size_t count = 0, cpu, memory;
	uint64_t *v = topo_view_free_resources(f->tree, names, &count);

	assert_non_null(v);
	cpu = column(names, count, "cpu(m)");
	memory = column(names, count, "memory(Mi)");
	/* root: n1 2500m + n3 2000m (n2 cordoned, n4 left out). */
	assert_int_equal(v[0 * count + cpu], 4500);
	assert_int_equal(v[0 * count + memory], 7168 + 4096);
	for (size_t d = 0; d < f->tree->domain_count; d++)
		if (f->tree->domains[d].node == TOPO_NONE && d && strcmp(f->tree->domains[d].name, "r1") == 0)
			assert_int_equal(v[d * count + cpu], 2500);
	free(v);
}

static void prints_the_tree_and_its_summary(void **state)
{
	struct fixture *f = *state;
	const char *names[TOPO_RESOURCES_MAX];
	size_t count = 0;
	uint64_t *v = topo_view_free_resources(f->tree, names, &count);
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	assert_int_equal(count, 3);
	topo_view_print_tree(out, f->tree, "topology (free cpu(m) memory(Mi) pods)", v, count, names[0], 9);
	fclose(out);
	assert_string_equal(text, "topology (free cpu(m) memory(Mi) pods)\n"
				  "(cluster)  4500 11264 19\n"
				  "  rack r1 2500 7168 9\n"
				  "    (node) n1 2500 7168 9\n"
				  "    (node) n2 0 0 0\n"
				  "  rack r2 2000 4096 10\n"
				  "    (node) n3 2000 4096 10\n"
				  "excluded: node n4 lacks the level label rack\n");
	free(text);
	text = NULL;
	out = open_memstream(&text, &size);
	topo_view_print_tree(out, f->tree, "t", v, count, "cpu(m)", 1);
	fclose(out);
	assert_non_null(strstr(text, "levels (3 of 6 domains shown; --depth all shows every one):\n"
				     "  rack: 2 domains, free cpu(m) from 2000 to 2500\n"
				     "  nodes: 3 domains, free cpu(m) from 0 to 2500\n"));
	free(text);
	free(v);
}

static void the_tree_as_json(void **state)
{
	struct fixture *f = *state;
	const char *names[TOPO_RESOURCES_MAX];
	size_t count = 0;
	uint64_t *v = topo_view_free_resources(f->tree, names, &count);
	cJSON *j = topo_view_tree_json(f->tree, names, v, count), *domains, *r1;

	assert_non_null(j);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "levels"), 0)->valuestring, "rack");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "columns"), 0)->valuestring, "cpu(m)");
	domains = cJSON_GetObjectItem(j, "domains");
	assert_int_equal(cJSON_GetArraySize(domains), 6);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(domains, 0), "level")->valuestring,
			    "root");
	r1 = cJSON_GetArrayItem(domains, 1);
	assert_string_equal(cJSON_GetObjectItem(r1, "path")->valuestring, "r1");
	assert_int_equal(cJSON_GetObjectItem(r1, "parent")->valueint, 0);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(r1, "free"), 0)->valueint, 2500);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "excluded"), 0), "node")
			->valuestring,
		"n4");
	cJSON_Delete(j);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(free_resources_sum_up_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(prints_the_tree_and_its_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(the_tree_as_json, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
