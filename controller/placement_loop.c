/*
 * placement_loop: place gated JobSets, write their records, resume them
 * (placement_loop.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_loop.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobset_event.h"
#include "kjson.h"
#include "kube_curl.h"
#include "kube_error.h"
#include "kube_informer.h"
#include "kube_path.h"
#include "mlog.h"
#include "release_record.h"
#include "muster_api.h"
#include "name_table.h"
#include "topo_cache.h"
#include "topo_jobset.h"
#include "topo_move.h"
#include "topo_objects.h"
#include "topo_promise.h"
#include "topo_record.h"
#include "topo_retire.h"
#include "watch_set.h"

#define TOPOLOGIES_PATH "/apis/kueue.x-k8s.io/v1beta2/topologies"
#define TOPOLOGIES_PATH_V1BETA1 "/apis/kueue.x-k8s.io/v1beta1/topologies"
#define HYPERNODES_PATH "/apis/topology.volcano.sh/v1alpha1/hypernodes"
#define PAGE_SIZE 500
#define REASON_MAX 900

enum { API_NODES, API_PODS, API_JOBSETS, API_WRITES, API_COUNT };
enum { WATCH_NODES, WATCH_PODS, WATCH_JOBSETS, WATCH_COUNT };

/* A Job moved alone: until `until`, its old pods (bound where it was, by
 * name; deleted with the Job, not gone yet) count as not bound, so they do
 * not hide the room its new runs need (their own use is counted where they
 * run). Its new pods, once bound, count as bound. */
struct moved_job {
	char replicated_job[64];
	uint32_t job;
	double until; /* monotonic */
	char (*old_pods)[254];
	size_t old_count;
};

/* A JobSet carrying muster.dev/placement. */
struct pjobset {
	struct name_node node;
	char namespace[64], name[254], uid[129], created[40];
	char state[16];
	int finished;
	int suspended; /* spec.suspend: a placed JobSet suspended again holds no room */
	uint32_t restarts; /* status.restarts: the attempt a record must be of */
	struct topo_store store;
	struct topo_jobset request;
	int decoded;
	char decode_cause[REASON_MAX - 64];
	char reason[REASON_MAX]; /* the waiting reason of record (its annotation) */
	int record_checked; /* the record was read (or written) once */
	int resuming; /* this pass resumes it from its record */
	double hold_until; /* re-placed: not placed again before (pod route caches expire) */
	double relocated_at; /* when this controller last suspended it to place it again */
	int clear_jobs; /* placed again: its Jobs pinned (whole or a share) by the old record go before it is
			   placed */
	int relocating; /* suspended by relocate(); the informer has not shown it yet */
	uint32_t record_attempt; /* the attempt `record` places (a record of before attempts: the current one)
				  */
	double stranded_since; /* 0, or since when pods not bound have no room in their domain */
	int no_room_noted; /* logged that it stays: no other room */
	struct topo_record *record; /* NULL: none */
	uint64_t seen; /* the pass that last saw it in the table (tombstone check) */
	struct topo_retire *retire; /* moved Jobs to delete (MUSTER_ANNOTATION_PLACEMENT_RETIRE) */
	size_t retire_count;
	int move_refused_noted; /* logged why its stranded Jobs could not move alone */
	int move_failures; /* move writes or Job deletes that failed in a row */
	int move_stuck; /* they failed MOVE_FAILURES_MAX times: placed again whole */
	struct moved_job *moved; /* Jobs moved lately: their old pods hold no room of theirs */
	size_t moved_count;
	uint8_t *started; /* per Job (JobSet-wide number): every pod bound once, this attempt */
	size_t started_count;
	uint32_t started_attempt;
};

/* Pods of placed JobSets that are bound, by namespace and
 * "jobset uid/restart attempt/replicated job/job index/completion index"
 * (refs: two pods of one key may overlap for a moment). */
struct bound {
	struct name_node node;
	char namespace[64];
	char key[600];
	unsigned refs;
	char pod[254]; /* the pod's own name, to forget it on delete */
};

struct api {
	struct kube_curl *curl;
	struct kube_client *client;
};

struct placement_loop {
	char *namespace, *levels, *topology, *resources;
	int hypernodes;
	const char *resource_names[TOPO_RESOURCES_MAX];
	size_t resource_count;
	struct api api[API_COUNT];
	struct kube_informer *informers[WATCH_COUNT];
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;
	struct topo_cache *cache;
	struct name_table jobsets, bound, pod_keys;
	int dirty;
	int pods_changed; /* since the last pass: a bound pod came, changed or went (PLACEMENT_POD_PASS_S) */
	/* of stats.waiting, the JobSets whose record or resume failed in the
	 * last pass, or that a user's ConfigMap blocks: retried by the timed
	 * pass; room freed (a pod's event) does not help them */
	size_t retrying;
	int nodes_changed; /* since the last pass: a domain may have lost its nodes */
	int placed_changed; /* since the last pass: a placed JobSet changed (restarted, say) */
	double next_hold; /* a pass is due then: a held JobSet may be placed (0: none) */
	double next_retire; /* wall clock: a moved Job is due to be deleted then (0: none) */
	double hold_s; /* how long a JobSet placed again is held (RECORD_CACHE_WAIT_S) */
	double replace_after; /* --placement-replace-after */
	size_t promising; /* the last pass: placed JobSets with pods not bound (checked each retry) */
	size_t stranded; /* the last pass: of those, with pods that have no room (checked each second) */
	int cluster_watching; /* the Node and pod watches run (once a JobSet asked) */
	int listed[WATCH_COUNT];
	struct placement_stats stats;
	struct placement_observer observer;
	struct topo_node *work; /* the pass's copy of the nodes, with promised room */
	size_t work_cap;
};

