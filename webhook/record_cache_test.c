/*
 * Unit tests of record_cache (the pod route's copies of placement records)
 * against a fake transport that answers GET of the ConfigMap with a record
 * the test sets: a pod is pinned only by the record of its own restart
 * attempt, a record of before attempts pins any, a record of another
 * JobSet of the name pins none, and a cached record of an earlier attempt
 * is read again, not used. With a clock of the test's and a GET the test
 * can hold: lookups that miss together make one GET, a record near its
 * expiry is read again by one lookup while the others use it, a read ahead
 * that fails is not retried before expiry, and an entry counts from when
 * its GET was sent.
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

#include "kube_client.h"
#include "kube_config.h"
#include "kube_transport.h"
#include <cjson/cJSON.h>

#include "muster_api.h"
#include "record_cache.h"
#include "webhook.h"

struct fake {
	char record[512]; /* data.placement; "" answers 404 */
	/* The ConfigMap's ownerReferences (JSON); "": a JobSet of the name in
	 * the path, the record's uid, controller: true, as muster writes it. */
	char owners[512];
	char slow[64]; /* JobSets named so or longer: GETs take timeout_ms, then time out */
	long timeout_ms; /* the readers' request timeout the fake keeps */
	long pad_bytes; /* data.padding of this many bytes (a large forged record) */
	int gets;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int hold; /* a GET waits while set */
	int in_get; /* GETs waiting in fake_send */
	time_t clock; /* the cache's clock, when the test sets it */
	time_t get_takes; /* seconds a GET moves that clock on */
};

static time_t fake_clock(void *arg)
{
	struct fake *f = arg;
	time_t now;

	pthread_mutex_lock(&f->lock);
	now = f->clock;
	pthread_mutex_unlock(&f->lock);
	return now;
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;
	char body[2048];

	static const char prefix[] = "/api/v1/namespaces/ns/configmaps/";
	char jobset[64] = "", owners[700], uid[64] = "";
	const char *at;
	char *big = NULL;

	(void)cause;
	assert_int_equal(req->method, KUBE_METHOD_GET);
	assert_memory_equal(req->path, prefix, sizeof(prefix) - 1);
	assert_true(strlen(req->path) > sizeof(prefix) + strlen("-placement") - 1);
	snprintf(jobset, sizeof(jobset), "%.*s",
		 (int)(strlen(req->path) - sizeof(prefix) + 1 - strlen("-placement")),
		 req->path + sizeof(prefix) - 1);
	assert_string_equal(req->path + sizeof(prefix) - 1 + strlen(jobset), "-placement");
	if (f->slow[0] &&
	    strncmp(jobset, f->slow, strlen(f->slow)) == 0) { /* a hanging apiserver, cut by the timeout */
		nanosleep(&(struct timespec){ f->timeout_ms / 1000, (f->timeout_ms % 1000) * 1000000L },
			  NULL);
		pthread_mutex_lock(&f->lock);
		f->gets++;
		pthread_mutex_unlock(&f->lock);
		return MUSTER_ETIMEOUT;
	}
	pthread_mutex_lock(&f->lock);
	f->gets++;
	f->in_get++;
	pthread_cond_broadcast(&f->changed);
	while (f->hold)
		pthread_cond_wait(&f->changed, &f->lock);
	f->in_get--;
	f->clock += f->get_takes;
	if ((at = strstr(f->record, "\"uid\":\"")))
		snprintf(uid, sizeof(uid), "%.*s", (int)strcspn(at + 7, "\""), at + 7);
	if (f->owners[0])
		snprintf(owners, sizeof(owners), "%s", f->owners);
	else
		snprintf(owners, sizeof(owners),
			 "[{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"%s\","
			 "\"uid\":\"%s\",\"controller\":true}]",
			 jobset, uid);
	pthread_mutex_unlock(&f->lock);
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
			 "{\"metadata\":{\"name\":\"%s-placement\",\"ownerReferences\":%s},"
			 "\"data\":{\"placement\":\"%s\"}}",
			 jobset, owners, escaped);
		resp->status = 200;
	}
	if (f->pad_bytes && resp->status == 200) { /* data.padding: a ConfigMap near its 1 MiB */
		size_t len = strlen(body);

		big = malloc(len + (size_t)f->pad_bytes + 32);
		assert_non_null(big);
		memcpy(big, body, len - 2); /* up to the end of data */
		len -= 2;
		len += (size_t)snprintf(big + len, 32, ",\"padding\":\"");
		memset(big + len, 'x', (size_t)f->pad_bytes);
		len += (size_t)f->pad_bytes;
		memcpy(big + len, "\"}}", 4);
		resp->body_len = len + 3;
		resp->body = big;
		return MUSTER_OK;
	}
	resp->body_len = strlen(body);
	resp->body = strdup(body);
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
	return MUSTER_ETRANSPORT;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

