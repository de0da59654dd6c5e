/*
 * muster-controller: gives a group-scheduled JobSet a gang start. Parses the
 * flags, loads the API configuration, serves /metrics, /healthz and /readyz,
 * takes the leader Lease (unless --leader-elect=false) and runs the
 * group-start loop (controller_group) until SIGTERM or SIGINT, or until the
 * Lease is lost. See controller/controller.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller_group.h"
#include "placement_loop.h"
#include "flag.h"
#include "http_serve.h"
#include "kube_config.h"
#include "kube_curl.h"
#include "kube_error.h"
#include "kube_lease.h"
#include "leader.h"
#include "daemon.h"
#include "metrics.h"
#include "muster_api.h"
#include "mlog.h"

static atomic_int stop_requested;

/* The largest API answer the controller reads (kube_list shrinks pages to it). */
#define CONTROLLER_MAX_RESPONSE (8u * 1024u * 1024u)

static const char usage_head[] =
	"usage: muster-controller [flags]\n"
	"\n"
	"Releases the barrier of every group-scheduled JobSet once all its pods have started:\n"
	"writes the ConfigMap <jobset>" MUSTER_CONFIGMAP_SUFFIX " (data." MUSTER_CONFIGMAP_KEY_STARTED
	") and pushes the release\n"
	"to each pod's barrier at POD_IP:push-port.\n"
	"\n";
static const char usage_tail[] =
	"  --help, --version        this text; the version\n"
	"\n"
	"Environment: POD_NAME (the leader identity; default hostname_pid), POD_NAMESPACE.\n"
	"Exit codes: 0 stopped by SIGTERM/SIGINT; 1 configuration, a watch that failed for good\n"
	"(401/403, 404: is the JobSet CRD installed?), or the Lease lost; 2 bad flags.\n";

/* ---- metrics ---- */

struct app {
	struct controller_group *group;
	struct placement_loop *placement; /* NULL with --placement=false */
	struct metrics_histogram *placement_latency;
	/* Its lease is NULL without leader election; set once by leader_take,
	 * read by the HTTP servers' threads (/readyz, /metrics), which may
	 * already run. */
	struct leader leader;
	struct metrics_histogram *release_written, *release_pushed;
};

static void observe_released(void *arg, double seconds)
{
	struct app *app = arg;

	metrics_histogram_observe(app->release_written, seconds);
}

static void observe_placed(void *arg, double seconds)
{
	struct app *app = arg;

	metrics_histogram_observe(app->placement_latency, seconds);
}

static void observe_pushed(void *arg, double seconds)
{
	struct app *app = arg;

	metrics_histogram_observe(app->release_pushed, seconds);
}

struct collect_jobsets {
	struct metrics_writer *writer;
	size_t jobsets;
	uint64_t records, bytes;
};

static void collect_jobset(void *arg, const struct controller_jobset_view *view)
{
	struct collect_jobsets *c = arg;
	struct metrics_label labels[] = { { "namespace", view->namespace }, { "jobset", view->name } };
	const struct group_decision *d = &view->decision;

	c->jobsets++;
	c->records += view->pod_records;
	c->bytes += view->pod_bytes;
	metrics_write_gauge(c->writer, "muster_group_pods_started",
			    "Pods of the current restart attempt counted as started", labels, 2,
			    (double)d->started);
	metrics_write_gauge(c->writer, "muster_group_pods_expected",
			    "Pods the group waits for (the target replicated jobs' count)", labels, 2,
			    (double)d->expected);
	metrics_write_gauge(c->writer, "muster_group_attempt", "The JobSet's current restart attempt", labels,
			    2, (double)d->attempt);
	metrics_write_gauge(c->writer, "muster_group_released", "1 when the current attempt is released",
			    labels, 2, d->action == GROUP_ACTION_RELEASED ? 1.0 : 0.0);
	metrics_write_gauge(c->writer, "muster_group_barrier_timeouts",
			    "Pods of the current attempt whose barrier timed out", labels, 2,
			    (double)d->timeouts);
	metrics_write_gauge(c->writer, "muster_group_timeout_seconds",
			    "The group's timeoutAfterSeconds (0: not given, the webhook's default applies)",
			    labels, 2, (double)view->timeout_s);
	metrics_write_gauge(c->writer, "muster_group_waiting_since_timestamp_seconds",
			    "Unix time the current attempt began waiting for its pods (0: released or idle)",
			    labels, 2, (double)view->waiting_since);
}

