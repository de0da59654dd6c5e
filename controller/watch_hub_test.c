/*
 * Unit tests of watch_hub against a fake transport: a LIST answered from a
 * fixed set of pods, a watch stream of scripted lines. Checks what each
 * consumer's informer is told: only what its own selectors would have
 * shown, an object that leaves them told as deleted, one request per LIST
 * and per stream whatever the number of consumers, the server-side
 * selectors when every consumer asks the same, and a consumer joining later
 * seen by the others as one re-list.
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

#include "kjson.h"
#include "kube_config.h"
#include "kube_informer.h"
#include "kube_transport.h"
#include "watch_hub.h"

#define MAX_LOG 32

/* p1: labelled, not bound; p2: bound, not labelled; p3: both. */
static const char LIST[] =
	"{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p1\",\"resourceVersion\":\"1\",\"labels\":{\"x\":\"1\"}}},"
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p2\",\"resourceVersion\":\"2\"},\"spec\":{\"nodeName\":\"n\"}},"
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p3\",\"resourceVersion\":\"3\",\"labels\":{\"x\":\"1\"}},"
	"\"spec\":{\"nodeName\":\"n\"}}]}";

/* p3 loses its label; p4 comes, labelled and bound. */
static const char *const LINES[] = {
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p3\","
	"\"resourceVersion\":\"11\"},\"spec\":{\"nodeName\":\"n\"}}}",
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p4\","
	"\"resourceVersion\":\"12\",\"labels\":{\"x\":\"1\"}},\"spec\":{\"nodeName\":\"n\"}}}",
};

struct fake {
	pthread_mutex_t lock;
	char requests[MAX_LOG][256];
	size_t count, streams;
	int lines_sent; /* the lines go to the first stream only */
};

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void note(struct fake *f, const char *what, const char *path)
{
	pthread_mutex_lock(&f->lock);
	if (f->count < MAX_LOG)
		snprintf(f->requests[f->count++], sizeof(f->requests[0]), "%s %s", what, path);
	pthread_mutex_unlock(&f->lock);
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	(void)cause;
	note(ctx, "LIST", req->path);
	resp->status = 200;
	resp->body = strdup(LIST);
	resp->body_len = strlen(LIST);
	return resp->body ? 0 : -1;
}

static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	struct fake *f = ctx;
	int send;

	(void)max_line;
	(void)idle_timeout_s;
	(void)error_body;
	(void)cause;
	note(f, "WATCH", req->path);
	pthread_mutex_lock(&f->lock);
	f->streams++;
	send = !f->lines_sent;
	f->lines_sent = 1;
	pthread_mutex_unlock(&f->lock);
	*status = 200;
	for (size_t i = 0; send && i < sizeof(LINES) / sizeof(LINES[0]); i++)
		on_line(arg, LINES[i], strlen(LINES[i]));
	while (!atomic_load(stop))
		pause_ms(5);
	return 0;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

/* What a consumer was told, one line each: "add ns/p1", "relist <reason>"... */
struct seen {
	pthread_mutex_t lock;
	char lines[32][96];
	size_t count;
	int lists;
};

static void seen_add(struct seen *seen, const char *line)
{
	pthread_mutex_lock(&seen->lock);
	if (seen->count < 32)
		snprintf(seen->lines[seen->count++], sizeof(seen->lines[0]), "%s", line);
	pthread_mutex_unlock(&seen->lock);
}

static int on_change(void *arg, const struct kube_informer_event *event)
{
	static const char *const names[] = { "add", "update", "delete" };
	char line[96];

	snprintf(line, sizeof(line), "%s %s/%s", names[event->change], event->namespace, event->name);
	seen_add(arg, line);
	return 0;
}

static int on_relist_begin(void *arg, const char *reason)
{
	char line[96];

	snprintf(line, sizeof(line), "relist %s", reason);
	seen_add(arg, line);
	return 0;
}

static int on_relist_end(void *arg, const char *resource_version)
{
	struct seen *seen = arg;

	(void)resource_version;
	pthread_mutex_lock(&seen->lock);
	seen->lists++;
	pthread_mutex_unlock(&seen->lock);
	return 0;
}

