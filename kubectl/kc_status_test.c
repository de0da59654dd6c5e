/*
 * Unit tests of kubectl/kc_status (the summary from decoded inputs: the
 * gang's counts and state, the records, the Events, as text and JSON) and
 * of kubectl/kc_fetch against a fake API server (a kube_transport that
 * answers by path and records what was asked).
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

#include "kc_fetch.h"
#include "kc_status.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_error.h"
#include "muster_api.h"
#include "path_transport.h"

#define UID "6f1c-uid"

static cJSON *parse(const char *text)
{
	cJSON *tree = cJSON_Parse(text);

	assert_non_null(tree);
	return tree;
}

/* JobSet team/train of uid UID: one replicated job "workers" of 2 Jobs of
 * 2 pods (4 expected), restart attempt `attempt`, gang generation 1, the
 * gang timeout annotation when gang, placement annotations when given. */
static cJSON *jobset(int gang, unsigned attempt, int suspended, const char *placement, const char *reason)
{
	char text[4096];

	snprintf(
		text, sizeof(text),
		"{\"metadata\":{\"name\":\"train\",\"namespace\":\"team\",\"uid\":\"" UID
		"\",\"annotations\":{"
		"%s%s%s%s%s%s%s%s\"x\":\"y\"}},"
		"\"spec\":{\"suspend\":%s,\"replicatedJobs\":[{\"name\":\"workers\",\"replicas\":2,\"template\":{"
		"\"spec\":{\"parallelism\":2,\"completions\":2,\"template\":{\"metadata\":{\"labels\":{"
		"\"" MUSTER_LABEL_GANG_GENERATION "\":\"1\"}}}}}}]},"
		"\"status\":{\"restarts\":%u}}",
		gang ? "\"" MUSTER_ANNOTATION_GROUP_TIMEOUT "\":\"30\"," : "", placement ? "\"" : "",
		placement ? MUSTER_ANNOTATION_PLACEMENT : "", placement ? "\":\"" : "",
		placement ? placement : "", placement ? "\"," : "",
		reason ? "\"" MUSTER_ANNOTATION_PLACEMENT_REASON "\":\"" : "", reason ? reason : "",
		suspended ? "true" : "false", attempt);
	/* The reason's closing quote and comma. */
	if (reason) {
		char *at = strstr(text, "\"x\":\"y\"");
		char rest[4096];

		snprintf(rest, sizeof(rest), "\",%s", at);
		snprintf(at, sizeof(text) - (size_t)(at - text), "%s", rest);
	}
	return parse(text);
}

enum barrier { RUNNING, WAITING, PASSED, TIMED_OUT, TIMED_OUT_BEFORE, NO_BARRIER };

/* One pod of the JobSet as a JSON object text, into buf. */
static void pod_text(char *buf, size_t size, const char *name, const char *uid, unsigned attempt,
		     unsigned generation, const char *node, enum barrier barrier, const char *phase)
{
	static const char *const states[] = {
		[RUNNING] = "\"state\":{\"running\":{}}",
		[WAITING] = "\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}",
		[PASSED] = "\"state\":{\"terminated\":{\"exitCode\":0}}",
		[TIMED_OUT] = "\"state\":{\"terminated\":{\"exitCode\":3}}",
		[TIMED_OUT_BEFORE] =
			"\"state\":{\"running\":{}},\"lastState\":{\"terminated\":{\"exitCode\":3}}",
		[NO_BARRIER] = "",
	};

	snprintf(buf, size,
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team\",\"uid\":\"p-%s\",\"labels\":{"
		 "\"" JOBSET_LABEL_NAME "\":\"train\",\"" JOBSET_LABEL_UID "\":\"%s\","
		 "\"" JOBSET_LABEL_REPLICATED_JOB "\":\"workers\",\"" JOBSET_LABEL_RESTART_ATTEMPT
		 "\":\"%u\","
		 "\"" MUSTER_LABEL_GANG_GENERATION "\":\"%u\"}},"
		 "\"spec\":{\"nodeName\":\"%s\"},"
		 "\"status\":{\"phase\":\"%s\",\"initContainerStatuses\":[{\"name\":\"%s\"%s%s}]}}",
		 name, name, uid, attempt, generation, node, phase, MUSTER_BARRIER_CONTAINER,
		 *states[barrier] ? "," : "", states[barrier]);
}