/* ---- small helpers ---- */

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *meta_string(const cJSON *object, const char *field)
{
	const cJSON *v = kjson_member(kjson_member(object, "metadata"), field);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *annotation(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(kjson_member(kjson_member(object, "metadata"), "annotations"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *label(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(kjson_member(kjson_member(object, "metadata"), "labels"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 1 when `object` has a condition of type `done` or "Failed" whose status
 * is "True": a JobSet's terminal conditions (Completed, Failed) and a Job's
 * (Complete, Failed). */
static int condition_done(const cJSON *object, const char *done)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, kjson_member(kjson_member(object, "status"), "conditions"))
	{
		const cJSON *type = kjson_member(c, "type"), *status = kjson_member(c, "status");

		if (cJSON_IsString(type) && cJSON_IsString(status) &&
		    strcmp(status->valuestring, "True") == 0 &&
		    (strcmp(type->valuestring, done) == 0 || strcmp(type->valuestring, "Failed") == 0))
			return 1;
	}
	return 0;
}

/* Completed or Failed (a JobSet's terminal conditions). */
static int finished(const cJSON *jobset)
{
	return condition_done(jobset, "Completed");
}

static void mark_dirty(struct placement_loop *loop)
{
	loop->dirty = 1;
	pthread_cond_signal(&loop->cond);
}

/* ---- JobSets ---- */

static void pjobset_free(struct pjobset *j)
{
	if (!j)
		return;
	topo_store_free(&j->store);
	topo_record_free(j->record);
	free(j->retire);
	for (size_t i = 0; i < j->moved_count; i++)
		free(j->moved[i].old_pods);
	free(j->moved);
	free(j->started);
	free(j);
}

/* Takes `record` as the JobSet's placement of record (NULL: none). A
 * record of before attempts were written places the current attempt. */
static void set_record(struct pjobset *j, struct topo_record *record)
{
	topo_record_free(j->record);
	j->record = record;
	j->record_attempt = !record			      ? 0
			    : topo_record_has_attempt(record) ? topo_record_attempt(record)
							      : j->restarts;
}

/* The moved Jobs listed on a record (topo_retire.h), saying when some
 * entries do not read: 0 with *out and *count, or -1 when out of memory. */
static int retire_parse(const char *text, struct topo_retire **out, size_t *count, const char *namespace,
			const char *name)
{
	size_t skipped = 0;

	if (topo_retire_parse(text, strlen(text), out, count, &skipped)) {
		mlog(MLOG_WARN, "placement-retire-unread", "jobset=%s/%s reason=\"out of memory\"", namespace,
		     name);
		return -1;
	}
	if (skipped)
		mlog(MLOG_WARN, "placement-retire-unread",
		     "jobset=%s/%s skipped=%zu reason=\"not <replicated job>/<job>=<uid>@<seconds>\"",
		     namespace, name, skipped);
	return 0;
}

static int jobset_change(void *arg, const struct kube_informer_event *e)
{
	struct placement_loop *loop = arg;
	struct pjobset *j;
	const char *state = e->object ? annotation(e->object, MUSTER_ANNOTATION_PLACEMENT) : NULL;
	const char *reason;
	char *cause = NULL;

	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, e->namespace, e->name);
	if (e->change == KUBE_INFORMER_DELETE || !state ||
	    (j && strcmp(j->uid, meta_string(e->object, "uid")) != 0)) {
		if (j) {
			name_table_remove(&loop->jobsets, &j->node);
			pjobset_free(j);
			mark_dirty(loop); /* its promised room is free */
		}
		if (e->change == KUBE_INFORMER_DELETE || !state)
			goto out;
		j = NULL;
	}
	if (!j) {
		if (!(j = calloc(1, sizeof(*j))))
			goto out;
		snprintf(j->namespace, sizeof(j->namespace), "%s", e->namespace);
		snprintf(j->name, sizeof(j->name), "%s", e->name);
		snprintf(j->uid, sizeof(j->uid), "%s", meta_string(e->object, "uid"));
		snprintf(j->created, sizeof(j->created), "%s", meta_string(e->object, "creationTimestamp"));
		j->node.namespace = j->namespace;
		j->node.name = j->name;
		if (name_table_insert(&loop->jobsets, &j->node)) {
			free(j);
			goto out;
		}
		/* Found waiting by a LIST (this controller's start, a new
		 * leader, a watch expired): it may be one the last leader was
		 * placing again, whose Jobs pinned whole by the old record
		 * stay; they go before it is placed (clear_due). One made
		 * since, not placed yet, has no Job (the pin route refuses
		 * them until it is placed): a GET of each name finds none. */
		j->clear_jobs = e->relist && strcmp(state, MUSTER_PLACEMENT_WAITING) == 0;
	}
	/* The request as it is now, while it is not placed (the user may fix
	 * it while it waits); a placed JobSet keeps the one it was placed by. */
	if (!j->decoded || strcmp(state, MUSTER_PLACEMENT_PLACED) != 0) {
		topo_store_free(&j->store);
		j->store.chunk = 4096;
		j->decoded = 0;
		j->decode_cause[0] = '\0';
		if (topo_jobset_decode(&j->store, e->object, &j->request, &cause) == 0) {
			j->decoded = 1;
		} else {
			snprintf(j->decode_cause, sizeof(j->decode_cause), "%s",
				 cause ? cause : "out of memory");
			free(cause);
			cause = NULL;
		}
	}
	{
		/* Two fields only, each on its own: a JobSet the gang loop cannot
		 * count (jobset_model) is still seen to restart. */
		int suspended = cJSON_IsTrue(kjson_member(kjson_member(e->object, "spec"), "suspend"));
		long long restarts = 0;

		if (kjson_count(kjson_member(kjson_member(e->object, "status"), "restarts"), 0,
				KJSON_INT32_MAX, &restarts) != KJSON_OK)
			restarts = j->restarts; /* not a count: the last one read stands */
		/* A placed JobSet's checks (restart, lost record) run when what
		 * they read changes, not on every status write. */
		if (strcmp(state, MUSTER_PLACEMENT_PLACED) == 0 &&
		    (strcmp(j->state, state) != 0 || j->suspended != suspended ||
		     j->restarts != (uint32_t)restarts))
			loop->placed_changed = 1;
		j->suspended = suspended;
		j->restarts = (uint32_t)restarts;
		/* This controller suspended it to place it again: until the informer
		 * shows that, an older event does not make it placed and live. */
		if (j->relocating && (suspended || strcmp(state, MUSTER_PLACEMENT_WAITING) == 0))
			j->relocating = 0;
	}
	snprintf(j->state, sizeof(j->state), "%s", state);
	j->finished = finished(e->object);
	reason = annotation(e->object, MUSTER_ANNOTATION_PLACEMENT_REASON);
	snprintf(j->reason, sizeof(j->reason), "%s", reason ? reason : "");
	mark_dirty(loop);
out:
	pthread_mutex_unlock(&loop->lock);
	return 0;
}

/* ---- Nodes and pods ---- */

static int node_change(void *arg, const struct kube_informer_event *e)
{
	struct placement_loop *loop = arg;
	char *cause = NULL;

	pthread_mutex_lock(&loop->lock);
	loop->nodes_changed = 1;
	if (e->change == KUBE_INFORMER_DELETE) {
		topo_cache_node_delete(loop->cache, e->name);
	} else if (topo_cache_node_put(loop->cache, e->object, &cause)) {
		mlog(MLOG_WARN, "node-ignored", "node=%s cause=\"%s\"", e->name,
		     cause ? cause : "out of memory");
		free(cause);
	}
	mark_dirty(loop);
	pthread_mutex_unlock(&loop->lock);
	return 0;
}

/* The bound key of a pinned pod, or 0 when it is not one. */
static int bound_key(const cJSON *pod, char *key, size_t size)
{
	const char *jobset = label(pod, JOBSET_LABEL_UID), *rj = label(pod, JOBSET_LABEL_REPLICATED_JOB),
		   *job = label(pod, JOBSET_LABEL_JOB_INDEX), *pin = label(pod, MUSTER_LABEL_PLACEMENT);
	const char *completion = annotation(pod, JOB_ANNOTATION_COMPLETION_INDEX);
	const char *attempt = label(pod, JOBSET_LABEL_RESTART_ATTEMPT);
	const cJSON *node = kjson_member(kjson_member(pod, "spec"), "nodeName");

	if (!pin || !jobset || !rj || !job || !completion || !cJSON_IsString(node) || !node->valuestring[0])
		return 0;
	return snprintf(key, size, "%s/%s/%s/%s/%s", jobset, attempt ? attempt : "0", rj, job, completion) <
	       (int)size;
}

static void bound_forget(struct placement_loop *loop, const char *namespace, const char *pod)
{
	struct bound *b = (struct bound *)name_table_find(&loop->pod_keys, namespace, pod);
	struct bound *counted;

	if (!b)
		return;
	name_table_remove(&loop->pod_keys, &b->node);
	counted = (struct bound *)name_table_find(&loop->bound, namespace, b->key);
	if (counted && --counted->refs == 0) {
		name_table_remove(&loop->bound, &counted->node);
		free(counted);
	}
	free(b);
}

/* Remembers that the pinned pod `pod` holds `key`: one entry by pod name
 * (to forget it) and a counted one by key (what reservations ask). */
static void bound_note(struct placement_loop *loop, const char *namespace, const char *pod, const char *key)
{
	struct bound *b, *counted;

	if ((b = (struct bound *)name_table_find(&loop->pod_keys, namespace, pod)) != NULL)
		return;
	if (!(b = calloc(1, sizeof(*b))))
		return;
	snprintf(b->namespace, sizeof(b->namespace), "%s", namespace);
	snprintf(b->pod, sizeof(b->pod), "%s", pod);
	snprintf(b->key, sizeof(b->key), "%s", key);
	b->node.namespace = b->namespace;
	b->node.name = b->pod;
	if (name_table_insert(&loop->pod_keys, &b->node)) {
		free(b);
		return;
	}
	counted = (struct bound *)name_table_find(&loop->bound, namespace, key);
	if (!counted) {
		if (!(counted = calloc(1, sizeof(*counted)))) {
			name_table_remove(&loop->pod_keys, &b->node);
			free(b);
			return;
		}
		snprintf(counted->namespace, sizeof(counted->namespace), "%s", namespace);
		snprintf(counted->key, sizeof(counted->key), "%s", key);
		counted->node.namespace = counted->namespace;
		counted->node.name = counted->key;
		if (name_table_insert(&loop->bound, &counted->node)) {
			free(counted);
			name_table_remove(&loop->pod_keys, &b->node);
			free(b);
			return;
		}
	}
	counted->refs++;
}

static int pod_change(void *arg, const struct kube_informer_event *e)
{
	struct placement_loop *loop = arg;
	char key[600], *cause = NULL;

	pthread_mutex_lock(&loop->lock);
	if (e->change == KUBE_INFORMER_DELETE) {
		topo_cache_pod_delete(loop->cache, e->namespace, e->name);
		bound_forget(loop, e->namespace, e->name);
	} else {
		if (topo_cache_pod_put(loop->cache, e->object, &cause)) {
			mlog(MLOG_WARN, "pod-ignored", "pod=%s/%s cause=\"%s\"", e->namespace, e->name,
			     cause ? cause : "out of memory");
			free(cause);
		}
		if (bound_key(e->object, key, sizeof(key)))
			bound_note(loop, e->namespace, e->name, key);
	}
	/* Room freed may let a waiting JobSet fit: a pass soon. Otherwise a
	 * pod's change only updates the checks of placed JobSets (bound,
	 * started, stranded), which are not urgent: at most one pass every
	 * PLACEMENT_POD_PASS_S for them, not one per pod event of a large
	 * JobSet binding. */
	loop->pods_changed = 1;
	if (loop->stats.waiting > loop->retrying)
		mark_dirty(loop);
	pthread_mutex_unlock(&loop->lock);
	return 0;
}

static int relist_end(struct placement_loop *loop, int which)
{
	pthread_mutex_lock(&loop->lock);
	loop->listed[which] = 1;
	mark_dirty(loop);
	pthread_mutex_unlock(&loop->lock);
	return 0;
}

static int nodes_listed(void *arg, const char *rv)
{
	(void)rv;
	return relist_end(arg, WATCH_NODES);
}

static int pods_listed(void *arg, const char *rv)
{
	(void)rv;
	return relist_end(arg, WATCH_PODS);
}

static int jobsets_listed(void *arg, const char *rv)
{
	(void)rv;
	return relist_end(arg, WATCH_JOBSETS);
}

/* ---- the topology of a pass ---- */

struct topology {
	struct topo_store store;
	const char *levels[TOPO_LEVELS_MAX];
	size_t level_count;
	struct topo_hypernode *hypernodes;
	size_t hypernode_count;
	int from_hypernodes;
	char problem[REASON_MAX]; /* why there is none, or "" */
	int none; /* the cluster has none and no flag names one: a JobSet's own level may serve */
	int read; /* read this pass (a pass with nothing to place or move reads none) */
};

static struct topo_tree *build_tree(const struct topology *top, const struct topo_cluster *c, char **cause);
static const char *single_level(const struct topo_jobset *js);

/* The items of a LIST (an array the caller deletes), or NULL with err. */
static cJSON *list_all(struct placement_loop *loop, const char *path, int *err, char **cause)
{
	cJSON *items = cJSON_CreateArray();

	if (!items) {
		*err = KUBE_ENOMEM;
		return NULL;
	}
	*err = kube_list(loop->api[API_WRITES].client, path, NULL, PAGE_SIZE, kube_item_collect, items, NULL,
			 cause);
	if (*err) {
		cJSON_Delete(items);
		return NULL;
	}
	return items;
}

static void levels_of(struct topology *t, const struct topo_levels *found)
{
	for (size_t i = 0; i < found->count; i++)
		t->levels[i] = found->labels[i];
	t->level_count = found->count;
}

static int use_topology(struct topology *t, const cJSON *object, const char *where)
{
	struct topo_levels found;
	char *cause = NULL;

	if (topo_kueue_topology_decode(&t->store, object, where, &found, &cause)) {
		snprintf(t->problem, sizeof(t->problem), "%s", cause ? cause : "out of memory");
		free(cause);
		return -1;
	}
	levels_of(t, &found);
	return 0;
}

static int use_hypernodes(struct topology *t, const cJSON *items)
{
	const cJSON *item;
	size_t n = 0;
	char *cause = NULL;

	t->hypernode_count = (size_t)cJSON_GetArraySize(items);
	t->hypernodes = topo_store_alloc(&t->store, t->hypernode_count ? t->hypernode_count : 1,
					 sizeof(*t->hypernodes));
	if (!t->hypernodes) {
		snprintf(t->problem, sizeof(t->problem), "out of memory for the HyperNodes");
		return -1;
	}
	cJSON_ArrayForEach(item, items)
	{
		if (topo_hypernode_decode(&t->store, item, "hypernodes", &t->hypernodes[n++], &cause)) {
			snprintf(t->problem, sizeof(t->problem), "%s", cause ? cause : "out of memory");
			free(cause);
			return -1;
		}
	}
	t->from_hypernodes = 1;
	return 0;
}

/* Reads the topology of this pass (outside the lock). */
static void read_topology(struct placement_loop *loop, struct topology *t)
{
	char path[KUBE_PATH_MAX], *cause = NULL;
	cJSON *object = NULL, *items = NULL;
	int err;

	t->read = 1;
	if (loop->levels) {
		char *save = NULL, *copy = (char *)topo_store_string(&t->store, loop->levels);

		for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL;
		     tok && t->level_count < TOPO_LEVELS_MAX; tok = strtok_r(NULL, ",", &save))
			t->levels[t->level_count++] = tok;
		return;
	}
	if (loop->topology) {
		err = kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES, NULL, loop->topology, &cause);
		if (!err)
			err = kube_get(loop->api[API_WRITES].client, path, &object, &cause);
		if (err == KUBE_ENOTFOUND) {
			free(cause);
			cause = NULL;
			kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES_V1BETA1, NULL, loop->topology,
				  NULL);
			err = kube_get(loop->api[API_WRITES].client, path, &object, &cause);
		}
		if (err)
			snprintf(t->problem, sizeof(t->problem),
				 "the Kueue Topology %s (--placement-topology): %s", loop->topology,
				 err == KUBE_ENOTFOUND ? "not found"
				 : cause	       ? cause
						       : kube_err_message(err));
		else
			use_topology(t, object, "topology");
		goto out;
	}
	if (loop->hypernodes) {
		if (!(items = list_all(loop, HYPERNODES_PATH, &err, &cause)))
			snprintf(t->problem, sizeof(t->problem), "the HyperNodes: %s",
				 cause ? cause : kube_err_message(err));
		else if (cJSON_GetArraySize(items) == 0)
			snprintf(t->problem, sizeof(t->problem),
				 "the cluster has no HyperNodes (--placement-hypernodes)");
		else
			use_hypernodes(t, items);
		goto out;
	}
	/* By default: the only Kueue Topology, else the HyperNodes. */
	items = list_all(loop, TOPOLOGIES_PATH, &err, &cause);
	if (!items && err == KUBE_ENOTFOUND) { /* a cluster serving only Kueue's older version */
		free(cause);
		cause = NULL;
		items = list_all(loop, TOPOLOGIES_PATH_V1BETA1, &err, &cause);
	}
	if (items && cJSON_GetArraySize(items) == 1) {
		use_topology(t, cJSON_GetArrayItem(items, 0), "topology");
		goto out;
	}
	if (items && cJSON_GetArraySize(items) > 1) {
		snprintf(t->problem, sizeof(t->problem),
			 "the cluster has %d Kueue Topologies: name one with --placement-topology",
			 cJSON_GetArraySize(items));
		goto out;
	}
	cJSON_Delete(items);
	free(cause);
	cause = NULL;
	items = list_all(loop, HYPERNODES_PATH, &err, &cause);
	if (items && cJSON_GetArraySize(items) > 0) {
		use_hypernodes(t, items);
	} else {
		t->none = 1;
		snprintf(
			t->problem, sizeof(t->problem),
			"no topology: the cluster has no Kueue Topology and no HyperNodes, muster-controller has no "
			"--placement-levels, and the JobSet names more than one level (or a tier)");
	}
out:
	cJSON_Delete(object);
	cJSON_Delete(items);
	free(cause);
}

/* ---- records ---- */

/* The path of the record of JobSet namespace/name (or of the ConfigMaps of
 * its namespace): 0, or KUBE_EINVAL with a cause (kube_path.h). */
static int record_path(char *path, size_t size, const char *namespace, const char *name, int collection,
		       char **cause)
{
	char record[KUBE_NAME_MAX + sizeof(MUSTER_PLACEMENT_SUFFIX)];

	snprintf(record, sizeof(record), "%s" MUSTER_PLACEMENT_SUFFIX, name);
	return kube_path(path, size, &KUBE_CONFIGMAPS, namespace, collection ? NULL : record, cause);
}

/* Reads the record of a JobSet: 0 and *out (NULL when there is none, or it
 * is an earlier JobSet's), or an API error. */
/* The ConfigMap `<jobset>-placement` and whose it is (release_record's rule:
 * ours when an owner reference names this JobSet's uid, an earlier JobSet's
 * of the name when one of those controls it, else anyone else's, which
 * muster never touches). *configmap NULL: there is none. */
static int record_get(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
		      cJSON **configmap, enum release_owner *owner, char **cause)
{
	const struct release_jobset jobset = { namespace, name, uid };
	char path[KUBE_PATH_MAX];
	int err;

	*configmap = NULL;
	err = record_path(path, sizeof(path), namespace, name, 0, cause);
	if (!err)
		err = kube_get(loop->api[API_WRITES].client, path, configmap, cause);
	if (err == KUBE_ENOTFOUND) {
		free(*cause);
		*cause = NULL;
		return 0;
	}
	if (!err)
		*owner = release_record_owner(*configmap, &jobset);
	return err;
}

/* This JobSet's placement of record, or *out NULL when there is none of its
 * own (absent, unreadable, an earlier JobSet's, or not muster's). */
static int record_read(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
		       struct topo_record **out, struct topo_retire **retire, size_t *retire_count,
		       char **cause)
{
	enum release_owner owner = RELEASE_OWNER_FOREIGN;
	cJSON *configmap = NULL;
	const cJSON *text, *moved;
	int err = record_get(loop, namespace, name, uid, &configmap, &owner, cause);

	*out = NULL;
	*retire = NULL;
	*retire_count = 0;
	if (err || !configmap)
		return err;
	text = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY);
	if (owner == RELEASE_OWNER_OURS && cJSON_IsString(text) &&
	    topo_record_parse(text->valuestring, strlen(text->valuestring), out, NULL) == 0 &&
	    strcmp(topo_record_uid(*out), uid) != 0) {
		topo_record_free(*out);
		*out = NULL;
	}
	/* Moved Jobs not deleted yet (the controller stopped in between). */
	moved = kjson_member(kjson_member(kjson_member(configmap, "metadata"), "annotations"),
			     MUSTER_ANNOTATION_PLACEMENT_RETIRE);
	if (*out && cJSON_IsString(moved) &&
	    retire_parse(moved->valuestring, retire, retire_count, namespace, name))
		err = KUBE_ENOMEM; /* read again on the next pass: nothing listed is lost */
	if (err) {
		topo_record_free(*out);
		*out = NULL;
		kube_cause(cause, err, "no memory for the moved Jobs of the record");
	}
	cJSON_Delete(configmap);
	return err;
}

/* Deletes the record if it is this JobSet's own (by its metadata.uid, so
 * that one made again since is not deleted); anything else stays. */
static int record_drop(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
		       char **cause)
{
	enum release_owner owner = RELEASE_OWNER_FOREIGN;
	cJSON *configmap = NULL;
	const cJSON *cm_uid;
	char path[KUBE_PATH_MAX];
	int err = record_get(loop, namespace, name, uid, &configmap, &owner, cause);

	if (err || !configmap)
		return err;
	cm_uid = kjson_member(kjson_member(configmap, "metadata"), "uid");
	if (owner == RELEASE_OWNER_OURS && cJSON_IsString(cm_uid)) {
		err = record_path(path, sizeof(path), namespace, name, 0, cause);
		if (!err)
			err = kube_delete_uid(loop->api[API_WRITES].client, path, cm_uid->valuestring, cause);
		if (err == KUBE_ENOTFOUND ||
		    err == KUBE_ECONFLICT) { /* gone, or made again: not ours to drop */
			free(*cause);
			*cause = NULL;
			err = 0;
		}
	}
	cJSON_Delete(configmap);
	return err;
}

