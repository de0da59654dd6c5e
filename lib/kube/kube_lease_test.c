/*
 * Unit tests of kube_lease against a fake transport that replays a script
 * of responses and records every request (method, path, body, local time,
 * and whether the lease called itself leader at that moment), with a fake
 * clock so that lease durations and retry periods cost no real time.
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

#include "kube_lease.h"

/* ---- the fake transport and clock ---- */

struct fake_step {
	int err; /* what the transport returns */
	long status;
	const char *body;
};

#define FAKE_MAX_CALLS 64
#define S (1000000000ull)
#define MS (1000000ull)
#define START_NS (1000 * S)

struct fake {
	const struct fake_step *steps;
	size_t n_steps, next;
	char *paths[FAKE_MAX_CALLS];
	char *bodies[FAKE_MAX_CALLS];
	enum kube_method methods[FAKE_MAX_CALLS];
	uint64_t times[FAKE_MAX_CALLS]; /* local time of each request */
	int leader_at[FAKE_MAX_CALLS]; /* kube_lease_is_leader then */
	size_t calls;
	struct kube_lease *lease; /* asked at each request, when set */
	atomic_int *stop; /* set once calls reaches stop_at_call */
	size_t stop_at_call;
	uint64_t now_ns;
};

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;
	const struct fake_step *s;

	assert_true(f->calls < FAKE_MAX_CALLS);
	f->paths[f->calls] = strdup(req->path);
	f->bodies[f->calls] = req->body ? strdup(req->body) : NULL;
	f->methods[f->calls] = req->method;
	f->times[f->calls] = f->now_ns;
	f->leader_at[f->calls] = f->lease ? kube_lease_is_leader(f->lease) : -1;
	f->calls++;
	if (f->stop && f->calls == f->stop_at_call)
		atomic_store(f->stop, 1);
	resp->body = NULL;
	if (f->next >= f->n_steps)
		fail_msg("script exhausted at request %zu: %s", f->calls, req->path);
	s = &f->steps[f->next++];
	if (s->err)
		return cause_err(cause, s->err, "fake transport error");
	resp->status = s->status;
	resp->body = strdup(s->body ? s->body : "");
	resp->body_len = strlen(resp->body);
	return MUSTER_OK;
}

static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	(void)ctx;
	(void)req;
	(void)max_line;
	(void)idle_timeout_s;
	(void)stop;
	(void)on_line;
	(void)arg;
	(void)status;
	(void)error_body;
	(void)cause;
	fail_msg("a lease never watches");
	return MUSTER_EINVAL;
}

static const struct kube_transport fake_ops = { fake_send, fake_stream };

static uint64_t fake_now(void *arg)
{
	return ((struct fake *)arg)->now_ns;
}

static void fake_sleep(void *arg, uint64_t ns)
{
	((struct fake *)arg)->now_ns += ns;
}

/* Everything one test needs: the fake, a client on it without retries or
 * rate limit, and a lease with the given options (NULL: the defaults with
 * namespace "ns", name "leader", identity "me"). */
struct rig {
	struct fake f;
	struct kube_client *client;
	struct kube_lease *lease;
	atomic_int stop;
};

static const struct kube_lease_options default_options = { "ns", "leader", "me", 0, 0, 0 };

static void rig_up(struct rig *r, const struct fake_step *steps, size_t n,
		   const struct kube_lease_options *options)
{
	struct kube_config cfg;
	struct kube_clock clock = { fake_now, fake_sleep, &r->f };
	char *cause = NULL;

	memset(r, 0, sizeof(*r));
	atomic_init(&r->stop, 0);
	r->f.steps = steps;
	r->f.n_steps = n;
	r->f.now_ns = START_NS;
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	cfg.max_retries = 0;
	cfg.max_response_bytes = 64 * 1024;
	assert_int_equal(kube_client_new(&cfg, &fake_ops, &r->f, &clock, &r->client, NULL), MUSTER_OK);
	if (kube_lease_new(r->client, options ? options : &default_options, &clock, &r->lease, &cause))
		fail_msg("kube_lease_new: %s", cause);
	r->f.lease = r->lease;
}

static void rig_down(struct rig *r)
{
	kube_lease_free(r->lease);
	kube_client_free(r->client);
	for (size_t i = 0; i < r->f.calls; i++) {
		free(r->f.paths[i]);
		free(r->f.bodies[i]);
	}
}

