/*
 * Unit tests of kube_error, kube_ratelimit and kube_client against a fake
 * transport that replays a script of responses (statuses, bodies, stream
 * lines, connection errors) and a fake clock, so that retries and backoff
 * cost no real time.
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

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube_client.h"
#include "kube_ratelimit.h"
#include "muster_lock.h"

/* ---- the fake transport ---- */

struct fake_step {
	int err; /* what the transport returns (after delivering lines) */
	long status;
	const char *body; /* send: the body; stream: lines separated by '\n' */
};

#define FAKE_MAX_CALLS 32

struct fake {
	const struct fake_step *steps;
	size_t n_steps, next;
	char *paths[FAKE_MAX_CALLS];
	char *bodies[FAKE_MAX_CALLS];
	const char *content_types[FAKE_MAX_CALLS];
	enum kube_method methods[FAKE_MAX_CALLS];
	size_t calls;
	atomic_int *stop; /* set when a stream finds the script exhausted */
	uint64_t now_ns;
	uint64_t sleeps[FAKE_MAX_CALLS];
	size_t n_sleeps;
};

static void fake_record(struct fake *f, const struct kube_request *req)
{
	assert_true(f->calls < FAKE_MAX_CALLS);
	f->paths[f->calls] = strdup(req->path);
	f->bodies[f->calls] = req->body ? strdup(req->body) : NULL;
	f->content_types[f->calls] = req->content_type;
	f->methods[f->calls] = req->method;
	f->calls++;
}

static void fake_free(struct fake *f)
{
	for (size_t i = 0; i < f->calls; i++) {
		free(f->paths[i]);
		free(f->bodies[i]);
	}
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;
	const struct fake_step *s;

	fake_record(f, req);
	resp->body = NULL;
	if (f->next >= f->n_steps)
		fail_msg("script exhausted at %s", req->path);
	s = &f->steps[f->next++];
	if (s->err)
		return cause_err(cause, s->err, "fake transport error");
	if (s->body && strlen(s->body) > req->max_response)
		return cause_err(cause, MUSTER_ETOOBIG, "fake: too big");
	resp->status = s->status;
	resp->body = strdup(s->body ? s->body : "");
	resp->body_len = strlen(resp->body);
	return MUSTER_OK;
}

static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	struct fake *f = ctx;
	const struct fake_step *s;
	const char *p;

	(void)idle_timeout_s;
	(void)stop;
	fake_record(f, req);
	*error_body = NULL;
	*status = 0;
	if (f->next >= f->n_steps) {
		/* End of script: the test is over. */
		assert_non_null(f->stop);
		atomic_store(f->stop, 1);
		*status = 200;
		return MUSTER_OK;
	}
	s = &f->steps[f->next++];
	*status = s->status;
	if (s->status && (s->status < 200 || s->status >= 300)) {
		*error_body = s->body ? strdup(s->body) : NULL;
		return MUSTER_OK;
	}
	for (p = s->body; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > max_line)
			return cause_err(cause, MUSTER_ETOOBIG, "fake: line too long");
		if (len && on_line(arg, p, len))
			return MUSTER_OK;
		p += len + (nl ? 1 : 0);
	}
	return s->err ? cause_err(cause, s->err, "fake stream error") : MUSTER_OK;
}

static const struct kube_transport fake_ops = { fake_send, fake_stream };

static uint64_t fake_now(void *arg)
{
	return ((struct fake *)arg)->now_ns;
}

static void fake_sleep(void *arg, uint64_t ns)
{
	struct fake *f = arg;

	f->now_ns += ns;
	if (f->n_sleeps < FAKE_MAX_CALLS)
		f->sleeps[f->n_sleeps++] = ns;
}

/* A client on the fake with no rate limit unless qps is given. */
static struct kube_client *fake_client(struct fake *f, const struct fake_step *steps, size_t n, double qps)
{
	struct kube_config cfg;
	struct kube_clock clock = { fake_now, fake_sleep, f };
	struct kube_client *c = NULL;

