/*
 * group_bench: pod-event throughput and memory per pod of the group-start
 * core, on one core.
 *
 * It records a watch stream of a 5,000-pod JobSet (by default) as JSON lines,
 * one event per line as the apiserver sends them: ADDED (pending), MODIFIED
 * (bound to a node), MODIFIED (barrier container waiting, pod IP set),
 * MODIFIED (barrier running), each carrying the whole pod (about 3.5 KB, with
 * managedFields, as a real pod has). It then replays the stream as the
 * controller will: decode the line, apply it to the tracker, decide after
 * every event. Figures printed: events/s for the whole path and for the
 * tracker alone, and tracker memory per pod, both as requested bytes
 * (group_tracker_memory) and as glibc heap in use (mallinfo2 before and after,
 * which includes the allocator's per-chunk overhead).
 *
 *   group_bench [pods [stream-file]]   stream-file: also write the stream there
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group_decode.h"
#include "group_expect.h"
#include "group_tracker.h"

#define LINE_MAX_BYTES 8192
#define REPEATS 5

enum stage { STAGE_PENDING, STAGE_BOUND, STAGE_WAITING, STAGE_RUNNING, STAGE_COUNT };

struct stream {
	char *data;
	size_t used, size;
	size_t *offsets; /* start of each line */
	size_t lines;
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append_pod_event(struct stream *s, int pods_per_job, int index, enum stage stage,
			     unsigned long rv)
{
	static const char *const status_by_stage[STAGE_COUNT] = {
		[STAGE_PENDING] = "{\"phase\":\"Pending\",\"qosClass\":\"Burstable\"}",
		[STAGE_BOUND] =
			"{\"phase\":\"Pending\",\"qosClass\":\"Burstable\",\"conditions\":[{\"type\":"
			"\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":"
			"\"2026-11-21T07:00:01Z\"}]}",
		[STAGE_WAITING] = "WAITING",
		[STAGE_RUNNING] = "RUNNING",
	};
	char status[1536];
	int job = index / pods_per_job, completion = index % pods_per_job;
	int n;

	if (stage >= STAGE_WAITING)
		snprintf(
			status, sizeof(status),
			"{\"phase\":\"Pending\",\"qosClass\":\"Burstable\",\"hostIP\":\"10.128.%d.%d\","
			"\"podIP\":\"10.%d.%d.%d\",\"podIPs\":[{\"ip\":\"10.%d.%d.%d\"}],"
			"\"startTime\":\"2026-11-21T07:00:02Z\",\"conditions\":["
			"{\"type\":\"PodReadyToStartContainers\",\"status\":\"True\",\"lastProbeTime\":null,"
			"\"lastTransitionTime\":\"2026-11-21T07:00:03Z\"},"
			"{\"type\":\"Initialized\",\"status\":\"False\",\"lastProbeTime\":null,\"lastTransitionTime\":"
			"\"2026-11-21T07:00:02Z\",\"reason\":\"ContainersNotInitialized\",\"message\":\"containers with "
			"incomplete status: [group-scheduling-init]\"},"
			"{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":"
			"\"2026-11-21T07:00:01Z\"}],"
			"\"initContainerStatuses\":[{\"name\":\"group-scheduling-init\",\"state\":%s,\"lastState\":{},"
			"\"ready\":false,\"restartCount\":0,\"image\":\"ghcr.io/muster/barrier:v0.1.0\",\"imageID\":\"\","
			"\"started\":%s}],"
			"\"containerStatuses\":[{\"name\":\"pytorch\",\"state\":{\"waiting\":{\"reason\":"
			"\"PodInitializing\"}},\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":"
			"\"pytorch/pytorch:latest\",\"imageID\":\"\",\"started\":false}]}",
			index / 250, index % 250, 64 + index / 65536, (index / 256) % 256, index % 256,
			64 + index / 65536, (index / 256) % 256, index % 256,
			stage == STAGE_RUNNING ? "{\"running\":{\"startedAt\":\"2026-11-21T07:00:04Z\"}}"
					       : "{\"waiting\":{\"reason\":\"PodInitializing\"}}",
			stage == STAGE_RUNNING ? "true" : "false");
	else
		snprintf(status, sizeof(status), "%s", status_by_stage[stage]);
	if (s->size - s->used < LINE_MAX_BYTES) {
		s->size *= 2;
		s->data = realloc(s->data, s->size);
		if (!s->data) {
			perror("realloc");
			exit(1);
		}
	}
	s->offsets[s->lines++] = s->used;
	n = snprintf(
		s->data + s->used, LINE_MAX_BYTES,
		"{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
		"\"name\":\"my-jobset-workers-%d-%d-x%04d\",\"generateName\":\"my-jobset-workers-%d-%d-\","
		"\"namespace\":\"default\",\"uid\":\"%08x-6c1e-4f3a-9d2b-%012x\",\"resourceVersion\":\"%lu\","
		"\"creationTimestamp\":\"2026-11-21T07:00:00Z\",\"labels\":{"
		"\"batch.kubernetes.io/controller-uid\":\"1b0c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e\","
		"\"batch.kubernetes.io/job-completion-index\":\"%d\",\"batch.kubernetes.io/job-name\":\"my-jobset-workers-%d\","
		"\"controller-uid\":\"1b0c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e\",\"job-name\":\"my-jobset-workers-%d\","
		"\"jobset.sigs.k8s.io/global-replicas\":\"50\",\"jobset.sigs.k8s.io/group-name\":\"default\","
		"\"jobset.sigs.k8s.io/job-global-index\":\"%d\",\"jobset.sigs.k8s.io/job-index\":\"%d\","
		"\"jobset.sigs.k8s.io/job-key\":\"3f6c0a4e5b2d1c9f8e7a6b5c4d3e2f1a0b9c8d7e\","
		"\"jobset.sigs.k8s.io/jobset-name\":\"my-jobset\",\"jobset.sigs.k8s.io/jobset-uid\":"
		"\"0b7c1d2e-1111-4222-8333-444455556666\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"workers\","
		"\"jobset.sigs.k8s.io/replicatedjob-replicas\":\"50\",\"jobset.sigs.k8s.io/restart-attempt\":\"0\"},"
		"\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"%d\","
		"\"jobset.sigs.k8s.io/jobset-name\":\"my-jobset\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"workers\","
		"\"jobset.sigs.k8s.io/restart-attempt\":\"0\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"my-jobset-workers-%d\","
		"\"uid\":\"1b0c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e\",\"controller\":true,\"blockOwnerDeletion\":true}],"
		"\"finalizers\":[\"batch.kubernetes.io/job-tracking\"],"
		"\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":"
		"\"v1\",\"time\":\"2026-11-21T07:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{"
		"\"f:annotations\":{\".\":{},\"f:batch.kubernetes.io/job-completion-index\":{}},\"f:finalizers\":{"
		"\".\":{},\"v:\\\"batch.kubernetes.io/job-tracking\\\"\":{}},\"f:generateName\":{},\"f:labels\":{"
		"\".\":{},\"f:batch.kubernetes.io/controller-uid\":{},\"f:job-name\":{}},\"f:ownerReferences\":{"
		"\".\":{},\"k:{\\\"uid\\\":\\\"1b0c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e\\\"}\":{}}},\"f:spec\":{"
		"\"f:containers\":{\"k:{\\\"name\\\":\\\"pytorch\\\"}\":{\".\":{},\"f:command\":{},\"f:image\":{},"
		"\"f:name\":{},\"f:resources\":{}}},\"f:initContainers\":{},\"f:restartPolicy\":{},\"f:subdomain\":{},"
		"\"f:volumes\":{}}}},{\"manager\":\"kubelet\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
		"\"time\":\"2026-11-21T07:00:03Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{"
		"\"f:conditions\":{},\"f:initContainerStatuses\":{},\"f:podIP\":{},\"f:startTime\":{}}},"
		"\"subresource\":\"status\"}]},"
		"\"spec\":{\"volumes\":[{\"name\":\"group-scheduling\",\"configMap\":{\"name\":"
		"\"my-jobset-group-scheduling\",\"defaultMode\":420,\"optional\":true}},{\"name\":\"kube-api-access-abcde\","
		"\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}}],"
		"\"defaultMode\":420}}],\"initContainers\":[{\"name\":\"group-scheduling-init\",\"image\":"
		"\"ghcr.io/muster/barrier:v0.1.0\",\"args\":[\"--attempt=0\",\"--timeout=300\"],\"resources\":{},"
		"\"volumeMounts\":[{\"name\":\"group-scheduling\",\"mountPath\":\"/mnt/group-scheduling\"}],"
		"\"imagePullPolicy\":\"IfNotPresent\"}],\"containers\":[{\"name\":\"pytorch\",\"image\":"
		"\"pytorch/pytorch:latest\",\"command\":[\"bash\",\"-c\",\"train.py\"],\"env\":[{\"name\":"
		"\"JOB_COMPLETION_INDEX\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
		"\"metadata.labels['batch.kubernetes.io/job-completion-index']\"}}}],\"resources\":{\"limits\":{"
		"\"nvidia.com/gpu\":\"8\"},\"requests\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"nvidia.com/gpu\":\"8\"}},"
		"\"terminationMessagePath\":\"/dev/termination-log\",\"imagePullPolicy\":\"Always\"}],"
		"\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
		"\"serviceAccountName\":\"default\",%s\"hostname\":\"my-jobset-workers-%d-%d\",\"subdomain\":"
		"\"my-jobset\",\"schedulerName\":\"default-scheduler\",\"tolerations\":[{\"key\":"
		"\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
		"\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true,\"preemptionPolicy\":"
		"\"PreemptLowerPriority\"},\"status\":%s}}\n",
		stage == STAGE_PENDING ? "ADDED" : "MODIFIED", job, completion, index % 10000, job,
		completion, (unsigned)index * 2654435761u, (unsigned)index, rv, completion, job, job, job,
		job, completion, job, stage >= STAGE_BOUND ? "\"nodeName\":\"gke-a3-pool-node-0000\"," : "",
		job, completion, status);
	if (n < 0 || n >= LINE_MAX_BYTES) {
		fprintf(stderr, "line too long\n");
		exit(1);
	}
	s->used += (size_t)n;
}

