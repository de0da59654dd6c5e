/*
 * kc_fetch: what `kubectl muster status` reads from the API, as trees for
 * kc_status: the JobSet, its pods (label jobset.sigs.k8s.io/jobset-name),
 * its release of record and its placement of record (absent: NULL), and
 * the Events about it (field involvedObject.uid, so that a deleted JobSet
 * of the same name does not speak for it). I/O: a negative KUBE_E* code
 * and a cause (docs/errors.md); MUSTER_ENOTFOUND when the JobSet is absent.
 */
#ifndef MUSTER_KC_FETCH_H
#define MUSTER_KC_FETCH_H

struct cJSON;
struct kube_client;

struct kc_fetched {
	struct cJSON *jobset, *pods, *release, *placement, *events;
};

/* Reads them all into *out (zeroed first); on failure *out holds nothing.
 * A list that fails after the JobSet was read (pods, Events) fails the
 * whole: a status from half the inputs would mislead. */
int kc_fetch_status(struct kube_client *client, const char *namespace, const char *name,
		    struct kc_fetched *out, char **cause);

void kc_fetched_free(struct kc_fetched *fetched);

#endif
