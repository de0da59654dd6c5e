/*
 * webhook: the admission routes (webhook.h).
 */
#define _GNU_SOURCE /* getrandom */

#include "webhook.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "admission.h"
#include "jobset_admission.h"
#include "jobset_shape.h"
#include "jobset_validate.h"
#include "mlog.h"
#include "placement_gate.h"
#include "pod_pin.h"
#include "record_cache.h"
#include "topo_record.h"
#include "json_patch.h"
#include "kjson.h"

/* 24 random bytes: 32 characters of base64url. */
#define TOKEN_BYTES 24

struct webhook {
	struct jobset_mutate_options barrier;
	char *strings[5]; /* the copies barrier points into */
	int quiet;
	struct record_cache *records; /* the pod route's */
	char *controller_user; /* NULL: nobody */
	/* Large reviews (admission.h ADMISSION_VALUES_LARGE) one at a time: the
	 * threads together hold at most one large tree. */
	pthread_mutex_t large;
};

static char *copy(const char *text)
{
	return text ? strdup(text) : NULL;
}

int webhook_new(const struct webhook_options *options, struct webhook **out, char **cause)
{
	struct webhook *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		goto no_memory;
	pthread_mutex_init(&w->large, NULL);
	w->barrier = options->barrier;
	w->quiet = options->quiet;
	w->strings[0] = copy(options->barrier.barrier_image);
	w->strings[1] = copy(options->barrier.image_pull_policy);
	w->strings[2] = copy(options->barrier.cpu_request);
	w->strings[3] = copy(options->barrier.memory_request);
	w->strings[4] = copy(options->barrier.memory_limit ? options->barrier.memory_limit : "");
	for (size_t i = 0; i < 5; i++)
		if (!w->strings[i])
			goto no_memory;
	w->barrier.barrier_image = w->strings[0];
	w->barrier.image_pull_policy = w->strings[1];
	w->barrier.cpu_request = w->strings[2];
	w->barrier.memory_request = w->strings[3];
	w->barrier.memory_limit = w->strings[4];
	if (options->controller_user && *options->controller_user &&
	    !(w->controller_user = strdup(options->controller_user)))
		goto no_memory;
	if (record_cache_new(&options->records, &w->records, cause))
		goto fail;
	*out = w;
	return 0;
no_memory:
	*cause = strdup("out of memory");
fail:
	webhook_free(w);
	return MUSTER_ENOMEM;
}

void webhook_free(struct webhook *webhook)
{
	if (!webhook)
		return;
	for (size_t i = 0; i < 5; i++)
		free(webhook->strings[i]);
	record_cache_free(webhook->records);
	free(webhook->controller_user);
	pthread_mutex_destroy(&webhook->large);
	free(webhook);
}

static int new_token(char *out, size_t size)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char bytes[TOKEN_BYTES];
	size_t got = 0;

	if (size < TOKEN_BYTES / 3 * 4 + 1)
		return -1;
	while (got < sizeof(bytes)) {
		ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0, o = 0; i < sizeof(bytes); i += 3) {
		unsigned v = (unsigned)bytes[i] << 16 | (unsigned)bytes[i + 1] << 8 | bytes[i + 2];

		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
		out[o] = '\0';
	}
	return 0;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What one review came to, for the reply, the log and the metric. */
struct outcome {
	int allowed;
	int code; /* denial's status code */
	char *message; /* denial's message, malloc'd */
	char *patch; /* JSON Patch text, malloc'd; NULL: none */
	size_t patch_ops;
	const char *result; /* "allowed", "patched", "denied", "error", "per_pod" */
	char *warning; /* shown to the user of an allowed request, malloc'd; NULL: none */
};

static void reply_text(struct http_serve_reply *reply, unsigned status, const char *result, const char *text)
{
	size_t n = strlen(text);

	reply->status = status;
	reply->content_type = "text/plain; charset=utf-8";
	reply->result = result;
	reply->body = malloc(n + 2);
	if (reply->body) {
		memcpy(reply->body, text, n);
		reply->body[n] = '\n';
		reply->body[n + 1] = '\0';
		reply->body_len = n + 1;
	}
}

