/*
 * Unit tests of metrics: the exact text of counters, gauges and histograms
 * (HELP, TYPE, label escaping, cumulative buckets and +Inf), registration
 * refusals, exact sums under concurrent updates from four threads, collector
 * output and its refusals, and the render size limit.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct metrics_registry *registry_new(size_t render_max)
{
	struct metrics_registry *registry = NULL;

	assert_int_equal(metrics_registry_new(render_max, &registry), 0);
	assert_non_null(registry);
	return registry;
}

/* Renders and compares the whole text. */
static void assert_render(struct metrics_registry *registry, const char *expected)
{
	char *text = NULL, *cause = NULL;
	size_t len = 0;

	assert_int_equal(metrics_render(registry, &text, &len, &cause), 0);
	assert_null(cause);
	assert_non_null(text);
	assert_string_equal(text, expected);
	assert_int_equal(len, strlen(expected));
	free(text);
}

/* Renders, expecting failure `err` with a cause containing `fragment`. */
static void assert_render_fails(struct metrics_registry *registry, int err, const char *fragment)
{
	char *text = (char *)"sentinel", *cause = NULL;
	size_t len = 1;

	assert_int_equal(metrics_render(registry, &text, &len, &cause), err);
	assert_null(text);
	assert_int_equal(len, 0);
	assert_non_null(cause);
	if (!strstr(cause, fragment))
		fail_msg("cause \"%s\" lacks \"%s\"", cause, fragment);
	free(cause);
}

static void empty_registry(void **state)
{
	struct metrics_registry *registry = registry_new(0);

	(void)state;
	assert_render(registry, "");
	metrics_registry_free(registry);
	metrics_registry_free(NULL);
}

static void counters(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	struct metrics_counter *releases = NULL, *conflicts = NULL, *server = NULL, *plain = NULL;
	const struct metrics_label code_409[] = { { "code", "409" } };
	const struct metrics_label code_500[] = { { "code", "500" } };
	char *cause = NULL;

	(void)state;
	assert_int_equal(metrics_counter_register(registry, "muster_releases_total", "Releases written.",
						  NULL, 0, &releases, &cause),
			 0);
	assert_int_equal(metrics_counter_register(registry, "muster_api_errors_total",
						  "API errors by HTTP status.", code_409, 1, &conflicts,
						  &cause),
			 0);
	assert_int_equal(metrics_counter_register(registry, "muster_api_errors_total",
						  "API errors by HTTP status.", code_500, 1, &server, &cause),
			 0);
	assert_int_equal(metrics_counter_register(registry, "muster:plain", NULL, NULL, 0, &plain, &cause),
			 0);
	assert_null(cause);
	metrics_counter_inc(releases);
	metrics_counter_inc(releases);
	metrics_counter_inc(releases);
	metrics_counter_add(releases, 5);
	metrics_counter_add(conflicts, 2);
	metrics_counter_inc(server);
	metrics_counter_add(plain, UINT64_MAX);
	assert_int_equal(metrics_counter_value(releases), 8);
	assert_render(registry, "# HELP muster_releases_total Releases written.\n"
				"# TYPE muster_releases_total counter\n"
				"muster_releases_total 8\n"
				"# HELP muster_api_errors_total API errors by HTTP status.\n"
				"# TYPE muster_api_errors_total counter\n"
				"muster_api_errors_total{code=\"409\"} 2\n"
				"muster_api_errors_total{code=\"500\"} 1\n"
				"# TYPE muster:plain counter\n"
				"muster:plain 18446744073709551615\n");
	metrics_registry_free(registry);
}

