/*
 * replay_bench: the controller's pod-event rate on one core, measured by
 * replaying a watch stream recorded from the real control plane.
 *
 *     replay_bench [--pods FILE] [--jobsets FILE] [--all-cpus]
 *
 * The files are what bench/release_latency.py records during its
 * 5,000-pod run: the raw pod watch stream (one JSON event per line, bytes as
 * the apiserver sent them) and the JobSet watch stream. The whole controller
 * runs (controller_group: its four API clients, watch threads, lock, hash
 * table, decoder, tracker, release write and side thread) over a fake
 * transport that serves the JobSet as it was first recorded, empty pod
 * LISTs, 404 for the ConfigMap, and then the recorded pod stream as fast as
 * the controller takes it. The figure is recorded lines divided by the time
 * from the first line handed over to the last one consumed, for each of
 * --rounds (default 5) rounds with a new controller each: best, median and
 * worst are printed (the machines are noisy). The process is pinned to one
 * CPU (all threads share it) unless --all-cpus.
 *
 * It checks that the replay ends as the real run did: the JobSet released
 * with started == expected. Pushes go to port 1 of the recorded pod IPs,
 * where nothing listens (no live barrier can be released by the bench).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "controller_group.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_transport.h"
#include "mlog.h"

struct lines {
	char *data; /* the whole file */
	size_t size;
	size_t count;
	const char **starts;
	size_t *lens;
};

struct fake {
	struct lines pods;
	char *jobset_list; /* the LIST body served for JobSets */
	atomic_int jobsets_streaming; /* the JobSet watch has listed and opened its stream */
	atomic_int pod_streams;
	atomic_int delivered;
	struct timespec first, last;
	size_t consumed;
	atomic_uint_least64_t requests;
};

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static int read_file(const char *path, char **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	long end;

	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -1;
	}
	*data = malloc((size_t)end + 1);
	if (!*data || fread(*data, 1, (size_t)end, f) != (size_t)end) {
		free(*data);
		fclose(f);
		return -1;
	}
	(*data)[end] = '\0';
	*size = (size_t)end;
	fclose(f);
	return 0;
}

static int split_lines(struct lines *lines)
{
	size_t capacity = 1024;

	lines->starts = malloc(capacity * sizeof(*lines->starts));
	lines->lens = malloc(capacity * sizeof(*lines->lens));
	if (!lines->starts || !lines->lens)
		return -1;
	for (char *p = lines->data, *end = lines->data + lines->size; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (len) {
			if (lines->count == capacity) {
				capacity *= 2;
				lines->starts = realloc(lines->starts, capacity * sizeof(*lines->starts));
				lines->lens = realloc(lines->lens, capacity * sizeof(*lines->lens));
				if (!lines->starts || !lines->lens)
					return -1;
			}
			lines->starts[lines->count] = p;
			lines->lens[lines->count] = len;
			lines->count++;
		}
		p += len + 1;
	}
	return 0;
}

/* The JobSet LIST: every JobSet of the recording as first seen. */
static char *jobset_list_body(const char *path)
{
	char *data = NULL, *text = NULL;
	size_t size;
	cJSON *list = cJSON_CreateObject(), *items, *uids = cJSON_CreateObject(), *metadata;

	if (!list || !uids || read_file(path, &data, &size) != 0)
		goto out;
	if (!(metadata = cJSON_AddObjectToObject(list, "metadata")) ||
	    !cJSON_AddStringToObject(metadata, "resourceVersion", "1") ||
	    !cJSON_AddStringToObject(list, "kind", "JobSetList") ||
	    !(items = cJSON_AddArrayToObject(list, "items")))
		goto out;
	for (char *line = data, *end = data + size; line < end;) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
		cJSON *event = cJSON_ParseWithLength(line, len);
		cJSON *object = cJSON_GetObjectItemCaseSensitive(event, "object");
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(object, "metadata"), "uid");

		if (cJSON_IsString(uid) && !cJSON_GetObjectItemCaseSensitive(uids, uid->valuestring)) {
			cJSON_AddTrueToObject(uids, uid->valuestring);
			cJSON_AddItemToArray(items, cJSON_DetachItemFromObjectCaseSensitive(event, "object"));
		}
		cJSON_Delete(event);
		line += len + 1;
	}
	if (cJSON_GetArraySize(items) > 0)
		text = cJSON_PrintUnformatted(list);
out:
	cJSON_Delete(list);
	cJSON_Delete(uids);
	free(data);
	return text;
}