static void fail_out_of_memory(struct outcome *o)
{
	free(o->message);
	o->message = strdup("out of memory");
	o->code = 500;
	o->result = "error";
}

/* The admission models of a review's object and, for an UPDATE, of its
 * stored object: each JobSet decoded once (jobset_admission.h). -1 when
 * memory ran out. */
static int decode_models(const struct admission_request *request, struct jobset_admission **a,
			 struct jobset_admission **old)
{
	*old = NULL;
	*a = jobset_admission_decode(request->object,
				     request->operation == ADMISSION_CREATE ? JOBSET_ADMISSION_COUNTED : 0);
	if (!*a)
		return -1;
	if (request->operation == ADMISSION_UPDATE && request->old_object &&
	    !(*old = jobset_admission_decode_stored(request->old_object, *a))) {
		jobset_admission_free(*a);
		*a = NULL;
		return -1;
	}
	return 0;
}

static void mutate(struct webhook *w, const struct admission_request *request, struct outcome *o)
{
	struct jobset_admission *a = NULL, *old = NULL;
	char token[TOKEN_BYTES / 3 * 4 + 1] = "";
	char *cause = NULL;
	cJSON *patch = cJSON_CreateArray(), *gang = NULL, *modified = NULL;
	int rc = 0;

	if (!patch) {
		fail_out_of_memory(o);
		goto out;
	}
	if ((request->operation != ADMISSION_CREATE && request->operation != ADMISSION_UPDATE) ||
	    !request->object)
		goto allow;
	if (decode_models(request, &a, &old)) {
		fail_out_of_memory(o);
		goto out;
	}
	/* The placement gate first (placement_gate.h): the barrier's patch is
	 * computed on the JobSet as the gate leaves it. */
	if (request->operation == ADMISSION_CREATE)
		rc = placement_gate_create(a, patch, &modified, &o->warning, &cause);
	else if (old)
		rc = placement_gate_update(
			old, a, w->controller_user && strcmp(request->user, w->controller_user) == 0, patch,
			&modified, &cause);
	if (rc) {
		o->message = cause;
		cause = NULL;
		goto deny;
	}
	if (request->operation == ADMISSION_CREATE && a->mentions && a->owner)
		mlog(MLOG_INFO, "placement-skipped", "jobset=%s/%s reason=\"placed by %s, not muster\"",
		     request->namespace, request->name, a->owner);
	if (!a->config_ok) {
		o->message = strdup(a->config_cause);
		goto deny;
	}
	if (!a->config.present)
		goto patched;
	if (request->operation == ADMISSION_UPDATE) {
		/* A resume starts a new gang: the generation label goes up. */
		if (!old)
			goto patched;
		if (jobset_mutate_update(old, a, modified ? modified : request->object, &gang, &cause)) {
			o->message = cause;
			cause = NULL;
			goto deny;
		}
		json_patch_append(patch, gang);
		goto patched;
	}
	if (jobset_validate_create(a, &o->message))
		goto deny;
	if (!a->token && new_token(token, sizeof(token))) {
		o->message =
			strdup("muster-webhook could not read random bytes for the barrier token; try again");
		o->code = 500;
		o->result = "error";
		goto out;
	}
	if (jobset_mutate(a, modified ? modified : request->object, &w->barrier, token, &gang, &cause)) {
		o->message = cause;
		cause = NULL;
		goto deny;
	}
	json_patch_append(patch, gang);
patched:
	o->patch_ops = (size_t)cJSON_GetArraySize(patch);
	if (o->patch_ops) {
		o->patch = cJSON_PrintUnformatted(patch);
		if (!o->patch) {
			fail_out_of_memory(o);
			goto out;
		}
	}
	o->allowed = 1;
	o->result = o->patch_ops ? "patched" : "allowed";
	goto out;
allow:
	o->allowed = 1;
	o->result = "allowed";
	goto out;
deny:
	o->code = 422;
	o->result = "denied";
out:
	explicit_bzero(token, sizeof(token));
	cJSON_Delete(patch);
	cJSON_Delete(modified);
	free(cause);
	jobset_admission_free(a);
	jobset_admission_free(old);
}

