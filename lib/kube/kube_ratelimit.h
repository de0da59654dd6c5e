/*
 * kube_ratelimit: the client-side token bucket that keeps a client under its
 * QPS and burst budget (the --kube-qps / --kube-burst flags).
 *
 * It is pure: the caller passes the current time in nanoseconds of a
 * monotonic clock and gets back how long to wait; it never reads a clock or
 * sleeps. Reservations may drive the bucket below zero, as in Go's
 * golang.org/x/time/rate: each caller is told how long to wait for its own
 * token, so concurrent callers queue fairly instead of racing.
 *
 * The struct is a plain value: no allocation, no cleanup. Not thread-safe;
 * the client serialises access.
 */
#ifndef MUSTER_KUBE_RATELIMIT_H
#define MUSTER_KUBE_RATELIMIT_H

#include <stdint.h>

struct kube_ratelimit {
	double qps; /* tokens per second; <= 0 means unlimited */
	double burst; /* bucket capacity, at least 1 */
	double tokens; /* may be negative: tokens promised to waiting callers */
	uint64_t last_ns; /* time of the last refill */
	int started; /* 0 until the first reservation sets last_ns */
};

/* Sets up a full bucket. qps <= 0 (or NaN) disables limiting; burst 0 is
 * taken as 1. */
void kube_ratelimit_init(struct kube_ratelimit *limit, double qps, unsigned burst);

/* Takes one token at `now_ns` and returns how many nanoseconds the caller
 * must wait before using it (0 when a token was available). A clock that goes
 * backwards is treated as not having moved. */
uint64_t kube_ratelimit_reserve(struct kube_ratelimit *limit, uint64_t now_ns);

/* How many nanoseconds from `now_ns` until one token would be available,
 * without taking it. */
uint64_t kube_ratelimit_delay(const struct kube_ratelimit *limit, uint64_t now_ns);

#endif
