/*
 * Unit tests of topo_record: a placement written as a record and read back
 * gives every pod its domain's selector (runs of consecutive ranks); bad
 * records are refused naming the field; selectors match nodes by labels and
 * by hostname.
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

#include "topo_place.h"
#include "topo_record.h"
#include "topo_record_map.h"
#include "topo_tree.h"

enum { CPU, PODS };

/* 4 nodes of 4 cpu: block b1 racks r1 (n0, n1) and r2 (n2), block b2 rack r1 (n3). */
struct fixture {
	struct topo_label labels[4][2];
	struct topo_node nodes[4];
	struct topo_cluster cluster;
};

static void make(struct fixture *f)
{
	static const char *const blocks[] = { "b1", "b1", "b1", "b2" }, *const racks[] = { "r1", "r1", "r2",
											   "r1" };
	static const char *const names[] = { "n0", "n1", "n2", "n3" };

	memset(f, 0, sizeof(*f));
	f->cluster.resources[CPU] = "cpu";
	f->cluster.resources[PODS] = "pods";
	f->cluster.resource_count = 2;
	for (int i = 0; i < 4; i++) {
		f->labels[i][0] = (struct topo_label){ "block", blocks[i] };
		f->labels[i][1] = (struct topo_label){ "rack", racks[i] };
		f->nodes[i].name = names[i];
		f->nodes[i].labels = f->labels[i];
		f->nodes[i].label_count = 2;
		f->nodes[i].allocatable[CPU] = 4000;
		f->nodes[i].allocatable[PODS] = 110;
	}
	f->cluster.nodes = f->nodes;
	f->cluster.node_count = 4;
}

static void placement_round_trip(void **state)
{
	static const char *const levels[] = { "block", "rack" };
	struct fixture f;
	struct topo_tree *t;
	struct topo_group g = { .name = "workers", .replicas = 2, .pods = 6 };
	struct topo_request req = { .groups = &g, .group_count = 1 };
	struct topo_placement *p = NULL;
	struct topo_record *r = NULL;
	char *cause = NULL, *text = NULL, first_copy[256];
	const char *selector, *first;

	(void)state;
	make(&f);
	g.shape.requests[CPU] = 1000;
	g.shape.requests[PODS] = 1;
	g.constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 1 }; /* each Job in one block */
	t = topo_tree_from_levels(&f.cluster, levels, 2, &cause);
	assert_non_null(t);
	assert_int_equal(topo_place(t, &req, &p, &cause), 0);
	assert_int_equal(topo_record_encode(t, &req, p, "uid-1", 0, &text, &cause), 0);
	assert_int_equal(topo_record_parse(text, strlen(text), &r, &cause), 0);
	assert_string_equal(topo_record_uid(r), "uid-1");
	assert_int_equal(topo_record_attempt(r), 0);
	assert_int_equal(topo_record_has_attempt(r), 1);
	assert_non_null(strstr(text, "\"attempt\":0"));
	/* Every pod finds the selector of its own domain, in the record's words. */
	for (size_t i = 0; i < p->pod_count; i++) {
		char want[256];

		topo_tree_selector(t, p->pods[i].domain, p->pods[i].node, want, sizeof(want));
		assert_int_equal(topo_record_find(r, "workers", p->pods[i].job_index, p->pods[i].completion,
						  &selector),
				 1);
		assert_string_equal(selector, want);
	}
	/* Job 0 in one block: every selector of job 0 names the same block. */
	assert_int_equal(topo_record_find(r, "workers", 0, 0, &first), 1);
	snprintf(first_copy, sizeof(first_copy), "%s", first);
	for (uint32_t c = 1; c < 6; c++) {
		assert_int_equal(topo_record_find(r, "workers", 0, c, &selector), 1);
		assert_memory_equal(selector, first, strlen("block=b1"));
	}
	/* What the record does not hold. */
	assert_int_equal(topo_record_find(r, "workers", 2, 0, &selector), 0);
	/* Index 6 of a Job whose record places 0..5: a later pod, in slot 0. */
	assert_int_equal(topo_record_find(r, "workers", 0, 6, &selector), 1);
	assert_string_equal(selector, first_copy);
	assert_int_equal(topo_record_find(r, "driver", 0, 0, &selector), 0);
	/* Runs: consecutive ranks with one selector are one run, so fewer runs than pods. */
	assert_true(strlen(text) < 400);
	free(text);
	topo_record_free(r);
	/* A restart attempt's record says which attempt it places. */
	assert_int_equal(topo_record_encode(t, &req, p, "uid-1", 3, &text, &cause), 0);
	assert_int_equal(topo_record_parse(text, strlen(text), &r, &cause), 0);
	assert_int_equal(topo_record_attempt(r), 3);
	assert_int_equal(topo_record_find(r, "workers", 0, 0, &selector), 1);
	assert_string_equal(selector, first_copy);
	free(text);
	topo_record_free(r);
	topo_placement_free(p);
	topo_tree_free(t);
	free(cause);
}