static void gauges(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	static const struct {
		const char *name;
		double value;
		const char *text;
	} cases[] = {
		{ "integer", 3, "3" },
		{ "tenth", 0.1, "0.1" },
		{ "negative", -2.5, "-2.5" },
		{ "large", 1e21, "1e+21" },
		{ "millions", 1234567, "1234567" },
		{ "precise", 0.30000000000000004, "0.30000000000000004" },
		{ "nan", NAN, "NaN" },
		{ "inf", INFINITY, "+Inf" },
		{ "minus_inf", -INFINITY, "-Inf" },
	};
	char expected[2048];
	size_t used;
	struct metrics_gauge *sorted = NULL;
	const struct metrics_label unsorted[] = { { "verb", "watch" }, { "resource", "pods" } };

	(void)state;
	used = (size_t)snprintf(expected, sizeof(expected),
				"# HELP muster_value A value.\n# TYPE muster_value gauge\n");
	for (size_t i = 0; i < N(cases); i++) {
		struct metrics_gauge *gauge = NULL;
		const struct metrics_label label = { "case", cases[i].name };

		assert_int_equal(
			metrics_gauge_register(registry, "muster_value", "A value.", &label, 1, &gauge, NULL),
			0);
		metrics_gauge_set(gauge, cases[i].value);
		used += (size_t)snprintf(expected + used, sizeof(expected) - used,
					 "muster_value{case=\"%s\"} %s\n", cases[i].name, cases[i].text);
	}
	/* Labels come out sorted by name; add() accumulates. */
	assert_int_equal(metrics_gauge_register(registry, "muster_requests_in_flight", "In flight.", unsorted,
						2, &sorted, NULL),
			 0);
	metrics_gauge_set(sorted, 0.1);
	metrics_gauge_add(sorted, 0.2);
	metrics_gauge_add(sorted, -1);
	assert_true(metrics_gauge_value(sorted) == 0.1 + 0.2 - 1);
	snprintf(expected + used, sizeof(expected) - used,
		 "# HELP muster_requests_in_flight In flight.\n"
		 "# TYPE muster_requests_in_flight gauge\n"
		 "muster_requests_in_flight{resource=\"pods\",verb=\"watch\"} -0.7\n");
	assert_render(registry, expected);
	metrics_registry_free(registry);
}

static void histograms(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	static const double bounds[] = { 0.25, 0.5, 1, 60 };
	static const double seconds[] = { METRICS_SECONDS_BUCKETS };
	const struct metrics_label jobset[] = { { "jobset", "a" } };
	struct metrics_histogram *latency = NULL, *labelled = NULL;
	char *cause = NULL;

	(void)state;
	assert_int_equal(metrics_histogram_register(registry, "muster_release_latency_seconds",
						    "Time from the first pod start to the release.", NULL, 0,
						    bounds, N(bounds), &latency, &cause),
			 0);
	assert_int_equal(metrics_histogram_register(registry, "muster_push_seconds", "Push time.", jobset, 1,
						    seconds, N(seconds), &labelled, &cause),
			 0);
	assert_null(cause);
	/* A value equal to a bound belongs to that bound's bucket. */
	metrics_histogram_observe(latency, 0.125);
	metrics_histogram_observe(latency, 0.25);
	metrics_histogram_observe(latency, 0.75);
	metrics_histogram_observe(latency, 100);
	metrics_histogram_observe(latency, 0.5);
	metrics_histogram_observe(labelled, 0.004);
	metrics_histogram_observe(labelled, 61);
	assert_render(registry, "# HELP muster_release_latency_seconds Time from the first pod start to the "
				"release.\n"
				"# TYPE muster_release_latency_seconds histogram\n"
				"muster_release_latency_seconds_bucket{le=\"0.25\"} 2\n"
				"muster_release_latency_seconds_bucket{le=\"0.5\"} 3\n"
				"muster_release_latency_seconds_bucket{le=\"1\"} 4\n"
				"muster_release_latency_seconds_bucket{le=\"60\"} 4\n"
				"muster_release_latency_seconds_bucket{le=\"+Inf\"} 5\n"
				"muster_release_latency_seconds_sum 101.625\n"
				"muster_release_latency_seconds_count 5\n"
				"# HELP muster_push_seconds Push time.\n"
				"# TYPE muster_push_seconds histogram\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.005\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.01\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.025\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.05\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.1\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.25\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"0.5\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"1\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"2.5\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"5\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"10\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"30\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"60\"} 1\n"
				"muster_push_seconds_bucket{jobset=\"a\",le=\"+Inf\"} 2\n"
				"muster_push_seconds_sum{jobset=\"a\"} 61.004\n"
				"muster_push_seconds_count{jobset=\"a\"} 2\n");
	metrics_registry_free(registry);
}

