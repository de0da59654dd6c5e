/*
 * Unit tests of kube_informer: the keyed record and its callbacks fed by
 * hand (add, update, delete, a re-list that drops what it did not contain,
 * the caller's values kept and released: the leak check of make check sees
 * a value kept twice or lost), and kube_informer_run over a fake transport
 * whose stream answers 410 Gone, which makes it list again.
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
#include "kube_informer.h"
#include "kube_transport.h"

/* What the callbacks saw, as "add ns/a 1 v=1" lines. */
struct seen {
	char lines[32][128];
	size_t count;
	int begins, ends;
	int end_after; /* on_relist_end returns 1 (stop) at this end, 0: never */
};

/* The value kept: the object's data.v as a number. */
struct value {
	int v;
};

static void *keep(void *arg, const cJSON *object)
{
	const cJSON *v =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(object, "data"), "v");
	struct value *value;

	(void)arg;
	if (!cJSON_IsNumber(v))
		return NULL; /* nothing kept */
	value = malloc(sizeof(*value));
	if (value)
		value->v = v->valueint;
	return value;
}

static void release(void *arg, void *value)
{
	(void)arg;
	free(value);
}

static int on_change(void *arg, const struct kube_informer_event *event)
{
	static const char *const names[] = { "add", "update", "delete" };
	struct seen *seen = arg;
	const struct value *value = event->value, *old = event->old_value;

	if (seen->count < 32)
		snprintf(seen->lines[seen->count++], sizeof(seen->lines[0]), "%s%s %s/%s %s<-%s v=%d<-%d",
			 names[event->change], event->relist ? " relist" : "", event->namespace, event->name,
			 event->resource_version, event->old_resource_version, value ? value->v : -1,
			 old ? old->v : -1);
	return 0;
}

static int on_relist_begin(void *arg, const char *reason)
{
	(void)reason;
	((struct seen *)arg)->begins++;
	return 0;
}

static int on_relist_end(void *arg, const char *resource_version)
{
	struct seen *seen = arg;

	(void)resource_version;
	seen->ends++;
	return seen->end_after && seen->ends >= seen->end_after ? 1 : 0;
}

static struct kube_informer *informer_for(struct seen *seen)
{
	const struct kube_informer_handlers handlers = { keep,		release, on_change, on_relist_begin,
							 on_relist_end, seen };
	struct kube_informer *informer = NULL;
	char *cause = NULL;

	assert_int_equal(kube_informer_new(&handlers, &informer, &cause), 0);
	assert_null(cause);
	return informer;
}

static cJSON *object(const char *namespace, const char *name, const char *rv, int v)
{
	char text[256];
	cJSON *o;

	if (v >= 0)
		snprintf(text, sizeof(text),
			 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\"},"
			 "\"data\":{\"v\":%d}}",
			 namespace, name, rv, v);
	else
		snprintf(text, sizeof(text),
			 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\"}}",
			 namespace, name, rv);
	o = cJSON_Parse(text);
	assert_non_null(o);
	return o;
}

static void item(struct kube_informer *informer, const char *namespace, const char *name, const char *rv,
		 int v)
{
	cJSON *o = object(namespace, name, rv, v);

	assert_int_equal(kube_informer_item(informer, o), 0);
	cJSON_Delete(o);
}

static void event(struct kube_informer *informer, enum kube_watch_type type, const char *namespace,
		  const char *name, const char *rv, int v)
{
	cJSON *o = object(namespace, name, rv, v);

	assert_int_equal(kube_informer_event(informer, type, o), 0);
	cJSON_Delete(o);
}

