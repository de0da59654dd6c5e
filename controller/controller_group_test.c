/*
 * Unit tests of controller_group (the whole loop: watches, registry,
 * release write, side thread) against a fake transport: a JobSet of 4
 * targeted pods, pod events fed as watch lines (shuffled, duplicated, stale),
 * and the ConfigMap's owner scripted. Checks what the controller writes:
 * exactly one release of record per attempt, none when the ConfigMap already
 * says so, never over somebody else's ConfigMap, a predecessor's leftover
 * replaced, timeouts reported once.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "controller_group.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_transport.h"

#define MAX_LINES 64
#define MAX_LOG 256

enum configmap_state { CM_ABSENT, CM_OURS_RELEASED_0, CM_PREDECESSOR, CM_FOREIGN };

struct fake {
	pthread_mutex_t lock;
	enum configmap_state configmap;
	int configmap_created; /* a POST succeeded: GET now answers ours */
	const char *lines[MAX_LINES];
	size_t line_count;
	int jobsets_streaming;
	const char *jobset_list; /* NULL: JOBSET_LIST */
	char log[MAX_LOG][160]; /* "POST /api/v1/namespaces/ns/configmaps" ... */
	char bodies[MAX_LOG][1024];
	size_t log_count;
	long post_delay_ms; /* a ConfigMap POST is answered this late */
	long get_delay_ms; /* a ConfigMap GET is answered this late */
	size_t delivered; /* pod watch lines whose callback returned */
};

static const char JOBSET_LIST[] =
	"{\"kind\":\"JobSetList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{"
	"\"metadata\":{\"name\":\"js\",\"namespace\":\"ns\",\"uid\":\"js-uid\",\"resourceVersion\":\"1\","
	"\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"60\"}},"
	"\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":2,"
	"\"completions\":2}}}]},\"status\":{}}]}";

/* The same JobSet with a push token. */
static const char JOBSET_LIST_TOKEN[] =
	"{\"kind\":\"JobSetList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{"
	"\"metadata\":{\"name\":\"js\",\"namespace\":\"ns\",\"uid\":\"js-uid\",\"resourceVersion\":\"1\","
	"\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"60\","
	"\"muster.dev/barrier-token\":\"unit-test-token-0123456789\"}},"
	"\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":2,"
	"\"completions\":2}}}]},\"status\":{}}]}";

static const char *const method_names[] = { "GET", "POST", "PUT", "PATCH", "DELETE" };