static void histogram_nan_goes_to_inf(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	static const double bounds[] = { 1 };
	struct metrics_histogram *histogram = NULL;

	(void)state;
	assert_int_equal(
		metrics_histogram_register(registry, "h", NULL, NULL, 0, bounds, 1, &histogram, NULL), 0);
	metrics_histogram_observe(histogram, NAN);
	metrics_histogram_observe(histogram, -5);
	assert_render(registry, "# TYPE h histogram\n"
				"h_bucket{le=\"1\"} 1\n"
				"h_bucket{le=\"+Inf\"} 2\n"
				"h_sum NaN\n"
				"h_count 2\n");
	metrics_registry_free(registry);
}

static void escaping(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	const struct metrics_label labels[] = {
		{ "a_escapes", "back\\slash \"quoted\"\nnext" },
		{ "b_utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" }, /* é € 😀 kept */
		{ "c_invalid", "x\xff\xc3(\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80y\xe2\x82" },
		{ "d_empty", "" },
	};
	struct metrics_gauge *gauge = NULL;

	(void)state;
	assert_int_equal(metrics_gauge_register(registry, "muster_escaped",
						"Help with \\ and \"quotes\"\nline 2", labels, N(labels),
						&gauge, NULL),
			 0);
	metrics_gauge_set(gauge, 1);
	/* Each byte that starts no valid sequence becomes U+FFFD (EF BF BD): the
	 * stray FF, C3 before '(', overlong C0 AF, surrogate ED A0 80,
	 * F4 90.. above U+10FFFF, and the cut E2 82 at the end. */
	assert_render(
		registry,
		"# HELP muster_escaped Help with \\\\ and \"quotes\"\\nline 2\n"
		"# TYPE muster_escaped gauge\n"
		"muster_escaped{a_escapes=\"back\\\\slash \\\"quoted\\\"\\nnext\","
		"b_utf8=\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
		"c_invalid=\"x\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd\","
		"d_empty=\"\"} 1\n");
	metrics_registry_free(registry);
}

/* Expects a registration to fail with err and a cause containing fragment. */
static void assert_refused(int got, int err, char **cause, const char *fragment)
{
	assert_int_equal(got, err);
	assert_non_null(*cause);
	if (!strstr(*cause, fragment))
		fail_msg("cause \"%s\" lacks \"%s\"", *cause, fragment);
	free(*cause);
	*cause = NULL;
}