static int count_runs(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to,
		      const char *selector)
{
	(void)rj;
	(void)job;
	(void)selector;
	*(uint32_t *)arg += to - from + 1;
	return 0;
}

static void runs_and_lookup(void **state)
{
	static const char text[] =
		"{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,3,\"rack=r1\"],[4,4,\"\"],"
		"[6,9,\"rack=r2,block=b1\"]]],\"d\":[[[0,0,\"kubernetes.io/hostname=n3\"]]]}}";
	struct topo_record *r = NULL;
	const char *selector;
	uint32_t pods = 0;

	(void)state;
	assert_int_equal(topo_record_parse(text, strlen(text), &r, NULL), 0);
	assert_int_equal(topo_record_has_attempt(r), 0); /* written before attempts were */
	assert_int_equal(topo_record_attempt(r), 0);
	assert_int_equal(topo_record_find(r, "w", 0, 3, &selector), 1);
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_find(r, "w", 0, 4, &selector), 1);
	assert_string_equal(selector, ""); /* anywhere */
	assert_int_equal(topo_record_find(r, "w", 0, 5, &selector), 0); /* a gap */
	assert_int_equal(topo_record_find(r, "w", 0, 9, &selector), 1);
	assert_string_equal(selector, "rack=r2,block=b1");
	/* Past the last index the record places: the slot of its index
	 * modulo the Job's span (a later pod of a Job with completions above
	 * parallelism), here index 0's. */
	assert_int_equal(topo_record_find(r, "w", 0, 10, &selector), 1);
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_find(r, "d", 0, 0, &selector), 1);
	/* Ranges, as a Job pinned whole asks: one run holds 0..3 or 6..9. */
	assert_int_equal(topo_record_find_range(r, "w", 0, 0, 3, &selector), 1);
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_find_range(r, "w", 0, 6, 9, &selector), 1);
	assert_string_equal(selector, "rack=r2,block=b1");
	assert_int_equal(topo_record_find_range(r, "d", 0, 0, 0, &selector), 1);
	/* Several runs, a gap, or past the last run: not one selector. */
	assert_int_equal(topo_record_find_range(r, "w", 0, 0, 4, &selector), 2);
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_find_range(r, "w", 0, 6, 10, &selector), 2);
	assert_int_equal(topo_record_find_range(r, "d", 0, 0, 1, &selector), 1); /* 1 slot */
	/* Not held from its start. */
	assert_int_equal(topo_record_find_range(r, "w", 0, 5, 5, &selector), 0);
	assert_int_equal(topo_record_find_range(r, "w", 1, 0, 3, &selector), 0);
	assert_int_equal(topo_record_find_range(r, "x", 0, 0, 0, &selector), 0);
	assert_int_equal(topo_record_foreach(r, count_runs, &pods), 0);
	assert_int_equal(pods, 4 + 1 + 4 + 1);
	topo_record_free(r);
}

/* A Job pinned pod by pod: its pod template gets the domain of most of its
 * pods, only when every run selects the same keys and none is "anywhere". */
