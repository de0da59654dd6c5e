/*
 * Unit tests of lib/cli/topo_run on a live cluster played by a fake API
 * server (testing/path_transport): the tree with its free room and the
 * domains placed JobSets hold (kubectl muster tree), and the explanation
 * of a waiting JobSet with the placement now (kubectl muster explain,
 * muster-topology --explain), as JSON and text on stdout.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "muster_api.h"
#include "path_transport.h"
#include "topo_live.h"
#include "topo_run.h"

/* Two racks of one node of 2 cpu each. */
static const char NODES[] =
	"{\"metadata\":{},\"items\":["
	"{\"metadata\":{\"name\":\"n1\",\"labels\":{\"rack\":\"r1\",\"kubernetes.io/hostname\":\"n1\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"10\"}}},"
	"{\"metadata\":{\"name\":\"n2\",\"labels\":{\"rack\":\"r2\",\"kubernetes.io/hostname\":\"n2\"}},"
	"\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"10\"}}}]}";
/* One pod of 1 cpu on n1. */
static const char PODS[] =
	"{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"p\",\"namespace\":\"team\"},"
	"\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{"
	"\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}]}";
/* The placement record of team/held: 2 pods in rack r1. */
static const char RECORDS[] =
	"{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"held" MUSTER_PLACEMENT_SUFFIX
	"\",\"namespace\":\"team\"},\"data\":{\"" MUSTER_PLACEMENT_KEY
	"\":\"{\\\"uid\\\":\\\"u\\\",\\\"replicatedJobs\\\":{\\\"w\\\":[[[0,1,\\\"rack=r1\\\"]]]}}\"}}]}";
/* JobSet team/train: 3 pods of 1 cpu required in one rack: never fits. */
static const char JOBSET[] =
	"{\"metadata\":{\"name\":\"train\",\"namespace\":\"team\",\"uid\":\"t-uid\",\"annotations\":{"
	"\"" MUSTER_ANNOTATION_PLACEMENT "\":\"waiting\",\"" MUSTER_ANNOTATION_PLACEMENT_REASON
	"\":\"no room\"}},"
	"\"spec\":{\"replicatedJobs\":[{\"name\":\"workers\",\"template\":{\"spec\":{\"parallelism\":3,"
	"\"completions\":3,\"template\":{\"metadata\":{\"annotations\":{\"" KUEUE_ANNOTATION_REQUIRED
	"\":\"rack\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}]}}";

struct fixture {
	struct path_transport server;
	struct topo_live *live;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct kube_client *client;

	assert_non_null(f);
	assert_int_equal(path_transport_add(&f->server, "/api/v1/nodes", 200, cJSON_Parse(NODES)), 0);
	assert_int_equal(path_transport_add(&f->server, "/api/v1/pods", 200, cJSON_Parse(PODS)), 0);
	assert_int_equal(path_transport_add(&f->server, "/api/v1/configmaps", 200, cJSON_Parse(RECORDS)), 0);
	assert_int_equal(path_transport_add(&f->server,
					    "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets/train",
					    200, cJSON_Parse(JOBSET)),
			 0);
	client = path_transport_client(&f->server);
	assert_non_null(client);
	assert_int_equal(topo_live_wrap(client, &f->live, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	topo_live_close(f->live);
	path_transport_clear(&f->server);
	free(f);
	return 0;
}

/* Runs fn with stdout into a buffer; returns its exit code, *out the text
 * (the caller frees it). */
static int capture(int (*fn)(const struct topo_run_options *, struct topo_live *),
		   const struct topo_run_options *o, struct topo_live *live, char **out)
{
	FILE *tmp = tmpfile();
	int saved, rc;
	long size;

	assert_non_null(tmp);
	fflush(stdout);
	saved = dup(1);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), 1) >= 0);
	rc = fn(o, live);
	fflush(stdout);
	assert_true(dup2(saved, 1) >= 0);
	close(saved);
	assert_int_equal(fseek(tmp, 0, SEEK_END), 0);
	size = ftell(tmp);
	assert_true(size >= 0);
	rewind(tmp);
	*out = calloc(1, (size_t)size + 1);
	assert_non_null(*out);
	assert_int_equal(fread(*out, 1, (size_t)size, tmp), (size_t)size);
	fclose(tmp);
	return rc;
}

