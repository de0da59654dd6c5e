/*
 * leader: muster-controller's part in leader election, around kube_lease.
 *
 * leader_take waits for the Lease (a standby waits here), then keeps it
 * renewed on a thread of its own; if it is lost, the process's stop flag is
 * set so that the loops stop acting at once. leader_release, called once the
 * loops have stopped, gives the Lease up (only then may another replica
 * lead) and says whether it had been lost.
 *
 * Lifecycle: a zeroed struct leader is empty; after leader_take (whatever it
 * returned) call leader_release once, then leader_free.
 */
#ifndef MUSTER_LEADER_H
#define MUSTER_LEADER_H

#include <pthread.h>
#include <stdatomic.h>

#include "kube_config.h"
#include "kube_lease.h"

struct leader_settings {
	const char *name; /* the Lease */
	const char *namespace; /* NULL: $POD_NAMESPACE, else fallback_namespace, else "default" */
	unsigned long lease_s, renew_s, retry_s;
};

struct leader {
	/* Set by leader_take before it waits: /readyz and /metrics read it. */
	_Atomic(struct kube_lease *) lease;
	/* Private. */
	struct kube_client *client;
	atomic_int *process_stop;
	pthread_t thread;
	int holding;
	atomic_int stop; /* the loops stopped: release the Lease */
	atomic_int lost;
	char *cause;
	char identity[KUBE_LEASE_IDENTITY_MAX + 1];
};

/* Waits for the Lease until *stop. 1 leading (renewed from now on), 0
 * stopped while waiting, or a negative kube_err with *cause. `cfg` is the
 * controller's; the Lease gets a client of its own with short requests and
 * no retries (a renewal must not outlive its deadline inside one request). */
int leader_take(struct leader *leader, const struct kube_config *cfg, const struct leader_settings *settings,
		const char *fallback_namespace, atomic_int *stop, char **cause);

/* Stops renewing and releases the Lease. Returns 1 when the Lease had been
 * lost (logged: the exit code is then 1), else 0. */
int leader_release(struct leader *leader);

/* Frees what leader_take made, once nothing reads `lease` any more (the
 * HTTP servers stopped). Accepts a leader never taken. */
void leader_free(struct leader *leader);

#endif
