/*
 * placement/mirror.c: the informers' handlers. What the Node, pod and JobSet
 * watches see is kept under the lock: Nodes and the use of bound pods in the
 * topo_cache, which pinned pods are bound (by key, counted), and the JobSets
 * carrying muster.dev/placement (their request decoded, their state). Each
 * change marks a pass due. Not here: any API request, and any decision (the
 * pass reads what is kept here).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "jobset_pod.h"
#include "jobset_state.h"
#include "mlog.h"
#include "muster_api.h"

static void pjobset_free(struct pjobset *j)
{
	if (!j)
		return;
	topo_store_free(&j->store);
	topo_record_free(j->rec.record);
	free(j->moving.retire);
	for (size_t i = 0; i < j->moving.moved_count; i++)
		free(j->moving.moved[i].old_pods);
	free(j->moving.moved);
	free(j->promise.started);
	free(j);
}

/* Takes `record` as the JobSet's placement of record (NULL: none). A
 * record of before attempts were written places the current attempt. */
void placement_set_record(struct pjobset *j, struct topo_record *record)
{
	topo_record_free(j->rec.record);
	j->rec.record = record;
	j->rec.record_attempt = !record				  ? 0
				: topo_record_has_attempt(record) ? topo_record_attempt(record)
								  : j->restarts;
}
/* Notes (or forgets) a JobSet marked as another scheduler's although it
 * asks muster for a domain, to be said once as an Event (act.c). Under the
 * lock; st NULL: deleted. */
static void skipped_note(struct placement_loop *loop, const struct kube_informer_event *e,
			 const struct jobset_state *st)
{
	struct skipped *k = (struct skipped *)name_table_find(&loop->skipped, e->namespace, e->name);
	int wants = st && st->placement_skipped[0] && !st->placement[0];

	if (k && (!wants || strcmp(k->uid, st->uid) != 0)) {
		name_table_remove(&loop->skipped, &k->node);
		free(k);
		k = NULL;
	}
	if (!wants || k || loop->skipped.count >= SKIPPED_MAX || !(k = calloc(1, sizeof(*k))))
		return;
	snprintf(k->namespace, sizeof(k->namespace), "%s", st->namespace);
	snprintf(k->name, sizeof(k->name), "%s", st->name);
	snprintf(k->uid, sizeof(k->uid), "%s", st->uid);
	snprintf(k->by, sizeof(k->by), "%s", st->placement_skipped);
	k->node.namespace = k->namespace;
	k->node.name = k->name;
	if (name_table_insert(&loop->skipped, &k->node)) {
		free(k);
		return;
	}
	loop->skipped_pending = 1;
	pthread_cond_signal(&loop->cond); /* said at the loop's next turn */
}

static int jobset_change(void *arg, const struct kube_informer_event *e)
{
	struct placement_loop *loop = arg;
	struct pjobset *j;
	struct jobset_state *st = NULL;
	const char *state = NULL;
	char *cause = NULL;

	/* Identity and state first, each field on its own (jobset_state.h):
	 * a JobSet whose request cannot be read is still seen to restart. */
	if (e->change != KUBE_INFORMER_DELETE && e->object) {
		if (!(st = malloc(sizeof(*st))))
			return 0;
		if (jobset_state_decode(e->object, st, NULL) == 0 && st->placement[0])
			state = st->placement;
	}
	muster_lock(&loop->lock);
	skipped_note(loop, e, e->change != KUBE_INFORMER_DELETE ? st : NULL);
	j = (struct pjobset *)name_table_find(&loop->jobsets, e->namespace, e->name);
	if (!state || (j && strcmp(j->uid, st->uid) != 0)) {
		if (j) {
			name_table_remove(&loop->jobsets, &j->node);
			pjobset_free(j);
			mark_dirty(loop); /* its promised room is free */
		}
		if (!state)
			goto out;
		j = NULL;
	}
	if (!j) {
		if (!(j = calloc(1, sizeof(*j))))
			goto out;
		snprintf(j->namespace, sizeof(j->namespace), "%s", e->namespace);
		snprintf(j->name, sizeof(j->name), "%s", e->name);
		snprintf(j->uid, sizeof(j->uid), "%s", st->uid);
		snprintf(j->created, sizeof(j->created), "%s", st->created);
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
		j->relocation.clear_jobs = e->relist && strcmp(state, MUSTER_PLACEMENT_WAITING) == 0;
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
			if (j->request.balanced < 0) /* the JobSet does not say */
				j->request.balanced = loop->balanced;
		} else {
			snprintf(j->decode_cause, sizeof(j->decode_cause), "%s",
				 cause ? cause : "out of memory");
			free(cause);
			cause = NULL;
		}
	}
	{
		/* A restart count that is not one: the last one read stands. */
		uint32_t restarts = st->has_restarts ? st->restarts : j->restarts;

		/* A placed JobSet's checks (restart, lost record) run when what
		 * they read changes, not on every status write. */
		if (strcmp(state, MUSTER_PLACEMENT_PLACED) == 0 &&
		    (strcmp(j->state, state) != 0 || j->suspended != st->suspended ||
		     j->restarts != restarts))
			loop->placed_changed = 1;
		j->suspended = st->suspended;
		j->restarts = restarts;
		/* This controller suspended it to place it again: until the informer
		 * shows that, an older event does not make it placed and live. */
		if (j->relocation.relocating &&
		    (st->suspended || strcmp(state, MUSTER_PLACEMENT_WAITING) == 0))
			j->relocation.relocating = 0;
	}
	snprintf(j->state, sizeof(j->state), "%s", state);
	j->finished = st->finished;
	snprintf(j->reason, sizeof(j->reason), "%s", st->placement_reason);
	mark_dirty(loop);
