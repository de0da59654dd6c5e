/*
 * pod_pin: a pod's place in its JobSet, and its nodeSelector patch
 * (pod_pin.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "pod_pin.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "json_patch.h"
#include "kjson.h"
#include "muster_api.h"

#define LABEL_VALUE_MAX 63
#define SHARE_MAX 2048 /* a share's pairs: at most a record selector's */

int pod_pin_key(const cJSON *pod, struct jobset_pod *key, char **cause)
{
	if (jobset_pod_decode(kjson_member(pod, "metadata"), "pod", key, cause) ||
	    jobset_pod_require(key, "pod", 1, cause))
		return -1;
	return 0;
}

int pod_pin_job_key(const cJSON *job, struct jobset_pod *key, uint32_t *pods, char **cause)
{
	const cJSON *spec = kjson_member(job, "spec");
	const cJSON *completions = kjson_member(spec, "completions"),
		    *parallelism = kjson_member(spec, "parallelism");
	long long value;

	*pods = 0;
	if (jobset_pod_decode(kjson_member(job, "metadata"), "Job", key, cause) ||
	    jobset_pod_require(key, "Job", 0, cause))
		return -1;
	/* The Job API's defaults: neither set is one pod; parallelism alone
	 * is a work queue, no fixed set of pods to pin as a whole. */
	if (cJSON_IsNumber(completions)) {
		if (kjson_count(completions, -1, KJSON_INT32_MAX, &value) != KJSON_OK || value < 0)
			return cause_fail(cause, "the Job's spec.completions is not an integer from 0");
		*pods = (uint32_t)value;
		return 0;
	}
	if (!parallelism || cJSON_IsNull(parallelism))
		*pods = 1;
	return 0;
}

/* The value of `key` (key_len bytes) in selector `selector` ("k=v,k=v", may
 * be NULL): its start and *len, or NULL. */
static const char *selector_value(const char *selector, const char *key, size_t key_len, size_t *len)
{
	while (selector && *selector) {
		size_t pair = strcspn(selector, ",");
		const char *eq = memchr(selector, '=', pair);

		if (eq && (size_t)(eq - selector) == key_len && memcmp(selector, key, key_len) == 0) {
			*len = pair - key_len - 1;
			return eq + 1;
		}
		selector += pair;
		if (*selector)
			selector++;
	}
	return NULL;
}

/* 1 when selector `owned` (may be NULL) holds key=value. */
static int owns(const char *owned, const char *key, size_t key_len, const char *value)
{
	size_t len;
	const char *have = selector_value(owned, key, key_len, &len);

	return have && len == strlen(value) && memcmp(have, value, len) == 0;
}

/* Appends "key=value" to `added` (a selector being built, `size` bytes). */
static void note_added(char *added, size_t size, const char *key, const char *value)
{
	size_t at;

	if (!added)
		return;
	at = strlen(added);
	if (at < size)
		snprintf(added + at, size - at, "%s%s=%s", at ? "," : "", key, value);
}

/* Ops that add `selector` to the pod spec `spec` found at JSON Pointer
 * `base`; `kind` names the object in messages. A key the spec selects with
 * another value is replaced when `owned` (the pod's
 * MUSTER_ANNOTATION_JOB_SELECTOR, or NULL) says the pin route put that
 * value there, and refused otherwise; a key of `owned` that `selector` does
 * not name is removed while the spec still selects the owned value (the
 * template's share came from another record than this pod's). The pairs
 * added are noted in `added` (`added_size` bytes; NULL: not noted). */