static int has(struct seen *seen, const char *line)
{
	int found = 0;

	pthread_mutex_lock(&seen->lock);
	for (size_t i = 0; i < seen->count; i++)
		found |= strcmp(seen->lines[i], line) == 0;
	pthread_mutex_unlock(&seen->lock);
	return found;
}

static int labelled(void *arg, const cJSON *object)
{
	(void)arg;
	return kjson_member(kjson_member(kjson_member(object, "metadata"), "labels"), "x") != NULL;
}

static int bound(void *arg, const cJSON *object)
{
	const cJSON *node = kjson_member(kjson_member(object, "spec"), "nodeName");

	(void)arg;
	return cJSON_IsString(node) && node->valuestring[0];
}

struct consumer {
	struct seen seen;
	struct kube_informer *informer;
};

static void consumer_init(struct consumer *c)
{
	const struct kube_informer_handlers handlers = { .on_change = on_change,
							 .on_relist_begin = on_relist_begin,
							 .on_relist_end = on_relist_end,
							 .arg = &c->seen };

	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->seen.lock, NULL);
	assert_int_equal(kube_informer_new(&handlers, &c->informer, NULL), 0);
}

struct hub_run {
	struct fake fake;
	struct kube_client *client;
	struct watch_hub *hub;
	atomic_int stop;
	struct consumer a, b;
};

static void run_init(struct hub_run *r)
{
	struct kube_config cfg;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->fake.lock, NULL);
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	assert_int_equal(kube_client_new(&cfg, &fake_transport, &r->fake, NULL, &r->client, NULL), 0);
	assert_int_equal(watch_hub_new(r->client, "/api/v1/pods", 100, &r->hub, NULL), 0);
	consumer_init(&r->a);
	consumer_init(&r->b);
}

static void run_finish(struct hub_run *r)
{
	atomic_store(&r->stop, 1);
	watch_hub_stop(r->hub);
	assert_int_equal(watch_hub_wait(r->hub, NULL), 0);
	watch_hub_free(r->hub);
	kube_informer_free(r->a.informer);
	kube_informer_free(r->b.informer);
	kube_client_free(r->client);
}

static int wait_for(struct seen *seen, const char *line)
{
	for (int i = 0; i < 300; i++) {
		if (has(seen, line))
			return 1;
		pause_ms(10);
	}
	return 0;
}

static size_t requests(struct fake *f, const char *prefix)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->count; i++)
		n += strncmp(f->requests[i], prefix, strlen(prefix)) == 0;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* Two consumers asking different things: one LIST and one stream of every
 * pod; each told only its own, and p3, which loses its label, told deleted
 * to the one that asked for the label and modified to the other. */
static void each_consumer_sees_what_its_own_watch_would(void **state)
{
	struct hub_run *r = malloc(sizeof(*r));
	struct watch_hub_consumer_spec a = { .path = "/api/v1/namespaces/ns/pods",
					     .selectors = { .label = "x" },
					     .wants = labelled };
	struct watch_hub_consumer_spec b = { .path = "/api/v1/pods",
					     .selectors = { .field = "spec.nodeName!=" },
					     .wants = bound };

	(void)state;
	assert_non_null(r);
	run_init(r);
	a.informer = r->a.informer;
	b.informer = r->b.informer;
	assert_int_equal(watch_hub_add(r->hub, &a, 1), 0);
	assert_int_equal(watch_hub_add(r->hub, &b, 1), 1);
	assert_int_equal(watch_hub_start(r->hub, &r->stop, NULL), 0);
	assert_true(wait_for(&r->a.seen, "add ns/p4"));
	assert_true(wait_for(&r->b.seen, "add ns/p4"));
	/* A: the labelled pods; p3 deleted when its label goes. */
	assert_true(has(&r->a.seen, "relist first list"));
	assert_true(has(&r->a.seen, "add ns/p1"));
	assert_false(has(&r->a.seen, "add ns/p2"));
	assert_true(has(&r->a.seen, "add ns/p3"));
	assert_true(has(&r->a.seen, "delete ns/p3"));
	assert_false(kube_informer_has(r->a.informer, "ns", "p3"));
	/* B: the bound ones; p3 only modified. */
	assert_false(has(&r->b.seen, "add ns/p1"));
	assert_true(has(&r->b.seen, "add ns/p2"));
	assert_true(has(&r->b.seen, "update ns/p3"));
	assert_false(has(&r->b.seen, "delete ns/p3"));
	/* One LIST and one stream, of every pod, no selector. */
	assert_int_equal(requests(&r->fake, "LIST"), 1);
	assert_int_equal(requests(&r->fake, "WATCH"), 1);
	assert_int_equal(requests(&r->fake, "LIST /api/v1/pods?limit=100"), 1);
	run_finish(r);
	free(r);
}

