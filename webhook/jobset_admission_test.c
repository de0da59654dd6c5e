/*
 * Unit tests of the webhook's pure modules: the AdmissionReview envelope
 * (admission), the rules (jobset_validate) and the injection (jobset_mutate),
 * with the settings from lib/muster/group_config. Patches are applied with a small
 * RFC 6902 "add" applier below and the result is checked field by field.
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
#include <gnutls/gnutls.h>

#include "admission.h"
#include "group_config.h"
#include "jobset_admission.h"
#include "jobset_mutate.h"
#include "jobset_model.h"
#include "jobset_shape.h"
#include "jobset_validate.h"
#include "placement_gate.h"
#include "pod_pin.h"
#include "webhook.h"

#define TOKEN "tok-0123456789abcdef0123456789ab"

static const struct jobset_mutate_options barrier = {
	.barrier_image = "muster-barrier:test",
	.image_pull_policy = "IfNotPresent",
	.barrier_port = 9443,
	.cpu_request = "10m",
	.memory_request = "16Mi",
	.memory_limit = "32Mi",
};

/* KEP-498 Story 2, as JSON, with the apiserver's metadata. */
#define STORY2                                                                                                     \
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"my-jobset\","   \
	"\"namespace\":\"default\",\"uid\":\"u-1\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":" \
	"300,\"targetReplicatedJobs\":[\"workers\"]},\"replicatedJobs\":[{\"name\":\"workers\",\"replicas\":3,"    \
	"\"template\":{\"spec\":{\"backoffLimit\":0,\"completions\":100,\"parallelism\":100,\"template\":{"        \
	"\"spec\":{\"containers\":[{\"name\":\"pytorch\",\"image\":\"pytorch/pytorch:latest\"}]}}}}},{\"name\":"   \
	"\"auxiliary\",\"replicas\":1,\"template\":{\"spec\":{\"completions\":1,\"parallelism\":1,\"template\":{"  \
	"\"spec\":{\"containers\":[{\"name\":\"auxiliary\",\"image\":\"python:3.10\"}]}}}}}]}}"

/* ---- a minimal RFC 6902 "add" ---- */

static cJSON *pointer_parent(cJSON *doc, const char *path, char *last, size_t last_size)
{
	cJSON *node = doc;
	const char *p = path;

	assert_true(p[0] == '/');
	for (;;) {
		const char *slash = strchr(p + 1, '/');
		size_t len = slash ? (size_t)(slash - p - 1) : strlen(p + 1);
		char token[128];
		size_t o = 0;

		assert_true(len < sizeof(token));
		for (size_t i = 0; i < len; i++) {
			char ch = p[1 + i];

			if (ch == '~') {
				ch = p[2 + i] == '1' ? '/' : '~';
				i++;
			}
			token[o++] = ch;
		}
		token[o] = '\0';
		if (!slash) {
			assert_true(o < last_size);
			memcpy(last, token, o + 1);
			return node;
		}
		if (cJSON_IsArray(node))
			node = cJSON_GetArrayItem(node, (int)strtol(token, NULL, 10));
		else
			node = cJSON_GetObjectItemCaseSensitive(node, token);
		assert_non_null(node);
		p = slash;
	}
}

/* The admission model of `js` (jobset_admission.h), as webhook.c decodes it. */
static struct jobset_admission *model_of(const cJSON *js, unsigned flags)
{
	struct jobset_admission *a = jobset_admission_decode(js, flags);

	assert_non_null(a);
	return a;
}

/* The model of an UPDATE's stored object, `a` the new one's. */
static struct jobset_admission *stored_of(const cJSON *js, const struct jobset_admission *a)
{
	struct jobset_admission *old = jobset_admission_decode_stored(js, a);

	assert_non_null(old);
	return old;
}

/* The gate's CREATE on `js`: *skip the JobSet's owner when it mentions a
 * topology (what webhook.c logs as placement-skipped). */
static int gate_create(const cJSON *js, cJSON *patch, cJSON **modified, const char **skip, char **warning,
		       char **cause)
{
	struct jobset_admission *a = model_of(js, JOBSET_ADMISSION_COUNTED);
	int rc = placement_gate_create(a, patch, modified, warning, cause);

	*skip = a->mentions ? a->owner : NULL;
	jobset_admission_free(a);
	return rc;
}

static int gate_update(const cJSON *old_js, const cJSON *js, int from_controller, cJSON *patch,
		       cJSON **modified, char **cause)
{
	struct jobset_admission *a = model_of(js, 0), *old = stored_of(old_js, a);
	int rc = placement_gate_update(old, a, from_controller, patch, modified, cause);

	jobset_admission_free(old);
	jobset_admission_free(a);
	return rc;
}

static void apply_patch(cJSON *doc, const cJSON *patch)
{
	const cJSON *op;

	cJSON_ArrayForEach(op, patch)
	{
		char last[128];
		cJSON *parent, *value;

		const char *kind = cJSON_GetObjectItem(op, "op")->valuestring;

		parent =
			pointer_parent(doc, cJSON_GetObjectItem(op, "path")->valuestring, last, sizeof(last));
		if (strcmp(kind, "remove") == 0 && cJSON_IsObject(parent)) {
			assert_non_null(cJSON_GetObjectItemCaseSensitive(parent, last));
			cJSON_DeleteItemFromObjectCaseSensitive(parent, last);
			continue;
		}
		if (strcmp(kind, "remove") == 0) {
			assert_true(cJSON_IsArray(parent));
			cJSON_DeleteItemFromArray(parent, (int)strtol(last, NULL, 10));
			continue;
		}
		value = cJSON_Duplicate(cJSON_GetObjectItem(op, "value"), 1);
		assert_non_null(value);
		if (strcmp(kind, "replace") == 0 && cJSON_IsObject(parent)) {
			/* A label muster owns (the gang generation on a resume). */
			assert_non_null(cJSON_GetObjectItemCaseSensitive(parent, last));
			assert_true(cJSON_ReplaceItemInObjectCaseSensitive(parent, last, value));
			continue;
		}
		if (strcmp(kind, "replace") == 0) {
			/* Array items: a user's container of the barrier's reserved name. */
			long index = strtol(last, NULL, 10);

			assert_true(cJSON_IsArray(parent));
			assert_true(index >= 0 && index < cJSON_GetArraySize(parent));
			assert_true(cJSON_ReplaceItemInArray(parent, (int)index, value));
			continue;
		}
		assert_string_equal(kind, "add");
		if (cJSON_IsArray(parent)) {
			if (strcmp(last, "-") == 0) {
				cJSON_AddItemToArray(parent, value);
			} else {
				long index = strtol(last, NULL, 10);

				assert_true(index >= 0 && index <= cJSON_GetArraySize(parent));
				/* Detach the tail, append, re-attach: Debian's cJSON
				 * 1.7.15 refuses cJSON_InsertItemInArray() here. */
				cJSON *tail[64];
				int n = 0;

				while (cJSON_GetArraySize(parent) > index) {
					assert_true(n < 64);
					tail[n++] = cJSON_DetachItemFromArray(parent, (int)index);
				}
				cJSON_AddItemToArray(parent, value);
				for (int i = 0; i < n; i++)
					cJSON_AddItemToArray(parent, tail[i]);
			}
		} else {
			assert_true(cJSON_IsObject(parent));
			/* "add" on an existing member replaces it; the mutator never does that. */
			assert_null(cJSON_GetObjectItemCaseSensitive(parent, last));
			cJSON_AddItemToObject(parent, last, value);
		}
	}
}

/* Decodes the settings, validates, mutates and applies: the admitted object. */
static cJSON *admit(const char *json, const struct jobset_mutate_options *options, size_t *ops)
{
	cJSON *jobset = cJSON_Parse(json), *patch = NULL;
	struct jobset_admission *a;
	char *cause = NULL;

	assert_non_null(jobset);
	a = model_of(jobset, JOBSET_ADMISSION_COUNTED);
	assert_int_equal(jobset_validate_create(a, &cause), 0);
	assert_int_equal(jobset_mutate(a, jobset, options, TOKEN, &patch, &cause), 0);
	assert_null(cause);
	jobset_admission_free(a);
	if (ops)
		*ops = (size_t)cJSON_GetArraySize(patch);
	apply_patch(jobset, patch);
	cJSON_Delete(patch);
	return jobset;
}

static const cJSON *template_of(const cJSON *jobset, int job)
{
	return jobset_pod_template(cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(jobset, "spec"), "replicatedJobs"), job));
}

static int args_contain(const cJSON *container, const char *a, const char *b)
{
	const cJSON *args = cJSON_GetObjectItem(container, "args");

	for (int i = 0; i + 1 < cJSON_GetArraySize(args); i++)
		if (strcmp(cJSON_GetArrayItem(args, i)->valuestring, a) == 0 &&
		    (!b || strcmp(cJSON_GetArrayItem(args, i + 1)->valuestring, b) == 0))
			return 1;
	return 0;
}

/* The downward-API field path of the container's env variable `name`. */
static const char *field_path(const cJSON *container, const char *name)
{
	const cJSON *var = jobset_find_named(kjson_member(container, "env"), name, NULL);
	const cJSON *path =
		kjson_member(kjson_member(kjson_member(var, "valueFrom"), "fieldRef"), "fieldPath");

	assert_non_null(path);
	return path->valuestring;
}

static void check_injected(const cJSON *jobset, int job, size_t barrier_index, const char *timeout)
{
	const cJSON *spec = kjson_member(template_of(jobset, job), "spec");
	const cJSON *init = kjson_member(spec, "initContainers"), *barrier_c, *volume, *mount;
	size_t index = 99;

	barrier_c = jobset_find_named(init, MUSTER_BARRIER_CONTAINER, &index);
	assert_non_null(barrier_c);
	assert_int_equal(index, barrier_index);
	assert_string_equal(kjson_member(barrier_c, "image")->valuestring, "muster-barrier:test");
	assert_true(args_contain(barrier_c, "--timeout", timeout));
	assert_true(args_contain(barrier_c, "--attempt", "$(MUSTER_RESTART_ATTEMPT)"));
	/* Its identity: the JobSet's uid and the gang generation, from the pod's labels. */
	assert_true(args_contain(barrier_c, "--jobset-uid", "$(MUSTER_JOBSET_UID)"));
	assert_true(args_contain(barrier_c, "--generation", "$(MUSTER_GANG_GENERATION)"));
	assert_string_equal(field_path(barrier_c, "MUSTER_JOBSET_UID"),
			    "metadata.labels['jobset.sigs.k8s.io/jobset-uid']");
	assert_string_equal(field_path(barrier_c, "MUSTER_GANG_GENERATION"),
			    "metadata.labels['muster.dev/gang-generation']");
	assert_true(args_contain(barrier_c, "--listen", "$(MUSTER_POD_IP):9443"));
	assert_true(args_contain(barrier_c, "--dir", MUSTER_BARRIER_MOUNT));
	assert_non_null(jobset_find_named(kjson_member(barrier_c, "env"), "MUSTER_BARRIER_TOKEN", NULL));
	assert_string_equal(
		kjson_member(kjson_member(kjson_member(jobset_find_named(kjson_member(barrier_c, "env"),
									 "MUSTER_RESTART_ATTEMPT", NULL),
						       "valueFrom"),
					  "fieldRef"),
			     "fieldPath")
			->valuestring,
		"metadata.labels['" JOBSET_LABEL_RESTART_ATTEMPT "']");
	mount = cJSON_GetArrayItem(kjson_member(barrier_c, "volumeMounts"), 0);
	assert_string_equal(kjson_member(mount, "mountPath")->valuestring, MUSTER_BARRIER_MOUNT);
	assert_true(cJSON_IsTrue(kjson_member(mount, "readOnly")));
	assert_null(kjson_member(mount, "subPath"));
	assert_true(cJSON_IsTrue(kjson_member(kjson_member(barrier_c, "securityContext"), "runAsNonRoot")));
	assert_string_equal(
		kjson_member(kjson_member(kjson_member(barrier_c, "resources"), "requests"), "cpu")
			->valuestring,
		"10m");
	volume = jobset_find_named(kjson_member(spec, "volumes"), MUSTER_BARRIER_VOLUME, NULL);
	assert_non_null(volume);
	assert_string_equal(kjson_member(kjson_member(volume, "configMap"), "name")->valuestring,
			    "my-jobset-group-scheduling");
	assert_true(cJSON_IsTrue(kjson_member(kjson_member(volume, "configMap"), "optional")));
	assert_string_equal(
		kjson_member(kjson_member(kjson_member(template_of(jobset, job), "metadata"), "labels"),
			     MUSTER_LABEL_GROUP_SCHEDULING)
			->valuestring,
		"true");
}