struct setup {
	struct fake fake;
	struct kube_client *client;
	struct record_cache_options options;
	struct record_cache *cache;
};

static void setup(struct setup *s)
{
	struct kube_config cfg;
	char *cause = NULL;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->fake.lock, NULL);
	pthread_cond_init(&s->fake.changed, NULL);
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	cfg.max_retries = 0; /* as muster-webhook's readers */
	assert_int_equal(kube_client_new(&cfg, &fake_transport, &s->fake, NULL, &s->client, &cause), 0);
	s->options.readers = &s->client;
	s->options.reader_count = 1;
	s->options.request_timeout_ms = 2000;
	assert_int_equal(record_cache_new(&s->options, &s->cache, &cause), 0);
}

static void teardown(struct setup *s)
{
	record_cache_free(s->cache);
	kube_client_free(s->client);
	pthread_cond_destroy(&s->fake.changed);
	pthread_mutex_destroy(&s->fake.lock);
}

/* The webhook's options of these tests (quiet; no readers yet). */
static struct webhook_options test_webhook_options(void)
{
	struct webhook_options options = { .barrier = { .barrier_image = "b",
							.image_pull_policy = "IfNotPresent",
							.cpu_request = "10m",
							.memory_request = "16Mi" },
					   .quiet = 1 };

	return options;
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

/* rc of record_cache_job_selector for Job w/0 of `pods` pods. */
static int pin_job(struct setup *s, const char *uid, uint32_t attempt, uint32_t pods, char *out, size_t size)
{
	char *cause = NULL;
	int rc = record_cache_job_selector(s->cache, "ns", "train", uid, attempt, "w", 0, pods, out, size,
					   &cause);

	if (rc != 1 && rc != 2)
		snprintf(out, size, "%s", cause ? cause : "");
	free(cause);
	return rc;
}

/* A Job is pinned whole only when one run holds all of its pods; its
 * refusals speak of the Job and of JobSet making it again. */
static void a_job_is_pinned_whole_only_when_one_domain_holds_all_its_pods(void **state)
{
	struct setup s;
	char out[512];

	(void)state;
	setup(&s);
	s.fake.record[0] = '\0';
	assert_int_equal(pin_job(&s, "u1", 0, 4, out, sizeof(out)), -1);
	assert_non_null(strstr(out, "ns/train-placement is missing"));
	assert_non_null(strstr(out, "JobSet makes this Job once it is placed"));
	snprintf(
		s.fake.record, sizeof(s.fake.record),
		"{\"uid\":\"u1\",\"attempt\":0,\"replicatedJobs\":{\"w\":[[[0,3,\"rack=r1\"],[4,5,\"rack=r2\"]]]}}");
	assert_int_equal(pin_job(&s, "u1", 0, 4, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r1");
	assert_int_equal(pin_job(&s, "u1", 0, 6, out, sizeof(out)), 2); /* two racks: pod by pod */
	assert_string_equal(out, "rack=r1"); /* its template: the rack of 4 of its 6 pods */
	assert_int_equal(pin_job(&s, "u1", 0, 0, out, sizeof(out)), -1);
	assert_int_equal(pin_job(&s, "u1", 1, 4, out, sizeof(out)), -1);
	assert_non_null(strstr(out, "this Job is of attempt 1"));
	assert_non_null(strstr(out, "JobSet makes this Job again"));
	snprintf(s.fake.record, sizeof(s.fake.record),
		 "{\"uid\":\"u2\",\"attempt\":0,\"replicatedJobs\":{\"v\":[[[0,3,\"rack=r1\"]]]}}");
	assert_int_equal(pin_job(&s, "u2", 0, 4, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "has no Job w job 0"));
	snprintf(
		s.fake.record, sizeof(s.fake.record),
		"{\"uid\":\"u3\",\"attempt\":0,\"replicatedJobs\":{\"w\":[[[0,1,\"rack=r1\"],[2,5,\"block=b2\"]]]}}");
	assert_int_equal(pin_job(&s, "u3", 0, 6, out, sizeof(out)), 2);
	assert_string_equal(out, ""); /* domains of two depths: no template */
	teardown(&s);
}

static void set_record(struct setup *s, const char *rack)
{
	pthread_mutex_lock(&s->fake.lock);
	snprintf(s->fake.record, sizeof(s->fake.record),
		 "{\"uid\":\"u1\",\"attempt\":0,\"replicatedJobs\":{\"w\":[[[0,3,\"rack=%s\"]]]}}", rack);
	pthread_mutex_unlock(&s->fake.lock);
}

static void set_hold(struct setup *s, int hold)
{
	pthread_mutex_lock(&s->fake.lock);
	s->fake.hold = hold;
	pthread_cond_broadcast(&s->fake.changed);
	pthread_mutex_unlock(&s->fake.lock);
}

static void set_clock(struct setup *s, time_t now)
{
	pthread_mutex_lock(&s->fake.lock);
	s->fake.clock = now;
	pthread_mutex_unlock(&s->fake.lock);
}

/* setup() with the cache on the fake's clock, at 100 s. */
static void setup_clocked(struct setup *s)
{
	setup(s);
	record_cache_set_clock(s->cache, fake_clock, &s->fake);
	set_clock(s, 100);
}

static int get_count(struct setup *s)
{
	int n;

	pthread_mutex_lock(&s->fake.lock);
	n = s->fake.gets;
	pthread_mutex_unlock(&s->fake.lock);
	return n;
}

/* Waits up to 5 s for `n` GETs to be held in the fake; 1 if they are. */
static int gets_held(struct setup *s, int n)
{
	struct timespec until;
	int ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&s->fake.lock);
	while (s->fake.in_get < n)
		if (pthread_cond_timedwait(&s->fake.changed, &s->fake.lock, &until))
			break;
	ok = s->fake.in_get >= n;
	pthread_mutex_unlock(&s->fake.lock);
	return ok;
}

struct lookup_thread {
	pthread_t thread;
	struct setup *s;
	int rc;
	char out[512];
};

static void *lookup_main(void *arg)
{
	struct lookup_thread *t = arg;

	t->rc = pin(t->s, "u1", 0, t->out, sizeof(t->out));
	return NULL;
}

/* Pods of one JobSet arriving together while its record is not cached
 * (the first ones, or all of them when an entry expired): one GET, the
 * others use what it read. Each used to make its own, one after the
 * other, while every webhook thread waited. */
static void lookups_that_miss_together_make_one_get(void **state)
{
	struct setup s;
	struct lookup_thread t[4];

	(void)state;
	setup(&s);
	set_record(&s, "r1");
	set_hold(&s, 1);
	for (size_t i = 0; i < 4; i++) {
		t[i].s = &s;
		assert_int_equal(pthread_create(&t[i].thread, NULL, lookup_main, &t[i]), 0);
		if (i == 0)
			assert_true(gets_held(&s, 1));
	}
	/* The three others reach the GET's lock meanwhile (or find the entry
	 * made, which is as good). */
	nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	set_hold(&s, 0);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i].thread, NULL), 0);
		assert_int_equal(t[i].rc, 1);
		assert_string_equal(t[i].out, "rack=r1");
	}
	assert_int_equal(get_count(&s), 1);
	teardown(&s);
}