static void validate(const struct admission_request *request, struct outcome *o)
{
	struct jobset_admission *a = NULL, *old = NULL;

	o->allowed = 1;
	o->result = "allowed";
	if (!request->object || (request->operation != ADMISSION_CREATE &&
				 !(request->operation == ADMISSION_UPDATE && request->old_object)))
		return;
	if (decode_models(request, &a, &old)) {
		o->message = strdup("out of memory");
		goto deny;
	}
	if (old ? jobset_validate_update(old, a, &o->message) : jobset_validate_create(a, &o->message))
		goto deny;
	goto out;
deny:
	o->allowed = 0;
	o->code = 422;
	o->result = "denied";
out:
	jobset_admission_free(a);
	jobset_admission_free(old);
}

/* The end of a review decode() admitted: a large one gives its memory back
 * to the kernel (glibc keeps the heap it freed, else) and lets the next in. */
static void decoded_done(struct webhook *w, int large)
{
	if (!large)
		return;
	malloc_trim(0);
	pthread_mutex_unlock(&w->large);
}

/* Decodes a review for `route`. A large one (ADMISSION_VALUES_LARGE) waits
 * for the other large ones and keeps w->large until decoded_done(). On
 * failure the reply is written: a review too large to decode (code 413), or
 * whose text is not UTF-8 or holds a NUL (code 400), is denied by its uid
 * when the scan found it, else any failure is HTTP 400; and -1 is returned.
 * No cause quotes the body's bytes (admission.h). */
static int decode(struct webhook *w, const char *route, const char *body, size_t len,
		  struct admission_request *request, int *large, struct http_serve_reply *reply)
{
	struct admission_scan scan;
	char *cause = NULL, quoted[512];
	int rc;

	admission_scan(body, len, &scan);
	/* Too large to parse takes no memory: refused without waiting its turn. */
	*large = scan.values > ADMISSION_VALUES_LARGE && scan.values <= ADMISSION_VALUES_MAX;
	if (*large)
		pthread_mutex_lock(&w->large);
	rc = admission_decode(body, len, request, &cause);
	if (!rc)
		return 0;
	mlog(MLOG_WARN, "bad-request", "route=%s uid=%s values=%zu bytes=%zu reason=%s", route,
	     request->uid[0] ? request->uid : "-", scan.values, len,
	     mlog_quote(quoted, sizeof(quoted), cause ? cause : "out of memory", cause ? strlen(cause) : 13));
	if ((rc == ADMISSION_TOO_LARGE || rc == ADMISSION_BAD_TEXT) && request->uid[0]) {
		reply->body = admission_response(request->uid, 0, rc == ADMISSION_TOO_LARGE ? 413 : 400,
						 cause, NULL, 0, NULL, &reply->body_len);
		reply->status = reply->body ? 200 : 500;
		reply->content_type = "application/json";
		reply->result = reply->body ? "denied" : "error";
	} else {
		reply_text(reply, 400, "bad_request", cause ? cause : "out of memory");
	}
	free(cause);
	decoded_done(w, *large);
	return -1;
}

/* "namespace/name" for a log line: as it is when it is one plain token (what
 * an apiserver sends), else quoted (mlog.h), so that a name from the body
 * (a pod's generateName, a forged review's) can neither break the line nor
 * put raw bytes in it. */
static const char *object_token(char *out, size_t size, const char *namespace, const char *name)
{
	char plain[ADMISSION_FIELD_MAX + ADMISSION_NAME_MAX + 2];
	size_t n = (size_t)snprintf(plain, sizeof(plain), "%s/%.*s", namespace, ADMISSION_NAME_MAX, name);

	if (n >= sizeof(plain))
		n = sizeof(plain) - 1;
	for (size_t i = 0; i < n; i++)
		if (plain[i] < 0x21 || plain[i] > 0x7e || plain[i] == '"' || plain[i] == '\\')
			return mlog_quote(out, size, plain, n);
	snprintf(out, size, "%s", plain);
	return out;
}

static void review(struct webhook *w, int mutating, const char *route, const char *body, size_t body_len,
		   struct http_serve_reply *reply)
{
	struct admission_request request;
	struct outcome o = { 0 };
	char quoted[256], object[4 * (ADMISSION_FIELD_MAX + ADMISSION_NAME_MAX) + 8];
	double started = now_seconds();
	int large;

