/*
 * placement/clear.c: the Jobs of a JobSet placed again whole, pinned (whole,
 * or given a share) by its old record, deleted once its hold ends and before
 * it is placed, so no pod runs where the old record pointed. Not here: Jobs
 * moved alone (retire.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "mlog.h"
#include "muster_api.h"

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

	if (!j->relocation.clear_jobs || j->relocation.hold_until > now_s())
		return;
	if (!j->decoded) { /* no Job names to read: nothing of it was pinned by this request */
		j->relocation.clear_jobs = 0;
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

	err = placement_job_path(path, sizeof(path), w->namespace, w->name, rj, job, cause);
	if (!err)
		err = kube_get(loop->api[API_WRITES].client, path, &object, cause);
	if (err == MUSTER_ENOTFOUND) {
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
	if (err == MUSTER_ENOTFOUND || err == MUSTER_ECONFLICT) {
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

	muster_lock(&loop->lock);
	name_table_each(&loop->jobsets, collect_clear, &c);
	muster_unlock(&loop->lock);
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
		if (err == MUSTER_EUNAUTHORIZED) {
			/* Without get and delete on jobs.batch nothing can be
			 * done about them: placed again all the same (a Job
			 * pinned by the old record strands its pods again, and
			 * says so). */
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"placed again without deleting its Jobs "
			     "pinned by the old record: muster-controller needs get and delete on jobs.batch\"",
			     w->namespace, w->name, muster_err_name(err), cause ? cause : "");
		} else if (err) {
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"its Jobs pinned by the old record are "
			     "deleted before it is placed again; retried in %d s\"",
			     w->namespace, w->name, muster_err_name(err), cause ? cause : "", CLEAR_RETRY_S);
			free(cause);
			muster_lock(&loop->lock);
			{
				struct pjobset *j = (struct pjobset *)name_table_find(&loop->jobsets,
										      w->namespace, w->name);

				if (j && strcmp(j->uid, w->uid) == 0)
					j->relocation.hold_until = now_s() + CLEAR_RETRY_S;
			}
			muster_unlock(&loop->lock);
			continue;
		}
		free(cause);
		cause = NULL;
		if (deleted)
			mlog(MLOG_INFO, "placement-jobs-cleared",
			     "jobset=%s/%s jobs=%u action=\"deleted: pinned whole or given a share by the old record; JobSet "
			     "makes them again once placed\"",
			     w->namespace, w->name, deleted);
		muster_lock(&loop->lock);
		{
			struct pjobset *j =
				(struct pjobset *)name_table_find(&loop->jobsets, w->namespace, w->name);

			if (j && strcmp(j->uid, w->uid) == 0)
				j->relocation.clear_jobs = 0;
			mark_dirty(loop);
		}
		muster_unlock(&loop->lock);
	}
	free(c.work);
}

void placement_phase_clear(struct pass *p)
{
	clear_due(p->loop);
}