static void a_jobs_template_gets_the_domain_of_most_of_its_pods(void **state)
{
	static const char text[] = "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":["
				   "[[0,19,\"block=b1,rack=r1\"],[20,99,\"block=b1,rack=r2\"]],"
				   "[[0,49,\"block=b1,rack=r1\"],[50,99,\"block=b1,rack=r3\"]],"
				   "[[0,3,\"block=b1,rack=r1\"],[4,9,\"block=b2\"]],"
				   "[[0,3,\"block=b1,rack=r1\"],[4,9,\"\"]],"
				   "[[0,3,\"block=b1,rack=r1\"],[5,9,\"block=b1,rack=r2\"]],"
				   "[[0,3,\"block=b1,rack=r1\"],[4,9,\"block=b1,host=r2\"]]]}}";
	struct topo_record *r = NULL;
	const char *selector = NULL, *first = NULL;

	(void)state;
	assert_int_equal(topo_record_parse(text, strlen(text), &r, NULL), 0);
	/* 20 and 80 pods: the 80 pods' rack. */
	assert_int_equal(topo_record_job_template(r, "w", 0, 0, 99, &selector), 1);
	assert_string_equal(selector, "block=b1,rack=r2");
	/* Within the range only: 0..29 holds 20 of r1 and 10 of r2. */
	assert_int_equal(topo_record_job_template(r, "w", 0, 0, 29, &selector), 1);
	assert_string_equal(selector, "block=b1,rack=r1");
	/* Equal shares: the first. */
	assert_int_equal(topo_record_job_template(r, "w", 1, 0, 99, &selector), 1);
	assert_string_equal(selector, "block=b1,rack=r1");
	/* Runs of other depths, "anywhere", a gap, other keys, no such Job:
	 * none. */
	assert_int_equal(topo_record_job_template(r, "w", 2, 0, 9, &selector), 0);
	assert_int_equal(topo_record_job_template(r, "w", 3, 0, 9, &selector), 0);
	assert_int_equal(topo_record_job_template(r, "w", 4, 0, 9, &selector), 0);
	assert_int_equal(topo_record_job_template(r, "w", 5, 0, 9, &selector), 0);
	/* Past the end: the later pods take the slots the record places. */
	assert_int_equal(topo_record_job_template(r, "w", 0, 0, 100, &selector),
			 topo_record_job_template(r, "w", 0, 0, 99, &first));
	assert_int_equal(topo_record_job_template(r, "w", 6, 0, 9, &selector), 0);
	assert_int_equal(topo_record_job_template(r, "x", 0, 0, 9, &selector), 0);
	assert_int_equal(topo_record_job_template(r, "w", 0, 9, 0, &selector), 0);
	topo_record_free(r);
}

static void bad_records_are_refused(void **state)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{ "{\"uid\":\"u\",\"replicatedJobs\":{}} trailing", "not JSON" },
		{ "[1]", "lacks uid" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[3,1,\"a=b\"]]]}}", "ascending" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,4,\"a=b\"],[3,5,\"a=b\"]]]}}",
		  "overlapping" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,1,\"ab\"]]]}}", "key=value" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,1.5,\"a=b\"]]]}}", "from, to" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[-1,1,\"a=b\"]]]}}", "from, to" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":{}}}", "lists of lists" },
		{ "{\"uid\":7,\"replicatedJobs\":{}}", "lacks uid" },
		{ "{\"uid\":\"u\",\"attempt\":-1,\"replicatedJobs\":{}}", "attempt" },
		{ "{\"uid\":\"u\",\"attempt\":1.5,\"replicatedJobs\":{}}", "attempt" },
		{ "{\"uid\":\"u\",\"attempt\":\"2\",\"replicatedJobs\":{}}", "attempt" },
		{ "{\"uid\":\"u\",\"attempt\":2147483648,\"replicatedJobs\":{}}", "attempt" },
		/* Issue 34: a selector of bytes that are not UTF-8 would be copied
		 * into every pod's nodeSelector patch. */
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,1,\"a=\xff\xfe\xc0\x80\"]]]}}",
		  "the placement record is not valid UTF-8 (byte 0xFF at offset 43)" },
		{ "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,1,\"a=\xed\xbf\xbf\"]]]}}", "byte 0xED" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct topo_record *r = NULL;
		char *cause = NULL;

		assert_int_equal(topo_record_parse(cases[i].text, strlen(cases[i].text), &r, &cause), -1);
		assert_null(r);
		if (!cause || !strstr(cause, cases[i].needle))
			fail_msg("%s: %s", cases[i].text, cause ? cause : "(no cause)");
		free(cause);
	}
}

static void selectors_match_labels_and_hostnames(void **state)
{
	struct fixture f;

	(void)state;
	make(&f);
	assert_true(topo_record_selector_matches("block=b1,rack=r1", &f.nodes[0]));
	assert_false(topo_record_selector_matches("block=b1,rack=r1", &f.nodes[3])); /* r1 of b2 */
	assert_true(topo_record_selector_matches("block=b2,rack=r1", &f.nodes[3]));
	assert_true(topo_record_selector_matches("kubernetes.io/hostname=n2", &f.nodes[2]));
	assert_false(topo_record_selector_matches("kubernetes.io/hostname=n2", &f.nodes[1]));
	assert_true(topo_record_selector_matches("", &f.nodes[1]));
	assert_false(topo_record_selector_matches("block=b", &f.nodes[0])); /* a prefix is not the value */
}

/* The one reader of a record's ConfigMap (topo_record_map.h): whose it is
 * by its owner reference, its text only when ours, and a record of another
 * uid named as an earlier JobSet's. */
static void a_records_configmap_is_read_by_one_rule(void **state)
{
#define CM(ref, data)                                                                                        \
	"{\"metadata\":{\"name\":\"t-placement\",\"ownerReferences\":[" ref "]},\"data\":{" data "}}"
#define REF(name, uid, controller)                                                                           \
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"" name                  \
	"\",\"uid\":\"" uid "\",\"controller\":" controller "}"
#define RECORD(uid) "\"placement\":\"{\\\"uid\\\":\\\"" uid "\\\",\\\"replicatedJobs\\\":{}}\""
	static const struct {
		const char *configmap;
		int need_controller;
		enum topo_record_whose whose;
		int has_text;
	} cases[] = {
		{ CM(REF("t", "u1", "true"), RECORD("u1")), 1, TOPO_RECORD_OURS, 1 },
		{ CM(REF("t", "u1", "false"), RECORD("u1")), 1, TOPO_RECORD_FOREIGN, 0 },
		{ CM(REF("t", "u1", "false"), RECORD("u1")), 0, TOPO_RECORD_OURS, 1 },
		{ CM(REF("t", "u0", "true"), RECORD("u0")), 1, TOPO_RECORD_EARLIER, 0 },
		{ CM(REF("other", "u1", "true"), RECORD("u1")), 1, TOPO_RECORD_FOREIGN, 0 },
		{ CM("", RECORD("u1")), 0, TOPO_RECORD_FOREIGN, 0 },
		{ CM(REF("t", "u1", "true"), "\"placement\":7"), 1, TOPO_RECORD_OURS, 0 },
	};
	struct topo_record *record = NULL;
	char *cause = NULL;
	int earlier = -1;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *cm = cJSON_Parse(cases[i].configmap);
		const char *text = "unset";

		assert_non_null(cm);
		assert_int_equal(topo_record_map_whose(cm, "t", "u1", cases[i].need_controller, &text),
				 cases[i].whose);
		assert_int_equal(text != NULL, cases[i].has_text);
		if (text) {
			assert_int_equal(
				topo_record_map_parse(text, strlen(text), "u1", &record, &earlier, &cause),
				0);
			assert_int_equal(earlier, 0);
			assert_string_equal(topo_record_uid(record), "u1");
			topo_record_free(record);
		}
		cJSON_Delete(cm);
	}
	/* Text of another uid: an earlier JobSet's, nothing kept. */
	static const char other[] = "{\"uid\":\"u0\",\"replicatedJobs\":{}}";

	assert_int_equal(topo_record_map_parse(other, strlen(other), "u1", &record, &earlier, &cause), -1);
	assert_null(record);
	assert_int_equal(earlier, 1);
	assert_non_null(strstr(cause, "earlier JobSet"));
	free(cause);
	cause = NULL;
	assert_int_equal(topo_record_map_parse("{", 1, "u1", &record, &earlier, &cause), -1);
	assert_int_equal(earlier, 0);
	free(cause);
#undef CM
#undef REF
#undef RECORD
}

