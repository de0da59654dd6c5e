/*
 * placement/act.c: a pass's decisions carried out, outside the lock: a JobSet
 * placed (record written, then resumed) or told why it waits (annotation and
 * Event), and a placed JobSet suspended to be placed again (record dropped
 * first). What the API answers is noted back under the lock. Not here: moving
 * Jobs alone (move.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "../jobset_event.h"
#include "kube_path.h"
#include "mlog.h"
#include "muster_api.h"

/* Resumed: placed from now on, whatever the informer has not shown yet, so
 * the next pass neither places nor resumes it again. */
static void mark_placed(struct placement_loop *loop, const char *namespace, const char *name, const char *uid)
{
	struct pjobset *j;

	muster_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, namespace, name);
	if (j && strcmp(j->uid, uid) == 0) {
		snprintf(j->state, sizeof(j->state), "%s", MUSTER_PLACEMENT_PLACED);
		j->suspended = 0; /* resumed: its room is promised from now on */
		j->rec.resuming = 0;
		j->relocation.relocating = 0;
	}
	muster_unlock(&loop->lock);
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
		err = placement_write_reason(loop, a->namespace, a->name, a->uid, a->reason, &cause);
		if (!err) { /* written: not again until it changes (a failure is retried) */
			struct pjobset *j;

			muster_lock(&loop->lock);
			j = (struct pjobset *)name_table_find(&loop->jobsets, a->namespace, a->name);
			if (j && strcmp(j->uid, a->uid) == 0)
				snprintf(j->reason, sizeof(j->reason), "%s", a->reason);
			muster_unlock(&loop->lock);
		}
		if (err)
			mlog(MLOG_WARN, "placement-reason-failed", "jobset=%s/%s err=%s cause=\"%s\"",
			     a->namespace, a->name, muster_err_name(err), cause ? cause : "");
		free(cause);
		jobset_event_post(loop->api[API_WRITES].client, a->namespace, a->name, a->uid,
				  "PlacementWaiting", 1, a->reason);
		return 0;
	}
	err = placement_record_write(loop, a->namespace, a->name, a->uid, a->attempt, a->record, &kept,
				     &foreign, &cause);
	if (err && foreign) { /* the user's to clear: wait, saying so */
		snprintf(a->reason, sizeof(a->reason), "%s",
			 cause ? cause : "a foreign ConfigMap is in the way");
		free(cause);
		a->place = 0;
		muster_lock(&loop->lock);
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
		muster_unlock(&loop->lock);
		return act(loop, a, started);
	}
	if (!err && !kept && topo_record_parse(a->record, strlen(a->record), &written, NULL) != 0)
		written = NULL;
	if (!err) {
		/* Promised from now on, whatever the informer has seen. */
		struct pjobset *j;

		muster_lock(&loop->lock);
		j = (struct pjobset *)name_table_find(&loop->jobsets, a->namespace, a->name);
		if (j && strcmp(j->uid, a->uid) == 0) {
			placement_set_record(j, kept ? kept : written);
			j->rec.record_checked = 1;
			kept = written = NULL;
		}
		muster_unlock(&loop->lock);
		err = placement_resume(loop, a->namespace, a->name, a->uid, &cause);
	}
	topo_record_free(kept);
	topo_record_free(written);
	if (err) {
		muster_lock(&loop->lock);
		loop->stats.record_failures++;
		/* Still waiting (or recorded, not resumed): the next passes, every
		 * PLACEMENT_RETRY_S at least, try again whatever else happens. */
		loop->stats.waiting++;
		loop->retrying++;
		muster_unlock(&loop->lock);
		mlog(MLOG_WARN, "placement-write-failed",
		     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"", a->namespace, a->name,
		     muster_err_name(err), cause ? cause : "");
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
	err = placement_record_drop(loop, r->namespace, r->name, r->uid, &cause);
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
		err = MUSTER_ENOMEM;
	cJSON_Delete(patch);
	free(text);
	if (err) {
		mlog(MLOG_WARN, "placement-write-failed",
		     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"", r->namespace, r->name,
		     muster_err_name(err), cause ? cause : "");
		free(cause);
		return;
	}
	free(cause);
	muster_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, r->namespace, r->name);
	if (j && strcmp(j->uid, r->uid) == 0) {
		placement_set_record(j, NULL);
		/* Moved Jobs not deleted yet: the whole JobSet is placed again. */
		free(j->moving.retire);
		j->moving.retire = NULL;
		j->moving.retire_count = 0;
		j->rec.record_checked = 1;
		j->suspended = 1;
		j->relocation.relocating = 1;
		snprintf(j->state, sizeof(j->state), "%s", MUSTER_PLACEMENT_WAITING);
		/* The pod route may hold the old record a while; a new attempt's
		 * pods are never pinned by an earlier attempt's (record_cache.h). */
		j->relocation.hold_until = r->kind == RELOCATE_RESTART ? 0 : now_s() + loop->hold_s;
		/* Its Jobs stay (JobSet suspends them): a Job pinned whole
		 * carries the old domain in its pod template. They are deleted
		 * at the hold's end, once no cached old record can pin a Job
		 * made again; a new attempt's Jobs are new. */
		j->relocation.clear_jobs = r->kind != RELOCATE_RESTART;
		j->relocation.relocated_at = now_s();
		j->promise.stranded_since = 0;
		j->moving.move_stuck = 0;
		j->moving.move_failures = 0;
		/* Placed afresh: no Job of the new placement has started. */
		free(j->promise.started);
		j->promise.started = NULL;
		j->promise.started_count = 0;
	}
	if (r->kind == RELOCATE_RESTART)
		loop->stats.restarts++;
	else
		loop->stats.relocations++;
	muster_unlock(&loop->lock);
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