static void record(struct fake *f, const struct kube_request *req)
{
	pthread_mutex_lock(&f->lock);
	if (f->log_count < MAX_LOG) {
		snprintf(f->log[f->log_count], sizeof(f->log[0]), "%s %s", method_names[req->method],
			 req->path);
		snprintf(f->bodies[f->log_count], sizeof(f->bodies[0]), "%.*s", (int)req->body_len,
			 req->body ? req->body : "");
		f->log_count++;
	}
	pthread_mutex_unlock(&f->lock);
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

static const char *configmap_body(enum configmap_state state)
{
	switch (state) {
	case CM_OURS_RELEASED_0:
		return "{\"metadata\":{\"name\":\"js-group-scheduling\",\"ownerReferences\":[{\"apiVersion\":"
		       "\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"js\",\"uid\":\"js-uid\","
		       "\"controller\":true}]},\"data\":{\"started\":\"0\"}}";
	case CM_PREDECESSOR:
		return "{\"metadata\":{\"name\":\"js-group-scheduling\",\"uid\":\"cm-old\",\"ownerReferences\":[{"
		       "\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"js\",\"uid\":\"old-uid\","
		       "\"controller\":true}]},\"data\":{\"started\":\"7\"}}";
	case CM_FOREIGN:
		return "{\"metadata\":{\"name\":\"js-group-scheduling\"},\"data\":{\"started\":\"9\"}}";
	case CM_ABSENT:
		break;
	}
	return NULL;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;
	int is_configmap = strstr(req->path, "/configmaps") != NULL;
	enum configmap_state state;
	int created;

	(void)cause;
	record(f, req);
	pthread_mutex_lock(&f->lock);
	state = f->configmap;
	created = f->configmap_created;
	pthread_mutex_unlock(&f->lock);
	if (strncmp(req->path, "/apis/jobset.x-k8s.io/", 22) == 0)
		return respond(resp, 200, f->jobset_list ? f->jobset_list : JOBSET_LIST);
	if (is_configmap && req->method == KUBE_METHOD_GET) {
		if (f->get_delay_ms)
			pause_ms(f->get_delay_ms);
		if (created)
			return respond(resp, 200, configmap_body(CM_OURS_RELEASED_0));
		if (state == CM_ABSENT)
			return respond(resp, 404, "{\"kind\":\"Status\",\"code\":404}");
		return respond(resp, 200, configmap_body(state));
	}
	if (is_configmap && req->method == KUBE_METHOD_POST) {
		if (f->post_delay_ms)
			pause_ms(f->post_delay_ms);
		if (state != CM_ABSENT && !created)
			return respond(resp, 409,
				       "{\"kind\":\"Status\",\"code\":409,\"message\":\"exists\"}");
		pthread_mutex_lock(&f->lock);
		f->configmap_created = 1;
		pthread_mutex_unlock(&f->lock);
		return respond(resp, 201, "{}");
	}
	if (is_configmap && req->method == KUBE_METHOD_DELETE) {
		pthread_mutex_lock(&f->lock);
		f->configmap = CM_ABSENT;
		pthread_mutex_unlock(&f->lock);
		return respond(resp, 200, "{}");
	}
	if (req->method == KUBE_METHOD_POST || req->method == KUBE_METHOD_PATCH)
		return respond(resp, 201, "{}");
	return respond(resp, 200,
		       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}");
}

static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	struct fake *f = ctx;

	(void)max_line;
	(void)idle_timeout_s;
	(void)error_body;
	(void)cause;
	*status = 200;
	if (strncmp(req->path, "/apis/jobset.x-k8s.io/", 22) == 0) {
		pthread_mutex_lock(&f->lock);
		f->jobsets_streaming = 1;
		pthread_mutex_unlock(&f->lock);
	} else {
		for (;;) {
			int ready;

			pthread_mutex_lock(&f->lock);
			ready = f->jobsets_streaming;
			pthread_mutex_unlock(&f->lock);
			if (ready || atomic_load(stop))
				break;
			pause_ms(1);
		}
		for (size_t i = 0; i < f->line_count && !atomic_load(stop); i++) {
			if (on_line(arg, f->lines[i], strlen(f->lines[i])))
				break;
			pthread_mutex_lock(&f->lock);
			f->delivered++;
			pthread_mutex_unlock(&f->lock);
		}
		f->line_count = 0; /* a resumed stream has nothing new */
	}
	while (!atomic_load(stop))
		pause_ms(5);
	return MUSTER_OK;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

/* A pod watch line: pod `index` of job w, attempt 0, its barrier in `state`
 * ("running", "waiting", or "terminated" with exit code 3). */
static char *pod_line(const char *type, int index, unsigned rv, const char *state)
{
	char *line = malloc(1024);
	const char *barrier = strcmp(state, "running") == 0   ? "{\"running\":{}}"
			      : strcmp(state, "waiting") == 0 ? "{\"waiting\":{}}"
							      : "{\"terminated\":{\"exitCode\":3}}";

	snprintf(line, 1024,
		 "{\"type\":\"%s\",\"object\":{\"metadata\":{\"name\":\"js-w-%d\",\"namespace\":\"ns\","
		 "\"uid\":\"pod-uid-%d\",\"resourceVersion\":\"%u\",\"labels\":{"
		 "\"jobset.sigs.k8s.io/jobset-name\":\"js\",\"jobset.sigs.k8s.io/jobset-uid\":\"js-uid\","
		 "\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","
		 "\"jobset.sigs.k8s.io/restart-attempt\":\"0\"}},\"spec\":{\"nodeName\":\"node-%d\"},"
		 "\"status\":{\"phase\":\"%s\",\"podIP\":\"127.0.0.%d\",\"initContainerStatuses\":[{\"name\":"
		 "\"group-scheduling-init\",\"state\":%s}]}}}",
		 type, index, index, rv, index, strcmp(state, "terminated") == 0 ? "Failed" : "Pending",
		 index + 1, barrier);
	return line;
}

struct run {
	struct fake fake;
	struct controller_group *group;
	atomic_int stop;
	pthread_t thread;
	char *owned[MAX_LINES];
	size_t owned_count;
};

static void add_line(struct run *r, char *line)
{
	r->owned[r->owned_count++] = line;
	r->fake.lines[r->fake.line_count++] = line;
}

static void *run_main(void *arg)
{
	struct run *r = arg;
	char *cause = NULL;

	controller_group_run(r->group, &r->stop, &cause);
	free(cause);
	return NULL;
}

static void start(struct run *r)
{
	struct kube_config cfg;
	struct controller_group_options options = {
		.push_port = 1,
		.push_parallelism = 4,
		.push_target_timeout_ms = 100,
		.push_total_timeout_ms = 500,
		.transport = &fake_transport,
		.transport_ctx = &r->fake,
	};
	char *cause = NULL;

	kube_config_defaults(&cfg);
	cfg.qps = 0;
	assert_int_equal(controller_group_new(&cfg, &options, &r->group, &cause), 0);
	assert_int_equal(pthread_create(&r->thread, NULL, run_main, r), 0);
}

static void finish(struct run *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->thread, NULL);
	controller_group_free(r->group);
	for (size_t i = 0; i < r->owned_count; i++)
		free(r->owned[i]);
	pthread_mutex_destroy(&r->fake.lock);
}

