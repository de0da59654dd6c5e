/*
 * kube_client: requests, retries, pagination and the watch loop over a
 * kube_transport. See kube_client.h for the contract.
 *
 * Every request goes through request(): rate limit, send, translate the
 * status, retry what is transient. Paths with queries are assembled in a
 * bounded buffer (struct path_buf) so that no selector or continue token can
 * make a URL grow without limit.
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_client.h"

#include "json_arena.h"
#include "kube_ratelimit.h"
#include "muster_lock.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct kube_client {
	const struct kube_transport *ops;
	void *ctx;
	struct kube_clock clock;
	struct kube_ratelimit limit;
	long request_timeout_ms;
	long watch_timeout_s;
	size_t max_response;
	size_t max_watch_line;
	unsigned max_retries;
	uint64_t jitter_state;
	const atomic_int *stop; /* kube_client_set_stop, or kube_watch_run's while it runs */
	void (*free_ctx)(void *ctx); /* kube_client_own_transport */
	struct {
		_Atomic uint64_t requests, retries, watch_streams, relists, watch_events, list_pages_shrunk;
		_Atomic uint64_t errors[KUBE_STATS_ERROR_SLOTS];
	} stats;
};

static void stat_add(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static void stat_error(struct kube_client *c, int err)
{
	if (err < 0 && -err < KUBE_STATS_ERROR_SLOTS)
		stat_add(&c->stats.errors[-err]);
}

void kube_client_stats(const struct kube_client *client, struct kube_client_stats *out)
{
	struct kube_client *c = (struct kube_client *)client; /* atomic loads need a non-const object */

	out->requests = atomic_load_explicit(&c->stats.requests, memory_order_relaxed);
	out->retries = atomic_load_explicit(&c->stats.retries, memory_order_relaxed);
	out->watch_streams = atomic_load_explicit(&c->stats.watch_streams, memory_order_relaxed);
	out->relists = atomic_load_explicit(&c->stats.relists, memory_order_relaxed);
	out->watch_events = atomic_load_explicit(&c->stats.watch_events, memory_order_relaxed);
	out->list_pages_shrunk = atomic_load_explicit(&c->stats.list_pages_shrunk, memory_order_relaxed);
	for (int i = 0; i < KUBE_STATS_ERROR_SLOTS; i++)
		out->errors[i] = atomic_load_explicit(&c->stats.errors[i], memory_order_relaxed);
}

static uint64_t real_now_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void real_sleep_ns(void *arg, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	(void)arg;
	while (nanosleep(&ts, &ts) != 0)
		;
}

int kube_client_new(const struct kube_config *cfg, const struct kube_transport *ops, void *ctx,
		    const struct kube_clock *clock, struct kube_client **out, char **cause)
{
	struct kube_client *c;

	*out = NULL;
	if (!cfg || !ops || !ops->send || !ops->stream)
		return cause_err(cause, MUSTER_EINVAL, "kube_client_new needs a config and a transport");
	json_arena_install();
	c = calloc(1, sizeof(*c));
	if (!c)
		return MUSTER_ENOMEM;
	c->ops = ops;
	c->ctx = ctx;
	c->clock.now_ns = clock && clock->now_ns ? clock->now_ns : real_now_ns;
	c->clock.sleep_ns = clock && clock->sleep_ns ? clock->sleep_ns : real_sleep_ns;
	c->clock.arg = clock ? clock->arg : NULL;
	kube_ratelimit_init(&c->limit, cfg->qps, cfg->burst);
	c->request_timeout_ms =
		cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : KUBE_DEFAULT_REQUEST_TIMEOUT_MS;
	c->watch_timeout_s = cfg->watch_timeout_s > 0 ? cfg->watch_timeout_s : KUBE_DEFAULT_WATCH_TIMEOUT_S;
	c->max_response = cfg->max_response_bytes ? cfg->max_response_bytes : KUBE_DEFAULT_MAX_RESPONSE;
	c->max_watch_line =
		cfg->max_watch_line_bytes ? cfg->max_watch_line_bytes : KUBE_DEFAULT_MAX_WATCH_LINE;
	c->max_retries = cfg->max_retries;
	c->jitter_state = c->clock.now_ns(c->clock.arg) ^ (uint64_t)(uintptr_t)c ^ 0x9e3779b97f4a7c15u;
	*out = c;
	return MUSTER_OK;
}

void kube_client_free(struct kube_client *client)
{
	if (client && client->free_ctx)
		client->free_ctx(client->ctx);
	free(client);
}

void kube_client_own_transport(struct kube_client *client, void (*free_ctx)(void *ctx))
{
	client->free_ctx = free_ctx;
}

static int stopped(const atomic_int *stop)
{
	return stop && atomic_load(stop);
}

/* Sleeps ns, in slices when there is a stop flag so that it is honoured
 * within 100 ms. */
static void pause_ns(struct kube_client *c, uint64_t ns, const atomic_int *stop)
{
	const uint64_t slice = 100000000u;

	while (ns > 0 && !stopped(stop)) {
		uint64_t step = stop && ns > slice ? slice : ns;

		c->clock.sleep_ns(c->clock.arg, step);
		ns -= step;
	}
}

static void throttle(struct kube_client *c, const atomic_int *stop)
{
	uint64_t wait = kube_ratelimit_reserve(&c->limit, c->clock.now_ns(c->clock.arg));

	if (wait)
		pause_ns(c, wait, stop);
}

/* Exponential backoff for the attempt'th retry (0-based), capped at max_ms,
 * with "equal jitter": a random point in [d/2, d]. */
static uint64_t backoff_ns(struct kube_client *c, unsigned attempt, uint64_t max_ms)
{
	uint64_t d = KUBE_BACKOFF_BASE_MS;
	uint64_t x = c->jitter_state;

	for (unsigned i = 0; i < attempt && d < max_ms; i++)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	/* xorshift64: jitter needs spread, not secrecy. */
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->jitter_state = x;
	d = d * 1000000u;
	return d / 2 + x % (d / 2 + 1);
}

/* ---- bounded path building ---- */

struct path_buf {
	char buf[KUBE_PATH_MAX];
	size_t len;
	int overflow;
	int has_query;
};

static void pb_add(struct path_buf *pb, const char *s, size_t n)
{
	if (pb->overflow || n >= sizeof(pb->buf) - pb->len) {
		pb->overflow = 1;
		return;
	}
	memcpy(pb->buf + pb->len, s, n);
	pb->len += n;
	pb->buf[pb->len] = '\0';
}

static void pb_init(struct path_buf *pb, const char *path)
{
	pb->len = 0;
	pb->overflow = 0;
	pb->buf[0] = '\0';
	pb_add(pb, path, strlen(path));
	pb->has_query = strchr(path, '?') != NULL;
}

/* Appends "?key=value" or "&key=value", percent-encoding the value (all but
 * RFC 3986 unreserved characters). Empty or NULL values are skipped. */
static void pb_param(struct path_buf *pb, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";

	if (!value || !value[0])
		return;
	pb_add(pb, pb->has_query ? "&" : "?", 1);
	pb->has_query = 1;
	pb_add(pb, key, strlen(key));
	pb_add(pb, "=", 1);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		char enc[3] = { '%', hex[*p >> 4], hex[*p & 15] };

		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '.' || *p == '_' || *p == '~')
			pb_add(pb, (const char *)p, 1);
		else
			pb_add(pb, enc, 3);
	}
}