	memset(f, 0, sizeof(*f));
	f->steps = steps;
	f->n_steps = n;
	f->now_ns = 1000000000u;
	kube_config_defaults(&cfg);
	cfg.qps = qps;
	cfg.burst = 1;
	cfg.max_retries = 3;
	cfg.max_response_bytes = 1024;
	cfg.max_watch_line_bytes = 512;
	assert_int_equal(kube_client_new(&cfg, &fake_ops, f, &clock, &c, NULL), MUSTER_OK);
	return c;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- kube_error ---- */

static void error_table(void **state)
{
	(void)state;
	assert_string_equal(muster_err_name(MUSTER_OK), "MUSTER_OK");
	assert_string_equal(muster_err_name(MUSTER_EGONE), "MUSTER_EGONE");
	assert_string_equal(muster_err_name(12345), "MUSTER_E?");
	assert_string_equal(muster_err_message(-9999), "unknown error");
	assert_int_equal(kube_err_from_http(200), MUSTER_OK);
	assert_int_equal(kube_err_from_http(201), MUSTER_OK);
	assert_int_equal(kube_err_from_http(401), MUSTER_EUNAUTHORIZED);
	assert_int_equal(kube_err_from_http(403), MUSTER_EUNAUTHORIZED);
	assert_int_equal(kube_err_from_http(404), MUSTER_ENOTFOUND);
	assert_int_equal(kube_err_from_http(409), MUSTER_ECONFLICT);
	assert_int_equal(kube_err_from_http(410), MUSTER_EGONE);
	assert_int_equal(kube_err_from_http(429), MUSTER_ETHROTTLED);
	assert_int_equal(kube_err_from_http(503), MUSTER_ESERVER);
	assert_int_equal(kube_err_from_http(302), MUSTER_EHTTP);
	assert_int_equal(kube_err_from_http(422), MUSTER_EHTTP);
	assert_true(kube_err_is_transient(MUSTER_ESERVER));
	assert_false(kube_err_is_transient(MUSTER_ECONFLICT));
	/* Every code has a distinct name. */
	for (int a = MUSTER_EIO; a <= 0; a++)
		for (int b = MUSTER_EIO; b < a; b++)
			assert_string_not_equal(muster_err_name(a), muster_err_name(b));
}

static void cause_first_wins(void **state)
{
	char *cause = NULL;

	(void)state;
	assert_int_equal(cause_err(&cause, MUSTER_EPARSE, "first %d", 1), MUSTER_EPARSE);
	assert_int_equal(cause_err(&cause, MUSTER_EIO, "second"), MUSTER_EIO);
	assert_string_equal(cause, "first 1");
	free(cause);
	assert_int_equal(cause_err(NULL, MUSTER_EIO, "none"), MUSTER_EIO);
}

/* ---- kube_ratelimit ---- */

static void ratelimit_burst_then_rate(void **state)
{
	struct kube_ratelimit rl;
	const uint64_t s = 1000000000u;

	(void)state;
	kube_ratelimit_init(&rl, 2.0, 3);
	assert_int_equal(kube_ratelimit_reserve(&rl, 10 * s), 0);
	assert_int_equal(kube_ratelimit_reserve(&rl, 10 * s), 0);
	assert_int_equal(kube_ratelimit_reserve(&rl, 10 * s), 0);
	/* The bucket is empty: the fourth waits half a second, the fifth one. */
	assert_in_range(kube_ratelimit_delay(&rl, 10 * s), s / 2, s / 2 + 10);
	assert_in_range(kube_ratelimit_reserve(&rl, 10 * s), s / 2, s / 2 + 10);
	assert_in_range(kube_ratelimit_reserve(&rl, 10 * s), s, s + 10);
	/* Two seconds later the debt (-2) is repaid and one token is back. */
	assert_int_equal(kube_ratelimit_delay(&rl, 12 * s + s / 2), 0);
	/* A long pause refills to the burst, no more. */
	assert_int_equal(kube_ratelimit_reserve(&rl, 100 * s), 0);
	assert_int_equal(kube_ratelimit_reserve(&rl, 100 * s), 0);
	assert_int_equal(kube_ratelimit_reserve(&rl, 100 * s), 0);
	assert_true(kube_ratelimit_reserve(&rl, 100 * s) > 0);
	/* A clock going backwards does not mint tokens. */
	assert_true(kube_ratelimit_reserve(&rl, 50 * s) > 0);
}

static void ratelimit_unlimited(void **state)
{
	struct kube_ratelimit rl;

	(void)state;
	kube_ratelimit_init(&rl, 0, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(kube_ratelimit_reserve(&rl, 0), 0);
	kube_ratelimit_init(&rl, 0.0 / 0.0, 5);
	assert_int_equal(kube_ratelimit_reserve(&rl, 0), 0);
}

static void client_is_rate_limited(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{}" },
		{ 0, 200, "{}" },
		{ 0, 200, "{}" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 10.0);
	cJSON *obj;

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(kube_get(c, "/api", &obj, NULL), MUSTER_OK);
		cJSON_Delete(obj);
	}
	/* Burst 1 at 10 QPS: the second and third wait 100 ms each. */
	assert_int_equal(f.n_sleeps, 2);
	assert_in_range(f.sleeps[0], 100000000u, 100000010u);
	assert_in_range(f.sleeps[1], 100000000u, 100000010u);
	kube_client_free(c);
	fake_free(&f);
}

/* ---- requests ---- */

static void get_parses_and_maps_statuses(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{\"kind\":\"ConfigMap\"}" },
		{ 0, 404,
		  "{\"kind\":\"Status\",\"message\":\"configmaps \\\"x\\\" not found\",\"code\":404}" },
		{ 0, 200, "not json" },
		{ 0, 403, "plain text" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	cJSON *obj = NULL;
	char *cause = NULL;

	(void)state;
	assert_int_equal(kube_get(c, "/api/v1/namespaces/a/configmaps/x", &obj, &cause), MUSTER_OK);
	assert_string_equal(cJSON_GetObjectItem(obj, "kind")->valuestring, "ConfigMap");
	assert_null(cause);
	cJSON_Delete(obj);
	assert_int_equal(kube_get(c, "/api/v1/namespaces/a/configmaps/x", &obj, &cause), MUSTER_ENOTFOUND);
	assert_null(obj);
	assert_string_equal(cause,
			    "GET /api/v1/namespaces/a/configmaps/x: HTTP 404: configmaps \"x\" not found");
	free(cause);
	cause = NULL;
	assert_int_equal(kube_get(c, "/x", &obj, &cause), MUSTER_EPARSE);
	free(cause);
	cause = NULL;
	assert_int_equal(kube_get(c, "/x", &obj, &cause), MUSTER_EUNAUTHORIZED);
	assert_non_null(strstr(cause, "HTTP 403"));
	free(cause);
	/* A 4xx is not retried. */
	assert_int_equal(f.calls, 4);
	assert_int_equal(kube_get(c, "no-slash", &obj, NULL), MUSTER_EINVAL);
	kube_client_free(c);
	fake_free(&f);
}

static void server_errors_are_retried_with_backoff(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 503, "{\"message\":\"unavailable\"}" },
		{ MUSTER_ETRANSPORT, 0, NULL },
		{ 0, 429, "" },
		{ 0, 200, "{}" },
		/* Second request: gives up after max_retries (3) retries. */
		{ 0, 500, "{\"message\":\"boom 1\"}" },
		{ 0, 500, "{\"message\":\"boom 2\"}" },
		{ 0, 500, "{\"message\":\"boom 3\"}" },
		{ 0, 502, "{\"message\":\"boom 4\"}" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	cJSON *obj = NULL;
	char *cause = NULL;

	(void)state;
	assert_int_equal(kube_get(c, "/api", &obj, &cause), MUSTER_OK);
	assert_null(cause);
	cJSON_Delete(obj);
	assert_int_equal(f.n_sleeps, 3);
	/* Equal jitter: attempt n waits between base*2^n/2 and base*2^n. */
	for (size_t i = 0; i < 3; i++) {
		uint64_t d = (uint64_t)KUBE_BACKOFF_BASE_MS * 1000000u << i;

		assert_in_range(f.sleeps[i], d / 2, d);
	}
	assert_int_equal(kube_get(c, "/api", &obj, &cause), MUSTER_ESERVER);
	assert_null(obj);
	assert_int_equal(f.calls, 8);
	/* The cause is the last attempt's. */
	assert_non_null(strstr(cause, "HTTP 502: boom 4"));
	free(cause);
	{
		struct kube_client_stats stats;

		kube_client_stats(c, &stats);
		assert_int_equal(stats.requests, 8);
		assert_int_equal(stats.retries, 6);
		assert_int_equal(stats.errors[-MUSTER_ESERVER], 5);
		assert_int_equal(stats.errors[-MUSTER_ETRANSPORT], 1);
		assert_int_equal(stats.errors[-MUSTER_ETHROTTLED], 1);
		assert_int_equal(stats.errors[0], 0);
		assert_int_equal(stats.watch_streams, 0);
	}
	kube_client_free(c);
	fake_free(&f);
}

static void too_big_is_not_retried(void **state)
{
	static char big[2048];
	static const struct fake_step steps[] = {
		{ 0, 200, big },
	};
	struct fake f;
	struct kube_client *c;
	cJSON *obj = NULL;
	char *cause = NULL;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	c = fake_client(&f, steps, N(steps), 0);
	assert_int_equal(kube_get(c, "/api", &obj, &cause), MUSTER_ETOOBIG);
	assert_int_equal(f.calls, 1);
	free(cause);
	kube_client_free(c);
	fake_free(&f);
}

static void create_patch_delete_send_the_right_requests(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 201, "{\"metadata\":{\"name\":\"a\"}}" },
		{ 0, 200, "{}" },
		{ 0, 200, "{}" },
		{ 0, 200, "{}" },
		{ 0, 200, "{}" },
		{ 0, 409, "{\"message\":\"already exists\"}" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"a\"}}"), *out = NULL;

	(void)state;
	assert_int_equal(kube_create(c, "/api/v1/namespaces/n/configmaps", obj, &out, NULL), MUSTER_OK);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "name")->valuestring,
			    "a");
	cJSON_Delete(out);
	assert_int_equal(kube_patch(c, "/p", KUBE_PATCH_MERGE, "{\"data\":{}}", NULL, NULL), MUSTER_OK);
	assert_int_equal(kube_patch(c, "/p", KUBE_PATCH_JSON, "[]", NULL, NULL), MUSTER_OK);
	assert_int_equal(kube_patch(c, "/p", KUBE_PATCH_STRATEGIC, "{}", NULL, NULL), MUSTER_OK);
	assert_int_equal(kube_delete(c, "/d", NULL), MUSTER_OK);
	assert_int_equal(kube_create(c, "/api/v1/namespaces/n/configmaps", obj, NULL, NULL),
			 MUSTER_ECONFLICT);
	assert_int_equal(f.methods[0], KUBE_METHOD_POST);
	assert_string_equal(f.content_types[0], "application/json");
	assert_string_equal(f.bodies[0], "{\"metadata\":{\"name\":\"a\"}}");
	assert_int_equal(f.methods[1], KUBE_METHOD_PATCH);
	assert_string_equal(f.content_types[1], "application/merge-patch+json");
	assert_string_equal(f.content_types[2], "application/json-patch+json");
	assert_string_equal(f.content_types[3], "application/strategic-merge-patch+json");
	assert_int_equal(f.methods[4], KUBE_METHOD_DELETE);
	assert_null(f.bodies[4]);
	assert_int_equal(kube_patch(c, "/p", (enum kube_patch_type)7, "{}", NULL, NULL), MUSTER_EINVAL);
	cJSON_Delete(obj);
	kube_client_free(c);
	fake_free(&f);
}