	if (decode(w, route, body, body_len, &request, &large, reply))
		return;
	if (!admission_is_jobset(&request)) {
		char message[512];

		snprintf(message, sizeof(message),
			 "muster-webhook admits only jobset.x-k8s.io/v1alpha2 JobSets, not %s/%s %s: its "
			 "webhook configuration matches the wrong resources",
			 request.group[0] ? request.group : "core", request.version, request.kind);
		o.message = strdup(message);
		o.code = 400;
		o.result = "denied";
	} else if (mutating) {
		mutate(w, &request, &o);
	} else {
		validate(&request, &o);
	}
	reply->body = admission_response(request.uid, o.allowed, o.code, o.message, o.patch,
					 o.patch ? strlen(o.patch) : 0, o.warning, &reply->body_len);
	reply->status = reply->body ? 200 : 500;
	reply->content_type = "application/json";
	reply->result = reply->body ? o.result : "error";
	object_token(object, sizeof(object), request.namespace, request.name);
	if (!w->quiet || !o.allowed)
		mlog(o.allowed ? MLOG_INFO : MLOG_WARN, "admission",
		     "route=%s jobset=%s uid=%s operation=%s dry_run=%s result=%s patch_ops=%zu ms=%.3f%s%s",
		     route, object, request.uid, admission_operation_name(request.operation),
		     request.dry_run ? "true" : "false", o.result, o.patch_ops,
		     (now_seconds() - started) * 1e3, o.message ? " message=" : "",
		     o.message ? mlog_quote(quoted, sizeof(quoted), o.message, strlen(o.message)) : "");
	free(o.message);
	free(o.warning);
	free(o.patch);
	admission_request_free(&request);
	decoded_done(w, large);
}

void webhook_mutate(void *arg, const char *body, size_t body_len, struct http_serve_reply *reply)
{
	review(arg, 1, "mutate", body, body_len, reply);
}

void webhook_validate(void *arg, const char *body, size_t body_len, struct http_serve_reply *reply)
{
	review(arg, 0, "validate", body, body_len, reply);
}

/* A denial of the pin route: 403 and the cause (or "out of memory"). */
static void pin_denied(struct outcome *o)
{
	if (!o->message)
		o->message = strdup("out of memory");
	o->code = 403;
	o->allowed = 0;
	o->result = "denied";
}

/* The pin route's answer for a pod: its own selector from the record. */
static cJSON *pin_pod(struct webhook *w, const struct admission_request *request, char *selector, size_t size,
		      struct outcome *o)
{
	struct jobset_pod key;
	cJSON *patch = NULL;

	if (pod_pin_key(request->object, &key, &o->message) ||
	    record_cache_selector(w->records, request->namespace, key.jobset, key.uid, key.attempt,
				  key.replicated_job, key.job_index, key.completion, selector, size,
				  &o->message) != 1 ||
	    !(patch = cJSON_CreateArray()) || pod_pin_patch(request->object, selector, patch, &o->message))
		pin_denied(o);
	return patch;
}

/* The pin route's answer for a Job: pinned as a whole when the record
 * sends all its pods to one domain, else let through for its pods to be
 * pinned one by one; refused while the JobSet has no record (no Job exists
 * before the placement: JobSet makes it again once placed). */
static cJSON *pin_job(struct webhook *w, const struct admission_request *request, char *selector, size_t size,
		      struct outcome *o)
{
	struct jobset_pod key;
	uint32_t pods;
	cJSON *patch = NULL;
	int rc;