/* Stop the driving call once the fake has answered `call` requests. */
static void stop_after(struct rig *r, size_t call)
{
	r->f.stop = &r->stop;
	r->f.stop_at_call = call;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define PATH "/apis/coordination.k8s.io/v1/namespaces/ns/leases/leader"
#define COLLECTION "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
#define T_OLD "2001-01-01T00:00:00.000000Z"
#define T_NOW "2024-05-01T12:00:00.000000Z"
#define T_FUTURE "2999-01-01T00:00:00.000000Z"

/* A Lease as the API server sends it, labelled so that tests can see the
 * server's metadata go back on a PUT. */
#define LEASE(holder, rv, duration, transitions, acquire, renew)                                             \
	"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"leader\","   \
	"\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\",\"labels\":{\"app\":\"muster\"}},"              \
	"\"spec\":{\"holderIdentity\":\"" holder "\",\"leaseDurationSeconds\":" #duration                    \
	",\"acquireTime\":\"" acquire "\",\"renewTime\":\"" renew "\",\"leaseTransitions\":" #transitions    \
	"}}"
#define NOT_FOUND                                                                                            \
	"{\"kind\":\"Status\",\"code\":404,\"message\":\"leases.coordination.k8s.io \\\"leader\\\" not found\"}"
#define CONFLICT "{\"kind\":\"Status\",\"code\":409,\"message\":\"the object has been modified\"}"
#define UNAVAILABLE "{\"kind\":\"Status\",\"code\":503,\"message\":\"etcd is unavailable\"}"

/* What a request body says, decoded for assertions. */
struct sent {
	char kind[32], name[64], namespace[64], resource_version[64], label[64];
	char holder[64], acquire_time[64], renew_time[64];
	long duration_s, transitions;
};

static void copy_string(const cJSON *parent, const char *key, char *out, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);

	out[0] = '\0';
	if (cJSON_IsString(v))
		snprintf(out, size, "%s", v->valuestring);
}

static long get_number(const cJSON *parent, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);

	assert_true(cJSON_IsNumber(v));
	return (long)v->valuedouble;
}

static void decode_sent(const char *body, struct sent *s)
{
	cJSON *root;
	const cJSON *meta, *spec;

	assert_non_null(body);
	root = cJSON_Parse(body);
	assert_non_null(root);
	meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	spec = cJSON_GetObjectItemCaseSensitive(root, "spec");
	assert_true(cJSON_IsObject(meta));
	assert_true(cJSON_IsObject(spec));
	copy_string(root, "kind", s->kind, sizeof(s->kind));
	copy_string(meta, "name", s->name, sizeof(s->name));
	copy_string(meta, "namespace", s->namespace, sizeof(s->namespace));
	copy_string(meta, "resourceVersion", s->resource_version, sizeof(s->resource_version));
	copy_string(cJSON_GetObjectItemCaseSensitive(meta, "labels"), "app", s->label, sizeof(s->label));
	/* holderIdentity is always written, empty when released. */
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity")));
	copy_string(spec, "holderIdentity", s->holder, sizeof(s->holder));
	copy_string(spec, "acquireTime", s->acquire_time, sizeof(s->acquire_time));
	copy_string(spec, "renewTime", s->renew_time, sizeof(s->renew_time));
	s->duration_s = get_number(spec, "leaseDurationSeconds");
	s->transitions = get_number(spec, "leaseTransitions");
	cJSON_Delete(root);
}

/* "2006-01-02T15:04:05.000000Z" */
static int is_micro_time(const char *t)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";

	if (strlen(t) != sizeof(shape) - 1)
		return 0;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !(t[i] >= '0' && t[i] <= '9') : t[i] != shape[i])
			return 0;
	return 1;
}

static const char *holder_of(struct kube_lease *lease)
{
	static char buf[64];

	return kube_lease_holder(lease, buf, sizeof(buf));
}

/* ---- acquiring ---- */

static void creates_the_lease_when_missing(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
	};
	struct rig r;
	struct sent s;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	assert_string_equal(holder_of(r.lease), "");
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_null(cause);
	assert_int_equal(r.f.calls, 2);
	assert_int_equal(r.f.methods[0], KUBE_METHOD_GET);
	assert_string_equal(r.f.paths[0], PATH);
	assert_int_equal(r.f.methods[1], KUBE_METHOD_POST);
	assert_string_equal(r.f.paths[1], COLLECTION);
	decode_sent(r.f.bodies[1], &s);
	assert_string_equal(s.kind, "Lease");
	assert_string_equal(s.name, "leader");
	assert_string_equal(s.namespace, "ns");
	assert_string_equal(s.resource_version, "");
	assert_string_equal(s.holder, "me");
	assert_int_equal(s.duration_s, 15);
	assert_int_equal(s.transitions, 0);
	assert_true(is_micro_time(s.acquire_time));
	assert_string_equal(s.acquire_time, s.renew_time);
	assert_int_equal(kube_lease_is_leader(r.lease), 1);
	assert_string_equal(holder_of(r.lease), "me");
	rig_down(&r);
}