static void registration_refusals(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	struct metrics_counter *counter = NULL;
	struct metrics_gauge *gauge = NULL;
	struct metrics_histogram *histogram = NULL;
	static const double bounds[] = { 1, 2 };
	static const double unordered[] = { 1, 1 };
	static const double infinite[] = { 1, INFINITY };
	double many[METRICS_BUCKETS_MAX + 1];
	char long_name[METRICS_NAME_MAX + 2];
	const struct metrics_label code[] = { { "code", "409" } };
	const struct metrics_label bad_name[] = { { "a-b", "x" } };
	const struct metrics_label reserved[] = { { "__name__", "x" } };
	const struct metrics_label twice[] = { { "a", "x" }, { "a", "y" } };
	const struct metrics_label no_value[] = { { "a", NULL } };
	const struct metrics_label le[] = { { "le", "1" } };
	struct metrics_label too_many[METRICS_LABELS_MAX + 1];
	const char *names[] = { "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8" };
	char *cause = NULL;

	(void)state;
	for (size_t i = 0; i < N(many); i++)
		many[i] = (double)i;
	for (size_t i = 0; i < N(too_many); i++)
		too_many[i] = (struct metrics_label){ names[i], "v" };
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';

	/* A refusal sets *out to NULL. */
	assert_int_equal(metrics_counter_register(registry, "first", NULL, NULL, 0, &counter, &cause), 0);
	assert_non_null(counter);
	assert_refused(metrics_counter_register(registry, "1abc", NULL, NULL, 0, &counter, &cause),
		       MUSTER_EINVAL, &cause, "metric name");
	assert_null(counter);
	assert_refused(metrics_counter_register(registry, "", NULL, NULL, 0, &counter, &cause), MUSTER_EINVAL,
		       &cause, "metric name");
	assert_refused(metrics_counter_register(registry, NULL, NULL, NULL, 0, &counter, &cause),
		       MUSTER_EINVAL, &cause, "metric name");
	assert_refused(metrics_counter_register(registry, "a-b", NULL, NULL, 0, &counter, &cause),
		       MUSTER_EINVAL, &cause, "metric name");
	assert_refused(metrics_counter_register(registry, long_name, NULL, NULL, 0, &counter, &cause),
		       MUSTER_EINVAL, &cause, "metric name");
	long_name[METRICS_NAME_MAX] = '\0';
	assert_int_equal(metrics_counter_register(registry, long_name, NULL, NULL, 0, &counter, &cause), 0);
	assert_refused(metrics_counter_register(registry, "c", NULL, bad_name, 1, &counter, &cause),
		       MUSTER_EINVAL, &cause, "label 1's name");
	assert_refused(metrics_counter_register(registry, "c", NULL, reserved, 1, &counter, &cause),
		       MUSTER_EINVAL, &cause, "no leading __");
	assert_refused(metrics_counter_register(registry, "c", NULL, twice, 2, &counter, &cause),
		       MUSTER_EINVAL, &cause, "label a appears twice");
	assert_refused(metrics_counter_register(registry, "c", NULL, no_value, 1, &counter, &cause),
		       MUSTER_EINVAL, &cause, "label a has no value");
	assert_refused(metrics_counter_register(registry, "c", NULL, too_many, N(too_many), &counter, &cause),
		       MUSTER_EINVAL, &cause, "more than 8 labels");
	assert_refused(metrics_counter_register(registry, "c", NULL, NULL, 1, &counter, &cause),
		       MUSTER_EINVAL, &cause, "labels missing");
	/* le is an ordinary label outside histograms. */
	assert_int_equal(metrics_counter_register(registry, "c_le", NULL, le, 1, &counter, &cause), 0);
	assert_int_equal(metrics_counter_register(registry, "c", "Help.", too_many, METRICS_LABELS_MAX,
						  &counter, &cause),
			 0);

	assert_int_equal(metrics_counter_register(registry, "dup", "Help.", code, 1, &counter, &cause), 0);
	assert_refused(metrics_counter_register(registry, "dup", "Help.", code, 1, &counter, &cause),
		       MUSTER_ECONFLICT, &cause, "dup{code=\"409\"} is registered already");
	assert_null(counter);
	assert_refused(metrics_gauge_register(registry, "dup", "Help.", NULL, 0, &gauge, &cause),
		       MUSTER_EINVAL, &cause, "dup is registered as a counter");
	assert_refused(metrics_counter_register(registry, "dup", "Other help.", NULL, 0, &counter, &cause),
		       MUSTER_EINVAL, &cause, "another help text");
	assert_refused(metrics_counter_register(registry, "dup", NULL, NULL, 0, &counter, &cause),
		       MUSTER_EINVAL, &cause, "another help text");

	assert_refused(metrics_histogram_register(registry, "h", NULL, le, 1, bounds, 2, &histogram, &cause),
		       MUSTER_EINVAL, &cause, "le is reserved");
	assert_refused(
		metrics_histogram_register(registry, "h", NULL, NULL, 0, unordered, 2, &histogram, &cause),
		MUSTER_EINVAL, &cause, "not increasing at bound 2");
	assert_refused(
		metrics_histogram_register(registry, "h", NULL, NULL, 0, infinite, 2, &histogram, &cause),
		MUSTER_EINVAL, &cause, "bound 2 is not finite");
	assert_refused(
		metrics_histogram_register(registry, "h", NULL, NULL, 0, many, N(many), &histogram, &cause),
		MUSTER_EINVAL, &cause, "1 to 32 bucket bounds");
	assert_refused(metrics_histogram_register(registry, "h", NULL, NULL, 0, NULL, 0, &histogram, &cause),
		       MUSTER_EINVAL, &cause, "1 to 32 bucket bounds");
	assert_null(histogram);
	assert_int_equal(metrics_histogram_register(registry, "h", NULL, NULL, 0, many, METRICS_BUCKETS_MAX,
						    &histogram, NULL),
			 0);

	/* A NULL cause is allowed; NULL handles are ignored. */
	assert_int_equal(metrics_counter_register(registry, "1", NULL, NULL, 0, &counter, NULL),
			 MUSTER_EINVAL);
	metrics_counter_inc(NULL);
	metrics_counter_add(NULL, 3);
	metrics_gauge_set(NULL, 1);
	metrics_gauge_add(NULL, 1);
	metrics_histogram_observe(NULL, 1);
	assert_int_equal(metrics_counter_value(NULL), 0);
	assert_true(metrics_gauge_value(NULL) == 0.0);
	metrics_registry_free(registry);
}