out:
	muster_unlock(&loop->lock);
	free(st);
	return 0;
}

static int node_change(void *arg, const struct kube_informer_event *e)
{
	struct placement_loop *loop = arg;
	char *cause = NULL;

	muster_lock(&loop->lock);
	loop->nodes_changed = 1;
	if (e->change == KUBE_INFORMER_DELETE) {
		topo_cache_node_delete(loop->cache, e->name);
	} else if (topo_cache_node_put(loop->cache, e->object, &cause)) {
		mlog(MLOG_WARN, "node-ignored", "node=%s cause=\"%s\"", e->name,
		     cause ? cause : "out of memory");
		free(cause);
	}
	mark_dirty(loop);
	muster_unlock(&loop->lock);
	return 0;
}

/* The bound key of a pinned pod (jobset_pod_key), or 0 when it is not one. */
static int bound_key(const cJSON *pod, char *key, size_t size)
{
	const cJSON *node = kjson_member(kjson_member(pod, "spec"), "nodeName");
	struct jobset_pod place;

	if (!label(pod, MUSTER_LABEL_PLACEMENT) || !cJSON_IsString(node) || !node->valuestring[0] ||
	    jobset_pod_decode(kjson_member(pod, "metadata"), "pod", &place, NULL) || !place.uid[0] ||
	    !place.replicated_job[0] || place.job_index_state != JOBSET_POD_SET ||
	    place.completion_state != JOBSET_POD_SET || place.attempt_state == JOBSET_POD_BAD)
		return 0;
	return jobset_pod_key(place.uid, place.attempt, place.replicated_job, place.job_index,
			      place.completion, key, size) == 0;
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
	char key[JOBSET_POD_KEY_MAX + 1], *cause = NULL;

	muster_lock(&loop->lock);
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
	muster_unlock(&loop->lock);
	return 0;
}

static int relist_end(struct placement_loop *loop, int which)
{
	muster_lock(&loop->lock);
	loop->listed[which] = 1;
	mark_dirty(loop);
	muster_unlock(&loop->lock);
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

void placement_mirror_handlers(struct kube_informer_handlers handlers[WATCH_COUNT])
{
	const struct kube_informer_handlers table[WATCH_COUNT] = {
		[WATCH_NODES] = { .on_change = node_change, .on_relist_end = nodes_listed },
		[WATCH_PODS] = { .on_change = pod_change, .on_relist_end = pods_listed },
		[WATCH_JOBSETS] = { .on_change = jobset_change, .on_relist_end = jobsets_listed },
	};

	for (int i = 0; i < WATCH_COUNT; i++)
		handlers[i] = table[i];
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

void placement_mirror_free(struct placement_loop *loop)
{
	name_table_each(&loop->jobsets, free_jobset_node, &loop->jobsets);
	name_table_each(&loop->bound, free_bound_node, &loop->bound);
	name_table_each(&loop->pod_keys, free_bound_node, &loop->pod_keys);
	name_table_each(&loop->skipped, free_bound_node, &loop->skipped);
	name_table_clear(&loop->jobsets);
	name_table_clear(&loop->bound);
	name_table_clear(&loop->pod_keys);
	name_table_clear(&loop->skipped);
}
