/*
 * End-to-end tests of the Kubernetes client on the real local control plane
 * (e2e/cluster/up.sh): kubeconfig loading, the libcurl transport with TLS,
 * and every client call against real ConfigMaps in a fresh namespace. They
 * run only when MUSTER_KUBECONFIG names the admin kubeconfig and are skipped
 * otherwise, so the unit suite never needs a cluster.
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

/* A transport that forwards to libcurl and remembers the paths it saw, so
 * that the test can check how a list was paginated. */
struct recorder {
	struct kube_curl *curl;
	unsigned continues; /* requests carrying a continue token */
};

static int rec_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct recorder *r = ctx;

	if (strstr(req->path, "continue="))
		r->continues++;
	return kube_curl_transport.send(r->curl, req, resp, cause);
}

static int rec_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		      const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		      char **error_body, char **cause)
{
	struct recorder *r = ctx;

	return kube_curl_transport.stream(r->curl, req, max_line, idle_timeout_s, stop, on_line, arg, status,
					  error_body, cause);
}

static const struct kube_transport rec_ops = { rec_send, rec_stream };

struct env {
	struct kube_config cfg;
	struct recorder rec;
	struct kube_client *client;
	char ns[64];
	char base[128]; /* /api/v1/namespaces/<ns>/configmaps */
};

static void check(int err, char *cause, const char *what)
{
	if (err) {
		fail_msg("%s: %s: %s", what, muster_err_name(err), cause ? cause : "");
	}
	free(cause);
}

static int open_client(const struct kube_config *cfg, struct recorder *rec, struct kube_client **client)
{
	char *cause = NULL;
	int err;

	memset(rec, 0, sizeof(*rec));
	err = kube_curl_new(cfg, &rec->curl, &cause);
	check(err, cause, "kube_curl_new");
	cause = NULL;
	err = kube_client_new(cfg, &rec_ops, rec, NULL, client, &cause);
	check(err, cause, "kube_client_new");
	return 0;
}