/* A list of pods from texts. */
static cJSON *pod_list(size_t count, char texts[][2048])
{
	cJSON *list = parse("{\"items\":[]}");

	for (size_t i = 0; i < count; i++)
		cJSON_AddItemToArray(cJSON_GetObjectItem(list, "items"), parse(texts[i]));
	return list;
}

/* A ConfigMap of record owned by JobSet train of `owner_uid`. */
static cJSON *configmap(const char *name, const char *owner_uid, const char *data)
{
	char text[4096];

	snprintf(
		text, sizeof(text),
		"{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team\",\"creationTimestamp\":\"2026-01-01T10:00:00Z\","
		"\"managedFields\":[{\"time\":\"2026-01-01T10:00:05Z\"},{\"time\":\"2026-01-01T10:00:09Z\"}],"
		"\"ownerReferences\":[{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
		"\"name\":\"train\",\"uid\":\"%s\",\"controller\":true}]},\"data\":%s}",
		name, owner_uid, data);
	return parse(text);
}

static void build(const cJSON *js, const cJSON *pods, const cJSON *release, const cJSON *placement,
		  const cJSON *events, struct kc_status *s)
{
	char *cause = NULL;

	assert_int_equal(kc_status_build(js, pods, release, placement, events, s, &cause), 0);
	assert_null(cause);
}

/* Only the pods of the current attempt and generation, of this JobSet's
 * uid and of a targeted replicated job count; a pod counts as started when
 * bound with its barrier running or passed (a status saying running
 * without a node proves nothing, as for the controller). */
static void counts_the_current_pods(void **state)
{
	char texts[7][2048];
	cJSON *js = jobset(1, 1, 0, NULL, NULL), *pods;
	struct kc_status *s = malloc(sizeof(*s));

	(void)state;
	pod_text(texts[0], sizeof(texts[0]), "w-0-0", UID, 1, 1, "n1", RUNNING, "Pending");
	pod_text(texts[1], sizeof(texts[1]), "w-0-1", UID, 1, 1, "n2", RUNNING, "Pending");
	pod_text(texts[2], sizeof(texts[2]), "w-1-0", UID, 1, 1, "", WAITING, "Pending");
	pod_text(texts[3], sizeof(texts[3]), "old", UID, 0, 1, "n3", RUNNING, "Pending");
	pod_text(texts[4], sizeof(texts[4]), "other-uid", "another", 1, 1, "n3", RUNNING, "Pending");
	pod_text(texts[5], sizeof(texts[5]), "old-generation", UID, 1, 0, "n3", RUNNING, "Pending");
	pod_text(texts[6], sizeof(texts[6]), "w-1-1", UID, 1, 1, "", RUNNING, "Pending");
	pods = pod_list(7, texts);
	build(js, pods, NULL, NULL, NULL, s);
	assert_int_equal(s->gang.expected, 4);
	assert_int_equal(s->gang.created, 4);
	assert_int_equal(s->gang.bound, 2);
	assert_int_equal(s->gang.started, 2);
	assert_int_equal(s->gang.at_barrier, 2);
	assert_int_equal(s->gang.state, KC_GANG_WAITING);
	assert_string_equal(s->gang.why, "2 of 4 pods started (4 created, 2 bound)");
	assert_string_equal(kc_gang_state_name(s->gang.state), "waiting");
	cJSON_Delete(pods);
	cJSON_Delete(js);
	free(s);
}

/* A barrier that timed out, now or before kubelet restarted it, makes the
 * state timed-out; the release of record of the current epoch overrides it. */
