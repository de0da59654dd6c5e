/*
 * jobset_event: an Event on a JobSet, so that `kubectl describe jobset`
 * shows what muster did or why it waits (lib/kube/kube_event.h, reported
 * by muster-controller). Best effort: a failure is logged and returned.
 */
#ifndef MUSTER_JOBSET_EVENT_H
#define MUSTER_JOBSET_EVENT_H

#include "kube_client.h"

/* reason: a CamelCase word; message: one sentence. */
int jobset_event_post(struct kube_client *client, const char *namespace, const char *name, const char *uid,
		      const char *reason, int warning, const char *message);

#endif
