/*
 * jobset_state_test: a JobSet's identity and state (lib/muster/jobset_state.h)
 * decode field by field: a spec nothing can count, a restart count that is
 * not one, or an annotation too long leave the rest read; only a JobSet
 * without identity fails.
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

#include "jobset_state.h"
#include "muster_api.h"

#define IDENTITY "\"name\":\"train\",\"namespace\":\"ml\",\"uid\":\"u-1\""

static int decode(const char *json, struct jobset_state *out, char **cause)
{
	cJSON *object = cJSON_Parse(json);
	int rc;

	assert_non_null(object);
	rc = jobset_state_decode(object, out, cause);
	cJSON_Delete(object);
	return rc;
}

static void every_field_is_read(void **state)
{
	struct jobset_state st;

	(void)state;
	assert_int_equal(
		decode("{\"metadata\":{" IDENTITY ",\"creationTimestamp\":\"2026-11-28T15:21:47Z\","
		       "\"annotations\":{\"" MUSTER_ANNOTATION_PLACEMENT
		       "\":\"placed\",\"" MUSTER_ANNOTATION_PLACEMENT_REASON
		       "\":\"no rack has room\",\"" MUSTER_ANNOTATION_PLACEMENT_SKIPPED
		       "\":\"volcano\"}},\"spec\":{\"suspend\":true},"
		       "\"status\":{\"restarts\":3,\"conditions\":[{\"type\":\"Completed\",\"status\":\"False\"},"
		       "{\"type\":\"Failed\",\"status\":\"True\"}]}}",
		       &st, NULL),
		0);
	assert_string_equal(st.namespace, "ml");
	assert_string_equal(st.name, "train");
	assert_string_equal(st.uid, "u-1");
	assert_string_equal(st.created, "2026-11-28T15:21:47Z");
	assert_true(st.suspended);
	assert_true(st.has_restarts);
	assert_int_equal(st.restarts, 3);
	assert_true(st.finished);
	assert_string_equal(st.placement, "placed");
	assert_string_equal(st.placement_reason, "no rack has room");
	assert_string_equal(st.placement_skipped, "volcano");
}

static void a_bad_field_leaves_the_rest_read(void **state)
{
	struct jobset_state st;
	char json[2048];

	(void)state;
	/* A spec nothing can count, restarts not a count, suspend a string:
	 * the identity and the annotation still read. */
	assert_int_equal(decode("{\"metadata\":{" IDENTITY ",\"annotations\":{\"" MUSTER_ANNOTATION_PLACEMENT
				"\":\"waiting\"}},\"spec\":{\"replicatedJobs\":7,\"suspend\":\"true\"},"
				"\"status\":{\"restarts\":-2,\"conditions\":{}}}",
				&st, NULL),
			 0);
	assert_string_equal(st.uid, "u-1");
	assert_false(st.suspended); /* only JSON true, as the apiserver stores it */
	assert_false(st.has_restarts);
	assert_false(st.finished);
	assert_string_equal(st.placement, "waiting");
	/* A reason longer than muster writes, and a placement state longer than
	 * any: read as absent, never cut. */
	snprintf(json, sizeof(json),
		 "{\"metadata\":{" IDENTITY ",\"annotations\":{\"" MUSTER_ANNOTATION_PLACEMENT
		 "\":\"waiting-for-a-very-long-time\",\"" MUSTER_ANNOTATION_PLACEMENT_REASON "\":\"%0*d\"}}}",
		 JOBSET_STATE_REASON_MAX + 1, 0);
	assert_int_equal(decode(json, &st, NULL), 0);
	assert_string_equal(st.placement, "");
	assert_string_equal(st.placement_reason, "");
}

static void no_identity_no_state(void **state)
{
	static const struct {
		const char *json, *words;
	} cases[] = {
		{ "[]", "not an object" },
		{ "{\"spec\":{}}", "metadata is missing" },
		{ "{\"metadata\":{\"name\":\"t\",\"namespace\":\"ml\"}}", "metadata.uid is missing" },
		{ "{\"metadata\":{\"name\":7,\"namespace\":\"ml\",\"uid\":\"u\"}}",
		  "metadata.name is not a string" },
	};
	struct jobset_state st;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *cause = NULL;

		assert_int_equal(decode(cases[i].json, &st, &cause), -1);
		if (!strstr(cause, cases[i].words))
			fail_msg("%s: \"%s\" does not say \"%s\"", cases[i].json, cause, cases[i].words);
		free(cause);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_field_is_read),
		cmocka_unit_test(a_bad_field_leaves_the_rest_read),
		cmocka_unit_test(no_identity_no_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