static void registry_limits(void **state)
{
	struct metrics_registry *registry = registry_new(METRICS_RENDER_MAX_LIMIT), *refused = NULL;

	(void)state;
	metrics_registry_free(registry);
	/* refused still holds a stale pointer: a refusal must set it to NULL. */
	refused = registry_new(1);
	metrics_registry_free(refused);
	assert_int_equal(metrics_registry_new(METRICS_RENDER_MAX_LIMIT + 1u, &refused), MUSTER_EINVAL);
	assert_null(refused);
}

#define THREADS 4
#define ROUNDS 200000

struct shared {
	struct metrics_counter *counter;
	struct metrics_gauge *gauge;
	struct metrics_histogram *histogram;
	struct metrics_registry *registry;
	atomic_int done;
};

static void *increment(void *arg)
{
	struct shared *shared = arg;
	static const double values[] = { 0.25, 0.75, 100 };

	for (int i = 0; i < ROUNDS; i++) {
		metrics_counter_inc(shared->counter);
		metrics_gauge_add(shared->gauge, 1.0);
		metrics_histogram_observe(shared->histogram, values[i % 3]);
	}
	return NULL;
}

static void *render_while_updating(void *arg)
{
	struct shared *shared = arg;

	while (!atomic_load(&shared->done)) {
		char *text = NULL;
		size_t len;

		if (metrics_render(shared->registry, &text, &len, NULL) != 0 || !strstr(text, "h_count"))
			abort();
		free(text);
	}
	return NULL;
}

static void concurrent_updates_sum_exactly(void **state)
{
	struct shared shared = { .registry = registry_new(0) };
	static const double bounds[] = { 0.5, 1 };
	pthread_t threads[THREADS], renderer;
	char *text = NULL, expected[1024];
	size_t len;
	/* Per thread: ROUNDS / 3 + 1 of 0.25 (i % 3 == 0, ROUNDS not a multiple
	 * of 3), ROUNDS / 3 + 1 of 0.75, ROUNDS / 3 of 100. */
	const uint64_t quarter = ROUNDS / 3 + 1, three_quarters = ROUNDS / 3 + 1, hundred = ROUNDS / 3;
	const double sum =
		THREADS * (0.25 * (double)quarter + 0.75 * (double)three_quarters + 100.0 * (double)hundred);

	(void)state;
	assert_true(ROUNDS % 3 == 2);
	assert_int_equal(metrics_counter_register(shared.registry, "c", NULL, NULL, 0, &shared.counter, NULL),
			 0);
	assert_int_equal(metrics_gauge_register(shared.registry, "g", NULL, NULL, 0, &shared.gauge, NULL), 0);
	assert_int_equal(metrics_histogram_register(shared.registry, "h", NULL, NULL, 0, bounds, 2,
						    &shared.histogram, NULL),
			 0);
	assert_int_equal(pthread_create(&renderer, NULL, render_while_updating, &shared), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, increment, &shared), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(threads[i], NULL), 0);
	atomic_store(&shared.done, 1);
	assert_int_equal(pthread_join(renderer, NULL), 0);

	assert_int_equal(metrics_counter_value(shared.counter), (uint64_t)THREADS * ROUNDS);
	assert_true(metrics_gauge_value(shared.gauge) == (double)THREADS * ROUNDS);
	assert_int_equal(metrics_render(shared.registry, &text, &len, NULL), 0);
	snprintf(expected, sizeof(expected),
		 "# TYPE c counter\nc %d\n"
		 "# TYPE g gauge\ng %d\n"
		 "# TYPE h histogram\n"
		 "h_bucket{le=\"0.5\"} %llu\n"
		 "h_bucket{le=\"1\"} %llu\n"
		 "h_bucket{le=\"+Inf\"} %d\n"
		 "h_sum %.17g\n"
		 "h_count %d\n",
		 THREADS * ROUNDS, THREADS * ROUNDS, (unsigned long long)(THREADS * quarter),
		 (unsigned long long)(THREADS * (quarter + three_quarters)), THREADS * ROUNDS, sum,
		 THREADS * ROUNDS);
	assert_string_equal(text, expected);
	free(text);
	metrics_registry_free(shared.registry);
}