/* ---- list ---- */

struct names {
	char text[512];
};

static int collect_name(void *arg, const cJSON *item)
{
	struct names *n = arg;
	const cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "metadata"), "name");

	size_t used = strlen(n->text);

	assert_true(cJSON_IsString(name));
	snprintf(n->text + used, sizeof(n->text) - used, "%s,", name->valuestring);
	return 0;
}

#define ITEM(name) "{\"metadata\":{\"name\":\"" name "\"}}"

static void list_follows_three_pages(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200,
		  "{\"metadata\":{\"resourceVersion\":\"10\",\"continue\":\"c1\"},\"items\":[" ITEM(
			  "a") "," ITEM("b") "]}" },
		{ 0, 200,
		  "{\"metadata\":{\"resourceVersion\":\"10\",\"continue\":\"c/2+\"},\"items\":[" ITEM(
			  "c") "," ITEM("d") "]}" },
		{ 0, 200, "{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[" ITEM("e") "]}" },
	};
	struct kube_selectors sel = { "app=x,tier in (a b)", "metadata.name!=z" };
	struct names names = { "" };
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	char *rv = NULL;

	(void)state;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", &sel, 2, collect_name, &names, &rv, NULL),
			 MUSTER_OK);
	assert_string_equal(names.text, "a,b,c,d,e,");
	assert_string_equal(rv, "10");
	assert_int_equal(f.calls, 3);
	assert_string_equal(f.paths[0],
			    "/api/v1/configmaps?limit=2&labelSelector=app%3Dx%2Ctier%20in%20%28a%20b%29"
			    "&fieldSelector=metadata.name%21%3Dz");
	assert_non_null(strstr(f.paths[1], "&continue=c1"));
	assert_non_null(strstr(f.paths[2], "&continue=c%2F2%2B"));
	free(rv);
	kube_client_free(c);
	fake_free(&f);
}

