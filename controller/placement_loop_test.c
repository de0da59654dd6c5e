/*
 * Unit tests of placement_loop (the whole loop: its three watches, the
 * passes, the records, the JobSet patches) against a fake API server in
 * memory: Nodes, pods, JobSets and ConfigMaps as objects, LIST answered
 * from them, WATCH streams fed by every change (with resource versions, so
 * nothing between a list and its watch is lost), JSON merge patches applied
 * with their uid precondition, deletes with theirs, Events accepted. Every
 * write is logged in order, so a test can check what the controller did and
 * in which order.
 *
 * Cluster: 4 nodes of 4 cpu in 2 racks (label rack: r1 = n1 n2, r2 = n3 n4);
 * a JobSet of 4 pods of 2 cpu that asks for one rack fills one.
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
#include <cjson/cJSON.h>

#include "kube_client.h"
#include "kube_config.h"
#include "kube_transport.h"
#include "controller_group.h"
#include "muster_api.h"
#include "placement_loop.h"

#define MAX_EVENTS 512
#define MAX_LOG 256

enum kind { NODES, PODS, JOBSETS, CONFIGMAPS, JOBS, KINDS };

struct event {
	enum kind kind;
	unsigned rv;
	char *line;
};

struct fake {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	unsigned rv;
	cJSON *objects[KINDS]; /* arrays */
	struct event events[MAX_EVENTS];
	size_t event_count;
	char log[MAX_LOG][200]; /* "PATCH /apis/..." */
	char *bodies[MAX_LOG];
	size_t log_count;
	int topology_reads; /* GETs of Kueue Topologies and HyperNodes */
	int streams[KINDS], open_streams[KINDS], most_open[KINDS]; /* watch requests of each kind */
	int jobs_forbidden; /* answer 403 to every request on Jobs (RBAC without them) */
	int configmap_gets;
	/* this many ConfigMap creates answered 409 although none of the name
	 * exists (one was there at the create, deleted before the read) */
	int configmap_post_conflicts;
};

static const char *const method_names[] = { "GET", "POST", "PUT", "PATCH", "DELETE" };

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static const char *meta(const cJSON *o, const char *field)
{
	const cJSON *v =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"), field);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static cJSON *find(struct fake *f, enum kind k, const char *ns, const char *name, int *index)
{
	int i = 0;
	cJSON *o;

	cJSON_ArrayForEach(o, f->objects[k])
	{
		if (strcmp(meta(o, "namespace"), ns) == 0 && strcmp(meta(o, "name"), name) == 0) {
			if (index)
				*index = i;
			return o;
		}
		i++;
	}
	return NULL;
}

/* Under lock: a new resource version, and the watch event of `o`. */
static void emit(struct fake *f, enum kind k, const char *type, cJSON *o)
{
	char rv[16];
	char *object;

	snprintf(rv, sizeof(rv), "%u", ++f->rv);
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
						"resourceVersion");
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "resourceVersion", rv);
	object = cJSON_PrintUnformatted(o);
	assert_true(f->event_count < MAX_EVENTS);
	f->events[f->event_count].kind = k;
	f->events[f->event_count].rv = f->rv;
	f->events[f->event_count].line = malloc(strlen(object) + 64);
	snprintf(f->events[f->event_count].line, strlen(object) + 64, "{\"type\":\"%s\",\"object\":%s}", type,
		 object);
	f->event_count++;
	free(object);
	pthread_cond_broadcast(&f->changed);
}

/* Stores `o` (taken), replacing the object of its name: ADDED or MODIFIED. */
static void put_locked(struct fake *f, enum kind k, cJSON *o)
{
	int index;
	cJSON *old = find(f, k, meta(o, "namespace"), meta(o, "name"), &index);

	if (old)
		cJSON_ReplaceItemInArray(f->objects[k], index, o);
	else
		cJSON_AddItemToArray(f->objects[k], o);
	emit(f, k, old ? "MODIFIED" : "ADDED", o);
}

static void put(struct fake *f, enum kind k, const char *json)
{
	cJSON *o = cJSON_Parse(json);

	assert_non_null(o);
	pthread_mutex_lock(&f->lock);
	put_locked(f, k, o);
	pthread_mutex_unlock(&f->lock);
}

static void delete_locked(struct fake *f, enum kind k, const char *ns, const char *name)
{
	int index;
	cJSON *o = find(f, k, ns, name, &index);

	if (!o)
		return;
	o = cJSON_DetachItemFromArray(f->objects[k], index);
	emit(f, k, "DELETED", o);
	cJSON_Delete(o);
}

/* RFC 7386 merge patch. */
static void merge(cJSON *target, const cJSON *patch)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, patch)
	{
		cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);

		if (cJSON_IsNull(p)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
		} else if (cJSON_IsObject(p) && cJSON_IsObject(t)) {
			merge(t, p);
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
			cJSON_AddItemToObject(target, p->string, cJSON_Duplicate(p, 1));
		}
	}
}

static int respond(struct kube_response *resp, long status, const char *body)
{
	resp->status = status;
	resp->body_len = strlen(body);
	resp->body = malloc(resp->body_len + 1);
	memcpy(resp->body, body, resp->body_len + 1);
	return MUSTER_OK;
}

static int respond_json(struct kube_response *resp, long status, const cJSON *o)
{
	char *text = cJSON_PrintUnformatted(o);
	int err = respond(resp, status, text);

	free(text);
	return err;
}

static const char NOT_FOUND[] = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}";
static const char CONFLICT[] = "{\"kind\":\"Status\",\"code\":409,\"reason\":\"Conflict\"}";

/* The kind a collection path names, or -1. */
static int kind_of(const char *path, char *ns, size_t ns_size, char *name, size_t name_size)
{
	static const struct {
		const char *prefix, *collection;
		enum kind kind;
	} routes[] = {
		{ "/api/v1/", "nodes", NODES },
		{ "/api/v1/", "pods", PODS },
		{ "/apis/jobset.x-k8s.io/v1alpha2/", "jobsets", JOBSETS },
		{ "/api/v1/", "configmaps", CONFIGMAPS },
		{ "/apis/batch/v1/", "jobs", JOBS },
	};
	char clean[512];
	char *q;

	snprintf(clean, sizeof(clean), "%s", path);
	if ((q = strchr(clean, '?')) != NULL)
		*q = '\0';
	ns[0] = name[0] = '\0';
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		size_t n = strlen(routes[i].prefix);
		const char *rest = clean + n, *slash;
		char want[64];

		if (strncmp(clean, routes[i].prefix, n) != 0)
			continue;
		if (strncmp(rest, "namespaces/", 11) == 0 && (slash = strchr(rest + 11, '/')) != NULL) {
			snprintf(ns, ns_size, "%.*s", (int)(slash - rest - 11), rest + 11);
			rest = slash + 1;
		}
		snprintf(want, sizeof(want), "%s", routes[i].collection);
		if (strncmp(rest, want, strlen(want)) != 0)
			continue;
		rest += strlen(want);
		if (*rest == '/')
			snprintf(name, name_size, "%s", rest + 1);
		else if (*rest)
			continue;
		return (int)routes[i].kind;
	}
	return -1;
}

static void note(struct fake *f, const struct kube_request *req)
{
	if (req->method == KUBE_METHOD_GET || f->log_count == MAX_LOG)
		return;
	snprintf(f->log[f->log_count], sizeof(f->log[0]), "%s %s", method_names[req->method], req->path);
	f->bodies[f->log_count] = strndup(req->body ? req->body : "", req->body_len);
	f->log_count++;
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;
	char ns[64], name[254];
	int k = kind_of(req->path, ns, sizeof(ns), name, sizeof(name)), err;
	cJSON *o, *body = req->body ? cJSON_ParseWithLength(req->body, req->body_len) : NULL;

	(void)cause;
	pthread_mutex_lock(&f->lock);
	note(f, req);
	if (f->jobs_forbidden && k == JOBS) {
		err = respond(resp, 403, "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\"}");
	} else if (strstr(req->path, "/events") && req->method == KUBE_METHOD_POST) {
		err = respond(resp, 201, "{}");
	} else if (strstr(req->path, "topolog") || strstr(req->path, "hypernodes")) {
		f->topology_reads++;
		err = respond(resp, 404, NOT_FOUND);
	} else if (k < 0) {
		err = respond(resp, 404, NOT_FOUND);
	} else if (req->method == KUBE_METHOD_GET && !name[0]) {
		cJSON *list = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(list, "metadata");
		char rv[16];

		snprintf(rv, sizeof(rv), "%u", f->rv);
		cJSON_AddStringToObject(md, "resourceVersion", rv);
		cJSON_AddItemToObject(list, "items", cJSON_Duplicate(f->objects[k], 1));
		err = respond_json(resp, 200, list);
		cJSON_Delete(list);
	} else if (req->method == KUBE_METHOD_GET) {
		f->configmap_gets += k == CONFIGMAPS;
		o = find(f, (enum kind)k, ns, name, NULL);
		err = o ? respond_json(resp, 200, o) : respond(resp, 404, NOT_FOUND);
	} else if (req->method == KUBE_METHOD_POST) {
		char uid[32];

		assert_non_null(body);
		if (k == CONFIGMAPS && f->configmap_post_conflicts > 0) {
			f->configmap_post_conflicts--;
			err = respond(resp, 409, CONFLICT);
		} else if (find(f, (enum kind)k, ns, meta(body, "name"), NULL)) {
			err = respond(resp, 409, CONFLICT);
		} else {
			snprintf(uid, sizeof(uid), "uid-%u", f->rv + 1);
			cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(body, "metadata"), "uid",
						uid);
			err = respond_json(resp, 201, body);
			put_locked(f, (enum kind)k, body);
			body = NULL;
		}
	} else if (req->method == KUBE_METHOD_DELETE) {
		const cJSON *pre = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(body, "preconditions"), "uid");

		o = find(f, (enum kind)k, ns, name, NULL);
		if (!o)
			err = respond(resp, 404, NOT_FOUND);
		else if (cJSON_IsString(pre) && strcmp(pre->valuestring, meta(o, "uid")) != 0)
			err = respond(resp, 409, CONFLICT);
		else {
			delete_locked(f, (enum kind)k, ns, name);
			err = respond(resp, 200, "{}");
		}
	} else if (req->method == KUBE_METHOD_PATCH) {
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(body, "metadata"), "uid");

		o = find(f, (enum kind)k, ns, name, NULL);
		if (!o) {
			err = respond(resp, 404, NOT_FOUND);
		} else if (cJSON_IsString(uid) && strcmp(uid->valuestring, meta(o, "uid")) != 0) {
			err = respond(resp, 409, CONFLICT);
		} else {
			cJSON *patched = cJSON_Duplicate(o, 1);

			merge(patched, body);
			err = respond_json(resp, 200, patched);
			put_locked(f, (enum kind)k, patched);
		}
	} else {
		err = respond(resp, 405, "{}");
	}
	pthread_mutex_unlock(&f->lock);
	cJSON_Delete(body);
	return err;
}

