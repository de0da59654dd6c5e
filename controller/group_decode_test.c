/*
 * Unit tests of group_decode and group_expect: JobSet and pod JSON into
 * structs, the expected-count rule on the KEP's stories, and the refusal of
 * malformed, mistyped and oversized input with a cause.
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

#include "group_decode.h"
#include "group_expect.h"

/* Story 1 of KEP-498: all replicated jobs, 3 × 100. */
static const char story1[] =
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
	"\"metadata\":{\"name\":\"my-jobset\",\"namespace\":\"default\",\"uid\":\"0b7c1d2e-1111-4222-8333-444455556666\"},"
	"\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":300},"
	"\"replicatedJobs\":[{\"name\":\"workers\",\"replicas\":3,\"template\":{\"spec\":{\"backoffLimit\":0,"
	"\"completions\":100,\"parallelism\":100,\"template\":{\"spec\":{\"containers\":[{\"name\":\"pytorch\"}]}}}}}]},"
	"\"status\":{\"restarts\":2}}";

/* Story 2: only `workers` is targeted. */
static const char story2[] =
	"{\"metadata\":{\"name\":\"my-jobset\",\"namespace\":\"default\",\"uid\":\"u2\"},"
	"\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":300,\"targetReplicatedJobs\":[\"workers\"]},"
	"\"replicatedJobs\":["
	"{\"name\":\"workers\",\"replicas\":3,\"template\":{\"spec\":{\"completions\":100,\"parallelism\":100}}},"
	"{\"name\":\"auxiliary\",\"replicas\":1,\"template\":{\"spec\":{\"completions\":1,\"parallelism\":1}}}]}}";

static struct jobset_model jobset;

static int decode_jobset(const char *json, char **cause)
{
	return jobset_model_parse(json, strlen(json), &jobset, cause);
}

static void ok_jobset(const char *json)
{
	char *cause = NULL;
	int rc = decode_jobset(json, &cause);

	if (rc != 0)
		fail_msg("decode failed: %s", cause ? cause : "(no cause)");
	assert_null(cause);
}

static void bad_jobset(const char *json, const char *cause_part)
{
	char *cause = NULL;

	assert_int_equal(decode_jobset(json, &cause), -1);
	assert_non_null(cause);
	if (!strstr(cause, cause_part))
		fail_msg("cause \"%s\" does not mention \"%s\"", cause, cause_part);
	free(cause);
}

static void story1_expects_300(void **state)
{
	(void)state;
	ok_jobset(story1);
	assert_string_equal(jobset.name, "my-jobset");
	assert_string_equal(jobset.namespace, "default");
	assert_string_equal(jobset.uid, "0b7c1d2e-1111-4222-8333-444455556666");
	assert_int_equal(jobset.restarts, 2);
	assert_true(jobset.has_config);
	assert_true(jobset.has_timeout);
	assert_int_equal(jobset.timeout_seconds, 300);
	assert_int_equal(jobset.target_count, 0);
	assert_int_equal(jobset.replicated_job_count, 1);
	assert_true(jobset.replicated_jobs[0].targeted);
	assert_int_equal(group_expected_pods(&jobset), 300);
}

/* spec.suspend true is the model's suspended; absent or false is not. */
static void jobset_suspended(void **state)
{
	(void)state;
	ok_jobset(story1);
	assert_int_equal(jobset.suspended, 0);
	ok_jobset("{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\",\"uid\":\"u\"},"
		  "\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"w\"}]}}");
	assert_int_equal(jobset.suspended, 1);
	ok_jobset("{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\",\"uid\":\"u\"},"
		  "\"spec\":{\"suspend\":false,\"replicatedJobs\":[{\"name\":\"w\"}]}}");
	assert_int_equal(jobset.suspended, 0);
}

