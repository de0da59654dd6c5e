/*
 * Unit tests of topo_promise: a placed JobSet's pods not bound yet take
 * their room in their recorded domain, first fit; pods for which the domain
 * has no room left (a node not Ready, cordoned, tainted against them, or
 * filled by other pods) are counted stranded with the domain and why; a
 * domain with no node left is "gone"; bound pods and unconstrained ones
 * take nothing.
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

#include "topo_jobset.h"
#include "topo_promise.h"
#include "topo_record.h"
#include "topo_store.h"
#include "topo_tree.h"

enum { CPU, PODS };

/* 4 nodes of 4 cpu: rack r1 (n0, n1), rack r2 (n2, n3), all in block b1. */
struct fixture {
	struct topo_label labels[4][2];
	struct topo_node nodes[4];
	struct topo_cluster cluster;
	struct topo_store store;
	struct topo_jobset *jobset;
	struct topo_record *record;
	unsigned bound_mask; /* completion indexes bound (job 0 of "w") */
};

static const char *const JOBSET =
	"{\"metadata\":{\"name\":\"train\",\"namespace\":\"ns\",\"uid\":\"u\"},\"spec\":{\"replicatedJobs\":["
	"{\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":4,\"completions\":4,"
	"\"template\":{\"metadata\":{\"annotations\":{\"kueue.x-k8s.io/podset-required-topology\":\"rack\"}},"
	"\"spec\":{%s\"containers\":[{\"resources\":{\"requests\":{%s\"cpu\":\"2\"}}}]}}}}}]}}";

static void make_with(struct fixture *f, const char *record, const char *pod_spec_extra,
		      const char *requests_extra)
{
	static const char *const names[] = { "n0", "n1", "n2", "n3" }, *const racks[] = { "r1", "r1", "r2",
											  "r2" };
	char json[1024], *cause = NULL;
	cJSON *tree;

	memset(f, 0, sizeof(*f));
	f->cluster.resources[CPU] = "cpu";
	f->cluster.resources[PODS] = "pods";
	f->cluster.resource_count = 2;
	for (int i = 0; i < 4; i++) {
		f->labels[i][0] = (struct topo_label){ "block", "b1" };
		f->labels[i][1] = (struct topo_label){ "rack", racks[i] };
		f->nodes[i].name = names[i];
		f->nodes[i].labels = f->labels[i];
		f->nodes[i].label_count = 2;
		f->nodes[i].allocatable[CPU] = 4000;
		f->nodes[i].allocatable[PODS] = 110;
	}
	f->cluster.nodes = f->nodes;
	f->cluster.node_count = 4;
	snprintf(json, sizeof(json), JOBSET, pod_spec_extra ? pod_spec_extra : "",
		 requests_extra ? requests_extra : "");
	tree = cJSON_Parse(json);
	assert_non_null(tree);
	f->jobset = malloc(sizeof(*f->jobset));
	assert_non_null(f->jobset);
	assert_int_equal(topo_jobset_decode(&f->store, tree, f->jobset, &cause), 0);
	cJSON_Delete(tree);
	assert_int_equal(topo_record_parse(record, strlen(record), &f->record, &cause), 0);
}

static void make(struct fixture *f, const char *record, const char *pod_spec_extra)
{
	make_with(f, record, pod_spec_extra, NULL);
}

static void unmake(struct fixture *f)
{
	topo_record_free(f->record);
	free(f->jobset);
	topo_store_free(&f->store);
}

static int bound(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	const struct fixture *f = arg;

	return strcmp(rj, "w") == 0 && job == 0 && completion < 32 && (f->bound_mask >> completion) & 1;
}

static void take(struct fixture *f, struct topo_promise *out)
{
	topo_promise_take(&f->cluster, f->nodes, f->jobset, f->record, bound, f, out);
}

#define IN_R1 "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,3,\"block=b1,rack=r1\"]]]}}"

static void pods_not_bound_take_their_room_first_fit(void **state)
{
	struct fixture f;
	struct topo_promise p;

	(void)state;
	make(&f, IN_R1, NULL);
	take(&f, &p);
	assert_int_equal(p.reserved, 4);
	assert_int_equal(p.stranded, 0);
	assert_int_equal(f.nodes[0].used[CPU], 4000); /* two pods of 2 cpu on each node of r1 */
	assert_int_equal(f.nodes[1].used[CPU], 4000);
	assert_int_equal(f.nodes[1].used[PODS], 2);
	assert_int_equal(f.nodes[2].used[CPU], 0);
	unmake(&f);

	/* Bound pods hold their room through the cache already: nothing taken. */
	make(&f, IN_R1, NULL);
	f.bound_mask = 0x5; /* 0 and 2 */
	take(&f, &p);
	assert_int_equal(p.reserved, 2);
	assert_int_equal(f.nodes[0].used[CPU], 4000);
	assert_int_equal(f.nodes[1].used[CPU], 0);
	unmake(&f);
}

