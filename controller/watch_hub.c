/*
 * watch_hub: one watch, several consumers' informers (see watch_hub.h).
 * The hub's thread takes, under the hub's lock, which consumers are active
 * and what to ask; then runs kube_watch_run with no lock held, its
 * callbacks feeding the consumers of that run; a join or a stop ends the
 * run (run_stop), and the thread begins again or returns.
 */
#define _POSIX_C_SOURCE 200809L

#include "watch_hub.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kjson.h"
#include "kube_error.h"
#include "muster_lock.h"

struct consumer {
	struct kube_informer *informer;
	char path[KUBE_PATH_MAX];
	char label[WATCH_HUB_SELECTOR_MAX], field[WATCH_HUB_SELECTOR_MAX];
	int has_label, has_field;
	int (*wants)(void *arg, const cJSON *object);
	void *arg;
	int active; /* under the lock */
	int fed; /* it was fed a LIST before (the hub's thread only) */
};

struct watch_hub {
	struct kube_client *client;
	char wide_path[KUBE_PATH_MAX];
	unsigned page_size;
	struct consumer consumers[WATCH_HUB_CONSUMERS_MAX];
	size_t count;
	pthread_mutex_t lock; /* the consumers' active flags, stopping, joined */
	pthread_cond_t joined;
	int stopping;
	atomic_int run_stop; /* ends the run under way: a join or a stop */
	atomic_int *stop; /* the process's: set when the watch fails for good */
	pthread_t thread;
	int started;
	/* The run under way (the hub's thread only). */
	size_t run[WATCH_HUB_CONSUMERS_MAX], run_count;
	int filtering; /* the run asks for more than some consumer: filter for each */
	char run_path[KUBE_PATH_MAX];
	int ended; /* a consumer's handler returned a positive value: the hub ends */
	int err;
	char *cause;
};

int watch_hub_new(struct kube_client *client, const char *wide_path, unsigned page_size,
		  struct watch_hub **out, char **cause)
{
	struct watch_hub *hub;

	*out = NULL;
	if (strlen(wide_path) >= KUBE_PATH_MAX)
		return cause_err(cause, MUSTER_EINVAL, "watch path longer than %d bytes", KUBE_PATH_MAX);
	hub = calloc(1, sizeof(*hub));
	if (!hub)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for a watch");
	if (pthread_mutex_init(&hub->lock, NULL) != 0) {
		free(hub);
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a mutex");
	}
	if (pthread_cond_init(&hub->joined, NULL) != 0) {
		pthread_mutex_destroy(&hub->lock);
		free(hub);
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a condition variable");
	}
	hub->client = client;
	memcpy(hub->wide_path, wide_path, strlen(wide_path) + 1);
	hub->page_size = page_size;
	*out = hub;
	return 0;
}

void watch_hub_free(struct watch_hub *hub)
{
	if (!hub)
		return;
	free(hub->cause);
	pthread_cond_destroy(&hub->joined);
	pthread_mutex_destroy(&hub->lock);
	free(hub);
}

static int copy_selector(char *out, int *has, const char *selector)
{
	*has = selector != NULL;
	if (!selector)
		return 0;
	if (strlen(selector) >= WATCH_HUB_SELECTOR_MAX)
		return -1;
	memcpy(out, selector, strlen(selector) + 1);
	return 0;
}

int watch_hub_add(struct watch_hub *hub, const struct watch_hub_consumer_spec *spec, int active)
{
	struct consumer *c;

	if (hub->started || hub->count >= WATCH_HUB_CONSUMERS_MAX || strlen(spec->path) >= KUBE_PATH_MAX)
		return -1;
	c = &hub->consumers[hub->count];
	memset(c, 0, sizeof(*c));
	if (copy_selector(c->label, &c->has_label, spec->selectors.label) ||
	    copy_selector(c->field, &c->has_field, spec->selectors.field))
		return -1;
	memcpy(c->path, spec->path, strlen(spec->path) + 1);
	c->informer = spec->informer;
	c->wants = spec->wants;
	c->arg = spec->arg;
	c->active = active;
	return (int)hub->count++;
}

void watch_hub_join(struct watch_hub *hub, int index)
{
	if (index < 0 || (size_t)index >= hub->count)
		return;
	muster_lock(&hub->lock);
	if (!hub->consumers[index].active) {
		hub->consumers[index].active = 1;
		atomic_store(&hub->run_stop, 1);
		pthread_cond_signal(&hub->joined);
	}
	muster_unlock(&hub->lock);
}

void watch_hub_stop(struct watch_hub *hub)
{
	muster_lock(&hub->lock);
	hub->stopping = 1;
	atomic_store(&hub->run_stop, 1);
	pthread_cond_signal(&hub->joined);
	muster_unlock(&hub->lock);
}

static int same_query(const struct consumer *a, const struct consumer *b)
{
	return strcmp(a->path, b->path) == 0 && a->has_label == b->has_label &&
	       (!a->has_label || strcmp(a->label, b->label) == 0) && a->has_field == b->has_field &&
	       (!a->has_field || strcmp(a->field, b->field) == 0);
}

/* ---- the run's callbacks: every consumer of the run, in order ---- */

static int wanted(const struct watch_hub *hub, const struct consumer *c, const cJSON *object)
{
	return !hub->filtering || !c->wants || c->wants(c->arg, object);
}

/* A positive value from a handler ends the watch for good (as it ends
 * kube_informer_run), not just the run. */
static int note_end(struct watch_hub *hub, int ret)
{
	if (ret > 0)
		hub->ended = 1;
	return ret;
}