static void story2_counts_targets_only(void **state)
{
	(void)state;
	ok_jobset(story2);
	assert_int_equal(jobset.restarts, 0);
	assert_int_equal(jobset.target_count, 1);
	assert_true(jobset.replicated_jobs[0].targeted);
	assert_false(jobset.replicated_jobs[1].targeted);
	assert_int_equal(group_expected_pods(&jobset), 300);
}

static void empty_targets_mean_all(void **state)
{
	(void)state;
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[]},\"replicatedJobs\":["
		  "{\"name\":\"w\",\"replicas\":3,\"template\":{\"spec\":{\"parallelism\":4}}},"
		  "{\"name\":\"x\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":1}}}]}}");
	assert_false(jobset.has_timeout);
	assert_int_equal(group_expected_pods(&jobset), 13);
	/* null is the same as empty */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":null},\"replicatedJobs\":["
		  "{\"name\":\"w\"},{\"name\":\"x\"}]}}");
	assert_int_equal(group_expected_pods(&jobset), 2);
}

static void defaults_and_min_rule(void **state)
{
	(void)state;
	/* No replicas, parallelism or completions at all: 1 × min(1, 1). */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"template\":{\"spec\":{}}}]}}");
	assert_false(jobset.has_config);
	assert_int_equal(jobset.replicated_jobs[0].replicas, 1);
	assert_int_equal(jobset.replicated_jobs[0].parallelism, 1);
	assert_int_equal(jobset.replicated_jobs[0].completions, 1);
	assert_int_equal(group_expected_pods(&jobset), 1);
	/* parallelism < completions: pods at once = parallelism. */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2,"
		  "\"template\":{\"spec\":{\"parallelism\":4,\"completions\":10}}}]}}");
	assert_int_equal(group_expected_pods(&jobset), 8);
	/* completions < parallelism: never more than completions pods. */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2,"
		  "\"template\":{\"spec\":{\"parallelism\":10,\"completions\":3}}}]}}");
	assert_int_equal(group_expected_pods(&jobset), 6);
	/* completions absent: defaults to parallelism. */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":5,"
		  "\"template\":{\"spec\":{\"parallelism\":7}}}]}}");
	assert_int_equal(group_expected_pods(&jobset), 35);
	/* replicas 0 and parallelism 0 count nothing. */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":0},"
		  "{\"name\":\"x\",\"template\":{\"spec\":{\"parallelism\":0}}}]}}");
	assert_int_equal(group_expected_pods(&jobset), 0);
}

static void unknown_targets_and_duplicates(void **state)
{
	(void)state;
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[\"w\",\"nope\",\"w\"]},"
		  "\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2},{\"name\":\"x\",\"replicas\":9}]}}");
	assert_int_equal(jobset.target_count, 2);
	assert_int_equal(group_expected_pods(&jobset), 2);
	/* Only unknown targets: nothing is expected, nothing will be released. */
	ok_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		  "\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[\"nope\"]},"
		  "\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2}]}}");
	assert_int_equal(group_expected_pods(&jobset), 0);
}

static void expected_saturates(void **state)
{
	struct jobset_model *big = calloc(1, sizeof(*big));

	(void)state;
	assert_non_null(big);
	big->replicated_job_count = JOBSET_MODEL_RJOBS_MAX;
	for (size_t i = 0; i < JOBSET_MODEL_RJOBS_MAX; i++) {
		big->replicated_jobs[i].replicas = KJSON_INT32_MAX;
		big->replicated_jobs[i].parallelism = KJSON_INT32_MAX;
		big->replicated_jobs[i].completions = KJSON_INT32_MAX;
		big->replicated_jobs[i].targeted = 1;
	}
	assert_true(group_expected_pods(big) == UINT64_MAX);
	big->replicated_job_count = 1;
	assert_true(group_expected_pods(big) == (uint64_t)KJSON_INT32_MAX * KJSON_INT32_MAX);
	free(big);
}