static void timed_out_then_released(void **state)
{
	char texts[3][2048];
	cJSON *js = jobset(1, 0, 0, NULL, NULL), *pods, *release, *older;
	struct kc_status *s = malloc(sizeof(*s));

	(void)state;
	pod_text(texts[0], sizeof(texts[0]), "a", UID, 0, 1, "n1", TIMED_OUT, "Failed");
	pod_text(texts[1], sizeof(texts[1]), "b", UID, 0, 1, "n2", TIMED_OUT_BEFORE, "Pending");
	pod_text(texts[2], sizeof(texts[2]), "c", UID, 0, 1, "n3", RUNNING, "Pending");
	pods = pod_list(3, texts);
	build(js, pods, NULL, NULL, NULL, s);
	assert_int_equal(s->gang.state, KC_GANG_TIMED_OUT);
	assert_int_equal(s->gang.timed_out, 2);
	assert_int_equal(s->gang.started, 2);
	assert_string_equal(s->gang.why,
			    "2 pod(s) timed out at the barrier (after 30s) with 2 of 4 pods started");

	/* A release of an earlier generation does not release this one. */
	older = configmap("train" MUSTER_CONFIGMAP_SUFFIX, UID, "{\"started\":\"0\",\"generation\":\"0\"}");
	build(js, pods, older, NULL, NULL, s);
	assert_int_equal(s->gang.state, KC_GANG_TIMED_OUT);
	assert_int_equal(s->gang.record_has_release, 1);

	release = configmap("train" MUSTER_CONFIGMAP_SUFFIX, UID,
			    "{\"started\":\"0\",\"generation\":\"1\",\"jobset-uid\":\"" UID "\"}");
	build(js, pods, release, NULL, NULL, s);
	assert_int_equal(s->gang.state, KC_GANG_RELEASED);
	assert_string_equal(s->gang.record_time, "2026-01-01T10:00:09Z");
	assert_string_equal(s->gang.why, "");
	cJSON_Delete(release);
	cJSON_Delete(older);
	cJSON_Delete(pods);
	cJSON_Delete(js);
	free(s);
}

/* A release record some other JobSet owns releases nothing. */
static void a_foreign_record_is_not_ours(void **state)
{
	cJSON *js = jobset(1, 0, 0, NULL, NULL);
	cJSON *foreign = configmap("train" MUSTER_CONFIGMAP_SUFFIX, "someone-else", "{\"started\":\"0\"}");
	struct kc_status *s = malloc(sizeof(*s));
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	(void)state;
	build(js, NULL, foreign, NULL, NULL, s);
	assert_int_equal(s->gang.record_found, 1);
	assert_int_equal(s->gang.record_ours, 0);
	assert_int_equal(s->gang.state, KC_GANG_WAITING);
	kc_status_print(out, s);
	fclose(out);
	assert_non_null(
		strstr(text, "release of record: ConfigMap team/train-group-scheduling: not this JobSet's"));
	free(text);
	cJSON_Delete(foreign);
	cJSON_Delete(js);
	free(s);
}

static void no_gang_and_suspended(void **state)
{
	cJSON *plain = jobset(0, 0, 0, NULL, NULL),
	      *held = jobset(1, 0, 1, MUSTER_PLACEMENT_WAITING, "no room");
	struct kc_status *s = malloc(sizeof(*s));

	(void)state;
	build(plain, NULL, NULL, NULL, NULL, s);
	assert_int_equal(s->gang.state, KC_GANG_NONE);
	assert_non_null(strstr(s->gang.why, MUSTER_ANNOTATION_GROUP_TIMEOUT));
	build(held, NULL, NULL, NULL, NULL, s);
	assert_int_equal(s->gang.state, KC_GANG_SUSPENDED);
	assert_string_equal(s->placement.state, MUSTER_PLACEMENT_WAITING);
	assert_string_equal(s->placement.reason, "no room");
	cJSON_Delete(held);
	cJSON_Delete(plain);
	free(s);
}

/* The whole text of a placed JobSet waiting for its pods: each Job's
 * domain from the record, the Events oldest first. */
