/*
 * placement/loop.c: the pass and the lifecycle. run_pass puts the rooms in
 * order (records read, Jobs cleared, topology read, the decision under the
 * lock, then the acts, relocations, moves and retirements outside it);
 * placement_loop_run starts the watches and runs passes when due;
 * placement_loop_new, _free, _ready, _stats and _observe
 * (controller/placement_loop.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "kube_curl.h"
#include "kube_path.h"
#include "mlog.h"
#include "../watch_set.h"

static void run_pass(struct placement_loop *loop)
{
	struct topology top;
	struct pass p = { .loop = loop };
	struct unread_list recorded = { 0 };
	double started = now_s();
	int placing;

	memset(&top, 0, sizeof(top));
	top.store.chunk = 4096;
	placement_read_records(loop);
	placement_clear_due(loop);
	pthread_mutex_lock(&loop->lock);
	{
		struct pass probe = { .loop = loop };

		name_table_each(&loop->jobsets, placement_collect_pending, &probe);
		placing = probe.pending_count > 0;
		/* Nothing to place nor to move: no API reads. */
		loop->next_hold = probe.next_hold;
		if (!probe.pending_count && !loop->stranded) {
			loop->dirty = 0;
			loop->pods_changed = 0;
			loop->stats.waiting = probe.held;
			loop->retrying = 0;
			pthread_mutex_unlock(&loop->lock);
			free(probe.pending);
			goto resume_only;
		}
		free(probe.pending);
	}
	pthread_mutex_unlock(&loop->lock);
	placement_read_topology(loop, &top);
resume_only:
	pthread_mutex_lock(&loop->lock);
	loop->dirty = 0;
	loop->pods_changed = 0;
	loop->stats.passes++;
	/* Recorded but not resumed: resumed, not placed again. */
	name_table_each(&loop->jobsets, placement_collect_recorded, &recorded);
	/* The decision, and the checks of placed JobSets (lost domains,
	 * restarts): when something waits, Nodes changed (a pod's event cannot
	 * take a domain's nodes away), a placed JobSet changed, or placed pods
	 * are not bound yet. */
	if (placing || loop->nodes_changed || loop->placed_changed || loop->promising) {
		loop->nodes_changed = 0;
		loop->placed_changed = 0;
		placement_decide(&p, &top);
		loop->next_hold = p.next_hold;
		loop->promising = p.promising;
		loop->stranded = p.stranded;
	}
	loop->stats.last_decision_s = now_s() - started;
	pthread_mutex_unlock(&loop->lock);
	for (size_t i = 0; i < recorded.count; i++) {
		char *cause = NULL;
		int err = placement_resume(loop, recorded.items[i].namespace, recorded.items[i].name,
					   recorded.items[i].uid, &cause);

		if (err) {
			mlog(MLOG_WARN, "placement-write-failed",
			     "jobset=%s/%s err=%s cause=\"%s\" action=\"retried\"",
			     recorded.items[i].namespace, recorded.items[i].name, kube_err_name(err),
			     cause ? cause : "");
			pthread_mutex_lock(&loop->lock);
			loop->stats.waiting++; /* resumed by a pass PLACEMENT_RETRY_S later at most */
			loop->retrying++;
			pthread_mutex_unlock(&loop->lock);
		} else
			placement_mark_placed(loop, recorded.items[i].namespace, recorded.items[i].name,
					      recorded.items[i].uid);
		if (!err)
			mlog(MLOG_INFO, "placement-resumed",
			     "jobset=%s/%s reason=\"its placement of record was written before\"",
			     recorded.items[i].namespace, recorded.items[i].name);
		free(cause);
	}
	for (size_t i = 0; i < p.action_count; i++) {
		int placed = placement_act(loop, &p.actions[i], started);

		pthread_mutex_lock(&loop->lock);
		if (placed) {
			loop->stats.placements++;
			loop->promising++; /* its pods are not bound yet: checked from the next pass */
		} else if (p.actions[i].reason_changed)
			loop->stats.refusals++;
		pthread_mutex_unlock(&loop->lock);
		free(p.actions[i].record);
	}
	for (size_t i = 0; i < p.relocation_count; i++)
		placement_relocate(loop, &p.relocations[i]);
	for (size_t i = 0; i < p.move_count; i++) {
		placement_move_jobs(loop, &p.moves[i]);
		free(p.moves[i].record);
	}
	free(p.moves);
	placement_retire_due(loop);
	free(p.relocations);
	free(recorded.items);
	free(p.actions);
	free(p.pending);
	topo_store_free(&top.store);
}

