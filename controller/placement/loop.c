/*
 * placement/loop.c: the pass and the lifecycle. A pass is the table
 * pass_phases run in order over one struct pass (records read, Jobs
 * cleared, the topology read, the decision under the lock, then outside it
 * the resumes, acts, relocations, moves and retirements), each phase in its
 * room; placement_loop_run starts the watches and runs a pass when one is
 * due; placement_loop_new, _free, _ready, _stats and _observe
 * (controller/placement_loop.h). Not here: what any phase does.
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "kube_curl.h"
#include "kube_path.h"
#include "mlog.h"
#include "../watch_set.h"

/* The phases of a pass, in order, each over the same context (struct
 * pass) and each taking the lock for what it touches (tmux's cmd_entry
 * table is the model: a phase is one entry). */
static void (*const pass_phases[])(struct pass *p) = {
	placement_phase_records, /* the records of JobSets not read yet */
	placement_phase_clear, /* Jobs pinned by the old record of JobSets placed again */
	placement_phase_topology, /* read when anything is to be placed or moved */
	placement_phase_decide, /* under the lock: placements, relocations, moves */
	placement_phase_resume, /* outside it: JobSets recorded before, resumed */
	placement_phase_act, /* placed, or told why they wait */
	placement_phase_relocate, /* suspended to be placed again */
	placement_phase_move, /* Jobs moved alone */
	placement_phase_retire, /* moved Jobs deleted when due */
};

static void run_pass(struct placement_loop *loop)
{
	struct pass p = { .loop = loop, .started = now_s() };

	p.top.store.chunk = 4096;
	for (size_t i = 0; i < sizeof(pass_phases) / sizeof(pass_phases[0]); i++)
		pass_phases[i](&p);
	for (size_t i = 0; i < p.action_count; i++)
		free(p.actions[i].record);
	for (size_t i = 0; i < p.move_count; i++)
		free(p.moves[i].record);
	free(p.moves);
	free(p.relocations);
	free(p.recorded.items);
	free(p.actions);
	free(p.pending);
	topo_store_free(&p.top.store);
}

int placement_loop_run(struct placement_loop *loop, atomic_int *stop, char **cause)
{
	struct watch_set cluster = { 0 };
	struct watch_spec nodes = { .client = loop->api[API_NODES].client,
				    .informer = loop->informers[WATCH_NODES],
				    .path = "/api/v1/nodes",
				    .page_size = PAGE_SIZE };
	int err = 0, watch_err = 0, cluster_err = 0;
	double last = 0;

	/* Every request of the loop ends at once on a stop. */
	for (int i = 0; i < API_COUNT; i++)
		if (loop->api[i].client)
			kube_client_set_stop(loop->api[i].client, stop);
	/* The JobSets first; every Node and bound pod only once a JobSet asks
	 * for a placement: a cluster that uses the gang start alone does not
	 * pay for watching every pod. Shared watches run with the gang loop;
	 * its own, here (the pod watch waits for the loop to join it). */
	watch_set_add(&cluster, &nodes);
	if (loop->own_watches && !(err = watch_hub_start(loop->jobset_watch, stop, cause)))
		err = watch_hub_start(loop->pod_watch, stop, cause);
	while (!err && !atomic_load(stop)) {
		struct timespec until;
		int due, ready, wanted;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += PLACEMENT_COALESCE_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		muster_lock(&loop->lock);
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
		muster_unlock(&loop->lock);
		placement_report_skipped(loop);
		if (wanted) {
			mlog(MLOG_INFO, "placement-watching",
			     "reason=\"a JobSet asks for a placement\" watches=\"nodes, "
			     "bound pods\"");
			if ((cluster_err = watch_set_start(&cluster, stop, cause)) != 0)
				break;
			watch_hub_join(loop->pod_watch, loop->pod_consumer);
		}
		if (!due || now_s() - last < PLACEMENT_COALESCE_MS / 1e3) {
			struct timespec pause = { 0, 20 * 1000000L };

			nanosleep(&pause, NULL);
			continue;
		}
		last = now_s();
		run_pass(loop);
	}
	if (loop->own_watches) {
		int pod_err;

		watch_hub_stop(loop->jobset_watch);
		watch_hub_stop(loop->pod_watch);
		watch_err = watch_hub_wait(loop->jobset_watch, err || cluster_err ? NULL : cause);
		pod_err = watch_hub_wait(loop->pod_watch, err || cluster_err || watch_err ? NULL : cause);
		if (!watch_err)
			watch_err = pod_err;
	}
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
	if (loop->own_watches) {
		watch_hub_free(loop->jobset_watch);
		watch_hub_free(loop->pod_watch);
	}
	for (int i = 0; i < WATCH_COUNT; i++)
		kube_informer_free(loop->informers[i]);
	for (int i = 0; i < API_COUNT; i++)
		kube_client_free(loop->api[i].client);
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
	if (o->transport)
		return kube_client_new(cfg, o->transport, o->transport_ctx, NULL, &api->client, cause);
	return kube_client_open(cfg, &api->client, cause);
}

/* JobSets of its namespace (all without one). */
static int wants_jobset(void *arg, const cJSON *object)
{
	const struct placement_loop *loop = arg;

	return !loop->namespace || strcmp(meta_string(object, "namespace"), loop->namespace) == 0;
}