/* A watch: every event of its kind after the resource version it names. */
static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	struct fake *f = ctx;
	char ns[64], name[254];
	int k = kind_of(req->path, ns, sizeof(ns), name, sizeof(name));
	const char *rv = strstr(req->path, "resourceVersion=");
	unsigned after = rv ? (unsigned)strtoul(rv + 16, NULL, 10) : 0;
	size_t next = 0;

	(void)max_line;
	(void)idle_timeout_s;
	(void)error_body;
	(void)cause;
	*status = 200;
	pthread_mutex_lock(&f->lock);
	if (k >= 0) {
		f->streams[k]++;
		if (++f->open_streams[k] > f->most_open[k])
			f->most_open[k] = f->open_streams[k];
	}
	while (!atomic_load(stop)) {
		struct timespec until;

		for (; next < f->event_count; next++) {
			char *line;

			if ((int)f->events[next].kind != k || f->events[next].rv <= after)
				continue;
			line = strdup(f->events[next].line);
			pthread_mutex_unlock(&f->lock);
			on_line(arg, line, strlen(line));
			free(line);
			pthread_mutex_lock(&f->lock);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 50 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->changed, &f->lock, &until);
	}
	if (k >= 0)
		f->open_streams[k]--;
	pthread_mutex_unlock(&f->lock);
	return MUSTER_OK;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

/* ---- the cluster ---- */

static void node(struct fake *f, const char *name, const char *rack, const char *ready, const char *taint)
{
	char json[1024];

	snprintf(
		json, sizeof(json),
		"{\"metadata\":{\"name\":\"%s\",\"uid\":\"node-%s\",\"labels\":{\"rack\":\"%s\","
		"\"kubernetes.io/hostname\":\"%s\"}},\"spec\":{%s%s%s},\"status\":{\"allocatable\":{\"cpu\":\"4\","
		"\"memory\":\"16Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
		name, name, rack, name, taint ? "\"taints\":[{\"key\":\"" : "", taint ? taint : "",
		taint ? "\",\"effect\":\"NoSchedule\"}]" : "", ready);
	put(f, NODES, json);
}

static void four_nodes(struct fake *f)
{
	node(f, "n1", "r1", "True", NULL);
	node(f, "n2", "r1", "True", NULL);
	node(f, "n3", "r2", "True", NULL);
	node(f, "n4", "r2", "True", NULL);
}

/* JobSet `name` as the webhook gates it (waiting, suspended): one replicated
 * job of `pods` pods of `cpu` cpu that asks for one rack (Kueue's words). */
static void gated_jobset(struct fake *f, const char *name, int pods, const char *cpu)
{
	char json[2048];

	snprintf(
		json, sizeof(json),
		"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"%s\","
		"\"namespace\":\"ns\",\"uid\":\"js-%s\",\"creationTimestamp\":\"2026-11-25T10:00:00Z\","
		"\"annotations\":{\"muster.dev/placement\":\"waiting\"}},\"spec\":{\"suspend\":true,"
		"\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":%d,"
		"\"completions\":%d,\"template\":{\"metadata\":{\"annotations\":{"
		"\"kueue.x-k8s.io/podset-required-topology\":\"rack\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}}}}]},\"status\":{}}",
		name, name, pods, pods, cpu);
	put(f, JOBSETS, json);
}

/* ---- the loop ---- */

struct run {
	struct fake fake;
	struct placement_loop *loop;
	atomic_int stop;
	pthread_t thread;
};

static void *run_main(void *arg)
{
	struct run *r = arg;
	char *cause = NULL;

	placement_loop_run(r->loop, &r->stop, &cause);
	free(cause);
	return NULL;
}

static void fake_init(struct fake *f);

/* On the heap: a test that fails leaves its threads running, and they must
 * not find another test's stack under them. */
static struct run *new_run(void)
{
	struct run *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	fake_init(&r->fake);
	return r;
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->changed, NULL);
	for (int k = 0; k < KINDS; k++)
		f->objects[k] = cJSON_CreateArray();
}

/* levels: --placement-levels, or NULL for none (then the Kueue Topology and
 * HyperNode lists answer 404: the cluster has no topology). */
/* --placement-balanced for the next start_with() (then reset). */
static int start_balanced;

static void start_with(struct run *r, const char *levels, const char *topology, unsigned long hold_ms)
{
	struct kube_config cfg;
	struct placement_options options = {
		.balanced = start_balanced,
		.namespace = "ns",
		.levels = levels,
		.topology = topology,
		.replace_after_s = 1,
		.hold_ms = hold_ms,
		.transport = &fake_transport,
		.transport_ctx = &r->fake,
	};
	char *cause = NULL;

	kube_config_defaults(&cfg);
	cfg.qps = 0;
	assert_int_equal(placement_loop_new(&cfg, &options, &r->loop, &cause), 0);
	assert_int_equal(pthread_create(&r->thread, NULL, run_main, r), 0);
}

/* A JobSet placed again is held 300 ms (the pod route's cache, 11 s in
 * the controller). */
static void start(struct run *r, const char *levels)
{
	start_with(r, levels, NULL, 300);
}

static void finish(struct run *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->thread, NULL);
	placement_loop_free(r->loop);
	for (int k = 0; k < KINDS; k++)
		cJSON_Delete(r->fake.objects[k]);
	for (size_t i = 0; i < r->fake.event_count; i++)
		free(r->fake.events[i].line);
	for (size_t i = 0; i < r->fake.log_count; i++)
		free(r->fake.bodies[i]);
	free(r);
}

/* A copy of the stored object, or NULL. */
static cJSON *get(struct fake *f, enum kind k, const char *name)
{
	cJSON *o;

	pthread_mutex_lock(&f->lock);
	o = find(f, k, "ns", name, NULL);
	o = o ? cJSON_Duplicate(o, 1) : NULL;
	pthread_mutex_unlock(&f->lock);
	return o;
}

/* The record's text for `jobset`, or NULL (malloc'd). */
static char *record_text(struct fake *f, const char *jobset)
{
	char name[300];
	cJSON *cm, *text;
	char *out = NULL;

	snprintf(name, sizeof(name), "%s-placement", jobset);
	if (!(cm = get(f, CONFIGMAPS, name)))
		return NULL;
	text = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "data"), "placement");
	if (cJSON_IsString(text))
		out = strdup(text->valuestring);
	cJSON_Delete(cm);
	return out;
}

static const cJSON *annotation(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
						 "annotations"),
		key);
}

/* 1 when the JobSet is placed and resumed. */
static int placed(struct fake *f, const char *name)
{
	cJSON *js = get(f, JOBSETS, name);
	const cJSON *state = annotation(js, "muster.dev/placement");
	const cJSON *suspend =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "spec"), "suspend");
	int yes =
		cJSON_IsString(state) && strcmp(state->valuestring, "placed") == 0 && cJSON_IsFalse(suspend);

	cJSON_Delete(js);
	return yes;
}

/* Waits up to `seconds` for fn(f, arg); fails the test after. */
static void wait_until(struct fake *f, int (*fn)(struct fake *, const char *), const char *arg,
		       double seconds, const char *what)
{
	for (int i = 0; i < (int)(seconds * 100); i++) {
		if (fn(f, arg))
			return;
		pause_ms(10);
	}
	fail_msg("waited %.0f s for %s", seconds, what);
}

static int record_has(struct fake *f, const char *needle)
{
	char *text = record_text(f, "train");
	int yes = text && strstr(text, needle);

	free(text);
	return yes;
}

static int record_absent(struct fake *f, const char *jobset)
{
	char *text = record_text(f, jobset);

	free(text);
	return text == NULL;
}

