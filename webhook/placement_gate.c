/*
 * placement_gate: suspend a JobSet until it is placed (placement_gate.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_gate.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "jobset_shape.h"
#include "jobset_admission.h"
#include "json_patch.h"
#include "kjson.h"
#include "muster_api.h"

#define POINTER_MAX 192

static const cJSON *annotations_of(const cJSON *object)
{
	return kjson_member(kjson_member(object, "metadata"), "annotations");
}

/* A pod's place in the record is its completion index, which only an
 * Indexed Job with completions equal to parallelism gives every pod. */
static int indexable(const cJSON *jobset, char **cause)
{
	const cJSON *rj;

	cJSON_ArrayForEach(rj, jobset_replicated_jobs(jobset))
	{
		const cJSON *spec = kjson_member(kjson_member(rj, "template"), "spec");
		const cJSON *mode = kjson_member(spec, "completionMode");
		const char *name = jobset_replicated_job_name(rj);

		if (cJSON_IsString(mode) && strcmp(mode->valuestring, "Indexed") != 0)
			return cause_fail(
				cause,
				"placement: replicated job %s has completionMode %s; muster pins pods by "
				"completion index, so it places Indexed Jobs only",
				name ? name : "?", mode->valuestring);
		/* completions may differ from parallelism: the record places the
		 * pods that run at once, min(parallelism, completions) as Kueue
		 * counts them, and a later pod takes one of their slots
		 * (lib/topo/topo_record.h). */
	}
	return 0;
}

/* ---- building the copy and the ops together ---- */

/* parent[key] as an object, made (with its op) when absent or not one. */
static cJSON *object_at(cJSON *patch, cJSON *parent, const char *key, const char *pointer)
{
	cJSON *child = cJSON_GetObjectItemCaseSensitive(parent, key);

	if (cJSON_IsObject(child))
		return child;
	if (json_patch_op(patch, "add", pointer, cJSON_CreateObject()))
		return NULL;
	if (child)
		cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
	return cJSON_AddObjectToObject(parent, key);
}

/* parent[key] = value (a string or a bool), with its op. */
static int set_value(cJSON *patch, cJSON *parent, const char *key, const char *pointer, cJSON *value)
{
	cJSON *copy = value ? cJSON_Duplicate(value, 1) : NULL;
	const char *kind = cJSON_GetObjectItemCaseSensitive(parent, key) ? "replace" : "add";

	if (!copy || json_patch_op(patch, kind, pointer, copy)) {
		cJSON_Delete(value);
		return -1;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
	cJSON_AddItemToObject(parent, key, value);
	return 0;
}

static int set_annotation(cJSON *patch, cJSON *jobset, const char *state)
{
	cJSON *metadata = object_at(patch, jobset, "metadata", "/metadata");
	cJSON *annotations =
		metadata ? object_at(patch, metadata, "annotations", "/metadata/annotations") : NULL;

	return annotations ? set_value(patch, annotations, MUSTER_ANNOTATION_PLACEMENT,
				       "/metadata/annotations/" MUSTER_ANNOTATION_PLACEMENT_POINTER,
				       cJSON_CreateString(state))
			   : -1;
}

static int set_suspend(cJSON *patch, cJSON *jobset)
{
	cJSON *spec = object_at(patch, jobset, "spec", "/spec");

	return spec ? set_value(patch, spec, "suspend", "/spec/suspend", cJSON_CreateTrue()) : -1;
}

/* metadata.labels[MUSTER_LABEL_PLACEMENT] = "true" on the template object
 * `template` found at JSON Pointer `base`. */
static int label_template(cJSON *patch, cJSON *template, const char *base)
{
	char path[POINTER_MAX];
	cJSON *metadata, *labels;
	const cJSON *now;

	snprintf(path, sizeof(path), "%s/metadata", base);
	if (!(metadata = object_at(patch, template, "metadata", path)))
		return -1;
	snprintf(path, sizeof(path), "%s/metadata/labels", base);
	if (!(labels = object_at(patch, metadata, "labels", path)))
		return -1;
	now = cJSON_GetObjectItemCaseSensitive(labels, MUSTER_LABEL_PLACEMENT);
	if (cJSON_IsString(now) && strcmp(now->valuestring, "true") == 0)
		return 0;
	snprintf(path, sizeof(path), "%s/metadata/labels/" MUSTER_LABEL_PLACEMENT_POINTER, base);
	return set_value(patch, labels, MUSTER_LABEL_PLACEMENT, path, cJSON_CreateString("true"));
}

/* Every replicated job's Job template (JobSet copies its labels onto each
 * Job: the pin route's Job half selects them) and pod template (the pod
 * half). CREATE only: upstream JobSet keeps a Job template's metadata
 * immutable. */
static int label_templates(cJSON *patch, cJSON *jobset)
{
	cJSON *rjs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(jobset, "spec"),
						      "replicatedJobs"),
	      *rj;
	size_t i = 0;

	cJSON_ArrayForEach(rj, rjs)
	{
		char base[POINTER_MAX / 2];
		cJSON *job = cJSON_GetObjectItemCaseSensitive(rj, "template");
		cJSON *template = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(job, "spec"), "template");

		if (!cJSON_IsObject(template))
			return -1; /* the decoder refused this already */
		snprintf(base, sizeof(base), "/spec/replicatedJobs/%zu/template", i);
		if (label_template(patch, job, base))
			return -1;
		snprintf(base, sizeof(base), "/spec/replicatedJobs/%zu/template/spec/template", i++);
		if (label_template(patch, template, base))
			return -1;
	}
	return 0;
}

