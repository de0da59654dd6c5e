/*
 * jobset_admission: a JobSet under review decoded once (jobset_admission.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "jobset_admission.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "jobset_shape.h"
#include "kjson.h"
#include "muster_api.h"

static const char *const jobset_keys[] = {
	MUSTER_ANNOTATION_NETWORK_TOPOLOGY,   MUSTER_ANNOTATION_TOPOLOGY_REQUIRED,
	MUSTER_ANNOTATION_TOPOLOGY_PREFERRED, MUSTER_ANNOTATION_TOPOLOGY_REPLICATED_JOBS,
	JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY,
};
static const char *const template_keys[] = {
	MUSTER_ANNOTATION_NETWORK_TOPOLOGY,
	MUSTER_ANNOTATION_PARTITION_POLICY,
};

static const cJSON *annotations_of(const cJSON *object)
{
	return kjson_member(kjson_member(object, "metadata"), "annotations");
}

static int has_any(const cJSON *annotations, const char *const *keys, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (kjson_member(annotations, keys[i]))
			return 1;
	return 0;
}

/* 1 when a topology annotation muster reads is on the JobSet, a Job
 * template or a pod template. */
static int mentions(const cJSON *jobset)
{
	const cJSON *rj, *a;

	if (has_any(annotations_of(jobset), jobset_keys, sizeof(jobset_keys) / sizeof(jobset_keys[0])))
		return 1;
	cJSON_ArrayForEach(rj, jobset_replicated_jobs(jobset))
	{
		if (kjson_member(annotations_of(kjson_member(rj, "template")),
				 JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY))
			return 1;
		a = annotations_of(jobset_pod_template(rj));
		if (has_any(a, template_keys, sizeof(template_keys) / sizeof(template_keys[0])))
			return 1;
		cJSON_ArrayForEach(a, a)
		{
			if (a->string &&
			    strncmp(a->string, KUEUE_ANNOTATION_PREFIX, strlen(KUEUE_ANNOTATION_PREFIX)) == 0)
				return 1;
		}
	}
	return 0;
}

/* Whose placement it is when not muster's: NULL for muster's. */
static const char *owner(const cJSON *jobset)
{
	const cJSON *rj;

	if (kjson_member(kjson_member(kjson_member(jobset, "metadata"), "labels"), KUEUE_LABEL_QUEUE_NAME))
		return "kueue";
	cJSON_ArrayForEach(rj, jobset_replicated_jobs(jobset))
	{
		const cJSON *name =
			kjson_member(kjson_member(jobset_pod_template(rj), "spec"), "schedulerName");

		if (cJSON_IsString(name) && strcmp(name->valuestring, VOLCANO_SCHEDULER_NAME) == 0)
			return "volcano";
	}
	return NULL;
}

/* 1 when the decoded request constrains where some pod goes. */
static int constrains(const struct topo_jobset *js)
{
	if (js->whole_required || js->whole_preferred || js->whole_network.set)
		return 1;
	for (size_t g = 0; g < js->group_count; g++) {
		const struct topo_jobset_group *group = &js->groups[g];

		if (group->required || group->preferred || group->slice_level || group->network.set ||
		    group->partitions || group->exclusive)
			return 1;
	}
	return 0;
}

/* 1 when the placement request is muster's to decode: a topology
 * annotation is there and the JobSet is not Kueue's. */
static int placement_wanted(const struct jobset_admission *a)
{
	return a->mentions && !(a->owner && strcmp(a->owner, "kueue") == 0);
}

/* The placement part, on the counted spec when it decoded (else the
 * request's decoder counts the JobSet itself, to say what is wrong in its
 * own words); -1 only when memory ran out. */
static int decode_placement(struct jobset_admission *a)
{
	char *inner = NULL;

	if (!placement_wanted(a))
		return 0;
	if (topo_jobset_decode_counted(&a->store, a->tree, a->counted, &a->request, &inner)) {
		a->asks = -1;
		cause_fail(&a->placement_cause, "placement request: %s", inner ? inner : "out of memory");
		free(inner);
		return a->placement_cause ? 0 : -1;
	}
	a->asks = constrains(&a->request);
	return 0;
}

/* The settings, generation (under `under`'s settings when they are given
 * and present) and counted parts; -1 only when memory ran out. */
static int decode_gang(struct jobset_admission *a, unsigned flags, const struct jobset_admission *under)
{
	const struct group_config *settings;

	a->config_ok = group_config_decode(a->tree, &a->config, &a->config_cause) == 0;
	if (!a->config_ok && !a->config_cause)
		return -1;
	settings = under && under->config_ok && under->config.present ? &under->config
		   : a->config_ok && a->config.present		      ? &a->config
								      : NULL;
	if (settings) {
		a->generation_ok = jobset_gang_generation(a->tree, settings, &a->generation_annotation,
							  &a->generation_labels, &a->generation_cause) == 0;
		if (!a->generation_ok && !a->generation_cause)
			return -1;
	}
	if (!a->config_ok)
		return 0;
	/* Counted once, for the validator and the placement request alike. */
	if (!((flags & JOBSET_ADMISSION_COUNTED) && a->config.present) && !placement_wanted(a))
		return 0;
	if (!(a->counted = malloc(sizeof(*a->counted))))
		return -1;
	if (jobset_model_decode_admitted(a->tree, &a->config, a->counted, &a->counted_cause) == 0)
		return 0;
	free(a->counted);
	a->counted = NULL;
	return a->counted_cause ? 0 : -1;
}

static struct jobset_admission *decode(const cJSON *tree, unsigned flags,
				       const struct jobset_admission *under)
{
	struct jobset_admission *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->tree = tree;
	a->store.chunk = 4096;
	a->name = jobset_name(tree);
	a->token = jobset_annotation(tree, MUSTER_ANNOTATION_BARRIER_TOKEN);
	a->placement_state = jobset_annotation(tree, MUSTER_ANNOTATION_PLACEMENT);
	a->suspended = cJSON_IsTrue(kjson_member(kjson_member(tree, "spec"), "suspend"));
	a->mentions = mentions(tree);
	a->owner = owner(tree);
	if (decode_gang(a, flags, under) || decode_placement(a)) {
		jobset_admission_free(a);
		return NULL;
	}
	return a;
}

struct jobset_admission *jobset_admission_decode(const cJSON *tree, unsigned flags)
{
	return decode(tree, flags, NULL);
}

struct jobset_admission *jobset_admission_decode_stored(const cJSON *tree, const struct jobset_admission *now)
{
	return decode(tree, 0, now);
}

void jobset_admission_free(struct jobset_admission *a)
{
	if (!a)
		return;
	topo_store_free(&a->store);
	free(a->placement_cause);
	free(a->config_cause);
	free(a->generation_cause);
	free(a->counted_cause);
	free(a->counted);
	free(a);
}