/* The index of the first logged write after `from` whose line and body hold
 * the needles, or -1. */
static int logged(struct fake *f, size_t from, const char *line, const char *body)
{
	int found = -1;

	pthread_mutex_lock(&f->lock);
	for (size_t i = from; i < f->log_count && found < 0; i++)
		if (strstr(f->log[i], line) && (!body || strstr(f->bodies[i], body)))
			found = (int)i;
	pthread_mutex_unlock(&f->lock);
	return found;
}

static int placed_in(struct fake *f, const char *rack)
{
	char needle[32];

	snprintf(needle, sizeof(needle), "rack=%s", rack);
	return placed(f, "train") && record_has(f, needle);
}

static void print_log(struct fake *f)
{
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->log_count; i++)
		print_message("  %s %.200s\n", f->log[i], f->bodies[i]);
	pthread_mutex_unlock(&f->lock);
}

/* ---- tests ---- */

/* A placed JobSet that restarts (status.restarts 1) is placed afresh: its
 * record of attempt 0 deleted, the JobSet suspended (its reason naming the
 * attempt), a record of attempt 1 written, the JobSet resumed; at once,
 * with no wait for the lost-room timer. Before, the record of attempt 0
 * stayed and pinned the new attempt's pods. */
static void a_restart_attempt_is_placed_afresh(void **state)
{
	struct run *r = new_run();
	struct placement_stats stats;
	size_t mark;
	int dropped, suspended, written, resumed;

	(void)state;

	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start_with(r, "rack", NULL,
		   600000); /* were a restart held like a lost domain, it would wait 10 minutes */
	wait_until(&r->fake, placed_in, "r1", 10, "train placed"); /* the first rack that fits */
	assert_true(record_has(&r->fake, "\"attempt\":0"));
	pthread_mutex_lock(&r->fake.lock);
	mark = r->fake.log_count;
	pthread_mutex_unlock(&r->fake.lock);
	{
		cJSON *js = get(&r->fake, JOBSETS, "train");
		char *text;

		cJSON_ReplaceItemInObjectCaseSensitive(js, "status", cJSON_Parse("{\"restarts\":1}"));
		text = cJSON_PrintUnformatted(js);
		put(&r->fake, JOBSETS, text);
		free(text);
		cJSON_Delete(js);
	}
	wait_until(&r->fake, record_has, "\"attempt\":1", 10, "the record of attempt 1");
	wait_until(&r->fake, placed, "train", 10, "train resumed for attempt 1");
	dropped = logged(&r->fake, mark, "DELETE /api/v1/namespaces/ns/configmaps/train-placement", NULL);
	suspended = logged(&r->fake, mark, "PATCH /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/train",
			   "\"suspend\":true");
	written = logged(&r->fake, mark, "POST /api/v1/namespaces/ns/configmaps", "attempt");
	resumed = logged(&r->fake, mark, "PATCH /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/train",
			 "\"suspend\":false");
	if (!(dropped >= 0 && dropped < suspended && suspended < written && written < resumed)) {
		print_log(&r->fake);
		fail_msg("order: drop %d, suspend %d, write %d, resume %d", dropped, suspended, written,
			 resumed);
	}
	assert_true(logged(&r->fake, mark, "PATCH", "restart attempt 1: placed afresh") == suspended);
	assert_true(logged(&r->fake, mark, "POST /api/v1/namespaces/ns/events", "PlacementRenewed") >= 0);
	assert_true(logged(&r->fake, mark, "POST /api/v1/namespaces/ns/events", "PlacementLost") < 0);
	for (int i = 0; i < 500; i++) { /* counted once act() has returned */
		placement_loop_stats(r->loop, &stats);
		if (stats.placements >= 2)
			break;
		pause_ms(10);
	}
	assert_int_equal(stats.restarts, 1);
	assert_int_equal(stats.relocations, 0);
	assert_int_equal(stats.placements, 2);
	finish(r);
}

/* Every node of the rack a placed JobSet's pending pods are pinned to is
 * deleted: the record is deleted before the JobSet is suspended (a JobSet
 * suspended with its record still there would be resumed from it), and it
 * is placed again in the other rack. */
static void a_lost_domain_drops_the_record_before_the_suspend(void **state)
{
	struct run *r = new_run();
	struct placement_stats stats;
	size_t mark;
	int dropped, suspended;

	(void)state;

	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	wait_until(&r->fake, placed_in, "r1", 10, "train placed in r1");
	pthread_mutex_lock(&r->fake.lock);
	mark = r->fake.log_count;
	delete_locked(&r->fake, NODES, "", "n1");
	delete_locked(&r->fake, NODES, "", "n2");
	pthread_mutex_unlock(&r->fake.lock);
	wait_until(&r->fake, placed_in, "r2", 30, "train placed again in r2");
	dropped = logged(&r->fake, mark, "DELETE /api/v1/namespaces/ns/configmaps/train-placement", NULL);
	suspended = logged(&r->fake, mark, "PATCH", "\"suspend\":true");
	if (!(dropped >= 0 && dropped < suspended)) {
		print_log(&r->fake);
		fail_msg("drop %d, suspend %d", dropped, suspended);
	}
	assert_true(logged(&r->fake, mark, "PATCH", "lost every node of their domain (rack=r1)") ==
		    suspended);
	placement_loop_stats(r->loop, &stats);
	assert_int_equal(stats.relocations, 1);
	finish(r);
}

/* With no topology in the cluster (no Kueue Topology, no HyperNodes, no
 * --placement-levels), a JobSet that names one label is placed by it; when
 * a node of its rack is tainted under its pending pods, the check "would it
 * fit elsewhere" uses that label too, so it is placed again in the other
 * rack. Before, that check said "no" whenever the cluster had no topology,
 * and the JobSet stayed stranded. */
static void with_no_topology_a_stranded_jobset_is_moved_by_its_one_label(void **state)
{
	struct run *r = new_run();

	(void)state;

	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, NULL);
	wait_until(&r->fake, placed_in, "r1", 10, "train placed in r1 by its label");
	node(&r->fake, "n1", "r1", "True", "dedicated");
	wait_until(&r->fake, placed_in, "r2", 30, "train placed again in r2");
	assert_true(r->fake.topology_reads > 0); /* it looked for a topology, and found none */
	finish(r);
}

/* Other pods fill the rack a placed JobSet's pending pods are pinned to:
 * no Node changes, only pods. The loop checks placed JobSets whose pods are
 * not bound from the pass after it placed them, so it sees the rack full and
 * places the JobSet again in the other one. Before, nothing made a pass
 * check them until a Node changed. */
static void room_taken_by_other_pods_is_seen_without_a_node_event(void **state)
{
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	wait_until(&r->fake, placed_in, "r1", 10, "train placed in r1");
	put(&r->fake, PODS,
	    "{\"metadata\":{\"name\":\"other-1\",\"namespace\":\"other\",\"uid\":\"o1\"},\"spec\":{\"nodeName\":"
	    "\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]},"
	    "\"status\":{\"phase\":\"Running\"}}");
	put(&r->fake, PODS,
	    "{\"metadata\":{\"name\":\"other-2\",\"namespace\":\"other\",\"uid\":\"o2\"},\"spec\":{\"nodeName\":"
	    "\"n2\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]},"
	    "\"status\":{\"phase\":\"Running\"}}");
	wait_until(&r->fake, placed_in, "r2", 30, "train placed again in r2");
	assert_true(logged(&r->fake, 0, "PATCH", "had no room in their domain (rack=r1") >= 0);
	finish(r);
}

/* A placed JobSet whose pods are not all bound is checked as pods come and
 * bind, but a stream of pod events (one per pod of a large JobSet binding)
 * brings one pass a second, not one per PLACEMENT_COALESCE_MS: each pass
 * checks every pod of every placed JobSet. Before, 50 events over 2.5 s
 * brought about 12 passes. */
static void pod_events_alone_bring_one_pass_a_second(void **state)
{
	struct run *r = new_run();
	struct placement_stats before, after;
	uint64_t passes;

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	wait_until(&r->fake, placed_in, "r1", 10, "train placed in r1");
	pause_ms(300); /* the pass that placed it is over */
	placement_loop_stats(r->loop, &before);
	for (int i = 0; i < 50; i++) {
		char pod[300];

		snprintf(pod, sizeof(pod),
			 "{\"metadata\":{\"name\":\"other\",\"namespace\":\"other\",\"uid\":\"o1\","
			 "\"labels\":{\"n\":\"%d\"}},\"spec\":{\"nodeName\":\"n4\",\"containers\":[{\"name\":"
			 "\"c\"}]},\"status\":{\"phase\":\"Running\"}}",
			 i);
		put(&r->fake, PODS, pod);
		pause_ms(50);
	}
	pause_ms(1100); /* the last event's pass, at most a second later */
	placement_loop_stats(r->loop, &after);
	passes = after.passes - before.passes;
	print_message("passes for 50 pod events over 2.5 s: %llu\n", (unsigned long long)passes);
	assert_true(passes >= 1); /* the events are seen */
	assert_true(passes <= 5); /* one a second, the periodic retry and the edges */
	finish(r);
}