static void prints_the_whole_status(void **state)
{
	char texts[1][2048];
	cJSON *js = jobset(1, 0, 0, MUSTER_PLACEMENT_PLACED, NULL), *pods;
	cJSON *record = configmap(
		"train" MUSTER_PLACEMENT_SUFFIX, UID,
		"{\"placement\":\"{\\\"uid\\\":\\\"" UID "\\\",\\\"attempt\\\":0,\\\"replicatedJobs\\\":"
		"{\\\"workers\\\":[[[0,1,\\\"rack=r1\\\"]],[[0,0,\\\"rack=r1\\\"],[1,1,\\\"rack=r2\\\"]]]}}\"}");
	cJSON *events = parse("{\"items\":["
			      "{\"type\":\"Normal\",\"reason\":\"Placed\",\"message\":\"placed in rack r1\","
			      "\"lastTimestamp\":\"2026-01-01T10:00:02Z\",\"count\":1},"
			      "{\"type\":\"Warning\",\"reason\":\"PlacementWaiting\",\"message\":\"no room\","
			      "\"lastTimestamp\":\"2026-01-01T10:00:01Z\",\"count\":3}]}");
	struct kc_status *s = malloc(sizeof(*s));
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	(void)state;
	pod_text(texts[0], sizeof(texts[0]), "w-0-0", UID, 0, 1, "n1", RUNNING, "Pending");
	pods = pod_list(1, texts);
	build(js, pods, NULL, record, events, s);
	kc_status_print(out, s);
	fclose(out);
	assert_string_equal(
		text,
		"JobSet team/train (uid " UID "): attempt 0, gang generation 1\n"
		"gang start: waiting: 1 of 4 pods started (1 created, 1 bound)\n"
		"  expected 4, created 1, bound 1, started 1, at the barrier 1, past it 0, timed out 0; timeout 30s\n"
		"  release of record: ConfigMap team/train-group-scheduling: none yet\n"
		"placement: placed\n"
		"  placement of record: ConfigMap team/train-placement: attempt 0\n"
		"  workers-0: rack=r1 (2 pods)\n"
		"  workers-1: rack=r1 (2 pods, in 2 domains; the first shown)\n"
		"events (the last 10, oldest first):\n"
		"  2026-01-01T10:00:01Z Warning PlacementWaiting (x3): no room\n"
		"  2026-01-01T10:00:02Z Normal Placed: placed in rack r1\n");
	free(text);
	cJSON_Delete(events);
	cJSON_Delete(record);
	cJSON_Delete(pods);
	cJSON_Delete(js);
	free(s);
}

/* Of 12 Events the 10 newest are kept, oldest first; the JSON form holds
 * the same facts under stable keys. */
static void json_and_the_last_events(void **state)
{
	cJSON *js = jobset(1, 0, 0, MUSTER_PLACEMENT_WAITING, "3 racks are full"),
	      *events = parse("{\"items\":[]}");
	struct kc_status *s = malloc(sizeof(*s));
	cJSON *out, *gang, *list;
	char text[256];

	(void)state;
	for (int i = 11; i >= 0; i--) {
		snprintf(text, sizeof(text),
			 "{\"type\":\"Normal\",\"reason\":\"R%d\",\"message\":\"m\",\"eventTime\":"
			 "\"2026-01-01T10:00:%02d.000000Z\"}",
			 i, i);
		cJSON_AddItemToArray(cJSON_GetObjectItem(events, "items"), parse(text));
	}
	build(js, NULL, NULL, NULL, events, s);
	assert_int_equal(s->event_count, 10);
	assert_string_equal(s->events[0].reason, "R2");
	assert_string_equal(s->events[9].reason, "R11");
	out = kc_status_json(s);
	assert_non_null(out);
	gang = cJSON_GetObjectItem(out, "gang");
	assert_string_equal(cJSON_GetObjectItem(gang, "state")->valuestring, "waiting");
	assert_int_equal(cJSON_GetObjectItem(gang, "expected")->valueint, 4);
	assert_int_equal(cJSON_GetObjectItem(gang, "timeoutSeconds")->valueint, 30);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(gang, "released")));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "placement"), "reason")->valuestring,
			    "3 racks are full");
	list = cJSON_GetObjectItem(out, "events");
	assert_int_equal(cJSON_GetArraySize(list), 10);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 9), "reason")->valuestring, "R11");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "jobset"), "uid")->valuestring, UID);
	cJSON_Delete(out);
	cJSON_Delete(events);
	cJSON_Delete(js);
	free(s);
}

