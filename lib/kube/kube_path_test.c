/*
 * kube_path_test: the one builder of API paths (lib/kube/kube_path.h):
 * what a value may hold before it goes into a path, and that nothing a
 * value holds can leave its segment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube_error.h"
#include "kube_path.h"

static void paths_of_objects_and_collections(void **state)
{
	char path[256];

	(void)state;
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, "team-a", "train-placement", NULL),
			 0);
	assert_string_equal(path, "/api/v1/namespaces/team-a/configmaps/train-placement");
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_JOBSETS, "ns", NULL, NULL), 0);
	assert_string_equal(path, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets");
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_JOBSETS, NULL, NULL, NULL), 0);
	assert_string_equal(path, "/apis/jobset.x-k8s.io/v1alpha2/jobsets");
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_NODES, NULL, "node-1.example", NULL), 0);
	assert_string_equal(path, "/api/v1/nodes/node-1.example");
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES, NULL, "default", NULL), 0);
	assert_string_equal(path, "/apis/kueue.x-k8s.io/v1beta2/topologies/default");
}

/* The pod label of issue 34: a name that would reach another namespace's
 * ConfigMap, with a query to cut off the suffix. */
static void a_name_never_leaves_its_segment(void **state)
{
	static const char *const bad[] = {
		"../../kube-system/configmaps/victim?x=",
		"..",
		".",
		"a/b",
		"a%2Fb",
		"victim?x=",
		"victim#x",
		"Upper",
		"-lead",
		"trail-",
		"a..b",
		"",
		"caf\xc3\xa9",
		"\xff\xfe\xc0\x80",
		"a b",
	};
	char path[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *cause = NULL;

		if (kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, "ns", bad[i], &cause) != MUSTER_EINVAL)
			fail_msg("name %zu was taken: %s", i, path);
		assert_non_null(cause);
		assert_non_null(strstr(cause, "DNS-1123 subdomain"));
		/* The cause never holds the value. */
		assert_null(strstr(cause, "victim"));
		assert_string_equal(path, "");
		free(cause);
		cause = NULL;
		if (kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, bad[i], "x", &cause) != MUSTER_EINVAL)
			fail_msg("namespace %zu was taken: %s", i, path);
		assert_non_null(strstr(cause, "DNS-1123 label"));
		free(cause);
	}
}

static void rules_at_their_lengths(void **state)
{
	char name[300], path[1024];

	(void)state;
	memset(name, 'a', sizeof(name));
	name[63] = '\0';
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_PODS, name, "p", NULL), 0);
	name[63] = 'a';
	name[64] = '\0';
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_PODS, name, "p", NULL), MUSTER_EINVAL);
	name[64] = 'a';
	name[253] = '\0';
	for (size_t i = 50; i < 253; i += 50)
		name[i] = '.';
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_PODS, "ns", name, NULL), 0);
	name[253] = 'a';
	name[254] = '\0';
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_PODS, "ns", name, NULL), MUSTER_EINVAL);
	/* A path that does not fit its buffer is refused, not cut. */
	assert_int_equal(kube_path(path, 20, &KUBE_PODS, "ns", "p", NULL), MUSTER_EINVAL);
	/* A namespace for a cluster-scoped kind is a caller's mistake. */
	assert_int_equal(kube_path(path, sizeof(path), &KUBE_NODES, "ns", "n", NULL), MUSTER_EINVAL);
	assert_true(kube_dns_label("a-1", 63));
	assert_false(kube_dns_label("a.b", 63));
	assert_true(kube_dns_subdomain("a.b", 253));
	assert_false(kube_dns_subdomain(NULL, 253));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(paths_of_objects_and_collections),
		cmocka_unit_test(a_name_never_leaves_its_segment),
		cmocka_unit_test(rules_at_their_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