static int free_nodes_are(struct fake *f, const char *want)
{
	struct run *r = (struct run *)f; /* fake is the first member */
	struct placement_stats stats;
	char got[64] = "";

	placement_loop_stats(r->loop, &stats);
	for (size_t i = 0; i < stats.domain_count; i++) {
		size_t n = strlen(got);

		snprintf(got + n, sizeof(got) - n, "%s%s=%.0f", i ? "," : "", stats.domains[i],
			 stats.free_nodes[i]);
	}
	return strcmp(got, want) == 0;
}

/* A node reported NotReady is not counted as free room in the metrics
 * (the scheduler binds nothing there), nor is one cordoned. */
static void nodes_not_ready_are_not_free_room(void **state)
{
	struct run *r = new_run();

	(void)state;

	four_nodes(&r->fake);
	gated_jobset(&r->fake, "huge", 40, "2"); /* never fits: it keeps passes running */
	start(r, "rack");
	wait_until(&r->fake, free_nodes_are, "r1=2,r2=2", 10, "two free nodes per rack");
	node(&r->fake, "n2", "r1", "False", NULL);
	wait_until(&r->fake, free_nodes_are, "r1=1,r2=2", 15, "the NotReady node not counted");
	assert_true(record_absent(&r->fake, "huge"));
	finish(r);
}

/* A placed JobSet whose record is gone (a controller stopped between
 * deleting it and the suspend) while its pods are not bound is placed
 * again; the loop starts with it so. */
static void a_placed_jobset_without_its_record_is_placed_again(void **state)
{
	struct run *r = new_run();

	(void)state;

	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	{
		cJSON *js = get(&r->fake, JOBSETS, "train"),
		      *patch = cJSON_Parse(
			      "{\"metadata\":{\"annotations\":{\"muster.dev/placement\":\"placed\"}},"
			      "\"spec\":{\"suspend\":false}}");
		char *text;

		merge(js, patch);
		text = cJSON_PrintUnformatted(js);
		put(&r->fake, JOBSETS, text);
		free(text);
		cJSON_Delete(patch);
		cJSON_Delete(js);
	}
	start(r, "rack");
	wait_until(&r->fake, record_has, "rack=r", 15, "a record written again");
	wait_until(&r->fake, placed, "train", 10, "train resumed");
	assert_true(logged(&r->fake, 0, "PATCH", "is gone and pods not bound yet need it") >= 0);
	finish(r);
}

/* Merge-patches the stored JobSet `name` (a watch event follows). */
static void patch_jobset(struct fake *f, const char *name, const char *json)
{
	cJSON *js = get(f, JOBSETS, name), *patch = cJSON_Parse(json);
	char *text;

	assert_non_null(js);
	assert_non_null(patch);
	merge(js, patch);
	text = cJSON_PrintUnformatted(js);
	put(f, JOBSETS, text);
	free(text);
	cJSON_Delete(patch);
	cJSON_Delete(js);
}

static void set_restarts(struct fake *f, const char *name, int restarts)
{
	cJSON *js = get(f, JOBSETS, name);
	char status[64], *text;

	snprintf(status, sizeof(status), "{\"restarts\":%d}", restarts);
	cJSON_ReplaceItemInObjectCaseSensitive(js, "status", cJSON_Parse(status));
	text = cJSON_PrintUnformatted(js);
	put(f, JOBSETS, text);
	free(text);
	cJSON_Delete(js);
}

static int configmap_read(struct fake *f, const char *unused)
{
	int n;

	(void)unused;
	pthread_mutex_lock(&f->lock);
	n = f->configmap_gets;
	pthread_mutex_unlock(&f->lock);
	return n > 0;
}

/* A record written before records named their attempt, under a JobSet
 * running its attempt 2 (a controller upgraded under it): adopted as the
 * current attempt's, nothing suspended. Its next restart is placed afresh. */
static void a_record_of_before_attempts_is_adopted_not_replaced(void **state)
{
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	patch_jobset(&r->fake, "train",
		     "{\"metadata\":{\"annotations\":{\"muster.dev/placement\":\"placed\"}},"
		     "\"spec\":{\"suspend\":false},\"status\":{\"restarts\":2}}");
	put(&r->fake, CONFIGMAPS,
	    "{\"metadata\":{\"name\":\"train-placement\",\"namespace\":\"ns\",\"uid\":\"cm-1\",\"ownerReferences\":[{"
	    "\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"train\",\"uid\":\"js-train\","
	    "\"controller\":true}]},\"data\":{\"placement\":\"{\\\"uid\\\":\\\"js-train\\\",\\\"replicatedJobs\\\":{"
	    "\\\"w\\\":[[[0,3,\\\"rack=r2\\\"]]]}}\"}}");
	start(r, "rack");
	wait_until(&r->fake, configmap_read, NULL, 10, "the record read");
	pause_ms(1500); /* several passes */
	if (logged(&r->fake, 0, "PATCH", NULL) >= 0 || logged(&r->fake, 0, "DELETE", NULL) >= 0) {
		print_log(&r->fake);
		fail_msg("a JobSet running under a record of before attempts was touched");
	}
	set_restarts(&r->fake, "train", 3);
	wait_until(&r->fake, record_has, "\"attempt\":3", 10, "the record of attempt 3");
	wait_until(&r->fake, placed, "train", 10, "train resumed for attempt 3");
	finish(r);
}

/* Issue 36 L7: a JobSet whose record was written before a controller
 * restart (the controller stopped between the record and the resume) is
 * resumed from it by the next controller, and gets its Placed Event, as
 * one placed in one go does. Before, the resume came without the Event. */
static int placed_event(struct fake *f, const char *unused)
{
	(void)unused;
	return logged(f, 0, "POST /api/v1/namespaces/ns/events", "\"reason\":\"Placed\"") >= 0;
}

static void a_jobset_resumed_from_a_record_of_before_a_restart_gets_its_placed_event(void **state)
{
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "1");
	put(&r->fake, CONFIGMAPS,
	    "{\"metadata\":{\"name\":\"train-placement\",\"namespace\":\"ns\",\"uid\":\"cm-1\",\"ownerReferences\":[{"
	    "\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"train\",\"uid\":\"js-train\","
	    "\"controller\":true}]},\"data\":{\"placement\":\"{\\\"uid\\\":\\\"js-train\\\",\\\"attempt\\\":0,"
	    "\\\"replicatedJobs\\\":{\\\"w\\\":[[[0,3,\\\"rack=r2\\\"]]]}}\"}}");
	start(r, "rack");
	wait_until(&r->fake, placed, "train", 10, "train resumed from its record");
	wait_until(&r->fake, placed_event, NULL, 10, "the Placed Event");
	finish(r);
}

/* The topology cannot be read (the Kueue Topology named is missing) and a
 * JobSet waits for it; a placed JobSet that restarts meanwhile is still
 * suspended and its record of attempt 0 dropped at once (its pods must not
 * be pinned by it), then waits, saying why, like the other. */
static int suspended_for_attempt_1(struct fake *f, const char *unused)
{
	(void)unused;
	return logged(f, 0, "PATCH /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/train",
		      "restart attempt 1") >= 0;
}

static int suspended_as_stuck(struct fake *f, const char *unused)
{
	(void)unused;
	return logged(f, 0, "PATCH /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/pair",
		      "moving Jobs alone failed") >= 0;
}

static void a_restart_is_handled_while_the_topology_is_unreadable(void **state)
{
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "waits", 4, "2");
	gated_jobset(&r->fake, "train", 4, "2");
	patch_jobset(&r->fake, "train",
		     "{\"metadata\":{\"annotations\":{\"muster.dev/placement\":\"placed\"}},"
		     "\"spec\":{\"suspend\":false}}");
	put(&r->fake, CONFIGMAPS,
	    "{\"metadata\":{\"name\":\"train-placement\",\"namespace\":\"ns\",\"uid\":\"cm-1\",\"ownerReferences\":[{"
	    "\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"train\",\"uid\":\"js-train\","
	    "\"controller\":true}]},\"data\":{\"placement\":\"{\\\"uid\\\":\\\"js-train\\\",\\\"attempt\\\":0,"
	    "\\\"replicatedJobs\\\":{\\\"w\\\":[[[0,3,\\\"rack=r2\\\"]]]}}\"}}");
	start_with(r, NULL, "missing", 300);
	wait_until(&r->fake, configmap_read, NULL, 10, "the record read");
	set_restarts(&r->fake, "train", 1);
	wait_until(&r->fake, record_absent, "train", 10, "the record of attempt 0 dropped");
	/* The suspend follows the drop (a write later): waited for, not raced. */
	wait_until(&r->fake, suspended_for_attempt_1, NULL, 10, "train suspended for its restart");
	assert_true(r->fake.topology_reads > 0);
	finish(r);
}

/* four_nodes, and rack r3 (n5 n6) free to move to. */
static void six_nodes(struct fake *f)
{
	four_nodes(f);
	node(f, "n5", "r3", "True", NULL);
	node(f, "n6", "r3", "True", NULL);
}

/* Deletes both nodes of rack r1 or r2. */
static void lose_rack(struct fake *f, const char *rack)
{
	pthread_mutex_lock(&f->lock);
	delete_locked(f, NODES, "", strcmp(rack, "r1") == 0 ? "n1" : "n3");
	delete_locked(f, NODES, "", strcmp(rack, "r1") == 0 ? "n2" : "n4");
	pthread_mutex_unlock(&f->lock);
}