static void takes_over_an_expired_lease_with_put(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("other", "5", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "5", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "5", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("me", "6", 15, 4, T_NOW, T_NOW) },
	};
	struct rig r;
	struct sent s;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	/* First sight: live for a whole lease duration from now. */
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	assert_string_equal(holder_of(r.lease), "other");
	r.f.now_ns += 15 * S - 1;
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	r.f.now_ns += 1;
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_null(cause);
	assert_int_equal(r.f.calls, 4);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(r.f.methods[i], KUBE_METHOD_GET);
	assert_int_equal(r.f.methods[3], KUBE_METHOD_PUT);
	assert_string_equal(r.f.paths[3], PATH);
	decode_sent(r.f.bodies[3], &s);
	assert_string_equal(s.resource_version, "5");
	assert_string_equal(s.holder, "me");
	assert_int_equal(s.transitions, 4);
	assert_int_equal(s.duration_s, 15);
	/* A new acquireTime, and the server's metadata sent back whole. */
	assert_true(is_micro_time(s.acquire_time));
	assert_string_not_equal(s.acquire_time, T_NOW);
	assert_string_equal(s.acquire_time, s.renew_time);
	assert_string_equal(s.label, "muster");
	assert_int_equal(kube_lease_is_leader(r.lease), 1);
	rig_down(&r);
}

static void a_live_lease_of_another_is_left_alone(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("other", "5", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "6", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "7", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "8", 15, 3, T_NOW, T_NOW) },
	};
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	/* The holder renews every 10 s: a minute later it still holds. */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(kube_lease_try(r.lease, &cause), 0);
		assert_null(cause);
		r.f.now_ns += 14 * S;
	}
	assert_int_equal(r.f.calls, 4);
	for (size_t i = 0; i < r.f.calls; i++)
		assert_int_equal(r.f.methods[i], KUBE_METHOD_GET);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	assert_string_equal(holder_of(r.lease), "other");
	rig_down(&r);
}

static void expiry_is_judged_by_the_local_clock(void **state)
{
	static const struct fake_step steps[] = {
		/* A renewTime long past means nothing: the change is seen now. */
		{ 0, 200, LEASE("other", "5", 15, 3, T_OLD, T_OLD) },
		/* 10 s later it changed (the holder renewed with a wrong clock). */
		{ 0, 200, LEASE("other", "6", 15, 3, T_OLD, T_OLD) },
		{ 0, 200, LEASE("other", "6", 15, 3, T_OLD, T_OLD) },
		{ 0, 200, LEASE("other", "6", 15, 3, T_OLD, T_OLD) },
		{ 0, 200, LEASE("me", "7", 15, 4, T_NOW, T_NOW) },
		/* Our renewal conflicts: a third took over, with a renewTime in
		 * the future, which does not keep a dead lease alive. */
		{ 0, 409, CONFLICT },
		{ 0, 200, LEASE("third", "8", 15, 5, T_FUTURE, T_FUTURE) },
		{ 0, 200, LEASE("third", "8", 15, 5, T_FUTURE, T_FUTURE) },
		{ 0, 200, LEASE("me", "9", 15, 6, T_NOW, T_NOW) },
	};
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	r.f.now_ns += 10 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	/* 20 s after the first sight but only 10 s after the change. */
	r.f.now_ns += 10 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	r.f.now_ns += 5 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_int_equal(r.f.methods[4], KUBE_METHOD_PUT);
	/* The next holder writes a renewTime centuries ahead. */
	r.f.now_ns += 1 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	r.f.now_ns += 15 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_null(cause);
	assert_int_equal(r.f.calls, 9);
	assert_int_equal(r.f.methods[8], KUBE_METHOD_PUT);
	rig_down(&r);
}

static void a_released_lease_is_taken_at_once_and_races_are_not_errors(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("", "5", 1, 3, T_NOW, T_NOW) },
		{ 0, 409, CONFLICT },
		{ 0, 200, LEASE("winner", "6", 15, 4, T_NOW, T_NOW) },
		/* A create race: somebody else created it between GET and POST. */
		{ 0, 404, NOT_FOUND },
		{ 0, 409, "{\"kind\":\"Status\",\"code\":409,\"message\":\"already exists\"}" },
	};
	struct rig r;
	struct sent s;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	/* Nobody holds it: no wait, a PUT at the first sight. */
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	assert_null(cause);
	assert_int_equal(r.f.methods[1], KUBE_METHOD_PUT);
	decode_sent(r.f.bodies[1], &s);
	assert_string_equal(s.resource_version, "5");
	assert_int_equal(s.transitions, 4);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	assert_string_equal(holder_of(r.lease), "winner");
	assert_int_equal(kube_lease_try(r.lease, &cause), 0);
	assert_null(cause);
	assert_int_equal(r.f.methods[4], KUBE_METHOD_POST);
	assert_int_equal(r.f.calls, 5);
	rig_down(&r);
}

