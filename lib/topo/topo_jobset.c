/*
 * topo_jobset: a JobSet's placement request. See topo_jobset.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_jobset.h"

#include "cause.h"
#include "jobset_model.h"
#include "kjson.h"
#include "muster_api.h"
#include "topo_fields.h"
#include "yaml_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding ---- */

/* A Volcano networkTopology object (an annotation's value, or a field). */

/* A level, group or exclusive-topology value: copied like any string, and
 * refused when empty (an empty name is no level: it would wait forever for
 * a domain no node has). */
static int named_copy(struct topo_store *s, const cJSON *obj, const char *key, size_t max, const char **out,
		      const char *where, const char *field, char **cause)
{
	if (topo_field_copy(s, obj, key, max, out, where, field, cause))
		return -1;
	if (*out && !**out)
		return cause_replace(cause, "%s: %s%s: empty; give a level of the topology (a node label)",
				     where, field, key);
	return 0;
}

static int network_of(struct topo_store *s, const cJSON *obj, struct topo_network_request *out,
		      const char *where, const char *field, char **cause)
{
	const char *mode;
	long long tier;
	char whole[160]; /* the object itself: field without its trailing ". " or ": " */
	size_t n;

	memset(out, 0, sizeof(*out));
	snprintf(whole, sizeof(whole), "%s", field);
	n = strlen(whole);
	while (n > 0 && (whole[n - 1] == '.' || whole[n - 1] == ' ' || whole[n - 1] == ':'))
		whole[--n] = '\0';
	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj))
		return cause_replace(cause, "%s: %s: not a map", where, whole);
	out->set = 1;
	if (topo_field_string(obj, "mode", 16, &mode, where, field, cause) ||
	    topo_field_count(obj, "highestTierAllowed", 0, 1000000, &tier, where, field, cause) ||
	    topo_field_copy(s, obj, "highestTierName", TOPO_NAME_MAX, &out->tier_name, where, field, cause))
		return -1;
	if (mode && strcmp(mode, "hard") != 0 && strcmp(mode, "soft") != 0)
		return cause_replace(cause, "%s: %smode: %s is neither hard nor soft", where, field, mode);
	out->hard = !mode || strcmp(mode, "hard") == 0;
	out->tier = (int)tier;
	if (kjson_value(obj, "highestTierAllowed") && tier < 1)
		return cause_replace(cause, "%s: %shighestTierAllowed: tiers start at 1", where, field);
	if (out->tier && out->tier_name)
		return cause_replace(cause,
				     "%s: %s: highestTierAllowed and highestTierName cannot both be set",
				     where, whole);
	if (out->hard && !out->tier && !out->tier_name)
		return cause_replace(cause, "%s: %s: mode hard needs highestTierAllowed or highestTierName",
				     where, whole);
	return 0;
}

/* An annotation holding a small JSON or YAML object. */
static int annotation_object(const char *text, const char *where, const char *name, cJSON **out, char **cause)
{
	char what[320];

	snprintf(what, sizeof(what), "%s: annotation %s", where, name);
	*out = yaml_json_parse(text, strlen(text), what, cause);
	if (!*out)
		return -1;
	if (!cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return cause_replace(cause, "%s: not a map", what);
	}
	return 0;
}

