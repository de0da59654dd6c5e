/*
 * kube_ratelimit: token bucket arithmetic. See kube_ratelimit.h.
 */
#include "kube_ratelimit.h"

#define NS_PER_S 1000000000.0

void kube_ratelimit_init(struct kube_ratelimit *limit, double qps, unsigned burst)
{
	/* `!(qps > 0)` also catches NaN. */
	limit->qps = !(qps > 0) ? 0 : qps;
	limit->burst = burst ? (double)burst : 1.0;
	limit->tokens = limit->burst;
	limit->last_ns = 0;
	limit->started = 0;
}

static double tokens_at(const struct kube_ratelimit *limit, uint64_t now_ns)
{
	double tokens = limit->tokens;

	if (limit->started && now_ns > limit->last_ns)
		tokens += (double)(now_ns - limit->last_ns) / NS_PER_S * limit->qps;
	return tokens > limit->burst ? limit->burst : tokens;
}

static uint64_t wait_for(const struct kube_ratelimit *limit, double tokens)
{
	double wait_ns;

	if (tokens >= 0)
		return 0;
	wait_ns = -tokens / limit->qps * NS_PER_S;
	/* Round up so that waiting the returned time always suffices. */
	return wait_ns >= 1.8e19 ? UINT64_MAX : (uint64_t)wait_ns + 1;
}

uint64_t kube_ratelimit_reserve(struct kube_ratelimit *limit, uint64_t now_ns)
{
	if (limit->qps <= 0)
		return 0;
	limit->tokens = tokens_at(limit, now_ns) - 1.0;
	if (!limit->started || now_ns > limit->last_ns)
		limit->last_ns = now_ns;
	limit->started = 1;
	return wait_for(limit, limit->tokens);
}

uint64_t kube_ratelimit_delay(const struct kube_ratelimit *limit, uint64_t now_ns)
{
	if (limit->qps <= 0)
		return 0;
	return wait_for(limit, tokens_at(limit, now_ns) - 1.0);
}