static void pb_param_uint(struct path_buf *pb, const char *key, unsigned long value)
{
	char num[24];

	snprintf(num, sizeof(num), "%lu", value);
	pb_param(pb, key, num);
}

/* ---- one request, with retries ---- */

static const char *const method_names[] = {
	[KUBE_METHOD_GET] = "GET",     [KUBE_METHOD_POST] = "POST",	[KUBE_METHOD_PUT] = "PUT",
	[KUBE_METHOD_PATCH] = "PATCH", [KUBE_METHOD_DELETE] = "DELETE",
};

/* Parses what the API server sent (a response body, a watch line), after
 * checking that it is UTF-8 without a NUL byte (utf8.h), so that no tree
 * the client hands out holds bytes that are not text. NULL with *utf8_cause
 * set (when utf8_cause is not NULL) when the check refuses it, NULL alone
 * when cJSON does. */
static cJSON *parse_text(const char *text, size_t len, const char *what, char **utf8_cause)
{
	if (utf8_check(text, len, what, utf8_cause))
		return NULL;
	return cJSON_ParseWithLength(text, len);
}

/* Turns a failed response into a cause carrying the Status message the API
 * server sends with every error (not when the body is not text). */
static int http_failure(int err, enum kube_method method, const char *path, long status, const char *body,
			size_t body_len, char **cause)
{
	cJSON *root = body ? parse_text(body, body_len, "the error", NULL) : NULL;
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");

	cause_err(cause, err, "%s %.256s: HTTP %ld: %.512s", method_names[method], path, status,
		  cJSON_IsString(msg) ? msg->valuestring : muster_err_message(err));
	cJSON_Delete(root);
	return err;
}