/* Near its expiry an entry is read again by one lookup, answered from what
 * it read; the others go on using the entry without waiting for that GET,
 * and after the old entry's expiry the new one answers, no GET needed. */
static void a_record_near_its_expiry_is_read_again_by_one_lookup_while_the_others_use_it(void **state)
{
	struct setup s;
	struct lookup_thread first = { 0 };
	char out[512];

	(void)state;
	setup_clocked(&s);
	set_record(&s, "r1");
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_int_equal(get_count(&s), 1);
	set_clock(&s, 100 + RECORD_CACHE_TTL_S - RECORD_CACHE_AHEAD_S);
	set_record(&s, "r2");
	set_hold(&s, 1);
	first.s = &s;
	assert_int_equal(pthread_create(&first.thread, NULL, lookup_main, &first), 0);
	assert_true(gets_held(&s, 1)); /* the first lookup reads it again */
	/* Meanwhile another pod is pinned by the entry, without waiting. */
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r1");
	set_hold(&s, 0);
	assert_int_equal(pthread_join(first.thread, NULL), 0);
	assert_int_equal(first.rc, 1);
	assert_string_equal(first.out, "rack=r2"); /* answered from what it read */
	assert_int_equal(get_count(&s), 2);
	/* Past the first entry's expiry: the new one pins, no GET. */
	set_clock(&s, 100 + RECORD_CACHE_TTL_S + 1);
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r2");
	assert_int_equal(get_count(&s), 2);
	teardown(&s);
}

/* A read ahead that fails (the record was dropped) is not tried again by
 * every lookup of the entry's last seconds: the entry pins until it
 * expires, and the first lookup after that reads the API and says why. */
static void a_read_ahead_that_fails_is_not_retried_before_expiry(void **state)
{
	struct setup s;
	char out[512];

	(void)state;
	setup_clocked(&s);
	set_record(&s, "r1");
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	pthread_mutex_lock(&s.fake.lock);
	s.fake.record[0] = '\0'; /* 404 from now on */
	pthread_mutex_unlock(&s.fake.lock);
	set_clock(&s, 100 + RECORD_CACHE_TTL_S - RECORD_CACHE_AHEAD_S);
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1); /* read ahead: 404 */
	assert_string_equal(out, "rack=r1");
	assert_int_equal(get_count(&s), 2);
	set_clock(&s, 100 + RECORD_CACHE_TTL_S - 1);
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_int_equal(get_count(&s), 2); /* not tried again */
	set_clock(&s, 100 + RECORD_CACHE_TTL_S);
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), -1);
	assert_non_null(strstr(out, "ns/train-placement is missing"));
	assert_int_equal(get_count(&s), 3);
	teardown(&s);
}