/* ---- admission ---- */

#define REVIEW_HEAD                                                                                            \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"abc-1\"," \
	"\"kind\":{\"group\":\"jobset.x-k8s.io\",\"version\":\"v1alpha2\",\"kind\":\"JobSet\"},"

static void expect_bad_review(const char *body, const char *needle)
{
	struct admission_request request;
	char *cause = NULL;

	assert_int_equal(admission_decode(body, strlen(body), &request, &cause), -1);
	assert_non_null(cause);
	if (!strstr(cause, needle))
		fail_msg("cause \"%s\" does not mention \"%s\"", cause, needle);
	assert_null(request.root);
	free(cause);
}

/* A body whose text is refused before parsing (ADMISSION_BAD_TEXT): the
 * uid is kept to answer by, and the cause says `needle` in printable ASCII. */
static void expect_bad_text(const char *body, size_t len, const char *needle)
{
	struct admission_request request;
	char *cause = NULL;

	assert_int_equal(admission_decode(body, len, &request, &cause), ADMISSION_BAD_TEXT);
	assert_non_null(cause);
	if (!strstr(cause, needle))
		fail_msg("cause \"%s\" does not mention \"%s\"", cause, needle);
	for (const char *c = cause; *c; c++)
		assert_true(*c >= 0x20 && *c < 0x7f);
	assert_string_equal(request.uid, "abc-1");
	assert_null(request.root);
	free(cause);
}

static void admission_envelope(void **state)
{
	const char *good = REVIEW_HEAD "\"operation\":\"CREATE\",\"namespace\":\"ns\",\"name\":\"js\","
				       "\"dryRun\":true,\"object\":{\"a\":1}}}";
	struct admission_request request;
	char *cause = NULL;

	(void)state;
	assert_int_equal(admission_decode(good, strlen(good), &request, &cause), 0);
	assert_string_equal(request.uid, "abc-1");
	assert_int_equal(request.operation, ADMISSION_CREATE);
	assert_true(admission_is_jobset(&request));
	assert_string_equal(request.namespace, "ns");
	assert_string_equal(request.name, "js");
	assert_true(request.dry_run);
	assert_non_null(request.object);
	assert_null(request.old_object);
	admission_request_free(&request);
	admission_request_free(&request); /* twice: harmless */

	expect_bad_review("", "empty body");
	expect_bad_review("{\"apiVersion\":", "not valid JSON");
	{
		struct admission_request request_half;

		/* Truncated: the first half of a good review. */
		assert_int_equal(admission_decode(good, strlen(good) / 2, &request_half, &cause), -1);
		assert_non_null(strstr(cause, "malformed or truncated"));
		free(cause);
		cause = NULL;
	}
	expect_bad_review("[1,2]", "not an AdmissionReview");
	expect_bad_review(
		"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
		"admissionReviewVersions [v1]");
	expect_bad_review("{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", "not an AdmissionReview");
	expect_bad_review("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
			  "no request");
	expect_bad_review("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			  "\"operation\":\"CREATE\"}}",
			  "uid is missing");
	expect_bad_review(REVIEW_HEAD "\"operation\":\"PATCH\"}}", "is not CREATE");
	expect_bad_review(REVIEW_HEAD "\"operation\":\"CREATE\",\"object\":[1]}}", "object is not an object");
	expect_bad_review(REVIEW_HEAD "\"operation\":\"CREATE\",\"dryRun\":\"yes\"}}", "dryRun");
	expect_bad_review("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			  "\"uid\":\"a b\",\"operation\":\"CREATE\"}}",
			  "printable");
	/* Requests no apiserver sends (issue 16): each refused with its reason. */
	expect_bad_review(REVIEW_HEAD "\"operation\":\"CREATE\",\"name\":\"js\"}}",
			  "request.object is missing: an apiserver sends it with every CREATE");
	expect_bad_review(REVIEW_HEAD "\"operation\":\"UPDATE\",\"object\":{}}}",
			  "request.oldObject is missing");
	/* é: UTF-8, but not a DNS label. */
	expect_bad_review(REVIEW_HEAD "\"operation\":\"CREATE\",\"name\":\"j\xc3\xa9s\",\"object\":{}}}",
			  "not printable ASCII");
	/* Issue 34: text that is not UTF-8, or a NUL, raw or escaped, is not
	 * parsed; the cause says where, by offset and hex value. */
	{
		static const char name[] =
			REVIEW_HEAD "\"operation\":\"CREATE\",\"name\":\"js\","
				    "\"object\":{\"metadata\":{\"name\":\"\xff\xfe\xc0\x80\"}}}}";
		char words[80];

		snprintf(words, sizeof(words),
			 "the AdmissionReview is not valid UTF-8 (byte 0xFF at offset %zu)",
			 (size_t)(strchr(name, '\xff') - name));
		expect_bad_text(name, sizeof(name) - 1, words);
	}
	{
		static const char *const bad[] = {
			REVIEW_HEAD "\"operation\":\"CREATE\",\"name\":\"j\xc3\x28s\",\"object\":{}}}",
			REVIEW_HEAD "\"operation\":\"CREATE\",\"object\":{\"a\":\"\xed\xa0\x80\"}}}",
			REVIEW_HEAD "\"operation\":\"CREATE\",\"object\":{\"a\":\"abc\\u0000def\"}}}",
		};

		expect_bad_text(bad[0], strlen(bad[0]), "byte 0xC3 at offset");
		expect_bad_text(bad[1], strlen(bad[1]), "byte 0xED at offset"); /* a surrogate */
		expect_bad_text(bad[2], strlen(bad[2]), "NUL character (\\u0000)");
	}
	{
		static const char nul[] =
			REVIEW_HEAD "\"operation\":\"CREATE\",\"object\":{\"a\":\"x\0y\"}}}";

		expect_bad_text(nul, sizeof(nul) - 1, "holds a NUL byte (at offset");
	}
	{
		/* An escaped backslash before u0000 is text, not a NUL. */
		const char *text = REVIEW_HEAD "\"operation\":\"CREATE\",\"object\":{\"a\":\"x\\\\u0000\"}}}";
		struct admission_request fine;

		assert_int_equal(admission_decode(text, strlen(text), &fine, &cause), 0);
		admission_request_free(&fine);
	}
}

/* The scan counts each JSON value once (keys are not values) and finds
 * request.uid; a review of more than ADMISSION_VALUES_MAX values is not
 * parsed, and says how large it is, with its uid to answer it by. */
static void admission_too_large(void **state)
{
	const char *small = REVIEW_HEAD
		"\"operation\":\"CREATE\",\"object\":{\"a\":[1,-2.5e3,true,null,\"x\\\"y\",{}]}}}";
	struct admission_scan scan;
	struct admission_request request;
	char *cause = NULL, *big, *at;
	size_t n = ADMISSION_VALUES_MAX + 1, size;

	(void)state;
	admission_scan(small, strlen(small), &scan);
	/* root{apiVersion, kind}, request, uid, kind{group, version, kind},
	 * operation, object, a[6 values] */
	assert_int_equal(scan.values, 3 + 1 + 1 + 4 + 1 + 1 + 1 + 6);
	assert_string_equal(scan.uid, "abc-1");
	/* A uid elsewhere (deeper, or not under request) is not taken. */
	admission_scan("{\"object\":{\"uid\":\"no\"},\"request\":{\"x\":{\"uid\":\"no\"},\"uid\":\"yes\"}}",
		       64, &scan);
	assert_string_equal(scan.uid, "yes");
	/* A uid no apiserver sends (a control character, a space, an escape) is
	 * not taken: it would go to the log and the answer as it is. */
	{
		static const char *const bad[] = { "{\"request\":{\"uid\":\"a\nb\"}}",
						   "{\"request\":{\"uid\":\"a b\"}}",
						   "{\"request\":{\"uid\":\"a\\\"b\"}}" },
					 *good = "{\"request\":{\"uid\":\"a-b\"}}";

		for (size_t i = 0; i < 3; i++) {
			admission_scan(bad[i], strlen(bad[i]), &scan);
			assert_string_equal(scan.uid, "");
		}
		admission_scan(good, strlen(good), &scan);
		assert_string_equal(scan.uid, "a-b");
	}

	size = strlen(REVIEW_HEAD) + 64 + 3 * n;
	big = malloc(size);
	assert_non_null(big);
	at = big + snprintf(big, size, "%s\"operation\":\"CREATE\",\"object\":{\"args\":[", REVIEW_HEAD);
	for (size_t i = 0; i < n; i++)
		at += snprintf(at, size - (size_t)(at - big), "%s\"\"", i ? "," : "");
	snprintf(at, size - (size_t)(at - big), "]}}}");
	assert_int_equal(admission_decode(big, strlen(big), &request, &cause), ADMISSION_TOO_LARGE);
	assert_string_equal(request.uid, "abc-1");
	assert_null(request.root);
	/* the n strings, the array and the 12 values of the envelope */
	if (!strstr(cause, "too large for muster-webhook: about 262157 JSON values, limit 262144"))
		fail_msg("cause \"%s\"", cause);
	free(cause);
	free(big);
}

static void admission_encoding(void **state)
{
	const char *patch = "[{\"op\":\"add\",\"path\":\"/a\",\"value\":1}]";
	size_t len = 0;
	char *text;
	cJSON *doc, *response;

	(void)state;
	text = admission_response("abc-1", 1, 0, NULL, patch, strlen(patch), NULL, &len);
	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	doc = cJSON_Parse(text);
	response = cJSON_GetObjectItem(doc, "response");
	assert_string_equal(cJSON_GetObjectItem(doc, "apiVersion")->valuestring, "admission.k8s.io/v1");
	assert_string_equal(cJSON_GetObjectItem(response, "uid")->valuestring, "abc-1");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(response, "allowed")));
	assert_string_equal(cJSON_GetObjectItem(response, "patchType")->valuestring, "JSONPatch");
	assert_string_equal(cJSON_GetObjectItem(response, "patch")->valuestring,
			    "W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d");
	assert_null(cJSON_GetObjectItem(response, "warnings"));
	cJSON_Delete(doc);
	free(text);

	/* A warning for the user of an allowed request: response.warnings. */
	text = admission_response("abc-3", 1, 0, NULL, NULL, 0, "not \"placed\"", &len);
	doc = cJSON_Parse(text);
	response = cJSON_GetObjectItem(doc, "response");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(response, "warnings")), 1);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(response, "warnings"), 0)->valuestring,
			    "not \"placed\"");
	cJSON_Delete(doc);
	free(text);

	text = admission_response("abc-2", 0, 422, "no \"way\"", NULL, 0, NULL, &len);
	doc = cJSON_Parse(text);
	response = cJSON_GetObjectItem(doc, "response");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(response, "allowed")));
	assert_null(cJSON_GetObjectItem(response, "patch"));
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(response, "status"), "code")->valueint, 422);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetObjectItem(response, "status"), "message")->valuestring,
		"no \"way\"");
	cJSON_Delete(doc);
	free(text);
}

/* ---- mutation ---- */

static void mutate_story2_targets_only_workers(void **state)
{
	size_t ops = 0;
	cJSON *jobset;
	const cJSON *aux;

	(void)state;
	jobset = admit(STORY2, &barrier, &ops);
	check_injected(jobset, 0, 0, "300");
	aux = kjson_member(template_of(jobset, 1), "spec");
	assert_null(kjson_member(aux, "initContainers"));
	assert_null(kjson_member(aux, "volumes"));
	assert_null(kjson_member(template_of(jobset, 1), "metadata"));
	assert_string_equal(jobset_annotation(jobset, MUSTER_ANNOTATION_BARRIER_TOKEN), TOKEN);
	assert_int_equal(ops, 4); /* annotations, metadata, initContainers, volumes */
	cJSON_Delete(jobset);
}