static int setup(void **state)
{
	const char *path = getenv("MUSTER_KUBECONFIG");
	struct env *e;
	char *cause = NULL;
	cJSON *ns;
	int err;

	if (!path || !path[0]) {
		*state = NULL;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	assert_non_null(e);
	err = kube_config_from_kubeconfig(path, NULL, &e->cfg, &cause);
	check(err, cause, "kube_config_from_kubeconfig");
	open_client(&e->cfg, &e->rec, &e->client);
	snprintf(e->ns, sizeof(e->ns), "kube-e2e-%ld-%ld", (long)getpid(), (long)time(NULL) % 100000);
	snprintf(e->base, sizeof(e->base), "/api/v1/namespaces/%s/configmaps", e->ns);
	ns = cJSON_CreateObject();
	cJSON_AddStringToObject(ns, "apiVersion", "v1");
	cJSON_AddStringToObject(ns, "kind", "Namespace");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(ns, "metadata"), "name", e->ns);
	cause = NULL;
	err = kube_create(e->client, "/api/v1/namespaces", ns, NULL, &cause);
	cJSON_Delete(ns);
	check(err, cause, "create namespace");
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
	kube_curl_free(e->rec.curl);
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

static cJSON *configmap(const char *name, const char *label, const char *value)
{
	cJSON *cm = cJSON_CreateObject(), *meta, *labels, *data;

	cJSON_AddStringToObject(cm, "apiVersion", "v1");
	cJSON_AddStringToObject(cm, "kind", "ConfigMap");
	meta = cJSON_AddObjectToObject(cm, "metadata");
	cJSON_AddStringToObject(meta, "name", name);
	labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON_AddStringToObject(labels, "app", label);
	data = cJSON_AddObjectToObject(cm, "data");
	cJSON_AddStringToObject(data, "k", value);
	return cm;
}

static const char *data_value(const cJSON *cm, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "data"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int count_item(void *arg, const cJSON *item)
{
	(void)item;
	(*(int *)arg)++;
	return 0;
}

struct race {
	struct env *e;
	int calls;
};

/* The first time, someone else changes the object between our GET and PUT. */
static int mutate_with_race(void *arg, cJSON *object)
{
	struct race *r = arg;
	char path[256], *cause = NULL;

	r->calls++;
	if (r->calls == 1) {
		snprintf(path, sizeof(path), "%s/cm-0", r->e->base);
		check(kube_patch(r->e->client, path, KUBE_PATCH_MERGE, "{\"data\":{\"other\":\"writer\"}}",
				 NULL, &cause),
		      cause, "racing patch");
	}
	cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(object, "data"), "k",
				  cJSON_CreateString("updated"));
	return 0;
}

static void crud_list_patch_update(void **state)
{
	struct env *e = *state;
	struct kube_selectors sel = { "app=kube-e2e", NULL };
	struct race race = { e, 0 };
	char path[256], *cause = NULL, *rv = NULL;
	cJSON *obj = NULL;
	int count = 0;

	SKIP_WITHOUT_CLUSTER(e);
	for (int i = 0; i < 5; i++) {
		char name[16];
		cJSON *cm;

		snprintf(name, sizeof(name), "cm-%d", i);
		cm = configmap(name, "kube-e2e", "v1");
		check(kube_create(e->client, e->base, cm, NULL, &cause), cause, "create");
		cause = NULL;
		/* Creating it again is a conflict. */
		if (i == 0) {
			assert_int_equal(kube_create(e->client, e->base, cm, NULL, &cause), MUSTER_ECONFLICT);
			assert_non_null(strstr(cause, "already exists"));
			free(cause);
			cause = NULL;
		}
		cJSON_Delete(cm);
	}
	/* One that the selector must leave out. */
	obj = configmap("other", "unrelated", "v1");
	check(kube_create(e->client, e->base, obj, NULL, &cause), cause, "create other");
	cause = NULL;
	cJSON_Delete(obj);

	snprintf(path, sizeof(path), "%s/cm-0", e->base);
	check(kube_get(e->client, path, &obj, &cause), cause, "get");
	cause = NULL;
	assert_string_equal(data_value(obj, "k"), "v1");
	cJSON_Delete(obj);

	e->rec.continues = 0;
	check(kube_list(e->client, e->base, &sel, 2, count_item, &count, &rv, &cause), cause, "list");
	cause = NULL;
	assert_int_equal(count, 5);
	assert_int_equal(e->rec.continues, 2);
	assert_non_null(rv);
	assert_true(rv[0] != '\0');
	free(rv);

	check(kube_patch(e->client, path, KUBE_PATCH_MERGE, "{\"data\":{\"k\":\"merged\"}}", &obj, &cause),
	      cause, "merge patch");
	cause = NULL;
	assert_string_equal(data_value(obj, "k"), "merged");
	cJSON_Delete(obj);
	check(kube_patch(e->client, path, KUBE_PATCH_JSON,
			 "[{\"op\":\"add\",\"path\":\"/data/j\",\"value\":\"x\"}]", &obj, &cause),
	      cause, "json patch");
	cause = NULL;
	assert_string_equal(data_value(obj, "j"), "x");
	assert_string_equal(data_value(obj, "k"), "merged");
	cJSON_Delete(obj);
	/* A failing JSON patch test operation is refused by the server. */
	assert_int_equal(kube_patch(e->client, path, KUBE_PATCH_JSON,
				    "[{\"op\":\"test\",\"path\":\"/data/j\",\"value\":\"nope\"}]", NULL,
				    &cause),
			 MUSTER_EHTTP);
	free(cause);
	cause = NULL;

	check(kube_update_retry(e->client, path, 3, mutate_with_race, &race, &obj, &cause), cause, "update");
	cause = NULL;
	assert_int_equal(race.calls, 2);
	assert_string_equal(data_value(obj, "k"), "updated");
	assert_string_equal(data_value(obj, "other"), "writer");
	cJSON_Delete(obj);

	check(kube_delete(e->client, path, &cause), cause, "delete");
	cause = NULL;
	assert_int_equal(kube_get(e->client, path, &obj, &cause), MUSTER_ENOTFOUND);
	free(cause);
	cause = NULL;
	assert_int_equal(kube_delete(e->client, path, &cause), MUSTER_ENOTFOUND);
	free(cause);
}

/* ---- watch ---- */

struct watch_seen {
	atomic_int stop;
	atomic_int listed;
	char log[512];
	pthread_mutex_t lock;
	struct env *e;
	int result;
	char *cause;
};

static int seen_end(void *arg, const char *rv)
{
	struct watch_seen *w = arg;

	(void)rv;
	atomic_store(&w->listed, 1);
	return 0;
}

static int seen_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	struct watch_seen *w = arg;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(object, "metadata"), "name");
	size_t used;

	pthread_mutex_lock(&w->lock);
	used = strlen(w->log);
	snprintf(w->log + used, sizeof(w->log) - used, "%s:%s;", kube_watch_type_name(type),
		 cJSON_IsString(name) ? name->valuestring : "?");
	pthread_mutex_unlock(&w->lock);
	if (type == KUBE_WATCH_DELETED)
		atomic_store(&w->stop, 1);
	return 0;
}

static void *watch_thread(void *arg)
{
	struct watch_seen *w = arg;
	struct kube_watch_callbacks cb = { NULL, NULL, seen_end, seen_event, w };
	struct kube_selectors sel = { "app=watched", NULL };
	struct recorder rec;
	struct kube_client *client;

	/* One client per thread, as the contract asks. */
	open_client(&w->e->cfg, &rec, &client);
	w->result = kube_watch_run(client, w->e->base, &sel, 10, &cb, &w->stop, &w->cause);
	kube_client_free(client);
	kube_curl_free(rec.curl);
	return NULL;
}