static void a_node_not_ready_cordoned_tainted_or_full_strands_pods(void **state)
{
	struct fixture f;
	struct topo_promise p;
	struct topo_taint taint = { "maintenance", NULL, TOPO_NO_SCHEDULE };

	(void)state;
	make(&f, IN_R1, NULL);
	f.nodes[1].not_ready = 1;
	take(&f, &p);
	assert_int_equal(p.reserved, 4);
	assert_int_equal(p.stranded, 2);
	assert_false(p.gone);
	assert_string_equal(p.domain, "block=b1,rack=r1");
	assert_string_equal(p.why, "2 nodes: 1 full, 1 is not Ready");
	/* The promise still counts: the stranded pods' room on the domain's first node. */
	assert_int_equal(f.nodes[0].used[CPU], 8000);
	unmake(&f);

	make(&f, IN_R1, NULL);
	f.nodes[1].unschedulable = 1;
	take(&f, &p);
	assert_int_equal(p.stranded, 2);
	assert_string_equal(p.why, "2 nodes: 1 full, 1 is cordoned (unschedulable)");
	unmake(&f);

	make(&f, IN_R1, NULL);
	f.nodes[1].taints = &taint;
	f.nodes[1].taint_count = 1;
	take(&f, &p);
	assert_int_equal(p.stranded, 2);
	assert_string_equal(p.why, "2 nodes: 1 full, 1 has a taint the pods do not tolerate");
	unmake(&f);

	/* Tolerated: no pod stranded. */
	make(&f, IN_R1, "\"tolerations\":[{\"key\":\"maintenance\",\"operator\":\"Exists\"}],");
	f.nodes[1].taints = &taint;
	f.nodes[1].taint_count = 1;
	take(&f, &p);
	assert_int_equal(p.stranded, 0);
	unmake(&f);

	/* Other pods took 3 of n1's 4 cpu since the decision: one pod left out. */
	make(&f, IN_R1, NULL);
	f.nodes[1].used[CPU] = 3000;
	take(&f, &p);
	assert_int_equal(p.stranded, 2);
	assert_string_equal(p.why, "2 nodes: 2 full");
	f.bound_mask = 0x1; /* one bound: still one pod without room */
	memset(f.nodes[0].used, 0, sizeof(f.nodes[0].used));
	take(&f, &p);
	assert_int_equal(p.reserved, 3);
	assert_int_equal(p.stranded, 1);
	unmake(&f);
}

/* A resource no node tracks, requested before cpu: the cpu still takes its
 * room (the shape is filled past the untracked one). */
static void an_untracked_resource_leaves_the_rest_of_the_request_counted(void **state)
{
	struct fixture f;
	struct topo_promise p;

	(void)state;
	make_with(&f, IN_R1, NULL, "\"vendor.example/fpga\":\"1\",");
	take(&f, &p);
	assert_int_equal(p.reserved, 4);
	assert_int_equal(p.stranded, 0);
	assert_int_equal(f.nodes[0].used[CPU], 4000);
	assert_int_equal(f.nodes[1].used[CPU], 4000);
	unmake(&f);
}

static void a_domain_with_no_node_left_is_gone_and_unconstrained_pods_take_nothing(void **state)
{
	struct fixture f;
	struct topo_promise p;

	(void)state;
	make(&f, "{\"uid\":\"u\",\"replicatedJobs\":{\"w\":[[[0,1,\"block=b1,rack=r9\"],[2,3,\"\"]]]}}",
	     NULL);
	take(&f, &p);
	assert_int_equal(p.reserved, 2);
	assert_int_equal(p.stranded, 2);
	assert_true(p.gone);
	assert_string_equal(p.domain, "block=b1,rack=r9");
	assert_string_equal(p.why, "no node left");
	for (int i = 0; i < 4; i++)
		assert_int_equal(f.nodes[i].used[CPU], 0);
	unmake(&f);

	/* A replicated job the JobSet no longer names: skipped. */
	make(&f, "{\"uid\":\"u\",\"replicatedJobs\":{\"other\":[[[0,3,\"block=b1,rack=r1\"]]]}}", NULL);
	take(&f, &p);
	assert_int_equal(p.reserved, 0);
	unmake(&f);
}

/* Issue 36 L1: a cluster with no Node object at all (a controller started
 * before the nodes registered, or after every node was deleted): the
 * domain is gone, and nothing is written anywhere. With the nodes array
 * NULL the old scan took node 0 of an empty cluster as the domain's first
 * and wrote through a NULL pointer; with a leftover array it wrote into a
 * slot no node holds and said "0 nodes" instead of "no node left". */
static void a_cluster_with_no_nodes_has_every_domain_gone(void **state)
{
	struct fixture f;
	struct topo_promise p;

	(void)state;
	make(&f, IN_R1, NULL);
	f.cluster.node_count = 0;
	topo_promise_take(&f.cluster, NULL, f.jobset, f.record, bound, &f, &p);
	assert_int_equal(p.reserved, 4);
	assert_int_equal(p.stranded, 4);
	assert_true(p.gone);
	assert_string_equal(p.why, "no node left");
	/* A leftover array of the nodes seen before: untouched. */
	take(&f, &p);
	assert_true(p.gone);
	assert_string_equal(p.why, "no node left");
	for (int i = 0; i < 4; i++)
		assert_int_equal(f.nodes[i].used[CPU], 0);
	unmake(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pods_not_bound_take_their_room_first_fit),
		cmocka_unit_test(a_node_not_ready_cordoned_tainted_or_full_strands_pods),
		cmocka_unit_test(an_untracked_resource_leaves_the_rest_of_the_request_counted),
		cmocka_unit_test(a_domain_with_no_node_left_is_gone_and_unconstrained_pods_take_nothing),
		cmocka_unit_test(a_cluster_with_no_nodes_has_every_domain_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
