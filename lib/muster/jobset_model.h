/*
 * jobset_model: the one typed model of a JobSet (jobset.x-k8s.io/v1alpha2),
 * decoded once from its JSON: identity, uid, restarts, suspension, the
 * replicated jobs with their replicas, parallelism and completions (upstream
 * defaults applied), muster's gang generation, and the group-scheduling
 * settings (lib/muster/group_config: from spec.groupSchedulingConfig or the
 * annotations).
 *
 * The model is a fixed-size value with every string bounded and every number
 * range-checked, so code that decides from it (the controller's accounting)
 * cannot be fed a tree it has to defend against; nothing in it points into
 * the JSON. Pure: 0, or -1 and a malloc'd cause naming the field that is
 * wrong (docs/errors.md); on failure the output holds no meaning and owns
 * nothing.
 */
#ifndef MUSTER_JOBSET_MODEL_H
#define MUSTER_JOBSET_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "model_fields.h"

/* Replicated jobs in one JobSet, and names in targetReplicatedJobs. Upstream
 * sets no limit; real JobSets have a handful, 128 leaves ample room and keeps
 * struct jobset_model at a fixed, modest size. */
#define JOBSET_MODEL_RJOBS_MAX 128

struct jobset_rjob {
	char name[MODEL_LABEL_MAX + 1];
	uint32_t replicas; /* spec.replicatedJobs[].replicas, default 1 */
	uint32_t parallelism; /* template.spec.parallelism, default 1 */
	uint32_t completions; /* template.spec.completions, default parallelism */
	uint32_t generation; /* pod template label muster.dev/gang-generation, 0 when absent */
	int targeted; /* named by targetReplicatedJobs, or that list is empty */
};

struct jobset_model {
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_LABEL_MAX + 1];
	char uid[MODEL_UID_MAX + 1];
	uint32_t restarts; /* status.restarts: the current attempt, 0 when absent */
	int suspended; /* spec.suspend is true */
	/* The label muster.dev/gang-generation of the targeted pod templates
	 * (the highest; 0 when absent): muster's count of the JobSet's resumes. */
	uint32_t generation;
	int has_config; /* spec.groupSchedulingConfig present (an object) */
	int has_timeout;
	uint32_t timeout_seconds; /* groupSchedulingConfig.timeoutAfterSeconds */
	/* targetReplicatedJobs as written, duplicates removed; names that match no
	 * replicated job are kept here (the webhook reports them) and ignored by
	 * the count. */
	size_t target_count;
	char targets[JOBSET_MODEL_RJOBS_MAX][MODEL_LABEL_MAX + 1];
	size_t replicated_job_count;
	struct jobset_rjob replicated_jobs[JOBSET_MODEL_RJOBS_MAX];
};

struct cJSON;

/* Decodes a JobSet (jobset.x-k8s.io/v1alpha2) from `len` bytes of JSON (no
 * terminating NUL needed). Requires metadata.name, metadata.namespace,
 * metadata.uid and spec.replicatedJobs (at most JOBSET_MODEL_RJOBS_MAX, each
 * with a name); applies the upstream defaults; numbers must be integers in
 * 0..2^31-1. */
int jobset_model_parse(const char *json, size_t len, struct jobset_model *out, char **cause);

/* The same, from an object the caller already parsed (the `object` of a
 * watch event). The tree stays the caller's; nothing points into it after. */
int jobset_model_decode(const struct cJSON *object, struct jobset_model *out, char **cause);

/* The same for a JobSet as written, before the apiserver stores it (a file,
 * a tree converted from YAML by lib/base/yaml_json.h, the object of an
 * admission request): metadata is not read (name, namespace and uid are
 * left ""; before the object is stored its identity is the caller's to
 * check), counts may be decimal strings and spec.suspend the string "true".
 * Every other rule holds, so what the controller could not count is found
 * before the JobSet exists. */
int jobset_model_decode_written(const struct cJSON *object, struct jobset_model *out, char **cause);

struct group_config;

/* The same, with the settings admission has decoded already
 * (group_config_decode of the same object): an admission decodes each part
 * of a JobSet once. */
int jobset_model_decode_admitted(const struct cJSON *object, const struct group_config *config,
				 struct jobset_model *out, char **cause);

#endif