/* ---- collectors ---- */

struct jobset {
	const char *namespace;
	const char *name;
	int started;
	int expected;
};

static const struct jobset jobsets[] = {
	{ "a", "b", 3, 4 },
	{ "team-2", "quote\"d", 0, 2 },
};

/* Emits two gauges per JobSet in one pass (interleaving the families) and a
 * counter family without help. */
static int collect_jobsets(void *arg, struct metrics_writer *writer)
{
	const struct jobset *list = arg;

	for (size_t i = 0; i < N(jobsets); i++) {
		const struct metrics_label labels[] = {
			{ "namespace", list[i].namespace },
			{ "jobset", list[i].name },
		};

		if (metrics_write_gauge(writer, "muster_group_pods_started", "Pods of the JobSet started.",
					labels, 2, list[i].started) ||
		    metrics_write_gauge(writer, "muster_group_pods_expected", "Pods the JobSet expects.",
					labels, 2, list[i].expected))
			return -1;
	}
	return metrics_write_counter(writer, "muster_group_collections_total", NULL, NULL, 0, 7);
}

static int collect_second(void *arg, struct metrics_writer *writer)
{
	const struct metrics_label labels[] = { { "namespace", "z" }, { "jobset", "y" } };

	(void)arg;
	/* Joins the first collector's family. */
	return metrics_write_gauge(writer, "muster_group_pods_started", "ignored: the first help wins",
				   labels, 2, 1.5);
}

static void collector_output(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	struct metrics_counter *counter = NULL;

	(void)state;
	assert_int_equal(metrics_counter_register(registry, "muster_releases_total", "Releases.", NULL, 0,
						  &counter, NULL),
			 0);
	assert_int_equal(metrics_collector_register(registry, collect_jobsets, (void *)jobsets, NULL), 0);
	assert_int_equal(metrics_collector_register(registry, collect_second, NULL, NULL), 0);
	metrics_counter_inc(counter);
	assert_render(registry, "# HELP muster_releases_total Releases.\n"
				"# TYPE muster_releases_total counter\n"
				"muster_releases_total 1\n"
				"# HELP muster_group_pods_started Pods of the JobSet started.\n"
				"# TYPE muster_group_pods_started gauge\n"
				"muster_group_pods_started{namespace=\"a\",jobset=\"b\"} 3\n"
				"muster_group_pods_started{namespace=\"team-2\",jobset=\"quote\\\"d\"} 0\n"
				"muster_group_pods_started{namespace=\"z\",jobset=\"y\"} 1.5\n"
				"# HELP muster_group_pods_expected Pods the JobSet expects.\n"
				"# TYPE muster_group_pods_expected gauge\n"
				"muster_group_pods_expected{namespace=\"a\",jobset=\"b\"} 4\n"
				"muster_group_pods_expected{namespace=\"team-2\",jobset=\"quote\\\"d\"} 2\n"
				"# TYPE muster_group_collections_total counter\n"
				"muster_group_collections_total 7\n");
	/* Each render starts afresh. */
	metrics_counter_inc(counter);
	assert_render(registry, "# HELP muster_releases_total Releases.\n"
				"# TYPE muster_releases_total counter\n"
				"muster_releases_total 2\n"
				"# HELP muster_group_pods_started Pods of the JobSet started.\n"
				"# TYPE muster_group_pods_started gauge\n"
				"muster_group_pods_started{namespace=\"a\",jobset=\"b\"} 3\n"
				"muster_group_pods_started{namespace=\"team-2\",jobset=\"quote\\\"d\"} 0\n"
				"muster_group_pods_started{namespace=\"z\",jobset=\"y\"} 1.5\n"
				"# HELP muster_group_pods_expected Pods the JobSet expects.\n"
				"# TYPE muster_group_pods_expected gauge\n"
				"muster_group_pods_expected{namespace=\"a\",jobset=\"b\"} 4\n"
				"muster_group_pods_expected{namespace=\"team-2\",jobset=\"quote\\\"d\"} 2\n"
				"# TYPE muster_group_collections_total counter\n"
				"muster_group_collections_total 7\n");
	metrics_registry_free(registry);
}