static void jobset_malformed(void **state)
{
	(void)state;
	bad_jobset("", "not valid JSON");
	bad_jobset("{\"metadata\":", "not valid JSON");
	bad_jobset("[]", "not an object");
	bad_jobset("{}", "metadata is missing");
	bad_jobset("{\"metadata\":{\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"replicatedJobs\":[]}}",
		   "metadata.name is missing");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"}}", "spec is missing");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{}}",
		   "replicatedJobs is missing");
	bad_jobset(
		"{\"metadata\":{\"name\":1,\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"replicatedJobs\":[]}}",
		"not a string");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":-1}]}}",
		   "replicas is not an integer");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1.5}]}}",
		   "replicas is not an integer");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2147483648}]}}",
		   "replicas is not an integer");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":\"3\"}]}}",
		   "replicas is not a number");
	bad_jobset(
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		"\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"template\":{\"spec\":{\"parallelism\":1e10}}}]}}",
		"parallelism is not an integer");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[{\"name\":\"w\"},{\"name\":\"w\"}]}}",
		   "appears twice");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[{\"replicas\":1}]}}",
		   "name is missing");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"groupSchedulingConfig\":true,\"replicatedJobs\":[]}}",
		   "groupSchedulingConfig is not an object");
	bad_jobset(
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		"\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":\"w\"},\"replicatedJobs\":[]}}",
		"not a list");
	bad_jobset(
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		"\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[\"\"]},\"replicatedJobs\":[]}}",
		"empty replicated job name");
	bad_jobset("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
		   "\"spec\":{\"replicatedJobs\":[]},\"status\":{\"restarts\":-2}}",
		   "status.restarts");
}

static void jobset_bounds(void **state)
{
	char name64[80];
	char *json;
	size_t size = 64 * 1024, used;
	char *cause = NULL;

	(void)state;
	memset(name64, 'a', 64);
	name64[64] = '\0';
	json = malloc(size);
	assert_non_null(json);
	snprintf(
		json, size,
		"{\"metadata\":{\"name\":\"%s\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"replicatedJobs\":[]}}",
		name64);
	bad_jobset(json, "longer than 63");
	/* 63 bytes is fine. */
	name64[63] = '\0';
	snprintf(
		json, size,
		"{\"metadata\":{\"name\":\"%s\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"replicatedJobs\":[]}}",
		name64);
	ok_jobset(json);
	/* JOBSET_MODEL_RJOBS_MAX + 1 replicated jobs. */
	used = (size_t)snprintf(json, size,
				"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{"
				"\"replicatedJobs\":[");
	for (int i = 0; i <= JOBSET_MODEL_RJOBS_MAX; i++)
		used += (size_t)snprintf(json + used, size - used, "%s{\"name\":\"j%d\"}", i ? "," : "", i);
	snprintf(json + used, size - used, "]}}");
	bad_jobset(json, "more than 128 replicatedJobs");
	free(json);
	/* A document longer than KJSON_OBJECT_MAX is refused before parsing. */
	assert_int_equal(jobset_model_parse(story1, (size_t)KJSON_OBJECT_MAX + 1, &jobset, &cause), -1);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "bytes, more than"));
	free(cause);
	cause = NULL;
	assert_int_equal(jobset_model_parse(NULL, 0, &jobset, &cause), -1);
	free(cause);
}

/* A pod as the apiserver sends it, with the parts the decoder reads. */
static char pod_json[4096];

static void make_pod(const char *extra_metadata, const char *node, const char *status)
{
	snprintf(
		pod_json, sizeof(pod_json),
		"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"my-jobset-workers-0-3-abcde\",\"namespace\":\"default\","
		"\"uid\":\"9f0e8d7c-aaaa-4bbb-8ccc-ddddeeeeffff\",\"resourceVersion\":\"123456\","
		"\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"my-jobset\","
		"\"jobset.sigs.k8s.io/replicatedjob-name\":\"workers\","
		"\"jobset.sigs.k8s.io/restart-attempt\":\"1\"}%s},"
		"\"spec\":{%s\"containers\":[{\"name\":\"pytorch\"}]},\"status\":%s}",
		extra_metadata, node, status);
}