static cJSON *record_body(const char *namespace, const char *name, const char *uid, const char *text)
{
	char cm[300];
	cJSON *body = cJSON_CreateObject(), *metadata, *labels, *owners, *owner, *data;

	snprintf(cm, sizeof(cm), "%s" MUSTER_PLACEMENT_SUFFIX, name);
	if (!body || !cJSON_AddStringToObject(body, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(body, "kind", "ConfigMap") ||
	    !(metadata = cJSON_AddObjectToObject(body, "metadata")) ||
	    !cJSON_AddStringToObject(metadata, "name", cm) ||
	    !cJSON_AddStringToObject(metadata, "namespace", namespace) ||
	    !(labels = cJSON_AddObjectToObject(metadata, "labels")) ||
	    !cJSON_AddStringToObject(labels, JOBSET_LABEL_NAME, name) ||
	    !(owners = cJSON_AddArrayToObject(metadata, "ownerReferences")) ||
	    !(owner = cJSON_CreateObject()) || !cJSON_AddItemToArray(owners, owner) ||
	    !cJSON_AddStringToObject(owner, "apiVersion", "jobset.x-k8s.io/v1alpha2") ||
	    !cJSON_AddStringToObject(owner, "kind", "JobSet") ||
	    !cJSON_AddStringToObject(owner, "name", name) || !cJSON_AddStringToObject(owner, "uid", uid) ||
	    !cJSON_AddBoolToObject(owner, "controller", 1) ||
	    !cJSON_AddBoolToObject(owner, "blockOwnerDeletion", 1) ||
	    !(data = cJSON_AddObjectToObject(body, "data")) ||
	    !cJSON_AddStringToObject(data, MUSTER_PLACEMENT_KEY, text)) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

#define RECORD_CREATE_TRIES 3

/* Writes the record: created; or, when one exists, kept if it is this
 * JobSet's for this restart attempt (*kept set: the placement of record is
 * that one), replaced if it is an earlier JobSet's of the name (or this
 * one's, unreadable or of another attempt), and never touched if it is
 * anyone else's (*foreign set, KUBE_ECONFLICT with a cause for the user). */
static int record_write(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
			uint32_t attempt, const char *text, struct topo_record **kept, int *foreign,
			char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *body = record_body(namespace, name, uid, text), *configmap = NULL;
	enum release_owner owner = RELEASE_OWNER_FOREIGN;
	const cJSON *cm_uid;
	int err;

	*kept = NULL;
	*foreign = 0;
	if (!body)
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the placement record");
	if ((err = record_path(path, sizeof(path), namespace, name, 1, cause)) != 0)
		goto out;
	/* A ConfigMap of the name deleted between the create and the read (its
	 * owner removing it as muster said): the name is free, so created again
	 * at once, a few times at most. */
	for (int tries = 0;; tries++) {
		err = kube_create(loop->api[API_WRITES].client, path, body, NULL, cause);
		if (err != KUBE_ECONFLICT)
			goto out;
		free(*cause);
		*cause = NULL;
		if ((err = record_get(loop, namespace, name, uid, &configmap, &owner, cause)) != 0)
			goto out;
		if (configmap)
			break;
		if (tries == RECORD_CREATE_TRIES - 1) { /* retried by the next passes */
			err = kube_cause(
				cause, KUBE_ECONFLICT,
				"the placement record's name was taken and freed again %d times while "
				"written",
				RECORD_CREATE_TRIES);
			goto out;
		}
	}
	if (owner == RELEASE_OWNER_FOREIGN) {
		*foreign = 1;
		err = kube_cause(
			cause, KUBE_ECONFLICT,
			"ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX
			" exists and is not a placement record of this JobSet or an earlier one of its "
			"name (no such JobSet owns it): muster never touches it; rename or delete it",
			namespace, name);
		goto out;
	}
	if (owner == RELEASE_OWNER_OURS) {
		const cJSON *data = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY);

		if (cJSON_IsString(data) &&
		    topo_record_parse(data->valuestring, strlen(data->valuestring), kept, NULL) == 0 &&
		    strcmp(topo_record_uid(*kept), uid) == 0 && topo_record_has_attempt(*kept) &&
		    topo_record_attempt(*kept) == attempt)
			goto out; /* written before: that one stands */
		topo_record_free(*kept);
		*kept = NULL;
	}
	mlog(MLOG_INFO, "placement-record-replaced", "jobset=%s/%s reason=\"%s\"", namespace, name,
	     owner == RELEASE_OWNER_OURS ? "unreadable or of an earlier restart attempt"
					 : "written for an earlier JobSet of this name");
	cm_uid = kjson_member(kjson_member(configmap, "metadata"), "uid");
	err = record_path(path, sizeof(path), namespace, name, 0, cause);
	err = err ? err
	      : cJSON_IsString(cm_uid)
		      ? kube_delete_uid(loop->api[API_WRITES].client, path, cm_uid->valuestring, cause)
		      : kube_cause(cause, KUBE_EPARSE, "the placement record has no metadata.uid");
	if (!err || err == KUBE_ENOTFOUND) {
		free(*cause);
		*cause = NULL;
		err = record_path(path, sizeof(path), namespace, name, 1, cause);
		if (!err)
			err = kube_create(loop->api[API_WRITES].client, path, body, NULL, cause);
	}
out:
	cJSON_Delete(configmap);
	cJSON_Delete(body);
	return err;
}

/* Resumes the JobSet as placed, in one merge patch that names its uid (a
 * JobSet made again under the name is not touched: 409). */
static int resume(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
		  char **cause)
{
	char path[KUBE_PATH_MAX], patch[512];
	int err;

	if ((err = kube_path(path, sizeof(path), &KUBE_JOBSETS, namespace, name, cause)) != 0)
		return err;
	snprintf(patch, sizeof(patch),
		 "{\"metadata\":{\"uid\":\"%s\",\"annotations\":{\"" MUSTER_ANNOTATION_PLACEMENT
		 "\":\"" MUSTER_PLACEMENT_PLACED "\",\"" MUSTER_ANNOTATION_PLACEMENT_REASON
		 "\":null}},\"spec\":{\"suspend\":false}}",
		 uid);
	return kube_patch(loop->api[API_WRITES].client, path, KUBE_PATCH_MERGE, patch, NULL, cause);
}

static int write_reason(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
			const char *reason, char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *patch = cJSON_CreateObject(), *metadata, *annotations;
	char *text = NULL;
	int err = KUBE_ENOMEM;

	if ((err = kube_path(path, sizeof(path), &KUBE_JOBSETS, namespace, name, cause)) != 0) {
		cJSON_Delete(patch);
		return err;
	}
	err = KUBE_ENOMEM;
	if (patch && (metadata = cJSON_AddObjectToObject(patch, "metadata")) &&
	    cJSON_AddStringToObject(metadata, "uid", uid) &&
	    (annotations = cJSON_AddObjectToObject(metadata, "annotations")) &&
	    cJSON_AddStringToObject(annotations, MUSTER_ANNOTATION_PLACEMENT_REASON, reason) &&
	    (text = cJSON_PrintUnformatted(patch)))
		err = kube_patch(loop->api[API_WRITES].client, path, KUBE_PATCH_MERGE, text, NULL, cause);
	cJSON_Delete(patch);
	free(text);
	return err;
}

/* ---- the decision ---- */

/* A placed JobSet to suspend and place again: some of its pods, not bound
 * yet, have no room left in their domain (its nodes deleted at once; not
 * Ready, cordoned, tainted or full for --placement-replace-after); or it
 * restarted (status.restarts above its record's attempt: each attempt is
 * placed afresh); or its record is gone (deleted by hand, or this
 * controller stopped between dropping it and the suspend). */
enum relocation_kind { RELOCATE_LOST, RELOCATE_RESTART, RELOCATE_MISSING, RELOCATE_STUCK };

/* A record missing under a placed JobSet is believed after this long (an
 * informer event older than this controller's own suspend may still show
 * the JobSet placed). */
#define MISSING_RECORD_GRACE_S 5

struct relocation {
	char namespace[64], name[254], uid[129];
	enum relocation_kind kind;
	uint32_t attempt, restarts; /* RELOCATE_RESTART: the record's, the JobSet's */
	struct topo_promise promise;
	double for_s; /* how long they had no room */
	const struct pjobset *jobset; /* valid under the lock only */
};

/* Jobs of a placed JobSet moved alone (topo_move.h): the new record to
 * write, and the Jobs to delete once the pod route's caches expired. */
#define MOVE_JOBS_MAX 64
/* Writes of a move (or deletes of its Jobs) that fail this many times in a
 * row (RBAC without jobs, say): the whole JobSet is placed again instead. */
#define MOVE_FAILURES_MAX 3

struct move {
	char namespace[64], name[254], uid[129];
	char *record; /* the new record's text */
	size_t count;
	char names[MOVE_JOBS_MAX][64]; /* the moved Jobs: replicated job, job index */
	uint32_t job_index[MOVE_JOBS_MAX];
	char reason[REASON_MAX];
};

/* What a pass decided for one JobSet, acted on outside the lock. */
struct action {
	char namespace[64], name[254], uid[129];
	int place; /* 1: write `record`, resume; 0: wait with `reason` */
	char *record;
	uint32_t attempt; /* the restart attempt `record` places */
	char reason[REASON_MAX];
	int reason_changed;
	size_t pods;
	char where[256]; /* the domains, for the Event */
};

struct pass {
	struct placement_loop *loop;
	struct topo_cluster cluster;
	struct pjobset **pending;
	size_t pending_count, pending_cap;
	struct action *actions;
	size_t action_count;
	/* for reservations */
	const struct pjobset *current;
	struct topo_cluster *work_cluster;
	struct topo_node *work_nodes; /* work_cluster's nodes, writable */
	const struct pjobset *skip; /* set: only take room, for every JobSet but this one */
	uint64_t reserved_pods;
	size_t held; /* waiting, held back after a re-placement */
	double next_hold; /* the earliest end of those holds, 0 when none */
	size_t promising; /* placed JobSets with pods not bound */
	size_t stranded; /* of those, with pods that have no room in their domain */
	struct relocation *relocations; /* placed JobSets to place again */
	size_t relocation_count, relocation_cap;
	struct move *moves; /* of those, the ones whose stranded Jobs move alone */
	size_t move_count;
};

static void collect_pending(void *arg, struct name_node *node)
{
	struct pass *p = arg;
	struct pjobset *j = (struct pjobset *)node;

	/* Not before its record was read: a record written before must be
	 * honoured, not a second placement made. */
	if (strcmp(j->state, MUSTER_PLACEMENT_WAITING) != 0 || j->finished || j->resuming ||
	    !j->record_checked)
		return;
	if (j->hold_until > now_s() || j->clear_jobs) {
		p->held++;
		if (!p->next_hold || j->hold_until < p->next_hold)
			p->next_hold = j->hold_until;
		return;
	}
	if (p->pending_count == p->pending_cap) {
		size_t cap = p->pending_cap ? p->pending_cap * 2 : 16;
		struct pjobset **grown = realloc(p->pending, cap * sizeof(*grown));

		if (!grown)
			return;
		p->pending = grown;
		p->pending_cap = cap;
	}
	p->pending[p->pending_count++] = j;
}

static int by_creation(const void *a, const void *b)
{
	const struct pjobset *x = *(const struct pjobset *const *)a, *y = *(const struct pjobset *const *)b;
	int c = strcmp(x->created, y->created);

	if (!c)
		c = strcmp(x->namespace, y->namespace);
	return c ? c : strcmp(x->name, y->name);
}

static const struct topo_jobset_group *group_named(const struct pjobset *j, const char *name)
{
	for (size_t g = 0; g < j->request.group_count; g++)
		if (strcmp(j->request.groups[g].name, name) == 0)
			return &j->request.groups[g];
	return NULL;
}

/* Adds one pod's request (of `pod`) to node `n` of the working copy. */
static void take(struct topo_cluster *c, struct topo_node *n, const struct topo_pod_scheduling *pod)
{
	int pods = topo_resource_index(c, "pods");

	for (size_t r = 0; r < pod->request_count; r++) {
		int i = topo_resource_index(c, pod->request_names[r]);

		if (i >= 0)
			n->used[i] = topo_amount_add(n->used[i], pod->request_values[r]);
	}
	if (pods >= 0)
		n->used[pods] += 1;
}

/* 1 when the pod is bound now (p->current's). */
static int bound_now(const struct pass *p, const char *rj, uint32_t job, uint32_t completion)
{
	char key[600];

	snprintf(key, sizeof(key), "%s/%u/%s/%u/%u", p->current->uid, p->current->record_attempt, rj, job,
		 completion);
	return name_table_find(&p->loop->bound, p->current->namespace, key) != NULL;
}

/* The JobSet-wide number of job `job` of replicated job rj, or -1. */
static long job_number(const struct pjobset *j, const char *rj, uint32_t job)
{
	long base = 0;

	for (size_t g = 0; g < j->request.group_count; g++) {
		if (strcmp(j->request.groups[g].name, rj) == 0)
			return job < j->request.groups[g].replicas ? base + (long)job : -1;
		base += j->request.groups[g].replicas;
	}
	return -1;
}

/* Whether each Job of the current attempt has had every pod bound at
 * once (started): its pods pending later (replacements) are its failure
 * policy's, never a reason to move it or the JobSet. Kept per attempt. */
static void note_started(struct pass *p, struct pjobset *j)
{
	size_t jobs = 0, n = 0;

	for (size_t g = 0; g < j->request.group_count; g++)
		jobs += j->request.groups[g].replicas;
	if (!j->started || j->started_count != jobs || j->started_attempt != j->record_attempt) {
		uint8_t *fresh = calloc(jobs ? jobs : 1, 1);

		if (!fresh)
			return;
		free(j->started);
		j->started = fresh;
		j->started_count = jobs;
		j->started_attempt = j->record_attempt;
	}
	p->current = j;
	for (size_t g = 0; g < j->request.group_count; g++) {
		const struct topo_jobset_group *group = &j->request.groups[g];

		for (unsigned job = 0; job < group->replicas; job++, n++) {
			unsigned c = 0;

			if (j->started[n])
				continue;
			while (c < group->pods && bound_now(p, group->name, job, c))
				c++;
			j->started[n] = c == group->pods;
		}
	}
}

/* 1 when some node of the pass's cluster is in the pod's recorded domain. */
static int domain_has_nodes(const struct pass *p, const char *rj, uint32_t job, uint32_t completion)
{
	const char *selector = NULL;

	if (!p->work_cluster || !p->current->record ||
	    !topo_record_find(p->current->record, rj, job, completion, &selector) || !*selector)
		return 1;
	for (size_t n = 0; n < p->work_cluster->node_count; n++)
		if (topo_record_selector_matches(selector, &p->work_cluster->nodes[n]))
			return 1;
	return 0;
}

static int pod_bound(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	struct pass *p = arg;
	const struct pjobset *j = p->current;
	long n;

	/* A moved Job's old pods, bound where it was, are being deleted: its
	 * new runs keep their room promised meanwhile; its new pods, once
	 * bound, are bound. */
	for (size_t i = 0; i < j->moved_count; i++)
		if (j->moved[i].job == job && strcmp(j->moved[i].replicated_job, rj) == 0 &&
		    j->moved[i].until > now_s()) {
			char key[600];
			const struct bound *b;

			snprintf(key, sizeof(key), "%s/%u/%s/%u/%u", j->uid, j->record_attempt, rj, job,
				 completion);
			if (!(b = (const struct bound *)name_table_find(&p->loop->bound, j->namespace, key)))
				return 0;
			for (size_t k = 0; k < j->moved[i].old_count; k++)
				if (strcmp(j->moved[i].old_pods[k], b->pod) == 0)
					return 0;
			return 1;
		}
	if (bound_now(p, rj, job, completion))
		return 1;
	/* A started Job's pod pending again is its failure policy's: it
	 * promises no room and is never stranded; unless its domain has no
	 * node left at all (it could never run, and never fail either). */
	if (j->started && j->started_attempt == j->record_attempt && (n = job_number(j, rj, job)) >= 0 &&
	    (size_t)n < j->started_count && j->started[n])
		return domain_has_nodes(p, rj, job, completion);
	return 0;
}

/* 1 when a pod the JobSet's request implies is not bound (p->current is j). */
static int some_pod_unbound(struct pass *p, const struct pjobset *j)
{
	for (size_t g = 0; g < j->request.group_count; g++) {
		const struct topo_jobset_group *group = &j->request.groups[g];

		for (unsigned job = 0; job < group->replicas; job++)
			for (unsigned c = 0; c < group->pods; c++)
				if (!pod_bound(p, group->name, job, c))
					return 1;
	}
	return 0;
}

static void add_relocation(struct pass *p, const struct pjobset *j, enum relocation_kind kind,
			   const struct topo_promise *promise, double for_s)
{
	struct relocation *r;

	for (size_t i = 0; i < p->relocation_count; i++)
		if (p->relocations[i].jobset == j)
			return; /* one relocation a JobSet a pass */
	if (p->relocation_count == p->relocation_cap) {
		size_t cap = p->relocation_cap ? p->relocation_cap * 2 : 4;
		struct relocation *grown = realloc(p->relocations, cap * sizeof(*grown));

		if (!grown)
			return;
		p->relocations = grown;
		p->relocation_cap = cap;
	}
	r = &p->relocations[p->relocation_count++];
	memset(r, 0, sizeof(*r));
	snprintf(r->namespace, sizeof(r->namespace), "%s", j->namespace);
	snprintf(r->name, sizeof(r->name), "%s", j->name);
	snprintf(r->uid, sizeof(r->uid), "%s", j->uid);
	r->kind = kind;
	r->attempt = j->record_attempt;
	r->restarts = j->restarts;
	if (promise)
		r->promise = *promise;
	r->for_s = for_s;
	r->jobset = j;
}

/* A placed, running JobSet without the record of its current attempt is
 * placed afresh: at once when it restarted (the record is of an earlier
 * attempt); when the record is gone, only while pods still need it to be
 * pinned (a JobSet whose pods all run is left alone). Neither needs the
 * topology nor the cluster, so a topology problem does not hold them up. */
static void check_record(void *arg, struct name_node *node)
{
	struct pass *p = arg;
	struct pjobset *j = (struct pjobset *)node;

	if (strcmp(j->state, MUSTER_PLACEMENT_PLACED) != 0 || j->suspended || j->finished || !j->decoded ||
	    !j->record_checked || j->relocating)
		return;
	p->current = j;
	if (j->record && j->record_attempt != j->restarts)
		add_relocation(p, j, RELOCATE_RESTART, NULL, 0);
	else if (j->move_stuck)
		add_relocation(p, j, RELOCATE_STUCK, NULL, 0);
	else if (!j->record && now_s() - j->relocated_at > MISSING_RECORD_GRACE_S && some_pod_unbound(p, j))
		add_relocation(p, j, RELOCATE_MISSING, NULL, 0);
}

/* A placed JobSet's pods not bound yet take their room (topo_promise.h);
 * when some have none left in their domain for long enough, or their domain
 * has no node at all, the JobSet is to be placed again. */
static void reserve_jobset(void *arg, struct name_node *node)
{
	struct pass *p = arg;
	struct pjobset *j = (struct pjobset *)node;
	struct topo_promise promise;
	double now = now_s();
	int live;

	live = strcmp(j->state, MUSTER_PLACEMENT_PLACED) == 0 && !j->suspended;
	/* No record of its current attempt: it promises nothing (check_record). */
	if (j->finished || !j->decoded || (j->suspended && strcmp(j->state, MUSTER_PLACEMENT_PLACED) == 0) ||
	    !j->record || j->record_attempt != j->restarts || j->relocating)
		return;
	p->current = j;
	if (p->skip) {
		if (j != p->skip)
			topo_promise_take(p->work_cluster, p->work_nodes, &j->request, j->record, pod_bound,
					  p, &promise);
		return;
	}
	if (live)
		note_started(p, j);
	topo_promise_take(p->work_cluster, p->work_nodes, &j->request, j->record, pod_bound, p, &promise);
	p->reserved_pods += promise.reserved;
	if (live && promise.reserved)
		p->promising++;
	if (!live || !promise.stranded) {
		j->stranded_since = 0;
		j->no_room_noted = 0;
		return;
	}
	p->stranded++;
	if (!j->stranded_since) {
		j->stranded_since = now;
		mlog(MLOG_WARN, "placement-stranded",
		     "jobset=%s/%s pods=%llu domain=\"%s\" nodes=\"%s\" action=\"%s\"", j->namespace, j->name,
		     (unsigned long long)promise.stranded, promise.domain, promise.why,
		     promise.gone ? "placed again" : "placed again unless room comes back in time");
	}
	if (!promise.gone && now - j->stranded_since < p->loop->replace_after)
		return;
	add_relocation(p, j, RELOCATE_LOST, &promise, now - j->stranded_since);
}

/* `c` becomes the snapshot, on `nodes` (as many as the snapshot's), with
 * the room of every placed JobSet but j taken. */
static void reserve_others(struct pass *p, const struct topo_cluster *snapshot, struct topo_cluster *c,
			   struct topo_node *nodes, const struct pjobset *j)
{
	struct topo_cluster *saved_cluster = p->work_cluster;
	struct topo_node *saved_nodes = p->work_nodes;

	*c = *snapshot;
	c->nodes = nodes;
	memcpy(nodes, snapshot->nodes, snapshot->node_count * sizeof(*nodes));
	p->work_cluster = c;
	p->work_nodes = nodes;
	p->skip = j;
	name_table_each(&p->loop->jobsets, reserve_jobset, p);
	p->skip = NULL;
	p->work_cluster = saved_cluster;
	p->work_nodes = saved_nodes;
}

/* Room for a copy of the snapshot's nodes to model j on (malloc'd), and
 * *level: with no topology at all, the one label the JobSet names, as
 * decide() does. NULL when j cannot be modelled (no topology and no single
 * label, a topology problem, no node, no memory). */
static struct topo_node *model_scratch(const struct topology *top, const struct topo_cluster *snapshot,
				       const struct pjobset *j, const char **level)
{
	*level = NULL;
	if (top->none && !(*level = single_level(&j->request)))
		return NULL;
	if ((top->problem[0] && !top->none) || !snapshot->node_count)
		return NULL;
	return malloc(snapshot->node_count * sizeof(struct topo_node));
}

/* 1 when the JobSet of a relocation would fit the cluster now, its own
 * promise given back (its bound pods still counted: conservative), every
 * other JobSet's taken: placing it again is worth suspending it; 0 when it
 * would not; -1 when this pass cannot tell (the topology was not read). A
 * domain with no node left is placed again whatever: its pods can never run. */
static int fits_elsewhere(struct pass *p, const struct topology *top, const struct topo_cluster *snapshot,
			  const struct pjobset *j)
{
	struct topo_node *scratch;
	struct topo_cluster c = *snapshot;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request request;
	struct topo_placement *pl = NULL;
	struct topo_tree *t;
	char *cause = NULL;
	int fits = 0;

	const char *level = NULL;

	if (!top->read)
		return -1;
	if (!(scratch = model_scratch(top, snapshot, j, &level)))
		return 0;
	reserve_others(p, snapshot, &c, scratch, j);
	t = level ? topo_tree_from_levels(&c, &level, 1, &cause) : build_tree(top, &c, &cause);
	if (t)
		fits = topo_jobset_place(&j->request, t, groups, &request, &pl, &cause) == 0;
	topo_placement_free(pl);
	topo_tree_free(t);
	free(cause);
	free(scratch);
	return fits;
}

/* The top-level domains' free cores and nodes, for /metrics. */
static void note_domains(struct placement_loop *loop, const struct topo_tree *t)
{
	const struct topo_cluster *c = t->cluster;
	int cpu = topo_resource_index(c, "cpu");
	size_t shown = 0;

	for (uint32_t d = 1; d < t->domain_count && shown < PLACEMENT_DOMAINS_SHOWN; d++) {
		const struct topo_domain *dom = &t->domains[d];

		if (dom->level != 1)
			continue;
		snprintf(loop->stats.domains[shown], sizeof(loop->stats.domains[shown]), "%s",
			 dom->name ? dom->name : "");
		loop->stats.free_cpu[shown] = 0;
		loop->stats.free_nodes[shown] = 0;
		for (uint32_t leaf = d; leaf < dom->end; leaf++) {
			const struct topo_node *n;

			if (t->domains[leaf].node == TOPO_NONE)
				continue;
			n = &c->nodes[t->domains[leaf].node];
			if (n->unschedulable || n->not_ready) /* the scheduler binds nothing there */
				continue;
			loop->stats.free_nodes[shown] += 1;
			if (cpu >= 0)
				loop->stats.free_cpu[shown] +=
					(double)(n->allocatable[cpu] - n->used[cpu]) / 1e3;
		}
		shown++;
	}
	loop->stats.domain_count = shown;
}

/* The one node label a JobSet's request names (its levels, slices,
 * exclusive-topology), or NULL when it names none, several, or tiers: with
 * no topology in the cluster, upstream JobSet's exclusive-topology and a
 * single Kueue level still mean a domain per value of that label. */
static const char *single_level(const struct topo_jobset *js)
{
	const char *found = NULL;

#define NOTE(level)                                                                                          \
	do {                                                                                                 \
		const char *l_ = (level);                                                                    \
		if (l_ && found && strcmp(l_, found) != 0)                                                   \
			return NULL;                                                                         \
		if (l_)                                                                                      \
			found = l_;                                                                          \
	} while (0)
	if (js->whole_network.set)
		return NULL;
	NOTE(js->whole_required);
	NOTE(js->whole_preferred);
	for (size_t g = 0; g < js->group_count; g++) {
		const struct topo_jobset_group *group = &js->groups[g];

		if (group->network.set || group->partitions)
			return NULL;
		NOTE(group->required);
		NOTE(group->preferred);
		NOTE(group->slice_level);
		NOTE(group->exclusive);
		for (size_t i = 0; i < group->inner_count; i++)
			NOTE(group->inner_levels[i]);
	}
#undef NOTE
	return found;
}

static struct topo_tree *build_tree(const struct topology *top, const struct topo_cluster *c, char **cause)
{
	if (top->from_hypernodes)
		return topo_tree_from_hypernodes(c, top->hypernodes, top->hypernode_count, cause);
	return topo_tree_from_levels(c, top->levels, top->level_count, cause);
}

/* The domains a placement used, for the Event ("rack-1/a, rack-2/b"). */
static void describe(const struct topo_tree *t, const struct topo_placement *pl, char *out, size_t size)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < pl->instance_count && at + 2 < size; i++) {
		char path[200];
		size_t seen = 0;

		while (seen < i && pl->instance_domain[seen] != pl->instance_domain[i])
			seen++;
		if (seen < i)
			continue; /* named already */
		topo_tree_path(t, pl->instance_domain[i], path, sizeof(path));
		at += (size_t)snprintf(out + at, size - at, "%s%s", at ? ", " : "",
				       path[0] ? path : "(cluster)");
	}
}