/* The pin route's marks on a Job's pod template, never the user's to give
 * on a JobSet's: MUSTER_LABEL_JOB_PINNED (the pods of a Job pinned one by one
 * would skip the pod route) and MUSTER_ANNOTATION_JOB_SELECTOR (the pod route
 * would replace values of the user's: on a resume JobSet merges the JobSet's
 * pod template annotations over its Jobs'). */
static const struct {
	const char *field, *key, *pointer;
} pin_marks[] = {
	{ "labels", MUSTER_LABEL_JOB_PINNED, "labels/" MUSTER_LABEL_JOB_PINNED_POINTER },
	{ "annotations", MUSTER_ANNOTATION_JOB_SELECTOR,
	  "annotations/" MUSTER_ANNOTATION_JOB_SELECTOR_POINTER },
};

/* 1 when replicated job `rj`'s pod template carries pin mark `m`. */
static int has_pin_mark(const cJSON *rj, size_t m)
{
	return kjson_member(
		       kjson_member(kjson_member(jobset_pod_template(rj), "metadata"), pin_marks[m].field),
		       pin_marks[m].key) != NULL;
}

/* The first replicated job of `old` (NULL for a CREATE), to walk beside the
 * new JobSet's: one step per replicated job, never a search (a review may
 * hold thousands). */
static const cJSON *first_rj(const cJSON *old)
{
	const cJSON *rjs = old ? jobset_replicated_jobs(old) : NULL;

	return cJSON_IsArray(rjs) ? rjs->child : NULL;
}

/* The pin route's marks (pin_marks) on a JobSet's pod templates: copied
 * there (from a Job's YAML, say), they would reach its Jobs. Appends the
 * remove ops for the pod templates that carry one and whose counterpart in
 * `old` does not (`old` NULL: a CREATE; on an UPDATE a mark the JobSet had
 * before is left alone: the template may be immutable by then, and the
 * update refused for it); 1 when any. */
static int strip_pin_marks(const cJSON *old, const cJSON *jobset, cJSON *patch)
{
	const cJSON *rj, *was = first_rj(old);
	size_t i = 0;
	int any = 0;

	cJSON_ArrayForEach(rj, jobset_replicated_jobs(jobset))
	{
		for (size_t m = 0; m < sizeof(pin_marks) / sizeof(pin_marks[0]); m++) {
			char path[POINTER_MAX];

			if (!has_pin_mark(rj, m) || (was && has_pin_mark(was, m)))
				continue;
			snprintf(path, sizeof(path),
				 "/spec/replicatedJobs/%zu/template/spec/template/metadata/%s", i,
				 pin_marks[m].pointer);
			if (json_patch_remove(patch, path) == 0)
				any = 1;
		}
		was = was ? was->next : NULL;
		i++;
	}
	return any;
}

