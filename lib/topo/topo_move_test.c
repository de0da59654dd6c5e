/*
 * Unit tests of topo_move: one Job of a placed JobSet placed again alone.
 * The other Jobs keep their runs byte for byte; an exclusive Job never moves
 * into a domain a staying Job holds; a Job tied to the others (Kueue's
 * PodSet of several replicas, every Job moving) is refused as TIED so that
 * the whole JobSet is placed again; no room is NO_ROOM with the core's
 * sentence.
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

#include "muster_api.h"
#include "topo_jobset.h"
#include "topo_move.h"
#include "topo_record.h"
#include "topo_store.h"
#include "topo_tree.h"

enum { CPU, PODS };

#define NODES 8

/* 8 nodes of 4 cpu: block b1 with racks r1 (n0, n1) and r2 (n2, n3), block
 * b2 with racks r3 (n4, n5) and r4 (n6, n7). */
struct fixture {
	struct topo_label labels[NODES][2];
	struct topo_node nodes[NODES];
	struct topo_cluster cluster;
	struct topo_store store;
	struct topo_jobset *jobset;
	struct topo_record *record;
	struct topo_tree *tree;
};

/* "w": 3 Jobs of 2 pods of 3 cpu (one pod per node). */
static const char *const JOBSET =
	"{\"metadata\":{\"name\":\"train\",\"namespace\":\"ns\",\"uid\":\"u\",\"annotations\":{%s}},"
	"\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":3,\"template\":{\"spec\":{"
	"\"parallelism\":2,\"completions\":2,\"template\":{\"metadata\":{\"annotations\":{%s}},"
	"\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}}}}]}}";

#define EXCLUSIVE "\"" JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY "\":\"rack\""
/* Volcano's networkTopology: per Job, not exclusive. */
#define NETWORK                                                                                              \
	"\"" MUSTER_ANNOTATION_NETWORK_TOPOLOGY "\":\"{\\\"mode\\\":\\\"hard\\\",\\\"highestTierName\\\":"   \
	"\\\"rack\\\"}\""

/* Job 0 in r1, job 1 in r2, job 2 in r3 (attempt 2). */
#define RECORD                                                                                               \
	"{\"uid\":\"u\",\"attempt\":2,\"replicatedJobs\":{\"w\":[[[0,1,\"block=b1,rack=r1\"]],"              \
	"[[0,1,\"block=b1,rack=r2\"]],[[0,1,\"block=b2,rack=r3\"]]]}}"

/* Builds the cluster without the nodes in `gone` (a bit per node). */
static void make(struct fixture *f, const char *jobset_annotations, const char *pod_annotations,
		 unsigned gone)
{
	static const char *const names[NODES] = { "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7" };
	static const char *const levels[] = { "block", "rack" };
	char json[2048], *cause = NULL;
	size_t kept = 0;
	cJSON *tree;

	memset(f, 0, sizeof(*f));
	f->cluster.resources[CPU] = "cpu";
	f->cluster.resources[PODS] = "pods";
	f->cluster.resource_count = 2;
	for (int i = 0; i < NODES; i++) {
		static const char *const racks[] = { "r1", "r2", "r3", "r4" };

		if ((gone >> i) & 1)
			continue;
		f->labels[kept][0] = (struct topo_label){ "block", i < 4 ? "b1" : "b2" };
		f->labels[kept][1] = (struct topo_label){ "rack", racks[i / 2] };
		f->nodes[kept].name = names[i];
		f->nodes[kept].labels = f->labels[kept];
		f->nodes[kept].label_count = 2;
		f->nodes[kept].allocatable[CPU] = 4000;
		f->nodes[kept].allocatable[PODS] = 110;
		kept++;
	}
	f->cluster.nodes = f->nodes;
	f->cluster.node_count = kept;
	snprintf(json, sizeof(json), JOBSET, jobset_annotations, pod_annotations);
	tree = cJSON_Parse(json);
	assert_non_null(tree);
	f->jobset = malloc(sizeof(*f->jobset));
	assert_non_null(f->jobset);
	assert_int_equal(topo_jobset_decode(&f->store, tree, f->jobset, &cause), 0);
	cJSON_Delete(tree);
	assert_int_equal(topo_record_parse(RECORD, strlen(RECORD), &f->record, &cause), 0);
	f->tree = topo_tree_from_levels(&f->cluster, levels, 2, &cause);
	assert_non_null(f->tree);
}

static void unmake(struct fixture *f)
{
	topo_tree_free(f->tree);
	topo_record_free(f->record);
	free(f->jobset);
	topo_store_free(&f->store);
}

static const char *selector_of(const struct topo_record *r, uint32_t job, uint32_t completion)
{
	const char *s = NULL;

	assert_true(topo_record_find(r, "w", job, completion, &s));
	return s;
}

static struct topo_record *parsed(const char *text)
{
	struct topo_record *r = NULL;
	char *cause = NULL;

	assert_int_equal(topo_record_parse(text, strlen(text), &r, &cause), 0);
	return r;
}