/* A GET that took 2 s: its entry expires RECORD_CACHE_TTL_S after the GET
 * was sent, not after its answer, so a record the controller rewrote is
 * read again within the time the controller waits. */
static void an_entry_counts_from_when_its_get_was_sent(void **state)
{
	struct setup s;
	char out[512];

	(void)state;
	setup_clocked(&s);
	s.fake.get_takes = 2;
	set_record(&s, "r1");
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	s.fake.get_takes = 0;
	set_record(&s, "r2");
	set_clock(&s, 100 + RECORD_CACHE_TTL_S);
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r2");
	assert_int_equal(get_count(&s), 2);
	teardown(&s);
}

/* rc of a lookup of pod w/0/0 of JobSet `jobset` of uid u1. */
static int pin_of(struct setup *s, const char *jobset, char *out, size_t size)
{
	char *cause = NULL;
	int rc = record_cache_selector(s->cache, "ns", jobset, "u1", 0, "w", 0, 0, out, size, &cause);

	if (rc != 1)
		snprintf(out, size, "%s", cause ? cause : "");
	free(cause);
	return rc;
}

static size_t cached_bytes(struct setup *s, size_t *entries)
{
	size_t n, bytes;

	record_cache_usage(s->cache, &n, &bytes);
	if (entries)
		*entries = n;
	return bytes;
}

/* A ConfigMap `<jobset>-placement` that the pod's JobSet does not control
 * (no owner, another kind, another name, not the controller) is a tenant's,
 * not a record: refused without saying what it holds, and nothing kept. */
static void configmaps_muster_did_not_write_pin_nothing_and_are_not_kept(void **state)
{
	static const char *const owners[] = {
		"[]",
		"[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"train\",\"uid\":\"u1\",\"controller\":true}]",
		"[{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"other\","
		"\"uid\":\"u1\",\"controller\":true}]",
		"[{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"train\","
		"\"uid\":\"u1\"}]",
		"[{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\"train\","
		"\"uid\":\"u1\",\"controller\":false}]",
	};
	struct setup s;
	char out[1024];
	size_t entries;

	(void)state;
	setup(&s);
	set_record(&s, "r1");
	for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
		snprintf(s.fake.owners, sizeof(s.fake.owners), "%s", owners[i]);
		assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), -1);
		assert_non_null(strstr(out, "is not the placement of record of JobSet train of uid u1"));
		assert_null(strstr(out, "rack"));
		assert_int_equal(cached_bytes(&s, &entries), 0);
		assert_int_equal(entries, 0);
	}
	s.fake.owners[0] = '\0'; /* as muster writes it */
	assert_int_equal(pin(&s, "u1", 0, out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r1");
	teardown(&s);
}

/* The entries hold at most bytes_max of records: the oldest go first, an
 * expired entry is freed by the next lookup of any JobSet, and a record
 * larger than the whole bound pins its pod but is not kept. */
static void the_cache_holds_at_most_its_bytes_and_frees_what_expired(void **state)
{
	struct setup s;
	char out[512], name[32];
	size_t one, entries;

	(void)state;
	setup_clocked(&s);
	set_record(&s, "r1");
	assert_int_equal(pin_of(&s, "j0", out, sizeof(out)), 1);
	one = cached_bytes(&s, &entries);
	assert_true(one > 0);
	assert_int_equal(entries, 1);
	record_cache_free(s.cache);
	s.options.bytes_max = 3 * one;
	assert_int_equal(record_cache_new(&s.options, &s.cache, NULL), 0);
	record_cache_set_clock(s.cache, fake_clock, &s.fake);
	for (int i = 0; i < 10; i++) {
		set_clock(&s, 100 + i); /* each older than the next */
		snprintf(name, sizeof(name), "j%d", i);
		assert_int_equal(pin_of(&s, name, out, sizeof(out)), 1);
		assert_true(cached_bytes(&s, &entries) <= 3 * one);
		assert_true(entries <= 3);
	}
	assert_int_equal(entries, 3);
	/* The newest three are kept: j9 answers without a GET, j0 needs one. */
	int gets = get_count(&s);
	assert_int_equal(pin_of(&s, "j9", out, sizeof(out)), 1);
	assert_int_equal(get_count(&s), gets);
	/* Past every entry's age: the next lookup frees them all but its own. */
	set_clock(&s, 200);
	assert_int_equal(pin_of(&s, "j0", out, sizeof(out)), 1);
	assert_int_equal(cached_bytes(&s, &entries), one);
	assert_int_equal(entries, 1);
	/* A bound smaller than one record: it pins, and is not kept. */
	record_cache_free(s.cache);
	s.options.bytes_max = one - 1;
	assert_int_equal(record_cache_new(&s.options, &s.cache, NULL), 0);
	assert_int_equal(pin_of(&s, "j0", out, sizeof(out)), 1);
	assert_string_equal(out, "rack=r1");
	assert_int_equal(cached_bytes(&s, &entries), 0);
	assert_int_equal(entries, 0);
	teardown(&s);
}

static uint64_t elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - since->tv_sec) * 1000u + (uint64_t)(now.tv_nsec / 1000000) -
	       (uint64_t)(since->tv_nsec / 1000000);
}