static void adds_updates_and_deletes_by_key(void **state)
{
	struct seen seen = { 0 };
	struct kube_informer *informer = informer_for(&seen);
	const struct value *value;

	(void)state;
	assert_int_equal(kube_informer_relist_begin(informer, "test"), 0);
	item(informer, "ns", "a", "1", 1);
	item(informer, "other", "a", "2", 2); /* same name, other namespace: another key */
	assert_int_equal(kube_informer_relist_end(informer, "2"), 0);
	assert_string_equal(kube_informer_resource_version(informer), "2");
	event(informer, KUBE_WATCH_MODIFIED, "ns", "a", "3", 10);
	event(informer, KUBE_WATCH_ADDED, "ns", "b", "4", -1); /* nothing kept but the key */
	event(informer, KUBE_WATCH_DELETED, "other", "a", "5", 2);
	event(informer, KUBE_WATCH_DELETED, "ns", "zz", "6", 1); /* never known: told anyway */
	assert_string_equal(kube_informer_resource_version(informer), "6");
	assert_int_equal(seen.begins, 1);
	assert_int_equal(seen.ends, 1);
	assert_int_equal(seen.count, 6);
	assert_string_equal(seen.lines[0], "add relist ns/a 1<- v=1<--1");
	assert_string_equal(seen.lines[1], "add relist other/a 2<- v=2<--1");
	assert_string_equal(seen.lines[2], "update ns/a 3<-1 v=10<-1");
	assert_string_equal(seen.lines[3], "add ns/b 4<- v=-1<--1");
	assert_string_equal(seen.lines[4], "delete other/a 5<-2 v=-1<-2");
	assert_string_equal(seen.lines[5], "delete ns/zz 6<- v=-1<--1");
	assert_int_equal(kube_informer_count(informer), 2);
	value = kube_informer_get(informer, "ns", "a");
	assert_non_null(value);
	assert_int_equal(value->v, 10);
	assert_null(kube_informer_get(informer, "ns", "b"));
	assert_null(kube_informer_get(informer, "other", "a"));
	/* Kept with no value is kept all the same. */
	assert_true(kube_informer_has(informer, "ns", "b"));
	assert_true(kube_informer_has(informer, "ns", "a"));
	assert_false(kube_informer_has(informer, "other", "a"));
	assert_false(kube_informer_has(informer, "ns", "zz"));
	kube_informer_free(informer);
}

/* A re-list: what it contains is updated, what it does not is deleted (no
 * object, relist set) before relist_end; a LIST that fails midway and
 * starts again still ends with the right set. */
static void a_relist_deletes_what_it_did_not_contain(void **state)
{
	struct seen seen = { 0 };
	struct kube_informer *informer = informer_for(&seen);

	(void)state;
	kube_informer_relist_begin(informer, "test");
	item(informer, "ns", "a", "1", 1);
	item(informer, "ns", "b", "2", 2);
	item(informer, "ns", "c", "3", 3);
	kube_informer_relist_end(informer, "3");
	event(informer, KUBE_WATCH_ADDED, "ns", "d", "4", 4);
	kube_informer_relist_begin(informer, "test");
	item(informer, "ns", "a", "1", 1); /* failed midway: begins again */
	kube_informer_relist_begin(informer, "test");
	item(informer, "ns", "b", "5", 5);
	kube_informer_relist_end(informer, "9");
	assert_int_equal(seen.begins, 3);
	assert_int_equal(seen.ends, 2);
	assert_int_equal(kube_informer_count(informer), 1);
	assert_non_null(kube_informer_get(informer, "ns", "b"));
	assert_int_equal(seen.count, 9);
	assert_string_equal(seen.lines[4], "update relist ns/a 1<-1 v=1<-1");
	assert_string_equal(seen.lines[5], "update relist ns/b 5<-2 v=5<-2");
	/* The three not in the last LIST, in table order. */
	for (size_t i = 6; i < 9; i++)
		assert_non_null(strstr(seen.lines[i], "delete relist ns/"));
	assert_string_equal(kube_informer_resource_version(informer), "9");
	kube_informer_free(informer);
}

