/*
 * controller_group: the group-start loop of bin/muster-controller.
 *
 * It keeps one group_tracker per group-scheduled JobSet, fed by two watches
 * (JobSets, and pods carrying the label jobset.sigs.k8s.io/jobset-name), and
 * acts on the tracker's decision: on RELEASE(attempt) it writes the
 * ConfigMap `<jobset>-group-scheduling` (data.started = "<attempt>", owned
 * by the JobSet), pushes the release line to every started pod's barrier
 * (push_fanout), and records the release in the tracker.
 *
 * This first version has no leader election and no metrics. All trackers
 * live behind one mutex; each watch runs in its own thread with its own API
 * client, and the writes (ConfigMap, per-JobSet pod LIST) use a third client
 * that is only touched under the mutex.
 *
 * A JobSet is group-scheduled when it has spec.groupSchedulingConfig or,
 * because the JobSet CRD installed on Kubernetes 1.20 prunes that field, the
 * annotation `muster.dev/group-scheduling-timeout: "<seconds>"` (every
 * replicated job is then targeted). The per-JobSet barrier token is read
 * from the annotation `muster.dev/barrier-token` until the webhook keeps it
 * in a Secret.
 *
 * Lifecycle: controller_group_new() succeeds fully or leaves nothing;
 * controller_group_run() blocks until *stop is set (or a watch fails for
 * good); controller_group_free() accepts NULL.
 */
#ifndef MUSTER_CONTROLLER_GROUP_H
#define MUSTER_CONTROLLER_GROUP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kube_config.h"

/* Annotations read from a JobSet (see the top of this file). */
#define CONTROLLER_ANNOTATION_TOKEN "muster.dev/barrier-token"
#define CONTROLLER_ANNOTATION_TIMEOUT "muster.dev/group-scheduling-timeout"
/* Suffix of the release ConfigMap's name. */
#define CONTROLLER_CONFIGMAP_SUFFIX "-group-scheduling"
/* Most JobSets tracked at once; more are logged and ignored. */
#define CONTROLLER_JOBSETS_MAX 100000u

struct controller_group_options {
	const char *namespace; /* NULL or "": every namespace */
	uint16_t push_port; /* the barrier's port, 9443 */
	size_t push_parallelism; /* connections in flight, 1..4096 */
	int push_target_timeout_ms;
	int push_total_timeout_ms;
};

struct controller_group;

/* Builds the loop and its three API clients from cfg (which may be freed
 * afterwards). Returns 0, or a negative kube_err with *cause (malloc'ed, the
 * caller frees). */
int controller_group_new(const struct kube_config *cfg, const struct controller_group_options *options,
			 struct controller_group **out, char **cause);

/* Runs both watches until *stop becomes non-zero or one of them ends with an
 * error that retrying cannot fix (401/403, 404: e.g. the JobSet CRD is not
 * installed). Returns 0 when stopped, else the negative kube_err and *cause. */
int controller_group_run(struct controller_group *group, atomic_int *stop, char **cause);

void controller_group_free(struct controller_group *group);

#endif