struct timed_lookup {
	pthread_t thread;
	struct setup *s;
	const char *jobset;
	int rc;
	uint64_t ms;
	char out[1024];
};

static void *timed_lookup_main(void *arg)
{
	struct timed_lookup *t = arg;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	t->rc = pin_of(t->s, t->jobset, t->out, sizeof(t->out));
	t->ms = elapsed_ms(&start);
	return NULL;
}

/* An apiserver that hangs on the records of some JobSets (each GET cut by
 * the readers' 2 s timeout): another JobSet's pod is answered at once from
 * a reader of its own, never after the hanging read; a second pod of a
 * hanging JobSet waits for that read, not for a read of its own; a third
 * hanging JobSet, with every reader busy, is refused; and every answer
 * comes within the 3 s deadline (with 1 s for a busy machine). With one
 * lock around every read, the other JobSet's pod waited the whole 2 s and
 * the later ones of the hanging JobSets 2 s each, one after another. */
static void a_slow_read_holds_up_no_other_jobset_and_every_answer_comes_in_time(void **state)
{
	struct setup s;
	struct kube_client *second = NULL;
	struct kube_client *readers[2];
	struct kube_config cfg;
	struct timed_lookup t[4] = {
		{ .jobset = "slow-a" }, { .jobset = "slow-a" }, { .jobset = "slow-b" }, { .jobset = "slow-c" }
	};
	struct timespec start;
	char out[512];
	uint64_t fast_ms;

	(void)state;
	setup(&s);
	set_record(&s, "r1");
	snprintf(s.fake.slow, sizeof(s.fake.slow), "slow-");
	s.fake.timeout_ms = 2000;
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	cfg.max_retries = 0;
	assert_int_equal(kube_client_new(&cfg, &fake_transport, &s.fake, NULL, &second, NULL), 0);
	readers[0] = s.client;
	readers[1] = second;
	record_cache_free(s.cache);
	s.options.readers = readers;
	s.options.reader_count = 2;
	s.options.request_timeout_ms = 2000;
	s.options.deadline_ms = 3000;
	assert_int_equal(record_cache_new(&s.options, &s.cache, NULL), 0);
	/* slow-a takes one reader and hangs; a second pod of it waits for it. */
	for (size_t i = 0; i < 2; i++) {
		t[i].s = &s;
		assert_int_equal(pthread_create(&t[i].thread, NULL, timed_lookup_main, &t[i]), 0);
	}
	nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(pin_of(&s, "train", out, sizeof(out)), 1);
	fast_ms = elapsed_ms(&start);
	assert_string_equal(out, "rack=r1");
	/* slow-b takes the other reader; slow-c finds none and is refused. */
	for (size_t i = 2; i < 4; i++) {
		t[i].s = &s;
		assert_int_equal(pthread_create(&t[i].thread, NULL, timed_lookup_main, &t[i]), 0);
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i].thread, NULL), 0);
		assert_int_equal(t[i].rc, -1);
		if (t[i].ms > 3000 + 1000)
			fail_msg("the lookup of %s answered after %llu ms: %s", t[i].jobset,
				 (unsigned long long)t[i].ms, t[i].out);
		assert_non_null(strstr(t[i].out, t[i].jobset));
	}
	/* Either pod of slow-a may be the one whose read hangs (the two start
	 * together): that one says the request timed out. */
	if (!strstr(t[0].out, "request timed out") && !strstr(t[1].out, "request timed out"))
		fail_msg("no pod of slow-a says its read timed out: \"%s\", \"%s\"", t[0].out, t[1].out);
	assert_non_null(strstr(t[3].out, "every reader was busy"));
	/* Far below the 2 s the hanging read took. */
	if (fast_ms >= 1000)
		fail_msg("another JobSet's pod waited %llu ms for a hanging read",
			 (unsigned long long)fast_ms);
	record_cache_free(s.cache);
	s.cache = NULL;
	kube_client_free(second);
	teardown(&s);
}