static int collect(void *arg, struct metrics_writer *w)
{
	static const char *const api_names[CONTROLLER_API_COUNT] = { "jobsets", "pods", "writes", "events" };
	struct app *app = arg;
	struct controller_group_stats stats;
	struct collect_jobsets jobsets = { .writer = w };
	struct metrics_label result[1] = { { "result", NULL } };
	const char *const results[] = { "ok", "refused", "unreachable", "timeout", "pending", "passed" };

	controller_group_stats(app->group, &stats);
	metrics_write_counter(w, "muster_releases_total", "Releases written (ConfigMap data.started)", NULL,
			      0, (double)stats.releases);
	metrics_write_counter(w, "muster_release_failures_total",
			      "Release writes that failed and were retried", NULL, 0,
			      (double)stats.release_failures);
	metrics_write_counter(w, "muster_configmap_conflicts_total",
			      "Releases held back by a ConfigMap this JobSet does not own", NULL, 0,
			      (double)stats.configmap_conflicts);
	metrics_write_counter(w, "muster_barrier_timeouts_total",
			      "Pods whose barrier timed out (exit code 3)", NULL, 0,
			      (double)stats.barrier_timeouts);
	{
		const uint64_t values[] = { stats.push_ok,	stats.push_refused, stats.push_unreachable,
					    stats.push_timeout, stats.push_pending, stats.push_passed };

		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			result[0].value = results[i];
			metrics_write_counter(w, "muster_push_results_total", "Barriers pushed, by outcome",
					      result, 1, (double)values[i]);
		}
	}
	metrics_write_counter(w, "muster_push_skipped_total", "Releases without a usable token (no push)",
			      NULL, 0, (double)stats.push_skipped);
	metrics_write_counter(w, "muster_side_jobs_dropped_total", "Pushes or Events not made (queue full)",
			      NULL, 0, (double)stats.jobs_dropped);
	for (int a = 0; a < CONTROLLER_API_COUNT; a++) {
		const struct kube_client_stats *s = &stats.api[a];
		struct metrics_label client[2] = { { "client", api_names[a] }, { "code", NULL } };

		metrics_write_counter(w, "muster_api_requests_total", "API requests sent, retries included",
				      client, 1, (double)s->requests);
		metrics_write_counter(w, "muster_api_retries_total",
				      "API requests repeated after a transient failure", client, 1,
				      (double)s->retries);
		metrics_write_counter(w, "muster_api_list_pages_shrunk_total",
				      "LIST pages asked again with half the items, the answer too large",
				      client, 1, (double)s->list_pages_shrunk);
		for (int code = 1; code < KUBE_STATS_ERROR_SLOTS; code++) {
			if (!s->errors[code])
				continue;
			client[1].value = muster_err_name(-code);
			metrics_write_counter(w, "muster_api_errors_total", "Failed API requests by error",
					      client, 2, (double)s->errors[code]);
		}
		if (a == CONTROLLER_API_JOBSETS || a == CONTROLLER_API_PODS) {
			struct metrics_label watch[2] = { { "watch", api_names[a] },
							  { "kind", "reconnect" } };

			metrics_write_counter(
				w, "muster_watch_restarts_total",
				"Watch streams re-opened (reconnect) and re-lists after the first", watch, 2,
				s->watch_streams > 1 ? (double)(s->watch_streams - 1) : 0.0);
			watch[1].value = "relist";
			metrics_write_counter(
				w, "muster_watch_restarts_total",
				"Watch streams re-opened (reconnect) and re-lists after the first", watch, 2,
				s->relists > 1 ? (double)(s->relists - 1) : 0.0);
			metrics_write_counter(w, "muster_watch_events_total", "Watch events received", watch,
					      1, (double)s->watch_events);
		}
	}
	metrics_write_gauge(
		w, "muster_leader", "1 while this replica holds the leader Lease (or runs alone)", NULL, 0,
		!atomic_load(&app->leader.lease) || kube_lease_is_leader(atomic_load(&app->leader.lease))
			? 1.0
			: 0.0);
	if (app->placement) {
		struct placement_stats ps;

		placement_loop_stats(app->placement, &ps);
		metrics_write_gauge(w, "muster_placement_waiting", "JobSets waiting for a placement", NULL, 0,
				    (double)ps.waiting);
		{
			struct metrics_label client[1] = { { "client", "placement" } };

			metrics_write_counter(
				w, "muster_api_list_pages_shrunk_total",
				"LIST pages asked again with half the items, the answer too large", client, 1,
				(double)ps.list_pages_shrunk);
		}
		metrics_write_counter(w, "muster_placements_total",
				      "JobSets placed (record written, resumed)", NULL, 0,
				      (double)ps.placements);
		metrics_write_counter(w, "muster_placement_refusals_total",
				      "Placement refusals (a JobSet waits; counted when its reason changes)",
				      NULL, 0, (double)ps.refusals);
		metrics_write_counter(
			w, "muster_placement_relocations_total",
			"Placed JobSets placed again: pods not bound yet lost their room, or the record is gone",
			NULL, 0, (double)ps.relocations);
		metrics_write_counter(w, "muster_placement_restarts_total",
				      "Placed JobSets placed afresh for a new restart attempt", NULL, 0,
				      (double)ps.restarts);
		metrics_write_counter(
			w, "muster_placement_moves_total",
			"Jobs placed again alone: their pods not bound yet lost their room, the "
			"JobSet's other Jobs kept theirs",
			NULL, 0, (double)ps.moves);
		metrics_write_counter(w, "muster_placement_jobs_retired_total",
				      "Moved Jobs deleted for JobSet to make again, pinned by the new record",
				      NULL, 0, (double)ps.jobs_retired);
		metrics_write_counter(w, "muster_placement_write_failures_total",
				      "Record or resume writes that failed (retried)", NULL, 0,
				      (double)ps.record_failures);
		metrics_write_gauge(w, "muster_placement_decision_seconds",
				    "The last placement pass's decision time", NULL, 0, ps.last_decision_s);
		for (size_t i = 0; i < ps.domain_count; i++) {
			struct metrics_label domain[1] = { { "domain", ps.domains[i] } };

			metrics_write_gauge(
				w, "muster_placement_free_cpu_cores",
				"CPU cores free (requests) per top-level domain, promised room taken off",
				domain, 1, ps.free_cpu[i]);
			metrics_write_gauge(w, "muster_placement_nodes",
					    "Schedulable nodes per top-level domain", domain, 1,
					    ps.free_nodes[i]);
		}
	}
	controller_group_foreach(app->group, collect_jobset, &jobsets);
	metrics_write_gauge(w, "muster_jobsets_tracked", "Group-scheduled JobSets tracked", NULL, 0,
			    (double)jobsets.jobsets);
	metrics_write_gauge(w, "muster_tracked_pod_records", "Pod records held, tombstones included", NULL, 0,
			    (double)jobsets.records);
	return metrics_write_gauge(w, "muster_tracker_bytes", "Bytes the trackers hold", NULL, 0,
				   (double)jobsets.bytes);
}