static void an_exclusive_job_moves_alone_to_a_rack_no_staying_job_holds(void **state)
{
	struct fixture f;
	const struct topo_move_job move = { "w", 1 };
	char where[256], *out = NULL, *cause = NULL;
	struct topo_record *r;

	(void)state;
	make(&f, EXCLUSIVE, "", 1u << 2); /* n2 deleted: r2 holds one pod of 3 cpu */
	/* r1 and r3 have room (nothing counted there) but a staying exclusive
	 * Job holds them; r2 lacks room: r4 is the only choice. */
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, &move, 1, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_PLACED);
	r = parsed(out);
	assert_string_equal(selector_of(r, 0, 0), "block=b1,rack=r1"); /* the others as they were */
	assert_string_equal(selector_of(r, 0, 1), "block=b1,rack=r1");
	assert_string_equal(selector_of(r, 2, 1), "block=b2,rack=r3");
	assert_string_equal(selector_of(r, 1, 0), "block=b2,rack=r4");
	assert_string_equal(selector_of(r, 1, 1), "block=b2,rack=r4");
	assert_int_equal(topo_record_attempt(r), 2);
	assert_string_equal(topo_record_uid(r), "u");
	assert_non_null(strstr(where, "w/1: "));
	assert_non_null(strstr(where, "r4"));
	topo_record_free(r);
	free(out);
	unmake(&f);
}

static void a_job_that_is_not_exclusive_may_share_a_staying_jobs_rack(void **state)
{
	struct fixture f;
	const struct topo_move_job move = { "w", 1 };
	char where[256], *out = NULL, *cause = NULL;
	struct topo_record *r;

	(void)state;
	make(&f, "", NETWORK, 1u << 2);
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, &move, 1, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_PLACED);
	r = parsed(out);
	/* Nothing counted in r1 (the caller counts room): not closed, so the
	 * first rack with room may be taken; never the lost r2. */
	assert_string_not_equal(selector_of(r, 1, 0), "block=b1,rack=r2");
	assert_string_equal(selector_of(r, 0, 0), "block=b1,rack=r1");
	topo_record_free(r);
	free(out);
	unmake(&f);
}

static void no_room_anywhere_is_no_room_with_the_cores_sentence(void **state)
{
	struct fixture f;
	const struct topo_move_job move = { "w", 1 };
	char where[256], *out = NULL, *cause = NULL;

	(void)state;
	make(&f, EXCLUSIVE, "", 1u << 2);
	f.nodes[5].used[CPU] = 2000; /* n6 (index 5 once n2 is gone) half full: r4 holds one pod */
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, &move, 1, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_NO_ROOM);
	assert_null(out);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "rack"));
	free(cause);
	unmake(&f);
}

static void jobs_tied_together_or_all_moving_are_left_to_the_whole_jobset(void **state)
{
	struct fixture f;
	const struct topo_move_job one = { "w", 1 }, all[] = { { "w", 0 }, { "w", 1 }, { "w", 2 } };
	char where[256], *out = NULL, *cause = NULL;

	(void)state;
	/* Kueue's PodSet: the 3 replicas are placed as one. */
	make(&f, "", "\"" KUEUE_ANNOTATION_REQUIRED "\":\"block\"", 1u << 2);
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, &one, 1, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_TIED);
	assert_non_null(strstr(cause, "PodSet"));
	free(cause);
	cause = NULL;
	unmake(&f);
	make(&f, EXCLUSIVE, "", 1u << 2);
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, all, 3, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_TIED);
	assert_non_null(strstr(cause, "every Job"));
	assert_null(out);
	free(cause);
	unmake(&f);
}

static void a_kueue_podset_of_one_slice_a_job_moves_job_by_job(void **state)
{
	struct fixture f;
	const struct topo_move_job move = { "w", 1 };
	char where[256], *out = NULL, *cause = NULL;
	struct topo_record *r;
	const char *a, *b;

	(void)state;
	/* Kueue's PodSet of 3 Jobs, each slice of 2 pods (one Job) in a rack,
	 * no level for the whole PodSet: job 1 moves alone. */
	make(&f, "", "\"" KUEUE_ANNOTATION_SLICE "\":\"rack\",\"" KUEUE_ANNOTATION_SLICE_SIZE "\":\"2\"",
	     1u << 2);
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, &move, 1, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_PLACED);
	r = parsed(out);
	a = selector_of(r, 1, 0);
	b = selector_of(r, 1, 1);
	assert_string_equal(a, b); /* the slice in one rack */
	assert_string_not_equal(a, "block=b1,rack=r2");
	assert_string_equal(selector_of(r, 0, 0), "block=b1,rack=r1");
	assert_string_equal(selector_of(r, 2, 1), "block=b2,rack=r3");
	topo_record_free(r);
	free(out);
	unmake(&f);
	/* With a level for the whole PodSet too, its Jobs are tied. */
	make(&f, "",
	     "\"" KUEUE_ANNOTATION_REQUIRED "\":\"block\",\"" KUEUE_ANNOTATION_SLICE
	     "\":\"rack\",\"" KUEUE_ANNOTATION_SLICE_SIZE "\":\"2\"",
	     1u << 2);
	assert_int_equal(topo_move(f.jobset, f.tree, f.record, &move, 1, &out, where, sizeof(where), &cause),
			 TOPO_MOVE_TIED);
	assert_non_null(strstr(cause, "PodSet"));
	free(cause);
	unmake(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_exclusive_job_moves_alone_to_a_rack_no_staying_job_holds),
		cmocka_unit_test(a_job_that_is_not_exclusive_may_share_a_staying_jobs_rack),
		cmocka_unit_test(no_room_anywhere_is_no_room_with_the_cores_sentence),
		cmocka_unit_test(jobs_tied_together_or_all_moving_are_left_to_the_whole_jobset),
		cmocka_unit_test(a_kueue_podset_of_one_slice_a_job_moves_job_by_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
