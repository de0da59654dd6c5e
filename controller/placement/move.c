/*
 * placement/move.c: Jobs moved alone. A move's record rewritten with the
 * moved Jobs' new runs, and the Jobs listed on it to delete once the pod
 * route's cached copies of the old record expire (topo_retire.h), in one
 * patch guarded by the ConfigMap's resourceVersion; a moved Job's old pods
 * noted so they hide no room; failures counted until the whole JobSet is
 * placed again. Not here: the deletes themselves (retire.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "../jobset_event.h"
#include "kube_path.h"
#include "jobset_pod.h"
#include "mlog.h"
#include "muster_api.h"

int placement_job_path(char *path, size_t size, const char *namespace, const char *jobset, const char *rj,
		       uint32_t job, char **cause)
{
	char name[3 * KUBE_NAME_MAX];

	/* JobSet names its child Jobs <jobset>-<replicated job>-<job index>. */
	snprintf(name, sizeof(name), "%s-%s-%u", jobset, rj, job);
	return kube_path(path, size, &KUBE_JOBS, namespace, name, cause);
}

/* A move's write or a moved Job's delete failed: counted; after
 * MOVE_FAILURES_MAX in a row the whole JobSet is placed again (pods pinned
 * where the record no longer points must not wait forever). */
void placement_move_failed(struct placement_loop *loop, const char *namespace, const char *name,
			   const char *uid)
{
	struct pjobset *j;

	muster_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, namespace, name);
	if (j && strcmp(j->uid, uid) == 0 && ++j->moving.move_failures >= MOVE_FAILURES_MAX &&
	    !j->moving.move_stuck) {
		j->moving.move_stuck = 1;
		loop->placed_changed = 1;
		mark_dirty(loop);
	}
	muster_unlock(&loop->lock);
}

/* Notes `job` as moved until `until`, adding the pods of it bound now to
 * its old pods (none of its new pods exists before its old Job is gone).
 * Under lock. */
