/*
 * record_owner: whose a ConfigMap of record is, from its ownerReferences.
 *
 * muster's ConfigMaps of record (`<jobset>-gang`, `<jobset>-placement`)
 * are each owned by their JobSet: an owner reference of kind JobSet
 * (apiVersion jobset.x-k8s.io/...), the JobSet's name and uid, with
 * `controller: true`. The controller reads and writes them by this rule,
 * and the webhook's pod route takes a placement record only when it holds:
 * a ConfigMap of the name that some tenant wrote is nobody's record. Pure;
 * reads a cJSON tree, keeps nothing.
 */
#ifndef MUSTER_RECORD_OWNER_H
#define MUSTER_RECORD_OWNER_H

struct cJSON;

enum record_owner {
	RECORD_OWNER_OURS, /* owned by this JobSet (its name and uid) */
	RECORD_OWNER_PREDECESSOR, /* controlled by a JobSet of the same name, another uid: a leftover */
	RECORD_OWNER_FOREIGN, /* anything else: somebody else's */
};

/* Whose `object` is for JobSet `jobset` of `uid`. With need_controller,
 * a reference of this JobSet counts as ours only when it says
 * `controller: true` (as muster writes it). */
enum record_owner record_owner_of(const struct cJSON *object, const char *jobset, const char *uid,
				  int need_controller);

#endif