/* The Jobs of "pair" (2 Jobs of 2 pods of 3 cpu, each alone in a rack:
 * upstream JobSet's exclusive-topology) as JobSet made them. */
static void pair_jobs(struct fake *f)
{
	for (int i = 0; i < 2; i++) {
		char json[512];

		snprintf(json, sizeof(json),
			 "{\"metadata\":{\"name\":\"pair-w-%d\",\"namespace\":\"ns\",\"uid\":\"job-%d\","
			 "\"labels\":{\"jobset.sigs.k8s.io/jobset-uid\":\"js-pair\","
			 "\"jobset.sigs.k8s.io/restart-attempt\":\"0\"}}}",
			 i, i);
		put(f, JOBS, json);
	}
}

static void gated_pair(struct fake *f)
{
	put(f, JOBSETS,
	    "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"pair\","
	    "\"namespace\":\"ns\",\"uid\":\"js-pair\",\"creationTimestamp\":\"2026-11-25T10:00:00Z\","
	    "\"annotations\":{\"muster.dev/placement\":\"waiting\","
	    "\"alpha.jobset.sigs.k8s.io/exclusive-topology\":\"rack\"}},\"spec\":{\"suspend\":true,"
	    "\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":2,"
	    "\"completions\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}}}}]},\"status\":{}}");
}

static char *pair_record(struct fake *f)
{
	return record_text(f, "pair");
}

/* The rack job `job` of "pair" is recorded in ("r1"), or "" (static). */
static const char *rack_of_job(struct fake *f, int job)
{
	static char rack[8];
	char *text = pair_record(f), *at = text;

	rack[0] = '\0';
	for (int i = 0; at && i <= job; i++)
		at = strstr(at + 1, "rack=");
	if (at)
		snprintf(rack, sizeof(rack), "%.2s", at + 5);
	free(text);
	return rack;
}

static int retire_listed(struct fake *f, const char *needle)
{
	cJSON *cm = get(f, CONFIGMAPS, "pair-placement");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "metadata"),
						 "annotations"),
		"muster.dev/placement-retire");
	int yes = needle ? cJSON_IsString(a) && strstr(a->valuestring, needle) != NULL
			 : !cJSON_IsString(a) || !a->valuestring[0];

	cJSON_Delete(cm);
	return yes;
}

static int job_deleted(struct fake *f, const char *path)
{
	return logged(f, 0, path, "\"Foreground\"") >= 0;
}

/* Every node of the rack one Job of "pair" is pinned to is deleted while
 * its pods are not bound; the other Job's rack still has room. Only that
 * Job moves: the record's runs of job 1 point to the free rack r3, job 0's
 * stay, the JobSet is never suspended, and the Job to delete is listed on
 * the record's ConfigMap. The controller stops before the pod route's
 * cache expires; the next one reads the list and deletes the Job
 * (Foreground, by its uid) when it is due, then clears the list. Before,
 * the whole JobSet was suspended and placed again. */