static void the_same_identity_after_a_restart_keeps_the_record(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("me", "3", 15, 2, T_OLD, T_NOW) },
		{ 0, 200, LEASE("me", "4", 15, 2, T_OLD, T_NOW) },
	};
	struct rig r;
	struct sent s;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	/* Our own name on it: renewed at once, as client-go does. */
	assert_int_equal(kube_lease_try(r.lease, NULL), 1);
	decode_sent(r.f.bodies[1], &s);
	assert_string_equal(s.holder, "me");
	assert_string_equal(s.acquire_time, T_OLD);
	assert_int_equal(s.transitions, 2);
	assert_string_equal(s.resource_version, "3");
	rig_down(&r);
}

/* ---- renewing ---- */

static void renewing_keeps_acquire_time_and_transitions(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("", "5", 1, 3, T_OLD, T_OLD) },
		{ 0, 200, LEASE("me", "6", 15, 4, T_NOW, T_NOW) },
		/* Renewals: a PUT on the record written last, no GET. */
		{ 0, 200, LEASE("me", "7", 15, 4, T_NOW, "2024-05-01T12:00:02.000000Z") },
		{ 0, 200, LEASE("me", "8", 15, 4, T_NOW, "2024-05-01T12:00:04.000000Z") },
	};
	struct rig r;
	struct sent s;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_try(r.lease, NULL), 1);
	for (size_t call = 2; call < 4; call++) {
		r.f.now_ns += 2 * S;
		assert_int_equal(kube_lease_try(r.lease, NULL), 1);
		assert_int_equal(r.f.methods[call], KUBE_METHOD_PUT);
		decode_sent(r.f.bodies[call], &s);
		assert_string_equal(s.holder, "me");
		assert_string_equal(s.acquire_time, T_NOW);
		assert_int_equal(s.transitions, 4);
		assert_string_equal(s.resource_version, call == 2 ? "6" : "7");
		assert_true(is_micro_time(s.renew_time));
		assert_string_equal(s.label, "muster");
	}
	assert_int_equal(r.f.calls, 4);
	assert_int_equal(kube_lease_is_leader(r.lease), 1);
	rig_down(&r);
}

static void a_step_after_the_deadline_reads_before_writing(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		{ 0, 200, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		{ 0, 200, LEASE("me", "2", 15, 0, T_NOW, T_NOW) },
	};
	struct rig r;
	struct sent s;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_try(r.lease, NULL), 1);
	/* Past the renew deadline, inside the lease duration: no longer
	 * leader, and the next step is a candidate's (GET, then PUT). */
	r.f.now_ns += 10 * S;
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	assert_int_equal(kube_lease_try(r.lease, NULL), 1);
	assert_int_equal(r.f.methods[2], KUBE_METHOD_GET);
	assert_int_equal(r.f.methods[3], KUBE_METHOD_PUT);
	decode_sent(r.f.bodies[3], &s);
	assert_string_equal(s.resource_version, "1");
	assert_int_equal(s.transitions, 0);
	assert_int_equal(kube_lease_is_leader(r.lease), 1);
	rig_down(&r);
}

static void acquire_then_hold(struct rig *r, char **cause)
{
	assert_int_equal(kube_lease_acquire(r->lease, &r->stop, cause), 1);
	assert_null(*cause);
}

static void renew_failures_past_the_deadline_lose_leadership(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		{ 0, 503, UNAVAILABLE },	{ 0, 503, UNAVAILABLE },
		{ MUSTER_ETRANSPORT, 0, NULL }, { 0, 503, UNAVAILABLE },
	};
	struct rig r;
	char *cause = NULL;
	uint64_t acquired;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	acquire_then_hold(&r, &cause);
	acquired = r.f.now_ns;
	assert_int_equal(kube_lease_hold(r.lease, &r.stop, &cause), MUSTER_ELOST);
	/* Tries every 2 s; at the 10 s deadline it gives up without a try. */
	assert_int_equal(r.f.calls, 6);
	for (size_t i = 2; i < 6; i++) {
		assert_int_equal(r.f.methods[i], KUBE_METHOD_PUT);
		assert_int_equal(r.f.times[i] - acquired, (i - 1) * 2 * S);
		assert_int_equal(r.f.leader_at[i], 1);
	}
	assert_int_equal(r.f.now_ns - acquired, 10 * S);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	assert_non_null(strstr(cause, "not renewed for 10000 ms"));
	assert_non_null(strstr(cause, "etcd is unavailable"));
	free(cause);
	rig_down(&r);
}

