/*
 * release_record: the ConfigMap that is a JobSet's release of record (see
 * release_record.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "release_record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller_group.h"
#include "group_decode.h"
#include "group_tracker.h"
#include "kube_error.h"
#include "kube_path.h"
#include "mlog.h"
#include "record_owner.h"
#include "release_line.h"

int release_record_path(char *out, size_t size, const struct release_jobset *e, int collection, char **cause)
{
	char name[KUBE_NAME_MAX + sizeof(MUSTER_CONFIGMAP_SUFFIX)];

	snprintf(name, sizeof(name), "%s" MUSTER_CONFIGMAP_SUFFIX, e->name);
	return kube_path(out, size, &KUBE_CONFIGMAPS, e->namespace, collection ? NULL : name, cause);
}

enum release_owner release_record_owner(const cJSON *configmap, const struct release_jobset *e)
{
	switch (record_owner_of(configmap, e->name, e->uid, 0)) {
	case RECORD_OWNER_OURS:
		return RELEASE_OWNER_OURS;
	case RECORD_OWNER_PREDECESSOR:
		return RELEASE_OWNER_PREDECESSOR;
	default:
		return RELEASE_OWNER_FOREIGN;
	}
}

/* A decimal number in 0..KJSON_INT32_MAX from a string item. Returns 0 or -1. */
static int parse_number(const cJSON *item, unsigned long *value)
{
	char *end = NULL;

	if (!cJSON_IsString(item) || item->valuestring[0] < '0' || item->valuestring[0] > '9')
		return -1;
	errno = 0;
	*value = strtoul(item->valuestring, &end, 10);
	return errno || *end || *value > KJSON_INT32_MAX ? -1 : 0;
}

/* The release of record: the attempt, the JobSet it belongs to and the
 * generation (lib/release_line.h), which the barrier checks all three of. */
static cJSON *release_data(const struct release_jobset *e, uint64_t epoch)
{
	char attempt[16], generation[16];
	cJSON *data = cJSON_CreateObject();

	snprintf(attempt, sizeof(attempt), "%u", group_epoch_attempt(epoch));
	snprintf(generation, sizeof(generation), "%u", group_epoch_generation(epoch));
	if (!data || !cJSON_AddStringToObject(data, MUSTER_CONFIGMAP_KEY_STARTED, attempt) ||
	    !cJSON_AddStringToObject(data, MUSTER_CONFIGMAP_KEY_JOBSET_UID, e->uid) ||
	    !cJSON_AddStringToObject(data, MUSTER_CONFIGMAP_KEY_GENERATION, generation)) {
		cJSON_Delete(data);
		return NULL;
	}
	return data;
}

/* The merge patch {"data": {...}} that writes the release of `epoch` into
 * our own ConfigMap: malloc'd text, NULL without memory. */
static char *release_patch(const struct release_jobset *e, uint64_t epoch)
{
	cJSON *patch = cJSON_CreateObject(), *data = release_data(e, epoch);
	char *text = NULL;

	if (patch && data) {
		cJSON_AddItemToObject(patch, "data", data);
		data = NULL;
		text = cJSON_PrintUnformatted(patch);
	}
	cJSON_Delete(data);
	cJSON_Delete(patch);
	return text;
}