/* A collector that makes one bad write (chosen by *arg), checks that the
 * failure sticks, and returns what the writes returned. */
enum bad_write { WRITE_REGISTERED, WRITE_TYPE_CHANGE, WRITE_BAD_NAME, WRITE_NULL_NAME, WRITE_BAD_LABEL };

static int collect_bad(void *arg, struct metrics_writer *writer)
{
	const struct metrics_label bad_label[] = { { "a-b", "x" } };
	int err = 0;

	switch (*(enum bad_write *)arg) {
	case WRITE_REGISTERED:
		err = metrics_write_gauge(writer, "taken", NULL, NULL, 0, 1);
		break;
	case WRITE_TYPE_CHANGE:
		if (metrics_write_gauge(writer, "g", NULL, NULL, 0, 1) != 0)
			abort();
		err = metrics_write_counter(writer, "g", NULL, NULL, 0, 1);
		break;
	case WRITE_BAD_NAME:
		err = metrics_write_gauge(writer, "9lives", NULL, NULL, 0, 1);
		break;
	case WRITE_NULL_NAME:
		err = metrics_write_gauge(writer, NULL, NULL, NULL, 0, 1);
		break;
	case WRITE_BAD_LABEL:
		err = metrics_write_gauge(writer, "g", NULL, bad_label, 1, 1);
		break;
	}
	/* Later writes, even good ones, return the first failure. */
	if (metrics_write_gauge(writer, "fine", NULL, NULL, 0, 1) != err)
		abort();
	return err;
}

static void collector_refusals(void **state)
{
	static const struct {
		enum bad_write kind;
		const char *fragment;
	} cases[] = {
		{ WRITE_REGISTERED, "taken has the name of a registered family" },
		{ WRITE_TYPE_CHANGE, "g is written as a gauge and as a counter" },
		{ WRITE_BAD_NAME, "collected metric name is not" },
		{ WRITE_NULL_NAME, "collected metric has no name" },
		{ WRITE_BAD_LABEL, "g: label 1's name" },
	};

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		struct metrics_registry *registry = registry_new(0);
		struct metrics_gauge *gauge = NULL;
		enum bad_write kind = cases[i].kind;

		assert_int_equal(metrics_gauge_register(registry, "taken", NULL, NULL, 0, &gauge, NULL), 0);
		assert_int_equal(metrics_collector_register(registry, collect_bad, &kind, NULL), 0);
		assert_render_fails(registry, MUSTER_EINVAL, cases[i].fragment);
		metrics_registry_free(registry);
	}
}

static int collect_failing(void *arg, struct metrics_writer *writer)
{
	(void)writer;
	return *(int *)arg;
}

static int collect_families(void *arg, struct metrics_writer *writer)
{
	char name[32];

	for (int i = 0; i < *(int *)arg; i++) {
		snprintf(name, sizeof(name), "family_%d", i);
		if (metrics_write_gauge(writer, name, NULL, NULL, 0, i) != 0)
			return -1;
	}
	return 0;
}

static void collector_failures(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	int result = -EAGAIN, families = METRICS_WRITER_FAMILIES_MAX;
	char *cause = NULL;

	(void)state;
	assert_int_equal(metrics_collector_register(registry, collect_families, &families, NULL), 0);
	assert_int_equal(metrics_collector_register(registry, collect_failing, &result, NULL), 0);
	assert_render_fails(registry, -EAGAIN, "metrics collector 2 failed (error -11)");
	result = 1; /* a positive failure counts as MUSTER_EIO */
	assert_render_fails(registry, MUSTER_EIO, "metrics collector 2 failed (error 1)");
	result = 0;
	families = METRICS_WRITER_FAMILIES_MAX + 1;
	assert_render_fails(registry, MUSTER_EINVAL, "more than 64 families");
	families = 0;
	assert_render(registry, "");

	for (unsigned i = 2; i < METRICS_COLLECTORS_MAX; i++)
		assert_int_equal(metrics_collector_register(registry, collect_failing, &result, NULL), 0);
	assert_refused(metrics_collector_register(registry, collect_failing, &result, &cause), MUSTER_ETOOBIG,
		       &cause, "more than 8 metrics collectors");
	assert_refused(metrics_collector_register(registry, NULL, NULL, &cause), MUSTER_EINVAL, &cause,
		       "no collector");
	assert_int_equal(metrics_write_gauge(NULL, "g", NULL, NULL, 0, 1), MUSTER_EINVAL);
	metrics_registry_free(registry);
}

