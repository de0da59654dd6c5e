/*
 * release_record: the release of record of a group-scheduled JobSet, the
 * ConfigMap `<jobset>-group-scheduling` (data.started, data.jobset-uid,
 * data.generation; controlled by the JobSet). Reads it back, tells whose it
 * is, and writes a release into it: created when absent, merge-patched when
 * ours, replaced when an earlier JobSet of the same name left it, never
 * touched when it is anyone else's.
 *
 * What it does not do: locking, logging of the outcome, trackers. The
 * caller (controller_group) decides when to read and write and serialises
 * the writes of one JobSet; this module only speaks to the API with the
 * client it is given (one thread at a time, as every kube_client).
 *
 * Errors: negative kube_err codes with a malloc'd cause (kube_error.h).
 */
#ifndef MUSTER_RELEASE_RECORD_H
#define MUSTER_RELEASE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kube_client.h"

/* The JobSet a ConfigMap is for (borrowed strings). */
struct release_jobset {
	const char *namespace, *name, *uid;
};

/* Whose the ConfigMap `<jobset>-group-scheduling` found in the namespace is. */
enum release_owner {
	RELEASE_OWNER_OURS, /* owned by this JobSet (its uid) */
	RELEASE_OWNER_PREDECESSOR, /* controlled by a JobSet of the same name, now gone: a leftover
				    * the garbage collector has not removed yet */
	RELEASE_OWNER_FOREIGN, /* anything else: somebody else's, never touched */
};

/* The ConfigMap's path: the namespace's collection (collection != 0) or
 * the ConfigMap itself; 0, or MUSTER_EINVAL with a cause (kube_path.h). */
int release_record_path(char *out, size_t size, const struct release_jobset *jobset, int collection,
			char **cause);

/* Whose the ConfigMap is, from its ownerReferences. */
enum release_owner release_record_owner(const cJSON *configmap, const struct release_jobset *jobset);

/* What release_record_read found. */
struct release_record_read {
	int found; /* the ConfigMap exists */
	enum release_owner owner; /* when found */
	int has_release; /* ours, with data.started: epoch is the release */
	uint64_t epoch; /* group_epoch(data.generation, data.started) */
};

/* GETs the ConfigMap. Returns 0 with *out (absent: found 0), or a negative
 * kube_err with *cause (MUSTER_EPARSE when our ConfigMap's numbers are not
 * numbers). */
int release_record_read(struct kube_client *client, const struct release_jobset *jobset,
			struct release_record_read *out, char **cause);

/* Writes the release of `epoch`: creates the ConfigMap controlled by the
 * JobSet, or, when it exists, merge-patches it if it is ours, replaces it if
 * it is a predecessor's leftover (logged `configmap-replaced`), and refuses
 * (MUSTER_ECONFLICT, *foreign set) if it is anyone else's. *how says what was
 * done ("created", "patched", "replaced"). Returns 0 or a negative kube_err
 * with *cause. */
int release_record_write(struct kube_client *client, const struct release_jobset *jobset, uint64_t epoch,
			 const char **how, int *foreign, char **cause);

#endif