static int register_metrics(struct app *app, struct metrics_registry *registry, char **cause)
{
	static const double bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
					 0.5,	1,	2.5,   5,    10,    30,	  60,  120 };
	static const char help[] =
		"Seconds from the group's last pod start to the release, by path: configmap "
		"(written) or push (every barrier answered or gave up)";
	struct metrics_label path = { "path", "configmap" };
	int err;

	err = metrics_histogram_register(registry, "muster_release_latency_seconds", help, &path, 1, bounds,
					 sizeof(bounds) / sizeof(bounds[0]), &app->release_written, cause);
	path.value = "push";
	if (!err)
		err = metrics_histogram_register(registry, "muster_release_latency_seconds", help, &path, 1,
						 bounds, sizeof(bounds) / sizeof(bounds[0]),
						 &app->release_pushed, cause);
	if (!err) {
		static const char placed_help[] =
			"Seconds from the placement pass that placed a JobSet to its record written and resume";

		err = metrics_histogram_register(registry, "muster_placement_latency_seconds", placed_help,
						 NULL, 0, bounds, sizeof(bounds) / sizeof(bounds[0]),
						 &app->placement_latency, cause);
	}
	if (!err)
		err = metrics_collector_register(registry, collect, app, cause);
	return err;
}

/* /readyz: the leader is ready once both watches have listed. A standby is
 * ready: waiting for the Lease is its job (nothing routes traffic to it;
 * readiness only gates rollouts), unless its last attempt failed (an
 * apiserver out of reach, a TLS verification failure), which it says. */