static void mutate_is_idempotent(void **state)
{
	cJSON *once = admit(STORY2, &barrier, NULL), *twice;
	char *text = cJSON_PrintUnformatted(once), *again;
	size_t ops = 99;

	(void)state;
	twice = admit(text, &barrier, &ops);
	assert_int_equal(ops, 0);
	again = cJSON_PrintUnformatted(twice);
	assert_string_equal(text, again);
	free(text);
	free(again);
	cJSON_Delete(once);
	cJSON_Delete(twice);
}

/* A user's init container of the reserved name in a held job would stand in
 * for the barrier; the mutator replaces it with the real one, in place, and a
 * second admission of the result changes nothing. */
static void replaces_reserved(const char *json)
{
	cJSON *jobset = admit(json, &barrier, NULL), *again;
	const cJSON *init = kjson_member(kjson_member(template_of(jobset, 0), "spec"), "initContainers");
	const cJSON *replaced = cJSON_GetArrayItem(init, 0);
	char *text = cJSON_PrintUnformatted(jobset), *text_again;
	size_t ops = 99;

	/* Moved to the barrier's place, first, before the user's setup. */
	assert_int_equal(cJSON_GetArraySize(init), 2);
	assert_string_equal(kjson_member(cJSON_GetArrayItem(init, 1), "name")->valuestring, "setup");
	assert_string_equal(kjson_member(replaced, "name")->valuestring, MUSTER_BARRIER_CONTAINER);
	assert_string_equal(kjson_member(replaced, "image")->valuestring, "muster-barrier:test");
	assert_null(kjson_member(replaced, "command"));
	check_injected(jobset, 0, 0, "60");
	again = admit(text, &barrier, &ops);
	assert_int_equal(ops, 0);
	text_again = cJSON_PrintUnformatted(again);
	assert_string_equal(text, text_again);
	free(text);
	free(text_again);
	cJSON_Delete(jobset);
	cJSON_Delete(again);
}

static void mutate_replaces_a_user_container_of_the_reserved_name(void **state)
{
#define RESERVED_JOBSET(INIT)                                                                                          \
	"{\"metadata\":{\"name\":\"my-jobset\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":60},"     \
	"\"replicatedJobs\":[{\"name\":\"w\",\"template\":{\"spec\":{\"template\":{\"spec\":{\"initContainers\":" INIT \
	",\"containers\":[{\"name\":\"c\"}]}}}}}]}}"
#define USER_CONTAINER "{\"name\":\"group-scheduling-init\",\"image\":\"busybox\",\"command\":[\"true\"]}"
	(void)state;
	/* After the user's setup: removed there, added first. */
	replaces_reserved(RESERVED_JOBSET("[{\"name\":\"setup\"}," USER_CONTAINER "]"));
	/* Already first: replaced where it is. */
	replaces_reserved(RESERVED_JOBSET("[" USER_CONTAINER ",{\"name\":\"setup\"}]"));
#undef RESERVED_JOBSET
#undef USER_CONTAINER
}

static void mutate_story1_every_job_and_default_timeout(void **state)
{
	const char *story1 =
		"{\"metadata\":{\"name\":\"my-jobset\",\"namespace\":\"default\",\"annotations\":{\"x\":\"y\"}},"
		"\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[{\"name\":\"workers\",\"replicas\":3,"
		"\"template\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"app\":\"a\"}},\"spec\":{"
		"\"containers\":[{\"name\":\"c\"}],\"volumes\":[{\"name\":\"data\"}]}}}}},{\"name\":\"ps\","
		"\"template\":{\"spec\":{\"template\":{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}}]}}";
	cJSON *jobset = admit(story1, &barrier, NULL);
	const cJSON *volumes;

	(void)state;
	check_injected(jobset, 0, 0, "300"); /* GROUP_CONFIG_TIMEOUT_DEFAULT */
	check_injected(jobset, 1, 0, "300");
	assert_string_equal(jobset_annotation(jobset, "x"), "y");
	assert_string_equal(jobset_annotation(jobset, MUSTER_ANNOTATION_BARRIER_TOKEN), TOKEN);
	volumes = kjson_member(kjson_member(template_of(jobset, 0), "spec"), "volumes");
	assert_int_equal(cJSON_GetArraySize(volumes), 2);
	assert_string_equal(kjson_member(cJSON_GetArrayItem(volumes, 0), "name")->valuestring, "data");
	assert_string_equal(
		kjson_member(kjson_member(kjson_member(template_of(jobset, 0), "metadata"), "labels"), "app")
			->valuestring,
		"a");
	cJSON_Delete(jobset);
}

static void mutate_places_barrier_after_sidecars(void **state)
{
	const char *json =
		"{\"metadata\":{\"name\":\"my-jobset\",\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"60\","
		"\"muster.dev/barrier-token\":\"user-token-0123456789\"}},\"spec\":{\"replicatedJobs\":[{\"name\":\"w\","
		"\"template\":{\"spec\":{\"template\":{\"spec\":{\"initContainers\":[{\"name\":\"mesh\","
		"\"restartPolicy\":\"Always\"},{\"name\":\"logs\",\"restartPolicy\":\"Always\"},{\"name\":\"setup\"}],"
		"\"containers\":[{\"name\":\"c\"}]}}}}}]}}";
	cJSON *jobset = admit(json, &barrier, NULL);
	const cJSON *init = kjson_member(kjson_member(template_of(jobset, 0), "spec"), "initContainers"),
		    *env;

	(void)state;
	check_injected(jobset, 0, 2, "60");
	assert_string_equal(kjson_member(cJSON_GetArrayItem(init, 3), "name")->valuestring, "setup");
	/* The user's token is kept and used. */
	assert_string_equal(jobset_annotation(jobset, MUSTER_ANNOTATION_BARRIER_TOKEN),
			    "user-token-0123456789");
	env = jobset_find_named(kjson_member(cJSON_GetArrayItem(init, 2), "env"), "MUSTER_BARRIER_TOKEN",
				NULL);
	assert_string_equal(kjson_member(env, "value")->valuestring, "user-token-0123456789");
	cJSON_Delete(jobset);
}

static void mutate_without_push(void **state)
{
	struct jobset_mutate_options options = barrier;
	cJSON *jobset;
	const cJSON *c;

	(void)state;
	options.barrier_port = 0;
	options.memory_limit = "";
	jobset = admit(STORY2, &options, NULL);
	c = cJSON_GetArrayItem(kjson_member(kjson_member(template_of(jobset, 0), "spec"), "initContainers"),
			       0);
	assert_false(args_contain(c, "--listen", NULL));
	assert_null(jobset_find_named(kjson_member(c, "env"), "MUSTER_BARRIER_TOKEN", NULL));
	assert_null(kjson_member(kjson_member(c, "resources"), "limits"));
	cJSON_Delete(jobset);
}

static void mutate_without_config_is_empty(void **state)
{
	const char *json = "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"replicatedJobs\":[{\"name\":\"w\","
			   "\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[]}}}}}]}}";
	size_t ops = 99;
	cJSON *jobset = admit(json, &barrier, &ops);

	(void)state;
	assert_int_equal(ops, 0);
	cJSON_Delete(jobset);
}

/* ---- resume: a new gang generation ---- */

/* The generation label of replicated job `job`'s pod template, or NULL. */
static const char *generation_of(const cJSON *jobset, int job)
{
	const cJSON *value =
		kjson_member(kjson_member(kjson_member(template_of(jobset, job), "metadata"), "labels"),
			     "muster.dev/gang-generation");

	return cJSON_IsString(value) ? value->valuestring : NULL;
}

/* Sets spec.suspend of an admitted JobSet (a copy). */
static cJSON *with_suspend(const cJSON *jobset, int suspend)
{
	cJSON *copy = cJSON_Duplicate(jobset, 1), *spec = cJSON_GetObjectItem(copy, "spec");

	cJSON_DeleteItemFromObject(spec, "suspend");
	if (suspend >= 0)
		cJSON_AddBoolToObject(spec, "suspend", suspend);
	return copy;
}

/* The UPDATE admitted: the patch applied to new_jobset (in place). Returns
 * the number of operations. */
static size_t admit_update(const cJSON *old_jobset, cJSON *new_jobset)
{
	struct jobset_admission *a = model_of(new_jobset, 0), *old = stored_of(old_jobset, a);
	cJSON *patch = NULL;
	char *cause = NULL;
	size_t ops;

	assert_true(a->config_ok);
	assert_int_equal(jobset_mutate_update(old, a, new_jobset, &patch, &cause), 0);
	assert_null(cause);
	jobset_admission_free(old);
	jobset_admission_free(a);
	ops = (size_t)cJSON_GetArraySize(patch);
	apply_patch(new_jobset, patch);
	cJSON_Delete(patch);
	return ops;
}

/* Suspend and resume (Kueue's preemption): each resume raises the gang
 * generation of the targeted templates, so the release of the generation
 * before (still in the ConfigMap) does not let the new pods through. Other
 * updates change nothing. */
static void resume_raises_the_generation(void **state)
{
	cJSON *created, *suspended, *resumed, *again, *suspended_again, *resumed_again;

	(void)state;
	created = admit(STORY2, &barrier, NULL);
	assert_null(generation_of(created, 0));
	/* Not a resume: created running, then suspended; an update while suspended. */
	suspended = with_suspend(created, 1);
	assert_int_equal(admit_update(created, suspended), 0);
	again = with_suspend(suspended, 1);
	assert_int_equal(admit_update(suspended, again), 0);
	assert_null(generation_of(again, 0));
	/* The resume (suspend removed or false). */
	resumed = with_suspend(suspended, -1);
	assert_int_equal(admit_update(suspended, resumed), 2); /* the label and the annotation of record */
	assert_string_equal(generation_of(resumed, 0), "1");
	assert_string_equal(jobset_annotation(resumed, "muster.dev/gang-generation"), "1");
	assert_null(generation_of(resumed, 1)); /* auxiliary: not targeted */
	/* A second suspend and resume: 2. */
	suspended_again = with_suspend(resumed, 1);
	assert_int_equal(admit_update(resumed, suspended_again), 0);
	resumed_again = with_suspend(suspended_again, 0);
	assert_int_equal(admit_update(suspended_again, resumed_again), 2);
	assert_string_equal(generation_of(resumed_again, 0), "2");
	assert_string_equal(jobset_annotation(resumed_again, "muster.dev/gang-generation"), "2");
	cJSON_Delete(created);
	cJSON_Delete(suspended);
	cJSON_Delete(again);
	cJSON_Delete(resumed);
	cJSON_Delete(suspended_again);
	cJSON_Delete(resumed_again);
}

/* Kueue, evicting a workload, suspends the JobSet and restores the pod
 * templates it admitted with: the generation labels are gone. The next
 * resume must still go above every generation released before, or the
 * release of that generation (in the ConfigMap) would let the new pods
 * through: the JobSet's annotation keeps the count. An update that drops
 * the annotation gets it back. */
static void generation_never_goes_back(void **state)
{
	cJSON *created, *resumed, *evicted, *readmitted, *dropped, *labels;

	(void)state;
	created = admit(STORY2, &barrier, NULL);
	cJSON *suspended = with_suspend(created, 1);
	resumed = with_suspend(suspended, 0);
	admit_update(suspended, resumed);
	assert_string_equal(generation_of(resumed, 0), "1");
	/* Evicted: suspended, templates restored without the label. */
	evicted = with_suspend(resumed, 1);
	labels = cJSON_GetObjectItem(cJSON_GetObjectItem((cJSON *)template_of(evicted, 0), "metadata"),
				     "labels");
	cJSON_DeleteItemFromObject(labels, "muster.dev/gang-generation");
	assert_int_equal(admit_update(resumed, evicted), 0);
	assert_null(generation_of(evicted, 0));
	/* Re-admitted: generation 2, not 1 again. */
	readmitted = with_suspend(evicted, 0);
	assert_int_equal(admit_update(evicted, readmitted), 2);
	assert_string_equal(generation_of(readmitted, 0), "2");
	assert_string_equal(jobset_annotation(readmitted, "muster.dev/gang-generation"), "2");
	/* `kubectl replace` without the annotation: restored. */
	dropped = cJSON_Duplicate(readmitted, 1);
	cJSON_DeleteItemFromObject(
		cJSON_GetObjectItem(cJSON_GetObjectItem(dropped, "metadata"), "annotations"),
		"muster.dev/gang-generation");
	assert_int_equal(admit_update(readmitted, dropped), 1);
	assert_string_equal(jobset_annotation(dropped, "muster.dev/gang-generation"), "2");
	cJSON_Delete(created);
	cJSON_Delete(suspended);
	cJSON_Delete(resumed);
	cJSON_Delete(evicted);
	cJSON_Delete(readmitted);
	cJSON_Delete(dropped);
}