/* No muster lock may be held across a request or a watch stream
 * (lib/base/muster_lock.h): with MUSTER_LOCK_CHECK, one held aborts here,
 * naming the request. */
static void check_unlocked(const char *method, const char *path)
{
	char what[300];

	if (!muster_locks_held())
		return;
	snprintf(what, sizeof(what), "%s %.256s", method, path);
	muster_lock_assert_none(what);
}

/* Sends one request, retrying transient failures. On success the response
 * body is parsed into *out (if out is not NULL). */
static int request(struct kube_client *c, enum kube_method method, const char *path, const char *content_type,
		   const char *body, cJSON **out, char **cause)
{
	struct kube_request req = {
		.method = method,
		.path = path,
		.content_type = content_type,
		.body = body,
		.body_len = body ? strlen(body) : 0,
		.timeout_ms = c->request_timeout_ms,
		.max_response = c->max_response,
	};
	struct kube_response resp = { 0 };
	char *attempt_cause = NULL;
	int err;

	if (out)
		*out = NULL;
	req.stop = c->stop;
	check_unlocked(method_names[method], path);
	for (unsigned attempt = 0;; attempt++) {
		free(attempt_cause);
		attempt_cause = NULL;
		throttle(c, c->stop);
		if (stopped(c->stop)) {
			err = cause_err(&attempt_cause, MUSTER_ESTOPPED, "%s %.256s: stopped",
					method_names[method], path);
			break;
		}
		stat_add(&c->stats.requests);
		err = c->ops->send(c->ctx, &req, &resp, &attempt_cause);
		if (err == MUSTER_OK) {
			err = kube_err_from_http(resp.status);
			if (err)
				http_failure(err, method, path, resp.status, resp.body, resp.body_len,
					     &attempt_cause);
		}
		stat_error(c, err);
		if (!kube_err_is_transient(err) || attempt >= c->max_retries)
			break;
		stat_add(&c->stats.retries);
		free(resp.body);
		resp.body = NULL;
		pause_ns(c, backoff_ns(c, attempt, KUBE_BACKOFF_MAX_MS), c->stop);
	}
	if (err == MUSTER_OK && out) {
		char *text_cause = NULL;

		*out = parse_text(resp.body, resp.body_len, "response", &text_cause);
		if (!*out && text_cause)
			err = cause_err(&attempt_cause, MUSTER_EPARSE, "%s %.256s: %s", method_names[method],
					path, text_cause);
		else if (!*out)
			err = cause_err(&attempt_cause, MUSTER_EPARSE, "%s %.256s: response is not JSON",
					method_names[method], path);
		free(text_cause);
	}
	free(resp.body);
	if (err && cause && !*cause) {
		*cause = attempt_cause;
		attempt_cause = NULL;
	}
	free(attempt_cause);
	return err;
}

static int check_path(const char *path, char **cause)
{
	if (!path || path[0] != '/' || strlen(path) >= KUBE_PATH_MAX)
		return cause_err(cause, MUSTER_EINVAL,
				 "a request path begins with '/' and is shorter than %d bytes",
				 KUBE_PATH_MAX);
	return MUSTER_OK;
}

int kube_get(struct kube_client *client, const char *path, cJSON **out, char **cause)
{
	int err = check_path(path, cause);

	*out = NULL;
	return err ? err : request(client, KUBE_METHOD_GET, path, NULL, NULL, out, cause);
}

static int send_object(struct kube_client *c, enum kube_method method, const char *path,
		       const char *content_type, const cJSON *object, cJSON **out, char **cause)
{
	char *body;
	int err = check_path(path, cause);

	if (out)
		*out = NULL;
	if (err)
		return err;
	body = cJSON_PrintUnformatted(object);
	if (!body)
		return cause_err(cause, MUSTER_ENOMEM, "cannot serialise the object for %.256s", path);
	err = request(c, method, path, content_type, body, out, cause);
	free(body);
	return err;
}