static int fail_on_c(void *arg, const cJSON *item)
{
	(void)arg;
	return strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(item, "metadata"), "name")->valuestring, "b") ==
			       0
		       ? MUSTER_ESTOPPED
		       : 0;
}

static void list_stops_on_callback_error_and_gone(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{\"metadata\":{\"continue\":\"c1\"},\"items\":[" ITEM("a") "," ITEM("b") "]}" },
		{ 0, 200, "{\"metadata\":{\"continue\":\"c1\"},\"items\":[]}" },
		{ 0, 410, "{\"message\":\"continue token expired\"}" },
		{ 0, 200, "{\"items\":7}" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	char *rv = NULL, *cause = NULL;

	(void)state;
	assert_int_equal(kube_list(c, "/l", NULL, 0, fail_on_c, NULL, &rv, NULL), MUSTER_ESTOPPED);
	assert_null(rv);
	assert_string_equal(f.paths[0], "/l");
	assert_int_equal(kube_list(c, "/l?x=1", NULL, 0, NULL, NULL, &rv, &cause), MUSTER_EGONE);
	assert_string_equal(f.paths[2], "/l?x=1&continue=c1");
	free(cause);
	cause = NULL;
	assert_int_equal(kube_list(c, "/l", NULL, 0, NULL, NULL, &rv, &cause), MUSTER_EPARSE);
	free(cause);
	kube_client_free(c);
	fake_free(&f);
}

/* A page larger than the client takes (1,024 bytes here; 8 MiB in the
 * controller) is asked again with half the limit, down to one item a page,
 * and counted; a single item still too large fails the LIST. Before, the
 * first such page failed the LIST and the controller exited. */
#define BIG_ITEM(n) "{\"metadata\":{\"name\":\"" n "\",\"annotations\":{\"a\":\"" PAD400 "\"}}}"
#define PAD100                                                                                               \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define PAD400 PAD100 PAD100 PAD100 PAD100

static void list_pages_too_large_are_asked_again_smaller(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200,
		  "{\"items\":[" BIG_ITEM("a") "," BIG_ITEM("b") "," BIG_ITEM("c") "," BIG_ITEM("d") "]}" },
		{ 0, 200, "{\"items\":[" BIG_ITEM("a") "," BIG_ITEM("b") "," BIG_ITEM("c") "]}" },
		{ 0, 200,
		  "{\"metadata\":{\"resourceVersion\":\"7\",\"continue\":\"c1\"},\"items\":[" BIG_ITEM(
			  "a") "]}" },
		{ 0, 200, "{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[" BIG_ITEM("b") "]}" },
		{ 0, 200, "{\"items\":[" BIG_ITEM("a") "," BIG_ITEM("b") "," BIG_ITEM("c") "]}" },
		{ 0, 200, "{\"items\":[" ITEM("z") "]}" },
		{ 0, 200, "{\"items\":[" BIG_ITEM("a") PAD400 PAD400 "]}" },
	};
	struct names names = { "" };
	struct kube_client_stats stats;
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	char *rv = NULL, *cause = NULL;

	(void)state;
	assert_int_equal(kube_list(c, "/l", NULL, 4, collect_name, &names, &rv, NULL), MUSTER_OK);
	assert_string_equal(names.text, "a,b,");
	assert_string_equal(rv, "7");
	assert_int_equal(f.calls, 4);
	assert_string_equal(f.paths[0], "/l?limit=4");
	assert_string_equal(f.paths[1], "/l?limit=2");
	assert_string_equal(f.paths[2], "/l?limit=1");
	assert_string_equal(f.paths[3], "/l?limit=1&continue=c1");
	kube_client_stats(c, &stats);
	assert_int_equal(stats.list_pages_shrunk, 2);
	/* No limit at first: KUBE_LIST_FIRST_SHRUNK_PAGE, then halves; one
	 * item alone too large is the LIST's failure. */
	free(rv);
	rv = NULL;
	assert_int_equal(kube_list(c, "/m", NULL, 0, NULL, NULL, &rv, NULL), MUSTER_OK);
	assert_string_equal(f.paths[4], "/m");
	assert_string_equal(f.paths[5], "/m?limit=256");
	free(rv);
	rv = NULL;
	assert_int_equal(kube_list(c, "/n", NULL, 1, NULL, NULL, &rv, &cause), MUSTER_ETOOBIG);
	assert_int_equal(f.calls, 7);
	assert_non_null(cause);
	free(cause);
	kube_client_free(c);
	fake_free(&f);
}

struct stopping {
	atomic_int *stop;
	int items;
};

static int stop_after_first(void *arg, const cJSON *item)
{
	struct stopping *s = arg;

	(void)item;
	s->items++;
	atomic_store(s->stop, 1);
	return 0;
}

/* A stop is honoured at once: between the items of a page, before the next
 * page, before a request is sent, and in a retry's backoff. A controller
 * SIGTERMed in its first LIST of a large cluster went on for minutes. */
static void a_stop_ends_lists_and_requests_at_once(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{\"metadata\":{\"continue\":\"c1\"},\"items\":[" ITEM("a") "," ITEM("b") "]}" },
		{ 0, 200, "{\"items\":[" ITEM("c") "]}" },
	};
	atomic_int stop = 0;
	struct stopping stopping = { &stop, 0 };
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	cJSON *out = NULL;

	(void)state;
	kube_client_set_stop(c, &stop);
	assert_int_equal(kube_list(c, "/l", NULL, 2, stop_after_first, &stopping, NULL, NULL),
			 MUSTER_ESTOPPED);
	assert_int_equal(stopping.items, 1);
	assert_int_equal(f.calls, 1);
	assert_int_equal(kube_get(c, "/x", &out, NULL), MUSTER_ESTOPPED);
	assert_null(out);
	assert_int_equal(f.calls, 1); /* never sent */
	kube_client_free(c);
	fake_free(&f);
}