static void resume_refuses_a_generation_it_cannot_read(void **state)
{
	struct jobset_admission *old, *a;
	cJSON *created, *suspended, *resumed, *patch = NULL, *labels;
	char *cause = NULL;

	(void)state;
	created = admit(STORY2, &barrier, NULL);
	suspended = with_suspend(created, 1);
	labels = cJSON_GetObjectItem(cJSON_GetObjectItem((cJSON *)template_of(suspended, 0), "metadata"),
				     "labels");
	cJSON_AddStringToObject(labels, "muster.dev/gang-generation", "two");
	resumed = with_suspend(suspended, 0);
	a = model_of(resumed, 0);
	old = stored_of(suspended, a);
	assert_true(a->config_ok);
	assert_int_equal(jobset_mutate_update(old, a, resumed, &patch, &cause), -1);
	jobset_admission_free(old);
	jobset_admission_free(a);
	assert_null(patch);
	assert_non_null(strstr(cause, "muster.dev/gang-generation is muster's and must be a number"));
	free(cause);
	cJSON_Delete(created);
	cJSON_Delete(suspended);
	cJSON_Delete(resumed);
}

/* ---- validation ---- */

/* Builds a JobSet from pieces and expects a denial mentioning needle (or
 * an admission when needle is NULL). */
static void expect_create(const char *json, const char *needle)
{
	cJSON *jobset = cJSON_Parse(json);
	struct jobset_admission *a;
	char *message = NULL;
	int denied;

	assert_non_null(jobset);
	a = model_of(jobset, JOBSET_ADMISSION_COUNTED);
	denied = jobset_validate_create(a, &message);
	jobset_admission_free(a);
	if (!needle) {
		if (denied)
			fail_msg("denied: %s", message);
	} else {
		assert_true(denied);
		assert_non_null(message);
		if (!strstr(message, needle))
			fail_msg("message \"%s\" does not mention \"%s\"", message, needle);
	}
	free(message);
	cJSON_Delete(jobset);
}

#define JOB(name, init, containers)                                                                          \
	"{\"name\":\"" name "\",\"template\":{\"spec\":{\"template\":{\"spec\":{\"initContainers\":[" init   \
	"],"                                                                                                 \
	"\"containers\":[" containers "]}}}}}"
#define NAMED(n) "{\"name\":\"" n "\"}"

/* What the controller could not count is refused at admission, in the
 * JobSet model's words, instead of a gang that is never released. */
static void validate_create_refuses_what_the_controller_cannot_count(void **state)
{
	size_t size = 256 * 1024, used;
	char *json = malloc(size);

	(void)state;
	assert_non_null(json);
	used = (size_t)snprintf(json, size,
				"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{},"
				"\"replicatedJobs\":[");
	for (int i = 0; i <= JOBSET_MODEL_RJOBS_MAX; i++)
		used += (size_t)snprintf(json + used, size - used, "%s" JOB("j%d", "", NAMED("c")),
					 i ? "," : "", i);
	snprintf(json + used, size - used, "]}}");
	expect_create(json, "more than 128 replicatedJobs");
	/* Without group scheduling muster has nothing to count: admitted. */
	memcpy(strstr(json, "groupSchedulingConfig"), "xroupSchedulingConfig", 21);
	expect_create(json, NULL);
	free(json);
	/* A count that is no integer, which the controller would not decode. */
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":["
		"{\"name\":\"w\",\"replicas\":1.5,\"template\":{\"spec\":{\"template\":{\"spec\":{"
		"\"containers\":[{\"name\":\"c\"}]}}}}}]}}",
		"spec.replicatedJobs[0].replicas is not an integer");
}

static void validate_create_rules(void **state)
{
	char long_name[300];

	(void)state;
	expect_create(STORY2, NULL);
	/* InOrder with a group over two replicated jobs; over one it is fine. */
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"},"
		"\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":60},\"replicatedJobs\":[" JOB(
			"a", "", NAMED("c")) "," JOB("b", "", NAMED("c")) "]}}",
		"startupPolicy InOrder cannot be combined with a group that spans 2 replicated jobs (a, b)");
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"},"
		"\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[\"b\"]},\"replicatedJobs\":[" JOB(
			"a", "", NAMED("c")) "," JOB("b", "", NAMED("c")) "]}}",
		NULL);
	/* Reserved names. */
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[" JOB(
			"a", "", NAMED("group-scheduling-init")) "]}}",
		"the container name \"group-scheduling-init\" is reserved");
	expect_create("{\"metadata\":{\"name\":\"js\"},\"spec\":{\"replicatedJobs\":[" JOB(
			      "a", "", NAMED("group-scheduling-init")) "]}}",
		      "is reserved");
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":["
		"\"b\"]},\"replicatedJobs\":[" JOB("a", NAMED("group-scheduling-init"),
						   NAMED("c")) "," JOB("b", "", NAMED("c")) "]}}",
		"this replicated job is not subject to");
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[{"
		"\"name\":\"a\",\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[],\"volumes\":[{"
		"\"name\":\"group-scheduling\",\"emptyDir\":{}}]}}}}}]}}",
		"the volume name \"group-scheduling\" is reserved");
	/* Targets that name nothing. */
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":["
		"\"a\",\"wrkers\"]},\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "," JOB("workers", "",
											   NAMED("c")) "]}}",
		"targetReplicatedJobs[1] \"wrkers\" names no replicated job of this JobSet (its replicated jobs: "
		"a, workers)");
	/* The documented timeout range. */
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":0},"
		"\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		"must be between 1 and 86400");
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":"
		"86401},\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		"must be between 1 and 86400");
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":"
		"86400},\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		NULL);
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":"
		"1.5},\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		"not a whole number");
	/* Names. */
	memset(long_name, 'a', 237);
	long_name[237] = '\0';
	{
		char json[1024];

		snprintf(
			json, sizeof(json),
			"{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[" JOB(
				"a", "", NAMED("c")) "]}}",
			long_name);
		expect_create(json, "use a name of at most 236 characters");
		long_name[236] = '\0';
		snprintf(
			json, sizeof(json),
			"{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[" JOB(
				"a", "", NAMED("c")) "]}}",
			long_name);
		expect_create(json, NULL);
	}
	expect_create("{\"metadata\":{\"generateName\":\"js-\"},\"spec\":{\"groupSchedulingConfig\":{},"
		      "\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		      "give the JobSet a name");
	/* Tokens and the annotation form. */
	expect_create(
		"{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/barrier-token\":\"short\"}},"
		"\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		"printable ASCII");
	expect_create(
		"{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"60\","
		"\"muster.dev/group-scheduling-targets\":\"a, nope\"}},\"spec\":{\"replicatedJobs\":[" JOB(
			"a", "", NAMED("c")) "]}}",
		"\"nope\" names no replicated job");
	expect_create(
		"{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"60\"}},"
		"\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":90},\"replicatedJobs\":[" JOB(
			"a", "", NAMED("c")) "]}}",
		"disagree");
	expect_create(
		"{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"5m\"}},"
		"\"spec\":{\"replicatedJobs\":[" JOB("a", "", NAMED("c")) "]}}",
		"not a whole number of seconds");
	expect_create(
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{},\"replicatedJobs\":[{"
		"\"name\":\"a\",\"template\":{\"spec\":{}}}]}}",
		"has no pod template");
	expect_create("{\"metadata\":{\"name\":\"js\"},\"spec\":{}}", "spec.replicatedJobs is missing");
}

static void expect_update(const char *old_json, const char *new_json, const char *needle)
{
	cJSON *old_jobset = cJSON_Parse(old_json), *jobset = cJSON_Parse(new_json);
	struct jobset_admission *old, *a;
	char *message = NULL;
	int denied;

	assert_non_null(old_jobset);
	assert_non_null(jobset);
	a = model_of(jobset, 0);
	old = stored_of(old_jobset, a);
	denied = jobset_validate_update(old, a, &message);
	jobset_admission_free(old);
	jobset_admission_free(a);
	if (!needle) {
		if (denied)
			fail_msg("denied: %s", message);
	} else {
		assert_true(denied);
		if (!strstr(message, needle))
			fail_msg("message \"%s\" does not mention \"%s\"", message, needle);
	}
	free(message);
	cJSON_Delete(old_jobset);
	cJSON_Delete(jobset);
}

static void validate_update_rules(void **state)
{
	const char *before =
		"{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/barrier-token\":"
		"\"token-0123456789abcdef\"}},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":"
		"300,\"targetReplicatedJobs\":[\"a\",\"b\"]}}}";

	(void)state;
	expect_update(before, before, NULL);
	/* Same set of targets in another order: the same settings. */
	expect_update(
		before,
		"{\"metadata\":{\"name\":\"js\",\"labels\":{\"new\":\"x\"},\"annotations\":{\"muster.dev/"
		"barrier-token\":\"token-0123456789abcdef\"}},\"spec\":{\"groupSchedulingConfig\":{"
		"\"timeoutAfterSeconds\":300,\"targetReplicatedJobs\":[\"b\",\"a\"]}}}",
		NULL);
	expect_update(
		before,
		"{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/barrier-token\":\"token-"
		"0123456789abcdef\"}},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":600,"
		"\"targetReplicatedJobs\":[\"a\",\"b\"]}}}",
		"cannot change after the JobSet is created (was: timeout 300 s, targets a,b; now: timeout 600 s, "
		"targets a,b)");
	expect_update(before,
		      "{\"metadata\":{\"name\":\"js\",\"annotations\":{\"muster.dev/barrier-token\":\"token-"
		      "0123456789abcdef\"}},\"spec\":{}}",
		      "now: no group scheduling");
	expect_update(
		before,
		"{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":"
		"300,\"targetReplicatedJobs\":[\"a\",\"b\"]}}}",
		"cannot change or be removed");
	expect_update("{\"metadata\":{\"name\":\"js\"},\"spec\":{}}",
		      "{\"metadata\":{\"name\":\"js\"},\"spec\":{\"groupSchedulingConfig\":{}}}",
		      "was: no group scheduling");
}

/* ---- the settings (lib/muster/group_config) ---- */

static void expect_config(const char *json, int ok, const char *needle, struct group_config *out)
{
	cJSON *jobset = cJSON_Parse(json);
	char *cause = NULL;

	assert_non_null(jobset);
	assert_int_equal(group_config_decode(jobset, out, &cause), ok ? 0 : -1);
	if (!ok) {
		assert_non_null(cause);
		if (!strstr(cause, needle))
			fail_msg("cause \"%s\" does not mention \"%s\"", cause, needle);
	}
	free(cause);
	cJSON_Delete(jobset);
}