int kube_create(struct kube_client *client, const char *path, const cJSON *object, cJSON **out, char **cause)
{
	return send_object(client, KUBE_METHOD_POST, path, "application/json", object, out, cause);
}

int kube_update(struct kube_client *client, const char *path, const cJSON *object, cJSON **out, char **cause)
{
	return send_object(client, KUBE_METHOD_PUT, path, "application/json", object, out, cause);
}

int kube_patch(struct kube_client *client, const char *path, enum kube_patch_type type, const char *patch,
	       cJSON **out, char **cause)
{
	static const char *const content_types[] = {
		[KUBE_PATCH_MERGE] = "application/merge-patch+json",
		[KUBE_PATCH_JSON] = "application/json-patch+json",
		[KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	};
	int err = check_path(path, cause);

	if (out)
		*out = NULL;
	if (err)
		return err;
	if ((unsigned)type >= sizeof(content_types) / sizeof(content_types[0]) || !patch)
		return cause_err(cause, MUSTER_EINVAL, "unknown patch type or no patch");
	return request(client, KUBE_METHOD_PATCH, path, content_types[type], patch, out, cause);
}

int kube_delete(struct kube_client *client, const char *path, char **cause)
{
	int err = check_path(path, cause);

	return err ? err : request(client, KUBE_METHOD_DELETE, path, NULL, NULL, NULL, cause);
}

int kube_delete_uid_propagated(struct kube_client *client, const char *path, const char *uid,
			       const char *propagation, char **cause)
{
	cJSON *options = cJSON_CreateObject(), *preconditions;
	char *body = NULL;
	int err = check_path(path, cause);

	if (!err && (!uid || !*uid))
		err = cause_err(cause, MUSTER_EINVAL, "a delete by uid needs the uid");
	if (!err && (!options || !cJSON_AddStringToObject(options, "apiVersion", "v1") ||
		     !cJSON_AddStringToObject(options, "kind", "DeleteOptions") ||
		     !(preconditions = cJSON_AddObjectToObject(options, "preconditions")) ||
		     !cJSON_AddStringToObject(preconditions, "uid", uid) ||
		     (propagation && !cJSON_AddStringToObject(options, "propagationPolicy", propagation)) ||
		     !(body = cJSON_PrintUnformatted(options))))
		err = cause_err(cause, MUSTER_ENOMEM, "no memory for the delete options");
	if (!err)
		err = request(client, KUBE_METHOD_DELETE, path, "application/json", body, NULL, cause);
	cJSON_Delete(options);
	free(body);
	return err;
}

int kube_delete_uid(struct kube_client *client, const char *path, const char *uid, char **cause)
{
	return kube_delete_uid_propagated(client, path, uid, NULL, cause);
}

int kube_update_retry(struct kube_client *client, const char *path, unsigned max_attempts,
		      kube_mutate_fn mutate, void *arg, cJSON **out, char **cause)
{
	cJSON *object = NULL;
	int err = MUSTER_ECONFLICT;

	if (out)
		*out = NULL;
	if (max_attempts == 0)
		max_attempts = 1;
	for (unsigned attempt = 1; attempt <= max_attempts; attempt++) {
		int verdict;

		cJSON_Delete(object);
		object = NULL;
		if ((err = kube_get(client, path, &object, cause)))
			goto out;
		verdict = mutate(arg, object);
		if (verdict < 0) {
			err = verdict;
			goto out;
		}
		if (verdict > 0) {
			/* Nothing to change: the object as read is the result. */
			if (out) {
				*out = object;
				object = NULL;
			}
			err = MUSTER_OK;
			goto out;
		}
		/* Only the last conflict's cause is worth reporting. */
		err = send_object(client, KUBE_METHOD_PUT, path, "application/json", object, out,
				  attempt == max_attempts ? cause : NULL);
		if (err != MUSTER_ECONFLICT)
			goto out;
	}
	cause_err(cause, err, "PUT %.256s: still conflicting after %u attempts", path, max_attempts);
out:
	cJSON_Delete(object);
	return err;
}

/* ---- list ---- */

/* Copies a string member of metadata into a bounded buffer; "" if absent. */
static int metadata_string(const cJSON *object, const char *key, char *out, size_t size)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(object, "metadata");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(meta, key);
	size_t n;

	out[0] = '\0';
	if (!value)
		return 0;
	if (!cJSON_IsString(value))
		return -1;
	n = strlen(value->valuestring);
	if (n >= size)
		return -1;
	memcpy(out, value->valuestring, n + 1);
	return 0;
}

