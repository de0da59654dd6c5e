/*
 * kube_event: an Event on an object, so that `kubectl describe` shows what
 * a muster component did, or why something waits. Best effort: a failure
 * is logged (one line, with the object's namespace/name) and returned.
 */
#ifndef MUSTER_KUBE_EVENT_H
#define MUSTER_KUBE_EVENT_H

#include "kube_client.h"

/* The object an Event is about (borrowed strings; uid may be "" when not
 * known, though `kubectl describe` then may not show it). */
struct kube_event_object {
	const char *api_version, *kind, *namespace, *name, *uid;
};

/* component: who reports ("muster-controller"); reason: a CamelCase word;
 * message: one sentence. */
int kube_event_post(struct kube_client *client, const struct kube_event_object *object, const char *component,
		    const char *reason, int warning, const char *message);

#endif