static void nap_50ms(void)
{
	struct timespec ts = { 0, 50000000L };

	nanosleep(&ts, NULL);
}

static void watch_sees_added_modified_deleted(void **state)
{
	struct env *e = *state;
	struct watch_seen w = { .e = e };
	char path[256], *cause = NULL;
	pthread_t thread;
	cJSON *cm;
	int waited;

	SKIP_WITHOUT_CLUSTER(e);
	atomic_init(&w.stop, 0);
	atomic_init(&w.listed, 0);
	pthread_mutex_init(&w.lock, NULL);
	assert_int_equal(pthread_create(&thread, NULL, watch_thread, &w), 0);
	for (waited = 0; !atomic_load(&w.listed) && waited < 200; waited++)
		nap_50ms();
	assert_true(atomic_load(&w.listed));

	cm = configmap("w1", "watched", "a");
	check(kube_create(e->client, e->base, cm, NULL, &cause), cause, "create w1");
	cause = NULL;
	cJSON_Delete(cm);
	snprintf(path, sizeof(path), "%s/w1", e->base);
	check(kube_patch(e->client, path, KUBE_PATCH_MERGE, "{\"data\":{\"k\":\"b\"}}", NULL, &cause), cause,
	      "patch w1");
	cause = NULL;
	check(kube_delete(e->client, path, &cause), cause, "delete w1");

	/* The watch stops itself on DELETED; give it 20 s at most. */
	for (waited = 0; !atomic_load(&w.stop) && waited < 400; waited++)
		nap_50ms();
	atomic_store(&w.stop, 1);
	pthread_join(thread, NULL);
	pthread_mutex_destroy(&w.lock);
	if (w.result)
		fail_msg("watch: %s: %s", muster_err_name(w.result), w.cause ? w.cause : "");
	free(w.cause);
	assert_string_equal(w.log, "ADDED:w1;MODIFIED:w1;DELETED:w1;");
}

/* ---- credentials and TLS ---- */

static void token_file_is_reread_when_it_changes(void **state)
{
	struct env *e = *state;
	char dir[] = "/tmp/kube-e2e-token-XXXXXX", file[128], path[128], *cause = NULL;
	struct kube_config cfg;
	struct recorder rec;
	struct kube_client *client;
	cJSON *obj = NULL;
	FILE *f;

	SKIP_WITHOUT_CLUSTER(e);
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/token", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", e->cfg.token);
	fclose(f);
	/* A copy of the config with the token moved to a file. */
	cfg = e->cfg;
	cfg.token = NULL;
	cfg.token_file = file;
	open_client(&cfg, &rec, &client);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", e->ns);
	check(kube_get(client, path, &obj, &cause), cause, "get with token file");
	cause = NULL;
	cJSON_Delete(obj);

	f = fopen(file, "w");
	assert_non_null(f);
	fputs("rotated-to-something-invalid\n", f);
	fclose(f);
	assert_int_equal(kube_get(client, path, &obj, &cause), MUSTER_EUNAUTHORIZED);
	/* The cause names the failure, never the token. */
	assert_null(strstr(cause, "rotated-to-something-invalid"));
	assert_null(strstr(cause, e->cfg.token));
	free(cause);
	cause = NULL;

	f = fopen(file, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", e->cfg.token);
	fclose(f);
	check(kube_get(client, path, &obj, &cause), cause, "get after rotation back");
	cJSON_Delete(obj);
	kube_client_free(client);
	kube_curl_free(rec.curl);
	unlink(file);
	rmdir(dir);
}

static void tls_is_verified(void **state)
{
	struct env *e = *state;
	struct kube_config cfg;
	struct recorder rec;
	struct kube_client *client;
	cJSON *obj = NULL;
	char *cause = NULL;

	SKIP_WITHOUT_CLUSTER(e);
	/* Without the cluster's CA the system store cannot vouch for it. */
	cfg = e->cfg;
	cfg.ca_data = NULL;
	cfg.ca_data_len = 0;
	cfg.ca_file = NULL;
	cfg.max_retries = 0;
	open_client(&cfg, &rec, &client);
	assert_int_equal(kube_get(client, "/api", &obj, &cause), MUSTER_ETLS);
	assert_non_null(cause);
	free(cause);
	kube_client_free(client);
	kube_curl_free(rec.curl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crud_list_patch_update),
		cmocka_unit_test(watch_sees_added_modified_deleted),
		cmocka_unit_test(token_file_is_reread_when_it_changes),
		cmocka_unit_test(tls_is_verified),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