static void config_forms(void **state)
{
	struct group_config c, d;

	(void)state;
	expect_config("{\"metadata\":{}}", 1, NULL, &c);
	assert_false(c.present);
	assert_false(group_config_targets(&c, "a"));
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"120\","
		      "\"muster.dev/group-scheduling-targets\":\" a ,b,a\"}}}",
		      1, NULL, &c);
	assert_true(c.present && c.in_annotations && !c.in_spec && c.has_timeout);
	assert_int_equal(c.timeout_seconds, 120);
	assert_int_equal(c.target_count, 2);
	assert_string_equal(c.targets[0], "a");
	assert_true(group_config_targets(&c, "b"));
	assert_false(group_config_targets(&c, "c"));
	expect_config(
		"{\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":120,\"targetReplicatedJobs\":["
		"\"b\",\"a\"]}},\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"120\","
		"\"muster.dev/group-scheduling-targets\":\"a,b\"}}}",
		1, NULL, &d);
	assert_true(d.in_spec && d.in_annotations);
	assert_true(group_config_equal(&c, &d));
	expect_config("{\"spec\":{\"groupSchedulingConfig\":{}}}", 1, NULL, &d);
	assert_true(d.present && !d.has_timeout);
	assert_true(group_config_targets(&d, "anything"));
	assert_false(group_config_equal(&c, &d));
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-targets\":\"a\"}}}", 0,
		      "needs annotation muster.dev/group-scheduling-timeout", &c);
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"1\","
		      "\"muster.dev/group-scheduling-targets\":\"a,\"}}}",
		      0, "ends with a comma", &c);
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"1\","
		      "\"muster.dev/group-scheduling-targets\":\"a,,b\"}}}",
		      0, "empty replicated job name", &c);
	expect_config(
		"{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"99999999999\"}}}",
		0, "is \"99999999999\": it must be between 1 and 86400 seconds", &c);
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"-1\"}}}", 0,
		      "is \"-1\": it must be between 1 and 86400 seconds", &c);
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"-\"}}}", 0,
		      "not a whole number of seconds (e.g. \"300\"; from 1 to 86400)", &c);
	expect_config("{\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":-3}}}", 0,
		      "timeoutAfterSeconds is -3: it must be between 1 and 86400 seconds", &c);
	expect_config("{\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":\"300\"}}}", 0,
		      "is not a number: give a whole number of seconds from 1 to 86400", &c);
	expect_config("{\"metadata\":{\"annotations\":{\"muster.dev/group-scheduling-timeout\":7}}}", 0,
		      "is not a string", &c);
	expect_config("{\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":2147483648}}}", 0,
		      "is 2147483648: it must be between 1 and 86400 seconds", &c);
	expect_config("{\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[1]}}}", 0,
		      "not a name", &c);
	expect_config(
		"{\"spec\":{\"groupSchedulingConfig\":{\"targetReplicatedJobs\":[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}}}",
		0, "longer than 63", &c);
}

/* ---- placement: the gate and the pod route ---- */

static const char *annotation_of(const cJSON *object, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(object, "metadata"),
						 "annotations"),
		key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *pin_template_of(const cJSON *jobset, int index)
{
	const cJSON *rj = cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(jobset, "spec"),
						 "replicatedJobs"),
		index);

	return cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rj, "template"), "spec"),
		"template");
}

static const char *template_label(const cJSON *jobset, int index, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(pin_template_of(jobset, index), "metadata"),
			"labels"),
		key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The label `key` of replicated job `index`'s Job template (JobSet copies
 * those onto each Job), or NULL. */
static const char *job_template_label(const cJSON *jobset, int index, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(
					cJSON_GetArrayItem(
						cJSON_GetObjectItemCaseSensitive(
							cJSON_GetObjectItemCaseSensitive(jobset, "spec"),
							"replicatedJobs"),
						index),
					"template"),
				"metadata"),
			"labels"),
		key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* STORY2 with Kueue's required rack on the workers' pod template. */
static cJSON *story2_with_rack(void)
{
	cJSON *js = cJSON_Parse(STORY2);
	cJSON *tmpl = (cJSON *)pin_template_of(js, 0), *md = cJSON_AddObjectToObject(tmpl, "metadata"),
	      *ann = cJSON_AddObjectToObject(md, "annotations");

	cJSON_AddStringToObject(ann, "kueue.x-k8s.io/podset-required-topology", "rack");
	return js;
}

static void gate_suspends_labels_and_composes_with_the_barrier(void **state)
{
	cJSON *js = story2_with_rack(), *patch = cJSON_CreateArray(), *modified = NULL, *gang = NULL, *item;
	struct jobset_admission *a;
	const char *skip = "?";
	char *cause = NULL, *warning = NULL;

	(void)state;
	/* Copied from a pinned Job's YAML: the pin route's mark, never the user's. */
	cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(
								(cJSON *)pin_template_of(js, 0), "metadata"),
							"labels"),
				MUSTER_LABEL_JOB_PINNED, "true");
	cJSON_AddStringToObject(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive((cJSON *)pin_template_of(js, 0), "metadata"),
			"annotations"),
		MUSTER_ANNOTATION_JOB_SELECTOR, "rack=r1");
	assert_int_equal(gate_create(js, patch, &modified, &skip, &warning, &cause), 0);
	assert_null(skip);
	assert_null(warning);
	assert_non_null(modified);
	/* The barrier's patch is computed on the gated copy and appended, as
	 * webhook.c does; the two apply in order to the JobSet as sent. */
	a = model_of(js, JOBSET_ADMISSION_COUNTED);
	assert_int_equal(jobset_mutate(a, modified, &barrier, TOKEN, &gang, &cause), 0);
	jobset_admission_free(a);
	while ((item = cJSON_DetachItemFromArray(gang, 0)) != NULL)
		cJSON_AddItemToArray(patch, item);
	cJSON_Delete(gang);
	apply_patch(js, patch);
	assert_true(cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "spec"), "suspend")));
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_BARRIER_TOKEN),
			    TOKEN); /* both annotations kept */
	assert_string_equal(template_label(js, 0, MUSTER_LABEL_PLACEMENT), "true");
	assert_string_equal(template_label(js, 1, MUSTER_LABEL_PLACEMENT), "true");
	/* The pin route's own marks, copied onto a pod template, are gone. */
	assert_null(template_label(js, 0, MUSTER_LABEL_JOB_PINNED));
	assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(pin_template_of(js, 0), "metadata"), "annotations"),
		MUSTER_ANNOTATION_JOB_SELECTOR));
	/* The Job templates too: the pin route's Job half selects the Jobs. */
	assert_string_equal(job_template_label(js, 0, MUSTER_LABEL_PLACEMENT), "true");
	assert_string_equal(job_template_label(js, 1, MUSTER_LABEL_PLACEMENT), "true");
	assert_string_equal(template_label(js, 0, MUSTER_LABEL_GROUP_SCHEDULING), "true");
	/* The Kueue annotation the workers carried is still there. */
	assert_non_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(pin_template_of(js, 0), "metadata"), "annotations"),
		"kueue.x-k8s.io/podset-required-topology"));
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	cJSON_Delete(js);
}

/* The admission model decodes each part once, and a part that does not
 * decode fails alone: the others are read all the same. */
static void the_model_decodes_each_part_and_fails_only_where_a_part_is_bad(void **state)
{
	cJSON *js = story2_with_rack(), *tmpl;
	struct jobset_admission *a;

	(void)state;
	a = model_of(js, JOBSET_ADMISSION_COUNTED);
	assert_string_equal(a->name, "my-jobset");
	assert_true(a->mentions);
	assert_null(a->owner);
	assert_int_equal(a->asks, 1);
	assert_int_equal(a->request.group_count, 2);
	assert_string_equal(a->request.groups[0].required, "rack");
	assert_true(a->config_ok && a->config.present && a->config.timeout_seconds == 300);
	assert_true(a->generation_ok);
	assert_non_null(a->counted);
	assert_int_equal(a->counted->replicated_job_count, 2);
	assert_int_equal(a->counted->replicated_jobs[0].replicas, 3);
	jobset_admission_free(a);
	/* Without the flag (an UPDATE) the counted spec is decoded for the
	 * placement request only, once, and the request reads it. */
	a = model_of(js, 0);
	assert_non_null(a->counted);
	assert_int_equal(a->request.groups[0].replicas, 3);
	assert_true(a->config_ok && a->generation_ok);
	jobset_admission_free(a);
	{
		cJSON *plain = cJSON_Parse(STORY2);
		struct jobset_admission *p = model_of(plain, 0);

		/* No placement asked and no flag: nothing counted. */
		assert_false(p->mentions);
		assert_null(p->counted);
		assert_true(p->config_ok && p->generation_ok);
		jobset_admission_free(p);
		cJSON_Delete(plain);
	}

	/* A malformed placement request: its cause, the settings still read. */
	tmpl = (cJSON *)pin_template_of(js, 0);
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(tmpl, "metadata"), "annotations"),
				"kueue.x-k8s.io/podset-slice-size", "+4");
	a = model_of(js, JOBSET_ADMISSION_COUNTED);
	assert_int_equal(a->asks, -1);
	assert_non_null(strstr(a->placement_cause, "placement request: "));
	assert_true(a->config_ok && a->config.present);
	assert_non_null(a->counted);
	jobset_admission_free(a);

	/* Settings that do not decode: their cause; the request, which counts
	 * the replicated jobs by them, says so in its own words. */
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tmpl, "metadata"),
						 "annotations"),
		"kueue.x-k8s.io/podset-slice-size");
	cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "spec"),
						 "groupSchedulingConfig"),
		"timeoutAfterSeconds", cJSON_CreateString("soon"));
	a = model_of(js, JOBSET_ADMISSION_COUNTED);
	assert_false(a->config_ok);
	assert_non_null(strstr(a->config_cause, "timeoutAfterSeconds"));
	assert_null(a->counted);
	assert_int_equal(a->asks, -1);
	assert_non_null(strstr(a->placement_cause, "timeoutAfterSeconds"));
	jobset_admission_free(a);

	/* Kueue's JobSet: its request is Kueue's, not decoded here. */
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(js, "metadata"), "labels"),
		"kueue.x-k8s.io/queue-name", "q");
	a = model_of(js, 0);
	assert_string_equal(a->owner, "kueue");
	assert_true(a->mentions);
	assert_int_equal(a->asks, 0);
	assert_int_equal(a->request.group_count, 0);
	jobset_admission_free(a);
	cJSON_Delete(js);
}

/* The warning of the last gate() (admission's response.warnings), or NULL. */
static char *gate_warning;

/* The gate's outcome for a variant of story2_with_rack(). */
static int gate(cJSON *js, cJSON **after, const char **skip, char **cause)
{
	cJSON *patch = cJSON_CreateArray(), *modified = NULL;
	int rc;

	free(gate_warning);
	rc = gate_create(js, patch, &modified, skip, &gate_warning, cause);

	if (rc == 0)
		apply_patch(js, patch);
	*after = js;
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	return rc;
}