static void the_tree_with_free_room_and_holders(void **state)
{
	struct fixture *f = *state;
	struct topo_run_options o = { .program = "test", .levels = "rack", .json = 1 };
	char *text = NULL;
	cJSON *tree, *r1, *held;

	assert_int_equal(capture(topo_run_tree, &o, f->live, &text), TOPO_RUN_PLACED);
	tree = cJSON_Parse(text);
	assert_non_null(tree);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(tree, "columns"), 0)->valuestring,
			    "cpu(m)");
	r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(tree, "domains"), 1);
	assert_string_equal(cJSON_GetObjectItem(r1, "path")->valuestring, "r1");
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(r1, "free"), 0)->valueint,
			 1000); /* 2 - 1 cpu */
	held = cJSON_GetArrayItem(cJSON_GetObjectItem(tree, "heldBy"), 0);
	assert_string_equal(cJSON_GetObjectItem(held, "nodeSelector")->valuestring, "rack=r1");
	assert_string_equal(cJSON_GetObjectItem(held, "jobset")->valuestring, "team/held");
	assert_int_equal(cJSON_GetObjectItem(held, "pods")->valueint, 2);
	/* Only pods that hold room were asked for. */
	assert_non_null(strstr(f->server.asked[1], "/api/v1/pods?"));
	assert_non_null(strstr(f->server.asked[1], "fieldSelector=spec.nodeName%21%3D"));
	cJSON_Delete(tree);
	free(text);

	/* The same as text, and with a JobSet: free pods of its shape. */
	o.json = 0;
	o.jobset_namespace = "team";
	o.jobset_name = "train";
	assert_int_equal(capture(topo_run_tree, &o, f->live, &text), TOPO_RUN_PLACED);
	assert_non_null(strstr(text, "topology (free pods per replicated job: workers)\n"
				     "(cluster)  3\n"
				     "  rack r1 1\n"));
	assert_non_null(strstr(text, "  rack=r1: team/held, 2 pods\n"));
	free(text);
}

/* The controller's view of a waiting JobSet, then the refusal (exit 1). */
static void explains_a_waiting_jobset(void **state)
{
	struct fixture *f = *state;
	struct topo_run_options o = { .program = "kubectl-muster",
				      .levels = "rack",
				      .jobset_namespace = "team",
				      .jobset_name = "train",
				      .explain = 1 };
	char *text = NULL;
	cJSON *out, *e;

	assert_int_equal(capture(topo_run_place, &o, f->live, &text), TOPO_RUN_REFUSED);
	assert_non_null(strstr(
		text, "JobSet team/train: " MUSTER_ANNOTATION_PLACEMENT "=waiting; waiting because: no room\n"
		      "placement of record: none (ConfigMap team/train" MUSTER_PLACEMENT_SUFFIX ": "));
	assert_non_null(strstr(text, "what kubectl-muster decides on the free room now"));
	assert_non_null(strstr(text, "\nrefused: "));
	free(text);
	o.json = 1;
	assert_int_equal(capture(topo_run_place, &o, f->live, &text), TOPO_RUN_REFUSED);
	out = cJSON_Parse(text);
	assert_non_null(out);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(out, "placed")));
	e = cJSON_GetObjectItem(out, "explain");
	assert_string_equal(cJSON_GetObjectItem(e, "placement")->valuestring, "waiting");
	assert_string_equal(cJSON_GetObjectItem(e, "waitingReason")->valuestring, "no room");
	assert_string_equal(cJSON_GetObjectItem(e, "recordState")->valuestring, "none");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(e, "record")));
	cJSON_Delete(out);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_tree_with_free_room_and_holders, setup, teardown),
		cmocka_unit_test_setup_teardown(explains_a_waiting_jobset, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
