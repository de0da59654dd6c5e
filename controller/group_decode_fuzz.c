/*
 * libFuzzer target for group_decode: any bytes must decode or fail cleanly
 * with a cause, and what decodes must hold the promised bounds. The first
 * byte picks the decoder (JobSet, pod, watch line); a decoded JobSet also
 * goes through the expected-count rule and a tracker, and a decoded pod
 * through a tracker, so the whole core sees hostile values.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "group_decode.h"
#include "group_expect.h"
#include "group_tracker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_string(const char *s, size_t max)
{
	if (strnlen(s, max + 1) > max)
		abort();
}

static void check_pod(const struct group_pod *pod)
{
	check_string(pod->uid, MODEL_UID_MAX);
	check_string(pod->name, MODEL_OBJECT_NAME_MAX);
	check_string(pod->namespace, MODEL_LABEL_MAX);
	check_string(pod->jobset_name, MODEL_LABEL_MAX);
	check_string(pod->replicated_job, MODEL_LABEL_MAX);
	if (!pod->uid[0] || !pod->name[0] || (pod->has_attempt && pod->attempt > KJSON_INT32_MAX))
		abort();
	if (pod->ip_family != 0 && pod->ip_family != 4 && pod->ip_family != 6)
		abort();
}

/* Feeds the pod to a tracker of a JobSet shaped after it, under every event. */
static void track_pod(const struct group_pod *pod)
{
	static struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	char *cause = NULL;

	memset(&js, 0, sizeof(js));
	memcpy(js.namespace, pod->namespace, sizeof(js.namespace));
	memcpy(js.name, pod->jobset_name, sizeof(js.name));
	memcpy(js.uid, "u", 2);
	js.has_config = 1;
	js.replicated_job_count = 1;
	memcpy(js.replicated_jobs[0].name, pod->replicated_job, sizeof(js.replicated_jobs[0].name));
	js.replicated_jobs[0].replicas = js.replicated_jobs[0].parallelism =
		js.replicated_jobs[0].completions = 1;
	js.replicated_jobs[0].targeted = 1;
	js.restarts = pod->has_attempt ? pod->attempt : 0;
	t = group_tracker_new(&js, 4, &cause);
	if (!t) {
		free(cause);
		return;
	}
	group_tracker_relist_begin(t);
	group_tracker_relist_end(t);
	group_tracker_set_none_released(t);
	(void)group_tracker_apply_pod(t, pod, GROUP_EVENT_ADDED, 1);
	group_tracker_decide(t, &d);
	if (d.started > 1 || d.tracked > 1 || (d.action == GROUP_ACTION_RELEASE && d.started != 1))
		abort();
	(void)group_tracker_apply_pod(t, pod, GROUP_EVENT_MODIFIED, 2);
	(void)group_tracker_apply_pod(t, pod, GROUP_EVENT_DELETED, 3);
	group_tracker_decide(t, &d);
	if (d.started != 0 || d.tracked != 0)
		abort();
	group_tracker_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jobset_model jobset;
	struct group_pod pod;
	enum group_event event;
	char *cause = NULL;
	char *copy;
	int rc;

	if (size < 1)
		return 0;
	/* A private copy without a terminating NUL: an over-read trips ASan. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	switch (data[0] % 3) {
	case 0:
		rc = jobset_model_parse(copy, size - 1, &jobset, &cause);
		if (rc == 0) {
			struct group_tracker *t;

			check_string(jobset.name, MODEL_LABEL_MAX);
			if (jobset.replicated_job_count > JOBSET_MODEL_RJOBS_MAX ||
			    jobset.target_count > JOBSET_MODEL_RJOBS_MAX || jobset.restarts > KJSON_INT32_MAX)
				abort();
			(void)group_expected_pods(&jobset);
			t = group_tracker_new(&jobset, 16, &cause);
			if (t && group_tracker_set_jobset(t, &jobset, 0, &cause) != 0)
				abort();
			group_tracker_free(t);
		}
		break;
	case 1:
		rc = group_pod_decode(copy, size - 1, &pod, &cause);
		if (rc == 0) {
			check_pod(&pod);
			track_pod(&pod);
		}
		break;
	default:
		rc = group_watch_pod_decode(copy, size - 1, &event, &pod, &cause);
		if (rc == 0) {
			check_pod(&pod);
			if (event != GROUP_EVENT_ADDED && event != GROUP_EVENT_MODIFIED &&
			    event != GROUP_EVENT_DELETED)
				abort();
		}
		break;
	}
	if (rc != 0 && !cause)
		abort();
	free(cause);
	free(copy);
	return 0;
}