static void gate_cases(void **state)
{
	cJSON *js, *after;
	const char *skip;
	char *cause = NULL;

	(void)state;
	/* The user's own suspend is kept: user-held, no suspend op needed. */
	js = story2_with_rack();
	cJSON_AddTrueToObject(cJSON_GetObjectItemCaseSensitive(js, "spec"), "suspend");
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_string_equal(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_USER_HELD);
	cJSON_Delete(js);
	/* A placement the user wrote is not believed. */
	js = story2_with_rack();
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(js, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT, MUSTER_PLACEMENT_PLACED);
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_string_equal(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	cJSON_Delete(js);
	/* Kueue's JobSets and Volcano's are theirs. */
	js = story2_with_rack();
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(js, "metadata"), "labels"),
		KUEUE_LABEL_QUEUE_NAME, "lq");
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_string_equal(skip, "kueue");
	assert_null(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT));
	cJSON_Delete(js);
	/* The marks of a placed JobSet copied onto one muster does not gate go. */
	js = cJSON_Parse(STORY2);
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(js, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT, MUSTER_PLACEMENT_PLACED);
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_AddObjectToObject((cJSON *)pin_template_of(js, 1), "metadata"),
					"labels"),
		MUSTER_LABEL_PLACEMENT, "true");
	{
		cJSON *job_template = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(
				cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "spec"),
								 "replicatedJobs"),
				0),
			"template");

		cJSON_AddStringToObject(
			cJSON_AddObjectToObject(cJSON_AddObjectToObject(job_template, "metadata"), "labels"),
			MUSTER_LABEL_PLACEMENT, "true");
	}
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT));
	assert_null(template_label(after, 1, MUSTER_LABEL_PLACEMENT));
	assert_null(job_template_label(after, 0, MUSTER_LABEL_PLACEMENT));
	cJSON_Delete(js);
	/* Each alone (what the webhooks' matchConditions send on 1.28+): a
	 * waiting reason, and the pin route's marks on a pod template. */
	js = cJSON_Parse(STORY2);
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(js, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT_REASON, "rack: no one domain holds the JobSet");
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT_REASON));
	cJSON_Delete(js);
	js = cJSON_Parse(STORY2);
	{
		cJSON *metadata = cJSON_AddObjectToObject((cJSON *)pin_template_of(js, 1), "metadata");

		cJSON_AddStringToObject(cJSON_AddObjectToObject(metadata, "labels"), MUSTER_LABEL_JOB_PINNED,
					"true");
		cJSON_AddStringToObject(cJSON_AddObjectToObject(metadata, "annotations"),
					MUSTER_ANNOTATION_JOB_SELECTOR, "rack=r1");
	}
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(template_label(after, 1, MUSTER_LABEL_JOB_PINNED));
	assert_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(pin_template_of(after, 1), "metadata"),
			"annotations"),
		MUSTER_ANNOTATION_JOB_SELECTOR));
	cJSON_Delete(js);
	js = story2_with_rack();
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive((cJSON *)pin_template_of(js, 1), "spec"),
				"schedulerName", VOLCANO_SCHEDULER_NAME);
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_string_equal(skip, "volcano");
	/* L6: its other replicated job's rack request is not applied, and the
	 * author is told so (kubectl prints the admission warning). */
	assert_non_null(gate_warning);
	assert_non_null(strstr(gate_warning, "leaves the placement of the whole JobSet to Volcano"));
	/* ...and marked, for the controller's Event PlacementSkipped. */
	assert_string_equal(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT_SKIPPED),
			    MUSTER_PLACEMENT_SKIPPED_VOLCANO);
	assert_null(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT));
	cJSON_Delete(js);
	/* A mark copied onto a JobSet muster gates is removed. */
	js = story2_with_rack();
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(js, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT_SKIPPED, MUSTER_PLACEMENT_SKIPPED_VOLCANO);
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT_SKIPPED));
	assert_string_equal(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	cJSON_Delete(js);
	/* Volcano's alone, no request muster reads: no warning. */
	js = cJSON_Parse(STORY2);
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive((cJSON *)pin_template_of(js, 1), "spec"),
				"schedulerName", VOLCANO_SCHEDULER_NAME);
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(gate_warning);
	cJSON_Delete(js);
	/* No topology annotation: nothing. Unconstrained only: nothing to place. */
	js = cJSON_Parse(STORY2);
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT));
	cJSON_Delete(js);
	/* A malformed request is refused with the decoder's words. */
	js = story2_with_rack();
	cJSON_AddStringToObject(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive((cJSON *)pin_template_of(js, 0), "metadata"),
			"annotations"),
		"kueue.x-k8s.io/podset-preferred-topology", "rack");
	assert_int_equal(gate(js, &after, &skip, &cause), -1);
	assert_non_null(strstr(cause, "placement request"));
	free(cause);
	cause = NULL;
	cJSON_Delete(js);
	/* L4: completions above parallelism are gated like any other (the
	 * record places the pods that run at once; later ones take their
	 * slots), not refused. */
	js = story2_with_rack();
	cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
							   cJSON_GetObjectItemCaseSensitive(js, "spec"),
							   "replicatedJobs"),
						   0),
				"template"),
			"spec"),
		"completions", cJSON_CreateNumber(200));
	assert_int_equal(gate(js, &after, &skip, &cause), 0);
	assert_null(skip);
	assert_string_equal(annotation_of(after, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	cJSON_Delete(js);
	js = story2_with_rack();
	cJSON_AddStringToObject(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
							   cJSON_GetObjectItemCaseSensitive(js, "spec"),
							   "replicatedJobs"),
						   1),
				"template"),
			"spec"),
		"completionMode", "NonIndexed");
	assert_int_equal(gate(js, &after, &skip, &cause), -1);
	assert_non_null(strstr(cause, "NonIndexed"));
	free(cause);
	cJSON_Delete(js);
}

/* An UPDATE from `old_state` (suspended) to a JobSet with `suspend` and
 * `new_state`, by the controller or by someone else. */
static cJSON *update_by(const char *old_state, int suspend, const char *new_state, int from_controller)
{
	cJSON *old = story2_with_rack(), *now, *patch = cJSON_CreateArray(), *modified = NULL;
	char *cause = NULL;

	cJSON_AddTrueToObject(cJSON_GetObjectItemCaseSensitive(old, "spec"), "suspend");
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT, old_state);
	now = cJSON_Duplicate(old, 1);
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "spec"), "suspend",
					       cJSON_CreateBool(suspend));
	if (new_state)
		cJSON_ReplaceItemInObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "metadata"),
							 "annotations"),
			MUSTER_ANNOTATION_PLACEMENT, cJSON_CreateString(new_state));
	else
		cJSON_DeleteItemFromObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "metadata"),
							 "annotations"),
			MUSTER_ANNOTATION_PLACEMENT);
	assert_int_equal(gate_update(old, now, from_controller, patch, &modified, &cause), 0);
	apply_patch(now, patch);
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	cJSON_Delete(old);
	return now;
}

static cJSON *update(const char *old_state, int suspend, const char *new_state)
{
	return update_by(old_state, suspend, new_state, 0);
}

static int suspended_now(const cJSON *js)
{
	return cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "spec"), "suspend"));
}

/* Sets the label `key` on replicated job `index`'s pod template. */
static void set_template_label(cJSON *jobset, int index, const char *key, const char *value)
{
	cJSON *tmpl = (cJSON *)pin_template_of(jobset, index);
	cJSON *md = cJSON_GetObjectItemCaseSensitive(tmpl, "metadata"), *labels;

	if (!md)
		md = cJSON_AddObjectToObject(tmpl, "metadata");
	if (!(labels = cJSON_GetObjectItemCaseSensitive(md, "labels")))
		labels = cJSON_AddObjectToObject(md, "labels");
	cJSON_DeleteItemFromObjectCaseSensitive(labels, key);
	cJSON_AddStringToObject(labels, key, value);
}

static void set_suspend_to(cJSON *js, int suspend)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(js, "spec");

	cJSON_DeleteItemFromObjectCaseSensitive(spec, "suspend");
	cJSON_AddBoolToObject(spec, "suspend", suspend);
}

/* Issue 36 L2: a JobSet created suspended with no topology request, given
 * one by an update while it is still suspended, then resumed, is gated as
 * at creation (held by its user meanwhile, then waiting and suspended until
 * placed). Before, the update was let through and its pods ran anywhere. A
 * running JobSet given one is not suspended for it. */
static void a_request_given_by_an_update_while_suspended_is_gated(void **state)
{
	cJSON *old = cJSON_Parse(STORY2), *now = story2_with_rack(), *patch = cJSON_CreateArray(),
	      *modified = NULL;
	char *cause = NULL;

	(void)state;
	set_suspend_to(old, 1);
	set_suspend_to(now, 1);
	assert_int_equal(gate_update(old, now, 0, patch, &modified, &cause), 0);
	assert_non_null(modified);
	apply_patch(now, patch);
	assert_string_equal(annotation_of(now, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_USER_HELD);
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	/* Resumed in the same update: suspended again, waiting. */
	patch = cJSON_CreateArray();
	cJSON_Delete(now);
	now = story2_with_rack();
	set_suspend_to(now, 0);
	assert_int_equal(gate_update(old, now, 0, patch, &modified, &cause), 0);
	apply_patch(now, patch);
	assert_string_equal(annotation_of(now, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	assert_true(suspended_now(now));
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	/* Running: left alone. */
	patch = cJSON_CreateArray();
	set_suspend_to(old, 0);
	cJSON_Delete(now);
	now = story2_with_rack();
	set_suspend_to(now, 0);
	assert_int_equal(gate_update(old, now, 0, patch, &modified, &cause), 0);
	assert_null(modified);
	assert_int_equal(cJSON_GetArraySize(patch), 0);
	cJSON_Delete(patch);
	cJSON_Delete(now);
	cJSON_Delete(old);
}

/* Issue 36 L3: an update that makes a request malformed (a slice size that
 * does not divide the Job's pods) is refused at once, saying why, as a
 * create is; before, it was let through and showed only at the resume. */
static void an_update_that_makes_a_request_malformed_is_refused(void **state)
{
	cJSON *old = story2_with_rack(), *now = story2_with_rack(), *patch = cJSON_CreateArray(),
	      *modified = NULL;
	cJSON *ann = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive((cJSON *)pin_template_of(now, 0), "metadata"),
		"annotations");
	char *cause = NULL;

	(void)state;
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT, MUSTER_PLACEMENT_USER_HELD);
	cJSON_DeleteItemFromObjectCaseSensitive(ann, "kueue.x-k8s.io/podset-required-topology");
	cJSON_AddStringToObject(ann, "kueue.x-k8s.io/podset-slice-required-topology", "rack");
	cJSON_AddStringToObject(ann, "kueue.x-k8s.io/podset-slice-size", "7");
	assert_int_equal(gate_update(old, now, 0, patch, &modified, &cause), -1);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "placement request: "));
	assert_non_null(strstr(cause, "podset-slice-size: 7 does not divide"));
	assert_null(modified);
	free(cause);
	cJSON_Delete(patch);
	cJSON_Delete(now);
	cJSON_Delete(old);
}

/* A JobSet stored with a request the decoder now refuses (admitted before
 * it knew better: two Jobs exclusive per rack, the JobSet in one rack) is
 * not refused on every update: the controller writing why it waits, or its
 * user mending it, gets through. An update that makes a good request
 * malformed is still refused (above). */
static void an_update_of_a_jobset_stored_malformed_is_let_through(void **state)
{
	cJSON *old = cJSON_Parse(STORY2), *now, *patch = cJSON_CreateArray(), *modified = NULL, *ann;
	char *cause = NULL;

	(void)state;
	ann = cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "annotations");
	cJSON_AddStringToObject(ann, MUSTER_ANNOTATION_TOPOLOGY_REQUIRED, "rack");
	cJSON_AddStringToObject(ann, JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY, "rack");
	cJSON_AddStringToObject(ann, MUSTER_ANNOTATION_PLACEMENT, MUSTER_PLACEMENT_WAITING);
	set_suspend_to(old, 1);
	now = cJSON_Duplicate(old, 1);
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(now, "metadata"), "annotations"),
				MUSTER_ANNOTATION_PLACEMENT_REASON, "placement request: ...");
	assert_int_equal(gate_update(old, now, 1, patch, &modified, &cause), 0);
	assert_null(cause);
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	cJSON_Delete(now);
	/* Stored so but never held by the gate (no placement state): refused,
	 * it would run unplaced. */
	patch = cJSON_CreateArray();
	modified = NULL;
	now = cJSON_Duplicate(old, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "metadata"),
						 "annotations"),
		MUSTER_ANNOTATION_PLACEMENT);
	{
		cJSON *bare = cJSON_Duplicate(now, 1);

		set_suspend_to(now, 0);
		assert_int_equal(gate_update(bare, now, 0, patch, &modified, &cause), -1);
		assert_non_null(strstr(cause, "no placement holds both"));
		free(cause);
		cause = NULL;
		cJSON_Delete(bare);
	}
	assert_null(modified);
	cJSON_Delete(patch);
	cJSON_Delete(now);
	/* The same JobSet made so from a good one by the update: refused. */
	patch = cJSON_CreateArray();
	modified = NULL;
	now = cJSON_Duplicate(old, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(ann, JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY);
	assert_int_equal(gate_update(old, now, 0, patch, &modified, &cause), -1);
	assert_non_null(strstr(cause, "no placement holds both"));
	assert_null(modified);
	free(cause);
	cJSON_Delete(patch);
	cJSON_Delete(now);
	cJSON_Delete(old);
}

/* An update that adds the pin route's mark of a Job pinned whole to a pod
 * template of a gated JobSet (upstream JobSet lets a suspended JobSet's pod
 * templates change) loses it, as a JobSet created with it does: JobSet
 * would copy it onto each Job's pods, and the pod route would never see
 * them, pinned or not. A mark the JobSet had before stays (its template may
 * be immutable by then: removing it would get the update refused). Before,
 * only CREATE removed it. */