static int fan_relist_begin(void *arg, const char *reason)
{
	struct watch_hub *hub = arg;
	int ret = 0;

	for (size_t i = 0; i < hub->run_count && !ret; i++) {
		struct consumer *c = &hub->consumers[hub->run[i]];

		/* A consumer listed before sees this run's first LIST as what it
		 * is for it: a re-list, because another consumer joined. */
		ret = kube_informer_relist_begin(c->informer, c->fed && strcmp(reason, "first list") == 0
								      ? "a consumer joined the watch"
								      : reason);
	}
	return note_end(hub, ret);
}

static int fan_item(void *arg, const cJSON *object)
{
	struct watch_hub *hub = arg;
	int ret = 0;

	for (size_t i = 0; i < hub->run_count && !ret; i++) {
		struct consumer *c = &hub->consumers[hub->run[i]];

		if (wanted(hub, c, object))
			ret = kube_informer_item(c->informer, object);
	}
	return note_end(hub, ret);
}

static int fan_relist_end(void *arg, const char *resource_version)
{
	struct watch_hub *hub = arg;
	int ret = 0;

	for (size_t i = 0; i < hub->run_count && !ret; i++) {
		struct consumer *c = &hub->consumers[hub->run[i]];

		c->fed = 1;
		ret = kube_informer_relist_end(c->informer, resource_version);
	}
	return note_end(hub, ret);
}

static const char *metadata_string(const cJSON *object, const char *key)
{
	const cJSON *value = kjson_member(kjson_member(object, "metadata"), key);

	return cJSON_IsString(value) ? value->valuestring : NULL;
}

/* An event a consumer does not want: told as DELETED if it kept the object
 * (it left the consumer's selector), else not told. */
static int fan_unwanted(struct consumer *c, const cJSON *object)
{
	const char *namespace = metadata_string(object, "namespace"), *name = metadata_string(object, "name");

	if (!name || !kube_informer_has(c->informer, namespace ? namespace : "", name))
		return 0;
	return kube_informer_event(c->informer, KUBE_WATCH_DELETED, object);
}

static int fan_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	struct watch_hub *hub = arg;
	int ret = 0;

	for (size_t i = 0; i < hub->run_count && !ret; i++) {
		struct consumer *c = &hub->consumers[hub->run[i]];

		ret = wanted(hub, c, object) ? kube_informer_event(c->informer, type, object)
					     : fan_unwanted(c, object);
	}
	return note_end(hub, ret);
}

/* Under the lock: the run's consumers and what it asks. 0 when none is
 * active. */
static size_t plan_run(struct watch_hub *hub, struct kube_selectors *selectors)
{
	const struct consumer *first = NULL;

	hub->run_count = 0;
	hub->filtering = 0;
	for (size_t i = 0; i < hub->count; i++) {
		if (!hub->consumers[i].active)
			continue;
		hub->run[hub->run_count++] = i;
		if (!first)
			first = &hub->consumers[i];
		else if (!same_query(first, &hub->consumers[i]))
			hub->filtering = 1;
	}
	if (!first)
		return 0;
	if (hub->filtering) {
		memcpy(hub->run_path, hub->wide_path, sizeof(hub->run_path));
		selectors->label = selectors->field = NULL;
	} else {
		memcpy(hub->run_path, first->path, sizeof(hub->run_path));
		selectors->label = first->has_label ? first->label : NULL;
		selectors->field = first->has_field ? first->field : NULL;
	}
	return hub->run_count;
}

static void *hub_main(void *arg)
{
	struct watch_hub *hub = arg;
	const struct kube_watch_callbacks callbacks = { fan_relist_begin, fan_item, fan_relist_end, fan_event,
							hub };

	muster_lock(&hub->lock);
	while (!hub->stopping) {
		struct kube_selectors selectors;
		char *cause = NULL;
		int err;

		if (!plan_run(hub, &selectors)) {
			pthread_cond_wait(&hub->joined, &hub->lock);
			continue;
		}
		atomic_store(&hub->run_stop, 0);
		muster_unlock(&hub->lock);
		err = kube_watch_run(hub->client, hub->run_path, &selectors, hub->page_size, &callbacks,
				     &hub->run_stop, &cause);
		muster_lock(&hub->lock);
		if (err == MUSTER_ESTOPPED || hub->ended) {
			/* The client's stop (the process's) or a consumer ended it. */
			hub->stopping = 1;
			err = 0;
		}
		if (err) {
			hub->err = err;
			hub->cause = cause;
			cause = NULL;
			hub->stopping = 1;
			atomic_store(hub->stop, 1); /* gone for good: stop the others too */
		}
		free(cause);
	}
	muster_unlock(&hub->lock);
	return NULL;
}

int watch_hub_start(struct watch_hub *hub, atomic_int *stop, char **cause)
{
	hub->stop = stop;
	if (pthread_create(&hub->thread, NULL, hub_main, hub) != 0) {
		atomic_store(stop, 1);
		return cause_err(cause, MUSTER_ENOMEM, "cannot start a watch thread");
	}
	hub->started = 1;
	return 0;
}

int watch_hub_wait(struct watch_hub *hub, char **cause)
{
	if (!hub->started)
		return 0;
	pthread_join(hub->thread, NULL);
	hub->started = 0;
	if (!hub->err)
		return 0;
	return cause_err(cause, hub->err, "watch %s: %s", hub->run_path,
			 hub->cause ? hub->cause : muster_err_message(hub->err));
}