static struct group_pod pod;

static int decode_pod(char **cause)
{
	return group_pod_decode(pod_json, strlen(pod_json), &pod, cause);
}

static void ok_pod(void)
{
	char *cause = NULL;

	if (decode_pod(&cause) != 0)
		fail_msg("pod decode failed: %s", cause ? cause : "(no cause)");
}

static void bad_pod(const char *cause_part)
{
	char *cause = NULL;

	assert_int_equal(decode_pod(&cause), -1);
	assert_non_null(cause);
	if (!strstr(cause, cause_part))
		fail_msg("cause \"%s\" does not mention \"%s\"", cause, cause_part);
	free(cause);
}

static void pod_fields(void **state)
{
	(void)state;
	make_pod(
		"", "\"nodeName\":\"node-7\",",
		"{\"phase\":\"Pending\",\"podIP\":\"10.4.0.17\",\"initContainerStatuses\":["
		"{\"name\":\"other\",\"state\":{\"terminated\":{\"exitCode\":0}}},"
		"{\"name\":\"group-scheduling-init\",\"state\":{\"running\":{\"startedAt\":\"2026-11-21T07:00:00Z\"}}}]}");
	ok_pod();
	assert_string_equal(pod.uid, "9f0e8d7c-aaaa-4bbb-8ccc-ddddeeeeffff");
	assert_string_equal(pod.name, "my-jobset-workers-0-3-abcde");
	assert_string_equal(pod.namespace, "default");
	assert_string_equal(pod.jobset_name, "my-jobset");
	assert_string_equal(pod.replicated_job, "workers");
	assert_true(pod.has_attempt);
	assert_int_equal(pod.attempt, 1);
	assert_true(pod.bound);
	assert_false(pod.deleting);
	assert_int_equal(pod.barrier, GROUP_BARRIER_RUNNING);
	assert_int_equal(pod.phase, GROUP_PHASE_PENDING);
	assert_int_equal(pod.ip_family, 4);
	assert_memory_equal(pod.ip, "\x0a\x04\x00\x11", 4);
	assert_true(pod.has_resource_version);
	assert_int_equal(pod.resource_version, 123456);
}

/* The gang generation: the highest label muster.dev/gang-generation of the
 * targeted pod templates (absent 0); an untargeted template's is ignored;
 * a value that is not a number is refused. */
static void jobset_generation(void **state)
{
	static const char format[] =
		"{\"metadata\":{\"name\":\"js\",\"namespace\":\"ns\",\"uid\":\"u\"},"
		"\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[\"workers\",\"ps\"]},"
		"\"replicatedJobs\":["
		"{\"name\":\"workers\",\"template\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":{%s}}}}}},"
		"{\"name\":\"ps\",\"template\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":{%s}}}}}},"
		"{\"name\":\"aux\",\"template\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":{%s}}}}}}]}}";
	char json[1024];

	(void)state;
	snprintf(json, sizeof(json), format, "", "", "");
	ok_jobset(json);
	assert_int_equal(jobset.generation, 0);
	snprintf(json, sizeof(json), format, "\"muster.dev/gang-generation\":\"3\"",
		 "\"muster.dev/gang-generation\":\"4\"", "\"muster.dev/gang-generation\":\"9\"");
	ok_jobset(json);
	assert_int_equal(jobset.generation, 4);
	assert_int_equal(jobset.replicated_jobs[2].generation, 9);
	snprintf(json, sizeof(json), format, "\"muster.dev/gang-generation\":\"x\"", "", "");
	bad_jobset(json, "muster.dev/gang-generation is not a number");
	snprintf(json, sizeof(json), format, "\"muster.dev/gang-generation\":\"2147483648\"", "", "");
	bad_jobset(json, "spec.replicatedJobs[0] pod template label");
}

