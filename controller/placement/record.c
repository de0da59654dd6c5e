/*
 * placement/record.c: the placement of record, `<jobset>-placement`, and the
 * JobSet patches that go with it: read, written (created, kept or replaced by
 * whose it is, lib/topo/topo_record_map.h), dropped; the JobSet resumed or given
 * its waiting reason; the records of JobSets not read yet read at the start
 * of a pass. Not here: what to write (decide.c) and when (act.c, move.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "kube_path.h"
#include "mlog.h"
#include "muster_api.h"

/* The moved Jobs listed on a record (topo_retire.h), saying when some
 * entries do not read: 0 with *out and *count, or -1 when out of memory. */
int placement_retire_parse(const char *text, struct topo_retire **out, size_t *count, const char *namespace,
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

/* The path of the record of JobSet namespace/name (or of the ConfigMaps of
 * its namespace): 0, or MUSTER_EINVAL with a cause (kube_path.h). */
int placement_record_path(char *path, size_t size, const char *namespace, const char *name, int collection,
			  char **cause)
{
	char record[KUBE_NAME_MAX + sizeof(MUSTER_PLACEMENT_SUFFIX)];

	snprintf(record, sizeof(record), "%s" MUSTER_PLACEMENT_SUFFIX, name);
	return kube_path(path, size, &KUBE_CONFIGMAPS, namespace, collection ? NULL : record, cause);
}

/* Reads the record of a JobSet: 0 and *out (NULL when there is none, or it
 * is an earlier JobSet's), or an API error. */
/* The ConfigMap `<jobset>-placement`, whose it is and, when ours, its
 * record's text (lib/topo/topo_record_map.h: ours when an owner reference
 * names this JobSet's uid, an earlier JobSet's of the name when one of
 * those controls it, else anyone else's, which muster never touches).
 * *configmap NULL: there is none. */
int placement_record_get(struct placement_loop *loop, const char *namespace, const char *name,
			 const char *uid, cJSON **configmap, enum topo_record_whose *owner, const char **text,
			 char **cause)
{
	char path[KUBE_PATH_MAX];
	int err;

	*configmap = NULL;
	err = placement_record_path(path, sizeof(path), namespace, name, 0, cause);
	if (!err)
		err = kube_get(loop->api[API_WRITES].client, path, configmap, cause);
	if (err == MUSTER_ENOTFOUND) {
		free(*cause);
		*cause = NULL;
		return 0;
	}
	if (!err)
		*owner = topo_record_map_whose(*configmap, name, uid, 0, text);
	return err;
}

/* This JobSet's placement of record, or *out NULL when there is none of its
 * own (absent, unreadable, an earlier JobSet's, or not muster's). */
static int record_read(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
		       struct topo_record **out, struct topo_retire **retire, size_t *retire_count,
		       char **cause)
{
	enum topo_record_whose owner = TOPO_RECORD_FOREIGN;
	cJSON *configmap = NULL;
	const cJSON *moved;
	const char *text = NULL;
	int err = placement_record_get(loop, namespace, name, uid, &configmap, &owner, &text, cause);

	*out = NULL;
	*retire = NULL;
	*retire_count = 0;
	if (err || !configmap)
		return err;
	if (owner == TOPO_RECORD_OURS && text)
		topo_record_map_parse(text, strlen(text), uid, out, NULL, NULL);
	/* Moved Jobs not deleted yet (the controller stopped in between). */
	moved = kjson_member(kjson_member(kjson_member(configmap, "metadata"), "annotations"),
			     MUSTER_ANNOTATION_PLACEMENT_RETIRE);
	if (*out && cJSON_IsString(moved) &&
	    placement_retire_parse(moved->valuestring, retire, retire_count, namespace, name))
		err = MUSTER_ENOMEM; /* read again on the next pass: nothing listed is lost */
	if (err) {
		topo_record_free(*out);
		*out = NULL;
		cause_err(cause, err, "no memory for the moved Jobs of the record");
	}
	cJSON_Delete(configmap);
	return err;
}

/* Deletes the record if it is this JobSet's own (by its metadata.uid, so
 * that one made again since is not deleted); anything else stays. */
int placement_record_drop(struct placement_loop *loop, const char *namespace, const char *name,
			  const char *uid, char **cause)
{
	enum topo_record_whose owner = TOPO_RECORD_FOREIGN;
	cJSON *configmap = NULL;
	const cJSON *cm_uid;
	char path[KUBE_PATH_MAX];
	int err = placement_record_get(loop, namespace, name, uid, &configmap, &owner, NULL, cause);

	if (err || !configmap)
		return err;
	cm_uid = kjson_member(kjson_member(configmap, "metadata"), "uid");
	if (owner == TOPO_RECORD_OURS && cJSON_IsString(cm_uid)) {
		err = placement_record_path(path, sizeof(path), namespace, name, 0, cause);
		if (!err)
			err = kube_delete_uid(loop->api[API_WRITES].client, path, cm_uid->valuestring, cause);
		if (err == MUSTER_ENOTFOUND ||
		    err == MUSTER_ECONFLICT) { /* gone, or made again: not ours to drop */
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
 * anyone else's (*foreign set, MUSTER_ECONFLICT with a cause for the user). */
int placement_record_write(struct placement_loop *loop, const char *namespace, const char *name,
			   const char *uid, uint32_t attempt, const char *text, struct topo_record **kept,
			   int *foreign, char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *body = record_body(namespace, name, uid, text), *configmap = NULL;
	enum topo_record_whose owner = TOPO_RECORD_FOREIGN;
	const cJSON *cm_uid;
	const char *data = NULL;
	int err;

	*kept = NULL;
	*foreign = 0;
	if (!body)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the placement record");
	if ((err = placement_record_path(path, sizeof(path), namespace, name, 1, cause)) != 0)
		goto out;
	/* A ConfigMap of the name deleted between the create and the read (its
	 * owner removing it as muster said): the name is free, so created again
	 * at once, a few times at most. */
	for (int tries = 0;; tries++) {
		err = kube_create(loop->api[API_WRITES].client, path, body, NULL, cause);
		if (err != MUSTER_ECONFLICT)
			goto out;
		free(*cause);
		*cause = NULL;
		if ((err = placement_record_get(loop, namespace, name, uid, &configmap, &owner, &data,
						cause)) != 0)
			goto out;
		if (configmap)
			break;
		if (tries == RECORD_CREATE_TRIES - 1) { /* retried by the next passes */
			err = cause_err(
				cause, MUSTER_ECONFLICT,
				"the placement record's name was taken and freed again %d times while "
				"written",
				RECORD_CREATE_TRIES);
			goto out;
		}
	}
	if (owner == TOPO_RECORD_FOREIGN) {
		*foreign = 1;
		err = cause_err(
			cause, MUSTER_ECONFLICT,
			"ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX
			" exists and is not a placement record of this JobSet or an earlier one of its "
			"name (no such JobSet owns it): muster never touches it; rename or delete it",
			namespace, name);
		goto out;
	}
	if (owner == TOPO_RECORD_OURS) {
		if (data && topo_record_map_parse(data, strlen(data), uid, kept, NULL, NULL) == 0 &&
		    topo_record_has_attempt(*kept) && topo_record_attempt(*kept) == attempt)
			goto out; /* written before: that one stands */
		topo_record_free(*kept);
		*kept = NULL;
	}
	mlog(MLOG_INFO, "placement-record-replaced", "jobset=%s/%s reason=\"%s\"", namespace, name,
	     owner == TOPO_RECORD_OURS ? "unreadable or of an earlier restart attempt"
				       : "written for an earlier JobSet of this name");
	cm_uid = kjson_member(kjson_member(configmap, "metadata"), "uid");
	err = placement_record_path(path, sizeof(path), namespace, name, 0, cause);
	err = err ? err
	      : cJSON_IsString(cm_uid)
		      ? kube_delete_uid(loop->api[API_WRITES].client, path, cm_uid->valuestring, cause)
		      : cause_err(cause, MUSTER_EPARSE, "the placement record has no metadata.uid");
	if (!err || err == MUSTER_ENOTFOUND) {
		free(*cause);
		*cause = NULL;
		err = placement_record_path(path, sizeof(path), namespace, name, 1, cause);
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
int placement_resume(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
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

int placement_write_reason(struct placement_loop *loop, const char *namespace, const char *name,
			   const char *uid, const char *reason, char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *patch = cJSON_CreateObject(), *metadata, *annotations;
	char *text = NULL;
	int err = MUSTER_ENOMEM;

	if ((err = kube_path(path, sizeof(path), &KUBE_JOBSETS, namespace, name, cause)) != 0) {
		cJSON_Delete(patch);
		return err;
	}
	err = MUSTER_ENOMEM;
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

static void collect_unread(void *arg, struct name_node *node)
{
	struct unread_list *l = arg;
	struct pjobset *j = (struct pjobset *)node;

	if (j->rec.record_checked || strcmp(j->state, MUSTER_PLACEMENT_USER_HELD) == 0)
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

	muster_lock(&loop->lock);
	name_table_each(&loop->jobsets, collect_unread, &l);
	muster_unlock(&loop->lock);
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
			     l.items[i].namespace, l.items[i].name, muster_err_name(err), cause ? cause : "");
			free(cause);
			continue;
		}
		muster_lock(&loop->lock);
		j = (struct pjobset *)name_table_find(&loop->jobsets, l.items[i].namespace, l.items[i].name);
		if (j && strcmp(j->uid, l.items[i].uid) == 0) {
			placement_set_record(j, record);
			j->rec.record_checked = 1;
			record = NULL;
			free(j->moving.retire);
			j->moving.retire = retire;
			j->moving.retire_count = retire_count;
			retire = NULL;
			if (j->moving.retire_count) /* a retire pass is due: it finds them */
				loop->next_retire = 1;
			/* A record already written for a JobSet still waiting (the
			 * controller stopped between the two writes): resume it. */
			if (j->rec.record && strcmp(j->state, MUSTER_PLACEMENT_WAITING) == 0)
				loop->dirty = 1;
		}
		muster_unlock(&loop->lock);
		free(retire);
		topo_record_free(record);
	}
	free(l.items);
}

/* Waiting JobSets whose record exists already (the controller stopped
 * between writing it and the resume): resumed without a new placement,
 * their room promised by the record. Under lock. */
void placement_collect_recorded(void *arg, struct name_node *node)
{
	struct pjobset *j = (struct pjobset *)node;
	struct unread_list *l = arg;
	size_t before = l->count;

	j->rec.resuming = j->rec.record && j->rec.record_attempt == j->restarts && !j->finished &&
			  strcmp(j->state, MUSTER_PLACEMENT_WAITING) == 0;
	if (!j->rec.resuming)
		return;
	j->rec.record_checked = 0; /* collect_unread takes only unread ones */
	collect_unread(arg, node);
	j->rec.record_checked = 1;
	if (l->count == before)
		j->rec.resuming = 0; /* no memory: placed again instead */
}

void placement_phase_records(struct pass *p)
{
	read_records(p->loop);
}