static void transient_errors_within_the_deadline_keep_leadership(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		{ 0, 503, UNAVAILABLE },
		{ MUSTER_ETIMEOUT, 0, NULL },
		{ 0, 503, UNAVAILABLE },
		{ 0, 200, LEASE("me", "2", 15, 0, T_NOW, T_NOW) },
		{ 0, 503, UNAVAILABLE },
		{ 0, 200, LEASE("me", "3", 15, 0, T_NOW, T_NOW) },
		/* the release */
		{ 0, 200, LEASE("", "4", 1, 0, T_NOW, T_NOW) },
	};
	struct rig r;
	struct sent s;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	acquire_then_hold(&r, &cause);
	stop_after(&r, 8);
	assert_int_equal(kube_lease_hold(r.lease, &r.stop, &cause), MUSTER_OK);
	assert_null(cause);
	assert_int_equal(r.f.calls, 9);
	/* Three failures, then a success 8 s after the last one, 2 s before
	 * the deadline: leader throughout, and the deadline restarts there. */
	for (size_t i = 2; i < 8; i++)
		assert_int_equal(r.f.leader_at[i], 1);
	assert_int_equal(r.f.times[5] - r.f.times[1], 8 * S);
	assert_int_equal(r.f.times[7] - r.f.times[1], 12 * S);
	/* Each renewal after a failure still PUTs on the last record stored. */
	decode_sent(r.f.bodies[6], &s);
	assert_string_equal(s.resource_version, "2");
	assert_int_equal(r.f.leader_at[8], 0);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	rig_down(&r);
}

static void stopping_releases_with_an_empty_holder_and_one_second(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("", "5", 1, 7, T_OLD, T_OLD) },
		{ 0, 200, LEASE("me", "6", 15, 8, T_NOW, T_NOW) },
		{ 0, 200, LEASE("me", "7", 15, 8, T_NOW, T_NOW) },
		{ 0, 200, LEASE("", "8", 1, 8, T_NOW, T_NOW) },
	};
	struct rig r;
	struct sent s;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	acquire_then_hold(&r, &cause);
	assert_int_equal(r.f.calls, 2);
	stop_after(&r, 3);
	assert_int_equal(kube_lease_hold(r.lease, &r.stop, &cause), MUSTER_OK);
	assert_null(cause);
	assert_int_equal(r.f.calls, 4);
	assert_int_equal(r.f.methods[3], KUBE_METHOD_PUT);
	assert_string_equal(r.f.paths[3], PATH);
	decode_sent(r.f.bodies[3], &s);
	assert_string_equal(s.holder, "");
	assert_int_equal(s.duration_s, 1);
	assert_int_equal(s.transitions, 8);
	assert_string_equal(s.resource_version, "7");
	assert_true(is_micro_time(s.renew_time));
	/* Not leader any more, from before the release was sent. */
	assert_int_equal(r.f.leader_at[3], 0);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	assert_string_equal(holder_of(r.lease), "");
	/* Nothing more to release; holding needs the lease. */
	assert_int_equal(kube_lease_release(r.lease, &cause), MUSTER_OK);
	assert_int_equal(r.f.calls, 4);
	assert_int_equal(kube_lease_hold(r.lease, &r.stop, &cause), MUSTER_EINVAL);
	assert_non_null(strstr(cause, "needs the lease held"));
	free(cause);
	rig_down(&r);
}

static void another_holder_taking_over_ends_leadership_at_once(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		/* The renewal conflicts: somebody wrote; the GET shows who. */
		{ 0, 409, CONFLICT },
		{ 0, 200, LEASE("usurper", "2", 15, 1, T_NOW, T_NOW) },
	};
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	acquire_then_hold(&r, &cause);
	assert_int_equal(kube_lease_hold(r.lease, &r.stop, &cause), MUSTER_ELOST);
	assert_non_null(strstr(cause, "now held by \"usurper\""));
	free(cause);
	assert_int_equal(r.f.calls, 4);
	assert_int_equal(r.f.methods[3], KUBE_METHOD_GET);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	/* Not ours: nothing is released. */
	assert_int_equal(kube_lease_release(r.lease, NULL), MUSTER_OK);
	assert_int_equal(r.f.calls, 4);
	rig_down(&r);
}