static void a_stranded_job_moves_alone_and_the_next_controller_deletes_it(void **state)
{
	struct run *r = new_run();
	struct placement_stats stats;
	char lost[8], kept[8], *text;

	(void)state;
	six_nodes(&r->fake);
	gated_pair(&r->fake);
	pair_jobs(&r->fake);
	start_with(r, "rack", NULL, 2000);
	wait_until(&r->fake, placed, "pair", 10, "pair placed");
	snprintf(kept, sizeof(kept), "%s", rack_of_job(&r->fake, 0));
	snprintf(lost, sizeof(lost), "%s", rack_of_job(&r->fake, 1));
	assert_string_not_equal(kept, lost);
	assert_string_not_equal(lost, "r3");
	lose_rack(&r->fake, lost);
	wait_until(&r->fake, retire_listed, "w/1=job-1@", 10, "job 1 listed to delete");
	assert_string_equal(rack_of_job(&r->fake, 1), "r3");
	assert_string_equal(rack_of_job(&r->fake, 0), kept);
	text = pair_record(&r->fake);
	assert_non_null(strstr(text, "\"attempt\":0"));
	free(text);
	assert_true(placed(&r->fake, "pair"));
	assert_int_equal(logged(&r->fake, 0, "PATCH", "\"suspend\":true"), -1);
	assert_int_equal(logged(&r->fake, 0, "DELETE /apis/batch", NULL), -1); /* not before the hold */
	for (int i = 0; i < 500; i++) { /* counted once the patch has answered */
		placement_loop_stats(r->loop, &stats);
		if (stats.moves)
			break;
		pause_ms(10);
	}
	assert_int_equal(stats.moves, 1);
	assert_int_equal(stats.relocations, 0);
	/* Stopped within the hold; the next controller finishes the move. */
	atomic_store(&r->stop, 1);
	pthread_join(r->thread, NULL);
	placement_loop_free(r->loop);
	atomic_store(&r->stop, 0);
	start_with(r, "rack", NULL, 2000);
	wait_until(&r->fake, job_deleted, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-1", 10,
		   "job 1 deleted");
	assert_true(logged(&r->fake, 0, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-1", "\"job-1\"") >=
		    0);
	assert_int_equal(logged(&r->fake, 0, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-0", NULL), -1);
	wait_until(&r->fake, retire_listed, NULL, 10, "the list cleared");
	assert_int_equal(logged(&r->fake, 0, "PATCH", "\"suspend\":true"), -1);
	finish(r);
}

/* A Job JobSet made again during the wait (here: job 1 made anew while the
 * pod route may still hold the old record) whose pod was pinned by the old
 * runs is deleted when the wait ends, by its own uid; the listed uid is
 * gone. Before, only the listed uid was deleted and such a Job's pods
 * stayed pinned to the lost rack for good. */
static void a_job_made_again_during_the_wait_with_old_pins_is_deleted(void **state)
{
	struct run *r = new_run();
	char lost[8], pod[1024];

	(void)state;
	six_nodes(&r->fake);
	gated_pair(&r->fake);
	pair_jobs(&r->fake);
	start_with(r, "rack", NULL, 3000);
	wait_until(&r->fake, placed, "pair", 10, "pair placed");
	snprintf(lost, sizeof(lost), "%s", rack_of_job(&r->fake, 1));
	lose_rack(&r->fake, lost);
	wait_until(&r->fake, retire_listed, "w/1=job-1@", 10, "job 1 listed to delete");
	/* JobSet made job 1 again during the wait; its pod pinned by the old runs. */
	pthread_mutex_lock(&r->fake.lock);
	delete_locked(&r->fake, JOBS, "ns", "pair-w-1");
	pthread_mutex_unlock(&r->fake.lock);
	put(&r->fake, JOBS,
	    "{\"metadata\":{\"name\":\"pair-w-1\",\"namespace\":\"ns\",\"uid\":\"job-1b\",\"labels\":{"
	    "\"jobset.sigs.k8s.io/jobset-uid\":\"js-pair\",\"jobset.sigs.k8s.io/restart-attempt\":\"0\"}}}");
	snprintf(
		pod, sizeof(pod),
		"{\"metadata\":{\"name\":\"pair-w-1-0-x\",\"namespace\":\"ns\",\"uid\":\"pod-1b\","
		"\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"pair\",\"jobset.sigs.k8s.io/replicatedjob-name\":"
		"\"w\",\"jobset.sigs.k8s.io/job-index\":\"1\"},\"annotations\":{"
		"\"batch.kubernetes.io/job-completion-index\":\"0\"},\"ownerReferences\":[{\"kind\":\"Job\","
		"\"name\":\"pair-w-1\",\"uid\":\"job-1b\",\"controller\":true}]},"
		"\"spec\":{\"nodeSelector\":{\"rack\":\"%s\"},\"containers\":[{\"name\":\"c\"}]}}",
		lost);
	put(&r->fake, PODS, pod);
	wait_until(&r->fake, job_deleted, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-1", 15,
		   "job 1 deleted");
	if (logged(&r->fake, 0, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-1", "\"job-1b\"") < 0) {
		print_log(&r->fake);
		fail_msg("the Job made again was not deleted by its uid");
	}
	assert_int_equal(logged(&r->fake, 0, "PATCH", "\"suspend\":true"), -1);
	finish(r);
}

/* A Job of "train" (job 0 of w) pinned whole in rack `rack` by the pin
 * route's Job half (its pod template labelled muster.dev/job-pinned), or, with rack NULL,
 * one whose pods are pinned one by one. */
static void train_job(struct fake *f, const char *uid, const char *rack)
{
	char json[1024];

	snprintf(
		json, sizeof(json),
		"{\"metadata\":{\"name\":\"train-w-0\",\"namespace\":\"ns\",\"uid\":\"%s\","
		"\"labels\":{\"jobset.sigs.k8s.io/jobset-uid\":\"js-train\"},\"ownerReferences\":[{"
		"\"kind\":\"JobSet\",\"name\":\"train\",\"uid\":\"js-train\",\"controller\":true}]},"
		"\"spec\":{\"completions\":4,\"template\":{\"metadata\":{\"labels\":{"
		"\"muster.dev/placement\":\"true\"%s}},\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\"}]}}}}",
		uid, rack ? ",\"muster.dev/job-pinned\":\"true\"" : "",
		rack ? "\"nodeSelector\":{\"rack\":\"" : "", rack ? rack : "", rack ? "\"}," : "");
	put(f, JOBS, json);
}

/* A Job of "train" whose pods the pin route's Job half pins one by one, its
 * pod template given the rack of most of them (`rack`, the annotation
 * muster.dev/job-selector). */
static void train_job_shared(struct fake *f, const char *uid, const char *rack)
{
	char json[1024];

	snprintf(
		json, sizeof(json),
		"{\"metadata\":{\"name\":\"train-w-0\",\"namespace\":\"ns\",\"uid\":\"%s\","
		"\"labels\":{\"jobset.sigs.k8s.io/jobset-uid\":\"js-train\"},\"ownerReferences\":[{"
		"\"kind\":\"JobSet\",\"name\":\"train\",\"uid\":\"js-train\",\"controller\":true}]},"
		"\"spec\":{\"completions\":4,\"template\":{\"metadata\":{\"labels\":{"
		"\"muster.dev/placement\":\"true\"},\"annotations\":{\"" MUSTER_ANNOTATION_JOB_SELECTOR
		"\":\"rack=%s\"}},\"spec\":{\"nodeSelector\":{\"rack\":\"%s\"},\"containers\":[{\"name\":\"c\"}]}}}}",
		uid, rack, rack);
	put(f, JOBS, json);
}

/* train placed in r1, its Job made by `make_job` (rack r1 or NULL), then
 * r1's nodes deleted; returns once train is placed again in r2, with *mark
 * the fake's log position before the delete. */
static struct run *placed_again_after_r1_lost(void (*make_job)(struct fake *, const char *, const char *),
					      const char *rack, size_t *mark)
{
	struct run *r = new_run();

	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	wait_until(&r->fake, placed_in, "r1", 10, "train placed in r1");
	make_job(&r->fake, "job-0", rack);
	pthread_mutex_lock(&r->fake.lock);
	*mark = r->fake.log_count;
	delete_locked(&r->fake, NODES, "", "n1");
	delete_locked(&r->fake, NODES, "", "n2");
	pthread_mutex_unlock(&r->fake.lock);
	wait_until(&r->fake, placed_in, "r2", 30, "train placed again in r2");
	return r;
}

/* train is placed in r1 and JobSet made its Job, pinned whole to r1; then
 * r1's nodes go before its pods are bound. The JobSet is suspended and
 * placed again in r2, and its Job is deleted (by its uid) after the hold
 * and before the resume, so that JobSet makes it again pinned by the new
 * record. Before, the Job stayed, and its pods were made pinned to r1 (the
 * old domain) for good. So does a Job pinned pod by pod whose pod template
 * got the rack of most of its pods (it carries the old domain too); one
 * pinned pod by pod with no such share stays. */
static void a_jobset_placed_again_whole_deletes_its_jobs_pinned_whole_first(void **state)
{
	struct run *r;
	int deleted, resumed;
	size_t mark;

	(void)state;
	r = placed_again_after_r1_lost(train_job, "r1", &mark);
	deleted = logged(&r->fake, mark, "DELETE /apis/batch/v1/namespaces/ns/jobs/train-w-0", "\"job-0\"");
	resumed = logged(&r->fake, mark, "PATCH /apis/jobset.x-k8s.io", "\"suspend\":false");
	if (deleted < 0 || resumed < 0 || deleted > resumed) {
		print_log(&r->fake);
		fail_msg("delete of the Job pinned whole %d, resume %d", deleted, resumed);
	}
	assert_true(logged(&r->fake, mark, "DELETE /apis/batch/v1/namespaces/ns/jobs/train-w-0",
			   "Background") == deleted);
	finish(r);

	/* Pinned pod by pod: its pods are pinned by the new record, it stays. */
	r = placed_again_after_r1_lost(train_job, NULL, &mark);
	assert_int_equal(logged(&r->fake, 0, "DELETE /apis/batch", NULL), -1);
	finish(r);

	/* Pinned pod by pod, its template given r1: deleted before the resume. */
	r = placed_again_after_r1_lost(train_job_shared, "r1", &mark);
	deleted = logged(&r->fake, mark, "DELETE /apis/batch/v1/namespaces/ns/jobs/train-w-0", "\"job-0\"");
	resumed = logged(&r->fake, mark, "PATCH /apis/jobset.x-k8s.io", "\"suspend\":false");
	if (deleted < 0 || resumed < 0 || deleted > resumed) {
		print_log(&r->fake);
		fail_msg("delete of the Job given a share of the old record %d, resume %d", deleted, resumed);
	}
	finish(r);
}

/* A controller that finds a JobSet waiting when it starts (the last leader
 * stopped while placing it again, during the hold) deletes its Jobs pinned
 * whole by the old record before it places it: none of them makes pods in
 * the old domain. Before, only the controller that suspended it knew, and
 * a new one placed it at once. A finished Job pinned whole stays (deleted,
 * it would run again). */
static void a_jobset_found_waiting_at_start_loses_its_jobs_pinned_whole_first(void **state)
{
	struct run *r = new_run();
	int deleted, resumed;

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	train_job(&r->fake, "job-0", "r9");
	start(r, "rack");
	wait_until(&r->fake, placed, "train", 10, "train placed");
	deleted = logged(&r->fake, 0, "DELETE /apis/batch/v1/namespaces/ns/jobs/train-w-0", "\"job-0\"");
	resumed = logged(&r->fake, 0, "PATCH /apis/jobset.x-k8s.io", "\"suspend\":false");
	if (deleted < 0 || resumed < 0 || deleted > resumed) {
		print_log(&r->fake);
		fail_msg("delete of the Job pinned whole %d, resume %d", deleted, resumed);
	}
	finish(r);

	r = new_run();
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	train_job(&r->fake, "job-0", "r9");
	{
		cJSON *job = get(&r->fake, JOBS, "train-w-0");

		cJSON_AddRawToObject(job, "status",
				     "{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}");
		pthread_mutex_lock(&r->fake.lock);
		put_locked(&r->fake, JOBS, job);
		pthread_mutex_unlock(&r->fake.lock);
	}
	start(r, "rack");
	wait_until(&r->fake, placed, "train", 10, "train placed");
	assert_int_equal(logged(&r->fake, 0, "DELETE /apis/batch", NULL), -1);
	finish(r);
}

/* Like a_job_made_again_during_the_wait_with_old_pins_is_deleted, but the
 * Job made again was pinned whole by a cached copy of the old record (its
 * pod template carries the lost rack) and has no pod yet. It is deleted by
 * its own uid when the wait ends. Before, with no pod to show the old pin,
 * it was kept ("made again already") and its pods would go to the lost
 * rack. */
static void a_job_made_again_pinned_whole_by_the_old_record_is_deleted(void **state)
{
	struct run *r = new_run();
	char lost[8], job[1024];

	(void)state;
	six_nodes(&r->fake);
	gated_pair(&r->fake);
	pair_jobs(&r->fake);
	start_with(r, "rack", NULL, 3000);
	wait_until(&r->fake, placed, "pair", 10, "pair placed");
	snprintf(lost, sizeof(lost), "%s", rack_of_job(&r->fake, 1));
	lose_rack(&r->fake, lost);
	wait_until(&r->fake, retire_listed, "w/1=job-1@", 10, "job 1 listed to delete");
	pthread_mutex_lock(&r->fake.lock);
	delete_locked(&r->fake, JOBS, "ns", "pair-w-1");
	pthread_mutex_unlock(&r->fake.lock);
	snprintf(
		job, sizeof(job),
		"{\"metadata\":{\"name\":\"pair-w-1\",\"namespace\":\"ns\",\"uid\":\"job-1b\",\"labels\":{"
		"\"jobset.sigs.k8s.io/jobset-uid\":\"js-pair\",\"jobset.sigs.k8s.io/restart-attempt\":\"0\"}},"
		"\"spec\":{\"completions\":2,\"template\":{\"metadata\":{\"labels\":{"
		"\"muster.dev/placement\":\"true\",\"muster.dev/job-pinned\":\"true\"}},\"spec\":{\"nodeSelector\":{\"rack\":\"%s\"},"
		"\"containers\":[{\"name\":\"c\"}]}}}}",
		lost);
	put(&r->fake, JOBS, job);
	wait_until(&r->fake, job_deleted, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-1", 15,
		   "job 1 deleted");
	if (logged(&r->fake, 0, "DELETE /apis/batch/v1/namespaces/ns/jobs/pair-w-1", "\"job-1b\"") < 0) {
		print_log(&r->fake);
		fail_msg("the Job made again pinned whole by the old record was not deleted by its uid");
	}
	finish(r);
}

/* RBAC without jobs (an install not upgraded): moving Jobs alone fails;
 * after MOVE_FAILURES_MAX tries the whole JobSet is placed again, saying
 * why, instead of its pods waiting for good. */
static void moves_that_keep_failing_fall_back_to_the_whole_jobset(void **state)
{
	struct run *r = new_run();
	char lost[8];

	(void)state;
	six_nodes(&r->fake);
	gated_pair(&r->fake);
	r->fake.jobs_forbidden = 1;
	start(r, "rack");
	wait_until(&r->fake, placed, "pair", 10, "pair placed");
	snprintf(lost, sizeof(lost), "%s", rack_of_job(&r->fake, 1));
	lose_rack(&r->fake, lost);
	wait_until(&r->fake, suspended_as_stuck, NULL, 20, "pair suspended to be placed again whole");
	wait_until(&r->fake, placed, "pair", 20, "pair placed again whole");
	assert_int_equal(logged(&r->fake, 0, "DELETE /apis/batch", NULL), -1);
	finish(r);
}

/* The record's create meets a ConfigMap of its name (409) that is gone by
 * the read that follows (its owner deleted it, as muster asked): the name
 * is free, so the record is written at once. Before, the write failed
 * ("retried") and, the JobSet not counted as waiting, no later pass came
 * while nothing else in the cluster changed: it waited for ever (the CI
 * run of afa5826). */
static void a_record_name_freed_while_written_is_written_at_once(void **state)
{
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	r->fake.configmap_post_conflicts = 2;
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	/* Under the timed retry (PLACEMENT_RETRY_S): the pass that met them. */
	wait_until(&r->fake, placed, "train", 8, "train placed in the pass that met the conflicts");
	assert_int_equal(r->fake.configmap_post_conflicts, 0);
	finish(r);
}

static int waits_for_the_users_configmap(struct fake *f, const char *name)
{
	cJSON *js = get(f, JOBSETS, name);
	const cJSON *reason = annotation(js, "muster.dev/placement-reason");
	int yes = cJSON_IsString(reason) && strstr(reason->valuestring, "muster never touches it");

	cJSON_Delete(js);
	return yes;
}

/* A user's ConfigMap of the record's name keeps the JobSet waiting, saying
 * so; once the user deletes it, a later pass places the JobSet, though
 * ConfigMaps are not watched and nothing else changes. Before, a JobSet
 * the core could place but whose record could not be written did not
 * count as waiting, so no timed pass came. */
static void a_jobset_kept_waiting_by_a_users_configmap_is_placed_once_it_goes(void **state)
{
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	put(&r->fake, CONFIGMAPS,
	    "{\"metadata\":{\"name\":\"train-placement\",\"namespace\":\"ns\",\"uid\":\"users\"},"
	    "\"data\":{\"placement\":\"the user's own notes\"}}");
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	wait_until(&r->fake, waits_for_the_users_configmap, "train", 10,
		   "train waiting for the user's ConfigMap");
	pause_ms(300); /* the pass that the reason's write brings */
	assert_false(placed(&r->fake, "train"));
	pthread_mutex_lock(&r->fake.lock);
	delete_locked(&r->fake, CONFIGMAPS, "ns", "train-placement");
	pthread_mutex_unlock(&r->fake.lock);
	/* A pass every PLACEMENT_RETRY_S while a JobSet waits, and one more
	 * for a busy machine. */
	wait_until(&r->fake, placed, "train", 2 * PLACEMENT_RETRY_S, "train placed once the ConfigMap went");
	finish(r);
}

/* Every pod of train ran (bound); then one is gone (its replacement would
 * be pending) and both nodes of its rack get a taint it does not tolerate.
 * The Job started, so its failure policy decides: no move, no suspend,
 * the record kept, over several passes. Once the rack's nodes are deleted
 * too, the replacement could never run (nor fail): the JobSet is placed
 * again. Before, the replacement counted as stranded and the whole JobSet
 * was suspended and placed again as soon as the taint came. */
static void a_job_whose_pods_all_ran_is_left_to_its_failure_policy(void **state)
{
	struct run *r = new_run();
	struct placement_stats stats;
	uint64_t passes;
	char *before, *after;

	(void)state;
	four_nodes(&r->fake);
	gated_jobset(&r->fake, "train", 4, "2");
	start(r, "rack");
	wait_until(&r->fake, placed_in, "r1", 10, "train placed in r1");
	for (int i = 0; i < 4; i++) {
		char pod[1024];

		snprintf(
			pod, sizeof(pod),
			"{\"metadata\":{\"name\":\"train-w-0-%d\",\"namespace\":\"ns\",\"uid\":\"p%d\","
			"\"labels\":{\"jobset.sigs.k8s.io/jobset-uid\":\"js-train\","
			"\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\",\"jobset.sigs.k8s.io/job-index\":\"0\","
			"\"muster.dev/placement\":\"true\"},\"annotations\":{"
			"\"batch.kubernetes.io/job-completion-index\":\"%d\"}},\"spec\":{\"nodeName\":\"n%d\","
			"\"nodeSelector\":{\"rack\":\"r1\"},\"containers\":[{\"name\":\"c\",\"resources\":{"
			"\"requests\":{\"cpu\":\"2\"}}}]},\"status\":{\"phase\":\"Running\"}}",
			i, i, i, 1 + i / 2);
		put(&r->fake, PODS, pod);
	}
	/* A Node event after the pods' (one watch stream each, in order of
	 * arrival): the pass it brings sees all four bound, the Job started. */
	pause_ms(200);
	placement_loop_stats(r->loop, &stats);
	passes = stats.passes;
	node(&r->fake, "n4", "r2", "True", NULL);
	for (int i = 0; placement_loop_stats(r->loop, &stats), stats.passes <= passes; i++) {
		if (i == 1000)
			fail_msg("no pass in 10 s after a Node event");
		pause_ms(10);
	}
	before = record_text(&r->fake, "train");
	pthread_mutex_lock(&r->fake.lock);
	delete_locked(&r->fake, PODS, "ns", "train-w-0-3");
	pthread_mutex_unlock(&r->fake.lock);
	placement_loop_stats(r->loop, &stats);
	passes = stats.passes;
	node(&r->fake, "n1", "r1", "True", "maintenance");
	node(&r->fake, "n2", "r1", "True", "maintenance");
	pause_ms(2500); /* past --placement-replace-after (1 s here) */
	placement_loop_stats(r->loop, &stats);
	assert_true(stats.passes > passes); /* the taint was seen */
	after = record_text(&r->fake, "train");
	assert_non_null(before);
	assert_non_null(after);
	assert_string_equal(before, after);
	if (logged(&r->fake, 0, "PATCH", "\"suspend\":true") >= 0) {
		print_log(&r->fake);
		fail_msg("a started Job's pending replacement moved the JobSet");
	}
	pthread_mutex_lock(&r->fake.lock);
	delete_locked(&r->fake, NODES, "", "n1");
	delete_locked(&r->fake, NODES, "", "n2");
	pthread_mutex_unlock(&r->fake.lock);
	wait_until(&r->fake, placed_in, "r2", 30, "train placed again in r2 once its rack is gone");
	free(before);
	free(after);
	finish(r);
}

/* ---- one watch per kind for the whole process ---- */

struct both {
	struct fake fake;
	struct controller_group *group;
	struct placement_loop *loop;
	atomic_int stop;
	pthread_t gang, place;
};

static void *gang_main(void *arg)
{
	struct both *b = arg;
	char *cause = NULL;

	controller_group_run(b->group, &b->stop, &cause);
	free(cause);
	return NULL;
}

static void *place_main(void *arg)
{
	struct both *b = arg;
	char *cause = NULL;

	placement_loop_run(b->loop, &b->stop, &cause);
	free(cause);
	return NULL;
}

static void count_gang_pods(void *arg, const struct controller_jobset_view *view)
{
	if (strcmp(view->name, "gang") == 0)
		*(size_t *)arg = view->pod_records;
}

static size_t gang_pods(struct both *b)
{
	size_t records = 0;

	controller_group_foreach(b->group, count_gang_pods, &records);
	return records;
}

/* A pod of JobSet "gang" (gang-started, not placed), bound to node n3. */
static void gang_pod(struct fake *f, int index)
{
	char json[1024];

	snprintf(
		json, sizeof(json),
		"{\"metadata\":{\"name\":\"gang-w-%d\",\"namespace\":\"ns\",\"uid\":\"gp-%d\",\"labels\":{"
		"\"" MUSTER_LABEL_GROUP_SCHEDULING "\":\"true\",\"jobset.sigs.k8s.io/jobset-name\":\"gang\","
		"\"jobset.sigs.k8s.io/jobset-uid\":\"js-gang\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","
		"\"jobset.sigs.k8s.io/restart-attempt\":\"0\"}},\"spec\":{\"nodeName\":\"n3\",\"containers\":[{"
		"\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
		index, index);
	put(f, PODS, json);
}

static int wait_gang_pods(struct both *b, size_t want)
{
	for (int i = 0; i < 1000; i++) {
		if (gang_pods(b) >= want)
			return 1;
		pause_ms(10);
	}
	return 0;
}

/* The gang loop and placement in one process, as main.c wires them: one
 * JobSet watch and one pod watch against the API server, never two open at
 * once, and both loops get their events (the gang loop its JobSet and its
 * labeled pods, placement its gated JobSet, the bound pods and the Nodes).
 * The pod watch begins again once, wider, when placement joins it. */
static void one_watch_per_kind_feeds_both_loops(void **state)
{
	struct both *b = calloc(1, sizeof(*b));
	struct kube_config cfg;
	struct controller_group_options group_options = {
		.namespace = "ns",
		.push_port = 1,
		.push_parallelism = 4,
		.push_target_timeout_ms = 100,
		.push_total_timeout_ms = 500,
	};
	struct placement_options options = {
		.namespace = "ns", .levels = "rack", .replace_after_s = 1, .hold_ms = 300
	};
	char *cause = NULL;

	(void)state;
	assert_non_null(b);
	fake_init(&b->fake);
	group_options.transport = options.transport = &fake_transport;
	group_options.transport_ctx = options.transport_ctx = &b->fake;
	four_nodes(&b->fake);
	put(&b->fake, JOBSETS,
	    "{\"metadata\":{\"name\":\"gang\",\"namespace\":\"ns\",\"uid\":\"js-gang\","
	    "\"annotations\":{\"muster.dev/group-scheduling-timeout\":\"60\"}},\"spec\":{\"replicatedJobs\":[{"
	    "\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":2,\"completions\":2}}}]},"
	    "\"status\":{}}");
	gang_pod(&b->fake, 0);
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	assert_int_equal(controller_group_new(&cfg, &group_options, &b->group, &cause), 0);
	controller_group_watches(b->group, &options.jobset_watch, &options.pod_watch);
	assert_int_equal(placement_loop_new(&cfg, &options, &b->loop, &cause), 0);
	assert_int_equal(pthread_create(&b->gang, NULL, gang_main, b), 0);
	assert_int_equal(pthread_create(&b->place, NULL, place_main, b), 0);
	/* The gang loop tracks its JobSet and its pod. */
	assert_true(wait_gang_pods(b, 1));
	/* A JobSet asks for a placement: placement joins the pod watch and
	 * places it (its JobSets, Nodes and bound pods listed). */
	gated_jobset(&b->fake, "train", 4, "2");
	wait_until(&b->fake, placed_in, "r1", 10, "train placed in r1");
	/* After the join, both still get events from the one pod watch: a pod
	 * of the gang's, bound, counts for it; placement sees its use. */
	gang_pod(&b->fake, 1);
	assert_true(wait_gang_pods(b, 2));
	atomic_store(&b->stop, 1);
	pthread_join(b->place, NULL);
	pthread_join(b->gang, NULL);
	pthread_mutex_lock(&b->fake.lock);
	assert_int_equal(b->fake.most_open[JOBSETS], 1);
	assert_int_equal(b->fake.most_open[PODS], 1);
	assert_int_equal(b->fake.most_open[NODES], 1);
	assert_int_equal(b->fake.streams[JOBSETS], 1);
	assert_int_equal(b->fake.streams[PODS], 2); /* the gang's, then the wider one */
	pthread_mutex_unlock(&b->fake.lock);
	placement_loop_free(b->loop);
	controller_group_free(b->group);
	for (int k = 0; k < KINDS; k++)
		cJSON_Delete(b->fake.objects[k]);
	for (size_t i = 0; i < b->fake.event_count; i++)
		free(b->fake.events[i].line);
	for (size_t i = 0; i < b->fake.log_count; i++)
		free(b->fake.bodies[i]);
	free(b);
}

/* Issue 36 L6: a JobSet the webhook marked as Volcano's although it asks
 * muster for a rack gets one Warning Event PlacementSkipped, whatever
 * changes it sees after; a mark of a value muster does not know says
 * nothing. Before, the request was dropped with no Event. */
static int skipped_event(struct fake *f, const char *name)
{
	char body[128];

	snprintf(body, sizeof(body), "\"name\":\"%s\"", name);
	return logged(f, 0, "POST /api/v1/namespaces/ns/events", "\"reason\":\"PlacementSkipped\"") >= 0 &&
	       logged(f, 0, "POST /api/v1/namespaces/ns/events", body) >= 0;
}

static size_t count_logged(struct fake *f, const char *line, const char *body)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->log_count; i++)
		n += strstr(f->log[i], line) && strstr(f->bodies[i], body);
	pthread_mutex_unlock(&f->lock);
	return n;
}

