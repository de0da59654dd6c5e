/*
 * group_config: the group-scheduling settings of a JobSet, from the spec
 * field or the annotations (group_config.h). Decoding only; no I/O.
 */
#define _POSIX_C_SOURCE 200809L

#include "group_config.h"
#include "cause.h"
#include "kjson.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds `name` (len bytes) to the targets unless it is there already. */
static int add_target(struct group_config *out, const char *name, size_t len, const char *where, char **cause)
{
	if (len == 0)
		return cause_fail(cause, "%s holds an empty replicated job name", where);
	if (len > GROUP_CONFIG_NAME_MAX)
		return cause_fail(cause, "%s holds a name longer than %d characters: \"%.40s...\"", where,
				  GROUP_CONFIG_NAME_MAX, name);
	for (size_t i = 0; i < out->target_count; i++)
		if (strlen(out->targets[i]) == len && memcmp(out->targets[i], name, len) == 0)
			return 0;
	if (out->target_count == GROUP_CONFIG_TARGETS_MAX)
		return cause_fail(cause, "%s names more than %d replicated jobs", where,
				  GROUP_CONFIG_TARGETS_MAX);
	memcpy(out->targets[out->target_count], name, len);
	out->targets[out->target_count][len] = '\0';
	out->target_count++;
	return 0;
}

static int decode_spec(const cJSON *config, struct group_config *out, char **cause)
{
	const cJSON *timeout, *targets, *item;

	if (!config || cJSON_IsNull(config))
		return 0;
	if (!cJSON_IsObject(config))
		return cause_fail(cause, "spec.groupSchedulingConfig is not an object");
	out->in_spec = 1;
	timeout = kjson_member(config, "timeoutAfterSeconds");
	if (timeout && !cJSON_IsNull(timeout)) {
		double d = timeout->valuedouble;

		if (!cJSON_IsNumber(timeout))
			return cause_fail(
				cause,
				"spec.groupSchedulingConfig.timeoutAfterSeconds is not a number: give "
				"a whole number of seconds from %u to %u",
				GROUP_CONFIG_TIMEOUT_MIN, GROUP_CONFIG_TIMEOUT_MAX);
		if (!isfinite(d) || floor(d) != d)
			return cause_fail(cause,
					  "spec.groupSchedulingConfig.timeoutAfterSeconds is %g, not a whole "
					  "number of seconds: give one from %u to %u",
					  d, GROUP_CONFIG_TIMEOUT_MIN, GROUP_CONFIG_TIMEOUT_MAX);
		if (d < 0 || d > (double)KJSON_INT32_MAX)
			return cause_fail(
				cause,
				"spec.groupSchedulingConfig.timeoutAfterSeconds is %.0f: it must be "
				"between %u and %u seconds (a day)",
				d, GROUP_CONFIG_TIMEOUT_MIN, GROUP_CONFIG_TIMEOUT_MAX);
		out->has_timeout = 1;
		out->timeout_seconds = (uint32_t)d;
	}
	targets = kjson_member(config, "targetReplicatedJobs");
	if (!targets || cJSON_IsNull(targets))
		return 0;
	if (!cJSON_IsArray(targets))
		return cause_fail(cause,
				  "spec.groupSchedulingConfig.targetReplicatedJobs is not a list of names");
	cJSON_ArrayForEach(item, targets)
	{
		if (!cJSON_IsString(item) || !item->valuestring)
			return cause_fail(cause,
					  "spec.groupSchedulingConfig.targetReplicatedJobs holds something "
					  "that is not a name");
		if (add_target(out, item->valuestring, strlen(item->valuestring),
			       "spec.groupSchedulingConfig.targetReplicatedJobs", cause))
			return -1;
	}
	return 0;
}

static const char *annotation(const cJSON *jobset, const char *key, int *wrong_type)
{
	const cJSON *value = kjson_member(kjson_member(kjson_member(jobset, "metadata"), "annotations"), key);

	*wrong_type = value && !cJSON_IsString(value);
	return cJSON_IsString(value) ? value->valuestring : NULL;
}