static void a_deleted_lease_is_created_again_unless_another_is_first(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		/* Deleted under us: the renewal finds it gone and creates it. */
		{ 0, 404, NOT_FOUND },
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "9", 15, 0, T_NOW, T_NOW) },
		/* Deleted again, and another candidate creates it first. */
		{ 0, 404, NOT_FOUND },
		{ 0, 404, NOT_FOUND },
		{ 0, 409, "{\"kind\":\"Status\",\"code\":409,\"message\":\"already exists\"}" },
	};
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	r.f.now_ns += 2 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_null(cause);
	assert_int_equal(r.f.methods[2], KUBE_METHOD_PUT);
	assert_int_equal(r.f.methods[3], KUBE_METHOD_GET);
	assert_int_equal(r.f.methods[4], KUBE_METHOD_POST);
	assert_int_equal(kube_lease_hold(r.lease, &r.stop, &cause), MUSTER_ELOST);
	assert_non_null(strstr(cause, "another candidate wrote it first"));
	free(cause);
	assert_int_equal(r.f.calls, 8);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	rig_down(&r);
}

static void a_release_that_conflicts_is_not_an_error(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		{ 0, 409, CONFLICT },
		/* and one that fails */
		{ 0, 200, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		{ 0, 200, LEASE("me", "2", 15, 0, T_NOW, T_NOW) },
		{ 0, 403, "{\"kind\":\"Status\",\"code\":403,\"message\":\"forbidden: cannot update\"}" },
	};
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_int_equal(kube_lease_release(r.lease, &cause), MUSTER_OK);
	assert_null(cause);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	r.f.now_ns += 1 * S;
	assert_int_equal(kube_lease_try(r.lease, &cause), 1);
	assert_int_equal(kube_lease_release(r.lease, &cause), MUSTER_EUNAUTHORIZED);
	assert_non_null(strstr(cause, "forbidden: cannot update"));
	free(cause);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	rig_down(&r);
}

/* ---- acquire's loop ---- */

static void stop_is_honoured_while_acquiring(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LEASE("other", "5", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "6", 15, 3, T_NOW, T_NOW) },
		{ 0, 200, LEASE("other", "7", 15, 3, T_NOW, T_NOW) },
	};
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	atomic_store(&r.stop, 1);
	assert_int_equal(kube_lease_acquire(r.lease, &r.stop, &cause), 0);
	assert_int_equal(r.f.calls, 0);
	atomic_store(&r.stop, 0);
	stop_after(&r, 3);
	assert_int_equal(kube_lease_acquire(r.lease, &r.stop, &cause), 0);
	assert_null(cause);
	assert_int_equal(r.f.calls, 3);
	/* Jittered between 3/4 of the retry period and the whole of it. */
	for (size_t i = 1; i < 3; i++)
		assert_in_range(r.f.times[i] - r.f.times[i - 1], 1500 * MS, 2000 * MS);
	/* The stop was seen within one slice of 100 ms after the last try. */
	assert_in_range(r.f.now_ns - r.f.times[2], 0, 100 * MS);
	assert_int_equal(kube_lease_is_leader(r.lease), 0);
	rig_down(&r);
}

static void acquire_retries_transient_errors_and_returns_the_rest(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 503, UNAVAILABLE },
		{ MUSTER_ETRANSPORT, 0, NULL },
		{ 0, 404, NOT_FOUND },
		{ 0, 201, LEASE("me", "1", 15, 0, T_NOW, T_NOW) },
		/* second lease: refused */
		{ 0, 403, "{\"kind\":\"Status\",\"code\":403,\"message\":\"leases is forbidden\"}" },
	};
	struct kube_lease *second = NULL;
	struct rig r;
	char *cause = NULL;

	(void)state;
	rig_up(&r, steps, N(steps), NULL);
	assert_int_equal(kube_lease_acquire(r.lease, &r.stop, &cause), 1);
	assert_null(cause);
	assert_int_equal(r.f.calls, 4);
	assert_int_equal(kube_lease_new(r.client, &default_options, NULL, &second, NULL), MUSTER_OK);
	assert_int_equal(kube_lease_acquire(second, &r.stop, &cause), MUSTER_EUNAUTHORIZED);
	assert_non_null(strstr(cause, "leases is forbidden"));
	free(cause);
	assert_int_equal(r.f.calls, 5);
	kube_lease_free(second);
	rig_down(&r);
}

/* ---- bad input ---- */