int kube_item_collect(void *arg, const cJSON *item)
{
	cJSON *copy = cJSON_Duplicate(item, 1);

	if (!copy || !cJSON_AddItemToArray(arg, copy)) {
		cJSON_Delete(copy);
		return MUSTER_ENOMEM;
	}
	return 0;
}

int kube_list(struct kube_client *client, const char *path, const struct kube_selectors *selectors,
	      unsigned page_size, kube_item_fn on_item, void *arg, char **resource_version, char **cause)
{
	struct path_buf *pb = NULL;
	char rv[KUBE_RESOURCE_VERSION_MAX] = "";
	char *cont = NULL;
	cJSON *page = NULL;
	int err;

	if (resource_version)
		*resource_version = NULL;
	if ((err = check_path(path, cause)))
		return err;
	pb = malloc(sizeof(*pb));
	if (!pb)
		return MUSTER_ENOMEM;
	for (unsigned pages = 0;; pages++) {
		const cJSON *items, *item, *meta, *next;
		char *too_big = NULL;

		if (stopped(client->stop)) {
			err = cause_err(cause, MUSTER_ESTOPPED, "LIST %.256s: stopped", path);
			goto out;
		}
		if (pages >= KUBE_LIST_MAX_PAGES) {
			err = cause_err(cause, MUSTER_ETOOBIG, "LIST %.256s: more than %d pages", path,
					KUBE_LIST_MAX_PAGES);
			goto out;
		}
		pb_init(pb, path);
		if (page_size)
			pb_param_uint(pb, "limit", page_size);
		pb_param(pb, "labelSelector", selectors ? selectors->label : NULL);
		pb_param(pb, "fieldSelector", selectors ? selectors->field : NULL);
		pb_param(pb, "continue", cont);
		if (pb->overflow) {
			err = cause_err(cause, MUSTER_EINVAL,
					"LIST %.256s: path and query longer than %d bytes", path,
					KUBE_PATH_MAX);
			goto out;
		}
		cJSON_Delete(page);
		page = NULL;
		err = kube_get(client, pb->buf, &page, &too_big);
		/* A page larger than this client takes (objects near the 1.5 MiB
		 * etcd allows, or a tenant's large annotations, 500 to a page):
		 * the same page again, half as many items a page, down to one.
		 * What the apiserver sends never decides whether muster runs. */
		if (err == MUSTER_ETOOBIG && (page_size == 0 || page_size > 1)) {
			page_size = page_size == 0 ? KUBE_LIST_FIRST_SHRUNK_PAGE : page_size / 2;
			stat_add(&client->stats.list_pages_shrunk);
			free(too_big);
			pages--;
			continue;
		}
		if (err) {
			cause_err(cause, err, "%s", too_big ? too_big : muster_err_message(err));
			free(too_big);
			goto out;
		}
		free(too_big);
		items = cJSON_GetObjectItemCaseSensitive(page, "items");
		if (!cJSON_IsArray(items) && !cJSON_IsNull(items) && items) {
			err = cause_err(cause, MUSTER_EPARSE, "LIST %.256s: items is not an array", path);
			goto out;
		}
		cJSON_ArrayForEach(item, items)
		{
			if (stopped(client->stop)) {
				err = cause_err(cause, MUSTER_ESTOPPED, "LIST %.256s: stopped", path);
				goto out;
			}
			if (on_item && (err = on_item(arg, item)))
				goto out;
		}
		if (metadata_string(page, "resourceVersion", rv, sizeof(rv)) != 0) {
			err = cause_err(cause, MUSTER_EPARSE, "LIST %.256s: bad resourceVersion", path);
			goto out;
		}
		meta = cJSON_GetObjectItemCaseSensitive(page, "metadata");
		next = cJSON_GetObjectItemCaseSensitive(meta, "continue");
		free(cont);
		cont = NULL;
		if (!cJSON_IsString(next) || !next->valuestring[0])
			break;
		cont = strdup(next->valuestring);
		if (!cont) {
			err = MUSTER_ENOMEM;
			goto out;
		}
	}
	if (resource_version) {
		*resource_version = strdup(rv);
		if (!*resource_version)
			err = MUSTER_ENOMEM;
	}
out:
	cJSON_Delete(page);
	free(cont);
	free(pb);
	return err;
}

