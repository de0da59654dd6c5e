/*
 * kube_lease: leader election on a coordination.k8s.io/v1 Lease. See
 * kube_lease.h for the contract.
 *
 * The Lease is decoded into a struct lease_record where it arrives
 * (lease_decode) and encoded where it leaves (lease_encode), both driven by
 * one table of the spec's fields; the decision in between (try_step) only
 * compares records and local monotonic times. The server's metadata is kept
 * as it came and sent back on every PUT, so that labels, annotations and
 * owner references that others put on the Lease survive our updates (a PUT
 * replaces the whole object).
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_lease.h"
#include "kube_path.h"
#include "mlog.h"
#include "muster_lock.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEASE_PATH_MAX 512
/* Longest acquireTime/renewTime accepted from the server; ours are
 * "2006-01-02T15:04:05.000000Z", 27 bytes. */
#define LEASE_TIME_MAX 64
/* leaseDurationSeconds and leaseTransitions are int32 in the API. */
#define LEASE_INT32_MAX 2147483647L
/* A stop flag is looked at this often while waiting. */
#define LEASE_STOP_SLICE_NS 100000000u
/* A quoted peer string in a log line is cut to this. */
#define LEASE_LOG_QUOTE_MAX 200

#define NS_PER_MS 1000000u
#define NS_PER_S 1000000000u

struct lease_record {
	char holder[KUBE_LEASE_HOLDER_MAX + 1];
	long duration_s;
	char acquire_time[LEASE_TIME_MAX + 1];
	char renew_time[LEASE_TIME_MAX + 1];
	long transitions;
	char resource_version[KUBE_RESOURCE_VERSION_MAX];
};

enum field_kind { FIELD_STRING, FIELD_INT32 };

struct spec_field {
	const char *key;
	enum field_kind kind;
	size_t offset;
	size_t size; /* strings: the buffer's size */
};

#define RECORD_FIELD_SIZE(member) sizeof(((struct lease_record *)0)->member)

/* The spec's fields, in the order they are written. */
static const struct spec_field spec_fields[] = {
	{ "holderIdentity", FIELD_STRING, offsetof(struct lease_record, holder), RECORD_FIELD_SIZE(holder) },
	{ "leaseDurationSeconds", FIELD_INT32, offsetof(struct lease_record, duration_s), 0 },
	{ "acquireTime", FIELD_STRING, offsetof(struct lease_record, acquire_time),
	  RECORD_FIELD_SIZE(acquire_time) },
	{ "renewTime", FIELD_STRING, offsetof(struct lease_record, renew_time),
	  RECORD_FIELD_SIZE(renew_time) },
	{ "leaseTransitions", FIELD_INT32, offsetof(struct lease_record, transitions), 0 },
};

#define N_SPEC_FIELDS (sizeof(spec_fields) / sizeof(spec_fields[0]))

/* What one acquire-or-renew step found, when it did not fail. */
enum step_result {
	STEP_HELD_BY_OTHER, /* another holder's lease is live */
	STEP_RACE_LOST, /* another candidate wrote first (409) */
	STEP_OURS, /* created, taken over or renewed */
};

struct kube_lease {
	struct kube_client *client;
	struct kube_clock clock;
	char namespace[KUBE_LEASE_NAMESPACE_MAX + 1];
	char name[KUBE_LEASE_NAME_MAX + 1];
	char identity[KUBE_LEASE_IDENTITY_MAX + 1];
	char collection_path[LEASE_PATH_MAX]; /* .../namespaces/NS/leases */
	char path[LEASE_PATH_MAX]; /* .../namespaces/NS/leases/NAME */
	long duration_s;
	uint64_t renew_deadline_ns;
	uint64_t retry_period_ns;

	/* The record as last seen (read or written), the server's metadata that
	 * came with it (owned), and the local time at which it last changed. */
	struct lease_record observed;
	cJSON *observed_metadata;
	uint64_t observed_ns;
	int have_observed;