static void malformed_leases_are_clear_errors(void **state)
{
	static char long_holder[2200];
	static const struct {
		const char *body;
		const char *in_cause;
	} cases[] = {
		{ "not json", "not JSON" },
		{ "[1,2]", "not an object" },
		{ "{\"spec\":{}}", "metadata.resourceVersion" },
		{ "{\"metadata\":{\"resourceVersion\":7}}", "metadata.resourceVersion" },
		{ "{\"metadata\":{\"resourceVersion\":\"\"}}", "metadata.resourceVersion" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":[]}", "spec is not an object" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":5}}",
		  "spec.holderIdentity" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
		  "spec.leaseDurationSeconds" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":1.5}}",
		  "spec.leaseDurationSeconds" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":1e300}}",
		  "spec.leaseDurationSeconds" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseTransitions\":-1}}",
		  "spec.leaseTransitions" },
		{ "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":{}}}",
		  "spec.renewTime" },
		{ long_holder, "spec.holderIdentity is not a string of at most 1024 bytes" },
	};
	struct fake_step steps[N(cases) + 1];
	struct rig r;
	char *cause = NULL;
	int n;

	(void)state;
	n = snprintf(long_holder, sizeof(long_holder),
		     "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"");
	memset(long_holder + n, 'h', KUBE_LEASE_HOLDER_MAX + 1);
	snprintf(long_holder + n + KUBE_LEASE_HOLDER_MAX + 1, sizeof(long_holder) - (size_t)n - 1025, "\"}}");
	for (size_t i = 0; i < N(cases); i++)
		steps[i] = (struct fake_step){ 0, 200, cases[i].body };
	/* acquire gives up at once on a malformed lease. */
	steps[N(cases)] = (struct fake_step){ 0, 200, "{\"metadata\":{}}" };
	rig_up(&r, steps, N(steps), NULL);
	for (size_t i = 0; i < N(cases); i++) {
		assert_int_equal(kube_lease_try(r.lease, &cause), MUSTER_EPARSE);
		if (!cause || !strstr(cause, cases[i].in_cause))
			fail_msg("case %zu: cause \"%s\" lacks \"%s\"", i, cause ? cause : "(none)",
				 cases[i].in_cause);
		free(cause);
		cause = NULL;
	}
	assert_int_equal(kube_lease_acquire(r.lease, &r.stop, &cause), MUSTER_EPARSE);
	assert_non_null(strstr(cause, "lease ns/leader: metadata.resourceVersion"));
	free(cause);
	/* Nothing was ever written. */
	for (size_t i = 0; i < r.f.calls; i++)
		assert_int_equal(r.f.methods[i], KUBE_METHOD_GET);
	rig_down(&r);
}