static int pin_spec(const cJSON *spec, const char *base, const char *kind, const char *selector,
		    const char *owned, char *added, size_t added_size, cJSON *patch, char **cause)
{
	const cJSON *existing = kjson_member(spec, "nodeSelector");
	int made = cJSON_IsObject(existing);
	char selector_path[64];
	const char *all = selector;

	if (!cJSON_IsObject(spec))
		return cause_fail(cause, "the %s has no %s", kind,
				  strcmp(kind, "pod") == 0 ? "spec" : "pod template");
	snprintf(selector_path, sizeof(selector_path), "%s/nodeSelector", base);
	while (*selector) {
		const char *eq = strchr(selector, '='), *comma;
		char key[320], value[LABEL_VALUE_MAX + 1], path[sizeof(selector_path) + 1 + 3 * sizeof(key)];
		size_t key_len, value_len;
		const cJSON *have;

		if (!eq)
			return cause_fail(cause, "the placement record's selector is not key=value");
		comma = strchr(eq + 1, ',');
		key_len = (size_t)(eq - selector);
		value_len = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
		if (key_len >= sizeof(key) || value_len >= sizeof(value))
			return cause_fail(cause,
					  "the placement record's selector has a key or value too long");
		memcpy(key, selector, key_len);
		key[key_len] = '\0';
		memcpy(value, eq + 1, value_len);
		value[value_len] = '\0';
		selector = comma ? comma + 1 : eq + 1 + value_len;
		have = kjson_member(existing, key);
		snprintf(path, sizeof(path), "%s/", selector_path);
		json_pointer_token(path + strlen(path), sizeof(path) - strlen(path), key, key_len);
		if (cJSON_IsString(have)) {
			if (strcmp(have->valuestring, value) == 0)
				continue;
			/* Its Job's share, from the pod template: this pod's
			 * own domain instead. */
			if (owns(owned, key, key_len, have->valuestring)) {
				if (json_patch_op(patch, "replace", path, cJSON_CreateString(value)))
					return cause_fail(cause, "out of memory");
				continue;
			}
			return cause_fail(
				cause,
				"the %s selects %s=%s but its placement of record is %s=%s: remove the "
				"nodeSelector from the pod template or the topology request",
				kind, key, have->valuestring, key, value);
		}
		if (!made) {
			if (json_patch_add(patch, selector_path, cJSON_CreateObject()))
				return cause_fail(cause, "out of memory");
			made = 1;
		}
		if (json_patch_add(patch, path, cJSON_CreateString(value)))
			return cause_fail(cause, "out of memory");
		note_added(added, added_size, key, value);
	}
	/* Keys of the share this pod's domain does not name (a domain of
	 * another depth, or "anywhere"): the share's values go. */
	for (const char *o = owned; o && *o;) {
		size_t pair = strcspn(o, ","), len;
		const char *eq = memchr(o, '=', pair);

		if (eq && (size_t)(eq - o) < 320 && !selector_value(all, o, (size_t)(eq - o), &len)) {
			char key[320], path[sizeof(selector_path) + 1 + 3 * sizeof(key)];
			const cJSON *have;
			size_t value_len = pair - (size_t)(eq - o) - 1;

			memcpy(key, o, (size_t)(eq - o));
			key[eq - o] = '\0';
			have = kjson_member(existing, key);
			/* Still the share's value (this pair's): one scan of the
			 * annotation in all, not one per pair. */
			if (cJSON_IsString(have) && strlen(have->valuestring) == value_len &&
			    memcmp(have->valuestring, eq + 1, value_len) == 0) {
				snprintf(path, sizeof(path), "%s/", selector_path);
				json_pointer_token(path + strlen(path), sizeof(path) - strlen(path), key,
						   strlen(key));
				if (json_patch_remove(patch, path))
					return cause_fail(cause, "out of memory");
			}
		}
		o += pair;
		if (*o)
			o++;
	}
	return 0;
}

int pod_pin_patch(const cJSON *pod, const char *selector, cJSON *patch, char **cause)
{
	const cJSON *owned = kjson_member(kjson_member(kjson_member(pod, "metadata"), "annotations"),
					  MUSTER_ANNOTATION_JOB_SELECTOR);

	/* Longer than any share muster writes: not muster's, ignored (found
	 * without reading past SHARE_MAX; no pod's annotation makes the scans
	 * above cost more than this). */
	return pin_spec(kjson_member(pod, "spec"), "/spec", "pod", selector,
			cJSON_IsString(owned) && strnlen(owned->valuestring, SHARE_MAX) < SHARE_MAX
				? owned->valuestring
				: NULL,
			NULL, 0, patch, cause);
}

/* The op removing the pod template's `field` (labels or annotations) `key`
 * (JSON Pointer token `token`) when it has one: 0, or -1 out of memory. */