static void a_jobset_left_to_volcano_is_said_once_as_an_event(void **state)
{
	static const char mixed[] =
		"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"mixed\","
		"\"namespace\":\"ns\",\"uid\":\"js-mixed\",\"annotations\":{\"muster.dev/placement-skipped\":"
		"\"volcano\"}},\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"template\":{\"spec\":{}}}]},"
		"\"status\":{}}";
	static const char odd[] =
		"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"odd\","
		"\"namespace\":\"ns\",\"uid\":\"js-odd\",\"annotations\":{\"muster.dev/placement-skipped\":"
		"\"whoever\"}},\"spec\":{\"replicatedJobs\":[]},\"status\":{}}";
	struct run *r = new_run();

	(void)state;
	four_nodes(&r->fake);
	put(&r->fake, JOBSETS, mixed);
	put(&r->fake, JOBSETS, odd);
	start(r, "rack");
	wait_until(&r->fake, skipped_event, "mixed", 10, "the PlacementSkipped Event");
	patch_jobset(&r->fake, "mixed", "{\"status\":{\"restarts\":1}}");
	pause_ms(1500);
	assert_int_equal(count_logged(&r->fake, "POST /api/v1/namespaces/ns/events", "PlacementSkipped"), 1);
	assert_int_equal(count_logged(&r->fake, "POST /api/v1/namespaces/ns/events", "\"name\":\"odd\""), 0);
	finish(r);
}