static struct run *new_run(enum configmap_state configmap)
{
	struct run *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	pthread_mutex_init(&r->fake.lock, NULL);
	r->fake.configmap = configmap;
	return r;
}

/* Requests whose "METHOD path" starts with prefix and whose body contains
 * needle (NULL: any). */
static size_t count_requests(struct fake *f, const char *prefix, const char *needle)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->log_count; i++)
		if (strncmp(f->log[i], prefix, strlen(prefix)) == 0 &&
		    (!needle || strstr(f->bodies[i], needle)))
			n++;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static int wait_requests(struct fake *f, const char *prefix, const char *needle, size_t want)
{
	for (int i = 0; i < 500; i++) {
		if (count_requests(f, prefix, needle) >= want)
			return 1;
		pause_ms(10);
	}
	return 0;
}

#define CM_POST "POST /api/v1/namespaces/ns/configmaps"
#define EVENT_POST "POST /api/v1/namespaces/ns/events"

/* Waiting pods first, then running, shuffled, with duplicates and a stale
 * event: one release of record, with the JobSet as controlling owner. */
static void releases_once_whatever_the_order(void **state)
{
	struct run *r = new_run(CM_ABSENT);
	static const int order[] = { 2, 0, 3, 1 };

	(void)state;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "waiting"));
	for (int i = 0; i < 4; i++) {
		add_line(r, pod_line("MODIFIED", order[i], 20 + (unsigned)order[i], "running"));
		add_line(r,
			 pod_line("MODIFIED", order[i], 20 + (unsigned)order[i], "running")); /* duplicate */
	}
	add_line(r, pod_line("MODIFIED", 1, 11, "waiting")); /* stale: older resourceVersion */
	start(r);
	assert_true(wait_requests(&r->fake, EVENT_POST, "GroupReleased", 1));
	pause_ms(1200); /* a tick or more: nothing more may be written */
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, "\"started\":\"0\""), 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, "\"uid\":\"js-uid\",\"controller\":true"), 1);
	/* The release names its JobSet and generation: the barrier checks both. */
	assert_int_equal(count_requests(&r->fake, CM_POST,
					"\"started\":\"0\",\"jobset-uid\":\"js-uid\",\"generation\":\"0\""),
			 1);
	assert_int_equal(count_requests(&r->fake, "PATCH", NULL), 0);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, "GroupReleased"), 1);
	finish(r);
	free(r);
}