/* The Jobs with stranded pods, each once. */
struct stranded_jobs {
	struct topo_move_job jobs[MOVE_JOBS_MAX];
	char names[MOVE_JOBS_MAX][64];
	size_t count;
	int overflow; /* more Jobs than MOVE_JOBS_MAX, or a name too long */
};

static void note_stranded(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	struct stranded_jobs *s = arg;

	(void)completion;
	for (size_t i = 0; i < s->count; i++)
		if (s->jobs[i].job_index == job && strcmp(s->names[i], rj) == 0)
			return;
	if (s->count == MOVE_JOBS_MAX || strlen(rj) >= sizeof(s->names[0])) {
		s->overflow = 1;
		return;
	}
	snprintf(s->names[s->count], sizeof(s->names[0]), "%s", rj);
	s->jobs[s->count].replicated_job = s->names[s->count];
	s->jobs[s->count].job_index = job;
	s->count++;
}

struct skip_moving {
	struct pass *p;
	const struct stranded_jobs *moving;
};

/* pod_bound, and every pod of a moving Job counts as bound (it takes no
 * room where it was: it is placed again). */
static int bound_or_moving(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	const struct skip_moving *sm = arg;

	for (size_t i = 0; i < sm->moving->count; i++)
		if (sm->moving->jobs[i].job_index == job && strcmp(sm->moving->names[i], rj) == 0)
			return 1;
	return pod_bound(sm->p, rj, job, completion);
}

/* Only the moving Jobs' pods, all of them: the rest count as bound. */
static int bound_or_staying(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	const struct skip_moving *sm = arg;

	(void)completion;
	for (size_t i = 0; i < sm->moving->count; i++)
		if (sm->moving->jobs[i].job_index == job && strcmp(sm->moving->names[i], rj) == 0)
			return 0; /* its pods bound now are old ones: every pod takes room anew */
	return 1;
}

/* Tries to move the Jobs of a lost-room relocation alone (topo_move.h):
 * 1 with a move queued (the relocation is dropped), else 0 (the whole
 * JobSet is considered, as before). Under the lock. */
static int try_move(struct pass *p, const struct topology *top, const struct topo_cluster *snapshot,
		    struct pjobset *j, const struct relocation *r)
{
	struct stranded_jobs stranded = { 0 };
	struct skip_moving sm = { p, &stranded };
	struct topo_promise promise;
	struct topo_cluster c;
	struct topo_node *scratch;
	struct topo_tree *t = NULL;
	const char *level = NULL;
	char where[256], *text = NULL, *cause = NULL;
	int rc = -1;

	if (!top->read || !j->record || !j->decoded || !(scratch = model_scratch(top, snapshot, j, &level)))
		return 0;
	/* Which Jobs have pods with no room, every other JobSet's room taken. */
	reserve_others(p, snapshot, &c, scratch, j);
	p->current = j;
	topo_promise_take_each(&c, scratch, &j->request, j->record, pod_bound, p, note_stranded, &stranded,
			       &promise);
	if (stranded.count && !stranded.overflow) {
		/* Afresh: the others' room and that of j's staying Jobs. */
		reserve_others(p, snapshot, &c, scratch, j);
		p->current = j;
		topo_promise_take(&c, scratch, &j->request, j->record, bound_or_moving, &sm, &promise);
		t = level ? topo_tree_from_levels(&c, &level, 1, &cause) : build_tree(top, &c, &cause);
		if (t)
			rc = topo_move(&j->request, t, j->record, stranded.jobs, stranded.count, &text, where,
				       sizeof(where), &cause);
	}
	if (rc == TOPO_MOVE_PLACED) {
		struct move *grown = realloc(p->moves, (p->move_count + 1) * sizeof(*grown)), *m;

		if (grown) {
			p->moves = grown;
			m = &p->moves[p->move_count++];
			memset(m, 0, sizeof(*m));
			snprintf(m->namespace, sizeof(m->namespace), "%s", j->namespace);
			snprintf(m->name, sizeof(m->name), "%s", j->name);
			snprintf(m->uid, sizeof(m->uid), "%s", j->uid);
			m->record = text;
			text = NULL;
			m->count = stranded.count;
			memcpy(m->names, stranded.names, sizeof(m->names));
			for (size_t i = 0; i < m->count; i++)
				m->job_index[i] = stranded.jobs[i].job_index;
			if (r->promise.gone)
				snprintf(
					m->reason, sizeof(m->reason),
					"%llu pods not bound yet lost every node of their domain (%s): moved "
					"alone to %s; the other Jobs keep their domains",
					(unsigned long long)r->promise.stranded, r->promise.domain, where);
			else
				snprintf(m->reason, sizeof(m->reason),
					 "%llu pods not bound yet had no room in their domain (%s; %s) for "
					 "%.0f s: moved alone to %s; the other Jobs keep their domains",
					 (unsigned long long)r->promise.stranded, r->promise.domain,
					 r->promise.why, r->for_s, where);
			/* Their new room is taken in this pass's working copy at
			 * once: a JobSet placed later in the pass does not get it. */
			{
				struct topo_record *moved = NULL;

				if (topo_record_parse(m->record, strlen(m->record), &moved, NULL) == 0) {
					p->current = j;
					topo_promise_take(p->work_cluster, p->work_nodes, &j->request, moved,
							  bound_or_staying, &sm, &promise);
				}
				topo_record_free(moved);
			}
		} else {
			rc = -1;
		}
	} else if (!j->move_refused_noted && (cause || stranded.overflow)) {
		j->move_refused_noted = 1;
		mlog(MLOG_INFO, "placement-move-refused", "jobset=%s/%s jobs=%zu reason=\"%s\"", j->namespace,
		     j->name, stranded.count,
		     stranded.overflow ? "more Jobs lost room than are moved alone" : cause);
	}
	free(text);
	free(cause);
	topo_tree_free(t);
	free(scratch);
	return rc == TOPO_MOVE_PLACED;
}

/* Drops the relocations that would not fit elsewhere now (their pods wait
 * where they are pinned; checked again on the next pass), saying so once. */
static void keep_worthwhile_relocations(struct pass *p, const struct topology *top,
					const struct topo_cluster *snapshot)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->relocation_count; i++) {
		struct relocation *r = &p->relocations[i];
		struct pjobset *j = (struct pjobset *)r->jobset;

		int fits;

		/* A pass that did not read the topology (only Nodes changed)
		 * leaves it to the next, a second later: moving Jobs alone
		 * needs the topology, even when a domain is gone. */
		if (r->kind == RELOCATE_LOST && !top->read)
			continue;
		/* One move a pass: the next one is decided on a model that
		 * holds this one's record (a second later). */
		if (r->kind == RELOCATE_LOST && p->move_count)
			continue;
		if (r->kind == RELOCATE_LOST && j->move_failures < MOVE_FAILURES_MAX &&
		    try_move(p, top, snapshot, j, r))
			continue; /* its stranded Jobs move alone */
		fits = r->kind != RELOCATE_LOST || r->promise.gone ? 1 : fits_elsewhere(p, top, snapshot, j);

		if (fits == 1) {
			p->relocations[kept++] = *r;
			continue;
		}
		if (fits == 0 && !j->no_room_noted) {
			j->no_room_noted = 1;
			mlog(MLOG_WARN, "placement-stranded",
			     "jobset=%s/%s pods=%llu domain=\"%s\" nodes=\"%s\" seconds=%.1f "
			     "action=\"kept: the cluster has no other room for it now; checked again\"",
			     j->namespace, j->name, (unsigned long long)r->promise.stranded,
			     r->promise.domain, r->promise.why, r->for_s);
		}
	}
	p->relocation_count = kept;
}