static int decode_network_annotation(struct topo_store *s, const cJSON *annotations, const char *where,
				     const char *prefix, struct topo_network_request *out, char **cause)
{
	const char *text;
	cJSON *obj;
	char field[96];
	int rc;

	memset(out, 0, sizeof(*out));
	if (topo_field_string(annotations, MUSTER_ANNOTATION_NETWORK_TOPOLOGY, 4096, &text, where, prefix,
			      cause))
		return -1;
	if (!text)
		return 0;
	if (annotation_object(text, where, MUSTER_ANNOTATION_NETWORK_TOPOLOGY, &obj, cause))
		return -1;
	snprintf(field, sizeof(field), "annotation %s: ", MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
	rc = network_of(s, obj, out, where, field, cause);
	cJSON_Delete(obj);
	return rc;
}

static int decode_partitions(struct topo_store *s, const cJSON *annotations, struct topo_jobset_group *g,
			     const char *where, const char *prefix, char **cause)
{
	const char *text;
	cJSON *obj;
	long long total, size, least;
	char field[96];
	int rc = -1;

	if (topo_field_string(annotations, MUSTER_ANNOTATION_PARTITION_POLICY, 4096, &text, where, prefix,
			      cause))
		return -1;
	if (!text)
		return 0;
	if (annotation_object(text, where, MUSTER_ANNOTATION_PARTITION_POLICY, &obj, cause))
		return -1;
	snprintf(field, sizeof(field), "annotation %s: ", MUSTER_ANNOTATION_PARTITION_POLICY);
	if (topo_field_count(obj, "totalPartitions", 0, TOPO_PODS_MAX, &total, where, field, cause) ||
	    topo_field_count(obj, "partitionSize", 0, TOPO_PODS_MAX, &size, where, field, cause) ||
	    topo_field_count(obj, "minPartitions", 0, TOPO_PODS_MAX, &least, where, field, cause))
		goto out;
	if (total < 1 || size < 1) {
		cause_replace(cause, "%s: %stotalPartitions and partitionSize must be at least 1", where,
			      field);
		goto out;
	}
	if ((unsigned long long)total * (unsigned long long)size != g->pods) {
		cause_replace(cause,
			      "%s: %stotalPartitions x partitionSize = %lld x %lld, the job has %u pods",
			      where, field, total, size, g->pods);
		goto out;
	}
	if (least > total) {
		cause_replace(cause, "%s: %sminPartitions %lld is above totalPartitions %lld", where, field,
			      least, total);
		goto out;
	}
	snprintf(field, sizeof(field), "annotation %s: networkTopology.", MUSTER_ANNOTATION_PARTITION_POLICY);
	if (network_of(s, kjson_value(obj, "networkTopology"), &g->partition_network, where, field, cause))
		goto out;
	g->partitions = (unsigned)total;
	g->partition_size = (unsigned)size;
	g->min_partitions = (unsigned)least;
	rc = 0;
out:
	cJSON_Delete(obj);
	return rc;
}

/* Kueue's multi-layer slices: a JSON list of 1 to 3 {topology, size},
 * outermost first, each size dividing the one before, the outermost at
 * most the PodSet's pods; not with the one-layer annotations or a group. */
static int decode_slice_layers(struct topo_store *s, const cJSON *annotations, struct topo_jobset_group *g,
			       const char *where, const char *field, char **cause)
{
	const char *text;
	char what[448], f[96];
	const cJSON *layer;
	cJSON *list;
	size_t n = 0;
	int rc = -1;

	if (topo_field_string(annotations, KUEUE_ANNOTATION_SLICE_CONSTRAINTS, 4096, &text, where, field,
			      cause))
		return -1;
	if (!text)
		return 0;
	if (g->slice_level || g->podset_group)
		return cause_replace(cause, "%s: %s%s cannot be combined with %s, %s or %s (as in Kueue)",
				     where, field, KUEUE_ANNOTATION_SLICE_CONSTRAINTS, KUEUE_ANNOTATION_SLICE,
				     KUEUE_ANNOTATION_SLICE_SIZE, KUEUE_ANNOTATION_GROUP);
	snprintf(what, sizeof(what), "%s: annotation %s", where, KUEUE_ANNOTATION_SLICE_CONSTRAINTS);
	list = yaml_json_parse(text, strlen(text), what, cause);
	if (!list)
		return -1;
	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
	    cJSON_GetArraySize(list) > TOPO_SLICE_LAYERS_MAX) {
		cause_replace(cause, "%s: a list of 1 to %d {topology, size} layers is needed", what,
			      TOPO_SLICE_LAYERS_MAX);
		goto out;
	}
	cJSON_ArrayForEach(layer, list)
	{
		const char *level;
		long long size;
		unsigned outer = n ? (n == 1 ? g->slice_size : g->inner_sizes[n - 2]) : 0;

		snprintf(f, sizeof(f), "[%zu].", n);
		if (!cJSON_IsObject(layer)) {
			cause_replace(cause, "%s[%zu]: not a map", what, n);
			goto out;
		}
		if (topo_field_copy(s, layer, "topology", TOPO_OBJ_KEY_MAX, &level, what, f, cause) ||
		    topo_field_count(layer, "size", 0, TOPO_PODS_MAX, &size, what, f, cause))
			goto out;
		if (!level || !level[0] || size < 1) {
			cause_replace(cause, "%s[%zu]: needs a topology and a size of at least 1", what, n);
			goto out;
		}
		for (size_t k = 0; k < n; k++)
			if (strcmp(k ? g->inner_levels[k - 1] : g->slice_level, level) == 0) {
				cause_replace(cause, "%s[%zu]: topology %s is also layer %zu", what, n, level,
					      k);
				goto out;
			}
		if (n && outer % (unsigned)size) {
			cause_replace(cause,
				      "%s[%zu]: size %lld does not evenly divide the parent layer's %u", what,
				      n, size, outer);
			goto out;
		}
		if (n == 0) {
			if ((uint64_t)size > (uint64_t)g->replicas * g->pods) {
				cause_replace(
					cause,
					"%s[0]: size %lld is above the job's %llu pods (all %u replicas)",
					what, size, (unsigned long long)g->replicas * g->pods, g->replicas);
				goto out;
			}
			g->slice_level = level;
			g->slice_size = (unsigned)size;
		} else {
			g->inner_levels[n - 1] = level;
			g->inner_sizes[n - 1] = (unsigned)size;
			g->inner_count = n;
		}
		n++;
	}
	rc = 0;
out:
	cJSON_Delete(list);
	return rc;
}