int placement_loop_run(struct placement_loop *loop, atomic_int *stop, char **cause)
{
	struct watch_set watches = { 0 }, cluster = { 0 };
	struct watch_spec nodes = { .client = loop->api[API_NODES].client,
				    .informer = loop->informers[WATCH_NODES],
				    .path = "/api/v1/nodes",
				    .page_size = PAGE_SIZE };
	struct watch_spec pods = { .client = loop->api[API_PODS].client,
				   .informer = loop->informers[WATCH_PODS],
				   .path = "/api/v1/pods",
				   .selectors = { .field = "spec.nodeName!=" },
				   .page_size = PAGE_SIZE };
	struct watch_spec jobsets = { .client = loop->api[API_JOBSETS].client,
				      .informer = loop->informers[WATCH_JOBSETS],
				      .page_size = PAGE_SIZE };
	int err, watch_err, cluster_err = 0;
	double last = 0;

	/* The namespace was checked when the loop was made. */
	kube_path(jobsets.path, sizeof(jobsets.path), &KUBE_JOBSETS, loop->namespace, NULL, NULL);
	/* Every request of the loop ends at once on a stop. */
	for (int i = 0; i < API_COUNT; i++)
		if (loop->api[i].client)
			kube_client_set_stop(loop->api[i].client, stop);
	/* The JobSets first; every Node and bound pod only once a JobSet asks
	 * for a placement: a cluster that uses the gang start alone does not
	 * pay for watching every pod. */
	watch_set_add(&watches, &jobsets);
	watch_set_add(&cluster, &nodes);
	watch_set_add(&cluster, &pods);
	err = watch_set_start(&watches, stop, cause);
	while (!err && !atomic_load(stop)) {
		struct timespec until;
		int due, ready, wanted;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += PLACEMENT_COALESCE_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&loop->lock);
		if (!loop->dirty)
			pthread_cond_timedwait(&loop->cond, &loop->lock, &until);
		wanted = !loop->cluster_watching && loop->jobsets.count > 0;
		if (wanted)
			loop->cluster_watching = 1;
		ready = loop->listed[WATCH_NODES] && loop->listed[WATCH_PODS] && loop->listed[WATCH_JOBSETS];
		/* Placed JobSets with pods not bound are checked as often: room in
		 * their domain can go without a Node event (other pods fill it). */
		due = ready &&
		      (loop->dirty || (loop->pods_changed && now_s() - last >= PLACEMENT_POD_PASS_S) ||
		       ((loop->stats.waiting || loop->promising) && now_s() - last >= PLACEMENT_RETRY_S) ||
		       (loop->stranded && now_s() - last >= 1.0) ||
		       (loop->next_hold && now_s() >= loop->next_hold) ||
		       (loop->next_retire && wall_s() >= loop->next_retire));
		pthread_mutex_unlock(&loop->lock);
		if (wanted) {
			mlog(MLOG_INFO, "placement-watching",
			     "reason=\"a JobSet asks for a placement\" watches=\"nodes, "
			     "bound pods\"");
			if ((cluster_err = watch_set_start(&cluster, stop, cause)) != 0)
				break;
		}
		if (!due || now_s() - last < PLACEMENT_COALESCE_MS / 1e3) {
			struct timespec pause = { 0, 20 * 1000000L };

			nanosleep(&pause, NULL);
			continue;
		}
		last = now_s();
		run_pass(loop);
	}
	watch_err = watch_set_join(&watches, err || cluster_err ? NULL : cause);
	if (!watch_err)
		watch_err = watch_set_join(&cluster, err || cluster_err ? NULL : cause);
	else
		watch_set_join(&cluster, NULL);
	return err ? err : cluster_err ? cluster_err : watch_err;
}

void placement_loop_free(struct placement_loop *loop)
{
	if (!loop)
		return;
	for (int i = 0; i < WATCH_COUNT; i++)
		kube_informer_free(loop->informers[i]);
	for (int i = 0; i < API_COUNT; i++) {
		kube_client_free(loop->api[i].client);
		kube_curl_free(loop->api[i].curl);
	}
	placement_mirror_free(loop);
	topo_cache_free(loop->cache);
	pthread_mutex_destroy(&loop->lock);
	pthread_cond_destroy(&loop->cond);
	free(loop->work);
	free(loop->namespace);
	free(loop->levels);
	free(loop->topology);
	free(loop->resources);
	free(loop);
}