static int decode_annotations(const cJSON *jobset, struct group_config *out, char **cause)
{
	int wrong_timeout, wrong_targets;
	const char *timeout = annotation(jobset, MUSTER_ANNOTATION_GROUP_TIMEOUT, &wrong_timeout);
	const char *targets = annotation(jobset, MUSTER_ANNOTATION_GROUP_TARGETS, &wrong_targets);
	uint64_t seconds = 0;
	size_t len;

	if (wrong_timeout || wrong_targets)
		return cause_fail(cause, "annotation %s is not a string",
				  wrong_timeout ? MUSTER_ANNOTATION_GROUP_TIMEOUT
						: MUSTER_ANNOTATION_GROUP_TARGETS);
	if (!timeout) {
		if (targets)
			return cause_fail(cause,
					  "annotation " MUSTER_ANNOTATION_GROUP_TARGETS " needs "
					  "annotation " MUSTER_ANNOTATION_GROUP_TIMEOUT " too (it is the one "
					  "that turns group scheduling on)");
		return 0;
	}
	out->in_annotations = 1;
	len = strnlen(timeout, 21);
	/* A sign, then digits: "-1" or "99999999999" is a number out of range,
	 * which the message says, not a malformed one. */
	for (size_t i = timeout[0] == '-'; i < len; i++) {
		if (timeout[i] < '0' || timeout[i] > '9' || len > 20)
			goto bad_timeout;
		if (seconds <= KJSON_INT32_MAX)
			seconds = seconds * 10 + (uint64_t)(timeout[i] - '0');
	}
	if (len == 0 || (timeout[0] == '-' && len == 1))
		goto bad_timeout;
	if (timeout[0] == '-' || seconds > KJSON_INT32_MAX)
		return cause_fail(cause,
				  "annotation " MUSTER_ANNOTATION_GROUP_TIMEOUT
				  " is \"%.20s\": it must be between %u and %u seconds (a day)",
				  timeout, GROUP_CONFIG_TIMEOUT_MIN, GROUP_CONFIG_TIMEOUT_MAX);
	out->has_timeout = 1;
	out->timeout_seconds = (uint32_t)seconds;
	if (!targets)
		return 0;
	if (strnlen(targets, GROUP_CONFIG_ANNOTATION_MAX + 1) > GROUP_CONFIG_ANNOTATION_MAX)
		return cause_fail(
			cause, "annotation " MUSTER_ANNOTATION_GROUP_TARGETS " is longer than %d characters",
			GROUP_CONFIG_ANNOTATION_MAX);
	/* Comma-separated; spaces around a name are allowed ("a, b"). */
	for (const char *p = targets; *p;) {
		const char *end = strchr(p, ',');
		const char *stop = end ? end : p + strlen(p);
		const char *first = p, *last = stop;

		while (first < last && *first == ' ')
			first++;
		while (last > first && last[-1] == ' ')
			last--;
		if (add_target(out, first, (size_t)(last - first),
			       "annotation " MUSTER_ANNOTATION_GROUP_TARGETS, cause))
			return -1;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return cause_fail(cause,
					  "annotation " MUSTER_ANNOTATION_GROUP_TARGETS " ends with a comma");
	}
	return 0;
bad_timeout:
	return cause_fail(cause,
			  "annotation " MUSTER_ANNOTATION_GROUP_TIMEOUT
			  " is \"%.20s\", not a whole number of "
			  "seconds (e.g. \"300\"; from %u to %u)",
			  timeout, GROUP_CONFIG_TIMEOUT_MIN, GROUP_CONFIG_TIMEOUT_MAX);
}

static int same_targets(const struct group_config *a, const struct group_config *b)
{
	if (a->target_count != b->target_count)
		return 0;
	for (size_t i = 0; i < a->target_count; i++) {
		int found = 0;

		for (size_t j = 0; j < b->target_count && !found; j++)
			found = strcmp(a->targets[i], b->targets[j]) == 0;
		if (!found)
			return 0;
	}
	return 1;
}

int group_config_decode(const cJSON *jobset, struct group_config *out, char **cause)
{
	struct group_config *from_annotations = NULL;
	int err = -1;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(jobset))
		return cause_fail(cause, "the JobSet is not an object");
	if (decode_spec(kjson_member(kjson_member(jobset, "spec"), "groupSchedulingConfig"), out, cause))
		return -1;
	from_annotations = calloc(1, sizeof(*from_annotations));
	if (!from_annotations)
		return cause_fail(cause, "out of memory");
	if (decode_annotations(jobset, from_annotations, cause))
		goto out;
	if (out->in_spec && from_annotations->in_annotations) {
		if (out->has_timeout != from_annotations->has_timeout ||
		    out->timeout_seconds != from_annotations->timeout_seconds ||
		    !same_targets(out, from_annotations)) {
			cause_fail(
				cause,
				"spec.groupSchedulingConfig and the annotations " MUSTER_ANNOTATION_GROUP_TIMEOUT
				"/" MUSTER_ANNOTATION_GROUP_TARGETS " disagree: keep one of them, or make "
				"them say the same");
			goto out;
		}
		out->in_annotations = 1;
	} else if (from_annotations->in_annotations) {
		memcpy(out, from_annotations, sizeof(*out));
	}
	out->present = out->in_spec || out->in_annotations;
	err = 0;
out:
	free(from_annotations);
	return err;
}

int group_config_targets(const struct group_config *config, const char *name)
{
	if (!config->present)
		return 0;
	if (config->target_count == 0)
		return 1;
	for (size_t i = 0; i < config->target_count; i++)
		if (strcmp(config->targets[i], name) == 0)
			return 1;
	return 0;
}

int group_config_equal(const struct group_config *a, const struct group_config *b)
{
	if (a->present != b->present)
		return 0;
	if (!a->present)
		return 1;
	return a->has_timeout == b->has_timeout &&
	       (!a->has_timeout || a->timeout_seconds == b->timeout_seconds) && same_targets(a, b);
}