/* The pod label of issue 34: mutating admission sees it before the
 * apiserver validates the pod, and the JobSet's name becomes the record's
 * path. Refused for its syntax, saying so, with no GET made. */
static void a_pod_labelled_with_a_path_is_refused_before_any_read(void **state)
{
	static const char *const names[] = { "../../kube-system/configmaps/victim?x=", "Train", "a/b",
					     "victim%2F", "" };
	struct setup s;
	struct webhook_options options = test_webhook_options();
	struct webhook *w = NULL;
	char *cause = NULL, body[2048];

	(void)state;
	setup(&s);
	set_record(&s, "r1");
	options.records = s.options;
	assert_int_equal(webhook_new(&options, &w, &cause), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct http_serve_reply reply = { 0 };
		cJSON *review, *message;

		snprintf(
			body, sizeof(body),
			"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			"\"uid\":\"r-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
			"\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
			"\"namespace\":\"ns\",\"operation\":\"CREATE\",\"userInfo\":{},"
			"\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
			"\"namespace\":\"ns\",\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"0\"},"
			"\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"%s\","
			"\"jobset.sigs.k8s.io/jobset-uid\":\"u1\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","
			"\"jobset.sigs.k8s.io/job-index\":\"0\",\"muster.dev/placement\":\"true\"}},"
			"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
			names[i]);
		webhook_pin(w, body, strlen(body), &reply);
		assert_int_equal(reply.status, 200);
		review = cJSON_ParseWithLength(reply.body, reply.body_len);
		assert_non_null(review);
		assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(review, "response"), "allowed")));
		message = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(review, "response"),
							 "status"),
			"message");
		assert_true(cJSON_IsString(message));
		if (!strstr(message->valuestring, "is not a JobSet's name") &&
		    !strstr(message->valuestring, "jobset-name"))
			fail_msg("name %zu: %s", i, message->valuestring);
		assert_null(strstr(message->valuestring, "kube-system"));
		cJSON_Delete(review);
		free(reply.body);
	}
	assert_int_equal(get_count(&s), 0);
	webhook_free(w);
	teardown(&s);
}

/* The JSON Patch of a /pin answer (base64 in response.patch), or NULL
 * when the answer carries none; `allowed` set from the answer. */
static cJSON *answer_patch(const struct http_serve_reply *reply, int *allowed)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	cJSON *review = cJSON_ParseWithLength(reply->body, reply->body_len), *patch = NULL;
	const cJSON *response = cJSON_GetObjectItemCaseSensitive(review, "response");
	const cJSON *encoded = cJSON_GetObjectItemCaseSensitive(response, "patch");
	char decoded[4096];
	size_t o = 0;
	unsigned bits = 0, have = 0;

	assert_non_null(review);
	*allowed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(response, "allowed"));
	if (cJSON_IsString(encoded)) {
		for (const char *c = encoded->valuestring; *c && *c != '=' && o + 1 < sizeof(decoded); c++) {
			const char *at = strchr(alphabet, *c);

			assert_non_null(at);
			bits = (bits << 6) | (unsigned)(at - alphabet);
			if ((have += 6) >= 8) {
				have -= 8;
				decoded[o++] = (char)((bits >> have) & 0xff);
			}
		}
		decoded[o] = '\0';
		patch = cJSON_Parse(decoded);
		assert_non_null(patch);
	}
	cJSON_Delete(review);
	return patch;
}

/* One Job CREATE through webhook_pin: its answer's patch (or NULL). */
static cJSON *pin_job_review(struct webhook *w, const char *spec, int *allowed)
{
	char body[2048];
	struct http_serve_reply reply = { 0 };
	cJSON *patch;

	snprintf(
		body, sizeof(body),
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
		"\"uid\":\"r-1\",\"kind\":{\"group\":\"batch\",\"version\":\"v1\",\"kind\":\"Job\"},"
		"\"resource\":{\"group\":\"batch\",\"version\":\"v1\",\"resource\":\"jobs\"},"
		"\"namespace\":\"ns\",\"name\":\"train-w-0\",\"operation\":\"CREATE\",\"userInfo\":{},"
		"\"object\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train-w-0\","
		"\"namespace\":\"ns\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"train\","
		"\"jobset.sigs.k8s.io/jobset-uid\":\"u1\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","
		"\"jobset.sigs.k8s.io/job-index\":\"0\",\"muster.dev/placement\":\"true\"}},\"spec\":{%s"
		"\"template\":{\"metadata\":{\"labels\":{\"muster.dev/placement\":\"true\"}},"
		"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}}",
		spec);
	webhook_pin(w, body, strlen(body), &reply);
	assert_int_equal(reply.status, 200);
	patch = answer_patch(&reply, allowed);
	free(reply.body);
	return patch;
}