/* ---- watch ---- */

static const char *const watch_type_names[] = {
	[KUBE_WATCH_ADDED] = "ADDED",	  [KUBE_WATCH_MODIFIED] = "MODIFIED",
	[KUBE_WATCH_DELETED] = "DELETED", [KUBE_WATCH_BOOKMARK] = "BOOKMARK",
	[KUBE_WATCH_ERROR] = "ERROR",
};

const char *kube_watch_type_name(enum kube_watch_type type)
{
	return (unsigned)type < sizeof(watch_type_names) / sizeof(watch_type_names[0])
		       ? watch_type_names[type]
		       : "?";
}

void kube_watch_event_clear(struct kube_watch_event *event)
{
	if (!event)
		return;
	cJSON_Delete(event->object);
	memset(event, 0, sizeof(*event));
}

int kube_watch_parse_event(const char *line, size_t len, struct kube_watch_event *out, char **cause)
{
	char *text_cause = NULL;
	cJSON *root = parse_text(line, len, "watch event", &text_cause);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
	cJSON *object = cJSON_GetObjectItemCaseSensitive(root, "object");
	size_t t;
	int err = MUSTER_OK;

	memset(out, 0, sizeof(*out));
	if (text_cause) {
		err = cause_err(cause, MUSTER_EPARSE, "%s", text_cause);
		free(text_cause);
		goto out;
	}
	if (!cJSON_IsObject(root) || !cJSON_IsString(type) || !cJSON_IsObject(object)) {
		err = cause_err(cause, MUSTER_EPARSE,
				"watch event is not {\"type\": string, \"object\": object}");
		goto out;
	}
	for (t = 0; t < sizeof(watch_type_names) / sizeof(watch_type_names[0]); t++)
		if (strcmp(type->valuestring, watch_type_names[t]) == 0)
			break;
	if (t == sizeof(watch_type_names) / sizeof(watch_type_names[0])) {
		err = cause_err(cause, MUSTER_EPARSE, "watch event of unknown type");
		goto out;
	}
	out->type = (enum kube_watch_type)t;
	if (out->type == KUBE_WATCH_ERROR) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(object, "code");

		/* The range check keeps the double-to-long conversion defined. */
		if (cJSON_IsNumber(code) && code->valuedouble >= 0 && code->valuedouble < 1000)
			out->code = (long)code->valuedouble;
	} else if (metadata_string(object, "resourceVersion", out->resource_version,
				   sizeof(out->resource_version)) != 0 ||
		   !out->resource_version[0]) {
		err = cause_err(cause, MUSTER_EPARSE, "watch %s event without a valid resourceVersion",
				watch_type_names[t]);
		goto out;
	}
	out->object = cJSON_DetachItemViaPointer(root, object);
out:
	cJSON_Delete(root);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

struct watch_state {
	const struct kube_watch_callbacks *cb;
	struct kube_client *client;
	char rv[KUBE_RESOURCE_VERSION_MAX];
	int relist; /* the stream showed the watch cannot go on: list again */
	int finished; /* a callback asked to end kube_watch_run */
	int result; /* its value */
	char *cause; /* why relist was set */
};

static int on_watch_line(void *arg, const char *line, size_t len)
{
	struct watch_state *ws = arg;
	struct kube_watch_event ev;
	int r, err;

	/* The event's tree lives until kube_watch_event_clear below: it can
	 * come from the thread's arena (json_arena.h), which is reset after. */
	json_arena_begin();
	err = kube_watch_parse_event(line, len, &ev, &ws->cause);
	json_arena_end();
	if (err != MUSTER_OK) {
		json_arena_reset();
		ws->relist = 1;
		return 1;
	}
	if (ev.type == KUBE_WATCH_ERROR) {
		/* 410 Gone is the usual one; after any other error the stream's
		 * position is unknown too, so both start over with a list. */
		cause_err(&ws->cause, MUSTER_EGONE, "watch ERROR event with code %ld", ev.code);
		ws->relist = 1;
		kube_watch_event_clear(&ev);
		json_arena_reset();
		return 1;
	}
	memcpy(ws->rv, ev.resource_version, sizeof(ws->rv));
	r = 0;
	if (ev.type != KUBE_WATCH_BOOKMARK) {
		stat_add(&ws->client->stats.watch_events);
		if (ws->cb->on_event)
			r = ws->cb->on_event(ws->cb->arg, ev.type, ev.object);
	}
	kube_watch_event_clear(&ev);
	json_arena_reset();
	if (r) {
		ws->finished = 1;
		ws->result = r < 0 ? r : MUSTER_OK;
		return 1;
	}
	return 0;
}