	if (pod_pin_job_key(request->object, &key, &pods, &o->message)) {
		pin_denied(o);
		return NULL;
	}
	/* The record first, for every Job: none exists before the placement. A
	 * work queue (no fixed pods) is then pinned pod by pod. */
	rc = record_cache_job_selector(w->records, request->namespace, key.jobset, key.uid, key.attempt,
				       key.replicated_job, key.job_index, pods ? pods : 1, selector, size,
				       &o->message);
	if (rc == 1 && !pods)
		rc = 2;
	if (rc == 2 && pods && selector[0]) {
		/* Pinned one by one, its pod template in the domain of most of
		 * its pods: those cost the apiserver no patch at the pod route. */
		o->result = "per_pod";
		if (!(patch = cJSON_CreateArray()) ||
		    pod_pin_job_share_patch(request->object, selector, patch)) {
			o->message = strdup("out of memory");
			pin_denied(o);
		}
		return patch;
	}
	if (rc == 2) { /* its pods are pinned one by one: none may skip the pod route */
		o->result = "per_pod";
		selector[0] = '\0';
		if (!(patch = cJSON_CreateArray()) || pod_pin_job_unpinned(request->object, patch)) {
			o->message = strdup("out of memory");
			pin_denied(o);
		}
		return patch;
	}
	if (rc != 1 || !(patch = cJSON_CreateArray()) ||
	    pod_pin_job_patch(request->object, selector, patch, &o->message))
		pin_denied(o);
	return patch;
}

/* POST /pin: a pod or Job of a placed JobSet gets its domain's
 * nodeSelector from the placement of record (pod_pin.h, record_cache.h); one
 * whose record is missing is refused, so that it never runs unpinned (the
 * Job controller, or JobSet, creates it again). */
void webhook_pin(void *arg, const char *body, size_t body_len, struct http_serve_reply *reply)
{
	struct webhook *w = arg;
	struct admission_request request;
	struct outcome o = { 0 };
	char quoted[512], selector[TOPO_RECORD_SELECTOR_MAX] = "",
			  object[4 * (ADMISSION_FIELD_MAX + ADMISSION_NAME_MAX) + 8];
	const char *name, *what;
	const cJSON *generate_name;
	double started = now_seconds();
	cJSON *patch = NULL;
	int large, pod, job;

	if (decode(w, "pin", body, body_len, &request, &large, reply))
		return;
	generate_name = kjson_member(kjson_member(request.object, "metadata"), "generateName");
	name = request.name[0]		       ? request.name
	       : cJSON_IsString(generate_name) ? generate_name->valuestring
					       : "";
	object_token(object, sizeof(object), request.namespace, name);
	pod = !request.group[0] && strcmp(request.kind, "Pod") == 0;
	job = strcmp(request.group, "batch") == 0 && strcmp(request.kind, "Job") == 0;
	what = job ? "job" : "pod";
	o.allowed = 1;
	o.result = "allowed";
	if (!pod && !job) {
		char message[512];

		snprintf(message, sizeof(message),
			 "muster-webhook pins only core/v1 Pods and batch/v1 Jobs at /pin, not %s/%s %s: its "
			 "webhook configuration matches the wrong resources",
			 request.group[0] ? request.group : "core", request.version, request.kind);
		o.message = strdup(message);
		o.code = 400;
		o.allowed = 0;
		o.result = "denied";
	} else if (request.operation == ADMISSION_CREATE && request.object) {
		patch = job ? pin_job(w, &request, selector, sizeof(selector), &o)
			    : pin_pod(w, &request, selector, sizeof(selector), &o);
		if (o.allowed && patch && (o.patch_ops = (size_t)cJSON_GetArraySize(patch)) != 0) {
			o.patch = cJSON_PrintUnformatted(patch);
			o.result = "patched";
			if (!o.patch) {
				o.message = strdup("out of memory");
				o.code = 500;
				o.allowed = 0;
				o.result = "error";
			}
		}
	}
	cJSON_Delete(patch);
	reply->body = admission_response(request.uid, o.allowed, o.code, o.message, o.patch,
					 o.patch ? strlen(o.patch) : 0, o.warning, &reply->body_len);
	reply->status = reply->body ? 200 : 500;
	reply->content_type = "application/json";
	reply->result = reply->body ? o.result : "error";
	if (!w->quiet || !o.allowed)
		mlog(o.allowed ? MLOG_INFO : MLOG_WARN, "admission",
		     "route=pin %s=%s uid=%s operation=%s result=%s selector=\"%s\" ms=%.3f%s%s", what,
		     object, request.uid, admission_operation_name(request.operation), o.result, selector,
		     (now_seconds() - started) * 1e3, o.message ? " message=" : "",
		     o.message ? mlog_quote(quoted, sizeof(quoted), o.message, strlen(o.message)) : "");
	free(o.message);
	free(o.patch);
	admission_request_free(&request);
	decoded_done(w, large);
}