/* Decides under the lock; fills p->actions. */
static void decide(struct pass *p, const struct topology *top)
{
	struct placement_loop *loop = p->loop;
	struct topo_cluster snapshot, *c = &p->cluster;
	struct topo_tree *t = NULL;
	char *cause = NULL;

	name_table_each(&loop->jobsets, collect_pending, p);
	name_table_each(&loop->jobsets, check_record, p);
	if (p->pending_count > 1)
		qsort(p->pending, p->pending_count, sizeof(*p->pending), by_creation);
	p->actions = calloc(p->pending_count ? p->pending_count : 1, sizeof(*p->actions));
	if (!p->actions)
		return;
	if ((!top->problem[0] || top->none) && topo_cache_cluster(loop->cache, &snapshot, &cause) == 0) {
		/* A copy the pass may add promised room to. */
		if (snapshot.node_count > loop->work_cap) {
			struct topo_node *grown = realloc(loop->work, snapshot.node_count * sizeof(*grown));

			if (grown) {
				loop->work = grown;
				loop->work_cap = snapshot.node_count;
			}
		}
		if (snapshot.node_count <= loop->work_cap) {
			if (snapshot.node_count)
				memcpy(loop->work, snapshot.nodes, snapshot.node_count * sizeof(*loop->work));
			*c = snapshot;
			c->nodes = loop->work;
			p->work_cluster = c;
			p->work_nodes = loop->work;
			name_table_each(&loop->jobsets, reserve_jobset, p);
			keep_worthwhile_relocations(p, top, &snapshot);
			if (p->pending_count && !top->problem[0])
				t = build_tree(top, c, &cause);
		}
	}
	if (t)
		note_domains(loop, t);
	for (size_t i = 0; i < p->pending_count; i++) {
		struct pjobset *j = p->pending[i];
		struct action *a = &p->actions[p->action_count++];
		struct topo_group groups[TOPO_GROUPS_MAX];
		struct topo_request request;
		struct topo_placement *pl = NULL;
		struct topo_tree *own = NULL, *use = t;
		const char *level = NULL;
		char *why = NULL;

		/* No topology at all: the one label the JobSet names, if it does. */
		if (top->none && j->decoded && p->work_cluster && (level = single_level(&j->request)) != NULL)
			use = own = topo_tree_from_levels(c, &level, 1, &why);
		snprintf(a->namespace, sizeof(a->namespace), "%s", j->namespace);
		snprintf(a->name, sizeof(a->name), "%s", j->name);
		snprintf(a->uid, sizeof(a->uid), "%s", j->uid);
		a->attempt = j->restarts;
		if (!j->decoded) {
			snprintf(a->reason, sizeof(a->reason), "the placement request: %s", j->decode_cause);
		} else if (top->problem[0] && !own) {
			snprintf(a->reason, sizeof(a->reason), "%.440s%s%.440s", top->problem,
				 why ? ": " : "", why ? why : "");
		} else if (!use) {
			snprintf(a->reason, sizeof(a->reason), "the topology tree: %s",
				 cause ? cause : "out of memory");
		} else if (topo_jobset_place(&j->request, use, groups, &request, &pl, &why) == 0 &&
			   topo_record_encode(use, &request, pl, j->uid, j->restarts, &a->record, &why) ==
				   0) {
			a->place = 1;
			a->pods = pl->pod_count;
			describe(use, pl, a->where, sizeof(a->where));
			/* Its pods take their room before the next JobSet is placed. */
			for (size_t k = 0; k < pl->pod_count; k++) {
				const struct topo_jobset_group *g =
					group_named(j, request.groups[pl->pods[k].group].name);

				if (pl->pods[k].node != TOPO_NONE && g)
					take(c, &loop->work[pl->pods[k].node], &g->pod);
			}
			if (t) {
				topo_tree_free(t);
				t = build_tree(top, c, &cause);
			}
		} else {
			snprintf(a->reason, sizeof(a->reason), "%s", why ? why : "out of memory");
		}
		free(why);
		topo_tree_free(own);
		topo_placement_free(pl);
		if (!a->place)
			a->reason_changed = strcmp(a->reason, j->reason) != 0;
	}
	loop->stats.waiting = p->held;
	loop->retrying = 0;
	for (size_t i = 0; i < p->action_count; i++)
		loop->stats.waiting += !p->actions[i].place;
	if (p->pending_count || p->relocation_count)
		mlog(MLOG_INFO, "placement-pass", "pending=%zu promised_pods=%llu nodes=%zu relocations=%zu",
		     p->pending_count, (unsigned long long)p->reserved_pods, c->node_count,
		     p->relocation_count);
	topo_tree_free(t);
	free(cause);
}

/* ---- acting ---- */

/* Resumed: placed from now on, whatever the informer has not shown yet, so
 * the next pass neither places nor resumes it again. */
static void mark_placed(struct placement_loop *loop, const char *namespace, const char *name, const char *uid)
{
	struct pjobset *j;

	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, namespace, name);
	if (j && strcmp(j->uid, uid) == 0) {
		snprintf(j->state, sizeof(j->state), "%s", MUSTER_PLACEMENT_PLACED);
		j->suspended = 0; /* resumed: its room is promised from now on */
		j->resuming = 0;
		j->relocating = 0;
	}
	pthread_mutex_unlock(&loop->lock);
}

/* Acts on one decision outside the lock. Returns 1 when it placed. */
static int act(struct placement_loop *loop, struct action *a, double started)
{
	struct topo_record *kept = NULL, *written = NULL;
	char *cause = NULL, quoted[1024];
	int err, foreign = 0;

	if (!a->place) {
		if (!a->reason_changed)
			return 0;
		mlog(MLOG_INFO, "placement-waiting", "jobset=%s/%s reason=%s", a->namespace, a->name,
		     mlog_quote(quoted, sizeof(quoted), a->reason, strlen(a->reason)));
		err = write_reason(loop, a->namespace, a->name, a->uid, a->reason, &cause);
		if (!err) { /* written: not again until it changes (a failure is retried) */
			struct pjobset *j;

			pthread_mutex_lock(&loop->lock);
			j = (struct pjobset *)name_table_find(&loop->jobsets, a->namespace, a->name);
			if (j && strcmp(j->uid, a->uid) == 0)
				snprintf(j->reason, sizeof(j->reason), "%s", a->reason);
			pthread_mutex_unlock(&loop->lock);
		}
		if (err)
			mlog(MLOG_WARN, "placement-reason-failed", "jobset=%s/%s err=%s cause=\"%s\"",
			     a->namespace, a->name, kube_err_name(err), cause ? cause : "");
		free(cause);
		jobset_event_post(loop->api[API_WRITES].client, a->namespace, a->name, a->uid,
				  "PlacementWaiting", 1, a->reason);
		return 0;
	}
	err = record_write(loop, a->namespace, a->name, a->uid, a->attempt, a->record, &kept, &foreign,
			   &cause);
	if (err && foreign) { /* the user's to clear: wait, saying so */
		snprintf(a->reason, sizeof(a->reason), "%s",
			 cause ? cause : "a foreign ConfigMap is in the way");
		free(cause);
		a->place = 0;
		pthread_mutex_lock(&loop->lock);
		{
			struct pjobset *j =
				(struct pjobset *)name_table_find(&loop->jobsets, a->namespace, a->name);

			a->reason_changed =
				j && strcmp(j->uid, a->uid) == 0 && strcmp(j->reason, a->reason) != 0;
		}
		/* Waiting: tried again every PLACEMENT_RETRY_S (ConfigMaps are not
		 * watched; its removal brings no event). */
		loop->stats.waiting++;
		loop->retrying++;
		pthread_mutex_unlock(&loop->lock);
		return act(loop, a, started);
	}
	if (!err && !kept && topo_record_parse(a->record, strlen(a->record), &written, NULL) != 0)
		written = NULL;
	if (!err) {
		/* Promised from now on, whatever the informer has seen. */
		struct pjobset *j;

		pthread_mutex_lock(&loop->lock);
		j = (struct pjobset *)name_table_find(&loop->jobsets, a->namespace, a->name);
		if (j && strcmp(j->uid, a->uid) == 0) {
			set_record(j, kept ? kept : written);
			j->record_checked = 1;
			kept = written = NULL;
		}
		pthread_mutex_unlock(&loop->lock);
		err = resume(loop, a->namespace, a->name, a->uid, &cause);
	}
	topo_record_free(kept);
	topo_record_free(written);
	if (err) {
		pthread_mutex_lock(&loop->lock);
		loop->stats.record_failures++;
		/* Still waiting (or recorded, not resumed): the next passes, every
		 * PLACEMENT_RETRY_S at least, try again whatever else happens. */
		loop->stats.waiting++;
		loop->retrying++;
		pthread_mutex_unlock(&loop->lock);
		mlog(MLOG_WARN, "placement-write-failed",
		     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"", a->namespace, a->name,
		     kube_err_name(err), cause ? cause : "");
		free(cause);
		return 0;
	}
	free(cause);
	mark_placed(loop, a->namespace, a->name, a->uid);
	mlog(MLOG_INFO, "placed", "jobset=%s/%s pods=%zu domains=\"%s\" ms=%.1f", a->namespace, a->name,
	     a->pods, a->where, (now_s() - started) * 1e3);
	{
		char message[400];

		snprintf(message, sizeof(message), "placed %zu pods in %s", a->pods, a->where);
		jobset_event_post(loop->api[API_WRITES].client, a->namespace, a->name, a->uid, "Placed", 0,
				  message);
	}
	if (loop->observer.placed)
		loop->observer.placed(loop->observer.arg, now_s() - started);
	return 1;
}

/* The pod route caches a record this long (webhook/record_cache.h): a
 * JobSet placed again waits it out, so no pod is pinned by the old one. */
#define RECORD_CACHE_WAIT_S 11

/* Suspends a placed JobSet whose pending pods lost their domain, drops its
 * record and lets the next passes place it again. */
static void relocate(struct placement_loop *loop, const struct relocation *r)
{
	char path[KUBE_PATH_MAX], reason[REASON_MAX], *cause = NULL;
	cJSON *patch = cJSON_CreateObject(), *metadata, *annotations, *spec;
	char *text = NULL;
	struct pjobset *j;
	int err;

	if (r->kind == RELOCATE_RESTART)
		snprintf(reason, sizeof(reason),
			 "restart attempt %u: placed afresh (its placement of record was for attempt %u)",
			 r->restarts, r->attempt);
	else if (r->kind == RELOCATE_MISSING)
		snprintf(reason, sizeof(reason),
			 "its placement of record (ConfigMap %s" MUSTER_PLACEMENT_SUFFIX
			 ") is gone and pods not bound yet need it: placed again",
			 r->name);
	else if (r->kind == RELOCATE_STUCK)
		snprintf(
			reason, sizeof(reason),
			"moving Jobs alone failed %d times in a row (see event=placement-write-failed; "
			"muster-controller needs get and delete on jobs.batch): the whole JobSet placed again",
			MOVE_FAILURES_MAX);
	else if (r->promise.gone)
		snprintf(reason, sizeof(reason),
			 "%llu pods not bound yet lost every node of their domain (%s): placed again",
			 (unsigned long long)r->promise.stranded, r->promise.domain);
	else
		snprintf(reason, sizeof(reason),
			 "%llu pods not bound yet had no room in their domain (%s; %s) for %.0f s: "
			 "placed again",
			 (unsigned long long)r->promise.stranded, r->promise.domain, r->promise.why,
			 r->for_s);
	/* The record goes first: a JobSet suspended with its record still there
	 * would be resumed from it by the next pass (recorded, not resumed).
	 * Dropped but not suspended, it is simply relocated again next pass. */
	err = record_drop(loop, r->namespace, r->name, r->uid, &cause);
	if (!err)
		err = kube_path(path, sizeof(path), &KUBE_JOBSETS, r->namespace, r->name, &cause);
	if (!err && patch && (metadata = cJSON_AddObjectToObject(patch, "metadata")) &&
	    cJSON_AddStringToObject(metadata, "uid", r->uid) &&
	    (annotations = cJSON_AddObjectToObject(metadata, "annotations")) &&
	    cJSON_AddStringToObject(annotations, MUSTER_ANNOTATION_PLACEMENT, MUSTER_PLACEMENT_WAITING) &&
	    cJSON_AddStringToObject(annotations, MUSTER_ANNOTATION_PLACEMENT_REASON, reason) &&
	    (spec = cJSON_AddObjectToObject(patch, "spec")) && cJSON_AddTrueToObject(spec, "suspend") &&
	    (text = cJSON_PrintUnformatted(patch)))
		err = kube_patch(loop->api[API_WRITES].client, path, KUBE_PATCH_MERGE, text, NULL, &cause);
	else if (!err)
		err = KUBE_ENOMEM;
	cJSON_Delete(patch);
	free(text);
	if (err) {
		mlog(MLOG_WARN, "placement-write-failed",
		     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"", r->namespace, r->name,
		     kube_err_name(err), cause ? cause : "");
		free(cause);
		return;
	}
	free(cause);
	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, r->namespace, r->name);
	if (j && strcmp(j->uid, r->uid) == 0) {
		set_record(j, NULL);
		/* Moved Jobs not deleted yet: the whole JobSet is placed again. */
		free(j->retire);
		j->retire = NULL;
		j->retire_count = 0;
		j->record_checked = 1;
		j->suspended = 1;
		j->relocating = 1;
		snprintf(j->state, sizeof(j->state), "%s", MUSTER_PLACEMENT_WAITING);
		/* The pod route may hold the old record a while; a new attempt's
		 * pods are never pinned by an earlier attempt's (record_cache.h). */
		j->hold_until = r->kind == RELOCATE_RESTART ? 0 : now_s() + loop->hold_s;
		/* Its Jobs stay (JobSet suspends them): a Job pinned whole
		 * carries the old domain in its pod template. They are deleted
		 * at the hold's end, once no cached old record can pin a Job
		 * made again; a new attempt's Jobs are new. */
		j->clear_jobs = r->kind != RELOCATE_RESTART;
		j->relocated_at = now_s();
		j->stranded_since = 0;
		j->move_stuck = 0;
		j->move_failures = 0;
		/* Placed afresh: no Job of the new placement has started. */
		free(j->started);
		j->started = NULL;
		j->started_count = 0;
	}
	if (r->kind == RELOCATE_RESTART)
		loop->stats.restarts++;
	else
		loop->stats.relocations++;
	pthread_mutex_unlock(&loop->lock);
	if (r->kind == RELOCATE_RESTART) {
		mlog(MLOG_INFO, "placement-restart",
		     "jobset=%s/%s attempt=%u record_attempt=%u action=\"suspended, placed "
		     "afresh\"",
		     r->namespace, r->name, r->restarts, r->attempt);
		jobset_event_post(loop->api[API_WRITES].client, r->namespace, r->name, r->uid,
				  "PlacementRenewed", 0, reason);
		return;
	}
	if (r->kind == RELOCATE_MISSING || r->kind == RELOCATE_STUCK)
		mlog(MLOG_WARN, "placement-lost",
		     "jobset=%s/%s reason=\"%s\" action=\"suspended, placed again\"", r->namespace, r->name,
		     r->kind == RELOCATE_MISSING ? "its placement of record is gone"
						 : "moving Jobs alone kept failing");
	else
		mlog(MLOG_WARN, "placement-lost",
		     "jobset=%s/%s pods=%llu domain=\"%s\" nodes=\"%s\" seconds=%.1f action=\"suspended, placed "
		     "again\"",
		     r->namespace, r->name, (unsigned long long)r->promise.stranded, r->promise.domain,
		     r->promise.why, r->for_s);
	jobset_event_post(loop->api[API_WRITES].client, r->namespace, r->name, r->uid, "PlacementLost", 1,
			  reason);
}

/* ---- moving Jobs alone ---- */

static int job_path(char *path, size_t size, const char *namespace, const char *jobset, const char *rj,
		    uint32_t job, char **cause)
{
	char name[3 * KUBE_NAME_MAX];

	/* JobSet names its child Jobs <jobset>-<replicated job>-<job index>. */
	snprintf(name, sizeof(name), "%s-%s-%u", jobset, rj, job);
	return kube_path(path, size, &KUBE_JOBS, namespace, name, cause);
}

/* A Job moved alone counts its pods as not bound this long after its
 * delete is due (their room in the new domain stays promised while the
 * old ones go). */