/* Three of four started: nothing is written. */
static void holds_while_one_is_missing(void **state)
{
	struct run *r = new_run(CM_ABSENT);

	(void)state;
	for (int i = 0; i < 3; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	add_line(r, pod_line("ADDED", 3, 13, "waiting"));
	start(r);
	pause_ms(1200);
	assert_true(count_requests(&r->fake, "GET /api/v1/namespaces/ns/configmaps/js-group-scheduling",
				   NULL) >= 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 0);
	finish(r);
	free(r);
}

/* A restarted controller finds attempt 0 released in its own ConfigMap. */
static void does_not_release_again_after_a_restart(void **state)
{
	struct run *r = new_run(CM_OURS_RELEASED_0);

	(void)state;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	start(r);
	pause_ms(1200);
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 0);
	assert_int_equal(count_requests(&r->fake, "PATCH", NULL), 0);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, NULL), 0);
	finish(r);
	free(r);
}

/* A pod past its barrier (terminated 0, phase Running), as a watch line. */
static char *passed_line(int index, unsigned rv)
{
	char *line = pod_line("ADDED", index, rv, "running");
	char *at = strstr(line, "{\"running\":{}}");
	char *phase = strstr(line, "\"Pending\"");
	char *out = malloc(1200);

	assert_non_null(at);
	assert_non_null(phase);
	snprintf(out, 1200, "%.*s\"Running\"%.*s{\"terminated\":{\"exitCode\":0}}%s", (int)(phase - line),
		 line, (int)(at - phase - 9), phase + 9, at + 14);
	free(line);
	return out;
}

/* At the release, pods already past their barrier (here 2 of 4; e.g.
 * released by the volume of an earlier attempt's write) have no listener:
 * they are not pushed and are counted as passed, not as unreachable. */
static void pods_past_their_barrier_are_counted_as_passed(void **state)
{
	struct run *r = new_run(CM_ABSENT);

	(void)state;
	r->fake.jobset_list = JOBSET_LIST_TOKEN;
	for (int i = 0; i < 2; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	for (int i = 2; i < 4; i++)
		add_line(r, passed_line(i, 20 + (unsigned)i));
	start(r);
	assert_true(wait_requests(&r->fake, EVENT_POST, "GroupReleased", 1));
	{
		struct controller_group_stats stats;

		controller_group_stats(r->group, &stats);
		assert_int_equal(stats.releases, 1);
		/* Nothing listens on 127.0.0.x:1: the two waiting pods were tried. */
		assert_int_equal(stats.push_unreachable + stats.push_refused + stats.push_ok, 2);
		assert_int_equal(stats.push_passed, 2);
	}
	finish(r);
	free(r);
}

/* Restarted between its write and its push: the release is read back and
 * pushed again, only to the pods whose barrier still runs (2 of 4 here; the
 * others have passed), with no second Event and no write. */
static void pushes_again_to_barriers_still_waiting(void **state)
{
	struct run *r = new_run(CM_OURS_RELEASED_0);
	char *passed[2];

	(void)state;
	r->fake.jobset_list = JOBSET_LIST_TOKEN;
	for (int i = 0; i < 2; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	/* Pods 2 and 3 are past their barrier (terminated 0, phase Running). */
	for (int i = 0; i < 2; i++) {
		passed[i] = passed_line(2 + i, 20 + (unsigned)i);
		add_line(r, passed[i]);
	}
	start(r);
	for (int i = 0; i < 300; i++) {
		struct controller_group_stats stats;

		controller_group_stats(r->group, &stats);
		if (stats.push_unreachable + stats.push_refused + stats.push_ok >= 2)
			break;
		pause_ms(10);
	}
	pause_ms(1200);
	{
		struct controller_group_stats stats;

		controller_group_stats(r->group, &stats);
		/* Nothing listens on 127.0.0.x:1: the two waiting pods were tried. */
		assert_int_equal(stats.push_unreachable + stats.push_refused + stats.push_ok, 2);
		assert_int_equal(stats.releases, 0);
	}
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 0);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, NULL), 0);
	finish(r);
	free(r);
}

