/*
 * group_config: a JobSet's group-scheduling settings, read from either place
 * a user may write them, for the webhook and the controller alike.
 *
 *   spec.groupSchedulingConfig {timeoutAfterSeconds, targetReplicatedJobs}
 *       the KEP-498 field; it survives a create only where the JobSet CRD
 *       carries muster's schema patch (deploy/crd/), otherwise the apiserver
 *       prunes it silently;
 *   metadata.annotations
 *       muster.dev/group-scheduling-timeout: "<seconds>"
 *       muster.dev/group-scheduling-targets: "<name>,<name>"   (optional)
 *       the same settings for clusters whose CRD cannot be patched; the
 *       timeout annotation alone opts a JobSet in.
 *
 * Both may be present (a JobSet written for either kind of cluster); they must
 * then say the same thing, or decoding fails: two answers to one question is
 * a mistake the user should hear about, not one we settle silently.
 *
 * This module decodes (types, int32 range, name syntax) and does nothing else:
 * the documented timeout range and the cross-checks against the replicated
 * jobs are the webhook's (jobset_validate), because an object already stored
 * must still be readable by the controller. No I/O, no state.
 *
 * Failure: group_config_decode() returns 0, or -1 with *cause a malloc'd
 * sentence naming the field (NULL only when that allocation failed) which the
 * caller frees. On failure *out holds no meaning.
 */
#ifndef MUSTER_GROUP_CONFIG_H
#define MUSTER_GROUP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "muster_api.h"

/* The documented range of timeoutAfterSeconds (checked by the webhook and by
 * the CRD patch's schema): at least a second, at most a day. A gang that has
 * not assembled within a day is not going to; the barrier holds its node's
 * accelerators all that time. */
#define GROUP_CONFIG_TIMEOUT_MIN 1u
#define GROUP_CONFIG_TIMEOUT_MAX 86400u
/* The timeout injected when the config names none (the KEP example's). */
#define GROUP_CONFIG_TIMEOUT_DEFAULT 300u

/* A replicated job's name is a DNS label (JobSet copies it into a label). */
#define GROUP_CONFIG_NAME_MAX 63
/* Most distinct names in targetReplicatedJobs (as many as replicated jobs
 * muster accepts in one JobSet). */
#define GROUP_CONFIG_TARGETS_MAX 128
/* Longest annotation value read (128 names of 63 bytes and their commas). */
#define GROUP_CONFIG_ANNOTATION_MAX (GROUP_CONFIG_TARGETS_MAX * (GROUP_CONFIG_NAME_MAX + 1))

struct group_config {
	int present; /* the spec field or the timeout annotation is there */
	int in_spec; /* spec.groupSchedulingConfig is an object */
	int in_annotations; /* the timeout annotation is there */
	int has_timeout;
	uint32_t timeout_seconds; /* 0..2147483647 as decoded: range checks are the webhook's */
	/* Targets in the order written, duplicates dropped. Empty: every
	 * replicated job. */
	size_t target_count;
	char targets[GROUP_CONFIG_TARGETS_MAX][GROUP_CONFIG_NAME_MAX + 1];
};

struct cJSON;

/* Reads the settings of `jobset` (a JobSet object). A JobSet with neither
 * form gives 0 and out->present 0. Refused: a field of the wrong type, a
 * number that is not an integer in int32 range, a target that is empty or
 * longer than GROUP_CONFIG_NAME_MAX, more than GROUP_CONFIG_TARGETS_MAX targets, a targets annotation
 * without the timeout annotation, and the two forms disagreeing. */
int group_config_decode(const struct cJSON *jobset, struct group_config *out, char **cause);

/* 1 when the replicated job `name` is held by the barrier under `config`
 * (present, and its targets are empty or name it), else 0. */
int group_config_targets(const struct group_config *config, const char *name);

/* 1 when a and b are the same settings (presence, timeout, targets as sets),
 * wherever each was written; else 0. */
int group_config_equal(const struct group_config *a, const struct group_config *b);

#endif