/* L4: a Job of completions 8 and parallelism 4 runs 4 pods at once; its
 * record places indexes 0..3 and every later pod takes a slot of those. */
static void later_pods_of_a_job_take_the_slots_its_record_places(void **state)
{
	static const char text[] = "{\"uid\":\"u\",\"attempt\":0,\"replicatedJobs\":{"
				   "\"one\":[[[0,3,\"rack=r1\"]]],"
				   "\"two\":[[[0,1,\"rack=r1\"],[2,3,\"rack=r2\"]]]}}";
	struct topo_record *r = NULL;
	const char *selector;

	(void)state;
	assert_int_equal(topo_record_parse(text, strlen(text), &r, NULL), 0);
	/* All in one rack: every index, and the Job as a whole (0..7). */
	for (uint32_t k = 0; k < 8; k++) {
		assert_int_equal(topo_record_find(r, "one", 0, k, &selector), 1);
		assert_string_equal(selector, "rack=r1");
	}
	assert_int_equal(topo_record_find_range(r, "one", 0, 0, 7, &selector), 1);
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_job_template(r, "one", 0, 0, 7, &selector), 1);
	/* Two racks: index 6 takes slot 2's (rack r2); the Job is pinned pod
	 * by pod, its template the rack of most (the first of equal ones). */
	assert_int_equal(topo_record_find(r, "two", 0, 6, &selector), 1);
	assert_string_equal(selector, "rack=r2");
	assert_int_equal(topo_record_find(r, "two", 0, 5, &selector), 1);
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_find_range(r, "two", 0, 0, 7, &selector), 2);
	assert_int_equal(topo_record_find_range(r, "two", 0, 4, 5, &selector), 1); /* slots 0..1 */
	assert_string_equal(selector, "rack=r1");
	assert_int_equal(topo_record_job_template(r, "two", 0, 0, 7, &selector), 1);
	assert_string_equal(selector, "rack=r1");
	topo_record_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(placement_round_trip),
		cmocka_unit_test(runs_and_lookup),
		cmocka_unit_test(later_pods_of_a_job_take_the_slots_its_record_places),
		cmocka_unit_test(a_jobs_template_gets_the_domain_of_most_of_its_pods),
		cmocka_unit_test(bad_records_are_refused),
		cmocka_unit_test(a_records_configmap_is_read_by_one_rule),
		cmocka_unit_test(selectors_match_labels_and_hostnames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