/* ---- size limit ---- */

static void render_limit_registered(void **state)
{
	struct metrics_registry *registry = registry_new(0), *limited;
	struct metrics_counter *counter = NULL;
	char *text = NULL, fragment[80];
	size_t len = 0;

	(void)state;
	assert_int_equal(
		metrics_counter_register(registry, "muster_x_total", "Help.", NULL, 0, &counter, NULL), 0);
	assert_int_equal(metrics_render(registry, &text, &len, NULL), 0);
	metrics_registry_free(registry);

	/* The exact size fits; a byte less does not. */
	limited = registry_new(len);
	assert_int_equal(
		metrics_counter_register(limited, "muster_x_total", "Help.", NULL, 0, &counter, NULL), 0);
	assert_render(limited, text);
	metrics_registry_free(limited);
	limited = registry_new(len - 1);
	assert_int_equal(
		metrics_counter_register(limited, "muster_x_total", "Help.", NULL, 0, &counter, NULL), 0);
	snprintf(fragment, sizeof(fragment), "metrics output exceeds the limit of %zu bytes", len - 1);
	assert_render_fails(limited, MUSTER_ETOOBIG, fragment);
	metrics_registry_free(limited);
	free(text);
}

static int collect_until_full(void *arg, struct metrics_writer *writer)
{
	const char *value = arg;
	const struct metrics_label labels[] = { { "payload", value } };
	int err;

	/* Writes until the writer refuses; returns its error. */
	for (int i = 0;; i++) {
		err = metrics_write_gauge(writer, "muster_big", NULL, labels, 1, i);
		if (err)
			return err;
	}
}

static void render_limit_collected(void **state)
{
	struct metrics_registry *registry = registry_new(1000);
	struct metrics_gauge *gauge = NULL;

	(void)state;
	assert_int_equal(metrics_gauge_register(registry, "muster_small", NULL, NULL, 0, &gauge, NULL), 0);
	assert_int_equal(metrics_collector_register(registry, collect_until_full, (void *)"0123456789", NULL),
			 0);
	assert_render_fails(registry, MUSTER_ETOOBIG, "metrics output exceeds the limit of 1000 bytes");
	metrics_registry_free(registry);
}

static void render_limit_default(void **state)
{
	struct metrics_registry *registry = registry_new(0);
	const size_t value_size = 1024u * 1024u;
	char *value = malloc(value_size + 1);

	(void)state;
	assert_non_null(value);
	memset(value, 'v', value_size);
	value[value_size] = '\0';
	/* A little over 1 MiB per sample: the 64th crosses 64 MiB. */
	assert_int_equal(metrics_collector_register(registry, collect_until_full, value, NULL), 0);
	assert_render_fails(registry, MUSTER_ETOOBIG, "metrics output exceeds the limit of 67108864 bytes");
	metrics_registry_free(registry);
	free(value);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_registry),
		cmocka_unit_test(counters),
		cmocka_unit_test(gauges),
		cmocka_unit_test(histograms),
		cmocka_unit_test(histogram_nan_goes_to_inf),
		cmocka_unit_test(escaping),
		cmocka_unit_test(registration_refusals),
		cmocka_unit_test(registry_limits),
		cmocka_unit_test(concurrent_updates_sum_exactly),
		cmocka_unit_test(collector_output),
		cmocka_unit_test(collector_refusals),
		cmocka_unit_test(collector_failures),
		cmocka_unit_test(render_limit_registered),
		cmocka_unit_test(render_limit_collected),
		cmocka_unit_test(render_limit_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