#define MOVED_HOLD_S 120

/* A move's write or a moved Job's delete failed: counted; after
 * MOVE_FAILURES_MAX in a row the whole JobSet is placed again (pods pinned
 * where the record no longer points must not wait forever). */
static void move_failed(struct placement_loop *loop, const char *namespace, const char *name, const char *uid)
{
	struct pjobset *j;

	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, namespace, name);
	if (j && strcmp(j->uid, uid) == 0 && ++j->move_failures >= MOVE_FAILURES_MAX && !j->move_stuck) {
		j->move_stuck = 1;
		loop->placed_changed = 1;
		mark_dirty(loop);
	}
	pthread_mutex_unlock(&loop->lock);
}

/* Notes `job` as moved until `until`, adding the pods of it bound now to
 * its old pods (none of its new pods exists before its old Job is gone).
 * Under lock. */
static void note_moved(struct placement_loop *loop, struct pjobset *j, const char *rj, uint32_t job,
		       double until)
{
	const struct topo_jobset_group *group = group_named(j, rj);
	struct moved_job *m = NULL;

	for (size_t i = 0; i < j->moved_count && !m; i++)
		if (j->moved[i].job == job && strcmp(j->moved[i].replicated_job, rj) == 0)
			m = &j->moved[i];
	for (size_t i = 0; i < j->moved_count && !m; i++) /* reuse an expired slot */
		if (j->moved[i].until < now_s()) {
			m = &j->moved[i];
			free(m->old_pods);
			m->old_pods = NULL;
			m->old_count = 0;
		}
	if (!m) {
		struct moved_job *grown = realloc(j->moved, (j->moved_count + 1) * sizeof(*grown));

		if (!grown)
			return;
		j->moved = grown;
		m = &grown[j->moved_count++];
		memset(m, 0, sizeof(*m));
	}
	snprintf(m->replicated_job, sizeof(m->replicated_job), "%s", rj);
	m->job = job;
	m->until = until;
	for (unsigned c = 0; group && c < group->pods; c++) {
		char key[600];
		const struct bound *b;
		int known = 0;

		snprintf(key, sizeof(key), "%s/%u/%s/%u/%u", j->uid, j->record_attempt, rj, job, c);
		if (!(b = (const struct bound *)name_table_find(&loop->bound, j->namespace, key)))
			continue;
		for (size_t k = 0; k < m->old_count && !known; k++)
			known = strcmp(m->old_pods[k], b->pod) == 0;
		if (!known) {
			char(*grown)[254] = realloc(m->old_pods, (m->old_count + 1) * sizeof(*grown));

			if (!grown)
				return;
			m->old_pods = grown;
			snprintf(grown[m->old_count++], sizeof(grown[0]), "%s", b->pod);
		}
	}
}

/* Writes a move: the record with the moved Jobs' new runs and, in the same
 * patch (guarded by the ConfigMap's resourceVersion), every moved Job in
 * the list of Jobs to check once the pod route's cached copies of the old
 * record have expired: by its uid when it exists (deleted then), else "-"
 * (a Job JobSet makes meanwhile is checked by its pods' pins). Any failure
 * leaves everything as it was: the next pass finds the pods still stranded
 * and tries again. */
static void move_jobs(struct placement_loop *loop, const struct move *m)
{
	enum release_owner owner = RELEASE_OWNER_FOREIGN;
	cJSON *configmap = NULL, *patch = NULL, *metadata, *annotations, *data;
	const cJSON *text, *rv, *moved;
	struct topo_record *old = NULL, *written = NULL;
	struct topo_retire *list = NULL;
	size_t count = 0;
	char path[KUBE_PATH_MAX], *cause = NULL, *body = NULL, *listed = NULL;
	double due = 0;
	struct pjobset *j;
	int err;

	err = record_get(loop, m->namespace, m->name, m->uid, &configmap, &owner, &cause);
	text = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY);
	rv = kjson_member(kjson_member(configmap, "metadata"), "resourceVersion");
	if (!err &&
	    (!configmap || owner != RELEASE_OWNER_OURS || !cJSON_IsString(text) || !cJSON_IsString(rv) ||
	     topo_record_parse(text->valuestring, strlen(text->valuestring), &old, NULL) ||
	     strcmp(topo_record_uid(old), m->uid) != 0 ||
	     topo_record_parse(m->record, strlen(m->record), &written, NULL) ||
	     topo_record_attempt(old) != topo_record_attempt(written)))
		err = kube_cause(&cause, KUBE_ECONFLICT,
				 "the placement record changed since the pass read it");
	moved = kjson_member(kjson_member(kjson_member(configmap, "metadata"), "annotations"),
			     MUSTER_ANNOTATION_PLACEMENT_RETIRE);
	if (!err && cJSON_IsString(moved) &&
	    retire_parse(moved->valuestring, &list, &count, m->namespace, m->name))
		err = kube_cause(&cause, KUBE_ENOMEM, "no memory for the moved Jobs");
	for (size_t i = 0; !err && i < m->count; i++) {
		cJSON *job = NULL;
		const char *job_uid, *js_uid, *attempt;
		struct topo_retire r = { 0 };

		err = job_path(path, sizeof(path), m->namespace, m->name, m->names[i], m->job_index[i],
			       &cause);
		if (!err)
			err = kube_get(loop->api[API_WRITES].client, path, &job, &cause);
		if (err == KUBE_ENOTFOUND) {
			free(cause);
			cause = NULL;
			err = 0;
		}
		if (err)
			break;
		job_uid = meta_string(job, "uid");
		js_uid = label(job, JOBSET_LABEL_UID);
		attempt = label(job, JOBSET_LABEL_RESTART_ATTEMPT);
		snprintf(r.replicated_job, sizeof(r.replicated_job), "%s", m->names[i]);
		r.job = m->job_index[i];
		/* This attempt's Job: deleted when due; none (or another's):
		 * whatever Job holds the name then is checked by its pods. */
		if (job_uid && js_uid && strcmp(js_uid, m->uid) == 0 && strlen(job_uid) < sizeof(r.job_uid) &&
		    (!attempt || strtoul(attempt, NULL, 10) == topo_record_attempt(written) ||
		     !topo_record_has_attempt(written)))
			snprintf(r.job_uid, sizeof(r.job_uid), "%s", job_uid);
		else
			snprintf(r.job_uid, sizeof(r.job_uid), "-");
		r.due = -1; /* set below, once the reads are done */
		if (topo_retire_add(&list, &count, &r))
			err = kube_cause(&cause, KUBE_ENOMEM, "no memory for the moved Jobs");
		cJSON_Delete(job);
	}
	/* Due once every cached copy read before the patch commits has
	 * expired: from now (the reads are done), rounded up. */
	due = (double)(long long)(wall_s() + loop->hold_s + 2);
	for (size_t i = 0; i < count; i++)
		if (list[i].due < 0)
			list[i].due = due;
	if (!err && !(listed = topo_retire_format(list, count)))
		err = kube_cause(&cause, KUBE_ENOMEM, "no memory for the moved Jobs");
	if (!err) {
		/* One merge patch, refused (409) if the ConfigMap changed since read. */
		if (!(patch = cJSON_CreateObject()) ||
		    !(metadata = cJSON_AddObjectToObject(patch, "metadata")) ||
		    !cJSON_AddStringToObject(metadata, "resourceVersion", rv->valuestring) ||
		    !(annotations = cJSON_AddObjectToObject(metadata, "annotations")) ||
		    !(count ? cJSON_AddStringToObject(annotations, MUSTER_ANNOTATION_PLACEMENT_RETIRE, listed)
			    : cJSON_AddNullToObject(annotations, MUSTER_ANNOTATION_PLACEMENT_RETIRE)) ||
		    !(data = cJSON_AddObjectToObject(patch, "data")) ||
		    !cJSON_AddStringToObject(data, MUSTER_PLACEMENT_KEY, m->record) ||
		    !(body = cJSON_PrintUnformatted(patch)))
			err = kube_cause(&cause, KUBE_ENOMEM, "no memory for the record patch");
		if (!err)
			err = record_path(path, sizeof(path), m->namespace, m->name, 0, &cause);
		if (!err)
			err = kube_patch(loop->api[API_WRITES].client, path, KUBE_PATCH_MERGE, body, NULL,
					 &cause);
	}
	cJSON_Delete(patch);
	cJSON_Delete(configmap);
	free(body);
	free(listed);
	topo_record_free(old);
	if (err) {
		mlog(MLOG_WARN, "placement-write-failed",
		     "jobset=%s/%s err=%s cause=\"%s\" action=\"move retried\"", m->namespace, m->name,
		     kube_err_name(err), cause ? cause : "");
		free(cause);
		free(list);
		topo_record_free(written);
		move_failed(loop, m->namespace, m->name, m->uid);
		return;
	}
	free(cause);
	/* This controller waits from the patch's answer (a slow patch gives the
	 * pod route's caches no less time). */
	{
		double after = (double)(long long)(wall_s() + loop->hold_s + 1);

		for (size_t i = 0; i < count; i++)
			if (list[i].due == due && after > due)
				list[i].due = after;
		if (after > due)
			due = after;
	}
	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, m->namespace, m->name);
	if (j && strcmp(j->uid, m->uid) == 0) {
		set_record(j, written);
		written = NULL;
		free(j->retire);
		j->retire = list;
		j->retire_count = count;
		list = NULL;
		j->stranded_since = 0;
		j->no_room_noted = 0;
		j->move_refused_noted = 0;
		j->move_failures = 0;
		for (size_t i = 0; i < m->count; i++)
			note_moved(loop, j, m->names[i], m->job_index[i],
				   now_s() + (due - wall_s()) + MOVED_HOLD_S);
		if (!loop->next_retire || due < loop->next_retire)
			loop->next_retire = due;
	}
	loop->stats.moves += m->count;
	pthread_mutex_unlock(&loop->lock);
	free(list);
	topo_record_free(written);
	{
		char jobs[300];
		size_t at = 0;

		jobs[0] = '\0';
		for (size_t i = 0; i < m->count && at + 2 < sizeof(jobs); i++)
			at += (size_t)snprintf(jobs + at, sizeof(jobs) - at, "%s%s/%u", i ? "," : "",
					       m->names[i], m->job_index[i]);
		mlog(MLOG_WARN, "placement-moved",
		     "jobset=%s/%s jobs=\"%s\" reason=\"%s\" action=\"record rewritten; "
		     "the Jobs are deleted in %.0f s for JobSet to make again\"",
		     m->namespace, m->name, jobs, m->reason, due - wall_s());
	}
	jobset_event_post(loop->api[API_WRITES].client, m->namespace, m->name, m->uid, "PlacementMoved", 1,
			  m->reason);
}

/* A JobSet's moved Jobs due now, to delete outside the lock. */
struct retiring {
	char namespace[64], name[254], uid[129];
	struct topo_retire *due;
	size_t count;
};

struct due_list {
	struct retiring *work;
	size_t count;
	double now, next; /* next: the earliest entry not due yet (0: none) */
};

static void collect_due(void *arg, struct name_node *node)
{
	struct due_list *c = arg;
	struct pjobset *j = (struct pjobset *)node;
	struct retiring *grown, *w;

	if (!j->retire_count || !(grown = realloc(c->work, (c->count + 1) * sizeof(*grown))))
		return;
	c->work = grown;
	w = &c->work[c->count];
	memset(w, 0, sizeof(*w));
	for (size_t i = 0; i < j->retire_count; i++) {
		if (j->retire[i].due > c->now) {
			if (!c->next || j->retire[i].due < c->next)
				c->next = j->retire[i].due;
			continue;
		}
		if (topo_retire_add(&w->due, &w->count, &j->retire[i]))
			break;
	}
	if (!w->count)
		return;
	snprintf(w->namespace, sizeof(w->namespace), "%s", j->namespace);
	snprintf(w->name, sizeof(w->name), "%s", j->name);
	snprintf(w->uid, sizeof(w->uid), "%s", j->uid);
	c->count++;
}

/* 1 when the pod's nodeSelector holds every key=value of `selector`. */
static int pins_to(const cJSON *pod, const char *selector)
{
	const cJSON *ns = kjson_member(kjson_member(pod, "spec"), "nodeSelector");

	while (*selector) {
		const char *eq = strchr(selector, '='), *comma;
		char key[320], value[64];
		size_t key_len, value_len;
		const cJSON *have;

		if (!eq)
			return 0;
		comma = strchr(eq + 1, ',');
		key_len = (size_t)(eq - selector);
		value_len = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
		if (key_len >= sizeof(key) || value_len >= sizeof(value))
			return 0;
		memcpy(key, selector, key_len);
		key[key_len] = '\0';
		memcpy(value, eq + 1, value_len);
		value[value_len] = '\0';
		have = kjson_member(ns, key);
		if (!cJSON_IsString(have) || strcmp(have->valuestring, value) != 0)
			return 0;
		selector = comma ? comma + 1 : eq + 1 + value_len;
	}
	return 1;
}

/* 1 when a pod of Job `job_uid` (replicated job rj, job index) is pinned
 * otherwise than the JobSet's record says (a pod the pod route pinned by a
 * cached copy of the old record), 0 when none is, or a negative kube_err. */
static int pinned_by_old_runs(struct placement_loop *loop, const struct retiring *w, const char *rj,
			      uint32_t job, const char *job_uid, char **cause)
{
	char path[KUBE_PATH_MAX], selector[512];
	struct kube_selectors sel = { selector, NULL };
	cJSON *pods = cJSON_CreateArray();
	const cJSON *pod;
	struct pjobset *j;
	int err, stale = 0;

	if (!pods)
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the pods of a moved Job");
	if ((err = kube_path(path, sizeof(path), &KUBE_PODS, w->namespace, NULL, cause)) != 0) {
		cJSON_Delete(pods);
		return err;
	}
	snprintf(selector, sizeof(selector),
		 JOBSET_LABEL_NAME "=%s," JOBSET_LABEL_REPLICATED_JOB "=%s," JOBSET_LABEL_JOB_INDEX "=%u",
		 w->name, rj, job);
	err = kube_list(loop->api[API_WRITES].client, path, &sel, 0, kube_item_collect, pods, NULL, cause);
	if (err) {
		cJSON_Delete(pods);
		return err;
	}
	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);
	cJSON_ArrayForEach(pod, pods)
	{
		const cJSON *owners = kjson_member(kjson_member(pod, "metadata"), "ownerReferences"), *owner;
		const char *index = annotation(pod, JOB_ANNOTATION_COMPLETION_INDEX), *want = NULL;
		int ours = 0;

		cJSON_ArrayForEach(owner, owners)
		{
			const cJSON *uid = kjson_member(owner, "uid");

			ours |= cJSON_IsString(uid) && strcmp(uid->valuestring, job_uid) == 0;
		}
		if (!index)
			index = label(pod, JOB_ANNOTATION_COMPLETION_INDEX);
		if (!ours || !index || !j || strcmp(j->uid, w->uid) != 0 || !j->record)
			continue;
		if (topo_record_find(j->record, rj, job, (uint32_t)strtoul(index, NULL, 10), &want) &&
		    *want && !pins_to(pod, want))
			stale = 1;
	}
	pthread_mutex_unlock(&loop->lock);
	cJSON_Delete(pods);
	return stale;
}

/* 1 when Job `job` (replicated job rj, job index) is pinned whole (its pod
 * template labelled MUSTER_LABEL_JOB_PINNED) otherwise than the
 * JobSet's record gives its pods: not one run for all of them, or a run
 * whose selector its template does not hold. */