/* The pod template's topology annotations. */
static int decode_annotations(struct topo_store *s, const cJSON *annotations, struct topo_jobset_group *g,
			      const char *where, char **cause)
{
	const char *unconstrained, *slice_size;
	char field[] = "template.spec.template.metadata.annotations.";
	int constraints;

	static const char *const known[] = { KUEUE_ANNOTATION_REQUIRED,		KUEUE_ANNOTATION_PREFERRED,
					     KUEUE_ANNOTATION_UNCONSTRAINED,	KUEUE_ANNOTATION_SLICE,
					     KUEUE_ANNOTATION_SLICE_SIZE,	KUEUE_ANNOTATION_GROUP,
					     KUEUE_ANNOTATION_SLICE_CONSTRAINTS };
	const cJSON *a;

	if (annotations && !cJSON_IsObject(annotations))
		return cause_replace(cause, "%s: %s: not a map", where, field);
	/* A Kueue topology annotation not read here would be ignored silently: refuse it. */
	cJSON_ArrayForEach(a, annotations)
	{
		size_t k;

		if (!a->string ||
		    strncmp(a->string, KUEUE_ANNOTATION_PREFIX, sizeof(KUEUE_ANNOTATION_PREFIX) - 1) != 0)
			continue;
		for (k = 0; k < sizeof(known) / sizeof(known[0]) && strcmp(known[k], a->string) != 0; k++)
			;
		if (k == sizeof(known) / sizeof(known[0]))
			return cause_replace(cause, "%s: %s%.64s: not supported by muster-topology", where,
					     field, a->string);
	}
	if (named_copy(s, annotations, KUEUE_ANNOTATION_REQUIRED, TOPO_OBJ_KEY_MAX, &g->required, where,
		       field, cause) ||
	    named_copy(s, annotations, KUEUE_ANNOTATION_PREFERRED, TOPO_OBJ_KEY_MAX, &g->preferred, where,
		       field, cause) ||
	    named_copy(s, annotations, KUEUE_ANNOTATION_SLICE, TOPO_OBJ_KEY_MAX, &g->slice_level, where,
		       field, cause) ||
	    named_copy(s, annotations, KUEUE_ANNOTATION_GROUP, TOPO_NAME_MAX, &g->podset_group, where, field,
		       cause) ||
	    topo_field_string(annotations, KUEUE_ANNOTATION_UNCONSTRAINED, 16, &unconstrained, where, field,
			      cause) ||
	    topo_field_string(annotations, KUEUE_ANNOTATION_SLICE_SIZE, 16, &slice_size, where, field,
			      cause) ||
	    decode_network_annotation(s, annotations, where, field, &g->network, cause) ||
	    decode_partitions(s, annotations, g, where, field, cause))
		return -1;
	if (unconstrained && strcmp(unconstrained, "true") != 0 && strcmp(unconstrained, "false") != 0)
		return cause_replace(cause, "%s: %s%s: \"%s\" is neither true nor false", where, field,
				     KUEUE_ANNOTATION_UNCONSTRAINED, unconstrained);
	g->unconstrained = unconstrained && strcmp(unconstrained, "true") == 0;
	constraints = !!g->required + !!g->preferred + g->unconstrained + g->network.set;
	if (constraints > 1)
		return cause_replace(cause, "%s: %s: at most one of %s, %s, %s, %s", where, field,
				     KUEUE_ANNOTATION_REQUIRED, KUEUE_ANNOTATION_PREFERRED,
				     KUEUE_ANNOTATION_UNCONSTRAINED, MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
	if (!!g->slice_level != !!slice_size)
		return cause_replace(cause, "%s: %s: %s and %s go together", where, field,
				     KUEUE_ANNOTATION_SLICE, KUEUE_ANNOTATION_SLICE_SIZE);
	if (slice_size) {
		char *end;
		long v;

		errno = 0;
		v = strtol(slice_size, &end, 10);
		/* Digits only, as Kueue parses it: no sign, no spaces. */
		if (errno || *end || end == slice_size || slice_size[0] < '0' || slice_size[0] > '9' ||
		    v < 1 || v > (long)TOPO_PODS_MAX)
			return cause_replace(cause, "%s: %s%s: \"%s\" is not a positive integer", where,
					     field, KUEUE_ANNOTATION_SLICE_SIZE, slice_size);
		if (((uint64_t)g->replicas * g->pods) % (uint64_t)v)
			return cause_replace(
				cause, "%s: %s%s: %ld does not divide the job's %llu pods (all %u replicas)",
				where, field, KUEUE_ANNOTATION_SLICE_SIZE, v,
				(unsigned long long)g->replicas * g->pods, g->replicas);
		g->slice_size = (unsigned)v;
	}
	if (decode_slice_layers(s, annotations, g, where, field, cause))
		return -1;
	/* Kueue takes podset-group-name with single-level slices (the
	 * multi-layer constraints with it only behind its
	 * TASGroupedPodSetSlicing gate, off by default: decode_slice_layers
	 * refuses that, as Kueue does). */
	if (g->slice_level && g->partitions)
		return cause_replace(cause, "%s: %s: %s and %s exclude each other", where, field,
				     KUEUE_ANNOTATION_SLICE, MUSTER_ANNOTATION_PARTITION_POLICY);
	return 0;
}

/* A replicated job: counts from the JobSet model, the rest from its pod template. */
static int decode_replicated_job(struct topo_store *s, const cJSON *rj, const struct jobset_rjob *m,
				 size_t index, const char *exclusive, struct topo_jobset_group *g,
				 char **cause)
{
	const cJSON *pod = kjson_path(rj, "template", "spec", "template");
	const cJSON *pod_spec = kjson_value(pod, "spec");
	char where[320];

	g->name = topo_store_string(s, m->name);
	if (!g->name)
		return topo_store_nomem(s, cause);
	snprintf(where, sizeof(where), "jobset: spec.replicatedJobs[%zu] (%s)", index, g->name);
	if (m->replicas > TOPO_INSTANCES_MAX)
		return cause_replace(cause, "%s: replicas: not an integer from 0 to %u", where,
				     TOPO_INSTANCES_MAX);
	if (m->parallelism > TOPO_PODS_MAX || m->completions > TOPO_PODS_MAX)
		return cause_replace(cause, "%s: template.spec.%s: not an integer from 0 to %u", where,
				     m->parallelism > TOPO_PODS_MAX ? "parallelism" : "completions",
				     TOPO_PODS_MAX);
	if (!pod_spec)
		return cause_replace(cause, "%s: template.spec.template.spec: missing", where);
	g->replicas = m->replicas;
	g->pods = m->parallelism < m->completions ? m->parallelism : m->completions;
	if (decode_annotations(s, kjson_path(pod, "metadata", "annotations", NULL), g, where, cause) ||
	    named_copy(s, kjson_path(rj, "template", "metadata", "annotations"),
		       JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY, TOPO_OBJ_KEY_MAX, &g->exclusive, where,
		       "template.metadata.annotations.", cause))
		return -1;
	if (!g->exclusive)
		g->exclusive = exclusive;
	if (g->exclusive && (g->required || g->preferred || g->unconstrained || g->slice_level ||
			     g->podset_group || g->network.set || g->partitions))
		return cause_replace(
			cause,
			"%s: %s places each child Job alone in a domain; it cannot be combined with "
			"Kueue's or Volcano's topology annotations on the same replicated job",
			where, JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY);
	return topo_pod_scheduling_decode(s, pod_spec, where, "template.spec.template.spec", &g->pod, cause);
}

/* muster.dev/topology-replicated-jobs: the replicated jobs the JobSet-wide
 * constraint holds; every name must be one of the JobSet's. */
static int decode_covered(const cJSON *annotations, struct topo_jobset *out, char **cause)
{
	const char *list, *p;
	char name[TOPO_NAME_MAX + 1];

	if (topo_field_string(annotations, MUSTER_ANNOTATION_TOPOLOGY_REPLICATED_JOBS, 64 * 65, &list,
			      "jobset", "metadata.annotations.", cause))
		return -1;
	if (!list)
		return 0;
	if (!out->whole_required && !out->whole_preferred && !out->whole_network.set)
		return cause_replace(
			cause,
			"jobset: %s names the replicated jobs of a JobSet-wide constraint, but "
			"none is given (%s, %s or %s)",
			MUSTER_ANNOTATION_TOPOLOGY_REPLICATED_JOBS, MUSTER_ANNOTATION_TOPOLOGY_REQUIRED,
			MUSTER_ANNOTATION_TOPOLOGY_PREFERRED, MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
	for (size_t g = 0; g < out->group_count; g++)
		out->groups[g].outside_whole = 1;
	for (p = list; *p;) {
		size_t len = strcspn(p, ","), g;

		while (len && p[0] == ' ')
			p++, len--;
		snprintf(name, sizeof(name), "%.*s", (int)(len < TOPO_NAME_MAX ? len : TOPO_NAME_MAX), p);
		for (size_t e = strlen(name); e && name[e - 1] == ' ';)
			name[--e] = '\0';
		for (g = 0; g < out->group_count && strcmp(out->groups[g].name, name) != 0; g++)
			;
		if (g == out->group_count)
			return cause_replace(cause,
					     "jobset: %s: \"%s\" is not a replicated job of this JobSet",
					     MUSTER_ANNOTATION_TOPOLOGY_REPLICATED_JOBS, name);
		out->groups[g].outside_whole = 0;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* muster.dev/topology-balanced: "true" or "false", else refused. */
static int decode_balanced(const cJSON *ann, struct topo_jobset *out, char **cause)
{
	const char *v = NULL;

	out->balanced = -1;
	if (topo_field_string(ann, MUSTER_ANNOTATION_TOPOLOGY_BALANCED, 8, &v, "jobset",
			      "metadata.annotations.", cause))
		return -1;
	if (!v)
		return 0;
	if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
		return cause_replace(cause,
				     "jobset: metadata.annotations.%s: \"%s\" is not \"true\" or \"false\"",
				     MUSTER_ANNOTATION_TOPOLOGY_BALANCED, v);
	out->balanced = strcmp(v, "true") == 0;
	return 0;
}

int topo_jobset_decode(struct topo_store *s, const cJSON *root, struct topo_jobset *out, char **cause)
{
	return topo_jobset_decode_counted(s, root, NULL, out, cause);
}

/* A replicated job written for Kueue: any Kueue topology annotation. */
static int kueue_podset(const struct topo_jobset_group *g)
{
	return g->required || g->preferred || g->unconstrained || g->slice_level || g->podset_group;
}

/* Whether the placement core takes all of g's replicas as one instance:
 * Kueue's PodSet is the replicated job, ranked job index * pods per job +
 * completion index (Volcano partitions are per Job). */
static int one_podset(const struct topo_jobset_group *g)
{
	return kueue_podset(g) && g->replicas > 1 && !g->partitions;
}

/* Exclusive per the very level the JobSet-wide required level names, with
 * two or more Jobs under it: each Job alone in its domain, all of them in
 * one such domain, which no cluster holds. Told at admission, where the
 * names are all there is to go by (a deeper JobSet level, which needs the
 * topology's order, is the placement core's to refuse). */
static int check_exclusive_whole(const struct topo_jobset *out, char **cause)
{
	size_t covered = 0;

	if (!out->whole_required)
		return 0;
	for (size_t g = 0; g < out->group_count; g++)
		covered += out->groups[g].outside_whole	 ? 0
			   : one_podset(&out->groups[g]) ? 1
							 : out->groups[g].replicas;
	for (size_t g = 0; g < out->group_count && covered > 1; g++) {
		const struct topo_jobset_group *grp = &out->groups[g];

		if (grp->exclusive && grp->replicas > 0 && !grp->outside_whole &&
		    strcmp(grp->exclusive, out->whole_required) == 0)
			return cause_replace(
				cause,
				"jobset: replicated job %s is exclusive per %s (each Job alone in "
				"its %s), yet the JobSet's required %s puts all %zu of its Jobs "
				"in one %s: no placement holds both",
				grp->name, grp->exclusive, grp->exclusive, out->whole_required, covered,
				out->whole_required);
	}
	return 0;
}

int topo_jobset_decode_counted(struct topo_store *s, const cJSON *root, const struct jobset_model *counted,
			       struct topo_jobset *out, char **cause)
{
	struct jobset_model *model = NULL;
	const cJSON *rjs, *rj, *ann;
	const char *field = "metadata.annotations.", *exclusive = NULL;
	char *model_cause = NULL;
	size_t n = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (topo_field_kind(root, "JobSet", "jobset", cause) ||
	    topo_field_copy(s, kjson_value(root, "metadata"), "name", TOPO_NAME_MAX, &out->name, "jobset",
			    "metadata.", cause))
		return -1;
	ann = kjson_path(root, "metadata", "annotations", NULL);
	if (ann && !cJSON_IsObject(ann))
		return cause_replace(cause, "jobset: metadata.annotations: not a map");
	if (named_copy(s, ann, MUSTER_ANNOTATION_TOPOLOGY_REQUIRED, TOPO_OBJ_KEY_MAX, &out->whole_required,
		       "jobset", field, cause) ||
	    named_copy(s, ann, MUSTER_ANNOTATION_TOPOLOGY_PREFERRED, TOPO_OBJ_KEY_MAX, &out->whole_preferred,
		       "jobset", field, cause) ||
	    decode_network_annotation(s, ann, "jobset", field, &out->whole_network, cause))
		return -1;
	if (named_copy(s, ann, JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY, TOPO_OBJ_KEY_MAX, &exclusive, "jobset",
		       field, cause))
		return -1;
	if (decode_balanced(ann, out, cause))
		return -1;
	if (!!out->whole_required + !!out->whole_preferred + out->whole_network.set > 1)
		return cause_replace(cause, "jobset: metadata.annotations: at most one of %s, %s, %s",
				     MUSTER_ANNOTATION_TOPOLOGY_REQUIRED,
				     MUSTER_ANNOTATION_TOPOLOGY_PREFERRED,
				     MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
	rjs = kjson_path(root, "spec", "replicatedJobs", NULL);
	if (!cJSON_IsArray(rjs) || cJSON_GetArraySize(rjs) == 0)
		return cause_replace(cause, "jobset: spec.replicatedJobs: missing, empty or not a list");
	if (cJSON_GetArraySize(rjs) > TOPO_GROUPS_MAX)
		return cause_replace(cause, "jobset: spec.replicatedJobs: more than %d", TOPO_GROUPS_MAX);
	/* Names, replicas, parallelism and completions: the one JobSet model,
	 * the caller's when it has decoded it. */
	if (!counted) {
		model = malloc(sizeof(*model));
		if (!model)
			return topo_store_nomem(s, cause);
		if (jobset_model_decode_written(root, model, &model_cause)) {
			cause_replace(cause, "jobset: %s", model_cause ? model_cause : "out of memory");
			goto out;
		}
		counted = model;
	}
	if (counted->replicated_job_count != (size_t)cJSON_GetArraySize(rjs)) {
		cause_replace(cause, "jobset: the counted spec holds %zu replicated jobs, the JobSet %d",
			      counted->replicated_job_count, cJSON_GetArraySize(rjs));
		goto out;
	}
	cJSON_ArrayForEach(rj, rjs)
	{
		if (decode_replicated_job(s, rj, &counted->replicated_jobs[n], n, exclusive, &out->groups[n],
					  cause))
			goto out;
		out->group_count = ++n;
	}
	if (decode_covered(ann, out, cause) || check_exclusive_whole(out, cause))
		goto out;
	rc = 0;
out:
	free(model_cause);
	free(model);
	return rc;
}

/* ---- the request: levels resolved against a tree ---- */

/* A level by name (label, tierName, "tier N"), or a bare number: the highest tier not above it. */
static int level_named(const struct topo_tree *t, const char *name)
{
	int l = topo_tree_level(t, name);
	char *end;
	long tier;

	if (l >= 0)
		return l;
	errno = 0;
	tier = strtol(name, &end, 10);
	return errno || *end || end == name || tier < 1 || tier > 1000000
		       ? -1
		       : topo_tree_tier_level(t, (int)tier);
}

static int network_level(const struct topo_tree *t, const struct topo_network_request *net)
{
	return net->tier_name ? topo_tree_level(t, net->tier_name) : topo_tree_tier_level(t, net->tier);
}

/* A Volcano networkTopology as a constraint: hard = required, soft = preferred, soft without tier = none. */
static int network_constraint(const struct topo_tree *t, const struct topo_network_request *net,
			      struct topo_constraint *out, const char *who, char **cause)
{
	int l;

	if (!net->hard && !net->tier && !net->tier_name) {
		*out = (struct topo_constraint){ TOPO_MODE_NONE, 0 };
		return 0;
	}
	l = network_level(t, net);
	if (l < 1) {
		if (net->tier_name)
			return cause_replace(cause, "%s: highestTierName %s is not a tier of the topology",
					     who, net->tier_name);
		return cause_replace(cause, "%s: highestTierAllowed %d is below every tier of the topology",
				     who, net->tier);
	}
	*out = (struct topo_constraint){ net->hard ? TOPO_MODE_REQUIRED : TOPO_MODE_PREFERRED, (uint8_t)l };
	return 0;
}

int topo_jobset_shape(const struct topo_jobset_group *group, const struct topo_cluster *cluster,
		      struct topo_shape *out, const char **missing)
{
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->node_selector = group->pod.selector;
	out->node_selector_count = group->pod.selector_count;
	out->affinity = group->pod.affinity;
	out->affinity_count = group->pod.affinity_count;
	out->tolerations = group->pod.tolerations;
	out->toleration_count = group->pod.toleration_count;
	out->preferred = group->pod.preferred;
	out->preferred_count = group->pod.preferred_count;
	for (size_t r = 0; r < group->pod.request_count; r++) {
		int slot = topo_resource_index(cluster, group->pod.request_names[r]);

		if (strcmp(group->pod.request_names[r], "pods") == 0 || group->pod.request_values[r] == 0)
			continue;
		if (slot < 0) { /* named, and the rest of the shape still filled */
			if (missing && !rc)
				*missing = group->pod.request_names[r];
			rc = -1;
			continue;
		}
		out->requests[slot] = group->pod.request_values[r];
	}
	return rc;
}

static int group_request(const struct topo_jobset *in, const struct topo_tree *tree, size_t i, int relax,
			 struct topo_group *g, char **cause)
{
	const struct topo_jobset_group *ig = &in->groups[i];
	const char *lv = ig->required ? ig->required : ig->preferred;
	char who[128];

	snprintf(who, sizeof(who), "jobset: %s", ig->name);
	memset(g, 0, sizeof(*g));
	g->name = ig->name;
	g->replicas = ig->replicas;
	g->pods = ig->pods;
	g->outside_whole = ig->outside_whole;
	g->balanced = in->balanced > 0;
	if (one_podset(ig)) {
		if ((uint64_t)ig->replicas * ig->pods > TOPO_PODS_MAX)
			return cause_replace(cause,
					     "%s: %u replicas of %u pods, more than %u pods in one PodSet",
					     who, ig->replicas, ig->pods, TOPO_PODS_MAX);
		g->replicas = 1;
		g->pods = ig->replicas * ig->pods;
		g->job_pods = ig->pods;
	}
	{
		const char *missing = NULL;

		if (topo_jobset_shape(ig, tree->cluster, &g->shape, &missing))
			return cause_replace(
				cause,
				"%s requests %s, which no node has (or beyond the %d resources tracked)", who,
				missing, TOPO_RESOURCES_MAX);
	}
	if (ig->exclusive) {
		int l = topo_tree_level(tree, ig->exclusive);

		if (l < 1 || (size_t)l >= tree->node_level)
			return cause_replace(cause, "%s: %s %s is not a level of the topology", who,
					     JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY, ig->exclusive);
		g->constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, (uint8_t)l };
		g->exclusive = 1;
	} else if (lv) {
		int l = level_named(tree, lv);

		if (l < 1)
			return cause_replace(cause, "%s: %s is not a level of the topology", who, lv);
		g->constraint =
			(struct topo_constraint){ ig->required ? TOPO_MODE_REQUIRED : TOPO_MODE_PREFERRED,
						  (uint8_t)l };
	} else if (ig->unconstrained) {
		g->constraint.mode = TOPO_MODE_UNCONSTRAINED;
	} else if (ig->network.set && network_constraint(tree, &ig->network, &g->constraint, who, cause)) {
		return -1;
	}
	if (ig->slice_level) {
		int l = level_named(tree, ig->slice_level);

		if (l < 1)
			return cause_replace(cause, "%s: %s is not a level of the topology", who,
					     ig->slice_level);
		/* Kueue: "podset slice topology X is above the podset topology Y". */
		if ((g->constraint.mode == TOPO_MODE_REQUIRED || g->constraint.mode == TOPO_MODE_PREFERRED) &&
		    (uint8_t)l < g->constraint.level)
			return cause_replace(cause,
					     "%s: the slice topology %s is above the topology %s of the "
					     "replicated job: a slice must fit inside its domain",
					     who, ig->slice_level, lv ? lv : "(networkTopology)");
		g->slice_level = (uint8_t)l;
		g->slice_size = ig->slice_size;
		for (size_t k = 0; k < ig->inner_count; k++) {
			l = level_named(tree, ig->inner_levels[k]);
			if (l < 1)
				return cause_replace(cause, "%s: %s is not a level of the topology", who,
						     ig->inner_levels[k]);
			g->inner[k] = (struct topo_slice_layer){ ig->inner_sizes[k], (uint8_t)l };
		}
		g->inner_count = ig->inner_count;
		/* A slice of one pod holds nothing together (a pod is on one
		 * node): a layer of size 1 asks nothing, nor do the layers below
		 * it (their sizes divide 1). Kueue accepts such layers; they are
		 * dropped here, so that the search sees what they mean. */
		if (g->slice_size <= 1)
			g->inner_count = 0;
		for (size_t k = 0; k < g->inner_count; k++)
			if (g->inner[k].size <= 1) {
				g->inner_count = k;
				break;
			}
	}
	if (ig->partitions) {
		struct topo_constraint part = { TOPO_MODE_NONE, 0 };

		if (ig->partition_network.set &&
		    network_constraint(tree, &ig->partition_network, &part, who, cause))
			return -1;
		g->slice_size = ig->partition_size;
		/* 0: anywhere in the job's domain. Soft (Volcano) holds a partition
		 * within the job's limit only: its tier is tried first, as hard. */
		g->slice_level = relax && !ig->partition_network.hard ? 0 : part.level;
		g->min_slices = ig->min_partitions < ig->partitions ? ig->min_partitions : 0;
	}
	/* Co-placed groups share the number of the first group of their name;
	 * without a level (Kueue allows it) they are not held together. */
	for (size_t k = 0; ig->podset_group && lv && k <= i; k++)
		if (in->groups[k].podset_group && strcmp(in->groups[k].podset_group, ig->podset_group) == 0) {
			g->together = (uint32_t)k + 1;
			break;
		}
	return 0;
}

static int build_request(const struct topo_jobset *in, const struct topo_tree *tree, int relax,
			 struct topo_group *groups, struct topo_request *req, char **cause)
{
	*cause = NULL;
	memset(req, 0, sizeof(*req));
	if (in->whole_required || in->whole_preferred) {
		const char *name = in->whole_required ? in->whole_required : in->whole_preferred;
		int l = level_named(tree, name);

		if (l < 1)
			return cause_replace(cause, "jobset: %s is not a level of the topology", name);
		req->whole = (struct topo_constraint){ in->whole_required ? TOPO_MODE_REQUIRED
									  : TOPO_MODE_PREFERRED,
						       (uint8_t)l };
	} else if (in->whole_network.set &&
		   network_constraint(tree, &in->whole_network, &req->whole, "jobset: the JobSet", cause)) {
		return -1;
	}
	for (size_t i = 0; i < in->group_count; i++)
		if (group_request(in, tree, i, relax, &groups[i], cause))
			return -1;
	req->groups = groups;
	req->group_count = in->group_count;
	return 0;
}

int topo_jobset_request(const struct topo_jobset *in, const struct topo_tree *tree, struct topo_group *groups,
			struct topo_request *req, char **cause)
{
	return build_request(in, tree, 0, groups, req, cause);
}

/* A soft preference the strict request holds as hard. */
static int has_soft(const struct topo_jobset *in)
{
	for (size_t i = 0; i < in->group_count; i++)
		if (in->groups[i].partitions && in->groups[i].partition_network.set &&
		    !in->groups[i].partition_network.hard)
			return 1;
	return 0;
}

int topo_jobset_place(const struct topo_jobset *in, const struct topo_tree *tree, struct topo_group *groups,
		      struct topo_request *req, struct topo_placement **out, char **cause)
{
	char *strict_cause = NULL;

	*out = NULL;
	if (build_request(in, tree, 0, groups, req, cause))
		return -1;
	if (topo_place(tree, req, out, &strict_cause) == 0 || !has_soft(in)) {
		*cause = strict_cause;
		return *out ? 0 : -1;
	}
	if (build_request(in, tree, 1, groups, req, cause) || topo_place(tree, req, out, cause)) {
		free(strict_cause);
		return -1;
	}
	free(strict_cause);
	return 0;
}