/* Two consumers asking the same: the server is asked that (its selector),
 * once. */
static void the_same_question_is_asked_once_as_is(void **state)
{
	struct hub_run *r = malloc(sizeof(*r));
	struct watch_hub_consumer_spec spec = { .path = "/api/v1/namespaces/ns/pods",
						.selectors = { .label = "x" },
						.wants = labelled };

	(void)state;
	assert_non_null(r);
	run_init(r);
	spec.informer = r->a.informer;
	assert_int_equal(watch_hub_add(r->hub, &spec, 1), 0);
	spec.informer = r->b.informer;
	assert_int_equal(watch_hub_add(r->hub, &spec, 1), 1);
	assert_int_equal(watch_hub_start(r->hub, &r->stop, NULL), 0);
	assert_true(wait_for(&r->a.seen, "add ns/p4"));
	assert_true(wait_for(&r->b.seen, "add ns/p4"));
	/* Unfiltered: the (fake) server's answer is taken as it comes. */
	assert_true(has(&r->b.seen, "add ns/p2"));
	assert_int_equal(requests(&r->fake, "LIST /api/v1/namespaces/ns/pods?limit=100&labelSelector=x"), 1);
	assert_int_equal(requests(&r->fake, "LIST"), 1);
	assert_int_equal(requests(&r->fake, "WATCH"), 1);
	run_finish(r);
	free(r);
}

/* B joins after the start: the watch begins again, wider; A sees one
 * re-list, saying why; B its first LIST. */
static void a_consumer_joining_later_restarts_the_watch_once(void **state)
{
	struct hub_run *r = malloc(sizeof(*r));
	struct watch_hub_consumer_spec a = { .path = "/api/v1/namespaces/ns/pods",
					     .selectors = { .label = "x" },
					     .wants = labelled };
	struct watch_hub_consumer_spec b = { .path = "/api/v1/pods",
					     .selectors = { .field = "spec.nodeName!=" },
					     .wants = bound };
	int index;

	(void)state;
	assert_non_null(r);
	run_init(r);
	a.informer = r->a.informer;
	b.informer = r->b.informer;
	assert_int_equal(watch_hub_add(r->hub, &a, 1), 0);
	assert_true((index = watch_hub_add(r->hub, &b, 0)) == 1);
	assert_int_equal(watch_hub_start(r->hub, &r->stop, NULL), 0);
	assert_true(wait_for(&r->a.seen, "add ns/p4"));
	assert_int_equal(r->b.seen.count, 0);
	watch_hub_join(r->hub, index);
	assert_true(wait_for(&r->a.seen, "relist a consumer joined the watch"));
	assert_true(wait_for(&r->b.seen, "relist first list"));
	for (int i = 0; i < 300 && r->b.seen.lists == 0; i++)
		pause_ms(10);
	assert_true(has(&r->b.seen, "add ns/p2"));
	assert_int_equal(requests(&r->fake, "WATCH"), 2);
	assert_int_equal(requests(&r->fake, "LIST /api/v1/namespaces/ns/pods?limit=100&labelSelector=x"), 1);
	assert_int_equal(requests(&r->fake, "LIST /api/v1/pods?limit=100"), 1);
	run_finish(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_consumer_sees_what_its_own_watch_would),
		cmocka_unit_test(the_same_question_is_asked_once_as_is),
		cmocka_unit_test(a_consumer_joining_later_restarts_the_watch_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
