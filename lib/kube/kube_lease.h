/*
 * kube_lease: leader election on a coordination.k8s.io/v1 Lease, with the
 * semantics of client-go's leaderelection package (LeaseLock).
 *
 * The Lease /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME carries
 * spec.holderIdentity, leaseDurationSeconds, acquireTime, renewTime (RFC 3339
 * with microseconds, written from the local wall clock) and leaseTransitions.
 *
 * Remote clocks are never trusted. A candidate remembers the local monotonic
 * time at which it last saw the record change (any of holder, duration,
 * times, transitions or resourceVersion) and holds the lease of another
 * holder to be live until that time plus leaseDurationSeconds. So a fresh
 * candidate always waits one whole lease duration before taking over a
 * lease whose holder has died, and a holder with a skewed wall clock cannot
 * shorten or lengthen anybody's wait. A lease with an empty holderIdentity
 * (released) may be taken at once.
 *
 * Acquiring: a missing Lease (404) is CREATEd; otherwise it is PUT with the
 * observed metadata.resourceVersion, so the server lets only one of several
 * racing candidates win. Losing that race (409) is not an error: the answer
 * is "not leader". Taking over from another holder (or from nobody, after a
 * release) adds one to leaseTransitions and sets acquireTime; renewing keeps
 * both. The holder renews every retry period, first with a PUT on the record
 * it wrote last (no GET), falling back to a candidate's GET-then-PUT (or
 * create) when that conflicts or finds the Lease deleted.
 * A holder that has not renewed successfully for renew_deadline has lost
 * leadership; renew_deadline < lease duration means it knows this before any
 * standby may take over. A holder that stops cleanly releases the lease:
 * holderIdentity "" and leaseDurationSeconds 1, so a standby takes over at
 * its next retry instead of after a whole lease duration.
 *
 * What it does not do: it does not run the caller's leader work, nor cancel
 * it. The caller stops that work when kube_lease_hold returns (or when
 * kube_lease_is_leader turns false) and only then lets the lease go.
 *
 * The client: give the lease a kube_client of its own (a client is used by
 * one thread at a time). A request in flight cannot be interrupted, so
 * configure that client so that one request with all its retries fits well
 * inside renew_deadline (for instance request_timeout_ms <= renew_deadline
 * / 3 and max_retries 0 or 1); otherwise a slow server may make the holder
 * notice its loss later than renew_deadline.
 *
 * State changes are logged with mlog, one line each: lease-acquired,
 * lease-held-by-other (when the observed holder changes), lease-lost,
 * lease-released, and warnings for failed attempts (lease-renew-failed,
 * lease-acquire-failed).
 *
 * Errors: negative kube_err codes with a malloc'd cause that the caller
 * frees (`cause` may be NULL). MUSTER_ELOST says that leadership was lost.
 *
 * Threads: one thread drives a lease (kube_lease_try, _acquire, _hold,
 * _release). kube_lease_is_leader and kube_lease_holder may be called from
 * any thread at any time until kube_lease_free; they need the clock's now_ns
 * to be callable from any thread (the real clock is).
 *
 * Lifecycle: if kube_lease_new fails there is nothing to free; after
 * success call kube_lease_free (accepts NULL), which does no I/O and does
 * not release the lease. The lease borrows the client and copies the
 * options and the clock.
 */
#ifndef MUSTER_KUBE_LEASE_H
#define MUSTER_KUBE_LEASE_H

#include <stdatomic.h>
#include <stddef.h>

#include "kube_client.h"

/* Defaults of client-go's leader election, used for zero options. */
#define KUBE_LEASE_DEFAULT_DURATION_S 15u
#define KUBE_LEASE_DEFAULT_RENEW_DEADLINE_MS 10000u
#define KUBE_LEASE_DEFAULT_RETRY_PERIOD_MS 2000u
/* Longest lease accepted: a day. */
#define KUBE_LEASE_DURATION_MAX_S 86400u
/* Longest identity of our own: printable ASCII, space included. */
#define KUBE_LEASE_IDENTITY_MAX 128
/* Longest holderIdentity accepted from the server (others may write
 * identities longer than ours). */