/* A pod's JobSet uid and gang generation labels. */
static void pod_identity_labels(void **state)
{
	(void)state;
	make_pod("", "", "{}");
	ok_pod();
	assert_string_equal(pod.jobset_uid, "");
	assert_int_equal(pod.generation, 0);
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"pu\",\"labels\":{"
		 "\"jobset.sigs.k8s.io/jobset-uid\":\"0b7c1d2e-1111-4222-8333-444455556666\","
		 "\"jobset.sigs.k8s.io/restart-attempt\":\"2\",\"muster.dev/gang-generation\":\"5\"}}}");
	ok_pod();
	assert_string_equal(pod.jobset_uid, "0b7c1d2e-1111-4222-8333-444455556666");
	assert_true(pod.has_attempt);
	assert_int_equal(pod.attempt, 2);
	assert_int_equal(pod.generation, 5);
	/* A generation muster cannot read: the pod never counts. */
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"pu\",\"labels\":{"
		 "\"jobset.sigs.k8s.io/restart-attempt\":\"2\",\"muster.dev/gang-generation\":\"five\"}}}");
	ok_pod();
	assert_false(pod.has_attempt);
}

/* A barrier restarted in place after its timeout (restartPolicy OnFailure):
 * the timeout is in lastState only. */
static void pod_barrier_last_state(void **state)
{
	(void)state;
	make_pod("", "\"nodeName\":\"n\",",
		 "{\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\",\"restartCount\":1,"
		 "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},"
		 "\"lastState\":{\"terminated\":{\"exitCode\":3,\"reason\":\"Error\"}}}]}");
	ok_pod();
	assert_int_equal(pod.barrier, GROUP_BARRIER_WAITING);
	assert_true(pod.barrier_timed_out_before);
	make_pod("", "\"nodeName\":\"n\",",
		 "{\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\",\"restartCount\":1,"
		 "\"state\":{\"running\":{}},\"lastState\":{\"terminated\":{\"exitCode\":4}}}]}");
	ok_pod();
	assert_int_equal(pod.barrier, GROUP_BARRIER_RUNNING);
	assert_false(pod.barrier_timed_out_before);
}

static void pod_barrier_states(void **state)
{
	static const struct {
		const char *status;
		enum group_barrier_state barrier;
		enum group_pod_phase phase;
	} cases[] = {
		{ "{}", GROUP_BARRIER_ABSENT, GROUP_PHASE_UNKNOWN },
		{ "null", GROUP_BARRIER_ABSENT, GROUP_PHASE_UNKNOWN },
		{ "{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\"}]}",
		  GROUP_BARRIER_ABSENT, GROUP_PHASE_PENDING },
		{ "{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\","
		  "\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}",
		  GROUP_BARRIER_WAITING, GROUP_PHASE_PENDING },
		{ "{\"phase\":\"Running\",\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\","
		  "\"state\":{\"terminated\":{\"exitCode\":0}}}]}",
		  GROUP_BARRIER_PASSED, GROUP_PHASE_RUNNING },
		{ "{\"phase\":\"Failed\",\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\","
		  "\"state\":{\"terminated\":{\"exitCode\":3}}}]}",
		  GROUP_BARRIER_TIMED_OUT, GROUP_PHASE_FAILED },
		{ "{\"phase\":\"Failed\",\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\","
		  "\"state\":{\"terminated\":{\"exitCode\":2}}}]}",
		  GROUP_BARRIER_FAILED, GROUP_PHASE_FAILED },
		{ "{\"phase\":\"Succeeded\"}", GROUP_BARRIER_ABSENT, GROUP_PHASE_SUCCEEDED },
		{ "{\"phase\":\"Weird\"}", GROUP_BARRIER_ABSENT, GROUP_PHASE_UNKNOWN },
		/* Another container's state is not the barrier's. */
		{ "{\"initContainerStatuses\":[{\"name\":\"x\",\"state\":{\"running\":{}}}]}",
		  GROUP_BARRIER_ABSENT, GROUP_PHASE_UNKNOWN },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		make_pod("", "", cases[i].status);
		ok_pod();
		assert_false(pod.bound);
		assert_int_equal(pod.barrier, cases[i].barrier);
		assert_int_equal(pod.phase, cases[i].phase);
	}
}