static int check_ready(void *arg, char *reason, size_t size)
{
	struct app *app = arg;

	struct kube_lease *lease = atomic_load(&app->leader.lease);

	if (lease && !kube_lease_is_leader(lease)) {
		char why[256];

		if (!kube_lease_last_failure(lease, why, sizeof(why)))
			return 0;
		snprintf(reason, size, "cannot take part in the leader election (retrying): %s", why);
		return -1;
	}
	if (!controller_group_ready(app->group, reason, size))
		return -1;
	return !app->placement || placement_loop_ready(app->placement, reason, size) ? 0 : -1;
}

/* ---- placement ---- */

struct placer {
	pthread_t thread;
	struct placement_loop *loop;
	int err;
	char *cause;
};

static void *place_main(void *arg)
{
	struct placer *p = arg;

	p->err = placement_loop_run(p->loop, &stop_requested, &p->cause);
	if (p->err)
		atomic_store(&stop_requested, 1); /* a watch failed for good: stop as the gang loop would */
	return NULL;
}

/* ---- flags ---- */

struct settings {
	struct controller_group_options group;
	struct placement_options placement;
	struct leader_settings leader;
	const char *kubeconfig, *metrics_addr, *health_addr;
	unsigned long qps, burst;
	int leader_elect, place;
};

