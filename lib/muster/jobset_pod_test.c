/*
 * jobset_pod_test: the one decoder of a pod's place in its JobSet
 * (lib/muster/jobset_pod.h): every label read, numbers kept as absent, bad
 * or set, the pin route's rule with the label it names, and the key the
 * placement loop counts bound pods by.
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

#include "jobset_pod.h"
#include "muster_api.h"

#define META(labels, annotations) "{\"labels\":{" labels "},\"annotations\":{" annotations "}}"
#define FULL_LABELS                                                                                          \
	"\"" JOBSET_LABEL_NAME "\":\"train\",\"" JOBSET_LABEL_UID                                            \
	"\":\"u-1\",\"" JOBSET_LABEL_REPLICATED_JOB "\":\"workers\",\"" JOBSET_LABEL_JOB_INDEX "\":\"3\""

static int decode(const char *json, const char *kind, struct jobset_pod *out, char **cause)
{
	cJSON *metadata = cJSON_Parse(json);
	int rc;

	assert_non_null(metadata);
	rc = jobset_pod_decode(metadata, kind, out, cause);
	cJSON_Delete(metadata);
	return rc;
}

static void every_label_is_read(void **state)
{
	struct jobset_pod p;
	char *cause = NULL;

	(void)state;
	assert_int_equal(decode(META(FULL_LABELS ",\"" JOBSET_LABEL_RESTART_ATTEMPT
						 "\":\"2\",\"" MUSTER_LABEL_GANG_GENERATION "\":\"5\"",
				     "\"" JOB_ANNOTATION_COMPLETION_INDEX "\":\"7\""),
				"pod", &p, &cause),
			 0);
	assert_string_equal(p.jobset, "train");
	assert_string_equal(p.uid, "u-1");
	assert_string_equal(p.replicated_job, "workers");
	assert_int_equal(p.job_index_state, JOBSET_POD_SET);
	assert_int_equal(p.job_index, 3);
	assert_int_equal(p.completion_state, JOBSET_POD_SET);
	assert_int_equal(p.completion, 7);
	assert_int_equal(p.attempt_state, JOBSET_POD_SET);
	assert_int_equal(p.attempt, 2);
	assert_int_equal(p.generation_state, JOBSET_POD_SET);
	assert_int_equal(p.generation, 5);
	assert_int_equal(jobset_pod_require(&p, "pod", 1, &cause), 0);

	/* The completion index from the label when the annotation is absent. */
	assert_int_equal(decode(META(FULL_LABELS ",\"" JOB_ANNOTATION_COMPLETION_INDEX "\":\"4\"", ""), "pod",
				&p, &cause),
			 0);
	assert_int_equal(p.completion_state, JOBSET_POD_SET);
	assert_int_equal(p.completion, 4);
	assert_int_equal(p.attempt_state, JOBSET_POD_ABSENT);
}

static void numbers_are_absent_bad_or_set(void **state)
{
	static const struct {
		const char *value;
		enum jobset_pod_number state;
	} cases[] = {
		{ "\"\"", JOBSET_POD_ABSENT },
		{ "null", JOBSET_POD_ABSENT },
		{ "\"0\"", JOBSET_POD_SET },
		{ "\"2147483647\"", JOBSET_POD_SET },
		{ "\"2147483648\"", JOBSET_POD_BAD },
		{ "\"-1\"", JOBSET_POD_BAD },
		{ "\"+1\"", JOBSET_POD_BAD },
		{ "\" 1\"", JOBSET_POD_BAD },
		{ "\"1x\"", JOBSET_POD_BAD },
		{ "\"99999999999\"", JOBSET_POD_BAD },
		{ "3", JOBSET_POD_SET },
		{ "true", JOBSET_POD_BAD },
	};
	char json[256];
	struct jobset_pod p;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json), "{\"labels\":{\"" JOBSET_LABEL_RESTART_ATTEMPT "\":%s}}",
			 cases[i].value);
		assert_int_equal(decode(json, "pod", &p, NULL), 0);
		if (p.attempt_state != cases[i].state)
			fail_msg("attempt %s: state %d, want %d", cases[i].value, p.attempt_state,
				 cases[i].state);
	}
}

static void strings_are_bounded_and_typed(void **state)
{
	struct jobset_pod p;
	char *cause = NULL;
	char json[512];

	(void)state;
	assert_int_equal(decode("{\"labels\":[]}", "pod", &p, &cause), -1);
	assert_non_null(strstr(cause, "labels is not an object"));
	free(cause);
	cause = NULL;
	assert_int_equal(decode("{\"labels\":{\"" JOBSET_LABEL_UID "\":7}}", "Job", &p, &cause), -1);
	assert_non_null(strstr(cause, "the Job's label " JOBSET_LABEL_UID " is not a string"));
	free(cause);
	cause = NULL;
	snprintf(json, sizeof(json), "{\"labels\":{\"" JOBSET_LABEL_NAME "\":\"%0*d\"}}", 64, 0);
	assert_int_equal(decode(json, "pod", &p, &cause), -1);
	assert_non_null(strstr(cause, "longer than 63 bytes"));
	free(cause);
	/* No metadata at all: nothing known, no error. */
	assert_int_equal(jobset_pod_decode(NULL, "pod", &p, NULL), 0);
	assert_string_equal(p.jobset, "");
	assert_int_equal(p.job_index_state, JOBSET_POD_ABSENT);
}