/* Drops the pin marks from the pod templates of `copy`, as
 * strip_pin_marks(old, ...) removes them. */
static void drop_pin_marks(const cJSON *old, cJSON *copy)
{
	const cJSON *was = first_rj(old);
	cJSON *rj;

	cJSON_ArrayForEach(rj, cJSON_GetObjectItemCaseSensitive(
				       cJSON_GetObjectItemCaseSensitive(copy, "spec"), "replicatedJobs"))
	{
		for (size_t m = 0; m < sizeof(pin_marks) / sizeof(pin_marks[0]); m++)
			if (!(was && has_pin_mark(was, m)))
				cJSON_DeleteItemFromObjectCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(
						cJSON_GetObjectItemCaseSensitive(
							(cJSON *)jobset_pod_template(rj), "metadata"),
						pin_marks[m].field),
					pin_marks[m].key);
		was = was ? was->next : NULL;
	}
}

/* A JobSet muster does not gate carries none of the gate's marks: one
 * copied from a placed JobSet would hold its resumes or send its pods to
 * /pin, where no record waits. Appends the remove ops; 1 when any. */
static int strip(const cJSON *jobset, cJSON *patch)
{
	static const char *const keys[][2] = {
		{ MUSTER_ANNOTATION_PLACEMENT, "/metadata/annotations/" MUSTER_ANNOTATION_PLACEMENT_POINTER },
		{ MUSTER_ANNOTATION_PLACEMENT_REASON,
		  "/metadata/annotations/" MUSTER_ANNOTATION_PLACEMENT_REASON_POINTER },
	};
	const cJSON *rj;
	size_t i = 0;
	int any = 0;

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (kjson_member(annotations_of(jobset), keys[k][0]) &&
		    json_patch_remove(patch, keys[k][1]) == 0)
			any = 1;
	any |= strip_pin_marks(NULL, jobset, patch);
	cJSON_ArrayForEach(rj, jobset_replicated_jobs(jobset))
	{
		const cJSON *templates[2] = { kjson_member(rj, "template"), jobset_pod_template(rj) };
		static const char *const tails[2] = { "", "/spec/template" };

		for (size_t t = 0; t < 2; t++) {
			char path[POINTER_MAX];
			int at;

			if (!kjson_member(kjson_member(kjson_member(templates[t], "metadata"), "labels"),
					  MUSTER_LABEL_PLACEMENT))
				continue;
			at = snprintf(path, sizeof(path), "/spec/replicatedJobs/%zu/template%s", i, tails[t]);
			if (at > 0 && (size_t)at < sizeof(path)) {
				snprintf(path + at, sizeof(path) - (size_t)at,
					 "/metadata/labels/" MUSTER_LABEL_PLACEMENT_POINTER);
				if (json_patch_remove(patch, path) == 0)
					any = 1;
			}
		}
		i++;
	}
	return any;
}

/* The copy the barrier's patch is computed on, after strip()'s ops. */
static int stripped(const cJSON *jobset, cJSON *patch, cJSON **modified, char **cause)
{
	cJSON *copy, *rj, *labels;

	if (!strip(jobset, patch))
		return 0;
	if (!(copy = cJSON_Duplicate(jobset, 1)))
		return cause_fail(cause, "out of memory");
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"),
						 "annotations"),
		MUSTER_ANNOTATION_PLACEMENT);
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"),
						 "annotations"),
		MUSTER_ANNOTATION_PLACEMENT_REASON);
	cJSON_ArrayForEach(rj, cJSON_GetObjectItemCaseSensitive(
				       cJSON_GetObjectItemCaseSensitive(copy, "spec"), "replicatedJobs"))
	{
		labels = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rj, "template"),
							 "metadata"),
			"labels");
		cJSON_DeleteItemFromObjectCaseSensitive(labels, MUSTER_LABEL_PLACEMENT);
		labels = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(
						cJSON_GetObjectItemCaseSensitive(rj, "template"), "spec"),
					"template"),
				"metadata"),
			"labels");
		cJSON_DeleteItemFromObjectCaseSensitive(labels, MUSTER_LABEL_PLACEMENT);
	}
	drop_pin_marks(NULL, copy);
	*modified = copy;
	return 0;
}