/* Parses the flags into *s: -1 to run, else the exit code. */
static int parse_flags(int argc, char **argv, struct settings *s)
{
	unsigned long push_port = s->group.push_port, push_parallelism = s->group.push_parallelism,
		      push_timeout_ms = (unsigned long)s->group.push_target_timeout_ms;
	const struct flag_def flags[] = {
		{ FLAG_SECTION, NULL, NULL, "API server", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--kubeconfig", "PATH",
		  "kubeconfig to use (default: in-cluster service account,\n"
		  "from KUBERNETES_SERVICE_HOST/PORT and the mounted token)",
		  0, 0, NULL, &s->kubeconfig },
		{ FLAG_TEXT, "--namespace", "NS", "watch only this namespace (default: all)", 0, 0, NULL,
		  &s->group.namespace },
		{ FLAG_NUMBER, "--kube-qps", "N",
		  "client-side requests per second per client (default 50; 0: no limit)", 0, 100000, NULL,
		  &s->qps },
		{ FLAG_NUMBER, "--kube-burst", "N", "burst above that rate (default 100)", 1, 100000, NULL,
		  &s->burst },
		{ FLAG_SECTION, NULL, NULL, "Release", 0, 0, NULL, NULL },
		{ FLAG_NUMBER, "--push-port", "N",
		  "the barrier's port (default " MUSTER_API_TEXT(MUSTER_BARRIER_PORT) ")", 1, 65535, NULL,
		  &push_port },
		{ FLAG_NUMBER, "--push-parallelism", "N", "push connections in flight, 1..4096 (default 256)",
		  1, 4096, NULL, &push_parallelism },
		{ FLAG_NUMBER, "--push-timeout-ms", "N",
		  "time per pushed pod (default 2000; the whole push gets 5x)", 1, 600000, NULL,
		  &push_timeout_ms },
		{ FLAG_SECTION, NULL, NULL,
		  "Placement (JobSets with a topology request; docs/placement-live.md)", 0, 0, NULL, NULL },
		{ FLAG_BOOL, "--placement", "BOOL",
		  "true (default): place the JobSets muster-webhook gated; false: leave them waiting", 0, 0,
		  NULL, &s->place },
		{ FLAG_TEXT, "--placement-levels", "L1,L2,...",
		  "the topology as node labels, outermost first (default: the\ncluster's only Kueue Topology, else its HyperNodes)",
		  0, 0, NULL, &s->placement.levels },
		{ FLAG_TEXT, "--placement-topology", "NAME", "the levels of the Kueue Topology NAME", 0, 0,
		  NULL, &s->placement.topology },
		{ FLAG_SWITCH, "--placement-hypernodes", NULL,
		  "the topology as the cluster's Volcano HyperNodes", 0, 0, NULL, &s->placement.hypernodes },
		{ FLAG_TEXT, "--placement-resources", "R1,R2,...",
		  "resources counted, at most 8 (default " PLACEMENT_RESOURCES_DEFAULT ")", 0, 0, NULL,
		  &s->placement.resources },
		{ FLAG_SWITCH, "--placement-balanced", NULL,
		  "Kueue's balanced placement for preferred levels by default (a JobSet's\n"
		  "muster.dev/topology-balanced \"true\" or \"false\" decides for it)",
		  0, 0, NULL, &s->placement.balanced },
		{ FLAG_NUMBER, "--placement-replace-after", "S",
		  "seconds pods pinned but not bound may have no room in their\n"
		  "domain (nodes not Ready, cordoned, tainted, full) before their\n"
		  "Job is moved alone, or the JobSet placed again when its Jobs are\n"
		  "tied together (default " MUSTER_API_TEXT(
			  PLACEMENT_REPLACE_AFTER_S) ", Kueue's; a domain with no node left: at once)",
		  0, 86400, NULL, &s->placement.replace_after_s },
		{ FLAG_SECTION, NULL, NULL,
		  "Leader election (a coordination.k8s.io/v1 Lease; one replica acts, the others wait)", 0, 0,
		  NULL, NULL },
		{ FLAG_BOOL, "--leader-elect", "BOOL", "true (default) or false: act at once, alone", 0, 0,
		  NULL, &s->leader_elect },
		{ FLAG_TEXT, "--lease-name", "NAME", "default muster-controller", 0, 0, NULL,
		  &s->leader.name },
		{ FLAG_TEXT, "--lease-namespace", "NS",
		  "default $POD_NAMESPACE, else the --namespace value, else default", 0, 0, NULL,
		  &s->leader.namespace },
		{ FLAG_NUMBER, "--lease-duration", "S",
		  "seconds a standby waits before taking an unrenewed lease (default 15)", 2, 86400, NULL,
		  &s->leader.lease_s },
		{ FLAG_NUMBER, "--renew-deadline", "S",
		  "seconds the leader keeps trying to renew before it stops (default 10)", 1, 86400, NULL,
		  &s->leader.renew_s },
		{ FLAG_NUMBER, "--retry-period", "S", "seconds between tries (default 2)", 1, 86400, NULL,
		  &s->leader.retry_s },
		{ FLAG_SECTION, NULL, NULL, "Endpoints", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--metrics-addr", "[A:]PORT",
		  "serve /metrics, /healthz, /readyz over plain HTTP (default 127.0.0.1:8080,\n"
		  "loopback only: give :8080 for Prometheus, behind a NetworkPolicy; 0: off)",
		  0, 0, NULL, &s->metrics_addr },
		{ FLAG_TEXT, "--health-addr", "[A:]PORT",
		  "also serve /healthz and /readyz alone over plain HTTP, for the kubelet's\n"
		  "probes (default 0: off; deploy/ uses :8081)",
		  0, 0, NULL, &s->health_addr },
	};
	int code = daemon_exit_code(flag_parse(argc, argv, "muster-controller", MUSTER_VERSION, usage_head,
					       flags, sizeof(flags) / sizeof(flags[0]), usage_tail));

	if (code >= 0)
		return code;
	s->group.push_port = (uint16_t)push_port;
	s->group.push_parallelism = push_parallelism;
	s->group.push_target_timeout_ms = (int)push_timeout_ms;
	s->group.push_total_timeout_ms = (int)push_timeout_ms * 5;
	if (s->leader_elect &&
	    !(s->leader.retry_s < s->leader.renew_s && s->leader.renew_s < s->leader.lease_s)) {
		fprintf(stderr,
			"muster-controller: need --retry-period < --renew-deadline < --lease-duration\n");
		return 2;
	}
	if (!!s->placement.levels + !!s->placement.topology + s->placement.hypernodes > 1) {
		fprintf(stderr,
			"muster-controller: give at most one of --placement-levels, --placement-topology "
			"and --placement-hypernodes\n");
		return 2;
	}
	return -1;
}