/* Waiting JobSets whose record was written before (the controller stopped
 * between the record and the resume): resumed, not placed again. */
void placement_phase_resume(struct pass *p)
{
	struct placement_loop *loop = p->loop;
	const struct unread_list *recorded = &p->recorded;

	for (size_t i = 0; i < recorded->count; i++) {
		char *cause = NULL;
		int err = placement_resume(loop, recorded->items[i].namespace, recorded->items[i].name,
					   recorded->items[i].uid, &cause);

		if (err) {
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"",
			     recorded->items[i].namespace, recorded->items[i].name, muster_err_name(err),
			     cause ? cause : "");
			muster_lock(&loop->lock);
			loop->stats.waiting++; /* resumed by a pass PLACEMENT_RETRY_S later at most */
			loop->retrying++;
			muster_unlock(&loop->lock);
		} else
			mark_placed(loop, recorded->items[i].namespace, recorded->items[i].name,
				    recorded->items[i].uid);
		if (!err) {
			mlog(MLOG_INFO, "placement-resumed",
			     "jobset=%s/%s reason=\"its placement of record was written before\"",
			     recorded->items[i].namespace, recorded->items[i].name);
			/* As for a JobSet placed in one go: the user sees it placed. */
			jobset_event_post(
				loop->api[API_WRITES].client, recorded->items[i].namespace,
				recorded->items[i].name, recorded->items[i].uid, "Placed", 0,
				"placed by its placement of record, written before muster-controller "
				"restarted");
		}
		free(cause);
	}
}

void placement_phase_act(struct pass *p)
{
	struct placement_loop *loop = p->loop;

	for (size_t i = 0; i < p->action_count; i++) {
		int placed = act(loop, &p->actions[i], p->started);

		muster_lock(&loop->lock);
		if (placed) {
			loop->stats.placements++;
			loop->promising++; /* its pods are not bound yet: checked from the next pass */
		} else if (p->actions[i].reason_changed)
			loop->stats.refusals++;
		muster_unlock(&loop->lock);
	}
}

void placement_phase_relocate(struct pass *p)
{
	for (size_t i = 0; i < p->relocation_count; i++)
		relocate(p->loop, &p->relocations[i]);
}

/* ---- JobSets another scheduler places ---- */

#define SKIPPED_BATCH 16

struct skipped_batch {
	struct skipped items[SKIPPED_BATCH];
	size_t count;
	int more;
};

static void collect_skipped(void *arg, struct name_node *node)
{
	struct skipped_batch *b = arg;
	struct skipped *k = (struct skipped *)node;

	if (k->reported)
		return;
	if (b->count == SKIPPED_BATCH) {
		b->more = 1;
		return;
	}
	k->reported = 1;
	b->items[b->count++] = *k;
}

void placement_report_skipped(struct placement_loop *loop)
{
	struct skipped_batch *b;

	muster_lock(&loop->lock);
	if (!loop->skipped_pending || !(b = calloc(1, sizeof(*b)))) {
		muster_unlock(&loop->lock);
		return;
	}
	name_table_each(&loop->skipped, collect_skipped, b);
	loop->skipped_pending = b->more;
	muster_unlock(&loop->lock);
	for (size_t i = 0; i < b->count; i++) {
		const struct skipped *k = &b->items[i];

		/* The words are muster's, chosen by the mark's value: one it does
		 * not know says nothing. */
		if (strcmp(k->by, MUSTER_PLACEMENT_SKIPPED_VOLCANO) != 0)
			continue;
		mlog(MLOG_INFO, "placement-skipped-said", "jobset=%s/%s by=%s", k->namespace, k->name, k->by);
		jobset_event_post(loop->api[API_WRITES].client, k->namespace, k->name, k->uid,
				  "PlacementSkipped", 1,
				  "muster leaves this JobSet to Volcano (a replicated job has schedulerName "
				  "volcano) and does not apply its topology request; ask Volcano for it "
				  "(networkTopology), or schedule every replicated job with the default "
				  "scheduler for muster to place it");
	}
	free(b);
}