static void require_names_the_first_label_that_fails(void **state)
{
	static const struct {
		const char *meta;
		int completion;
		const char *words;
	} cases[] = {
		{ META("", ""), 1, JOBSET_LABEL_NAME " is missing" },
		{ META("\"" JOBSET_LABEL_NAME "\":\"t\"", ""), 1, JOBSET_LABEL_UID " is missing" },
		{ META("\"" JOBSET_LABEL_NAME "\":\"t\",\"" JOBSET_LABEL_UID "\":\"u\"", ""), 1,
		  JOBSET_LABEL_REPLICATED_JOB " is missing" },
		{ META("\"" JOBSET_LABEL_NAME "\":\"t\",\"" JOBSET_LABEL_UID
		       "\":\"u\",\"" JOBSET_LABEL_REPLICATED_JOB "\":\"w\"",
		       ""),
		  1, "has no label " JOBSET_LABEL_JOB_INDEX },
		{ META("\"" JOBSET_LABEL_NAME "\":\"../x\",\"" JOBSET_LABEL_UID
		       "\":\"u\",\"" JOBSET_LABEL_REPLICATED_JOB "\":\"w\",\"" JOBSET_LABEL_JOB_INDEX
		       "\":\"0\"",
		       ""),
		  1, "is not a JobSet's name" },
		{ META("\"" JOBSET_LABEL_NAME "\":\"t\",\"" JOBSET_LABEL_UID
		       "\":\"u/v\",\"" JOBSET_LABEL_REPLICATED_JOB "\":\"w\",\"" JOBSET_LABEL_JOB_INDEX
		       "\":\"0\"",
		       ""),
		  1, JOBSET_LABEL_UID " is not a uid" },
		{ META(FULL_LABELS ",\"" JOBSET_LABEL_RESTART_ATTEMPT "\":\"x\"", ""), 1,
		  JOBSET_LABEL_RESTART_ATTEMPT " is not an integer" },
		{ META(FULL_LABELS, ""), 1, "has no annotation " JOB_ANNOTATION_COMPLETION_INDEX },
		{ META(FULL_LABELS, "\"" JOB_ANNOTATION_COMPLETION_INDEX "\":\"-2\""), 1,
		  JOB_ANNOTATION_COMPLETION_INDEX " is not an integer" },
	};
	struct jobset_pod p;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *cause = NULL;

		assert_int_equal(decode(cases[i].meta, "pod", &p, NULL), 0);
		assert_int_equal(jobset_pod_require(&p, "pod", cases[i].completion, &cause), -1);
		if (!strstr(cause, cases[i].words))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, cause, cases[i].words);
		free(cause);
	}
	/* A Job has no completion index: not asked for. */
	assert_int_equal(decode(META(FULL_LABELS, ""), "Job", &p, NULL), 0);
	assert_int_equal(jobset_pod_require(&p, "Job", 0, NULL), 0);
}

static void the_key_names_a_pod_of_an_attempt(void **state)
{
	char key[JOBSET_POD_KEY_MAX + 1], small[8];
	char uid[MODEL_UID_MAX + 1], rj[MODEL_LABEL_MAX + 1];

	(void)state;
	assert_int_equal(jobset_pod_key("u-1", 2, "workers", 3, 7, key, sizeof(key)), 0);
	assert_string_equal(key, "u-1/2/workers/3/7");
	assert_int_equal(jobset_pod_key("u-1", 2, "workers", 3, 7, small, sizeof(small)), -1);
	/* The longest of everything fits JOBSET_POD_KEY_MAX. */
	memset(uid, 'u', MODEL_UID_MAX);
	uid[MODEL_UID_MAX] = '\0';
	memset(rj, 'r', MODEL_LABEL_MAX);
	rj[MODEL_LABEL_MAX] = '\0';
	assert_int_equal(jobset_pod_key(uid, 2147483647u, rj, 2147483647u, 2147483647u, key, sizeof(key)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_label_is_read),
		cmocka_unit_test(numbers_are_absent_bad_or_set),
		cmocka_unit_test(strings_are_bounded_and_typed),
		cmocka_unit_test(require_names_the_first_label_that_fails),
		cmocka_unit_test(the_key_names_a_pod_of_an_attempt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