/* 1 when `patch` holds an op at `path`. */
static int has_op(const cJSON *patch, const char *path)
{
	const cJSON *op;

	cJSON_ArrayForEach(op, patch)
	{
		if (strcmp(cJSON_GetObjectItemCaseSensitive(op, "path")->valuestring, path) == 0)
			return 1;
	}
	return 0;
}

/* The pin route's Job half, end to end in the webhook: a Job of 6 pods over
 * two racks gets its share (the rack of 4) on its pod template and the
 * annotation; a work queue (parallelism alone, no fixed pods) gets none;
 * a Job whose pods share one rack is pinned whole. */
static void the_pin_routes_job_half_gives_a_split_job_its_share_and_a_work_queue_none(void **state)
{
	struct setup s;
	struct webhook_options options = test_webhook_options();
	struct webhook *w = NULL;
	char *cause = NULL;
	cJSON *patch;
	int allowed;

	(void)state;
	setup(&s);
	snprintf(
		s.fake.record, sizeof(s.fake.record),
		"{\"uid\":\"u1\",\"attempt\":0,\"replicatedJobs\":{\"w\":[[[0,1,\"rack=r1\"],[2,5,\"rack=r2\"]]]}}");
	options.records = s.options;
	assert_int_equal(webhook_new(&options, &w, &cause), 0);

	patch = pin_job_review(w, "\"completions\":6,\"parallelism\":6,", &allowed);
	assert_true(allowed);
	assert_non_null(patch);
	assert_true(has_op(patch, "/spec/template/spec/nodeSelector/rack"));
	assert_true(
		has_op(patch, "/spec/template/metadata/annotations/" MUSTER_ANNOTATION_JOB_SELECTOR_POINTER));
	assert_false(has_op(patch, "/spec/template/metadata/labels/" MUSTER_LABEL_JOB_PINNED_POINTER));
	{
		char *text = cJSON_PrintUnformatted(patch);

		assert_non_null(strstr(text, "\"r2\""));
		assert_null(strstr(text, "\"r1\""));
		free(text);
	}
	cJSON_Delete(patch);

	/* A work queue: let through with no patch at all. */
	patch = pin_job_review(w, "\"parallelism\":6,", &allowed);
	assert_true(allowed);
	assert_null(patch);

	/* Its first 2 pods only (completions 2): one rack, pinned whole. */
	patch = pin_job_review(w, "\"completions\":2,", &allowed);
	assert_true(allowed);
	assert_true(has_op(patch, "/spec/template/metadata/labels/" MUSTER_LABEL_JOB_PINNED_POINTER));
	assert_false(
		has_op(patch, "/spec/template/metadata/annotations/" MUSTER_ANNOTATION_JOB_SELECTOR_POINTER));
	cJSON_Delete(patch);
	webhook_free(w);
	teardown(&s);
}

/* A route's answer to `len` bytes of review: a denial (HTTP 200, allowed
 * false) with status.code `code` and `words` in its message; and not one
 * byte of the answer is outside printable ASCII (nothing of the body's
 * echoed raw). */
static void expect_denied_in_ascii(void (*route)(void *, const char *, size_t, struct http_serve_reply *),
				   struct webhook *w, const char *body, size_t len, int code,
				   const char *words)
{
	struct http_serve_reply reply = { 0 };
	cJSON *review, *response, *status, *message;

	route(w, body, len, &reply);
	assert_int_equal(reply.status, 200);
	assert_non_null(reply.body);
	for (size_t i = 0; i < reply.body_len; i++)
		if ((unsigned char)reply.body[i] < 0x20 || (unsigned char)reply.body[i] > 0x7e)
			fail_msg("the answer holds byte 0x%02x at %zu: %s", (unsigned char)reply.body[i], i,
				 reply.body);
	review = cJSON_ParseWithLength(reply.body, reply.body_len);
	response = cJSON_GetObjectItemCaseSensitive(review, "response");
	status = cJSON_GetObjectItemCaseSensitive(response, "status");
	message = cJSON_GetObjectItemCaseSensitive(status, "message");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(response, "uid")->valuestring, "r-1");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(response, "allowed")));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(status, "code")->valueint, code);
	assert_true(cJSON_IsString(message));
	if (!strstr(message->valuestring, words))
		fail_msg("message \"%s\" does not say \"%s\"", message->valuestring, words);
	cJSON_Delete(review);
	free(reply.body);
}

/* Issue 34: a review whose text is not UTF-8 (a metadata.name of raw
 * FF FE C0 80, a pod label of raw FF) or holds a raw NUL inside a string
 * is denied by its uid at /mutate, /validate and /pin, with where the bad
 * byte is and never the byte itself. */