static const char jobset_json[] =
	"{\"metadata\":{\"name\":\"my-jobset\",\"namespace\":\"default\",\"uid\":\"0b7c1d2e-1111-4222-8333-444455556666\"},"
	"\"spec\":{\"groupSchedulingConfig\":{\"timeoutAfterSeconds\":300},\"replicatedJobs\":[{\"name\":\"workers\","
	"\"replicas\":%d,\"template\":{\"spec\":{\"parallelism\":%d,\"completions\":%d}}}]},\"status\":{\"restarts\":0}}";

static struct group_tracker *ready_tracker(const struct jobset_model *js)
{
	char *cause = NULL;
	struct group_tracker *t = group_tracker_new(js, 0, &cause);

	if (!t) {
		fprintf(stderr, "tracker: %s\n", cause ? cause : "out of memory");
		exit(1);
	}
	group_tracker_relist_begin(t);
	group_tracker_relist_end(t);
	group_tracker_set_none_released(t);
	return t;
}

int main(int argc, char **argv)
{
	int pods = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5000;
	int pods_per_job = 100;
	struct stream s = { 0 };
	struct jobset_model js;
	struct group_pod *decoded;
	enum group_event *events;
	char json[1024];
	char *cause = NULL;
	double best_full = 1e30, best_tracker = 1e30, best_decode = 1e30;
	size_t heap_per_pod = 0, requested_per_pod = 0;
	unsigned long rv = 1000;

	if (pods < pods_per_job || pods % pods_per_job || pods > 1000000) {
		fprintf(stderr, "usage: group_bench [pods, a multiple of 100] [stream-file]\n");
		return 2;
	}
	snprintf(json, sizeof(json), jobset_json, pods / pods_per_job, pods_per_job, pods_per_job);
	if (jobset_model_parse(json, strlen(json), &js, &cause)) {
		fprintf(stderr, "jobset: %s\n", cause);
		return 1;
	}
	s.size = 1 << 20;
	s.data = malloc(s.size);
	s.offsets = calloc((size_t)pods * STAGE_COUNT + 1, sizeof(*s.offsets));
	decoded = calloc((size_t)pods * STAGE_COUNT, sizeof(*decoded));
	events = calloc((size_t)pods * STAGE_COUNT, sizeof(*events));
	if (!s.data || !s.offsets || !decoded || !events) {
		perror("malloc");
		return 1;
	}
	/* Stage by stage, as the pods of a large group move in waves. */
	for (int stage = 0; stage < STAGE_COUNT; stage++)
		for (int i = 0; i < pods; i++)
			append_pod_event(&s, pods_per_job, i, (enum stage)stage, rv++);
	s.offsets[s.lines] = s.used;
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");

		if (!f || fwrite(s.data, 1, s.used, f) != s.used || fclose(f)) {
			perror(argv[2]);
			return 1;
		}
	}

	for (int round = 0; round < REPEATS; round++) {
		struct group_tracker *t;
		struct group_decision d;
		int releases = 0;
		size_t heap_before;
		double start, full, tracker_only, decode_only;

		/* Whole path: decode, apply, decide. */
		heap_before = mallinfo2().uordblks;
		t = ready_tracker(&js);
		start = now_seconds();
		for (size_t i = 0; i < s.lines; i++) {
			const char *line = s.data + s.offsets[i];
			size_t len = s.offsets[i + 1] - s.offsets[i] - 1;

			if (group_watch_pod_decode(line, len, &events[i], &decoded[i], &cause)) {
				fprintf(stderr, "line %zu: %s\n", i, cause);
				return 1;
			}
			group_tracker_apply_pod(t, &decoded[i], events[i], i);
			group_tracker_decide(t, &d);
			if (d.action == GROUP_ACTION_RELEASE) {
				releases++;
				group_tracker_release_done(t, d.attempt);
			}
		}
		full = now_seconds() - start;
		if (releases != 1 || d.started != (uint64_t)pods) {
			fprintf(stderr, "wrong outcome: %d releases, %llu started\n", releases,
				(unsigned long long)d.started);
			return 1;
		}
		heap_per_pod = (mallinfo2().uordblks - heap_before) / (size_t)pods;
		requested_per_pod = group_tracker_memory(t) / (size_t)pods;
		group_tracker_free(t);

		/* The tracker alone, on the decoded events. */
		t = ready_tracker(&js);
		start = now_seconds();
		for (size_t i = 0; i < s.lines; i++) {
			group_tracker_apply_pod(t, &decoded[i], events[i], i);
			group_tracker_decide(t, &d);
		}
		tracker_only = now_seconds() - start;
		group_tracker_free(t);

		/* Decoding alone. */
		start = now_seconds();
		for (size_t i = 0; i < s.lines; i++) {
			const char *line = s.data + s.offsets[i];
			size_t len = s.offsets[i + 1] - s.offsets[i] - 1;

			(void)group_watch_pod_decode(line, len, &events[i], &decoded[i], &cause);
		}
		decode_only = now_seconds() - start;
		if (full < best_full)
			best_full = full;
		if (tracker_only < best_tracker)
			best_tracker = tracker_only;
		if (decode_only < best_decode)
			best_decode = decode_only;
	}
	printf("stream: %d pods, %zu events, %.0f bytes per event on average, %.1f MB\n", pods, s.lines,
	       (double)s.used / (double)s.lines, (double)s.used / 1e6);
	printf("decode+apply+decide: %.0f events/s (%.1f MB/s), best of %d\n", (double)s.lines / best_full,
	       (double)s.used / best_full / 1e6, REPEATS);
	printf("decode only:         %.0f events/s\n", (double)s.lines / best_decode);
	printf("apply+decide only:   %.0f events/s\n", (double)s.lines / best_tracker);
	printf("tracker memory: %zu bytes per pod requested, %zu bytes per pod of glibc heap (mallinfo2)\n",
	       requested_per_pod, heap_per_pod);
	free(s.data);
	free(s.offsets);
	free(decoded);
	free(events);
	return 0;
}