static int template_pinned_by_old_runs(struct placement_loop *loop, const struct retiring *w, const char *rj,
				       uint32_t job, const cJSON *object)
{
	const cJSON *template = kjson_member(kjson_member(object, "spec"), "template");
	const cJSON *pinned = kjson_member(kjson_member(kjson_member(template, "metadata"), "labels"),
					   MUSTER_LABEL_JOB_PINNED);
	const cJSON *completions = kjson_member(kjson_member(object, "spec"), "completions");
	uint32_t pods = cJSON_IsNumber(completions) && completions->valuedouble >= 1
				? (uint32_t)completions->valuedouble
				: 1;
	const char *want = NULL;
	struct pjobset *j;
	int stale = 0;

	if (!cJSON_IsString(pinned) || strcmp(pinned->valuestring, "true") != 0)
		return 0;
	pthread_mutex_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);
	if (j && strcmp(j->uid, w->uid) == 0 && j->record)
		stale = topo_record_find_range(j->record, rj, job, 0, pods - 1, &want) != 1 ||
			!pins_to(template, want);
	pthread_mutex_unlock(&loop->lock);
	return stale;
}

/* One listed Job, due: deleted if it is the one moved (by its uid); a Job
 * of the name made since (or when none existed) is deleted only if it
 * (pinned whole) or a pod of it was pinned by the old runs. 0 with *result,
 * or a kube_err. */
static int retire_one(struct placement_loop *loop, const struct retiring *w, const struct topo_retire *e,
		      const char **result, char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *job = NULL;
	const char *uid;
	char job_uid[TOPO_RETIRE_UID_MAX];
	int err, stale;

	err = job_path(path, sizeof(path), w->namespace, w->name, e->replicated_job, e->job, cause);
	if (!err)
		err = kube_get(loop->api[API_WRITES].client, path, &job, cause);
	if (err == KUBE_ENOTFOUND) {
		free(*cause);
		*cause = NULL;
		*result = "no such Job: JobSet makes it, pinned by the new record";
		return 0;
	}
	if (err)
		return err;
	uid = meta_string(job, "uid");
	snprintf(job_uid, sizeof(job_uid), "%s", uid ? uid : "");
	/* Made during the wait and pinned whole by a cached copy of the old
	 * record: its pods, made or to come, would go where it pointed. */
	stale = template_pinned_by_old_runs(loop, w, e->replicated_job, e->job, job);
	cJSON_Delete(job);
	if (!job_uid[0])
		return kube_cause(cause, KUBE_EPARSE, "the Job has no metadata.uid");
	if (strcmp(job_uid, e->job_uid) != 0 && !stale) {
		stale = pinned_by_old_runs(loop, w, e->replicated_job, e->job, job_uid, cause);
		if (stale < 0)
			return stale;
		if (!stale) {
			*result = "made again already, its pods pinned by the new record";
			return 0;
		}
	}
	err = kube_delete_uid_propagated(loop->api[API_WRITES].client, path, job_uid, "Foreground", cause);
	if (err && err != KUBE_ENOTFOUND && err != KUBE_ECONFLICT)
		return err;
	free(*cause);
	*cause = NULL;
	*result = strcmp(job_uid, e->job_uid) != 0
			  ? "made during the wait, it or a pod of it pinned by the old record: "
			    "deleted, JobSet makes it again"
			  : "deleted: JobSet makes it again, pinned by the new record";
	return 0;
}

/* Deletes the moved Jobs whose time has come (Foreground, as JobSet does:
 * the pods go before the Job, so JobSet makes it again only once they
 * are gone; preconditions on the Job's uid, so a Job made again since is
 * never deleted), then drops them from the annotation. Gone already or
 * made again counts as done. A failure is retried on the next pass. */
static void retire_due(struct placement_loop *loop)
{
	struct retiring *work = NULL;
	size_t work_count = 0;
	double now = wall_s(), next = 0;
	struct due_list c = { NULL, 0, now, 0 };

	pthread_mutex_lock(&loop->lock);
	if (!loop->next_retire || loop->next_retire > now) {
		pthread_mutex_unlock(&loop->lock);
		return;
	}
	name_table_each(&loop->jobsets, collect_due, &c);
	work = c.work;
	work_count = c.count;
	next = c.next;
	loop->next_retire = next;
	pthread_mutex_unlock(&loop->lock);
	for (size_t k = 0; k < work_count; k++) {
		struct retiring *w = &work[k];
		size_t done = 0;

		for (size_t i = 0; i < w->count; i++) {
			char *cause = NULL;
			const char *result = NULL;
			int err = retire_one(loop, w, &w->due[i], &result, &cause);

			if (!err) {
				mlog(MLOG_INFO, "placement-job-retired",
				     "jobset=%s/%s job=%s-%s-%u uid=%s result=\"%s\"", w->namespace, w->name,
				     w->name, w->due[i].replicated_job, w->due[i].job, w->due[i].job_uid,
				     result);
				w->due[i].due = -1; /* done */
				done++;
			} else {
				mlog(MLOG_WARN, "placement-write-failed",
				     "jobset=%s/%s job=%s-%s-%u err=%s cause=\"%s\" action=\"retried\"",
				     w->namespace, w->name, w->name, w->due[i].replicated_job, w->due[i].job,
				     kube_err_name(err), cause ? cause : "");
			}
			free(cause);
		}
		if (!done && w->count) /* one failure a JobSet a pass */
			move_failed(loop, w->namespace, w->name, w->uid);
		if (done) {
			struct pjobset *j;
			struct topo_retire *left = NULL;
			size_t left_count = 0;
			char *text = NULL, *body = NULL, *cause = NULL, path[KUBE_PATH_MAX];
			cJSON *patch = NULL, *metadata, *annotations;
			int err = 0;

			pthread_mutex_lock(&loop->lock);
			j = (struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);
			if (j && strcmp(j->uid, w->uid) == 0) {
				for (size_t i = 0; i < j->retire_count; i++) {
					int gone = 0;

					for (size_t d = 0; d < w->count; d++)
						gone |= w->due[d].due < 0 &&
							w->due[d].job == j->retire[i].job &&
							strcmp(w->due[d].replicated_job,
							       j->retire[i].replicated_job) == 0;
					if (!gone)
						j->retire[left_count++] = j->retire[i];
				}
				j->retire_count = left_count;
				j->move_failures = 0;
				j->move_stuck = 0;
				loop->stats.jobs_retired += done;
				for (size_t d = 0; d < w->count; d++)
					if (w->due[d].due < 0)
						note_moved(loop, j, w->due[d].replicated_job, w->due[d].job,
							   now_s() + MOVED_HOLD_S);
				if (left_count && (left = malloc(left_count * sizeof(*left))))
					memcpy(left, j->retire, left_count * sizeof(*left));
			}
			pthread_mutex_unlock(&loop->lock);
			/* No memory for what is left: the annotation stays as it is
			 * (an entry done already is found done again). */
			text = left_count && !left ? NULL : topo_retire_format(left, left ? left_count : 0);
			if (text && (patch = cJSON_CreateObject()) &&
			    (metadata = cJSON_AddObjectToObject(patch, "metadata")) &&
			    (annotations = cJSON_AddObjectToObject(metadata, "annotations")) &&
			    (*text ? cJSON_AddStringToObject(annotations, MUSTER_ANNOTATION_PLACEMENT_RETIRE,
							     text)
				   : cJSON_AddNullToObject(annotations,
							   MUSTER_ANNOTATION_PLACEMENT_RETIRE)) &&
			    (body = cJSON_PrintUnformatted(patch))) {
				err = record_path(path, sizeof(path), w->namespace, w->name, 0, &cause);
				if (!err)
					err = kube_patch(loop->api[API_WRITES].client, path, KUBE_PATCH_MERGE,
							 body, NULL, &cause);
			}
			/* Not fatal: an entry left there is deleted again by uid, and found gone. */
			if (err && err != KUBE_ENOTFOUND)
				mlog(MLOG_WARN, "placement-write-failed",
				     "jobset=%s/%s err=%s cause=\"%s\" action=\"the retired Jobs stay listed\"",
				     w->namespace, w->name, kube_err_name(err), cause ? cause : "");
			free(cause);
			free(body);
			free(text);
			free(left);
			cJSON_Delete(patch);
		}
		if (done < w->count) { /* failures: the next pass tries again */
			pthread_mutex_lock(&loop->lock);
			if (!loop->next_retire || now + 1 < loop->next_retire)
				loop->next_retire = now + 1;
			pthread_mutex_unlock(&loop->lock);
		}
		free(w->due);
	}
	free(work);
}

/* JobSets whose record was never read: read once (a restart finds the
 * placements of record there). */
struct unread {
	char namespace[64], name[254], uid[129];
};

struct unread_list {
	struct unread *items;
	size_t count, cap;
};

static void collect_unread(void *arg, struct name_node *node)
{
	struct unread_list *l = arg;
	struct pjobset *j = (struct pjobset *)node;

	if (j->record_checked || strcmp(j->state, MUSTER_PLACEMENT_USER_HELD) == 0)
		return;
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct unread *grown = realloc(l->items, cap * sizeof(*grown));

		if (!grown)
			return;
		l->items = grown;
		l->cap = cap;
	}
	snprintf(l->items[l->count].namespace, sizeof(l->items[l->count].namespace), "%s", j->namespace);
	snprintf(l->items[l->count].name, sizeof(l->items[l->count].name), "%s", j->name);
	snprintf(l->items[l->count].uid, sizeof(l->items[l->count].uid), "%s", j->uid);
	l->count++;
}

static void read_records(struct placement_loop *loop)
{
	struct unread_list l = { 0 };

	pthread_mutex_lock(&loop->lock);
	name_table_each(&loop->jobsets, collect_unread, &l);
	pthread_mutex_unlock(&loop->lock);
	for (size_t i = 0; i < l.count; i++) {
		struct topo_record *record = NULL;
		struct topo_retire *retire = NULL;
		size_t retire_count = 0;
		struct pjobset *j;
		char *cause = NULL;
		int err = record_read(loop, l.items[i].namespace, l.items[i].name, l.items[i].uid, &record,
				      &retire, &retire_count, &cause);

		if (err) {
			mlog(MLOG_WARN, "placement-record-unread", "jobset=%s/%s err=%s cause=\"%s\"",
			     l.items[i].namespace, l.items[i].name, kube_err_name(err), cause ? cause : "");
			free(cause);
			continue;
		}
		pthread_mutex_lock(&loop->lock);
		j = (struct pjobset *)name_table_find(&loop->jobsets, l.items[i].namespace, l.items[i].name);
		if (j && strcmp(j->uid, l.items[i].uid) == 0) {
			set_record(j, record);
			j->record_checked = 1;
			record = NULL;
			free(j->retire);
			j->retire = retire;
			j->retire_count = retire_count;
			retire = NULL;
			if (j->retire_count) /* a retire pass is due: it finds them */
				loop->next_retire = 1;
			/* A record already written for a JobSet still waiting (the
			 * controller stopped between the two writes): resume it. */
			if (j->record && strcmp(j->state, MUSTER_PLACEMENT_WAITING) == 0)
				loop->dirty = 1;
		}
		pthread_mutex_unlock(&loop->lock);
		free(retire);
		topo_record_free(record);
	}
	free(l.items);
}

/* Waiting JobSets whose record exists already (the controller stopped
 * between writing it and the resume): resumed without a new placement,
 * their room promised by the record. Under lock. */
static void collect_recorded(void *arg, struct name_node *node)
{
	struct pjobset *j = (struct pjobset *)node;
	struct unread_list *l = arg;
	size_t before = l->count;

	j->resuming = j->record && j->record_attempt == j->restarts && !j->finished &&
		      strcmp(j->state, MUSTER_PLACEMENT_WAITING) == 0;
	if (!j->resuming)
		return;
	j->record_checked = 0; /* collect_unread takes only unread ones */
	collect_unread(arg, node);
	j->record_checked = 1;
	if (l->count == before)
		j->resuming = 0; /* no memory: placed again instead */
}

/* ---- Jobs pinned whole, of a JobSet placed again ---- */

/* A failed read or delete of them is tried again this much later. */
#define CLEAR_RETRY_S 5

/* A JobSet whose pinned Jobs are due to go. */
struct clearing {
	char namespace[64], name[254], uid[129];
	char groups[TOPO_GROUPS_MAX][64];
	unsigned replicas[TOPO_GROUPS_MAX];
	size_t group_count;
};

struct clear_list {
	struct clearing *work;
	size_t count;
};

static void collect_clear(void *arg, struct name_node *node)
{
	struct clear_list *c = arg;
	struct pjobset *j = (struct pjobset *)node;
	struct clearing *grown, *w;

	if (!j->clear_jobs || j->hold_until > now_s())
		return;
	if (!j->decoded) { /* no Job names to read: nothing of it was pinned by this request */
		j->clear_jobs = 0;
		return;
	}
	if (!(grown = realloc(c->work, (c->count + 1) * sizeof(*grown))))
		return;
	c->work = grown;
	w = &c->work[c->count++];
	memset(w, 0, sizeof(*w));
	snprintf(w->namespace, sizeof(w->namespace), "%s", j->namespace);
	snprintf(w->name, sizeof(w->name), "%s", j->name);
	snprintf(w->uid, sizeof(w->uid), "%s", j->uid);
	for (size_t g = 0; g < j->request.group_count && g < TOPO_GROUPS_MAX; g++) {
		snprintf(w->groups[g], sizeof(w->groups[g]), "%s", j->request.groups[g].name);
		w->replicas[g] = j->request.groups[g].replicas;
		w->group_count++;
	}
}

/* 1 when a Job has finished (condition Complete or Failed): it makes no
 * pod again, so its pins no longer matter, and deleted it would run again. */
static int job_finished(const cJSON *job)
{
	return condition_done(job, "Complete");
}

/* Deletes one Job of `w` if its pod template is pinned whole (the label
 * MUSTER_LABEL_JOB_PINNED) or holds the domain of most of its pods (the
 * annotation MUSTER_ANNOTATION_JOB_SELECTOR) and it is the
 * JobSet's own: 1 deleted, 0 nothing to do, or a negative kube_err. */
static int clear_one(struct placement_loop *loop, const struct clearing *w, const char *rj, unsigned job,
		     char **cause)
{
	char path[KUBE_PATH_MAX], uid[TOPO_RETIRE_UID_MAX];
	const cJSON *owner, *pinned, *template_meta;
	cJSON *object = NULL;
	int ours = 0, whole, err;

	err = job_path(path, sizeof(path), w->namespace, w->name, rj, job, cause);
	if (!err)
		err = kube_get(loop->api[API_WRITES].client, path, &object, cause);
	if (err == KUBE_ENOTFOUND) {
		free(*cause);
		*cause = NULL;
		return 0;
	}
	if (err)
		return err;
	cJSON_ArrayForEach(owner, kjson_member(kjson_member(object, "metadata"), "ownerReferences"))
	{
		const cJSON *owner_uid = kjson_member(owner, "uid");

		ours |= cJSON_IsString(owner_uid) && strcmp(owner_uid->valuestring, w->uid) == 0;
	}
	template_meta = kjson_member(kjson_member(kjson_member(object, "spec"), "template"), "metadata");
	pinned = kjson_member(kjson_member(template_meta, "labels"), MUSTER_LABEL_JOB_PINNED);
	/* Its pod template carries a domain of the old record: pinned whole,
	 * or given the domain of most of its pods. */
	whole = ((cJSON_IsString(pinned) && strcmp(pinned->valuestring, "true") == 0) ||
		 cJSON_IsString(kjson_member(kjson_member(template_meta, "annotations"),
					     MUSTER_ANNOTATION_JOB_SELECTOR))) &&
		!job_finished(object);
	snprintf(uid, sizeof(uid), "%s", meta_string(object, "uid"));
	cJSON_Delete(object);
	if (!ours || !whole || !uid[0])
		return 0;
	err = kube_delete_uid_propagated(loop->api[API_WRITES].client, path, uid, "Background", cause);
	if (err == KUBE_ENOTFOUND || err == KUBE_ECONFLICT) {
		free(*cause);
		*cause = NULL;
		return 0;
	}
	return err ? err : 1;
}