/* Bound pods (what its own watch's field selector asks). */
static int wants_pod(void *arg, const cJSON *object)
{
	const cJSON *node = kjson_member(kjson_member(object, "spec"), "nodeName");

	(void)arg;
	return cJSON_IsString(node) && node->valuestring[0] != '\0';
}

/* Its JobSet consumer (from the start) and pod consumer (joined once a
 * JobSet asks for a placement) on the process's watches, or on watches of
 * its own. */
static int subscribe(struct placement_loop *loop, const struct placement_options *o, char **cause)
{
	char jobsets[KUBE_PATH_MAX], all_jobsets[KUBE_PATH_MAX];
	struct watch_hub_consumer_spec jobset_spec = { .informer = loop->informers[WATCH_JOBSETS],
						       .path = jobsets,
						       .wants = wants_jobset,
						       .arg = loop };
	struct watch_hub_consumer_spec pod_spec = { .informer = loop->informers[WATCH_PODS],
						    .path = "/api/v1/pods",
						    .selectors = { .field = "spec.nodeName!=" },
						    .wants = wants_pod,
						    .arg = loop };
	int err;

	/* The namespace was checked above. */
	if ((err = kube_path(jobsets, sizeof(jobsets), &KUBE_JOBSETS, loop->namespace, NULL, cause)) ||
	    (err = kube_path(all_jobsets, sizeof(all_jobsets), &KUBE_JOBSETS, NULL, NULL, cause)))
		return err;
	if (!loop->own_watches) {
		loop->jobset_watch = o->jobset_watch;
		loop->pod_watch = o->pod_watch;
	} else if ((err = watch_hub_new(loop->api[API_JOBSETS].client, all_jobsets, PAGE_SIZE,
					&loop->jobset_watch, cause)) ||
		   (err = watch_hub_new(loop->api[API_PODS].client, "/api/v1/pods", PAGE_SIZE,
					&loop->pod_watch, cause))) {
		return err;
	}
	if (watch_hub_add(loop->jobset_watch, &jobset_spec, 1) < 0 ||
	    (loop->pod_consumer = watch_hub_add(loop->pod_watch, &pod_spec, 0)) < 0)
		return cause_err(cause, MUSTER_EINVAL, "cannot subscribe to the watches");
	return 0;
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
		return cause_err(cause, MUSTER_EINVAL, "--namespace must be a DNS-1123 label");
	}
	if (o->topology && *o->topology && !kube_dns_subdomain(o->topology, KUBE_NAME_MAX)) {
		free(loop);
		return cause_err(cause, MUSTER_EINVAL,
				 "--placement-topology must be a Kubernetes object name");
	}
	if (!loop)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the placement loop");
	pthread_mutex_init(&loop->lock, NULL);
	pthread_cond_init(&loop->cond, NULL);
	loop->hypernodes = o->hypernodes;
	loop->replace_after = o->replace_after_s;
	loop->balanced = o->balanced;
	loop->hold_s = o->hold_ms ? (double)o->hold_ms / 1e3 : RECORD_CACHE_WAIT_S;
	loop->namespace = copy_or_null(o->namespace);
	loop->levels = copy_or_null(o->levels);
	loop->topology = copy_or_null(o->topology);
	loop->resources = strdup(o->resources && *o->resources ? o->resources : PLACEMENT_RESOURCES_DEFAULT);
	if (!loop->resources) {
		placement_loop_free(loop);
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the placement loop");
	}
	for (char *tok = strtok_r(loop->resources, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (loop->resource_count == TOPO_RESOURCES_MAX) {
			placement_loop_free(loop);
			return cause_err(cause, MUSTER_EINVAL, "--placement-resources: at most %d resources",
					 TOPO_RESOURCES_MAX);
		}
		loop->resource_names[loop->resource_count++] = tok;
	}
	if (topo_cache_new(loop->resource_names, loop->resource_count, &loop->cache, cause)) {
		placement_loop_free(loop);
		return MUSTER_EINVAL;
	}
	loop->own_watches = !o->jobset_watch || !o->pod_watch;
	for (int i = 0; i < API_COUNT && !err; i++)
		if (loop->own_watches || (i != API_PODS && i != API_JOBSETS))
			err = api_new(cfg, o, &loop->api[i], cause);
	placement_mirror_handlers(handlers);
	for (int i = 0; i < WATCH_COUNT && !err; i++) {
		handlers[i].arg = loop;
		err = kube_informer_new(&handlers[i], &loop->informers[i], cause);
	}
	if (!err)
		err = subscribe(loop, o, cause);
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

	muster_lock(&loop->lock);
	for (int i = 0; i < WATCH_COUNT; i++)
		if (!loop->listed[i] && ready && (i == WATCH_JOBSETS || loop->cluster_watching)) {
			snprintf(reason, size, "placement: the %s are not listed yet", names[i]);
			ready = 0;
		}
	muster_unlock(&loop->lock);
	return ready;
}

void placement_loop_stats(struct placement_loop *loop, struct placement_stats *out)
{
	muster_lock(&loop->lock);
	*out = loop->stats;
	muster_unlock(&loop->lock);
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
