/*
 * leader: leader election for muster-controller (leader.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "leader.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kube_curl.h"
#include "kube_error.h"
#include "mlog.h"

static void *hold_main(void *arg)
{
	struct leader *l = arg;
	int err = kube_lease_hold(atomic_load(&l->lease), &l->stop, &l->cause);

	if (err == MUSTER_ELOST) {
		atomic_store(&l->lost, 1);
		atomic_store(l->process_stop, 1); /* stop acting at once */
	}
	return NULL;
}

/* The identity: $POD_NAME, else hostname_pid. */
static void identity_of(char *out, size_t size)
{
	const char *pod = getenv("POD_NAME");
	char host[64] = "muster";

	if (pod && *pod) {
		snprintf(out, size, "%s", pod);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(out, size, "%s_%ld", host, (long)getpid());
}

int leader_take(struct leader *l, const struct kube_config *cfg, const struct leader_settings *settings,
		const char *fallback_namespace, atomic_int *stop, char **cause)
{
	const char *pod_namespace = getenv("POD_NAMESPACE");
	struct kube_lease_options options = { .name = settings->name };
	struct kube_config lease_cfg = *cfg;
	struct kube_lease *lease = NULL;
	int err;

	l->process_stop = stop;
	identity_of(l->identity, sizeof(l->identity));
	options.namespace = settings->namespace		      ? settings->namespace
			    : pod_namespace && *pod_namespace ? pod_namespace
			    : fallback_namespace	      ? fallback_namespace
							      : "default";
	options.identity = l->identity;
	options.lease_duration_s = (unsigned)settings->lease_s;
	options.renew_deadline_ms = (unsigned)settings->renew_s * 1000u;
	options.retry_period_ms = (unsigned)settings->retry_s * 1000u;
	lease_cfg.request_timeout_ms = (long)(settings->retry_s * 1000u);
	lease_cfg.max_retries = 0;
	if ((err = kube_client_open(&lease_cfg, &l->client, cause)) ||
	    (err = kube_lease_new(l->client, &options, NULL, &lease, cause)))
		return err;
	atomic_store(&l->lease, lease);
	mlog(MLOG_INFO, "waiting-for-lease", "lease=%s/%s identity=%s", options.namespace, options.name,
	     l->identity);
	err = kube_lease_acquire(lease, stop, cause);
	if (err <= 0) /* stopped while waiting (0), or failed */
		return err;
	if (pthread_create(&l->thread, NULL, hold_main, l) != 0)
		return cause_err(cause, MUSTER_ENOMEM, "cannot start the lease thread");
	l->holding = 1;
	return 1;
}

int leader_release(struct leader *l)
{
	int lost = 0;

	if (l->holding) {
		atomic_store(&l->stop, 1);
		pthread_join(l->thread, NULL);
		l->holding = 0;
		if ((lost = atomic_load(&l->lost)))
			mlog(MLOG_ERROR, "leadership-lost",
			     "cause=\"%s\" action=\"exiting; a restart rebuilds from the API\"",
			     l->cause ? l->cause : "");
	}
	return lost;
}

void leader_free(struct leader *l)
{
	free(l->cause);
	l->cause = NULL;
	kube_lease_free(atomic_load(&l->lease));
	atomic_store(&l->lease, NULL);
	kube_client_free(l->client);
	l->client = NULL;
}
