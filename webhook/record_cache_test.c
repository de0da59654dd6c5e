/*
 * Unit tests of record_cache (the pod route's copies of placement records)
 * against a fake transport that answers GET of the ConfigMap with a record
 * the test sets: a pod is pinned only by the record of its own restart
 * attempt, a record of before attempts pins any, a record of another
 * JobSet of the name pins none, and a cached record of an earlier attempt
 * is read again, not used.
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

#include "kube_client.h"
#include "kube_config.h"
#include "kube_transport.h"
#include "record_cache.h"

struct fake {
	char record[512]; /* data.placement; "" answers 404 */
	int gets;
};

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;
	char body[1024];

	(void)cause;
	assert_int_equal(req->method, KUBE_METHOD_GET);
	assert_string_equal(req->path, "/api/v1/namespaces/ns/configmaps/train-placement");
	f->gets++;
	if (!f->record[0]) {
		snprintf(body, sizeof(body), "{\"kind\":\"Status\",\"code\":404}");
		resp->status = 404;
	} else {
		char escaped[600];
		size_t o = 0;

		for (const char *c = f->record; *c && o + 2 < sizeof(escaped); c++) {
			if (*c == '"')
				escaped[o++] = '\\';
			escaped[o++] = *c;
		}
		escaped[o] = '\0';
		snprintf(body, sizeof(body),
			 "{\"metadata\":{\"name\":\"train-placement\"},\"data\":{\"placement\":\"%s\"}}",
			 escaped);
		resp->status = 200;
	}
	resp->body_len = strlen(body);
	resp->body = strdup(body);
	return KUBE_OK;
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
	return KUBE_ETRANSPORT;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

struct setup {
	struct fake fake;
	struct kube_client *client;
	struct record_cache *cache;
};

static void setup(struct setup *s)
{
	struct kube_config cfg;
	char *cause = NULL;

	memset(s, 0, sizeof(*s));
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	assert_int_equal(kube_client_new(&cfg, &fake_transport, &s->fake, NULL, &s->client, &cause), 0);
	assert_int_equal(record_cache_new(s->client, &s->cache, &cause), 0);
}

static void teardown(struct setup *s)
{
	record_cache_free(s->cache);
	kube_client_free(s->client);
}

/* rc of record_cache_selector for pod 0/0 of replicated job w, attempt
 * `attempt`; the selector or the cause in out. */
static int pin(struct setup *s, const char *uid, uint32_t attempt, char *out, size_t size)
{
	char *cause = NULL;
	int rc = record_cache_selector(s->cache, "ns", "train", uid, attempt, "w", 0, 0, out, size, &cause);

	if (rc != 1)
		snprintf(out, size, "%s", cause ? cause : "");
	free(cause);
	return rc;
}

static void a_pod_is_pinned_only_by_its_own_attempts_record(void **state)
{
	struct setup s;
	char out[512];

	(void)state;
	setup(&s);
	snprintf(s.fake.record, sizeof(s.fake.record),
		 "{\"uid\":\"u1\",\"attempt\":0,\"replicatedJobs\":{\"w\":[[[0,3,\"rack=r1\"]]]}}");
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r1");
	/* Attempt 1's pod: the cached record is of attempt 0, so it is read
	 * again; still attempt 0, so the pod is refused, saying why. */
	assert_int_equal(pin(&s, "u1", 1, out, sizeof(out)), -1);
	assert_int_equal(s.fake.gets, 2);
	assert_non_null(strstr(out, "is for restart attempt 0, this pod is of attempt 1"));
	assert_non_null(strstr(out, "retries"));
	/* The controller writes attempt 1's: pinned by it. */
	snprintf(s.fake.record, sizeof(s.fake.record),
		 "{\"uid\":\"u1\",\"attempt\":1,\"replicatedJobs\":{\"w\":[[[0,3,\"rack=r2\"]]]}}");
	assert_int_equal(pin(&s, "u1", 1, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r2");
	/* A late pod of attempt 0 is not pinned by attempt 1's. */
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), -1);
	assert_non_null(strstr(out, "earlier attempt"));
	teardown(&s);
}

static void records_of_before_attempts_and_of_other_jobsets(void **state)
{
	struct setup s;
	char out[512];

	(void)state;
	setup(&s);
	/* No attempt in it (written before they were): pins any attempt. */
	snprintf(s.fake.record, sizeof(s.fake.record),
		 "{\"uid\":\"u1\",\"replicatedJobs\":{\"w\":[[[0,3,\"rack=r1\"]]]}}");
	assert_int_equal(pin(&s, "u1", 3, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r1");
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_int_equal(s.fake.gets, 1); /* cached */
	/* Another JobSet of the name: never pins. */
	assert_int_equal(pin(&s, "u2", 0, out, sizeof(out)), -1);
	assert_non_null(strstr(out, "earlier JobSet of this name"));
	/* No record at all: refused, naming the ConfigMap. */
	s.fake.record[0] = '\0';
	assert_int_equal(pin(&s, "u3", 0, out, sizeof(out)), -1);
	assert_non_null(strstr(out, "ns/train-placement is missing"));
	teardown(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_pod_is_pinned_only_by_its_own_attempts_record),
		cmocka_unit_test(records_of_before_attempts_and_of_other_jobsets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