static void pod_optional_fields(void **state)
{
	(void)state;
	make_pod(",\"deletionTimestamp\":\"2026-11-21T07:00:00Z\"", "\"nodeName\":\"\",",
		 "{\"podIP\":\"fd00::1:2\"}");
	ok_pod();
	assert_true(pod.deleting);
	assert_false(pod.bound);
	assert_int_equal(pod.ip_family, 6);
	assert_int_equal(pod.ip[0], 0xfd);
	assert_int_equal(pod.ip[15], 2);
	/* Labels absent: no JobSet, no attempt; the pod still decodes. */
	snprintf(
		pod_json, sizeof(pod_json),
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"abc\"}}");
	ok_pod();
	assert_string_equal(pod.jobset_name, "");
	assert_false(pod.has_attempt);
	assert_false(pod.has_resource_version);
	/* An attempt label that is no number leaves has_attempt 0. */
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\","
		 "\"labels\":{\"jobset.sigs.k8s.io/restart-attempt\":\"-1\"}}}");
	ok_pod();
	assert_false(pod.has_attempt);
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\","
		 "\"labels\":{\"jobset.sigs.k8s.io/restart-attempt\":\"2147483648\"}}}");
	ok_pod();
	assert_false(pod.has_attempt);
	snprintf(
		pod_json, sizeof(pod_json),
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"18446744073709551615\","
		"\"labels\":{\"jobset.sigs.k8s.io/restart-attempt\":\"2147483647\"}}}");
	ok_pod();
	assert_true(pod.has_attempt);
	assert_int_equal(pod.attempt, 2147483647u);
	assert_true(pod.resource_version == UINT64_MAX);
	snprintf(
		pod_json, sizeof(pod_json),
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"18446744073709551616\"}}");
	ok_pod();
	assert_false(pod.has_resource_version);
}

static void pod_malformed(void **state)
{
	char long_name[300];

	(void)state;
	snprintf(pod_json, sizeof(pod_json), "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"}}");
	bad_pod("metadata.uid is missing");
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"\"}}");
	bad_pod("metadata.uid is empty");
	snprintf(pod_json, sizeof(pod_json), "{\"metadata\":{\"uid\":\"u\",\"namespace\":\"n\"}}");
	bad_pod("metadata.name is missing");
	snprintf(pod_json, sizeof(pod_json), "{\"metadata\":[]}");
	bad_pod("metadata is missing");
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\","
		 "\"labels\":[\"x\"]}}");
	bad_pod("labels is not an object");
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\","
		 "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":7}}}");
	bad_pod("jobset-name is not a string");
	memset(long_name, 'p', 254);
	long_name[254] = '\0';
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"n\",\"uid\":\"u\"}}", long_name);
	bad_pod("longer than 253");
	make_pod("", "", "{\"podIP\":\"10.0.0.300\"}");
	bad_pod("podIP is not an IP");
	make_pod("", "", "{\"initContainerStatuses\":{}}");
	bad_pod("initContainerStatuses is not a list");
	make_pod("", "", "{\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\",\"state\":7}]}");
	bad_pod("state is not an object");
	make_pod(
		"", "",
		"{\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\",\"state\":{\"terminated\":{}}}]}");
	bad_pod("without an exitCode");
	make_pod("", "", "[1]");
	bad_pod("status is not an object");
	snprintf(pod_json, sizeof(pod_json),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"}");
	bad_pod("not valid JSON");
}

