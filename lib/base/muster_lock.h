/*
 * muster_lock: the mutexes of muster's loops, counted per thread, so that
 * code which must never run under one of them can say so and be checked.
 *
 * muster_lock and muster_unlock are pthread_mutex_lock and _unlock plus a
 * per-thread count of the muster locks the calling thread holds;
 * muster_locks_held reads it. The Kubernetes client (lib/kube/kube_client)
 * calls muster_lock_assert_none at every request it sends and every watch
 * stream it opens: an API call can take seconds (a 30 s timeout, retries),
 * and a loop's lock held that long holds up its watches and /metrics. In
 * builds with -DMUSTER_LOCK_CHECK (the ASan and fuzz builds, so `make
 * check` runs every unit test with it) the assertion aborts the process
 * with one line naming the request; otherwise it does nothing and the
 * count costs one thread-local add per lock.
 *
 * Which mutexes: every one of the controller's loops that guards state a
 * thread making API calls also touches (controller_group's registry and
 * reason locks, the side queue's, the placement loop's, the shared
 * watches'), and the Lease's holder lock. A lock a thread
 * takes only around memory, never around a call of another module, may
 * stay a plain pthread mutex; controller/controller.md (Threads) names them.
 *
 * A pthread_cond_wait on a counted mutex keeps the count: the thread holds
 * the mutex again when the wait returns, and runs nothing meanwhile.
 */
#ifndef MUSTER_MUSTER_LOCK_H
#define MUSTER_MUSTER_LOCK_H

#include <pthread.h>

/* pthread_mutex_lock(m), counted for this thread. */
void muster_lock(pthread_mutex_t *m);

/* pthread_mutex_unlock(m), counted for this thread. */
void muster_unlock(pthread_mutex_t *m);

/* How many muster locks this thread holds. */
unsigned muster_locks_held(void);

/* Logs one line naming `what` and the locks held (event=api-call-under-lock), then aborts. */
void muster_lock_violation(const char *what) __attribute__((noreturn));

/* `what` (a request, "GET /api/v1/...") must run with no muster lock held:
 * with MUSTER_LOCK_CHECK, a violation aborts; without, nothing. */
static inline void muster_lock_assert_none(const char *what)
{
#ifdef MUSTER_LOCK_CHECK
	if (muster_locks_held())
		muster_lock_violation(what);
#else
	(void)what;
#endif
}

#endif