/* ---- update with retry ---- */

static int bump(void *arg, cJSON *object)
{
	int *calls = arg;

	(*calls)++;
	cJSON_ReplaceItemInObject(object, "n", cJSON_CreateNumber(*calls));
	return 0;
}

static void update_retries_conflicts(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{\"n\":0}" },
		{ 0, 409, "{\"message\":\"the object has been modified\"}" },
		{ 0, 200, "{\"n\":0}" },
		{ 0, 200, "{\"n\":2}" },
		/* Giving up: two attempts, two conflicts. */
		{ 0, 200, "{\"n\":0}" },
		{ 0, 409, "{\"message\":\"modified 1\"}" },
		{ 0, 200, "{\"n\":0}" },
		{ 0, 409, "{\"message\":\"modified 2\"}" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	cJSON *out = NULL;
	char *cause = NULL;
	int calls = 0;

	(void)state;
	assert_int_equal(kube_update_retry(c, "/o", 3, bump, &calls, &out, &cause), MUSTER_OK);
	assert_null(cause);
	assert_int_equal(calls, 2);
	assert_int_equal(cJSON_GetObjectItem(out, "n")->valueint, 2);
	assert_int_equal(f.methods[1], KUBE_METHOD_PUT);
	assert_string_equal(f.bodies[3], "{\"n\":2}");
	cJSON_Delete(out);

	calls = 0;
	assert_int_equal(kube_update_retry(c, "/o", 2, bump, &calls, &out, &cause), MUSTER_ECONFLICT);
	assert_null(out);
	assert_int_equal(calls, 2);
	assert_non_null(strstr(cause, "modified 2"));
	free(cause);
	kube_client_free(c);
	fake_free(&f);
}

static int unchanged(void *arg, cJSON *object)
{
	(void)arg;
	(void)object;
	return 1;
}

static int refuse(void *arg, cJSON *object)
{
	(void)arg;
	(void)object;
	return MUSTER_EINVAL;
}

static void update_without_change_or_refused(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{\"n\":5}" },
		{ 0, 200, "{\"n\":5}" },
		{ 0, 404, "{}" },
	};
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	cJSON *out = NULL;

	(void)state;
	assert_int_equal(kube_update_retry(c, "/o", 3, unchanged, NULL, &out, NULL), MUSTER_OK);
	assert_int_equal(cJSON_GetObjectItem(out, "n")->valueint, 5);
	cJSON_Delete(out);
	assert_int_equal(kube_update_retry(c, "/o", 3, refuse, NULL, &out, NULL), MUSTER_EINVAL);
	assert_int_equal(kube_update_retry(c, "/o", 3, refuse, NULL, &out, NULL), MUSTER_ENOTFOUND);
	assert_int_equal(f.calls, 3);
	kube_client_free(c);
	fake_free(&f);
}

/* ---- watch ---- */

static void parse_event_cases(void **state)
{
	struct kube_watch_event ev;
	char *cause = NULL;
	const char *line =
		"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"}}}";
	static const char *const bad[] = {
		"",
		"{",
		"[]",
		"{\"type\":\"ADDED\"}",
		"{\"type\":\"ADDED\",\"object\":[]}",
		"{\"type\":\"NOPE\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}",
		"{\"type\":1,\"object\":{}}",
		"{\"type\":\"ADDED\",\"object\":{}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":5}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"\"}}}",
	};

	(void)state;
	assert_int_equal(kube_watch_parse_event(line, strlen(line), &ev, &cause), MUSTER_OK);
	assert_int_equal(ev.type, KUBE_WATCH_MODIFIED);
	assert_string_equal(ev.resource_version, "7");
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetObjectItem(ev.object, "metadata"), "name")->valuestring, "a");
	kube_watch_event_clear(&ev);
	assert_null(ev.object);
	kube_watch_event_clear(NULL);

	line = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}";
	assert_int_equal(kube_watch_parse_event(line, strlen(line), &ev, &cause), MUSTER_OK);
	assert_int_equal(ev.type, KUBE_WATCH_ERROR);
	assert_int_equal(ev.code, 410);
	kube_watch_event_clear(&ev);

	/* A resourceVersion at the limit is refused, one below accepted. */
	{
		char longline[400];
		char rv[KUBE_RESOURCE_VERSION_MAX + 1];

		memset(rv, '9', sizeof(rv) - 1);
		rv[sizeof(rv) - 1] = '\0';
		snprintf(longline, sizeof(longline),
			 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"%s\"}}}",
			 rv);
		assert_int_equal(kube_watch_parse_event(longline, strlen(longline), &ev, &cause),
				 MUSTER_EPARSE);
		free(cause);
		cause = NULL;
		rv[KUBE_RESOURCE_VERSION_MAX - 1] = '\0';
		snprintf(longline, sizeof(longline),
			 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"%s\"}}}",
			 rv);
		assert_int_equal(kube_watch_parse_event(longline, strlen(longline), &ev, &cause), MUSTER_OK);
		assert_int_equal(strlen(ev.resource_version), KUBE_RESOURCE_VERSION_MAX - 1);
		kube_watch_event_clear(&ev);
	}
	for (size_t i = 0; i < N(bad); i++) {
		assert_int_equal(kube_watch_parse_event(bad[i], strlen(bad[i]), &ev, &cause), MUSTER_EPARSE);
		assert_null(ev.object);
		assert_non_null(cause);
		free(cause);
		cause = NULL;
	}
	/* Length is honoured: the bytes after len are not read. */
	assert_int_equal(kube_watch_parse_event("{}garbage", 2, &ev, NULL), MUSTER_EPARSE);
}