static void gate_strips_a_job_pinned_mark_an_update_adds(void **state)
{
	cJSON *old = story2_with_rack(), *now, *patch = cJSON_CreateArray(), *modified = NULL;
	char *cause = NULL;

	(void)state;
	cJSON_AddTrueToObject(cJSON_GetObjectItemCaseSensitive(old, "spec"), "suspend");
	cJSON_AddStringToObject(
		cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "annotations"),
		MUSTER_ANNOTATION_PLACEMENT, MUSTER_PLACEMENT_WAITING);
	set_template_label(old, 1, MUSTER_LABEL_JOB_PINNED, "true"); /* from before: kept */
	now = cJSON_Duplicate(old, 1);
	set_template_label(now, 0, MUSTER_LABEL_JOB_PINNED, "true");
	assert_int_equal(gate_update(old, now, 0, patch, &modified, &cause), 0);
	assert_non_null(modified);
	assert_null(template_label(modified, 0, MUSTER_LABEL_JOB_PINNED));
	assert_string_equal(template_label(modified, 1, MUSTER_LABEL_JOB_PINNED), "true");
	apply_patch(now, patch);
	assert_null(template_label(now, 0, MUSTER_LABEL_JOB_PINNED));
	assert_string_equal(template_label(now, 1, MUSTER_LABEL_JOB_PINNED), "true");
	/* Nothing else changed: still waiting, still suspended. */
	assert_string_equal(annotation_of(now, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	assert_true(cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "spec"), "suspend")));
	cJSON_Delete(modified);
	cJSON_Delete(patch);
	/* The controller's resume passes as before, the mark of before with it. */
	patch = cJSON_CreateArray();
	modified = NULL;
	cJSON_Delete(now);
	now = cJSON_Duplicate(old, 1);
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "spec"), "suspend",
					       cJSON_CreateBool(0));
	cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(now, "metadata"),
						 "annotations"),
		MUSTER_ANNOTATION_PLACEMENT, cJSON_CreateString(MUSTER_PLACEMENT_PLACED));
	assert_int_equal(gate_update(old, now, 1, patch, &modified, &cause), 0);
	assert_null(modified);
	assert_int_equal(cJSON_GetArraySize(patch), 0);
	cJSON_Delete(patch);
	cJSON_Delete(now);
	cJSON_Delete(old);
}

static void gate_holds_a_resume_until_placed(void **state)
{
	cJSON *js;

	(void)state;
	/* The user resumes a JobSet muster has not placed: held. */
	js = update(MUSTER_PLACEMENT_WAITING, 0, MUSTER_PLACEMENT_WAITING);
	assert_true(suspended_now(js));
	cJSON_Delete(js);
	js = update(MUSTER_PLACEMENT_USER_HELD, 0, MUSTER_PLACEMENT_USER_HELD);
	assert_true(suspended_now(js));
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	cJSON_Delete(js);
	/* The controller's resume (placed, in the same patch) passes. */
	js = update_by(MUSTER_PLACEMENT_WAITING, 0, MUSTER_PLACEMENT_PLACED, 1);
	assert_false(suspended_now(js));
	cJSON_Delete(js);
	/* Anyone else's "placed" is not believed: held, the state kept. */
	js = update(MUSTER_PLACEMENT_WAITING, 0, MUSTER_PLACEMENT_PLACED);
	assert_true(suspended_now(js));
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_WAITING);
	cJSON_Delete(js);
	js = update(MUSTER_PLACEMENT_USER_HELD, 1, MUSTER_PLACEMENT_PLACED);
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_USER_HELD);
	cJSON_Delete(js);
	/* An update that drops the annotation gets it back. */
	js = update(MUSTER_PLACEMENT_PLACED, 1, NULL);
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_PLACED);
	cJSON_Delete(js);
	js = update(MUSTER_PLACEMENT_USER_HELD, 1, NULL);
	assert_string_equal(annotation_of(js, MUSTER_ANNOTATION_PLACEMENT), MUSTER_PLACEMENT_USER_HELD);
	assert_true(suspended_now(js));
	cJSON_Delete(js);
}

#define PINNED_POD(extra_selector)                                                                                   \
	"{\"metadata\":{\"generateName\":\"train-w-1-2-\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"train\"," \
	"\"jobset.sigs.k8s.io/jobset-uid\":\"u-1\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","                 \
	"\"jobset.sigs.k8s.io/job-index\":\"1\",\"muster.dev/placement\":\"true\"},\"annotations\":{"                \
	"\"batch.kubernetes.io/job-completion-index\":\"2\"}},\"spec\":{" extra_selector "\"containers\":[{"         \
	"\"name\":\"c\"}]}}"

static void pod_route_pins_by_job_and_completion_index(void **state)
{
	cJSON *pod = cJSON_Parse(PINNED_POD("")), *patch = cJSON_CreateArray(), *sel;
	struct jobset_pod key;
	char *cause = NULL;

	(void)state;
	assert_int_equal(pod_pin_key(pod, &key, &cause), 0);
	assert_string_equal(key.jobset, "train");
	assert_string_equal(key.uid, "u-1");
	assert_string_equal(key.replicated_job, "w");
	assert_int_equal(key.job_index, 1);
	assert_int_equal(key.completion, 2);
	assert_int_equal(key.attempt, 0); /* no restart-attempt label: attempt 0 */
	assert_int_equal(pod_pin_patch(pod, "block=b1,rack=r2", patch, &cause), 0);
	apply_patch(pod, patch);
	sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeSelector");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "block")->valuestring, "b1");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "rack")->valuestring, "r2");
	cJSON_Delete(patch);
	cJSON_Delete(pod);

	/* The template's own selector is kept; an equal key is fine, another value is refused. */
	pod = cJSON_Parse(PINNED_POD("\"nodeSelector\":{\"pool\":\"a\",\"rack\":\"r2\"},"));
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "block=b1,rack=r2,kubernetes.io/hostname=n1", patch, &cause), 0);
	apply_patch(pod, patch);
	sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeSelector");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "pool")->valuestring, "a");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "kubernetes.io/hostname")->valuestring,
			    "n1");
	cJSON_Delete(patch);
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "rack=r9", patch, &cause), -1);
	assert_non_null(strstr(cause, "rack=r2"));
	assert_non_null(strstr(cause, "rack=r9"));
	free(cause);
	cause = NULL;
	cJSON_Delete(patch);
	cJSON_Delete(pod);

	/* A pod that does not say which it is: refused, naming what is missing. */
	pod = cJSON_Parse(
		"{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"t\"}},\"spec\":{}}");
	assert_int_equal(pod_pin_key(pod, &key, &cause), -1);
	assert_non_null(strstr(cause, "jobset-uid"));
	free(cause);
	cause = NULL;
	cJSON_Delete(pod);

	/* The restart attempt, from its label; a bad one is refused by name. */
	pod = cJSON_Parse(PINNED_POD(""));
	cJSON_AddStringToObject(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels"),
		JOBSET_LABEL_RESTART_ATTEMPT, "3");
	assert_int_equal(pod_pin_key(pod, &key, &cause), 0);
	assert_int_equal(key.attempt, 3);
	cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels"),
		JOBSET_LABEL_RESTART_ATTEMPT, cJSON_CreateString("x"));
	assert_int_equal(pod_pin_key(pod, &key, &cause), -1);
	assert_non_null(strstr(cause, JOBSET_LABEL_RESTART_ATTEMPT));
	free(cause);
	cJSON_Delete(pod);
}

#define PINNED_JOB(spec_extra, template_labels)                                                              \
	"{\"metadata\":{\"name\":\"train-w-1\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"train\","    \
	"\"jobset.sigs.k8s.io/jobset-uid\":\"u-1\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","         \
	"\"jobset.sigs.k8s.io/job-index\":\"1\",\"jobset.sigs.k8s.io/restart-attempt\":\"2\","               \
	"\"muster.dev/placement\":\"true\"}},\"spec\":{" spec_extra "\"template\":{" template_labels         \
	"\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}"

/* The share annotation of a Job's pod template, or NULL. */
static const char *share_of(const cJSON *job)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(job, "spec"), "template"),
				"metadata"),
			"annotations"),
		MUSTER_ANNOTATION_JOB_SELECTOR);

	return cJSON_IsString(a) ? a->valuestring : NULL;
}

/* A Job whose pods go to two racks: its pod template gets the rack of most
 * of them, recorded in an annotation; its pods in that rack then need no op
 * at the pod route, and the others get that value replaced. */
static void a_job_split_over_racks_gets_the_rack_of_most_of_its_pods(void **state)
{
	cJSON *job = cJSON_Parse(PINNED_JOB(
		      "\"completions\":100,\"parallelism\":100,",
		      "\"metadata\":{\"labels\":{\"muster.dev/placement\":\"true\",\"muster.dev/job-pinned\":\"true\"}},")),
	      *patch = cJSON_CreateArray(), *template, *pod, *sel;
	const cJSON *meta;
	char *cause = NULL;

	(void)state;
	assert_int_equal(pod_pin_job_share_patch(job, "block=b1,rack=r2", patch), 0);
	apply_patch(job, patch);
	cJSON_Delete(patch);
	template =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "spec"), "template");
	meta = cJSON_GetObjectItemCaseSensitive(template, "metadata");
	sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(template, "spec"),
					       "nodeSelector");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "rack")->valuestring, "r2");
	assert_string_equal(share_of(job), "block=b1,rack=r2");
	/* Its pods go to the pod route: not marked pinned whole. */
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "labels"),
						     MUSTER_LABEL_JOB_PINNED));

	/* A pod made from that template. */
	pod = cJSON_Parse(PINNED_POD("\"nodeSelector\":{\"block\":\"b1\",\"rack\":\"r2\"},"));
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "annotations"),
				MUSTER_ANNOTATION_JOB_SELECTOR, "block=b1,rack=r2");
	/* In the template's rack: no op, so the apiserver applies nothing. */
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "block=b1,rack=r2", patch, &cause), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 0);
	cJSON_Delete(patch);
	/* A domain of another depth, or "anywhere" (the share came from
	 * another record): the share's pairs it does not name go. */
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "block=b2", patch, &cause), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 2);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(patch, 1), "op")->valuestring,
			    "remove");
	cJSON_Delete(patch);
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "", patch, &cause), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 2);
	cJSON_Delete(patch);
	/* In the other rack: that value replaced, the rest kept. */
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "block=b1,rack=r1", patch, &cause), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 1);
	apply_patch(pod, patch);
	cJSON_Delete(patch);
	sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeSelector");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "rack")->valuestring, "r1");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "block")->valuestring, "b1");
	/* A value the annotation does not hold (now r1, the annotation says
	 * r2) is the user's: a contradiction, refused as before, and not
	 * removed either. */
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "block=b1,rack=r3", patch, &cause), -1);
	assert_non_null(strstr(cause, "rack=r1"));
	free(cause);
	cause = NULL;
	cJSON_Delete(patch);
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_patch(pod, "block=b1", patch, &cause), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 0);
	cJSON_Delete(patch);
	/* An annotation longer than any share muster writes is not muster's:
	 * ignored, so the value it names is the user's (refused). */
	{
		char huge[4096];
		size_t at = (size_t)snprintf(huge, sizeof(huge), "rack=r1");

		while (at + 8 < sizeof(huge))
			at += (size_t)snprintf(huge + at, sizeof(huge) - at, ",k%zu=v", at);
		cJSON_ReplaceItemInObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
							 "annotations"),
			MUSTER_ANNOTATION_JOB_SELECTOR, cJSON_CreateString(huge));
		patch = cJSON_CreateArray();
		assert_int_equal(pod_pin_patch(pod, "block=b1,rack=r3", patch, &cause), -1);
		free(cause);
		cause = NULL;
		cJSON_Delete(patch);
	}
	cJSON_Delete(pod);
	cJSON_Delete(job);

	/* A template whose own selector contradicts the share: no share, its
	 * pods pinned one by one (a copied annotation goes); one that selects
	 * part of it: only the pairs muster added are recorded. */
	job = cJSON_Parse(
		PINNED_JOB("\"completions\":100,",
			   "\"metadata\":{\"annotations\":{\"muster.dev/job-selector\":\"x=y\"}},"));
	template =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "spec"), "template");
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(template, "spec"), "nodeSelector",
			      cJSON_Parse("{\"rack\":\"r7\"}"));
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_share_patch(job, "block=b1,rack=r2", patch), 0);
	apply_patch(job, patch);
	cJSON_Delete(patch);
	assert_null(share_of(job));
	sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(template, "spec"),
					       "nodeSelector");
	assert_int_equal(cJSON_GetArraySize(sel), 1); /* untouched */
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(template, "spec"),
					       "nodeSelector", cJSON_Parse("{\"block\":\"b1\"}"));
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_share_patch(job, "block=b1,rack=r2", patch), 0);
	apply_patch(job, patch);
	cJSON_Delete(patch);
	assert_string_equal(share_of(job), "rack=r2");
	/* Selecting it all already: nothing to share. */
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_share_patch(job, "block=b1,rack=r2", patch), 0);
	apply_patch(job, patch);
	cJSON_Delete(patch);
	assert_null(share_of(job));
	cJSON_Delete(job);
}