static int respond(struct kube_response *resp, long status, const char *body)
{
	resp->status = status;
	resp->body_len = strlen(body);
	resp->body = malloc(resp->body_len + 1);
	if (!resp->body)
		return MUSTER_ENOMEM;
	memcpy(resp->body, body, resp->body_len + 1);
	return MUSTER_OK;
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *fake = ctx;

	(void)cause;
	atomic_fetch_add(&fake->requests, 1);
	if (req->method == KUBE_METHOD_POST)
		return respond(resp, 201, "{}");
	if (req->method == KUBE_METHOD_PATCH || req->method == KUBE_METHOD_PUT)
		return respond(resp, 200, "{}");
	if (req->method == KUBE_METHOD_DELETE)
		return respond(resp, 200, "{}");
	if (strstr(req->path, "/configmaps/"))
		return respond(resp, 404, "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}");
	if (strncmp(req->path, "/apis/jobset.x-k8s.io/", 22) == 0)
		return respond(resp, 200, fake->jobset_list);
	return respond(resp, 200,
		       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}");
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	struct fake *fake = ctx;

	(void)idle_timeout_s;
	(void)error_body;
	(void)cause;
	atomic_fetch_add(&fake->requests, 1);
	*status = 200;
	if (strncmp(req->path, "/apis/jobset.x-k8s.io/", 22) == 0) {
		atomic_store(&fake->jobsets_streaming, 1);
	} else if (atomic_fetch_add(&fake->pod_streams, 1) == 0) {
		/* The JobSet must be tracked first, as in the real run. */
		while (!atomic_load(&fake->jobsets_streaming) && !atomic_load(stop))
			pause_ms(1);
		clock_gettime(CLOCK_MONOTONIC, &fake->first);
		for (size_t i = 0; i < fake->pods.count && !atomic_load(stop); i++) {
			if (fake->pods.lens[i] > max_line)
				return MUSTER_ETOOBIG;
			fake->consumed++;
			if (on_line(arg, fake->pods.starts[i], fake->pods.lens[i]))
				break;
		}
		clock_gettime(CLOCK_MONOTONIC, &fake->last);
		atomic_store(&fake->delivered, 1);
	}
	while (!atomic_load(stop))
		pause_ms(10);
	return MUSTER_OK;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

struct runner {
	struct controller_group *group;
	atomic_int stop;
	int err;
	char *cause;
};

static void *run_main(void *arg)
{
	struct runner *runner = arg;

	runner->err = controller_group_run(runner->group, &runner->stop, &runner->cause);
	return NULL;
}

struct released {
	size_t jobsets, released;
	uint64_t started, expected, records, bytes;
};

static void count_released(void *arg, const struct controller_jobset_view *view)
{
	struct released *r = arg;

	r->jobsets++;
	if (view->decision.action == GROUP_ACTION_RELEASED)
		r->released++;
	r->started += view->decision.started;
	r->expected += view->decision.expected;
	r->records += view->pod_records;
	r->bytes += view->pod_bytes;
}

/* Busy fraction of all CPUs over `ms`, from /proc/stat; -1 if unreadable. */
static double cpu_busy(long ms)
{
	unsigned long long before[8] = { 0 }, after[8] = { 0 };
	unsigned long long *sets[2] = { before, after };

	for (int k = 0; k < 2; k++) {
		FILE *f = fopen("/proc/stat", "r");
		unsigned long long *v = sets[k];

		if (!f)
			return -1;
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
			   &v[4], &v[5], &v[6], &v[7]) != 8) {
			fclose(f);
			return -1;
		}
		fclose(f);
		if (k == 0)
			pause_ms(ms);
	}
	{
		unsigned long long total = 0, idle = (after[3] - before[3]) + (after[4] - before[4]);

		for (int i = 0; i < 8; i++)
			total += after[i] - before[i];
		return total ? 1.0 - (double)idle / (double)total : -1;
	}
}

/* Waits (at most max_s) until the machine has been quiet for two seconds in
 * a row: run after the 5,000-pod benchmark, the control plane is still
 * deleting its pods for a while, and one pinned CPU shared with that is not
 * the figure we want. Returns the seconds waited. */