/* A JobSet the model refuses is a failure with the decoder's sentence. */
static void an_undecodable_jobset_fails(void **state)
{
	cJSON *js = parse("{\"metadata\":{\"name\":\"train\",\"namespace\":\"team\"},\"spec\":{}}");
	struct kc_status *s = malloc(sizeof(*s));
	char *cause = NULL;

	(void)state;
	assert_int_equal(kc_status_build(js, NULL, NULL, NULL, NULL, s, &cause), -1);
	assert_non_null(cause);
	free(cause);
	cJSON_Delete(js);
	free(s);
}

/* ---- kc_fetch against a fake API server (testing/path_transport) ---- */

/* The JobSet, its pods by label, both records (one absent), its Events
 * by uid: what the API is asked, and the summary of what it answers. */
static void fetches_what_status_needs(void **state)
{
	struct path_transport *f = calloc(1, sizeof(*f));
	struct kc_fetched got;
	struct kc_status *s = malloc(sizeof(*s));
	struct kube_client *client;
	char pod[2048], *cause = NULL, list[2200];

	(void)state;
	pod_text(pod, sizeof(pod), "w-0-0", UID, 0, 1, "n1", RUNNING, "Pending");
	snprintf(list, sizeof(list), "{\"metadata\":{},\"items\":[%s]}", pod);
	assert_int_equal(path_transport_add(f, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets/train",
					    200, jobset(1, 0, 0, MUSTER_PLACEMENT_WAITING, "no room")),
			 0);
	assert_int_equal(path_transport_add(f, "/api/v1/namespaces/team/pods", 200, parse(list)), 0);
	assert_int_equal(path_transport_add(f, "/api/v1/namespaces/team/configmaps/train-group-scheduling",
					    200,
					    configmap("train-group-scheduling", UID,
						      "{\"started\":\"0\",\"generation\":\"1\"}")),
			 0);
	assert_int_equal(
		path_transport_add(
			f, "/api/v1/namespaces/team/events", 200,
			parse("{\"metadata\":{},\"items\":[{\"type\":\"Warning\",\"reason\":\"PlacementWaiting\","
			      "\"message\":\"no room\",\"lastTimestamp\":\"2026-01-01T10:00:00Z\"}]}")),
		0);
	client = path_transport_client(f);
	assert_non_null(client);
	assert_int_equal(kc_fetch_status(client, "team", "train", &got, &cause), 0);
	assert_null(cause);
	assert_null(got.placement);
	assert_non_null(got.release);
	assert_int_equal(f->asked_count, 5);
	assert_non_null(strstr(f->asked[1], "labelSelector=jobset.sigs.k8s.io%2Fjobset-name%3Dtrain"));
	assert_non_null(strstr(f->asked[4], "fieldSelector=involvedObject.uid%3D" UID));
	build(got.jobset, got.pods, got.release, got.placement, got.events, s);
	assert_int_equal(s->gang.state, KC_GANG_RELEASED);
	assert_int_equal(s->gang.created, 1);
	assert_int_equal(s->event_count, 1);
	assert_string_equal(s->placement.reason, "no room");
	kc_fetched_free(&got);

	/* Absent JobSet: not found, nothing else asked. */
	f->asked_count = 0;
	assert_int_equal(kc_fetch_status(client, "team", "absent", &got, &cause), MUSTER_ENOTFOUND);
	assert_int_equal(f->asked_count, 1);
	assert_null(got.jobset);
	free(cause);
	kube_client_free(client);
	path_transport_clear(f);
	free(f);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_the_current_pods),	cmocka_unit_test(timed_out_then_released),
		cmocka_unit_test(a_foreign_record_is_not_ours), cmocka_unit_test(no_gang_and_suspended),
		cmocka_unit_test(prints_the_whole_status),	cmocka_unit_test(json_and_the_last_events),
		cmocka_unit_test(an_undecodable_jobset_fails),	cmocka_unit_test(fetches_what_status_needs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