/* Somebody else's ConfigMap of that name (data.started "9" must not count
 * as a release): never written, reported once. */
static void leaves_a_foreign_configmap_alone(void **state)
{
	struct run *r = new_run(CM_FOREIGN);

	(void)state;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	start(r);
	assert_true(wait_requests(&r->fake, EVENT_POST, "ConfigMapConflict", 1));
	pause_ms(1500); /* ticks: seen at the first read, it holds writes back for 30 s */
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 0);
	assert_int_equal(count_requests(&r->fake, "PATCH", NULL), 0);
	assert_int_equal(count_requests(&r->fake, "DELETE", NULL), 0);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, "ConfigMapConflict"), 1);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, "GroupReleased"), 0);
	finish(r);
	free(r);
}

/* A leftover of a deleted JobSet of the same name (its "7" is not ours):
 * deleted and replaced by our release. */
static void replaces_a_predecessors_leftover(void **state)
{
	struct run *r = new_run(CM_PREDECESSOR);

	(void)state;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	start(r);
	assert_true(wait_requests(&r->fake, EVENT_POST, "GroupReleased", 1));
	/* By its uid: a ConfigMap made again under the name since is not deleted. */
	assert_int_equal(count_requests(&r->fake,
					"DELETE /api/v1/namespaces/ns/configmaps/js-group-scheduling",
					"\"preconditions\":{\"uid\":\"cm-old\"}"),
			 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, "\"started\":\"0\""), 2); /* 409, then created */
	finish(r);
	free(r);
}

/* Two barriers time out (exit code 3), one of them seen twice, two pods
 * never reach theirs: one GroupTimedOut Event for the attempt, saying so,
 * no release. */
static void reports_a_timeout_once(void **state)
{
	struct run *r = new_run(CM_ABSENT);

	(void)state;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, i < 2 ? "running" : "waiting"));
	add_line(r, pod_line("MODIFIED", 0, 30, "terminated"));
	add_line(r, pod_line("MODIFIED", 0, 31, "terminated"));
	add_line(r, pod_line("MODIFIED", 1, 32, "terminated"));
	start(r);
	assert_true(wait_requests(&r->fake, EVENT_POST, "GroupTimedOut", 1));
	pause_ms(1200);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, "GroupTimedOut"), 1);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, "\"type\":\"Warning\""), 1);
	/* What is known when the first barrier times out, said truthfully:
	 * two pods reached the barrier, two never did. */
	assert_int_equal(
		count_requests(&r->fake, EVENT_POST, "2 of 4 pods reached the barrier and 2 never did"), 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 0);
	{
		struct controller_group_stats stats;

		controller_group_stats(r->group, &stats);
		assert_int_equal(stats.barrier_timeouts, 2);
		assert_int_equal(stats.releases, 0);
	}
	finish(r);
	free(r);
}

static void count_records(void *arg, const struct controller_jobset_view *view)
{
	*(size_t *)arg += view->pod_records;
}

/* The release write is answered 2 s late: meanwhile the pod watch goes on
 * (its events are applied and the registry can be read), because no
 * apiserver call is made under the registry lock. */