static int api_new(const struct kube_config *cfg, const struct placement_options *o, struct api *api,
		   char **cause)
{
	int err;

	if (o->transport)
		return kube_client_new(cfg, o->transport, o->transport_ctx, NULL, &api->client, cause);
	err = kube_curl_new(cfg, &api->curl, cause);
	if (!err)
		err = kube_client_new(cfg, &kube_curl_transport, api->curl, NULL, &api->client, cause);
	return err;
}

static char *copy_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

int placement_loop_new(const struct kube_config *cfg, const struct placement_options *o,
		       struct placement_loop **out, char **cause)
{
	struct placement_loop *loop = calloc(1, sizeof(*loop));
	struct kube_informer_handlers handlers[WATCH_COUNT];
	char *save = NULL;
	int err = 0;

	*out = NULL;
	if (o->namespace && *o->namespace && !kube_dns_label(o->namespace, KUBE_NAMESPACE_MAX)) {
		free(loop);
		return kube_cause(cause, KUBE_EINVAL, "--namespace must be a DNS-1123 label");
	}
	if (o->topology && *o->topology && !kube_dns_subdomain(o->topology, KUBE_NAME_MAX)) {
		free(loop);
		return kube_cause(cause, KUBE_EINVAL,
				  "--placement-topology must be a Kubernetes object name");
	}
	if (!loop)
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the placement loop");
	pthread_mutex_init(&loop->lock, NULL);
	pthread_cond_init(&loop->cond, NULL);
	loop->hypernodes = o->hypernodes;
	loop->replace_after = o->replace_after_s;
	loop->hold_s = o->hold_ms ? (double)o->hold_ms / 1e3 : RECORD_CACHE_WAIT_S;
	loop->namespace = copy_or_null(o->namespace);
	loop->levels = copy_or_null(o->levels);
	loop->topology = copy_or_null(o->topology);
	loop->resources = strdup(o->resources && *o->resources ? o->resources : PLACEMENT_RESOURCES_DEFAULT);
	if (!loop->resources) {
		placement_loop_free(loop);
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the placement loop");
	}
	for (char *tok = strtok_r(loop->resources, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (loop->resource_count == TOPO_RESOURCES_MAX) {
			placement_loop_free(loop);
			return kube_cause(cause, KUBE_EINVAL, "--placement-resources: at most %d resources",
					  TOPO_RESOURCES_MAX);
		}
		loop->resource_names[loop->resource_count++] = tok;
	}
	if (topo_cache_new(loop->resource_names, loop->resource_count, &loop->cache, cause)) {
		placement_loop_free(loop);
		return KUBE_EINVAL;
	}
	for (int i = 0; i < API_COUNT && !err; i++)
		err = api_new(cfg, o, &loop->api[i], cause);
	placement_mirror_handlers(handlers);
	for (int i = 0; i < WATCH_COUNT && !err; i++) {
		handlers[i].arg = loop;
		err = kube_informer_new(&handlers[i], &loop->informers[i], cause);
	}
	if (err) {
		placement_loop_free(loop);
		return err;
	}
	*out = loop;
	return 0;
}

int placement_loop_ready(struct placement_loop *loop, char *reason, size_t size)
{
	static const char *const names[WATCH_COUNT] = { "nodes", "pods", "jobsets" };
	int ready = 1;

	pthread_mutex_lock(&loop->lock);
	for (int i = 0; i < WATCH_COUNT; i++)
		if (!loop->listed[i] && ready && (i == WATCH_JOBSETS || loop->cluster_watching)) {
			snprintf(reason, size, "placement: the %s are not listed yet", names[i]);
			ready = 0;
		}
	pthread_mutex_unlock(&loop->lock);
	return ready;
}

void placement_loop_stats(struct placement_loop *loop, struct placement_stats *out)
{
	pthread_mutex_lock(&loop->lock);
	*out = loop->stats;
	pthread_mutex_unlock(&loop->lock);
	out->list_pages_shrunk = 0;
	for (int i = 0; i < API_COUNT; i++) {
		struct kube_client_stats api;

		if (!loop->api[i].client)
			continue;
		kube_client_stats(loop->api[i].client, &api);
		out->list_pages_shrunk += api.list_pages_shrunk;
	}
}

void placement_loop_observe(struct placement_loop *loop, const struct placement_observer *observer)
{
	loop->observer = *observer;
}