/* Issue 34: what the API server sends must be UTF-8 without a NUL byte. A
 * response or a watch line that is not is MUSTER_EPARSE, with a cause that
 * says where by offset and hex value and holds no byte of the input; an
 * error's Status message that is not text is not quoted. */
static void text_that_is_not_utf8_is_a_parse_error(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, "{\"kind\":\"ConfigMap\",\"data\":{\"a\":\"\xff\xfe\xc0\x80\"}}" },
		{ 0, 200, "{\"kind\":\"ConfigMap\",\"data\":{\"a\":\"\xed\xa0\x80\"}}" },
		{ 0, 404,
		  "{\"kind\":\"Status\",\"message\":\"configmaps \\\"\xff\\\" not found\",\"code\":404}" },
	};
	static const char line[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\xc0\x80\","
				   "\"resourceVersion\":\"7\"}}}";
	static const char nul_line[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\0b\","
				       "\"resourceVersion\":\"7\"}}}";
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	struct kube_watch_event ev;
	cJSON *obj = NULL;
	char *cause = NULL;

	(void)state;
	assert_int_equal(kube_get(c, "/api/v1/namespaces/a/configmaps/x", &obj, &cause), MUSTER_EPARSE);
	assert_null(obj);
	assert_string_equal(cause, "GET /api/v1/namespaces/a/configmaps/x: response is not valid UTF-8 "
				   "(byte 0xFF at offset 33)");
	free(cause);
	cause = NULL;
	assert_int_equal(kube_get(c, "/x", &obj, &cause), MUSTER_EPARSE); /* a surrogate */
	assert_non_null(strstr(cause, "byte 0xED at offset 33"));
	free(cause);
	cause = NULL;
	assert_int_equal(kube_get(c, "/x", &obj, &cause), MUSTER_ENOTFOUND);
	for (const char *p = cause; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	free(cause);
	cause = NULL;
	kube_client_free(c);
	fake_free(&f);

	assert_int_equal(kube_watch_parse_event(line, sizeof(line) - 1, &ev, &cause), MUSTER_EPARSE);
	assert_null(ev.object);
	assert_string_equal(cause, "watch event is not valid UTF-8 (byte 0xC0 at offset 47)");
	free(cause);
	cause = NULL;
	assert_int_equal(kube_watch_parse_event(nul_line, sizeof(nul_line) - 1, &ev, &cause), MUSTER_EPARSE);
	assert_null(ev.object);
	assert_non_null(strstr(cause, "NUL byte (at offset 47)"));
	free(cause);
}

struct watch_log {
	char text[1024];
	atomic_int stop;
	int stop_after_events; /* 0: never */
	int events;
	int fail_relist; /* on_relist_begin returns this */
	char reasons[2048]; /* on_relist_begin's reasons, each followed by '|' */
};

static void log_add(struct watch_log *log, const char *what, const char *detail)
{
	size_t used = strlen(log->text);

	snprintf(log->text + used, sizeof(log->text) - used, "%s%s%s;", what, detail ? ":" : "",
		 detail ? detail : "");
}

static const char *name_of(const cJSON *object)
{
	const cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(object, "metadata"), "name");

	return cJSON_IsString(name) ? name->valuestring : "?";
}

static int w_begin(void *arg, const char *reason)
{
	struct watch_log *log = arg;
	size_t used = strlen(log->reasons);

	log_add(log, "begin", NULL);
	snprintf(log->reasons + used, sizeof(log->reasons) - used, "%s|", reason);
	return log->fail_relist;
}

static int w_item(void *arg, const cJSON *object)
{
	log_add(arg, "item", name_of(object));
	return 0;
}

static int w_end(void *arg, const char *rv)
{
	log_add(arg, "end", rv);
	return 0;
}

static int w_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	struct watch_log *log = arg;

	log_add(log, kube_watch_type_name(type), name_of(object));
	log->events++;
	return log->stop_after_events && log->events >= log->stop_after_events;
}

#define EV(type, name, rv)                                                                                   \
	"{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv   \
	"\"}}}\n"
#define BOOKMARK(rv) "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"" rv "\"}}}\n"
#define LIST(rv, items) "{\"metadata\":{\"resourceVersion\":\"" rv "\"},\"items\":[" items "]}"