static cJSON *configmap_body(const struct release_jobset *e, uint64_t epoch)
{
	char name[MODEL_LABEL_MAX + sizeof(MUSTER_CONFIGMAP_SUFFIX)];
	cJSON *body = cJSON_CreateObject(), *metadata, *owners, *owner, *data = release_data(e, epoch);

	snprintf(name, sizeof(name), "%s" MUSTER_CONFIGMAP_SUFFIX, e->name);
	if (!body || !(metadata = cJSON_AddObjectToObject(body, "metadata")) ||
	    !cJSON_AddStringToObject(body, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(body, "kind", "ConfigMap") ||
	    !cJSON_AddStringToObject(metadata, "name", name) ||
	    !cJSON_AddStringToObject(metadata, "namespace", e->namespace) ||
	    !(owners = cJSON_AddArrayToObject(metadata, "ownerReferences")) ||
	    !(owner = cJSON_CreateObject()) || !cJSON_AddItemToArray(owners, owner) ||
	    !cJSON_AddStringToObject(owner, "apiVersion", "jobset.x-k8s.io/v1alpha2") ||
	    !cJSON_AddStringToObject(owner, "kind", "JobSet") ||
	    !cJSON_AddStringToObject(owner, "name", e->name) ||
	    !cJSON_AddStringToObject(owner, "uid", e->uid) ||
	    !cJSON_AddBoolToObject(owner, "controller", 1) || !data) {
		cJSON_Delete(body);
		cJSON_Delete(data);
		return NULL;
	}
	cJSON_AddItemToObject(body, "data", data);
	return body;
}

/* Writes the release of `epoch`: creates the ConfigMap owned by the JobSet,
 * or, when it exists, merge-patches it if it is ours, replaces it if it is a
 * predecessor's leftover, and refuses (MUSTER_ECONFLICT) if it is anyone
 * else's. *how says what was done. */
int release_record_write(struct kube_client *client, const struct release_jobset *e, uint64_t epoch,
			 const char **how, int *foreign, char **cause)
{
	char path[KUBE_PATH_MAX], *patch;
	cJSON *body = configmap_body(e, epoch), *existing = NULL;
	const cJSON *existing_uid;
	int err;

	if (!body)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the ConfigMap");
	*how = "created";
	err = release_record_path(path, sizeof(path), e, 1, cause);
	if (!err)
		err = kube_create(client, path, body, NULL, cause);
	if (err != MUSTER_ECONFLICT)
		goto out;
	/* It exists: an earlier attempt's release, our own retried POST, a
	 * leftover of a deleted JobSet of this name, or somebody else's. */
	free(*cause);
	*cause = NULL;
	err = release_record_path(path, sizeof(path), e, 0, cause);
	if (!err)
		err = kube_get(client, path, &existing, cause);
	if (err)
		goto out;
	switch (release_record_owner(existing, e)) {
	case RELEASE_OWNER_OURS:
		*how = "patched";
		patch = release_patch(e, epoch);
		err = patch ? kube_patch(client, path, KUBE_PATCH_MERGE, patch, NULL, cause)
			    : cause_err(cause, MUSTER_ENOMEM, "no memory for the ConfigMap patch");
		free(patch);
		break;
	case RELEASE_OWNER_PREDECESSOR:
		*how = "replaced";
		mlog(MLOG_INFO, "configmap-replaced",
		     "jobset=%s/%s reason=\"owned by an earlier JobSet of this name\"", e->namespace,
		     e->name);
		/* By its uid: one made again under the name since is not deleted. */
		existing_uid = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(existing, "metadata"), "uid");
		err = cJSON_IsString(existing_uid)
			      ? kube_delete_uid(client, path, existing_uid->valuestring, cause)
			      : cause_err(cause, MUSTER_EPARSE, "the ConfigMap has no metadata.uid");
		if (err && err != MUSTER_ENOTFOUND)
			break;
		free(*cause);
		*cause = NULL;
		err = release_record_path(path, sizeof(path), e, 1, cause);
		if (!err)
			err = kube_create(client, path, body, NULL, cause);
		break;
	case RELEASE_OWNER_FOREIGN:
		*foreign = 1;
		err = cause_err(cause, MUSTER_ECONFLICT,
				"ConfigMap %s/%s" MUSTER_CONFIGMAP_SUFFIX
				" exists and is not owned by this JobSet",
				e->namespace, e->name);
		break;
	}
out:
	cJSON_Delete(existing);
	cJSON_Delete(body);
	return err;
}

int release_record_read(struct kube_client *client, const struct release_jobset *e,
			struct release_record_read *out, char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *configmap = NULL;
	const cJSON *data, *started, *generation;
	unsigned long attempt, released_generation = 0;
	int err;

	memset(out, 0, sizeof(*out));
	err = release_record_path(path, sizeof(path), e, 0, cause);
	if (!err)
		err = kube_get(client, path, &configmap, cause);
	if (err == MUSTER_ENOTFOUND) {
		if (cause) {
			free(*cause);
			*cause = NULL;
		}
		return 0;
	}
	if (err)
		return err;
	out->found = 1;
	out->owner = release_record_owner(configmap, e);
	if (out->owner != RELEASE_OWNER_OURS)
		goto out;
	data = cJSON_GetObjectItemCaseSensitive(configmap, "data");
	started = cJSON_GetObjectItemCaseSensitive(data, MUSTER_CONFIGMAP_KEY_STARTED);
	generation = cJSON_GetObjectItemCaseSensitive(data, MUSTER_CONFIGMAP_KEY_GENERATION);
	if (!cJSON_IsString(started))
		goto out;
	if (parse_number(started, &attempt) ||
	    (generation && parse_number(generation, &released_generation))) {
		err = cause_err(cause, MUSTER_EPARSE,
				"%s: data." MUSTER_CONFIGMAP_KEY_STARTED
				" or data." MUSTER_CONFIGMAP_KEY_GENERATION " is not a number",
				path);
		goto out;
	}
	out->has_release = 1;
	out->epoch = group_epoch((uint32_t)released_generation, (uint32_t)attempt);
out:
	cJSON_Delete(configmap);
	return err;
}