static void reviews_that_are_not_utf8_or_hold_nul_are_denied_without_echoing_a_byte(void **state)
{
	static const char jobset[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
		"\"uid\":\"r-1\",\"kind\":{\"group\":\"jobset.x-k8s.io\",\"version\":\"v1alpha2\",\"kind\":\"JobSet\"},"
		"\"namespace\":\"ns\",\"operation\":\"CREATE\",\"userInfo\":{},"
		"\"object\":{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{"
		"\"name\":\"NAME\",\"namespace\":\"ns\",\"annotations\":{\"muster.dev/group-scheduling\":\"true\"}},"
		"\"spec\":{\"replicatedJobs\":[{\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{"
		"\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}]}}}}";
	static const char pod[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
		"\"uid\":\"r-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
		"\"namespace\":\"ns\",\"operation\":\"CREATE\",\"userInfo\":{},"
		"\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"train-w-0-\","
		"\"namespace\":\"ns\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"NAME\","
		"\"jobset.sigs.k8s.io/jobset-uid\":\"u1\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"w\","
		"\"jobset.sigs.k8s.io/job-index\":\"0\",\"batch.kubernetes.io/job-completion-index\":\"0\","
		"\"muster.dev/placement\":\"true\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}";
	struct setup s;
	struct webhook_options options = test_webhook_options();
	struct webhook *w = NULL;
	char *cause = NULL, body[2048];
	size_t at, len;

	(void)state;
	setup(&s);
	options.records = s.options;
	assert_int_equal(webhook_new(&options, &w, &cause), 0);

	/* metadata.name = FF FE C0 80 */
	len = sizeof(jobset) - 1;
	memcpy(body, jobset, len);
	at = (size_t)(strstr(body, "NAME") - body);
	memcpy(body + at, "\xff\xfe\xc0\x80", 4);
	{
		char words[64];

		snprintf(words, sizeof(words), "not valid UTF-8 (byte 0xFF at offset %zu)", at);
		expect_denied_in_ascii(webhook_mutate, w, body, len, 400, words);
		expect_denied_in_ascii(webhook_validate, w, body, len, 400, words);
	}
	/* A raw NUL inside the name: "NA\0E". */
	memcpy(body, jobset, len);
	body[at + 2] = '\0';
	expect_denied_in_ascii(webhook_mutate, w, body, len, 400, "NUL byte");

	/* /pin: a pod whose JobSet label holds a raw FF (the name the record
	 * would be looked up by), and one with a raw NUL. */
	len = sizeof(pod) - 1;
	memcpy(body, pod, len);
	at = (size_t)(strstr(body, "NAME") - body);
	memcpy(body + at, "tr\xffn", 4);
	expect_denied_in_ascii(webhook_pin, w, body, len, 400, "not valid UTF-8 (byte 0xFF at offset");
	body[at + 2] = '\0';
	expect_denied_in_ascii(webhook_pin, w, body, len, 400, "NUL byte");
	assert_int_equal(get_count(&s), 0); /* nothing was looked up for them */

	/* Without a uid to answer by, it is HTTP 400, in ASCII too. */
	{
		struct http_serve_reply reply = { 0 };
		const char *no_uid = "{\"kind\":\"AdmissionReview\",\"a\":\"\xc0\x80\"}";

		webhook_mutate(w, no_uid, strlen(no_uid), &reply);
		assert_int_equal(reply.status, 400);
		assert_non_null(strstr(reply.body, "not valid UTF-8 (byte 0xC0 at offset 31)"));
		for (size_t i = 0; i < reply.body_len; i++)
			assert_true((unsigned char)reply.body[i] < 0x80);
		free(reply.body);
	}
	webhook_free(w);
	teardown(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_pod_is_pinned_only_by_its_own_attempts_record),
		cmocka_unit_test(records_of_before_attempts_and_of_other_jobsets),
		cmocka_unit_test(a_job_is_pinned_whole_only_when_one_domain_holds_all_its_pods),
		cmocka_unit_test(lookups_that_miss_together_make_one_get),
		cmocka_unit_test(
			a_record_near_its_expiry_is_read_again_by_one_lookup_while_the_others_use_it),
		cmocka_unit_test(a_read_ahead_that_fails_is_not_retried_before_expiry),
		cmocka_unit_test(an_entry_counts_from_when_its_get_was_sent),
		cmocka_unit_test(the_pin_routes_job_half_gives_a_split_job_its_share_and_a_work_queue_none),
		cmocka_unit_test(configmaps_muster_did_not_write_pin_nothing_and_are_not_kept),
		cmocka_unit_test(the_cache_holds_at_most_its_bytes_and_frees_what_expired),
		cmocka_unit_test(a_slow_read_holds_up_no_other_jobset_and_every_answer_comes_in_time),
		cmocka_unit_test(a_pod_labelled_with_a_path_is_refused_before_any_read),
		cmocka_unit_test(reviews_that_are_not_utf8_or_hold_nul_are_denied_without_echoing_a_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
