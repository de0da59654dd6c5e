/*
 * kc_fetch: the status's inputs from the API. See kc_fetch.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_fetch.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kjson.h"
#include "kube_client.h"
#include "kube_error.h"
#include "kube_path.h"
#include "muster_api.h"

#define PAGE_SIZE 500

/* A LIST of `resource` in the namespace into {"items": [...]}. */
static int list(struct kube_client *client, const struct kube_resource *resource, const char *namespace,
		const struct kube_selectors *selectors, cJSON **out, char **cause)
{
	char path[512];
	cJSON *root = cJSON_CreateObject(), *items = root ? cJSON_AddArrayToObject(root, "items") : NULL;
	int err;

	*out = NULL;
	if (!items) {
		cJSON_Delete(root);
		return cause_err(cause, MUSTER_ENOMEM, "no memory for a list");
	}
	err = kube_path(path, sizeof(path), resource, namespace, NULL, cause);
	if (!err)
		err = kube_list(client, path, selectors, PAGE_SIZE, kube_item_collect, items, NULL, cause);
	if (err) {
		cJSON_Delete(root);
		return err;
	}
	*out = root;
	return 0;
}

/* GETs a ConfigMap; absent leaves *out NULL and succeeds. */
static int get_configmap(struct kube_client *client, const char *namespace, const char *jobset,
			 const char *suffix, cJSON **out, char **cause)
{
	char name[300], path[600];
	int err;

	*out = NULL;
	snprintf(name, sizeof(name), "%s%s", jobset, suffix);
	err = kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, namespace, name, cause);
	if (!err)
		err = kube_get(client, path, out, cause);
	if (err == MUSTER_ENOTFOUND) {
		if (cause) {
			free(*cause);
			*cause = NULL;
		}
		*out = NULL;
		return 0;
	}
	return err;
}

int kc_fetch_status(struct kube_client *client, const char *namespace, const char *name,
		    struct kc_fetched *out, char **cause)
{
	char path[600], selector[400];
	const char *uid = NULL;
	struct kube_selectors pods = { .label = selector }, events = { 0 };
	int err;

	memset(out, 0, sizeof(*out));
	err = kube_path(path, sizeof(path), &KUBE_JOBSETS, namespace, name, cause);
	if (!err)
		err = kube_get(client, path, &out->jobset, cause);
	if (err)
		goto out;
	if (kjson_string(kjson_path(out->jobset, "metadata", "uid", NULL), 64, &uid) != KJSON_OK || !uid ||
	    !kube_label_value(uid)) {
		err = cause_err(cause, MUSTER_EPARSE, "JobSet %s/%s: metadata.uid is missing or not a uid",
				namespace, name);
		goto out;
	}
	snprintf(selector, sizeof(selector), "%s=%s", JOBSET_LABEL_NAME, name);
	err = list(client, &KUBE_PODS, namespace, &pods, &out->pods, cause);
	if (!err)
		err = get_configmap(client, namespace, name, MUSTER_CONFIGMAP_SUFFIX, &out->release, cause);
	if (!err)
		err = get_configmap(client, namespace, name, MUSTER_PLACEMENT_SUFFIX, &out->placement, cause);
	if (!err) {
		char field[200];

		snprintf(field, sizeof(field), "involvedObject.uid=%s", uid);
		events.field = field;
		err = list(client, &KUBE_EVENTS, namespace, &events, &out->events, cause);
	}
out:
	if (err)
		kc_fetched_free(out);
	return err;
}

void kc_fetched_free(struct kc_fetched *f)
{
	if (!f)
		return;
	cJSON_Delete(f->jobset);
	cJSON_Delete(f->pods);
	cJSON_Delete(f->release);
	cJSON_Delete(f->placement);
	cJSON_Delete(f->events);
	memset(f, 0, sizeof(*f));
}