static void watch_full_story(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LIST("100", ITEM("a")) },
		/* events in order, a bookmark, then the server ends the stream */
		{ 0, 200, EV("ADDED", "b", "101") BOOKMARK("105") EV("MODIFIED", "b", "106") },
		/* resumed from 106; the bookmark alone advances to 110 */
		{ 0, 200, BOOKMARK("110") },
		/* resumed from 110: 410 as an ERROR event */
		{ 0, 200, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n" },
		{ 0, 200, LIST("200", ITEM("a") "," ITEM("b")) },
		/* a malformed line */
		{ 0, 200, EV("ADDED", "c", "201") "this is not json\n" EV("ADDED", "d", "202") },
		{ 0, 200, LIST("300", "") },
		/* 410 as an HTTP status */
		{ 0, 410, "{\"kind\":\"Status\",\"code\":410}" },
		{ 0, 200, LIST("400", "") },
		/* a connection error after one event: resume from 401 */
		{ MUSTER_ETRANSPORT, 200, EV("DELETED", "a", "401") },
		/* an over-long line */
		{ 0, 200,
		  "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"" /* > 512 bytes */
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "\",\"resourceVersion\":\"402\"}}}\n" },
		{ 0, 200, LIST("500", ITEM("e")) },
		/* then the script ends and the fake sets the stop flag */
	};
	struct watch_log log = { .text = "" };
	struct kube_watch_callbacks cb = { w_begin, w_item, w_end, w_event, &log };
	struct kube_selectors sel = { "app=x", NULL };
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	char *cause = NULL;

	(void)state;
	atomic_init(&log.stop, 0);
	f.stop = &log.stop;
	assert_int_equal(kube_watch_run(c, "/api/v1/configmaps", &sel, 50, &cb, &log.stop, &cause),
			 MUSTER_OK);
	assert_null(cause);
	assert_string_equal(log.text, "begin;item:a;end:100;ADDED:b;MODIFIED:b;"
				      "begin;item:a;item:b;end:200;ADDED:c;"
				      "begin;end:300;begin;end:400;DELETED:a;begin;item:e;end:500;");
	/* Each re-list says why (issue 16: the warning said only that it
	 * happened): an ERROR event, a bad line, an HTTP 410, an over-long line. */
	{
		char *r = log.reasons;
		static const char *const wanted[] = {
			"first list|", "the watch ended: watch ERROR event with code 410|",
			"the watch ended: ", "the watch ended: ", "the watch ended: "
		};

		for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
			if (strncmp(r, wanted[i], strlen(wanted[i])) != 0)
				fail_msg("reason %zu: \"%s\" does not start \"%s\" (all: %s)", i, r,
					 wanted[i], log.reasons);
			r = strchr(r, '|') + 1;
		}
		assert_string_equal(r, "");
		assert_non_null(strstr(log.reasons, "410"));
		assert_null(strchr(log.reasons, '\n'));
	}
	assert_int_equal(f.calls, 13);
	assert_string_equal(f.paths[0], "/api/v1/configmaps?limit=50&labelSelector=app%3Dx");
	assert_string_equal(f.paths[1],
			    "/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=100"
			    "&timeoutSeconds=300&labelSelector=app%3Dx");
	assert_non_null(strstr(f.paths[2], "resourceVersion=106&"));
	assert_non_null(strstr(f.paths[3], "resourceVersion=110&"));
	assert_non_null(strstr(f.paths[5], "resourceVersion=200&"));
	assert_non_null(strstr(f.paths[7], "resourceVersion=300&"));
	assert_non_null(strstr(f.paths[9], "resourceVersion=400&"));
	assert_non_null(strstr(f.paths[10], "resourceVersion=401&"));
	assert_string_equal(f.paths[11], "/api/v1/configmaps?limit=50&labelSelector=app%3Dx");
	assert_non_null(strstr(f.paths[12], "resourceVersion=500&"));
	{
		struct kube_client_stats stats;

		kube_client_stats(c, &stats);
		assert_int_equal(stats.relists, 5);
		assert_int_equal(stats.watch_streams, 8);
		assert_int_equal(stats.requests, 13);
		assert_int_equal(stats.watch_events, 4);
		assert_int_equal(stats.errors[-MUSTER_EGONE], 1);
		assert_int_equal(stats.errors[-MUSTER_ETRANSPORT], 1);
		assert_int_equal(stats.errors[-MUSTER_ETOOBIG], 1);
	}
	kube_client_free(c);
	fake_free(&f);
}

static void watch_stop_flag_and_callbacks(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LIST("1", "") },
		{ 0, 200, EV("ADDED", "a", "2") EV("ADDED", "b", "3") EV("ADDED", "c", "4") },
	};
	struct watch_log log = { .text = "", .stop_after_events = 2 };
	struct kube_watch_callbacks cb = { w_begin, w_item, w_end, w_event, &log };
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);

	(void)state;
	/* Already stopped: nothing is sent. */
	atomic_init(&log.stop, 1);
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, NULL), MUSTER_OK);
	assert_int_equal(f.calls, 0);
	/* A callback returning non-zero ends the watch mid-stream. */
	atomic_store(&log.stop, 0);
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, NULL), MUSTER_OK);
	assert_string_equal(log.text, "begin;end:1;ADDED:a;ADDED:b;");
	/* A negative callback value is returned. */
	log.text[0] = '\0';
	log.fail_relist = MUSTER_EINVAL;
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, NULL), MUSTER_EINVAL);
	assert_string_equal(log.text, "begin;");
	kube_client_free(c);
	fake_free(&f);
}

static void watch_fatal_errors_end_it(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LIST("1", "") },
		{ 0, 403, "{\"message\":\"forbidden: cannot watch\"}" },
		{ 0, 404, "{\"message\":\"no such resource\"}" },
		/* transient errors on the list are retried with backoff */
		{ 0, 503, "{}" },
		{ 0, 503, "{}" },
		{ 0, 503, "{}" },
		{ 0, 503, "{}" },
		{ 0, 200, LIST("9", "") },
	};
	struct watch_log log = { .text = "" };
	struct kube_watch_callbacks cb = { NULL, NULL, w_end, NULL, &log };
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	char *cause = NULL;

	(void)state;
	atomic_init(&log.stop, 0);
	f.stop = &log.stop;
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, &cause), MUSTER_EUNAUTHORIZED);
	assert_non_null(strstr(cause, "forbidden: cannot watch"));
	free(cause);
	cause = NULL;
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, &cause), MUSTER_ENOTFOUND);
	free(cause);
	cause = NULL;
	f.n_sleeps = 0;
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, &cause), MUSTER_OK);
	assert_null(cause);
	assert_string_equal(log.text, "end:1;end:9;");
	assert_true(f.n_sleeps >= 4);
	kube_client_free(c);
	fake_free(&f);
}

/* After an apiserver restart a custom resource's collection answers 404 for
 * a moment (the CRDs are registered again after /readyz): once listed, a 404
 * on the watch or the next LIST is retried, not the end of the watch. */
