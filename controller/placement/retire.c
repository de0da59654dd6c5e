/*
 * placement/retire.c: the moved Jobs deleted when due (Foreground, by uid), a
 * Job made again meanwhile deleted only if it or a pod of it was pinned by
 * the old runs, then taken off the record's list. Not here: the Jobs of a
 * JobSet placed again whole (clear.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "kube_path.h"
#include "jobset_pod.h"
#include "mlog.h"
#include "muster_api.h"

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

	if (!j->moving.retire_count || !(grown = realloc(c->work, (c->count + 1) * sizeof(*grown))))
		return;
	c->work = grown;
	w = &c->work[c->count];
	memset(w, 0, sizeof(*w));
	for (size_t i = 0; i < j->moving.retire_count; i++) {
		if (j->moving.retire[i].due > c->now) {
			if (!c->next || j->moving.retire[i].due < c->next)
				c->next = j->moving.retire[i].due;
			continue;
		}
		if (topo_retire_add(&w->due, &w->count, &j->moving.retire[i]))
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
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the pods of a moved Job");
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
	muster_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);
	cJSON_ArrayForEach(pod, pods)
	{
		const cJSON *owners = kjson_member(kjson_member(pod, "metadata"), "ownerReferences"), *owner;
		const char *want = NULL;
		struct jobset_pod place;
		int ours = 0;

		cJSON_ArrayForEach(owner, owners)
		{
			const cJSON *uid = kjson_member(owner, "uid");

			ours |= cJSON_IsString(uid) && strcmp(uid->valuestring, job_uid) == 0;
		}
		if (!ours || jobset_pod_decode(kjson_member(pod, "metadata"), "pod", &place, NULL) ||
		    place.completion_state != JOBSET_POD_SET || !j || strcmp(j->uid, w->uid) != 0 ||
		    !j->rec.record)
			continue;
		if (topo_record_find(j->rec.record, rj, job, place.completion, &want) && *want &&
		    !pins_to(pod, want))
			stale = 1;
	}
	muster_unlock(&loop->lock);
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
	muster_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);
	if (j && strcmp(j->uid, w->uid) == 0 && j->rec.record)
		stale = topo_record_find_range(j->rec.record, rj, job, 0, pods - 1, &want) != 1 ||
			!pins_to(template, want);
	muster_unlock(&loop->lock);
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

	err = placement_job_path(path, sizeof(path), w->namespace, w->name, e->replicated_job, e->job, cause);
	if (!err)
		err = kube_get(loop->api[API_WRITES].client, path, &job, cause);
	if (err == MUSTER_ENOTFOUND) {
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
		return cause_err(cause, MUSTER_EPARSE, "the Job has no metadata.uid");
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
	if (err && err != MUSTER_ENOTFOUND && err != MUSTER_ECONFLICT)
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

	muster_lock(&loop->lock);
	if (!loop->next_retire || loop->next_retire > now) {
		muster_unlock(&loop->lock);
		return;
	}
	name_table_each(&loop->jobsets, collect_due, &c);
	work = c.work;
	work_count = c.count;
	next = c.next;
	loop->next_retire = next;
	muster_unlock(&loop->lock);
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
				     muster_err_name(err), cause ? cause : "");
			}
			free(cause);
		}
		if (!done && w->count) /* one failure a JobSet a pass */
			placement_move_failed(loop, w->namespace, w->name, w->uid);
		if (done) {
			struct pjobset *j;
			struct topo_retire *left = NULL;
			size_t left_count = 0;
			char *text = NULL, *body = NULL, *cause = NULL, path[KUBE_PATH_MAX];
			cJSON *patch = NULL, *metadata, *annotations;
			int err = 0;

			muster_lock(&loop->lock);
			j = (struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);
			if (j && strcmp(j->uid, w->uid) == 0) {
				for (size_t i = 0; i < j->moving.retire_count; i++) {
					int gone = 0;

					for (size_t d = 0; d < w->count; d++)
						gone |= w->due[d].due < 0 &&
							w->due[d].job == j->moving.retire[i].job &&
							strcmp(w->due[d].replicated_job,
							       j->moving.retire[i].replicated_job) == 0;
					if (!gone)
						j->moving.retire[left_count++] = j->moving.retire[i];
				}
				j->moving.retire_count = left_count;
				j->moving.move_failures = 0;
				j->moving.move_stuck = 0;
				loop->stats.jobs_retired += done;
				for (size_t d = 0; d < w->count; d++)
					if (w->due[d].due < 0)
						placement_note_moved(loop, j, w->due[d].replicated_job,
								     w->due[d].job, now_s() + MOVED_HOLD_S);
				if (left_count && (left = malloc(left_count * sizeof(*left))))
					memcpy(left, j->moving.retire, left_count * sizeof(*left));
			}
			muster_unlock(&loop->lock);
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
				err = placement_record_path(path, sizeof(path), w->namespace, w->name, 0,
							    &cause);
				if (!err)
					err = kube_patch(loop->api[API_WRITES].client, path, KUBE_PATCH_MERGE,
							 body, NULL, &cause);
			}
			/* Not fatal: an entry left there is deleted again by uid, and found gone. */
			if (err && err != MUSTER_ENOTFOUND)
				mlog(MLOG_WARN, "placement-write-failed",
				     "jobset=%s/%s err=%s cause=\"%s\" action=\"the retired Jobs stay listed\"",
				     w->namespace, w->name, muster_err_name(err), cause ? cause : "");
			free(cause);
			free(body);
			free(text);
			free(left);
			cJSON_Delete(patch);
		}
		if (done < w->count) { /* failures: the next pass tries again */
			muster_lock(&loop->lock);
			if (!loop->next_retire || now + 1 < loop->next_retire)
				loop->next_retire = now + 1;
			muster_unlock(&loop->lock);
		}
		free(w->due);
	}
	free(work);
}

void placement_phase_retire(struct pass *p)
{
	retire_due(p->loop);
}