	/* The driving thread's view: we lead, since the last successful
	 * acquire or renew that began at renewed_ns. */
	int leading;
	uint64_t renewed_ns;
	/* renewed_ns + renew_deadline while leading, else 0: what other threads
	 * read. */
	atomic_uint_least64_t leader_until_ns;

	/* Why the last attempt to acquire failed ("" after a success), for
	 * other threads (readiness), under holder_lock. */
	char last_failure[256];
	/* The other holder last logged, so that each is logged once. */
	char logged_holder[KUBE_LEASE_HOLDER_MAX + 1];
	/* observed.holder, for other threads. */
	pthread_mutex_t holder_lock;
	char shared_holder[KUBE_LEASE_HOLDER_MAX + 1];

	uint64_t jitter_state;
};

/* ---- time ---- */

static uint64_t real_now_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void real_sleep_ns(void *arg, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S) };

	(void)arg;
	while (nanosleep(&ts, &ts) != 0)
		;
}

static uint64_t now_ns(const struct kube_lease *lease)
{
	return lease->clock.now_ns(lease->clock.arg);
}

static int stopped(const atomic_int *stop)
{
	return stop && atomic_load(stop);
}

/* Waits until the local time `until`, looking at the stop flag at least
 * every LEASE_STOP_SLICE_NS. */
static void pause_until(struct kube_lease *lease, uint64_t until, const atomic_int *stop)
{
	for (;;) {
		uint64_t now = now_ns(lease);

		if (now >= until || stopped(stop))
			return;
		lease->clock.sleep_ns(lease->clock.arg,
				      until - now > LEASE_STOP_SLICE_NS ? LEASE_STOP_SLICE_NS : until - now);
	}
}

/* A random wait between 3/4 of the retry period and the whole of it. */
static uint64_t jittered_retry_ns(struct kube_lease *lease)
{
	uint64_t x = lease->jitter_state;
	uint64_t quarter = lease->retry_period_ns / 4;

	/* xorshift64: jitter needs spread, not secrecy. */
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	lease->jitter_state = x;
	return lease->retry_period_ns - quarter + x % (quarter + 1);
}

/* The local wall clock as a MicroTime: the one thing written from it. */
static void wall_time_now(char *out, size_t size)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, size - n, ".%06ldZ", ts.tv_nsec / 1000);
}

/* ---- options ---- */