/* ---- setting up ---- */

/* The API configuration, the loops and their metrics. */
static int build(struct app *app, struct settings *s, struct kube_config *cfg,
		 struct controller_group_observer *observer, struct metrics_registry **registry, char **cause)
{
	int err = s->kubeconfig ? kube_config_from_kubeconfig(s->kubeconfig, NULL, cfg, cause)
				: kube_config_in_cluster(NULL, cfg, cause);

	if (err)
		return err;
	cfg->qps = (double)s->qps;
	cfg->burst = (unsigned)s->burst;
	/* A LIST page larger than this is asked again with half the items
	 * (kube_list): what muster keeps, not what the apiserver sends, sets
	 * its memory. One object is at most about 3 MiB (the apiserver's
	 * request limit). */
	cfg->max_response_bytes = CONTROLLER_MAX_RESPONSE;
	observer->arg = app;
	s->group.observer = observer;
	if ((err = controller_group_new(cfg, &s->group, &app->group, cause)))
		return err;
	if (s->place) {
		struct placement_observer placed = { observe_placed, app };

		s->placement.namespace = s->group.namespace;
		/* One JobSet watch and one pod watch for the process: placement
		 * subscribes to the gang loop's. */
		controller_group_watches(app->group, &s->placement.jobset_watch, &s->placement.pod_watch);
		if ((err = placement_loop_new(cfg, &s->placement, &app->placement, cause)))
			return err;
		placement_loop_observe(app->placement, &placed);
	}
	if (metrics_registry_new(0, registry) != 0 || register_metrics(app, *registry, cause) != 0)
		return cause_err(cause, MUSTER_ENOMEM, "cannot set up the metrics");
	return 0;
}

/* /metrics, /healthz, /readyz (--metrics-addr) and the probes' own port
 * (--health-addr, no /metrics). */
static int serve(struct app *app, const struct settings *s, struct metrics_registry *registry,
		 struct http_serve **server, struct http_serve **probes, char **cause)
{
	struct http_serve_routes routes = { registry, NULL, check_ready, app };
	struct http_serve_routes health = { NULL, NULL, check_ready, app }; /* /metrics: 404 */