static void watch_survives_a_collection_not_served_yet(void **state)
{
	static const struct fake_step steps[] = {
		{ 0, 200, LIST("1", "") },
		{ 0, 404, "{\"message\":\"the server could not find the requested resource\"}" },
		{ 0, 404, "{\"message\":\"the server could not find the requested resource\"}" },
		{ 0, 200, LIST("5", "") },
	};
	struct watch_log log = { .text = "" };
	struct kube_watch_callbacks cb = { NULL, NULL, w_end, NULL, &log };
	struct fake f;
	struct kube_client *c = fake_client(&f, steps, N(steps), 0);
	char *cause = NULL;

	(void)state;
	atomic_init(&log.stop, 0);
	f.stop = &log.stop;
	assert_int_equal(kube_watch_run(c, "/w", NULL, 0, &cb, &log.stop, &cause), MUSTER_OK);
	assert_null(cause);
	assert_string_equal(log.text, "end:1;end:5;");
	assert_true(f.n_sleeps >= 2); /* backed off, not hammered */
	kube_client_free(c);
	fake_free(&f);
}

/* ---- no request under a muster lock (lib/base/muster_lock.h) ---- */

enum locked_call { LOCKED_GET, LOCKED_LIST, LOCKED_WATCH };

static int no_watch_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	(void)arg;
	(void)type;
	(void)object;
	return 1;
}

/* Runs `call` in a child, under a muster lock when `locked`; returns the
 * child's wait status and what it wrote to stderr (cut to size). */
static int run_child(enum locked_call call, int locked, char *err_text, size_t size)
{
	static const struct fake_step steps[] = {
		{ 0, 200,
		  "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}" },
		{ 0, 200, "" },
	};
	int pipe_fds[2], status = 0;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(pipe_fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		const struct kube_watch_callbacks callbacks = { .on_event = no_watch_event };
		struct fake f;
		struct kube_client *c;
		atomic_int stop = 0;
		cJSON *out = NULL;

		dup2(pipe_fds[1], 2);
		close(pipe_fds[0]);
		c = fake_client(&f, steps, N(steps), 0);
		if (locked)
			muster_lock(&m);
		if (call == LOCKED_GET)
			kube_get(c, "/api/v1/namespaces/a/configmaps/x", &out, NULL);
		else if (call == LOCKED_LIST)
			kube_list(c, "/api/v1/namespaces/a/configmaps", NULL, 10, NULL, NULL, NULL, NULL);
		else {
			f.stop = &stop;
			kube_watch_run(c, "/api/v1/namespaces/a/configmaps", NULL, 10, &callbacks, &stop,
				       NULL);
		}
		_exit(muster_locks_held() == (locked ? 1u : 0u) ? 0 : 3);
	}
	close(pipe_fds[1]);
	while (got + 1 < size && (n = read(pipe_fds[0], err_text + got, size - 1 - got)) > 0)
		got += (size_t)n;
	err_text[got] = '\0';
	close(pipe_fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void a_request_under_a_muster_lock_aborts(void **state)
{
	static const char *const expected[] = {
		"request=\"GET /api/v1/namespaces/a/configmaps/x\"",
		"request=\"GET /api/v1/namespaces/a/configmaps?limit=10\"",
		"request=\"GET /api/v1/namespaces/a/configmaps?limit=10\"", /* the watch's LIST comes first */
	};
	char err_text[2048];

	(void)state;
	for (int call = LOCKED_GET; call <= LOCKED_WATCH; call++) {
		/* Without the lock the call runs and the child exits 0. */
		int status = run_child((enum locked_call)call, 0, err_text, sizeof(err_text));

		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		status = run_child((enum locked_call)call, 1, err_text, sizeof(err_text));
#ifdef MUSTER_LOCK_CHECK
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), SIGABRT);
		assert_non_null(strstr(err_text, "event=api-call-under-lock locks=1"));
		assert_non_null(strstr(err_text, expected[call]));
#else
		/* The check is off in this build: the call runs, the lock stays counted. */
		(void)expected;
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
#endif
	}
}

static void muster_locks_are_counted_per_thread(void **state)
{
	pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;

	(void)state;
	assert_int_equal(muster_locks_held(), 0);
	muster_lock(&a);
	muster_lock(&b);
	assert_int_equal(muster_locks_held(), 2);
	muster_unlock(&b);
	assert_int_equal(muster_locks_held(), 1);
	muster_unlock(&a);
	assert_int_equal(muster_locks_held(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(error_table),
		cmocka_unit_test(cause_first_wins),
		cmocka_unit_test(ratelimit_burst_then_rate),
		cmocka_unit_test(ratelimit_unlimited),
		cmocka_unit_test(client_is_rate_limited),
		cmocka_unit_test(get_parses_and_maps_statuses),
		cmocka_unit_test(server_errors_are_retried_with_backoff),
		cmocka_unit_test(too_big_is_not_retried),
		cmocka_unit_test(create_patch_delete_send_the_right_requests),
		cmocka_unit_test(list_follows_three_pages),
		cmocka_unit_test(list_stops_on_callback_error_and_gone),
		cmocka_unit_test(list_pages_too_large_are_asked_again_smaller),
		cmocka_unit_test(a_stop_ends_lists_and_requests_at_once),
		cmocka_unit_test(update_retries_conflicts),
		cmocka_unit_test(update_without_change_or_refused),
		cmocka_unit_test(parse_event_cases),
		cmocka_unit_test(text_that_is_not_utf8_is_a_parse_error),
		cmocka_unit_test(watch_full_story),
		cmocka_unit_test(watch_stop_flag_and_callbacks),
		cmocka_unit_test(watch_fatal_errors_end_it),
		cmocka_unit_test(watch_survives_a_collection_not_served_yet),
		cmocka_unit_test(muster_locks_are_counted_per_thread),
		cmocka_unit_test(a_request_under_a_muster_lock_aborts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