struct relist_state {
	const struct kube_watch_callbacks *cb;
	int finished;
	int result;
};

static int on_relist_item(void *arg, const cJSON *item)
{
	struct relist_state *rs = arg;
	int r = rs->cb->on_item ? rs->cb->on_item(rs->cb->arg, item) : 0;

	if (r) {
		rs->finished = 1;
		rs->result = r < 0 ? r : MUSTER_OK;
		/* Any negative value aborts the list; the real result is kept. */
		return MUSTER_ESTOPPED;
	}
	return 0;
}

/* Lists the collection through the callbacks. Returns the list's error, or
 * sets *finished when a callback ended the watch. */
static int relist(struct kube_client *c, const char *path, const struct kube_selectors *selectors,
		  unsigned page_size, struct watch_state *ws, const char *reason, char **cause)
{
	struct relist_state rs = { ws->cb, 0, 0 };
	const struct kube_watch_callbacks *cb = ws->cb;
	char *rv = NULL;
	int r, err;

	stat_add(&c->stats.relists);
	if (cb->on_relist_begin && (r = cb->on_relist_begin(cb->arg, reason))) {
		ws->finished = 1;
		ws->result = r < 0 ? r : MUSTER_OK;
		return MUSTER_OK;
	}
	err = kube_list(c, path, selectors, page_size, on_relist_item, &rs, &rv, cause);
	if (rs.finished) {
		ws->finished = 1;
		ws->result = rs.result;
		free(rv);
		return MUSTER_OK;
	}
	if (err)
		return err;
	/* rv fits: kube_list bounds it by the same limit. */
	snprintf(ws->rv, sizeof(ws->rv), "%s", rv);
	free(rv);
	if (cb->on_relist_end && (r = cb->on_relist_end(cb->arg, ws->rv))) {
		ws->finished = 1;
		ws->result = r < 0 ? r : MUSTER_OK;
	}
	return MUSTER_OK;
}