	if ((strcmp(s->metrics_addr, "0") != 0 &&
	     http_serve_start(s->metrics_addr, &routes, server, cause)) ||
	    (strcmp(s->health_addr, "0") != 0 && http_serve_start(s->health_addr, &health, probes, cause)))
		return MUSTER_EINVAL;
	return 0;
}

/* ---- running ---- */

/* The placement loop on a thread of its own and the gang loop on this one,
 * until the stop flag; the first error of either. */
static int run(struct app *app, char **cause)
{
	struct placer placer = { .loop = app->placement };
	int placing = 0, err = 0;

	if (app->placement) {
		if (pthread_create(&placer.thread, NULL, place_main, &placer) != 0)
			return cause_err(cause, MUSTER_ENOMEM, "cannot start the placement thread");
		placing = 1;
	}
	err = controller_group_run(app->group, &stop_requested, cause);
	if (placing) {
		atomic_store(&stop_requested, 1);
		pthread_join(placer.thread, NULL);
		if (placer.err && !err) {
			err = placer.err;
			free(*cause);
			*cause = placer.cause;
			placer.cause = NULL;
		}
		free(placer.cause);
	}
	return err;
}

int main(int argc, char **argv)
{
	struct settings s = {
		.group = { .push_port = MUSTER_BARRIER_PORT,
			   .push_parallelism = 256,
			   .push_target_timeout_ms = 2000,
			   .push_total_timeout_ms = 10000 },
		.placement = { .replace_after_s = PLACEMENT_REPLACE_AFTER_S },
		.leader = { .name = "muster-controller", .lease_s = 15, .renew_s = 10, .retry_s = 2 },
		.metrics_addr = "127.0.0.1:8080",
		.health_addr = "0",
		.qps = 50,
		.burst = 100,
		.leader_elect = 1,
		.place = 1,
	};
	struct controller_group_observer observer = { observe_released, observe_pushed, NULL };
	struct app app = { 0 };
	struct kube_config cfg;
	struct metrics_registry *registry = NULL;
	struct http_serve *server = NULL, *probes = NULL;
	char *cause = NULL;
	int err, exit_code = parse_flags(argc, argv, &s);

	if (exit_code >= 0)
		return exit_code;
	exit_code = 0;
	kube_config_defaults(&cfg);
	mlog_init("controller", NULL, NULL);
	daemon_signals(&stop_requested);
	if ((err = build(&app, &s, &cfg, &observer, &registry, &cause)) ||
	    (err = serve(&app, &s, registry, &server, &probes, &cause)))
		goto out;
	if (s.leader_elect && (err = leader_take(&app.leader, &cfg, &s.leader, s.group.namespace,
						 &stop_requested, &cause)) <= 0)
		goto out; /* failed, or stopped while waiting (0) */
	mlog(MLOG_INFO, "started",
	     "namespace=%s push_port=%u push_parallelism=%zu leader_elect=%s metrics=%s health=%s",
	     s.group.namespace ? s.group.namespace : "*", s.group.push_port, s.group.push_parallelism,
	     s.leader_elect ? "true" : "false", strcmp(s.metrics_addr, "0") ? s.metrics_addr : "off",
	     strcmp(s.health_addr, "0") ? s.health_addr : "off");
	err = run(&app, &cause);
out:
	/* The loops have stopped acting: only now may another replica lead. */
	if (leader_release(&app.leader))
		exit_code = 1;
	if (err < 0) {
		mlog(MLOG_ERROR, "exit", "err=%s cause=\"%s\"", muster_err_name(err), cause ? cause : "");
		exit_code = 1;
	} else if (!exit_code) {
		mlog(MLOG_INFO, "stopped", NULL);
	}
	free(cause);
	http_serve_stop(server);
	http_serve_stop(probes);
	leader_free(&app.leader);
	controller_group_free(app.group);
	placement_loop_free(app.placement);
	metrics_registry_free(registry);
	kube_config_free(&cfg);
	return exit_code;
}
