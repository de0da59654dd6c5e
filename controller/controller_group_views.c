/*
 * controller_group_views: what the metrics and health endpoints read of the
 * gang loop (controller_group.h): readiness, counters, and a view of each
 * JobSet tracked. Reads only; the loop itself is controller_group.c.
 */
#define _POSIX_C_SOURCE 200809L

#include "controller_group.h"
#include "controller_group_int.h"

#include <stdio.h>
#include <string.h>

#include "muster_lock.h"
#include "push_fanout.h"

int controller_group_ready(struct controller_group *group, char *reason, size_t size)
{
	char why[KUBE_RELIST_REASON_MAX];
	int jobsets = atomic_load(&group->jobsets_listed), pods = atomic_load(&group->pods_listed);

	if (jobsets && pods)
		return 1;
	muster_lock(&group->reason_lock);
	snprintf(why, sizeof(why), "%s", jobsets ? group->pod_reason : group->jobset_reason);
	muster_unlock(&group->reason_lock);
	/* The reason of the LIST under way: "first list", or why the last one
	 * failed (an apiserver out of reach, a TLS verification failure). */
	snprintf(reason, size, "the %s watch has not completed its first LIST (%s)",
		 jobsets ? "pod" : "JobSet", why[0] ? why : "not started");
	return 0;
}

static void stats_sum(struct kube_client_stats *into, const struct kube_client_stats *add)
{
	into->requests += add->requests;
	into->retries += add->retries;
	for (int i = 0; i < KUBE_STATS_ERROR_SLOTS; i++)
		into->errors[i] += add->errors[i];
	into->watch_streams += add->watch_streams;
	into->relists += add->relists;
	into->watch_events += add->watch_events;
	into->list_pages_shrunk += add->list_pages_shrunk;
}

void controller_group_stats(struct controller_group *group, struct controller_group_stats *out)
{
	struct kube_client_stats reads;

	memset(out, 0, sizeof(*out));
	out->releases = stat_get(&group->stats.releases);
	out->release_failures = stat_get(&group->stats.release_failures);
	out->configmap_conflicts = stat_get(&group->stats.configmap_conflicts);
	out->barrier_timeouts = stat_get(&group->stats.barrier_timeouts);
	out->push_ok = stat_get(&group->side.stats.push_results[PUSH_OK]);
	out->push_refused = stat_get(&group->side.stats.push_results[PUSH_REFUSED]);
	out->push_unreachable = stat_get(&group->side.stats.push_results[PUSH_UNREACHABLE]);
	out->push_timeout = stat_get(&group->side.stats.push_results[PUSH_TIMEOUT]);
	out->push_pending = stat_get(&group->side.stats.push_results[PUSH_PENDING]);
	out->push_skipped = stat_get(&group->stats.push_skipped);
	out->push_passed = stat_get(&group->side.stats.push_passed);
	out->jobs_dropped = stat_get(&group->side.stats.jobs_dropped);
	kube_client_stats(group->jobset_api.client, &out->api[CONTROLLER_API_JOBSETS]);
	kube_client_stats(group->pod_api.client, &out->api[CONTROLLER_API_PODS]);
	kube_client_stats(group->write_api.client, &out->api[CONTROLLER_API_WRITES]);
	/* The reads of a new tracker have their own client (they are made under
	 * the lock, the writes outside it); both are the "writes" API. */
	kube_client_stats(group->read_api.client, &reads);
	stats_sum(&out->api[CONTROLLER_API_WRITES], &reads);
	kube_client_stats(group->side_api.client, &out->api[CONTROLLER_API_EVENTS]);
}

struct view_context {
	void (*fn)(void *arg, const struct controller_jobset_view *view);
	void *arg;
};

static void view_entry(void *arg, struct name_node *node)
{
	const struct view_context *context = arg;
	const struct entry *e = (const struct entry *)node;
	struct controller_jobset_view view;

	group_tracker_peek(e->tracker, &view.decision);
	view.namespace = e->namespace;
	view.name = e->name;
	view.pod_bytes = group_tracker_memory(e->tracker);
	view.pod_records = group_tracker_records(e->tracker);
	view.timeout_s = e->timeout_s;
	view.waiting_since = e->waiting_since;
	context->fn(context->arg, &view);
}

void controller_group_foreach(struct controller_group *group,
			      void (*fn)(void *arg, const struct controller_jobset_view *view), void *arg)
{
	struct view_context context = { fn, arg };

	muster_lock(&group->lock);
	name_table_each(&group->registry, view_entry, &context);
	muster_unlock(&group->lock);
}
