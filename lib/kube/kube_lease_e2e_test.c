/*
 * End-to-end tests of kube_lease on the real local control plane
 * (e2e/cluster/up.sh): candidates with their own clients (libcurl, TLS)
 * compete for real Leases in a fresh namespace, with short timings (lease
 * 2 s, renew deadline 1.5 s, retry 300 ms) so that a failover takes
 * seconds. They run only when MUSTER_KUBECONFIG names the admin kubeconfig
 * and are skipped otherwise, so the unit suite never needs a cluster.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <cmocka.h>

#include "kube_client.h"
#include "kube_curl.h"
#include "kube_lease.h"

#define LEASE_DURATION_S 2u
#define RENEW_DEADLINE_MS 1500u
#define RETRY_PERIOD_MS 300u
/* Room for the requests themselves on a busy machine. */
#define REQUEST_SLACK_MS 300u

#define MS (1000000ull)

struct candidate {
	char identity[32];
	struct kube_curl *curl;
	struct kube_client *client;
	struct kube_lease *lease;
	atomic_int stop;
	pthread_t thread;
	int started;
	/* Set by the thread: when it began to hold, when it returned, what. */
	atomic_uint_least64_t acquired_ns;
	atomic_uint_least64_t done_ns;
	int result;
	char *cause;
};

struct env {
	struct kube_config cfg;
	struct kube_curl *curl;
	struct kube_client *client; /* the test's own, to look at the Leases */
	char ns[64];
	/* The tests' candidates, closed after each test even when it fails
	 * midway, so that no thread outlives its test. */
	struct candidate candidates[2];
};