void placement_note_moved(struct placement_loop *loop, struct pjobset *j, const char *rj, uint32_t job,
			  double until)
{
	const struct topo_jobset_group *group = placement_group_named(j, rj);
	struct moved_job *m = NULL;

	for (size_t i = 0; i < j->moving.moved_count && !m; i++)
		if (j->moving.moved[i].job == job && strcmp(j->moving.moved[i].replicated_job, rj) == 0)
			m = &j->moving.moved[i];
	for (size_t i = 0; i < j->moving.moved_count && !m; i++) /* reuse an expired slot */
		if (j->moving.moved[i].until < now_s()) {
			m = &j->moving.moved[i];
			free(m->old_pods);
			m->old_pods = NULL;
			m->old_count = 0;
		}
	if (!m) {
		struct moved_job *grown =
			realloc(j->moving.moved, (j->moving.moved_count + 1) * sizeof(*grown));

		if (!grown)
			return;
		j->moving.moved = grown;
		m = &grown[j->moving.moved_count++];
		memset(m, 0, sizeof(*m));
	}
	snprintf(m->replicated_job, sizeof(m->replicated_job), "%s", rj);
	m->job = job;
	m->until = until;
	for (unsigned c = 0; group && c < group->pods; c++) {
		char key[JOBSET_POD_KEY_MAX + 1];
		const struct bound *b;
		int known = 0;

		if (jobset_pod_key(j->uid, j->rec.record_attempt, rj, job, c, key, sizeof(key)) ||
		    !(b = (const struct bound *)name_table_find(&loop->bound, j->namespace, key)))
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
	enum topo_record_whose owner = TOPO_RECORD_FOREIGN;
	cJSON *configmap = NULL, *patch = NULL, *metadata, *annotations, *data;
	const cJSON *rv, *moved;
	const char *text = NULL;
	struct topo_record *old = NULL, *written = NULL;
	struct topo_retire *list = NULL;
	size_t count = 0;
	char path[KUBE_PATH_MAX], *cause = NULL, *body = NULL, *listed = NULL;
	double due = 0;
	struct pjobset *j;
	int err;

	err = placement_record_get(loop, m->namespace, m->name, m->uid, &configmap, &owner, &text, &cause);
	rv = kjson_member(kjson_member(configmap, "metadata"), "resourceVersion");
	if (!err && (!configmap || owner != TOPO_RECORD_OURS || !text || !cJSON_IsString(rv) ||
		     topo_record_map_parse(text, strlen(text), m->uid, &old, NULL, NULL) ||
		     topo_record_parse(m->record, strlen(m->record), &written, NULL) ||
		     topo_record_attempt(old) != topo_record_attempt(written)))
		err = cause_err(&cause, MUSTER_ECONFLICT,
				"the placement record changed since the pass read it");
	moved = kjson_member(kjson_member(kjson_member(configmap, "metadata"), "annotations"),
			     MUSTER_ANNOTATION_PLACEMENT_RETIRE);
	if (!err && cJSON_IsString(moved) &&
	    placement_retire_parse(moved->valuestring, &list, &count, m->namespace, m->name))
		err = cause_err(&cause, MUSTER_ENOMEM, "no memory for the moved Jobs");
	for (size_t i = 0; !err && i < m->count; i++) {
		cJSON *job = NULL;
		const char *job_uid;
		struct jobset_pod place;
		struct topo_retire r = { 0 };

		err = placement_job_path(path, sizeof(path), m->namespace, m->name, m->names[i],
					 m->job_index[i], &cause);
		if (!err)
			err = kube_get(loop->api[API_WRITES].client, path, &job, &cause);
		if (err == MUSTER_ENOTFOUND) {
			free(cause);
			cause = NULL;
			err = 0;
		}
		if (err)
			break;
		job_uid = meta_string(job, "uid");
		snprintf(r.replicated_job, sizeof(r.replicated_job), "%s", m->names[i]);
		r.job = m->job_index[i];
		/* This attempt's Job: deleted when due; none (or another's):
		 * whatever Job holds the name then is checked by its pods. */
		if (job && jobset_pod_decode(kjson_member(job, "metadata"), "Job", &place, NULL) == 0 &&
		    job_uid && strcmp(place.uid, m->uid) == 0 && strlen(job_uid) < sizeof(r.job_uid) &&
		    place.attempt_state != JOBSET_POD_BAD &&
		    (place.attempt_state == JOBSET_POD_ABSENT ||
		     place.attempt == topo_record_attempt(written) || !topo_record_has_attempt(written)))
			snprintf(r.job_uid, sizeof(r.job_uid), "%s", job_uid);
		else
			snprintf(r.job_uid, sizeof(r.job_uid), "-");
		r.due = -1; /* set below, once the reads are done */
		if (topo_retire_add(&list, &count, &r))
			err = cause_err(&cause, MUSTER_ENOMEM, "no memory for the moved Jobs");
		cJSON_Delete(job);
	}
	/* Due once every cached copy read before the patch commits has
	 * expired: from now (the reads are done), rounded up. */
	due = (double)(long long)(wall_s() + loop->hold_s + 2);
	for (size_t i = 0; i < count; i++)
		if (list[i].due < 0)
			list[i].due = due;
	if (!err && !(listed = topo_retire_format(list, count)))
		err = cause_err(&cause, MUSTER_ENOMEM, "no memory for the moved Jobs");
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
			err = cause_err(&cause, MUSTER_ENOMEM, "no memory for the record patch");
		if (!err)
			err = placement_record_path(path, sizeof(path), m->namespace, m->name, 0, &cause);
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
		     muster_err_name(err), cause ? cause : "");
		free(cause);
		free(list);
		topo_record_free(written);
		placement_move_failed(loop, m->namespace, m->name, m->uid);
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
	muster_lock(&loop->lock);
	j = (struct pjobset *)name_table_find(&loop->jobsets, m->namespace, m->name);
	if (j && strcmp(j->uid, m->uid) == 0) {
		placement_set_record(j, written);
		written = NULL;
		free(j->moving.retire);
		j->moving.retire = list;
		j->moving.retire_count = count;
		list = NULL;
		j->promise.stranded_since = 0;
		j->promise.no_room_noted = 0;
		j->moving.move_refused_noted = 0;
		j->moving.move_failures = 0;
		for (size_t i = 0; i < m->count; i++)
			placement_note_moved(loop, j, m->names[i], m->job_index[i],
					     now_s() + (due - wall_s()) + MOVED_HOLD_S);
		if (!loop->next_retire || due < loop->next_retire)
			loop->next_retire = due;
	}
	loop->stats.moves += m->count;
	muster_unlock(&loop->lock);
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

void placement_phase_move(struct pass *p)
{
	for (size_t i = 0; i < p->move_count; i++)
		move_jobs(p->loop, &p->moves[i]);
}