#define KUBE_LEASE_HOLDER_MAX 1024
/* Longest Lease name (a DNS subdomain) and namespace (a DNS label). */
#define KUBE_LEASE_NAME_MAX 253
#define KUBE_LEASE_NAMESPACE_MAX 63

struct kube_lease_options {
	const char *namespace; /* a DNS label: [a-z0-9-], at most 63 bytes */
	const char *name; /* a DNS subdomain: [a-z0-9.-], at most 253 bytes */
	const char *identity; /* unique per candidate, e.g. the pod name */
	unsigned lease_duration_s; /* 0: 15 */
	unsigned renew_deadline_ms; /* 0: 10000; must be < lease_duration_s * 1000 */
	unsigned retry_period_ms; /* 0: 2000; must be < renew_deadline_ms */
};

struct kube_lease;

/* Checks the options (with the defaults filled in) and makes a lease that
 * is not held. Returns 0 and *out, or MUSTER_EINVAL with a cause naming the
 * option and the rule, or MUSTER_ENOMEM. clock NULL means the real one. */
int kube_lease_new(struct kube_client *client, const struct kube_lease_options *options,
		   const struct kube_clock *clock, struct kube_lease **out, char **cause);

/* Does no I/O: a held lease is not released (call kube_lease_release first
 * for that). Accepts NULL. */
void kube_lease_free(struct kube_lease *lease);

/* One acquire-or-renew step, as client-go's tryAcquireOrRenew. Returns 1
 * when we hold the lease now, 0 when another holds a live lease or won the
 * race for it (a 409), or a negative kube_err with a cause (the record could
 * not be read, parsed or written). An error does not end leadership by
 * itself: kube_lease_is_leader turns false renew_deadline after the last
 * success, and a step begun after that reads the Lease before writing it,
 * as any candidate does. */
int kube_lease_try(struct kube_lease *lease, char **cause);

/* Tries every retry period (each wait a random time between 3/4 of it and
 * the whole of it, so that candidates started together spread out and a
 * released lease is taken within one retry period; client-go's jitter
 * instead waits up to 2.2 periods) until the lease is held
 * (returns 1) or *stop becomes non-zero (returns 0; checked at least every
 * 100 ms; stop may be NULL). Transient errors (connection, timeout, 429,
 * 5xx) are logged and retried; any other error is returned with its cause. */
int kube_lease_acquire(struct kube_lease *lease, const atomic_int *stop, char **cause);

/* Renews the held lease every retry period until *stop becomes non-zero,
 * then releases it and returns 0 (or the release's error). Returns
 * MUSTER_ELOST with a cause when another holder has the lease or when no
 * renewal succeeded for renew_deadline; leadership is then over and the
 * lease is not released. MUSTER_EINVAL when the lease is not held on entry. */
int kube_lease_hold(struct kube_lease *lease, const atomic_int *stop, char **cause);

/* If the record we saw last names us as holder: stops being leader (at
 * once, before any I/O), then PUTs holderIdentity "" and
 * leaseDurationSeconds 1 on it. Returns 0 also when there is nothing to
 * release or when the Lease changed or vanished meanwhile (409/404: it is no
 * longer ours to release), or the PUT's error with a cause. */
int kube_lease_release(struct kube_lease *lease, char **cause);

/* 1 when we hold the lease and the last successful acquire or renew began
 * less than renew_deadline ago, else 0. Any thread. */
int kube_lease_is_leader(const struct kube_lease *lease);

/* Copies the holderIdentity last seen on the server into out (cut to fit,
 * always NUL-terminated; "" when none was seen or the lease is released)
 * and returns out. Any thread; for logging. */
char *kube_lease_holder(struct kube_lease *lease, char *out, size_t size);

/* 1 and why (cut to fit) when the last attempt to acquire the lease failed
 * (an apiserver out of reach, a TLS verification failure: retried with
 * backoff), else 0. Any thread; for readiness. */
int kube_lease_last_failure(struct kube_lease *lease, char *out, size_t size);

#endif