static void pod_events_go_on_during_a_slow_release_write(void **state)
{
	struct run *r = new_run(CM_ABSENT);
	struct controller_group_stats stats;
	size_t delivered = 0, lines, records = 0;
	struct timespec begun, now;

	(void)state;
	r->fake.post_delay_ms = 2000;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	for (int i = 0; i < 4; i++) /* after the release decision */
		add_line(r, pod_line("MODIFIED", i, 20 + (unsigned)i, "running"));
	lines = r->fake.line_count;
	start(r);
	assert_true(wait_requests(&r->fake, CM_POST, NULL, 1));
	clock_gettime(CLOCK_MONOTONIC, &begun);
	for (int i = 0; i < 100 && delivered < lines; i++) {
		pause_ms(10);
		pthread_mutex_lock(&r->fake.lock);
		delivered = r->fake.delivered;
		pthread_mutex_unlock(&r->fake.lock);
	}
	controller_group_foreach(r->group, count_records, &records);
	clock_gettime(CLOCK_MONOTONIC, &now);
	controller_group_stats(r->group, &stats);
	/* Still within the write's delay: not released yet. */
	assert_true((now.tv_sec - begun.tv_sec) * 1000 + (now.tv_nsec - begun.tv_nsec) / 1000000 < 1500);
	assert_int_equal(stats.releases, 0);
	assert_int_equal(delivered, lines);
	assert_int_equal(records, 4);
	/* Then the release happens, once. */
	assert_true(wait_requests(&r->fake, EVENT_POST, "GroupReleased", 1));
	pause_ms(1200);
	controller_group_stats(r->group, &stats);
	assert_int_equal(stats.releases, 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 1);
	assert_int_equal(count_requests(&r->fake, EVENT_POST, "GroupReleased"), 1);
	finish(r);
	free(r);
}

/* A new tracker's ConfigMap read is answered 2 s late: meanwhile the pod
 * watch goes on (no request is made under the registry lock), its events
 * are kept for the tracker, and nothing is released before the read. */
static void pod_events_go_on_during_a_slow_read(void **state)
{
	struct run *r = new_run(CM_ABSENT);
	struct controller_group_stats stats;
	size_t delivered = 0, lines, records = 0;
	struct timespec begun, now;

	(void)state;
	r->fake.get_delay_ms = 2000;
	for (int i = 0; i < 4; i++)
		add_line(r, pod_line("ADDED", i, 10 + (unsigned)i, "running"));
	lines = r->fake.line_count;
	start(r);
	assert_true(wait_requests(&r->fake, "GET /api/v1/namespaces/ns/configmaps/", NULL, 1));
	clock_gettime(CLOCK_MONOTONIC, &begun);
	for (int i = 0; i < 100 && delivered < lines; i++) {
		pause_ms(10);
		pthread_mutex_lock(&r->fake.lock);
		delivered = r->fake.delivered;
		pthread_mutex_unlock(&r->fake.lock);
	}
	controller_group_foreach(r->group, count_records, &records);
	clock_gettime(CLOCK_MONOTONIC, &now);
	controller_group_stats(r->group, &stats);
	/* Still within the read's delay: not released. */
	assert_true((now.tv_sec - begun.tv_sec) * 1000 + (now.tv_nsec - begun.tv_nsec) / 1000000 < 1500);
	assert_int_equal(delivered, lines);
	assert_int_equal(records, 4);
	assert_int_equal(stats.releases, 0);
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 0);
	/* The read answers (nothing released), the pods are listed (the fake's
	 * LIST is empty: the events seen since the tracker was made stay), and
	 * the gang is released once. */
	assert_true(wait_requests(&r->fake, EVENT_POST, "GroupReleased", 1));
	pause_ms(1200);
	controller_group_stats(r->group, &stats);
	assert_int_equal(stats.releases, 1);
	assert_int_equal(count_requests(&r->fake, CM_POST, NULL), 1);
	finish(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(releases_once_whatever_the_order),
		cmocka_unit_test(holds_while_one_is_missing),
		cmocka_unit_test(does_not_release_again_after_a_restart),
		cmocka_unit_test(pushes_again_to_barriers_still_waiting),
		cmocka_unit_test(pods_past_their_barrier_are_counted_as_passed),
		cmocka_unit_test(leaves_a_foreign_configmap_alone),
		cmocka_unit_test(replaces_a_predecessors_leftover),
		cmocka_unit_test(reports_a_timeout_once),
		cmocka_unit_test(pod_events_go_on_during_a_slow_release_write),
		cmocka_unit_test(pod_events_go_on_during_a_slow_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