/* The Jobs pinned whole (or given a share) of JobSets placed again whose hold has ended:
 * deleted (JobSet makes them again once the new record is written; the pin
 * route refuses them until then), so none runs pods where the old record
 * pointed. A JobSet is placed only after all of its went; a failure is
 * logged and tried again next pass. */
static void clear_due(struct placement_loop *loop)
{
	struct clear_list c = { 0 };

	pthread_mutex_lock(&loop->lock);
	name_table_each(&loop->jobsets, collect_clear, &c);
	pthread_mutex_unlock(&loop->lock);
	for (size_t i = 0; i < c.count; i++) {
		const struct clearing *w = &c.work[i];
		unsigned deleted = 0;
		char *cause = NULL;
		int err = 0;

		for (size_t g = 0; g < w->group_count && !err; g++)
			for (unsigned r = 0; r < w->replicas[g] && !err; r++) {
				int rc = clear_one(loop, w, w->groups[g], r, &cause);

				if (rc < 0)
					err = rc;
				else
					deleted += (unsigned)rc;
			}
		if (err == KUBE_EUNAUTHORIZED) {
			/* Without get and delete on jobs.batch nothing can be
			 * done about them: placed again all the same (a Job
			 * pinned by the old record strands its pods again, and
			 * says so). */
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"placed again without deleting its Jobs "
			     "pinned by the old record: muster-controller needs get and delete on jobs.batch\"",
			     w->namespace, w->name, kube_err_name(err), cause ? cause : "");
		} else if (err) {
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"its Jobs pinned by the old record are "
			     "deleted before it is placed again; retried in %d s\"",
			     w->namespace, w->name, kube_err_name(err), cause ? cause : "", CLEAR_RETRY_S);
			free(cause);
			pthread_mutex_lock(&loop->lock);
			{
				struct pjobset *j = (struct pjobset *)name_table_find(&loop->jobsets,
										      w->namespace, w->name);

				if (j && strcmp(j->uid, w->uid) == 0)
					j->hold_until = now_s() + CLEAR_RETRY_S;
			}
			pthread_mutex_unlock(&loop->lock);
			continue;
		}
		free(cause);
		cause = NULL;
		if (deleted)
			mlog(MLOG_INFO, "placement-jobs-cleared",
			     "jobset=%s/%s jobs=%u action=\"deleted: pinned whole or given a share by the old record; JobSet "
			     "makes them again once placed\"",
			     w->namespace, w->name, deleted);
		pthread_mutex_lock(&loop->lock);
		{
			struct pjobset *j =
				(struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);

			if (j && strcmp(j->uid, w->uid) == 0)
				j->clear_jobs = 0;
			mark_dirty(loop);
		}
		pthread_mutex_unlock(&loop->lock);
	}
	free(c.work);
}

static void run_pass(struct placement_loop *loop)
{
	struct topology top;
	struct pass p = { .loop = loop };
	struct unread_list recorded = { 0 };
	double started = now_s();
	int placing;

	memset(&top, 0, sizeof(top));
	top.store.chunk = 4096;
	read_records(loop);
	clear_due(loop);
	pthread_mutex_lock(&loop->lock);
	{
		struct pass probe = { .loop = loop };

		name_table_each(&loop->jobsets, collect_pending, &probe);
		placing = probe.pending_count > 0;
		/* Nothing to place nor to move: no API reads. */
		loop->next_hold = probe.next_hold;
		if (!probe.pending_count && !loop->stranded) {
			loop->dirty = 0;
			loop->pods_changed = 0;
			loop->stats.waiting = probe.held;
			loop->retrying = 0;
			pthread_mutex_unlock(&loop->lock);
			free(probe.pending);
			goto resume_only;
		}
		free(probe.pending);
	}
	pthread_mutex_unlock(&loop->lock);
	read_topology(loop, &top);
resume_only:
	pthread_mutex_lock(&loop->lock);
	loop->dirty = 0;
	loop->pods_changed = 0;
	loop->stats.passes++;
	/* Recorded but not resumed: resumed, not placed again. */
	name_table_each(&loop->jobsets, collect_recorded, &recorded);
	/* The decision, and the checks of placed JobSets (lost domains,
	 * restarts): when something waits, Nodes changed (a pod's event cannot
	 * take a domain's nodes away), a placed JobSet changed, or placed pods
	 * are not bound yet. */
	if (placing || loop->nodes_changed || loop->placed_changed || loop->promising) {
		loop->nodes_changed = 0;
		loop->placed_changed = 0;
		decide(&p, &top);
		loop->next_hold = p.next_hold;
		loop->promising = p.promising;
		loop->stranded = p.stranded;
	}
	loop->stats.last_decision_s = now_s() - started;
	pthread_mutex_unlock(&loop->lock);
	for (size_t i = 0; i < recorded.count; i++) {
		char *cause = NULL;
		int err = resume(loop, recorded.items[i].namespace, recorded.items[i].name,
				 recorded.items[i].uid, &cause);

		if (err) {
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"",
			     recorded.items[i].namespace, recorded.items[i].name, kube_err_name(err),
			     cause ? cause : "");
			pthread_mutex_lock(&loop->lock);
			loop->stats.waiting++; /* resumed by a pass PLACEMENT_RETRY_S later at most */
			loop->retrying++;
			pthread_mutex_unlock(&loop->lock);
		} else
			mark_placed(loop, recorded.items[i].namespace, recorded.items[i].name,
				    recorded.items[i].uid);
		if (!err)
			mlog(MLOG_INFO, "placement-resumed",
			     "jobset=%s/%s reason=\"its placement of record was written before\"",
			     recorded.items[i].namespace, recorded.items[i].name);
		free(cause);
	}
	for (size_t i = 0; i < p.action_count; i++) {
		int placed = act(loop, &p.actions[i], started);

		pthread_mutex_lock(&loop->lock);
		if (placed) {
			loop->stats.placements++;
			loop->promising++; /* its pods are not bound yet: checked from the next pass */
		} else if (p.actions[i].reason_changed)
			loop->stats.refusals++;
		pthread_mutex_unlock(&loop->lock);
		free(p.actions[i].record);
	}
	for (size_t i = 0; i < p.relocation_count; i++)
		relocate(loop, &p.relocations[i]);
	for (size_t i = 0; i < p.move_count; i++) {
		move_jobs(loop, &p.moves[i]);
		free(p.moves[i].record);
	}
	free(p.moves);
	retire_due(loop);
	free(p.relocations);
	free(recorded.items);
	free(p.actions);
	free(p.pending);
	topo_store_free(&top.store);
}

/* ---- threads and lifecycle ---- */

int placement_loop_run(struct placement_loop *loop, atomic_int *stop, char **cause)
{
	struct watch_set watches = { 0 }, cluster = { 0 };
	struct watch_spec nodes = { .client = loop->api[API_NODES].client,
				    .informer = loop->informers[WATCH_NODES],
				    .path = "/api/v1/nodes",
				    .page_size = PAGE_SIZE };
	struct watch_spec pods = { .client = loop->api[API_PODS].client,
				   .informer = loop->informers[WATCH_PODS],
				   .path = "/api/v1/pods",
				   .selectors = { .field = "spec.nodeName!=" },
				   .page_size = PAGE_SIZE };
	struct watch_spec jobsets = { .client = loop->api[API_JOBSETS].client,
				      .informer = loop->informers[WATCH_JOBSETS],
				      .page_size = PAGE_SIZE };
	int err, watch_err, cluster_err = 0;
	double last = 0;

	/* The namespace was checked when the loop was made. */
	kube_path(jobsets.path, sizeof(jobsets.path), &KUBE_JOBSETS, loop->namespace, NULL, NULL);
	/* Every request of the loop ends at once on a stop. */
	for (int i = 0; i < API_COUNT; i++)
		if (loop->api[i].client)
			kube_client_set_stop(loop->api[i].client, stop);
	/* The JobSets first; every Node and bound pod only once a JobSet asks
	 * for a placement: a cluster that uses the gang start alone does not
	 * pay for watching every pod. */
	watch_set_add(&watches, &jobsets);
	watch_set_add(&cluster, &nodes);
	watch_set_add(&cluster, &pods);
	err = watch_set_start(&watches, stop, cause);
	while (!err && !atomic_load(stop)) {
		struct timespec until;
		int due, ready, wanted;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += PLACEMENT_COALESCE_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&loop->lock);
		if (!loop->dirty)
			pthread_cond_timedwait(&loop->cond, &loop->lock, &until);
		wanted = !loop->cluster_watching && loop->jobsets.count > 0;
		if (wanted)
			loop->cluster_watching = 1;
		ready = loop->listed[WATCH_NODES] && loop->listed[WATCH_PODS] && loop->listed[WATCH_JOBSETS];
		/* Placed JobSets with pods not bound are checked as often: room in
		 * their domain can go without a Node event (other pods fill it). */
		due = ready &&
		      (loop->dirty || (loop->pods_changed && now_s() - last >= PLACEMENT_POD_PASS_S) ||
		       ((loop->stats.waiting || loop->promising) && now_s() - last >= PLACEMENT_RETRY_S) ||
		       (loop->stranded && now_s() - last >= 1.0) ||
		       (loop->next_hold && now_s() >= loop->next_hold) ||
		       (loop->next_retire && wall_s() >= loop->next_retire));
		pthread_mutex_unlock(&loop->lock);
		if (wanted) {
			mlog(MLOG_INFO, "placement-watching",
			     "reason=\"a JobSet asks for a placement\" watches=\"nodes, "
			     "bound pods\"");
			if ((cluster_err = watch_set_start(&cluster, stop, cause)) != 0)
				break;
		}
		if (!due || now_s() - last < PLACEMENT_COALESCE_MS / 1e3) {
			struct timespec pause = { 0, 20 * 1000000L };

			nanosleep(&pause, NULL);
			continue;
		}
		last = now_s();
		run_pass(loop);
	}
	watch_err = watch_set_join(&watches, err || cluster_err ? NULL : cause);
	if (!watch_err)
		watch_err = watch_set_join(&cluster, err || cluster_err ? NULL : cause);
	else
		watch_set_join(&cluster, NULL);
	return err ? err : cluster_err ? cluster_err : watch_err;
}

static void free_jobset_node(void *arg, struct name_node *node)
{
	struct name_table *t = arg;

	name_table_remove(t, node);
	pjobset_free((struct pjobset *)node);
}

static void free_bound_node(void *arg, struct name_node *node)
{
	struct name_table *t = arg;

	name_table_remove(t, node);
	free(node);
}

void placement_loop_free(struct placement_loop *loop)
{
	if (!loop)
		return;
	for (int i = 0; i < WATCH_COUNT; i++)
		kube_informer_free(loop->informers[i]);
	for (int i = 0; i < API_COUNT; i++) {
		kube_client_free(loop->api[i].client);
		kube_curl_free(loop->api[i].curl);
	}
	name_table_each(&loop->jobsets, free_jobset_node, &loop->jobsets);
	name_table_each(&loop->bound, free_bound_node, &loop->bound);
	name_table_each(&loop->pod_keys, free_bound_node, &loop->pod_keys);
	name_table_clear(&loop->jobsets);
	name_table_clear(&loop->bound);
	name_table_clear(&loop->pod_keys);
	topo_cache_free(loop->cache);
	pthread_mutex_destroy(&loop->lock);
	pthread_cond_destroy(&loop->cond);
	free(loop->work);
	free(loop->namespace);
	free(loop->levels);
	free(loop->topology);
	free(loop->resources);
	free(loop);
}

static int api_new(const struct kube_config *cfg, const struct placement_options *o, struct api *api,
		   char **cause)
{
	int err;

	if (o->transport)
		return kube_client_new(cfg, o->transport, o->transport_ctx, NULL, &api->client, cause);
	err = kube_curl_new(cfg, &api->curl, cause);
	if (!err)
		err = kube_client_new(cfg, &kube_curl_transport, api->curl, NULL, &api->client, cause);
	return err;
}

static char *copy_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

int placement_loop_new(const struct kube_config *cfg, const struct placement_options *o,
		       struct placement_loop **out, char **cause)
{
	struct placement_loop *loop = calloc(1, sizeof(*loop));
	struct kube_informer_handlers handlers[WATCH_COUNT] = {
		{ .on_change = node_change, .on_relist_end = nodes_listed },
		{ .on_change = pod_change, .on_relist_end = pods_listed },
		{ .on_change = jobset_change, .on_relist_end = jobsets_listed },
	};
	char *save = NULL;
	int err = 0;

	*out = NULL;
	if (o->namespace && *o->namespace && !kube_dns_label(o->namespace, KUBE_NAMESPACE_MAX)) {
		free(loop);
		return kube_cause(cause, KUBE_EINVAL, "--namespace must be a DNS-1123 label");
	}
	if (o->topology && *o->topology && !kube_dns_subdomain(o->topology, KUBE_NAME_MAX)) {
		free(loop);
		return kube_cause(cause, KUBE_EINVAL,
				  "--placement-topology must be a Kubernetes object name");
	}
	if (!loop)
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the placement loop");
	pthread_mutex_init(&loop->lock, NULL);
	pthread_cond_init(&loop->cond, NULL);
	loop->hypernodes = o->hypernodes;
	loop->replace_after = o->replace_after_s;
	loop->hold_s = o->hold_ms ? (double)o->hold_ms / 1e3 : RECORD_CACHE_WAIT_S;
	loop->namespace = copy_or_null(o->namespace);
	loop->levels = copy_or_null(o->levels);
	loop->topology = copy_or_null(o->topology);
	loop->resources = strdup(o->resources && *o->resources ? o->resources : PLACEMENT_RESOURCES_DEFAULT);
	if (!loop->resources) {
		placement_loop_free(loop);
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the placement loop");
	}
	for (char *tok = strtok_r(loop->resources, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (loop->resource_count == TOPO_RESOURCES_MAX) {
			placement_loop_free(loop);
			return kube_cause(cause, KUBE_EINVAL, "--placement-resources: at most %d resources",
					  TOPO_RESOURCES_MAX);
		}
		loop->resource_names[loop->resource_count++] = tok;
	}
	if (topo_cache_new(loop->resource_names, loop->resource_count, &loop->cache, cause)) {
		placement_loop_free(loop);
		return KUBE_EINVAL;
	}
	for (int i = 0; i < API_COUNT && !err; i++)
		err = api_new(cfg, o, &loop->api[i], cause);
	for (int i = 0; i < WATCH_COUNT && !err; i++) {
		handlers[i].arg = loop;
		err = kube_informer_new(&handlers[i], &loop->informers[i], cause);
	}
	if (err) {
		placement_loop_free(loop);
		return err;
	}
	*out = loop;
	return 0;
}

int placement_loop_ready(struct placement_loop *loop, char *reason, size_t size)
{
	static const char *const names[WATCH_COUNT] = { "nodes", "pods", "jobsets" };
	int ready = 1;

	pthread_mutex_lock(&loop->lock);
	for (int i = 0; i < WATCH_COUNT; i++)
		if (!loop->listed[i] && ready && (i == WATCH_JOBSETS || loop->cluster_watching)) {
			snprintf(reason, size, "placement: the %s are not listed yet", names[i]);
			ready = 0;
		}
	pthread_mutex_unlock(&loop->lock);
	return ready;
}

void placement_loop_stats(struct placement_loop *loop, struct placement_stats *out)
{
	pthread_mutex_lock(&loop->lock);
	*out = loop->stats;
	pthread_mutex_unlock(&loop->lock);
	out->list_pages_shrunk = 0;
	for (int i = 0; i < API_COUNT; i++) {
		struct kube_client_stats api;

		if (!loop->api[i].client)
			continue;
		kube_client_stats(loop->api[i].client, &api);
		out->list_pages_shrunk += api.list_pages_shrunk;
	}
}

void placement_loop_observe(struct placement_loop *loop, const struct placement_observer *observer)
{
	loop->observer = *observer;
}