/* reason = "<what>: <cause>" (or the error's message), one line. */
static void set_reason(char *reason, const char *what, const char *cause, int err)
{
	snprintf(reason, KUBE_RELIST_REASON_MAX, "%s: %s", what, cause ? cause : muster_err_message(err));
	for (char *c = reason; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

int kube_watch_run(struct kube_client *client, const char *path, const struct kube_selectors *selectors,
		   unsigned page_size, const struct kube_watch_callbacks *callbacks, const atomic_int *stop,
		   char **cause)
{
	struct watch_state ws = { .cb = callbacks, .client = client };
	struct path_buf *pb = NULL;
	unsigned failures = 0;
	/* listed: the collection was served once in this run. A 404 after that
	 * is an apiserver not serving the group yet (a restart registers the
	 * CustomResourceDefinitions again a moment after it is ready): retried
	 * with backoff and a new LIST, as client-go's reflector does. A 404 on
	 * the first LIST stays an error: the resource does not exist. */
	int need_list = 1, listed = 0, err = MUSTER_OK;
	/* Why the next LIST happens, for on_relist_begin: the first, or what
	 * ended the watch or failed the last LIST. */
	char reason[KUBE_RELIST_REASON_MAX] = "first list";

	const atomic_int *own_stop = client->stop;

	if ((err = check_path(path, cause)))
		return err;
	pb = malloc(sizeof(*pb));
	if (!pb)
		return MUSTER_ENOMEM;
	/* Its LISTs and their requests end at once when stopped, however large
	 * the collection. */
	if (!client->stop)
		client->stop = stop;
	while (!stopped(stop)) {
		struct kube_request req = { .method = KUBE_METHOD_GET, .max_response = client->max_response };
		char *step_cause = NULL, *error_body = NULL;
		long status = 0;

		if (need_list) {
			err = relist(client, path, selectors, page_size, &ws, reason, &step_cause);
			if (ws.finished) {
				err = ws.result;
				free(step_cause);
				goto out;
			}
			if (err) {
				/* 410 here is an expired continue token. */
				if (!kube_err_may_heal(err) && err != MUSTER_EGONE && err != MUSTER_EPARSE &&
				    !(err == MUSTER_ENOTFOUND && listed)) {
					cause_err(cause, err, "%s",
						  step_cause ? step_cause : muster_err_message(err));
					free(step_cause);
					goto out;
				}
				set_reason(reason, "the list failed", step_cause, err);
				free(step_cause);
				pause_ns(client, backoff_ns(client, failures++, KUBE_WATCH_BACKOFF_MAX_MS),
					 stop);
				continue;
			}
			need_list = 0;
			listed = 1;
		}

		pb_init(pb, path);
		pb_param(pb, "watch", "1");
		pb_param(pb, "allowWatchBookmarks", "true");
		pb_param(pb, "resourceVersion", ws.rv);
		pb_param_uint(pb, "timeoutSeconds", (unsigned long)client->watch_timeout_s);
		pb_param(pb, "labelSelector", selectors ? selectors->label : NULL);
		pb_param(pb, "fieldSelector", selectors ? selectors->field : NULL);
		if (pb->overflow) {
			err = cause_err(cause, MUSTER_EINVAL,
					"WATCH %.256s: path and query longer than %d bytes", path,
					KUBE_PATH_MAX);
			goto out;
		}
		req.path = pb->buf;
		check_unlocked("WATCH", path);
		throttle(client, stop);
		free(ws.cause);
		ws.cause = NULL;
		ws.relist = 0;
		stat_add(&client->stats.requests);
		stat_add(&client->stats.watch_streams);
		/* The server closes the watch after timeoutSeconds; a connection
		 * silent well past that is dead. */
		err = client->ops->stream(client->ctx, &req, client->max_watch_line,
					  client->watch_timeout_s + 30, stop, on_watch_line, &ws, &status,
					  &error_body, &step_cause);
		if (ws.finished) {
			err = ws.result;
			free(step_cause);
			free(error_body);
			goto out;
		}
		if (err == MUSTER_OK && status != 0 && (status < 200 || status >= 300)) {
			err = http_failure(kube_err_from_http(status), KUBE_METHOD_GET, req.path, status,
					   error_body, error_body ? strlen(error_body) : 0, &step_cause);
		}
		if (err != MUSTER_OK && err != MUSTER_ETIMEOUT)
			stat_error(client, err);
		free(error_body);
		if (ws.relist || err == MUSTER_EGONE || err == MUSTER_ETOOBIG) {
			/* Consecutive re-lists back off too: a server that keeps
			 * sending bad lines must not be hammered. */
			need_list = 1;
			set_reason(reason, "the watch ended", ws.relist ? ws.cause : step_cause, err);
			if (failures)
				pause_ns(client, backoff_ns(client, failures - 1, KUBE_WATCH_BACKOFF_MAX_MS),
					 stop);
			failures++;
		} else if (err == MUSTER_OK || err == MUSTER_ETIMEOUT) {
			/* The server ended the watch (timeoutSeconds) or it went
			 * quiet: resume from the last resourceVersion. */
			failures = 0;
		} else if (kube_err_may_heal(err)) {
			/* A TLS failure too: a re-list then says why (on_relist_begin). */
			if (err == MUSTER_ETLS) {
				need_list = 1;
				set_reason(reason, "the watch ended", step_cause, err);
			}
			pause_ns(client, backoff_ns(client, failures++, KUBE_WATCH_BACKOFF_MAX_MS), stop);
		} else if (err == MUSTER_ENOTFOUND) { /* served before (see listed): not yet again */
			need_list = 1;
			set_reason(reason, "the watch ended", step_cause, err);
			pause_ns(client, backoff_ns(client, failures++, KUBE_WATCH_BACKOFF_MAX_MS), stop);
		} else {
			cause_err(cause, err, "%s", step_cause ? step_cause : muster_err_message(err));
			free(step_cause);
			goto out;
		}
		free(step_cause);
		err = MUSTER_OK;
	}
	err = MUSTER_OK;
out:
	client->stop = own_stop;
	free(ws.cause);
	free(pb);
	/* A LIST or callback cut short by the stop is no failure. */
	return stopped(stop) && err == MUSTER_ESTOPPED ? MUSTER_OK : err;
}

void kube_client_set_stop(struct kube_client *client, const atomic_int *stop)
{
	client->stop = stop;
}