static void invalid_options_are_refused_with_a_cause(void **state)
{
	static char long_name[300], long_identity[200];
	static const struct {
		struct kube_lease_options options;
		const char *in_cause;
	} cases[] = {
		{ { NULL, "leader", "me", 0, 0, 0 }, "namespace must be a DNS label" },
		{ { "", "leader", "me", 0, 0, 0 }, "namespace must be a DNS label" },
		{ { "Ns", "leader", "me", 0, 0, 0 }, "namespace must be a DNS label" },
		{ { "a.b", "leader", "me", 0, 0, 0 }, "namespace must be a DNS label" },
		{ { "ns-", "leader", "me", 0, 0, 0 }, "namespace must be a DNS label" },
		{ { "ns", "", "me", 0, 0, 0 }, "name must be a DNS subdomain" },
		{ { "ns", "a/b", "me", 0, 0, 0 }, "name must be a DNS subdomain" },
		{ { "ns", "a..b", "me", 0, 0, 0 }, "name must be a DNS subdomain" },
		{ { "ns", ".ab", "me", 0, 0, 0 }, "name must be a DNS subdomain" },
		{ { "ns", "a.-b", "me", 0, 0, 0 }, "name must be a DNS subdomain" },
		{ { "ns", long_name, "me", 0, 0, 0 }, "name must be a DNS subdomain" },
		{ { "ns", "leader", "", 0, 0, 0 }, "identity must be 1 to 128 printable" },
		{ { "ns", "leader", NULL, 0, 0, 0 }, "identity must be 1 to 128 printable" },
		{ { "ns", "leader", "tab\there", 0, 0, 0 }, "identity must be 1 to 128 printable" },
		{ { "ns", "leader", long_identity, 0, 0, 0 }, "identity must be 1 to 128 printable" },
		{ { "ns", "leader", "me", 2, 0, 0 },
		  "renew_deadline_ms (10000, the default) must be shorter than lease_duration_s (2 s)" },
		{ { "ns", "leader", "me", 10, 10000, 0 }, "renew_deadline_ms (10000) must be shorter" },
		{ { "ns", "leader", "me", 0, 1500, 0 },
		  "retry_period_ms (2000, the default) must be shorter than renew_deadline_ms (1500)" },
		{ { "ns", "leader", "me", 2, 1500, 1500 }, "retry_period_ms (1500) must be shorter" },
		{ { "ns", "leader", "me", 86401, 0, 0 }, "lease_duration_s (86401) must be at most 86400" },
	};
	struct kube_config cfg;
	struct kube_client *client = NULL;
	static char not_null;
	struct kube_lease *lease = (struct kube_lease *)(void *)&not_null; /* must be reset */
	struct fake f = { 0 };
	char *cause = NULL;

	(void)state;
	memset(long_name, 'a', KUBE_LEASE_NAME_MAX + 1);
	memset(long_identity, 'i', KUBE_LEASE_IDENTITY_MAX + 1);
	kube_config_defaults(&cfg);
	assert_int_equal(kube_client_new(&cfg, &fake_ops, &f, NULL, &client, NULL), MUSTER_OK);
	for (size_t i = 0; i < N(cases); i++) {
		assert_int_equal(kube_lease_new(client, &cases[i].options, NULL, &lease, &cause),
				 MUSTER_EINVAL);
		assert_null(lease);
		if (!cause || !strstr(cause, cases[i].in_cause))
			fail_msg("case %zu: cause \"%s\" lacks \"%s\"", i, cause ? cause : "(none)",
				 cases[i].in_cause);
		free(cause);
		cause = NULL;
	}
	assert_int_equal(kube_lease_new(client, NULL, NULL, &lease, &cause), MUSTER_EINVAL);
	free(cause);
	cause = NULL;
	assert_int_equal(kube_lease_new(NULL, &default_options, NULL, &lease, NULL), MUSTER_EINVAL);
	/* The limits themselves are accepted. */
	long_name[KUBE_LEASE_NAME_MAX] = '\0';
	long_identity[KUBE_LEASE_IDENTITY_MAX] = '\0';
	{
		struct kube_lease_options ok = { "a-0", long_name, long_identity, 2, 1500, 300 };
		struct kube_lease_options dotted = { "ns", "a.b-c.d", "pod x_1 \"q\"", 0, 0, 0 };

		assert_int_equal(kube_lease_new(client, &ok, NULL, &lease, &cause), MUSTER_OK);
		kube_lease_free(lease);
		assert_int_equal(kube_lease_new(client, &dotted, NULL, &lease, &cause), MUSTER_OK);
		kube_lease_free(lease);
	}
	assert_null(cause);
	assert_int_equal(f.calls, 0);
	kube_lease_free(NULL);
	kube_client_free(client);
}

static void the_error_code_has_a_name(void **state)
{
	(void)state;
	assert_string_equal(muster_err_name(MUSTER_ELOST), "MUSTER_ELOST");
	assert_non_null(strstr(muster_err_message(MUSTER_ELOST), "leadership lost"));
	assert_false(kube_err_is_transient(MUSTER_ELOST));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(creates_the_lease_when_missing),
		cmocka_unit_test(takes_over_an_expired_lease_with_put),
		cmocka_unit_test(a_live_lease_of_another_is_left_alone),
		cmocka_unit_test(expiry_is_judged_by_the_local_clock),
		cmocka_unit_test(a_released_lease_is_taken_at_once_and_races_are_not_errors),
		cmocka_unit_test(the_same_identity_after_a_restart_keeps_the_record),
		cmocka_unit_test(renewing_keeps_acquire_time_and_transitions),
		cmocka_unit_test(a_step_after_the_deadline_reads_before_writing),
		cmocka_unit_test(renew_failures_past_the_deadline_lose_leadership),
		cmocka_unit_test(transient_errors_within_the_deadline_keep_leadership),
		cmocka_unit_test(stopping_releases_with_an_empty_holder_and_one_second),
		cmocka_unit_test(another_holder_taking_over_ends_leadership_at_once),
		cmocka_unit_test(a_deleted_lease_is_created_again_unless_another_is_first),
		cmocka_unit_test(a_release_that_conflicts_is_not_an_error),
		cmocka_unit_test(stop_is_honoured_while_acquiring),
		cmocka_unit_test(acquire_retries_transient_errors_and_returns_the_rest),
		cmocka_unit_test(malformed_leases_are_clear_errors),
		cmocka_unit_test(invalid_options_are_refused_with_a_cause),
		cmocka_unit_test(the_error_code_has_a_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