static int drop_mark(const cJSON *job, const char *field, const char *key, const char *token, cJSON *patch)
{
	char path[128];

	if (!kjson_member(kjson_member(kjson_member(kjson_member(kjson_member(job, "spec"), "template"),
						    "metadata"),
				       field),
			  key))
		return 0;
	snprintf(path, sizeof(path), "/spec/template/metadata/%s/%s", field, token);
	return json_patch_remove(patch, path);
}

/* Sets the pod template's `field` (labels or annotations) `key` to `value`,
 * making what is missing on the way. */
static int set_mark(const cJSON *job, const char *field, const char *key, const char *token,
		    const char *value, cJSON *patch)
{
	const cJSON *metadata = kjson_member(kjson_member(kjson_member(job, "spec"), "template"), "metadata");
	const cJSON *map = kjson_member(metadata, field);
	char path[128];

	if (!cJSON_IsObject(metadata) &&
	    json_patch_add(patch, "/spec/template/metadata", cJSON_CreateObject()))
		return -1;
	snprintf(path, sizeof(path), "/spec/template/metadata/%s", field);
	if (!cJSON_IsObject(map) && json_patch_add(patch, path, cJSON_CreateObject()))
		return -1;
	snprintf(path, sizeof(path), "/spec/template/metadata/%s/%s", field, token);
	return json_patch_op(patch, kjson_member(map, key) ? "replace" : "add", path,
			     cJSON_CreateString(value));
}

int pod_pin_job_patch(const cJSON *job, const char *selector, cJSON *patch, char **cause)
{
	const cJSON *template = kjson_member(kjson_member(job, "spec"), "template");

	if (pin_spec(kjson_member(template, "spec"), "/spec/template/spec", "Job", selector, NULL, NULL, 0,
		     patch, cause))
		return -1;
	/* Its pods are pinned already: the label keeps them from the pod
	 * route (its objectSelector leaves out pods that carry it). */
	if (set_mark(job, "labels", MUSTER_LABEL_JOB_PINNED, MUSTER_LABEL_JOB_PINNED_POINTER, "true",
		     patch) ||
	    drop_mark(job, "annotations", MUSTER_ANNOTATION_JOB_SELECTOR,
		      MUSTER_ANNOTATION_JOB_SELECTOR_POINTER, patch))
		return cause_fail(cause, "out of memory");
	return 0;
}

int pod_pin_job_unpinned(const cJSON *job, cJSON *patch)
{
	return drop_mark(job, "labels", MUSTER_LABEL_JOB_PINNED, MUSTER_LABEL_JOB_PINNED_POINTER, patch) ||
			       drop_mark(job, "annotations", MUSTER_ANNOTATION_JOB_SELECTOR,
					 MUSTER_ANNOTATION_JOB_SELECTOR_POINTER, patch)
		       ? -1
		       : 0;
}

int pod_pin_job_share_patch(const cJSON *job, const char *selector, cJSON *patch)
{
	const cJSON *template = kjson_member(kjson_member(job, "spec"), "template");
	cJSON *ops = cJSON_CreateArray(), *o;
	char added[SHARE_MAX] = "";
	char *cause = NULL;
	int rc;

	if (!ops)
		return -1;
	rc = pin_spec(kjson_member(template, "spec"), "/spec/template/spec", "Job", selector, NULL, added,
		      sizeof(added), ops, &cause);
	free(cause);
	/* Its own selector says otherwise (or it has no pod spec), or it
	 * selects the share already: no share, its pods are pinned one by
	 * one (or refused) as before. */
	if (rc || !added[0] || strlen(added) + 1 >= sizeof(added)) {
		cJSON_Delete(ops);
		return pod_pin_job_unpinned(job, patch);
	}
	while ((o = cJSON_DetachItemFromArray(ops, 0)) != NULL)
		cJSON_AddItemToArray(patch, o);
	cJSON_Delete(ops);
	/* Only the pairs muster added: those the pod route may change. */
	return set_mark(job, "annotations", MUSTER_ANNOTATION_JOB_SELECTOR,
			MUSTER_ANNOTATION_JOB_SELECTOR_POINTER, added, patch) ||
			       drop_mark(job, "labels", MUSTER_LABEL_JOB_PINNED,
					 MUSTER_LABEL_JOB_PINNED_POINTER, patch)
		       ? -1
		       : 0;
}