static void watch_events(void **state)
{
	char line[4200];
	enum group_event event = GROUP_EVENT_DELETED;
	char *cause = NULL;

	(void)state;
	make_pod("", "\"nodeName\":\"n1\",", "{}");
	snprintf(line, sizeof(line), "{\"type\":\"MODIFIED\",\"object\":%s}", pod_json);
	assert_int_equal(group_watch_pod_decode(line, strlen(line), &event, &pod, &cause), 0);
	assert_int_equal(event, GROUP_EVENT_MODIFIED);
	assert_true(pod.bound);
	snprintf(line, sizeof(line), "{\"type\":\"DELETED\",\"object\":%s}", pod_json);
	assert_int_equal(group_watch_pod_decode(line, strlen(line), &event, &pod, &cause), 0);
	assert_int_equal(event, GROUP_EVENT_DELETED);
	assert_string_equal(group_event_name(event), "DELETED");
	snprintf(line, sizeof(line), "{\"type\":\"BOOKMARK\",\"object\":%s}", pod_json);
	assert_int_equal(group_watch_pod_decode(line, strlen(line), &event, &pod, &cause), -1);
	assert_non_null(strstr(cause, "not ADDED"));
	free(cause);
	snprintf(line, sizeof(line), "{\"object\":%s}", pod_json);
	assert_int_equal(group_watch_pod_decode(line, strlen(line), &event, &pod, &cause), -1);
	assert_non_null(strstr(cause, "no type"));
	free(cause);
	snprintf(line, sizeof(line), "{\"type\":\"ADDED\"}");
	assert_int_equal(group_watch_pod_decode(line, strlen(line), &event, &pod, &cause), -1);
	assert_non_null(strstr(cause, "pod is not an object"));
	free(cause);
}

/* Callers that parsed a watch envelope themselves hand over the object. */
static void from_parsed_tree(void **state)
{
	cJSON *root;
	char *cause = NULL;

	(void)state;
	make_pod("", "\"nodeName\":\"n1\",", "{\"phase\":\"Running\"}");
	root = cJSON_Parse(pod_json);
	assert_non_null(root);
	assert_int_equal(group_pod_from_json(root, &pod, &cause), 0);
	assert_true(pod.bound);
	assert_int_equal(pod.phase, GROUP_PHASE_RUNNING);
	assert_int_equal(group_pod_from_json(cJSON_GetObjectItem(root, "spec"), &pod, &cause), -1);
	assert_non_null(strstr(cause, "metadata is missing"));
	free(cause);
	assert_int_equal(group_pod_from_json(NULL, &pod, &cause), -1);
	free(cause);
	cJSON_Delete(root);
	root = cJSON_Parse(story2);
	assert_non_null(root);
	assert_int_equal(jobset_model_decode(root, &jobset, &cause), 0);
	assert_int_equal(group_expected_pods(&jobset), 300);
	cJSON_Delete(root);
	/* A NULL cause is allowed when the caller does not want one. */
	assert_int_equal(jobset_model_parse("{", 1, &jobset, NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(story1_expects_300),
		cmocka_unit_test(jobset_generation),
		cmocka_unit_test(pod_identity_labels),
		cmocka_unit_test(pod_barrier_last_state),
		cmocka_unit_test(story2_counts_targets_only),
		cmocka_unit_test(jobset_suspended),
		cmocka_unit_test(empty_targets_mean_all),
		cmocka_unit_test(defaults_and_min_rule),
		cmocka_unit_test(unknown_targets_and_duplicates),
		cmocka_unit_test(expected_saturates),
		cmocka_unit_test(jobset_malformed),
		cmocka_unit_test(jobset_bounds),
		cmocka_unit_test(pod_fields),
		cmocka_unit_test(pod_barrier_states),
		cmocka_unit_test(pod_optional_fields),
		cmocka_unit_test(pod_malformed),
		cmocka_unit_test(watch_events),
		cmocka_unit_test(from_parsed_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