static int valid_identity(const char *s)
{
	size_t n = s ? strnlen(s, KUBE_LEASE_IDENTITY_MAX + 1) : 0;

	if (n == 0 || n > KUBE_LEASE_IDENTITY_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

/* Fills in the defaults and checks the options and the rules between them. */
static int resolve_options(const struct kube_lease_options *o, unsigned *duration_s, unsigned *deadline_ms,
			   unsigned *retry_ms, char **cause)
{
	if (!o)
		return cause_err(cause, MUSTER_EINVAL, "kube_lease_new needs options");
	if (!kube_dns_label(o->namespace, KUBE_LEASE_NAMESPACE_MAX))
		return cause_err(
			cause, MUSTER_EINVAL,
			"lease namespace must be a DNS label: 1 to %d characters of a-z, 0-9 and '-', "
			"beginning and ending with a letter or digit",
			KUBE_LEASE_NAMESPACE_MAX);
	if (!kube_dns_subdomain(o->name, KUBE_LEASE_NAME_MAX))
		return cause_err(
			cause, MUSTER_EINVAL,
			"lease name must be a DNS subdomain: 1 to %d characters of a-z, 0-9, '-' and "
			"'.', each dot-separated part beginning and ending with a letter or digit",
			KUBE_LEASE_NAME_MAX);
	if (!valid_identity(o->identity))
		return cause_err(cause, MUSTER_EINVAL,
				 "lease identity must be 1 to %d printable ASCII characters",
				 KUBE_LEASE_IDENTITY_MAX);
	*duration_s = o->lease_duration_s ? o->lease_duration_s : KUBE_LEASE_DEFAULT_DURATION_S;
	*deadline_ms = o->renew_deadline_ms ? o->renew_deadline_ms : KUBE_LEASE_DEFAULT_RENEW_DEADLINE_MS;
	*retry_ms = o->retry_period_ms ? o->retry_period_ms : KUBE_LEASE_DEFAULT_RETRY_PERIOD_MS;
	if (*duration_s > KUBE_LEASE_DURATION_MAX_S)
		return cause_err(cause, MUSTER_EINVAL, "lease_duration_s (%u) must be at most %u",
				 *duration_s, KUBE_LEASE_DURATION_MAX_S);
	/* The holder must know it has lost before a standby may take over. */
	if ((uint64_t)*deadline_ms >= (uint64_t)*duration_s * 1000u)
		return cause_err(cause, MUSTER_EINVAL,
				 "renew_deadline_ms (%u%s) must be shorter than lease_duration_s (%u s%s)",
				 *deadline_ms, o->renew_deadline_ms ? "" : ", the default", *duration_s,
				 o->lease_duration_s ? "" : ", the default");
	/* The holder must get at least one more try before its deadline. */
	if (*retry_ms >= *deadline_ms)
		return cause_err(cause, MUSTER_EINVAL,
				 "retry_period_ms (%u%s) must be shorter than renew_deadline_ms (%u%s)",
				 *retry_ms, o->retry_period_ms ? "" : ", the default", *deadline_ms,
				 o->renew_deadline_ms ? "" : ", the default");
	return MUSTER_OK;
}

int kube_lease_new(struct kube_client *client, const struct kube_lease_options *options,
		   const struct kube_clock *clock, struct kube_lease **out, char **cause)
{
	struct kube_lease *lease;
	unsigned duration_s = 0, deadline_ms = 0, retry_ms = 0;
	int err;

	*out = NULL;
	if (!client)
		return cause_err(cause, MUSTER_EINVAL, "kube_lease_new needs a client");
	if ((err = resolve_options(options, &duration_s, &deadline_ms, &retry_ms, cause)))
		return err;
	lease = calloc(1, sizeof(*lease));
	if (!lease)
		return MUSTER_ENOMEM;
	if (pthread_mutex_init(&lease->holder_lock, NULL) != 0) {
		free(lease);
		return cause_err(cause, MUSTER_ENOMEM, "kube_lease_new: cannot make a mutex");
	}
	lease->client = client;
	lease->clock.now_ns = clock && clock->now_ns ? clock->now_ns : real_now_ns;
	lease->clock.sleep_ns = clock && clock->sleep_ns ? clock->sleep_ns : real_sleep_ns;
	lease->clock.arg = clock ? clock->arg : NULL;
	/* The lengths were checked: everything fits. */
	snprintf(lease->namespace, sizeof(lease->namespace), "%s", options->namespace);
	snprintf(lease->name, sizeof(lease->name), "%s", options->name);
	snprintf(lease->identity, sizeof(lease->identity), "%s", options->identity);
	/* The names were checked: both paths fit. */
	kube_path(lease->collection_path, sizeof(lease->collection_path), &KUBE_LEASES, lease->namespace,
		  NULL, NULL);
	kube_path(lease->path, sizeof(lease->path), &KUBE_LEASES, lease->namespace, lease->name, NULL);
	lease->duration_s = (long)duration_s;
	lease->renew_deadline_ns = (uint64_t)deadline_ms * NS_PER_MS;
	lease->retry_period_ns = (uint64_t)retry_ms * NS_PER_MS;
	atomic_init(&lease->leader_until_ns, 0);
	lease->jitter_state = now_ns(lease) ^ (uint64_t)(uintptr_t)lease ^ 0x9e3779b97f4a7c15u;
	if (!lease->jitter_state)
		lease->jitter_state = 1;
	*out = lease;
	return MUSTER_OK;
}

void kube_lease_free(struct kube_lease *lease)
{
	if (!lease)
		return;
	cJSON_Delete(lease->observed_metadata);
	pthread_mutex_destroy(&lease->holder_lock);
	free(lease);
}

/* ---- the record at the boundary ---- */

/* Copies an optional string member into size bytes: absent or null is "". */
static int decode_string(const cJSON *value, char *out, size_t size)
{
	size_t n;

	out[0] = '\0';
	if (!value || cJSON_IsNull(value))
		return 0;
	if (!cJSON_IsString(value))
		return -1;
	n = strlen(value->valuestring);
	if (n >= size)
		return -1;
	memcpy(out, value->valuestring, n + 1);
	return 0;
}

/* An optional int32 member that must not be negative: absent or null is 0. */
static int decode_int32(const cJSON *value, long *out)
{
	*out = 0;
	if (!value || cJSON_IsNull(value))
		return 0;
	/* The range check comes first and keeps the conversion defined. */
	if (!cJSON_IsNumber(value) || !(value->valuedouble >= 0 && value->valuedouble <= LEASE_INT32_MAX) ||
	    value->valuedouble != (double)(long)value->valuedouble)
		return -1;
	*out = (long)value->valuedouble;
	return 0;
}

/* Decodes a Lease object; *metadata (if not NULL) becomes a borrowed
 * pointer to its metadata. */
static int lease_decode(const struct kube_lease *lease, const cJSON *object, struct lease_record *record,
			const cJSON **metadata, char **cause)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(object, "metadata");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(object, "spec");

	memset(record, 0, sizeof(*record));
	if (!cJSON_IsObject(object))
		return cause_err(cause, MUSTER_EPARSE,
				 "lease %s/%s: the API server's answer is not an object", lease->namespace,
				 lease->name);
	if (!cJSON_IsObject(meta) ||
	    decode_string(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"), record->resource_version,
			  sizeof(record->resource_version)) != 0 ||
	    !record->resource_version[0])
		return cause_err(
			cause, MUSTER_EPARSE,
			"lease %s/%s: metadata.resourceVersion is missing or not a string of 1 to %d "
			"bytes",
			lease->namespace, lease->name, KUBE_RESOURCE_VERSION_MAX - 1);
	if (spec && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
		return cause_err(cause, MUSTER_EPARSE, "lease %s/%s: spec is not an object", lease->namespace,
				 lease->name);
	for (size_t i = 0; i < N_SPEC_FIELDS; i++) {
		const struct spec_field *f = &spec_fields[i];
		const cJSON *value = cJSON_GetObjectItemCaseSensitive(spec, f->key);
		char *slot = (char *)record + f->offset;

		if (f->kind == FIELD_STRING && decode_string(value, slot, f->size) != 0)
			return cause_err(cause, MUSTER_EPARSE,
					 "lease %s/%s: spec.%s is not a string of at most %zu bytes",
					 lease->namespace, lease->name, f->key, f->size - 1);
		if (f->kind == FIELD_INT32 && decode_int32(value, (long *)(void *)slot) != 0)
			return cause_err(cause, MUSTER_EPARSE,
					 "lease %s/%s: spec.%s is not an integer from 0 to %ld",
					 lease->namespace, lease->name, f->key, LEASE_INT32_MAX);
	}
	if (metadata)
		*metadata = meta;
	return MUSTER_OK;
}

/* The Lease to send: the server's metadata as last seen when there is one
 * (PUT), else a new one (POST), and the record's spec. */
static cJSON *lease_encode(const struct kube_lease *lease, const struct lease_record *record,
			   const cJSON *metadata)
{
	cJSON *object = cJSON_CreateObject(), *meta, *spec;
	int ok = object != NULL;

	ok = ok && cJSON_AddStringToObject(object, "apiVersion", "coordination.k8s.io/v1");
	ok = ok && cJSON_AddStringToObject(object, "kind", "Lease");
	if (ok && metadata) {
		meta = cJSON_Duplicate(metadata, 1);
		ok = meta && cJSON_AddItemToObject(object, "metadata", meta);
		if (meta && !ok)
			cJSON_Delete(meta);
	} else if (ok) {
		meta = cJSON_AddObjectToObject(object, "metadata");
		ok = meta && cJSON_AddStringToObject(meta, "name", lease->name) &&
		     cJSON_AddStringToObject(meta, "namespace", lease->namespace);
	}
	spec = ok ? cJSON_AddObjectToObject(object, "spec") : NULL;
	ok = spec != NULL;
	for (size_t i = 0; ok && i < N_SPEC_FIELDS; i++) {
		const struct spec_field *f = &spec_fields[i];
		const char *slot = (const char *)record + f->offset;

		if (f->kind == FIELD_STRING)
			ok = cJSON_AddStringToObject(spec, f->key, slot) != NULL;
		else
			ok = cJSON_AddNumberToObject(spec, f->key,
						     (double)*(const long *)(const void *)slot) != NULL;
	}
	if (!ok) {
		cJSON_Delete(object);
		return NULL;
	}
	return object;
}

static int records_differ(const struct lease_record *a, const struct lease_record *b)
{
	return strcmp(a->holder, b->holder) || a->duration_s != b->duration_s ||
	       strcmp(a->acquire_time, b->acquire_time) || strcmp(a->renew_time, b->renew_time) ||
	       a->transitions != b->transitions || strcmp(a->resource_version, b->resource_version);
}

/* Remembers a record read or written at local time now, restarting the
 * expiry clock only when it changed. Takes a copy of metadata. */
static int observe(struct kube_lease *lease, const struct lease_record *record, const cJSON *metadata,
		   uint64_t now)
{
	cJSON *copy = cJSON_Duplicate(metadata, 1);

	if (!copy)
		return MUSTER_ENOMEM;
	cJSON_Delete(lease->observed_metadata);
	lease->observed_metadata = copy;
	if (lease->have_observed && !records_differ(&lease->observed, record))
		return MUSTER_OK;
	lease->observed = *record;
	lease->observed_ns = now;
	lease->have_observed = 1;
	muster_lock(&lease->holder_lock);
	memcpy(lease->shared_holder, record->holder, sizeof(lease->shared_holder));
	muster_unlock(&lease->holder_lock);
	return MUSTER_OK;
}

/* Whether the record last seen names us. */
static int observed_ours(const struct kube_lease *lease)
{
	return lease->have_observed && strcmp(lease->observed.holder, lease->identity) == 0;
}

/* Judged by the local clock only: the record has not changed for its
 * leaseDurationSeconds. */
static int observed_expired(const struct kube_lease *lease, uint64_t now)
{
	return now >= lease->observed_ns + (uint64_t)lease->observed.duration_s * NS_PER_S;
}

/* POSTs (no record seen) or PUTs (with the metadata seen last) a record, and
 * observes what the server stored. */
static int lease_write(struct kube_lease *lease, enum kube_method method, const struct lease_record *record,
		       uint64_t now, char **cause)
{
	cJSON *body, *stored = NULL;
	const cJSON *metadata = NULL;
	struct lease_record stored_record;
	int err;

	body = lease_encode(lease, record, method == KUBE_METHOD_PUT ? lease->observed_metadata : NULL);
	if (!body)
		return cause_err(cause, MUSTER_ENOMEM, "lease %s/%s: cannot build the request",
				 lease->namespace, lease->name);
	if (method == KUBE_METHOD_POST)
		err = kube_create(lease->client, lease->collection_path, body, &stored, cause);
	else
		err = kube_update(lease->client, lease->path, body, &stored, cause);
	cJSON_Delete(body);
	if (!err)
		err = lease_decode(lease, stored, &stored_record, &metadata, cause);
	if (!err)
		err = observe(lease, &stored_record, metadata, now);
	cJSON_Delete(stored);
	return err;
}

/* The record we write to hold the lease: renewing keeps acquireTime and
 * leaseTransitions, taking it from anyone else (or from nobody) counts one
 * transition more and starts a new acquireTime. */
static void desired_record(const struct kube_lease *lease, const struct lease_record *old,
			   struct lease_record *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->holder, lease->identity, sizeof(lease->identity));
	out->duration_s = lease->duration_s;
	wall_time_now(out->renew_time, sizeof(out->renew_time));
	if (old && strcmp(old->holder, lease->identity) == 0) {
		memcpy(out->acquire_time, old->acquire_time, sizeof(out->acquire_time));
		out->transitions = old->transitions;
		return;
	}
	memcpy(out->acquire_time, out->renew_time, sizeof(out->acquire_time));
	out->transitions = 0;
	if (old)
		out->transitions =
			old->transitions < LEASE_INT32_MAX ? old->transitions + 1 : old->transitions;
}

/* Returns result; a cause of ours goes to the caller only with an error
 * (a conflict that means "not leader" needs none). */
static int hand_over_cause(char **cause, char *ours, int result)
{
	if (result < 0 && cause && !*cause) {
		*cause = ours;
		ours = NULL;
	}
	free(ours);
	return result;
}

/* A write that conflicts means another candidate wrote (or created) first:
 * no error, only not ours. */
static int write_result(int err)
{
	if (err == MUSTER_ECONFLICT)
		return STEP_RACE_LOST;
	return err ? err : STEP_OURS;
}

/* client-go's tryAcquireOrRenew. Returns an enum step_result or a negative
 * kube_err. */
static int try_step(struct kube_lease *lease, uint64_t now, char **cause)
{
	struct lease_record desired, current;
	const cJSON *metadata = NULL;
	cJSON *object = NULL;
	char *step_cause = NULL;
	int err;

	/* The holder's fast path: PUT on the record it wrote last, no GET. Only
	 * a conflict or a missing Lease sends it down the candidate's path. */
	if (lease->leading && observed_ours(lease) && !observed_expired(lease, now)) {
		desired_record(lease, &lease->observed, &desired);
		err = lease_write(lease, KUBE_METHOD_PUT, &desired, now, &step_cause);
		if (err != MUSTER_ECONFLICT && err != MUSTER_ENOTFOUND)
			return hand_over_cause(cause, step_cause, err ? err : STEP_OURS);
		free(step_cause);
		step_cause = NULL;
	}
	err = kube_get(lease->client, lease->path, &object, &step_cause);
	if (err == MUSTER_ENOTFOUND) {
		/* No error: the way to the create path. */
		free(step_cause);
		step_cause = NULL;
		desired_record(lease, NULL, &desired);
		err = lease_write(lease, KUBE_METHOD_POST, &desired, now, &step_cause);
		return hand_over_cause(cause, step_cause, write_result(err));
	}
	if (err)
		return hand_over_cause(cause, step_cause, err);
	err = lease_decode(lease, object, &current, &metadata, cause);
	if (!err)
		err = observe(lease, &current, metadata, now);
	cJSON_Delete(object);
	if (err)
		return err;
	if (current.holder[0] && strcmp(current.holder, lease->identity) != 0 &&
	    !observed_expired(lease, now))
		return STEP_HELD_BY_OTHER;
	desired_record(lease, &current, &desired);
	err = lease_write(lease, KUBE_METHOD_PUT, &desired, now, &step_cause);
	return hand_over_cause(cause, step_cause, write_result(err));
}

/* ---- state changes, logged once each ---- */

static const char *quoted(char *buf, size_t size, const char *value)
{
	return mlog_quote(buf, size, value, strlen(value));
}

static void lead(struct kube_lease *lease, uint64_t began)
{
	char q[LEASE_LOG_QUOTE_MAX];

	lease->renewed_ns = began;
	atomic_store(&lease->leader_until_ns, began + lease->renew_deadline_ns);
	if (lease->leading)
		return;
	lease->leading = 1;
	lease->logged_holder[0] = '\0';
	mlog(MLOG_INFO, "lease-acquired", "lease=%s/%s identity=%s transitions=%ld", lease->namespace,
	     lease->name, quoted(q, sizeof(q), lease->identity), lease->observed.transitions);
}

/* Leadership ends; reason is one token. */
static void step_down(struct kube_lease *lease, const char *reason)
{
	char q[LEASE_LOG_QUOTE_MAX];

	atomic_store(&lease->leader_until_ns, 0);
	if (!lease->leading)
		return;
	lease->leading = 0;
	mlog(MLOG_WARN, "lease-lost", "lease=%s/%s identity=%s reason=%s", lease->namespace, lease->name,
	     quoted(q, sizeof(q), lease->identity), reason);
}

static void follow(struct kube_lease *lease, enum step_result found)
{
	char q[LEASE_LOG_QUOTE_MAX];

	/* The new holder, when known, is on the held-by-other line below. */
	step_down(lease, found == STEP_RACE_LOST ? "conflict" : "held-by-other");
	/* After a lost race the record seen is the old one: the winner is
	 * logged at the next read. */
	if (found != STEP_HELD_BY_OTHER || strcmp(lease->logged_holder, lease->observed.holder) == 0)
		return;
	memcpy(lease->logged_holder, lease->observed.holder, sizeof(lease->logged_holder));
	mlog(MLOG_INFO, "lease-held-by-other", "lease=%s/%s holder=%s", lease->namespace, lease->name,
	     quoted(q, sizeof(q), lease->observed.holder));
}

/* ---- the public steps ---- */

int kube_lease_try(struct kube_lease *lease, char **cause)
{
	uint64_t began = now_ns(lease);
	int r;

	/* A caller driving the steps itself may have let the deadline pass:
	 * that leadership ended, and a success below starts a new one. */
	if (lease->leading && began >= lease->renewed_ns + lease->renew_deadline_ns)
		step_down(lease, "renew-deadline");
	r = try_step(lease, began, cause);
	if (r < 0)
		return r;
	if (r == STEP_OURS) {
		lead(lease, began);
		return 1;
	}
	follow(lease, (enum step_result)r);
	return 0;
}

int kube_lease_acquire(struct kube_lease *lease, const atomic_int *stop, char **cause)
{
	while (!stopped(stop)) {
		char *attempt_cause = NULL, q[LEASE_LOG_QUOTE_MAX];
		int r = kube_lease_try(lease, &attempt_cause);

		muster_lock(&lease->holder_lock);
		if (r < 0)
			snprintf(lease->last_failure, sizeof(lease->last_failure), "%s: %s",
				 muster_err_name(r), attempt_cause ? attempt_cause : muster_err_message(r));
		else
			lease->last_failure[0] = '\0';
		muster_unlock(&lease->holder_lock);
		if (r == 1)
			return 1;
		if (r < 0 && !kube_err_may_heal(r)) {
			cause_err(cause, r, "%s", attempt_cause ? attempt_cause : muster_err_message(r));
			free(attempt_cause);
			return r;
		}
		if (r < 0)
			mlog(MLOG_WARN, "lease-acquire-failed", "lease=%s/%s err=%s cause=%s",
			     lease->namespace, lease->name, muster_err_name(r),
			     quoted(q, sizeof(q), attempt_cause ? attempt_cause : muster_err_message(r)));
		free(attempt_cause);
		pause_until(lease, now_ns(lease) + jittered_retry_ns(lease), stop);
	}
	return 0;
}

int kube_lease_hold(struct kube_lease *lease, const atomic_int *stop, char **cause)
{
	uint64_t next;
	char *last_cause = NULL;
	int last_err = MUSTER_OK, err;

	if (!lease->leading)
		return cause_err(cause, MUSTER_EINVAL, "lease %s/%s: kube_lease_hold needs the lease held",
				 lease->namespace, lease->name);
	next = lease->renewed_ns + lease->retry_period_ns;
	for (;;) {
		uint64_t deadline = lease->renewed_ns + lease->renew_deadline_ns, began;
		char *attempt_cause = NULL, q[LEASE_LOG_QUOTE_MAX];
		int r;

		pause_until(lease, next < deadline ? next : deadline, stop);
		if (stopped(stop)) {
			err = kube_lease_release(lease, cause);
			goto out;
		}
		began = now_ns(lease);
		if (began >= deadline) {
			step_down(lease, "renew-deadline");
			err = cause_err(cause, MUSTER_ELOST,
					"lease %s/%s: not renewed for %llu ms; last error: %s",
					lease->namespace, lease->name,
					(unsigned long long)((began - lease->renewed_ns) / NS_PER_MS),
					last_cause ? last_cause : muster_err_message(last_err));
			goto out;
		}
		next = began + lease->retry_period_ns;
		r = kube_lease_try(lease, &attempt_cause);
		if (r == 1) {
			free(attempt_cause);
			continue;
		}
		if (r == 0) {
			free(attempt_cause);
			if (lease->observed.holder[0] && !observed_ours(lease))
				err = cause_err(cause, MUSTER_ELOST, "lease %s/%s: now held by %s",
						lease->namespace, lease->name,
						quoted(q, sizeof(q), lease->observed.holder));
			else
				err = cause_err(cause, MUSTER_ELOST,
						"lease %s/%s: another candidate wrote it first",
						lease->namespace, lease->name);
			goto out;
		}
		mlog(MLOG_WARN, "lease-renew-failed", "lease=%s/%s err=%s cause=%s", lease->namespace,
		     lease->name, muster_err_name(r),
		     quoted(q, sizeof(q), attempt_cause ? attempt_cause : muster_err_message(r)));
		free(last_cause);
		last_cause = attempt_cause;
		last_err = r;
	}
out:
	free(last_cause);
	return err;
}

int kube_lease_release(struct kube_lease *lease, char **cause)
{
	struct lease_record released;
	char q[LEASE_LOG_QUOTE_MAX], *write_cause = NULL;
	int err;

	/* Whatever happens below, we no longer act as leader. */
	atomic_store(&lease->leader_until_ns, 0);
	lease->leading = 0;
	if (!observed_ours(lease))
		return MUSTER_OK;
	released = lease->observed;
	released.holder[0] = '\0';
	released.duration_s = 1;
	wall_time_now(released.renew_time, sizeof(released.renew_time));
	memcpy(released.acquire_time, released.renew_time, sizeof(released.acquire_time));
	err = lease_write(lease, KUBE_METHOD_PUT, &released, now_ns(lease), &write_cause);
	if (err == MUSTER_ECONFLICT || err == MUSTER_ENOTFOUND) {
		/* Changed or deleted since we saw it: not ours to release. */
		free(write_cause);
		mlog(MLOG_INFO, "lease-release-skipped", "lease=%s/%s identity=%s reason=%s",
		     lease->namespace, lease->name, quoted(q, sizeof(q), lease->identity),
		     err == MUSTER_ECONFLICT ? "changed" : "deleted");
		return MUSTER_OK;
	}
	if (err)
		return hand_over_cause(cause, write_cause, err);
	mlog(MLOG_INFO, "lease-released", "lease=%s/%s identity=%s transitions=%ld", lease->namespace,
	     lease->name, quoted(q, sizeof(q), lease->identity), lease->observed.transitions);
	return MUSTER_OK;
}

int kube_lease_is_leader(const struct kube_lease *lease)
{
	uint64_t until = atomic_load(&lease->leader_until_ns);

	return until != 0 && now_ns(lease) < until;
}

int kube_lease_last_failure(struct kube_lease *lease, char *out, size_t size)
{
	int failed;

	muster_lock(&lease->holder_lock);
	failed = lease->last_failure[0] != '\0';
	if (size)
		snprintf(out, size, "%s", lease->last_failure);
	muster_unlock(&lease->holder_lock);
	return failed;
}

char *kube_lease_holder(struct kube_lease *lease, char *out, size_t size)
{
	if (!size)
		return out;
	muster_lock(&lease->holder_lock);
	snprintf(out, size, "%s", lease->shared_holder);
	muster_unlock(&lease->holder_lock);
	return out;
}
