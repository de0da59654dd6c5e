/*
 * jobset_event: an Event on a JobSet (jobset_event.h).
 */
#include "jobset_event.h"

#include "kube_event.h"

int jobset_event_post(struct kube_client *client, const char *namespace, const char *name, const char *uid,
		      const char *reason, int warning, const char *message)
{
	const struct kube_event_object jobset = { "jobset.x-k8s.io/v1alpha2", "JobSet", namespace, name,
						  uid };

	return kube_event_post(client, &jobset, "muster-controller", reason, warning, message);
}