static void objects_without_a_name_are_skipped(void **state)
{
	struct seen seen = { 0 };
	struct kube_informer *informer = informer_for(&seen);
	cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ns\"}}");

	(void)state;
	assert_int_equal(kube_informer_event(informer, KUBE_WATCH_ADDED, o), 0);
	assert_int_equal(seen.count, 0);
	assert_int_equal(kube_informer_count(informer), 0);
	cJSON_Delete(o);
	kube_informer_free(NULL);
	kube_informer_free(informer);
}

/* ---- kube_informer_run over a fake transport ---- */

struct fake {
	int lists; /* LISTs answered */
};

static int respond(struct kube_response *resp, long status, const char *body)
{
	resp->status = status;
	resp->body_len = strlen(body);
	resp->body = malloc(resp->body_len + 1);
	if (!resp->body)
		return MUSTER_ENOMEM;
	memcpy(resp->body, body, resp->body_len + 1);
	return MUSTER_OK;
}

static int fake_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct fake *f = ctx;

	(void)req;
	(void)cause;
	if (f->lists++ == 0)
		return respond(
			resp, 200,
			"{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
			"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"1\"},"
			"\"data\":{\"v\":1}},"
			"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"b\",\"resourceVersion\":\"2\"},"
			"\"data\":{\"v\":2}}]}");
	return respond(resp, 200,
		       "{\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
		       "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"b\",\"resourceVersion\":\"12\"},"
		       "\"data\":{\"v\":12}},"
		       "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\",\"resourceVersion\":\"13\"},"
		       "\"data\":{\"v\":13}}]}");
}

/* The first stream: one MODIFIED, then 410 Gone as an ERROR event. */
static int fake_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	static const char modified[] =
		"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
		"\"resourceVersion\":\"11\"},\"data\":{\"v\":11}}}";
	static const char gone[] = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
				   "\"reason\":\"Expired\",\"message\":\"too old resource version\"}}";

	(void)ctx;
	(void)req;
	(void)max_line;
	(void)idle_timeout_s;
	(void)stop;
	(void)error_body;
	(void)cause;
	*status = 200;
	if (on_line(arg, modified, strlen(modified)) == 0)
		on_line(arg, gone, strlen(gone));
	return MUSTER_OK;
}

static const struct kube_transport fake_transport = { fake_send, fake_stream };

static void gone_lists_again_and_deletes_what_went(void **state)
{
	struct seen seen = { .end_after = 2 };
	struct kube_informer *informer = informer_for(&seen);
	struct fake fake = { 0 };
	struct kube_client *client = NULL;
	struct kube_config cfg;
	atomic_int stop = 0;
	char *cause = NULL;

	(void)state;
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	assert_int_equal(kube_client_new(&cfg, &fake_transport, &fake, NULL, &client, &cause), 0);
	assert_int_equal(kube_informer_run(informer, client, "/api/v1/configmaps", NULL, 500, &stop, &cause),
			 0);
	assert_null(cause);
	assert_int_equal(fake.lists, 2);
	assert_int_equal(seen.begins, 2);
	assert_int_equal(seen.ends, 2);
	assert_int_equal(kube_informer_count(informer), 2);
	assert_null(kube_informer_get(informer, "ns", "a"));
	assert_int_equal(((struct value *)kube_informer_get(informer, "ns", "b"))->v, 12);
	assert_int_equal(((struct value *)kube_informer_get(informer, "ns", "c"))->v, 13);
	assert_string_equal(seen.lines[2], "update ns/a 11<-1 v=11<-1");
	assert_string_equal(seen.lines[5], "delete relist ns/a <-11 v=-1<-11");
	assert_string_equal(kube_informer_resource_version(informer), "20");
	kube_client_free(client);
	kube_informer_free(informer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(adds_updates_and_deletes_by_key),
		cmocka_unit_test(a_relist_deletes_what_it_did_not_contain),
		cmocka_unit_test(objects_without_a_name_are_skipped),
		cmocka_unit_test(gone_lists_again_and_deletes_what_went),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