/* Issue 36: --placement-balanced is the default of a JobSet that does not
 * say (muster.dev/topology-balanced): 12 pods preferring a rack, on two
 * racks of 8, go 6 + 6 (Kueue's TASBalancedPlacement), not 8 + 4; a JobSet
 * that says "false" is packed as before. */
static void preferring_jobset(struct fake *f, const char *name, const char *balanced)
{
	char json[2048];

	snprintf(
		json, sizeof(json),
		"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":\"%s\","
		"\"namespace\":\"ns\",\"uid\":\"js-%s\",\"creationTimestamp\":\"2026-11-25T10:00:00Z\","
		"\"annotations\":{\"muster.dev/placement\":\"waiting\"%s%s%s}},\"spec\":{\"suspend\":true,"
		"\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":12,"
		"\"completions\":12,\"template\":{\"metadata\":{\"annotations\":{"
		"\"kueue.x-k8s.io/podset-preferred-topology\":\"rack\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}]},\"status\":{}}",
		name, name, balanced ? ",\"" MUSTER_ANNOTATION_TOPOLOGY_BALANCED "\":\"" : "",
		balanced ? balanced : "", balanced ? "\"" : "");
	put(f, JOBSETS, json);
}

static void the_balanced_default_applies_to_jobsets_that_do_not_say(void **state)
{
	struct run *r = new_run();
	char *text;

	(void)state;
	four_nodes(&r->fake);
	preferring_jobset(&r->fake, "even", NULL);
	start_balanced = 1;
	start(r, "rack");
	start_balanced = 0;
	wait_until(&r->fake, placed, "even", 10, "even placed");
	text = record_text(&r->fake, "even");
	assert_non_null(text);
	print_message("record: %s\n", text);
	assert_non_null(strstr(text, "[0,5,\"rack=r"));
	assert_non_null(strstr(text, "[6,11,\"rack=r"));
	free(text);
	finish(r);

	r = new_run();
	four_nodes(&r->fake);
	preferring_jobset(&r->fake, "packed", "false");
	start_balanced = 1;
	start(r, "rack");
	start_balanced = 0;
	wait_until(&r->fake, placed, "packed", 10, "packed placed");
	text = record_text(&r->fake, "packed");
	assert_non_null(text);
	print_message("record: %s\n", text);
	assert_non_null(strstr(text, "[0,7,\"rack=r"));
	free(text);
	finish(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_restart_attempt_is_placed_afresh),
		cmocka_unit_test(a_lost_domain_drops_the_record_before_the_suspend),
		cmocka_unit_test(with_no_topology_a_stranded_jobset_is_moved_by_its_one_label),
		cmocka_unit_test(room_taken_by_other_pods_is_seen_without_a_node_event),
		cmocka_unit_test(pod_events_alone_bring_one_pass_a_second),
		cmocka_unit_test(nodes_not_ready_are_not_free_room),
		cmocka_unit_test(a_placed_jobset_without_its_record_is_placed_again),
		cmocka_unit_test(a_record_of_before_attempts_is_adopted_not_replaced),
		cmocka_unit_test(a_jobset_resumed_from_a_record_of_before_a_restart_gets_its_placed_event),
		cmocka_unit_test(a_jobset_left_to_volcano_is_said_once_as_an_event),
		cmocka_unit_test(the_balanced_default_applies_to_jobsets_that_do_not_say),
		cmocka_unit_test(a_restart_is_handled_while_the_topology_is_unreadable),
		cmocka_unit_test(a_stranded_job_moves_alone_and_the_next_controller_deletes_it),
		cmocka_unit_test(a_job_made_again_during_the_wait_with_old_pins_is_deleted),
		cmocka_unit_test(a_jobset_placed_again_whole_deletes_its_jobs_pinned_whole_first),
		cmocka_unit_test(a_job_made_again_pinned_whole_by_the_old_record_is_deleted),
		cmocka_unit_test(a_jobset_found_waiting_at_start_loses_its_jobs_pinned_whole_first),
		cmocka_unit_test(moves_that_keep_failing_fall_back_to_the_whole_jobset),
		cmocka_unit_test(a_job_whose_pods_all_ran_is_left_to_its_failure_policy),
		cmocka_unit_test(a_record_name_freed_while_written_is_written_at_once),
		cmocka_unit_test(a_jobset_kept_waiting_by_a_users_configmap_is_placed_once_it_goes),
		cmocka_unit_test(one_watch_per_kind_feeds_both_loops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