/* Gates a JobSet that asks for placement: waiting (or held by its user
 * while suspended), suspended until placed, its pod templates labelled. */
static int gate(const struct jobset_admission *old, const struct jobset_admission *a, cJSON *patch,
		cJSON **modified, char **cause);

/* A JobSet Volcano schedules is Volcano's to place, all of it: a request
 * muster would read on it is not applied, which its author is told. */
static void warn_dropped(const struct jobset_admission *a, char **warning)
{
	if (!a->owner || strcmp(a->owner, "volcano") != 0 || a->asks <= 0)
		return;
	cause_fail(warning,
		   "muster.dev: a replicated job of this JobSet has schedulerName " VOLCANO_SCHEDULER_NAME
		   ", so muster leaves the placement of the whole JobSet to Volcano and does not apply "
		   "its topology request; ask Volcano for it (networkTopology), or schedule every "
		   "replicated job with the default scheduler for muster to place it");
}
/* The JobSet marked MUSTER_ANNOTATION_PLACEMENT_SKIPPED (`skipped` its
 * value) or, with `skipped` NULL, a copied mark removed: on the copy
 * *modified (made when NULL) and in `patch`. */
static int mark_skipped(const cJSON *jobset, const char *skipped, cJSON *patch, cJSON **modified,
			char **cause)
{
	cJSON *copy = *modified, *metadata, *annotations;
	int had = kjson_member(annotations_of(jobset), MUSTER_ANNOTATION_PLACEMENT_SKIPPED) != NULL;

	if (!skipped && !had)
		return 0;
	if (!copy && !(copy = cJSON_Duplicate(jobset, 1)))
		return cause_fail(cause, "out of memory");
	*modified = copy;
	if (!skipped) {
		cJSON_DeleteItemFromObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"),
							 "annotations"),
			MUSTER_ANNOTATION_PLACEMENT_SKIPPED);
		return json_patch_remove(patch,
					 "/metadata/annotations/" MUSTER_ANNOTATION_PLACEMENT_SKIPPED_POINTER)
			       ? cause_fail(cause, "out of memory")
			       : 0;
	}
	metadata = object_at(patch, copy, "metadata", "/metadata");
	annotations = metadata ? object_at(patch, metadata, "annotations", "/metadata/annotations") : NULL;
	if (!annotations || set_value(patch, annotations, MUSTER_ANNOTATION_PLACEMENT_SKIPPED,
				      "/metadata/annotations/" MUSTER_ANNOTATION_PLACEMENT_SKIPPED_POINTER,
				      cJSON_CreateString(skipped)))
		return cause_fail(cause, "out of memory");
	return 0;
}

int placement_gate_create(const struct jobset_admission *a, cJSON *patch, cJSON **modified, char **warning,
			  char **cause)
{
	const cJSON *jobset = a->tree;

	*modified = NULL;
	*warning = NULL;
	if (!a->mentions)
		return stripped(jobset, patch, modified, cause)
			       ? -1
			       : mark_skipped(jobset, NULL, patch, modified, cause);
	if (a->owner) {
		warn_dropped(a, warning);
		if (stripped(jobset, patch, modified, cause))
			return -1;
		return mark_skipped(jobset, *warning ? MUSTER_PLACEMENT_SKIPPED_VOLCANO : NULL, patch,
				    modified, cause);
	}
	if (a->asks < 0)
		return cause_fail(cause, "%s", a->placement_cause);
	if (!a->asks)
		return stripped(jobset, patch, modified, cause)
			       ? -1
			       : mark_skipped(jobset, NULL, patch, modified, cause);
	return gate(NULL, a, patch, modified, cause) ? -1
						     : mark_skipped(jobset, NULL, patch, modified, cause);
}