/* The pin route's Job half: a Job JobSet made is named by its labels, and
 * counts its pods; pinned whole, its pod template gets the selector and
 * the label that keeps its pods from the pod half. */
static void job_route_pins_a_job_whole(void **state)
{
	cJSON *job = cJSON_Parse(
		      PINNED_JOB("\"completions\":4,\"parallelism\":4,",
				 "\"metadata\":{\"labels\":{\"muster.dev/placement\":\"true\"}},")),
	      *patch = cJSON_CreateArray(), *template, *sel;
	struct jobset_pod key;
	uint32_t pods;
	char *cause = NULL;

	(void)state;
	assert_int_equal(pod_pin_job_key(job, &key, &pods, &cause), 0);
	assert_string_equal(key.jobset, "train");
	assert_string_equal(key.uid, "u-1");
	assert_string_equal(key.replicated_job, "w");
	assert_int_equal(key.job_index, 1);
	assert_int_equal(key.attempt, 2);
	assert_int_equal(pods, 4);
	assert_int_equal(pod_pin_job_patch(job, "block=b1,rack=r2", patch, &cause), 0);
	apply_patch(job, patch);
	template =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "spec"), "template");
	sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(template, "spec"),
					       "nodeSelector");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "block")->valuestring, "b1");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sel, "rack")->valuestring, "r2");
	{
		const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(template, "metadata"), "labels");

		/* Its pods skip the pod route; the selector label stays as it was. */
		assert_string_equal(
			cJSON_GetObjectItemCaseSensitive(labels, MUSTER_LABEL_JOB_PINNED)->valuestring,
			"true");
		assert_string_equal(
			cJSON_GetObjectItemCaseSensitive(labels, MUSTER_LABEL_PLACEMENT)->valuestring,
			"true");
	}
	/* Pinned one by one instead: a job-pinned label it carries goes. */
	cJSON_Delete(patch);
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_unpinned(job, patch), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 1);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(patch, 0), "op")->valuestring,
			    "remove");
	cJSON_Delete(patch);
	cJSON_Delete(job);

	/* No metadata on the pod template: made; the template's own
	 * selector contradicting the record: refused, naming both. */
	job = cJSON_Parse(PINNED_JOB("", ""));
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_key(job, &key, &pods, &cause), 0);
	assert_int_equal(pods, 1); /* neither completions nor parallelism: one pod */
	assert_int_equal(pod_pin_job_patch(job, "rack=r2", patch, &cause), 0);
	apply_patch(job, patch);
	template =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "spec"), "template");
	assert_non_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(template, "metadata"),
						 "labels"),
		MUSTER_LABEL_JOB_PINNED));
	cJSON_Delete(patch);
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_unpinned(cJSON_GetObjectItemCaseSensitive(job, "nothing"), patch), 0);
	assert_int_equal(cJSON_GetArraySize(patch), 0);
	cJSON_Delete(patch);
	patch = cJSON_CreateArray();
	assert_int_equal(pod_pin_job_patch(job, "rack=r9", patch, &cause), -1);
	assert_non_null(strstr(cause, "the Job selects rack=r2"));
	free(cause);
	cause = NULL;
	cJSON_Delete(patch);
	cJSON_Delete(job);

	/* A work queue (parallelism alone): no fixed pods, pinned one by one. */
	job = cJSON_Parse(PINNED_JOB("\"parallelism\":3,", ""));
	assert_int_equal(pod_pin_job_key(job, &key, &pods, &cause), 0);
	assert_int_equal(pods, 0);
	cJSON_Delete(job);

	/* A Job that does not say which it is: refused, naming the label. */
	job = cJSON_Parse(
		"{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"t\"}},\"spec\":{}}");
	assert_int_equal(pod_pin_job_key(job, &key, &pods, &cause), -1);
	assert_non_null(strstr(cause, "the Job's label jobset.sigs.k8s.io/jobset-uid"));
	free(cause);
	cJSON_Delete(job);
}

/* Admission decodes the settings once: the model takes the ones given
 * (here, targets the object itself does not name) and reads the rest of
 * the JobSet; without them it reads the object's own. */
static void the_model_takes_the_settings_admission_decoded(void **state)
{
	cJSON *jobset = cJSON_Parse("{\"metadata\":{\"name\":\"t\"},\"spec\":{\"groupSchedulingConfig\":{},"
				    "\"replicatedJobs\":[{\"name\":\"a\",\"replicas\":2,\"template\":{}},"
				    "{\"name\":\"b\",\"template\":{}}]}}");
	struct group_config *config = calloc(1, sizeof(*config));
	struct jobset_model *model = calloc(1, sizeof(*model));
	char *cause = NULL;

	(void)state;
	assert_non_null(jobset);
	assert_int_equal(group_config_decode(jobset, config, &cause), 0);
	assert_true(config->present);
	assert_int_equal(config->target_count, 0);
	config->target_count = 1;
	snprintf(config->targets[0], sizeof(config->targets[0]), "b");
	config->has_timeout = 1;
	config->timeout_seconds = 77;
	assert_int_equal(jobset_model_decode_admitted(jobset, config, model, &cause), 0);
	assert_int_equal(model->replicated_job_count, 2);
	assert_int_equal(model->replicated_jobs[0].replicas, 2);
	assert_false(model->replicated_jobs[0].targeted);
	assert_true(model->replicated_jobs[1].targeted);
	assert_int_equal(model->timeout_seconds, 77);
	assert_int_equal(jobset_model_decode_written(jobset, model, &cause), 0);
	assert_true(model->replicated_jobs[0].targeted); /* its own settings: every job */
	assert_false(model->has_timeout);
	free(model);
	free(config);
	cJSON_Delete(jobset);
}

/* ---- the routes (webhook.c) ---- */

/* A user's resume of a JobSet not placed yet is held by the gate (suspend
 * set back to true): the barrier's patch is computed on the JobSet as the
 * gate leaves it, so it is not a resume and starts no new gang. */
/* Gang (targets workers) + a Kueue rack request on the workers' pod
 * template; %s: "true" (stored) or "false" (the user's resume). */
#define HELD_JOBSET                                                                                             \
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"js\","       \
	"\"namespace\":\"ns\",\"uid\":\"u-1\",\"annotations\":{\"muster.dev/barrier-token\":"                   \
	"\"tok-0123456789abcdef0123456789ab\",\"muster.dev/placement\":\"waiting\"}},\"spec\":{\"suspend\":%s," \
	"\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":300,\"targetReplicatedJobs\":[\"workers\"]},"       \
	"\"replicatedJobs\":[{\"name\":\"workers\",\"replicas\":1,\"template\":{\"spec\":{\"completions\":2,"   \
	"\"parallelism\":2,\"template\":{\"metadata\":{\"annotations\":{"                                       \
	"\"kueue.x-k8s.io/podset-required-topology\":\"rack\"}},\"spec\":{\"containers\":[{\"name\":\"c\","     \
	"\"image\":\"x\"}]}}}}}]}}"

static void a_held_resume_does_not_raise_the_gang_generation(void **state)
{
	struct webhook_options options = { .barrier = { .barrier_image = "b",
							.image_pull_policy = "IfNotPresent",
							.cpu_request = "10m",
							.memory_request = "16Mi" },
					   .quiet = 1,
					   .controller_user =
						   "system:serviceaccount:muster-system:muster-controller" };
	struct http_serve_reply reply = { 0 };
	struct webhook *w = NULL;
	char *cause = NULL, body[4096], stored[1536], resumed[1536], *patch;
	cJSON *answer, *response;

	(void)state;
	snprintf(stored, sizeof(stored), HELD_JOBSET, "true");
	snprintf(resumed, sizeof(resumed), HELD_JOBSET, "false");
	snprintf(
		body, sizeof(body),
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"r-1\","
		"\"kind\":{\"group\":\"jobset.x-k8s.io\",\"version\":\"v1alpha2\",\"kind\":\"JobSet\"},"
		"\"namespace\":\"ns\",\"name\":\"js\",\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"alice\"},"
		"\"object\":%s,\"oldObject\":%s}}",
		resumed, stored);
	assert_int_equal(webhook_new(&options, &w, &cause), 0);
	webhook_mutate(w, body, strlen(body), &reply);
	answer = cJSON_ParseWithLength(reply.body, reply.body_len);
	response = cJSON_GetObjectItem(answer, "response");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(response, "allowed")));
	{
		const char *b64 = cJSON_GetObjectItem(response, "patch")->valuestring;
		gnutls_datum_t in = { (unsigned char *)(uintptr_t)b64, (unsigned)strlen(b64) }, out = { 0 };

		assert_int_equal(gnutls_base64_decode2(&in, &out), 0);
		patch = strndup((const char *)out.data, out.size);
		gnutls_free(out.data);
	}
	/* Held: suspended again, still waiting for its placement. */
	assert_non_null(strstr(patch, "\"path\":\"/spec/suspend\",\"value\":true"));
	/* Not a resume: no new gang (the controller's resume later raises it once). */
	assert_null(strstr(patch, "gang-generation"));
	free(patch);
	cJSON_Delete(answer);
	free(reply.body);
	webhook_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(admission_envelope),
		cmocka_unit_test(admission_too_large),
		cmocka_unit_test(admission_encoding),
		cmocka_unit_test(mutate_story2_targets_only_workers),
		cmocka_unit_test(resume_raises_the_generation),
		cmocka_unit_test(resume_refuses_a_generation_it_cannot_read),
		cmocka_unit_test(generation_never_goes_back),
		cmocka_unit_test(mutate_is_idempotent),
		cmocka_unit_test(mutate_replaces_a_user_container_of_the_reserved_name),
		cmocka_unit_test(mutate_story1_every_job_and_default_timeout),
		cmocka_unit_test(mutate_places_barrier_after_sidecars),
		cmocka_unit_test(mutate_without_push),
		cmocka_unit_test(mutate_without_config_is_empty),
		cmocka_unit_test(validate_create_rules),
		cmocka_unit_test(validate_create_refuses_what_the_controller_cannot_count),
		cmocka_unit_test(the_model_takes_the_settings_admission_decoded),
		cmocka_unit_test(validate_update_rules),
		cmocka_unit_test(config_forms),
		cmocka_unit_test(gate_suspends_labels_and_composes_with_the_barrier),
		cmocka_unit_test(the_model_decodes_each_part_and_fails_only_where_a_part_is_bad),
		cmocka_unit_test(gate_cases),
		cmocka_unit_test(a_held_resume_does_not_raise_the_gang_generation),
		cmocka_unit_test(gate_holds_a_resume_until_placed),
		cmocka_unit_test(gate_strips_a_job_pinned_mark_an_update_adds),
		cmocka_unit_test(a_request_given_by_an_update_while_suspended_is_gated),
		cmocka_unit_test(an_update_that_makes_a_request_malformed_is_refused),
		cmocka_unit_test(an_update_of_a_jobset_stored_malformed_is_let_through),
		cmocka_unit_test(pod_route_pins_by_job_and_completion_index),
		cmocka_unit_test(job_route_pins_a_job_whole),
		cmocka_unit_test(a_job_split_over_racks_gets_the_rack_of_most_of_its_pods),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