static int wait_quiet(int max_s, double *busy)
{
	int quiet = 0, waited = 0;

	for (; waited < max_s && quiet < 2; waited++) {
		*busy = cpu_busy(1000);
		quiet = *busy >= 0 && *busy < 0.10 ? quiet + 1 : 0;
	}
	return waited;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	const char *pods_path = "build/bench/watch-5000/pods.jsonl";
	const char *jobsets_path = "build/bench/watch-5000/jobsets.jsonl";
	int one_cpu = 1;
	struct fake fake;
	struct kube_config cfg;
	struct controller_group_options options = {
		.push_port = 1,
		.push_parallelism = 256,
		.push_target_timeout_ms = 200,
		.push_total_timeout_ms = 1000,
		.transport = &fake_transport,
	};
	struct released released = { 0 };
	pthread_t thread;
	long rss_before, rss_after, first_growth_kb = 0;
	int rounds = 5;
	double rates[32] = { 0 };

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc)
			pods_path = argv[++i];
		else if (strcmp(argv[i], "--jobsets") == 0 && i + 1 < argc)
			jobsets_path = argv[++i];
		else if (strcmp(argv[i], "--all-cpus") == 0)
			one_cpu = 0;
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = (int)strtol(argv[++i], NULL, 10);
		else
			rounds = 0; /* a usage error */
		if (rounds < 1 || rounds > 32) {
			fprintf(stderr,
				"usage: replay_bench [--pods FILE] [--jobsets FILE] [--all-cpus] [--rounds 1..32]\n");
			return 2;
		}
	}
	memset(&fake, 0, sizeof(fake));
	if (read_file(pods_path, &fake.pods.data, &fake.pods.size) != 0 || split_lines(&fake.pods) != 0) {
		fprintf(stderr,
			"replay_bench: cannot read %s: %s\n"
			"  record one with: /usr/bin/python3 bench/release_latency.py (part of make bench)\n",
			pods_path, strerror(errno));
		return 2;
	}
	fake.jobset_list = jobset_list_body(jobsets_path);
	if (!fake.jobset_list) {
		fprintf(stderr, "replay_bench: no JobSet in %s\n", jobsets_path);
		return 2;
	}
	if (one_cpu) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			perror("replay_bench: sched_setaffinity (going on unpinned)");
	}
	mlog_init("replay-bench", NULL, NULL);
	kube_config_defaults(&cfg);
	cfg.qps = 0; /* the rate limiter is not what is measured */
	options.transport_ctx = &fake;
	{
		double busy = -1;
		int waited = wait_quiet(180, &busy);

		printf("replay_bench: waited %d s for a quiet machine (all CPUs %.0f %% busy over the last second)\n",
		       waited, busy * 100);
	}
	for (int round = 0; round < rounds; round++) {
		struct runner runner = { 0 };

		atomic_store(&fake.jobsets_streaming, 0);
		atomic_store(&fake.pod_streams, 0);
		atomic_store(&fake.delivered, 0);
		fake.consumed = 0;
		rss_before = rss_kb();
		if (controller_group_new(&cfg, &options, &runner.group, &runner.cause) != 0) {
			fprintf(stderr, "replay_bench: %s\n",
				runner.cause ? runner.cause : "cannot make the controller");
			return 1;
		}
		if (pthread_create(&thread, NULL, run_main, &runner) != 0) {
			fprintf(stderr, "replay_bench: cannot start a thread\n");
			return 1;
		}
		while (!atomic_load(&fake.delivered))
			pause_ms(5);
		/* The release is written on the watch thread as the last start
		 * is applied; give the side thread a moment for the push. */
		for (int i = 0; i < 500; i++) {
			memset(&released, 0, sizeof(released));
			controller_group_foreach(runner.group, count_released, &released);
			if (released.jobsets && released.released == released.jobsets)
				break;
			pause_ms(10);
		}
		rss_after = rss_kb();
		atomic_store(&runner.stop, 1);
		pthread_join(thread, NULL);
		controller_group_free(runner.group);
		free(runner.cause);
		rates[round] = seconds_between(&fake.first, &fake.last) > 0
				       ? (double)fake.consumed / seconds_between(&fake.first, &fake.last)
				       : 0.0;
		fprintf(stderr, "replay_bench: round %d: %.0f events/s\n", round + 1, rates[round]);
		if (round == 0)
			first_growth_kb = rss_after - rss_before;
		if (!released.jobsets || released.released != released.jobsets)
			break;
	}
	qsort(rates, (size_t)rounds, sizeof(rates[0]), compare_double);
	printf("replay_bench: %zu recorded pod watch events from %s, %s, %d rounds (a new controller each)\n",
	       fake.consumed, pods_path, one_cpu ? "pinned to one CPU" : "all CPUs", rounds);
	printf("  events/s through the whole controller: best %.0f, median %.0f, worst %.0f (goal >= 20,000)\n",
	       rates[rounds - 1], rates[rounds / 2], rates[0]);
	printf("  JobSets %zu, released %zu, started %llu of %llu expected\n", released.jobsets,
	       released.released, (unsigned long long)released.started,
	       (unsigned long long)released.expected);
	if (released.records)
		printf("  tracker: %llu pod records, %.0f B per record; process RSS grew %ld KB in the first "
		       "round (%.0f B per pod)\n",
		       (unsigned long long)released.records,
		       (double)released.bytes / (double)released.records, first_growth_kb,
		       (double)first_growth_kb * 1024.0 / (double)released.records);
	free(fake.jobset_list);
	free(fake.pods.starts);
	free(fake.pods.lens);
	free(fake.pods.data);
	if (!released.jobsets || released.released != released.jobsets) {
		fprintf(stderr, "replay_bench: the replay did not end released as the recorded run did\n");
		return 1;
	}
	return 0;
}