static int gate(const struct jobset_admission *old, const struct jobset_admission *a, cJSON *patch,
		cJSON **modified, char **cause)
{
	const cJSON *was = old ? old->tree : NULL;
	cJSON *copy = NULL;
	int err = 0;

	if (indexable(a->tree, cause))
		return -1;
	if (!(copy = cJSON_Duplicate(a->tree, 1)))
		return cause_fail(cause, "out of memory");
	err = set_annotation(patch, copy,
			     a->suspended ? MUSTER_PLACEMENT_USER_HELD : MUSTER_PLACEMENT_WAITING);
	if (!err && !a->suspended)
		err = set_suspend(patch, copy);
	if (!err)
		err = label_templates(patch, copy);
	if (!err && strip_pin_marks(was, copy, patch))
		drop_pin_marks(was, copy);
	if (err) {
		cJSON_Delete(copy);
		return cause_fail(cause, "out of memory");
	}
	*modified = copy;
	return 0;
}

int placement_gate_update(const struct jobset_admission *old, const struct jobset_admission *a,
			  int from_controller, cJSON *patch, cJSON **modified, char **cause)
{
	const char *was = old->placement_state, *now = a->placement_state, *want = NULL;
	cJSON *copy;
	int hold = 0, err = 0, pinned, asks = a->owner ? 0 : a->asks, had = old->owner ? 0 : old->asks;

	*modified = NULL;
	/* A request this update makes malformed is refused, as at creation:
	 * it would only show at the resume, as a waiting reason. One stored
	 * malformed already (admitted before the decoder knew better) and held
	 * by the gate is let through, so that the controller can still write
	 * why it waits and its user can mend it; one the gate never held would
	 * run unplaced, so it is refused as before. */
	if (asks < 0 && (had >= 0 || !was))
		return cause_fail(cause, "%s", a->placement_cause);
	if (!was) {
		/* Not gated at creation. A request given while the JobSet is
		 * suspended (its pods not made since) is gated as at creation,
		 * as Kueue honours it; a running JobSet is not suspended for it. */
		if (asks > 0 && old->suspended)
			return gate(old, a, patch, modified, cause);
		return 0;
	}
	/* A pin mark added by this update goes, as at creation. */
	pinned = strip_pin_marks(old->tree, a->tree, patch);
	if (strcmp(was, MUSTER_PLACEMENT_PLACED) == 0 && now && strcmp(now, MUSTER_PLACEMENT_WAITING) == 0 &&
	    a->suspended) {
		/* placed again, suspended meanwhile (the controller's move after a node is lost) */
	} else if (strcmp(was, MUSTER_PLACEMENT_PLACED) == 0) {
		if (!now || strcmp(now, was) != 0)
			want = was; /* the record of the gate stays */
	} else if (now && strcmp(now, MUSTER_PLACEMENT_PLACED) == 0 && from_controller) {
		/* the controller's resume, after the record was written */
	} else if (!a->suspended) {
		/* A resume of a JobSet not placed yet: held until it is. */
		hold = 1;
		want = MUSTER_PLACEMENT_WAITING;
	} else if (!now || strcmp(now, was) != 0) {
		want = was;
	}
	if (!want && !hold && !pinned)
		return 0;
	if (!(copy = cJSON_Duplicate(a->tree, 1)))
		return cause_fail(cause, "out of memory");
	if (want && (!now || strcmp(now, want) != 0))
		err = set_annotation(patch, copy, want);
	if (!err && hold)
		err = set_suspend(patch, copy);
	if (err) {
		cJSON_Delete(copy);
		return cause_fail(cause, "out of memory");
	}
	if (pinned)
		drop_pin_marks(old->tree, copy);
	*modified = copy;
	return 0;
}