static void check(int err, char *cause, const char *what)
{
	if (err)
		fail_msg("%s: %s: %s", what, muster_err_name(err), cause ? cause : "");
	free(cause);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A client of its own whose one request fits well inside the renew
 * deadline, as kube_lease.h asks. */
static void open_client(const struct kube_config *base, struct kube_curl **curl, struct kube_client **client)
{
	struct kube_config cfg = *base;
	char *cause = NULL;

	cfg.connect_timeout_ms = 500;
	cfg.request_timeout_ms = 500;
	cfg.max_retries = 0;
	check(kube_curl_new(&cfg, curl, &cause), cause, "kube_curl_new");
	cause = NULL;
	check(kube_client_new(&cfg, &kube_curl_transport, *curl, NULL, client, &cause), cause,
	      "kube_client_new");
}

static int setup(void **state)
{
	const char *path = getenv("MUSTER_KUBECONFIG");
	struct env *e;
	char *cause = NULL;
	cJSON *ns;

	if (!path || !path[0]) {
		*state = NULL;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	assert_non_null(e);
	check(kube_config_from_kubeconfig(path, NULL, &e->cfg, &cause), cause, "kube_config_from_kubeconfig");
	cause = NULL;
	check(kube_curl_new(&e->cfg, &e->curl, &cause), cause, "kube_curl_new");
	cause = NULL;
	check(kube_client_new(&e->cfg, &kube_curl_transport, e->curl, NULL, &e->client, &cause), cause,
	      "kube_client_new");
	snprintf(e->ns, sizeof(e->ns), "lease-e2e-%ld-%ld", (long)getpid(), (long)time(NULL) % 100000);
	ns = cJSON_CreateObject();
	cJSON_AddStringToObject(ns, "apiVersion", "v1");
	cJSON_AddStringToObject(ns, "kind", "Namespace");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(ns, "metadata"), "name", e->ns);
	cause = NULL;
	check(kube_create(e->client, "/api/v1/namespaces", ns, NULL, &cause), cause, "create namespace");
	cJSON_Delete(ns);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char path[128], *cause = NULL;

	if (!e)
		return 0;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", e->ns);
	check(kube_delete(e->client, path, &cause), cause, "delete namespace");
	kube_client_free(e->client);
	kube_curl_free(e->curl);
	kube_config_free(&e->cfg);
	free(e);
	return 0;
}

#define SKIP_WITHOUT_CLUSTER(e)                                                                              \
	do {                                                                                                 \
		if (!(e)) {                                                                                  \
			print_message("MUSTER_KUBECONFIG not set: skipped\n");                               \
			skip();                                                                              \
		}                                                                                            \
	} while (0)

/* ---- candidates ---- */

static void candidate_open(struct env *e, struct candidate *c, const char *lease_name, const char *identity)
{
	struct kube_lease_options options = {
		e->ns, lease_name, identity, LEASE_DURATION_S, RENEW_DEADLINE_MS, RETRY_PERIOD_MS
	};
	char *cause = NULL;

	memset(c, 0, sizeof(*c));
	snprintf(c->identity, sizeof(c->identity), "%s", identity);
	atomic_init(&c->stop, 0);
	atomic_init(&c->acquired_ns, 0);
	atomic_init(&c->done_ns, 0);
	open_client(&e->cfg, &c->curl, &c->client);
	check(kube_lease_new(c->client, &options, NULL, &c->lease, &cause), cause, "kube_lease_new");
}

/* What a process would do: wait for the lease, then hold it until told to
 * stop. */
static void *candidate_run(void *arg)
{
	struct candidate *c = arg;
	int r = kube_lease_acquire(c->lease, &c->stop, &c->cause);

	if (r == 1) {
		atomic_store(&c->acquired_ns, mono_ns());
		r = kube_lease_hold(c->lease, &c->stop, &c->cause);
	}
	c->result = r;
	atomic_store(&c->done_ns, mono_ns());
	return NULL;
}

static void candidate_start(struct candidate *c)
{
	assert_int_equal(pthread_create(&c->thread, NULL, candidate_run, c), 0);
	c->started = 1;
}

/* Stops the thread (which releases a held lease) and waits for it. */
static void candidate_stop(struct candidate *c)
{
	if (!c->started)
		return;
	atomic_store(&c->stop, 1);
	pthread_join(c->thread, NULL);
	c->started = 0;
}

static void candidate_close(struct candidate *c)
{
	candidate_stop(c);
	kube_lease_free(c->lease);
	kube_client_free(c->client);
	kube_curl_free(c->curl);
	free(c->cause);
	memset(c, 0, sizeof(*c));
}

static int close_candidates(void **state)
{
	struct env *e = *state;

	if (e)
		for (size_t i = 0; i < sizeof(e->candidates) / sizeof(e->candidates[0]); i++)
			candidate_close(&e->candidates[i]);
	return 0;
}

/* Waits up to timeout_ms for the candidate to lead (or, with want 0, to
 * stop leading); returns whether it happened. */
static int wait_leader(struct candidate *c, int want, long timeout_ms)
{
	for (long waited = 0; waited <= timeout_ms; waited += 10) {
		if (kube_lease_is_leader(c->lease) == want)
			return 1;
		nap_ms(10);
	}
	return 0;
}

/* ---- the Lease as the server has it ---- */

struct server_lease {
	char holder[64];
	long duration_s;
	long transitions;
};

static void read_lease(struct env *e, const char *name, struct server_lease *out)
{
	char path[256], *cause = NULL;
	const cJSON *spec, *v;
	cJSON *lease = NULL;

	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", e->ns, name);
	check(kube_get(e->client, path, &lease, &cause), cause, "get lease");
	spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
	memset(out, 0, sizeof(*out));
	v = cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity");
	if (cJSON_IsString(v))
		snprintf(out->holder, sizeof(out->holder), "%s", v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
	out->duration_s = cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
	v = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
	out->transitions = cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
	cJSON_Delete(lease);
}

static const char *holder_of(struct kube_lease *lease)
{
	static char buf[64];

	return kube_lease_holder(lease, buf, sizeof(buf));
}

/* ---- tests ---- */

/* One acquire-or-renew step that must succeed; returns when it began. */
static uint64_t try_by_hand(struct candidate *c)
{
	uint64_t began = mono_ns();
	char *cause = NULL;
	int r = kube_lease_try(c->lease, &cause);

	if (r != 1)
		fail_msg("%s: kube_lease_try gave %d: %s", c->identity, r, cause ? cause : "");
	free(cause);
	return began;
}

static void one_leader_and_a_release_hands_over_at_once(void **state)
{
	struct env *e = *state;
	struct candidate *a, *b, *leader, *standby;
	struct server_lease seen;
	uint64_t released, taken;

	SKIP_WITHOUT_CLUSTER(e);
	a = &e->candidates[0];
	b = &e->candidates[1];
	candidate_open(e, a, "handover", "candidate-a");
	candidate_open(e, b, "handover", "candidate-b");
	candidate_start(a);
	candidate_start(b);
	for (int waited = 0; !kube_lease_is_leader(a->lease) && !kube_lease_is_leader(b->lease); waited++) {
		if (waited > 1000)
			fail_msg("nobody acquired the lease within 10 s");
		nap_ms(10);
	}
	/* Exactly one leads, sampled over 1.5 s: five renewals. */
	for (int i = 0; i < 75; i++) {
		if (kube_lease_is_leader(a->lease) + kube_lease_is_leader(b->lease) != 1)
			fail_msg("%d leaders at sample %d",
				 kube_lease_is_leader(a->lease) + kube_lease_is_leader(b->lease), i);
		nap_ms(20);
	}
	leader = kube_lease_is_leader(a->lease) ? a : b;
	standby = leader == a ? b : a;
	read_lease(e, "handover", &seen);
	assert_string_equal(seen.holder, leader->identity);
	assert_int_equal(seen.duration_s, LEASE_DURATION_S);
	assert_int_equal(seen.transitions, 0);
	assert_string_equal(holder_of(standby->lease), leader->identity);

	/* The leader stops cleanly: it releases, the standby takes over at its
	 * next retry instead of after a lease duration. */
	candidate_stop(leader);
	assert_int_equal(leader->result, MUSTER_OK);
	assert_false(kube_lease_is_leader(leader->lease));
	released = atomic_load(&leader->done_ns);
	assert_true(wait_leader(standby, 1, 5000));
	taken = atomic_load(&standby->acquired_ns);
	assert_true(taken != 0);
	print_message("release to takeover: %.0f ms (retry period %u ms)\n", (double)(taken - released) / MS,
		      RETRY_PERIOD_MS);
	assert_true(taken - released <= (RETRY_PERIOD_MS + REQUEST_SLACK_MS) * MS);
	read_lease(e, "handover", &seen);
	assert_string_equal(seen.holder, standby->identity);
	assert_int_equal(seen.duration_s, LEASE_DURATION_S);
	assert_int_equal(seen.transitions, 1);

	candidate_stop(standby);
	assert_int_equal(standby->result, MUSTER_OK);
	read_lease(e, "handover", &seen);
	assert_string_equal(seen.holder, "");
	assert_int_equal(seen.duration_s, 1);
	assert_int_equal(seen.transitions, 1);
}

static void a_dead_leader_is_replaced_after_the_lease_duration(void **state)
{
	struct env *e = *state;
	struct candidate *a, *b;
	struct server_lease seen;
	uint64_t last_renewal = 0, taken, begin;
	char *cause = NULL;

	SKIP_WITHOUT_CLUSTER(e);
	a = &e->candidates[0];
	b = &e->candidates[1];
	candidate_open(e, a, "failover", "candidate-a");
	candidate_open(e, b, "failover", "candidate-b");
	/* a acquires and renews by hand every retry period for 3 s, longer
	 * than a lease duration: b must wait all along. */
	try_by_hand(a);
	candidate_start(b);
	begin = mono_ns();
	while (mono_ns() - begin < 3000 * MS) {
		nap_ms(RETRY_PERIOD_MS);
		last_renewal = try_by_hand(a);
		assert_false(kube_lease_is_leader(b->lease));
	}
	assert_string_equal(holder_of(b->lease), "candidate-a");
	/* a dies: no more renewals, no release. */
	assert_true(wait_leader(b, 1, 5000));
	taken = atomic_load(&b->acquired_ns);
	print_message("last renewal to takeover: %.0f ms (lease %u s, retry %u ms)\n",
		      (double)(taken - last_renewal) / MS, LEASE_DURATION_S, RETRY_PERIOD_MS);
	/* Never before a whole lease duration after a's last renewal, and at
	 * most two retry periods (seeing the renewal, then the expiry) after. */
	assert_true(taken - last_renewal >= LEASE_DURATION_S * 1000 * MS);
	assert_true(taken - last_renewal <=
		    (LEASE_DURATION_S * 1000 + 2 * RETRY_PERIOD_MS + REQUEST_SLACK_MS) * MS);
	/* a stopped calling itself leader at its renew deadline, before. */
	assert_false(kube_lease_is_leader(a->lease));
	read_lease(e, "failover", &seen);
	assert_string_equal(seen.holder, "candidate-b");
	assert_int_equal(seen.transitions, 1);
	/* Back to life, a finds the lease held. */
	cause = NULL;
	assert_int_equal(kube_lease_try(a->lease, &cause), 0);
	assert_null(cause);
	assert_string_equal(holder_of(a->lease), "candidate-b");
}

static int overwrite_holder(void *arg, cJSON *lease)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");

	(void)arg;
	cJSON_ReplaceItemInObject(spec, "holderIdentity", cJSON_CreateString("intruder"));
	return 0;
}

static void a_leader_whose_lease_is_taken_stops_leading(void **state)
{
	struct env *e = *state;
	struct candidate *a;
	char path[256], *cause = NULL;
	uint64_t overwritten, lost;

	SKIP_WITHOUT_CLUSTER(e);
	a = &e->candidates[0];
	candidate_open(e, a, "overwritten", "candidate-a");
	candidate_start(a);
	assert_true(wait_leader(a, 1, 5000));
	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/overwritten", e->ns);
	overwritten = mono_ns();
	check(kube_update_retry(e->client, path, 5, overwrite_holder, NULL, NULL, &cause), cause,
	      "overwrite the holder");
	for (int waited = 0; !atomic_load(&a->done_ns); waited++) {
		if (waited > 500)
			fail_msg("the leader did not notice within 5 s");
		nap_ms(10);
	}
	lost = atomic_load(&a->done_ns);
	print_message("overwrite to lost: %.0f ms\n", (double)(lost - overwritten) / MS);
	assert_true(lost - overwritten <= (RETRY_PERIOD_MS + REQUEST_SLACK_MS) * MS);
	assert_int_equal(a->result, MUSTER_ELOST);
	assert_non_null(strstr(a->cause, "intruder"));
	assert_false(kube_lease_is_leader(a->lease));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(one_leader_and_a_release_hands_over_at_once, close_candidates),
		cmocka_unit_test_teardown(a_dead_leader_is_replaced_after_the_lease_duration,
					  close_candidates),
		cmocka_unit_test_teardown(a_leader_whose_lease_is_taken_stops_leading, close_candidates),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
