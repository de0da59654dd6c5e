/*
 * jobset_shape: the names muster reserves in a JobSet and the few lookups
 * into a JobSet's JSON that the mutator and the validator share.
 *
 * A replicated job's pod template is spec.replicatedJobs[i].template (a Job
 * template) .spec.template (a pod template); its pod spec is that .spec.
 * Everything here reads a cJSON tree and returns borrowed pointers into it
 * (NULL when the part is absent or of the wrong type). No I/O, no state.
 */
#ifndef MUSTER_JOBSET_SHAPE_H
#define MUSTER_JOBSET_SHAPE_H

#include <stddef.h>

#include "kjson.h"
#include "muster_api.h"

/* The barrier accepts tokens of 16..256 printable ASCII bytes, no spaces. */
#define JOBSET_TOKEN_MIN 16
#define JOBSET_TOKEN_MAX 256
/* A ConfigMap name is a DNS subdomain: at most 253 characters. */
#define JOBSET_OBJECT_NAME_MAX 253

struct cJSON;

/* metadata.name, or NULL when absent, empty or not a string. */
const char *jobset_name(const struct cJSON *jobset);

/* metadata.annotations[key] when it is a string, else NULL. */
const char *jobset_annotation(const struct cJSON *jobset, const char *key);

/* spec.replicatedJobs when it is a list, else NULL. */
const struct cJSON *jobset_replicated_jobs(const struct cJSON *jobset);

/* The replicated job's name, or NULL. */
const char *jobset_replicated_job_name(const struct cJSON *replicated_job);

/* template.spec.template (the pod template), or NULL. */
const struct cJSON *jobset_pod_template(const struct cJSON *replicated_job);

/* The element of the list `array` whose "name" is `name`, with its index in
 * *index (may be NULL); NULL when none. */
const struct cJSON *jobset_find_named(const struct cJSON *array, const char *name, size_t *index);

/* 1 when `token` is a token the barrier accepts. */
int jobset_token_valid(const char *token);

/* The highest gang generation muster writes (an int32, like the attempt). */
#define JOBSET_GENERATION_MAX 2147483647LL

struct group_config;

/* The gang generation a JobSet carries: *annotation from its annotation
 * muster.dev/gang-generation (muster's record), *labels the highest of the
 * label muster.dev/gang-generation of its targeted pod templates (what its
 * pods get); absent or "" is 0. Returns 0, or -1 with *cause when a value is
 * not a number from 0 to JOBSET_GENERATION_MAX. */
int jobset_gang_generation(const struct cJSON *jobset, const struct group_config *config,
			   long long *annotation, long long *labels, char **cause);

#endif
