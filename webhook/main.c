/*
 * muster-webhook: the admission webhook that gives a group-scheduled JobSet
 * its barrier. Parses the flags, serves the routes of webhook.h over HTTPS
 * (lib/http/http_serve: libmicrohttpd and GnuTLS, the certificate reloaded when
 * its files change) until SIGTERM or SIGINT. See webhook/webhook.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "flag.h"
#include "http_serve.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_curl.h"
#include "kube_error.h"
#include "kube_event.h"
#include "metrics.h"
#include "mlog.h"
#include "quantity.h"
#include "muster_api.h"
#include "webhook.h"

#define DEFAULT_LISTEN ":8443"
#define DEFAULT_CONTROLLER_USER "system:serviceaccount:muster-system:muster-controller"
#define DEFAULT_IMAGE "ghcr.io/muster-dev/muster-barrier:" MUSTER_VERSION
/* An AdmissionReview of an UPDATE carries the object twice, and etcd holds
 * objects up to 1.5 MiB: 4 MiB is room for both and the envelope. */
#define DEFAULT_BODY_MAX (4u * 1024u * 1024u)

static atomic_int stop_requested;
static atomic_int stopping;

/* /readyz: ready until SIGTERM, then not, so that endpoints drop this
 * replica while it still answers the requests already routed to it. */
static int ready_check(void *arg, char *reason, size_t reason_size)
{
	(void)arg;
	if (!atomic_load(&stopping))
		return 0;
	snprintf(reason, reason_size, "shutting down");
	return 1;
}

static const char usage_head[] =
	"usage: muster-webhook --tls-cert-file PATH --tls-key-file PATH [flags]\n"
	"\n"
	"Admission webhook for jobset.x-k8s.io/v1alpha2 JobSets with groupSchedulingConfig (or the\n"
	"annotation " MUSTER_ANNOTATION_GROUP_TIMEOUT "): POST /mutate injects the barrier init\n"
	"container, its ConfigMap volume and the pod label; POST /validate checks the settings.\n"
	"A JobSet with a topology request is suspended by /mutate until muster-controller has\n"
	"placed it; POST /pin gives each of its pods the nodeSelector of its placement of record.\n"
	"GET /healthz and /readyz are served on the same port; /metrics only on --metrics-addr\n"
	"(never on the admission port, which every pod of the cluster may reach).\n"
	"\n";
static const char usage_tail[] =
	"  --help, --version\n"
	"\n"
	"Exit codes: 0 stopped by SIGTERM/SIGINT, 1 could not serve (cause logged), 2 bad flags.\n";

/* A Kubernetes quantity (lib/base/quantity.h) for the barrier's requests:
 * the apiserver checks it again at the pod's creation; this catches typos at
 * start instead. */
static int quantity_ok(const char *q)
{
	return quantity_parse(q) >= 0;
}

static const char *image_problem(const char *value)
{
	return !value[0] || strpbrk(value, " \t\n") ? "not an image reference" : NULL;
}

static const char *pull_policy_problem(const char *value)
{
	return strcmp(value, "Always") && strcmp(value, "IfNotPresent") && strcmp(value, "Never")
		       ? "not Always, IfNotPresent or Never"
		       : NULL;
}

static const char *cpu_problem(const char *value)
{
	return quantity_ok(value) ? NULL : "not a quantity such as 10m";
}

static const char *memory_problem(const char *value)
{
	return quantity_ok(value) ? NULL : "not a quantity such as 16Mi";
}

static const char *memory_limit_problem(const char *value)
{
	return !value[0] || quantity_ok(value) ? NULL : "not a quantity such as 32Mi";
}

/* The webhook's own Pod (downward API: POD_NAME, POD_NAMESPACE, POD_UID),
 * which certificate Events are about, and a client of their own (the pod
 * route's is used by the worker threads). */
struct own_pod {
	struct kube_client *api;
	const char *namespace, *name, *uid;
};

/* tls-certificate-expiring: also a Warning Event on the webhook's Pod, for
 * `kubectl describe pod` and event-based alerting. */
static void certificate_expiring(void *arg, const char *subject, const char *not_after, long long days_left)
{
	const struct own_pod *p = arg;
	const struct kube_event_object pod = { "v1", "Pod", p->namespace, p->name, p->uid };
	char message[700];

	snprintf(
		message, sizeof(message),
		"The serving certificate %s expires at %s (%lld days left): renew it (deploy/gen-certs.sh "
		"--renew, or check cert-manager). Once it has expired the apiserver cannot call the webhook, "
		"and with failurePolicy Fail no JobSet can be created.",
		subject, not_after, days_left);
	kube_event_post(p->api, &pod, "muster-webhook", "CertificateExpiring", 1, message);
}

/* ---- flags ---- */

struct settings {
	struct webhook_options options;
	struct http_serve_options serve;
	const char *listen, *metrics_addr, *health_addr, *kubeconfig;
	unsigned long shutdown_delay, reader_count, pin_deadline_ms;
};

/* Parses the flags into *s: -1 to run, else the exit code. */
static int parse_flags(int argc, char **argv, struct settings *s)
{
	unsigned long threads = s->serve.threads, connections = s->serve.connections_max,
		      idle = s->serve.idle_seconds, head_seconds = s->serve.head_seconds,
		      body_seconds = s->serve.body_seconds, body_max = s->serve.body_max,
		      barrier_port = s->options.barrier.barrier_port;
	const struct flag_def flags[] = {
		{ FLAG_SECTION, NULL, NULL, "Serving", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--tls-cert-file", "PATH",
		  "PEM certificate (chain) of the HTTPS server; required", 0, 0, NULL,
		  &s->serve.tls_cert_file },
		{ FLAG_TEXT, "--tls-key-file", "PATH",
		  "its PEM private key; required. Both are reloaded when their\n"
		  "files change (e.g. a renewed Secret): no restart needed",
		  0, 0, NULL, &s->serve.tls_key_file },
		{ FLAG_TEXT, "--listen", "[A:]PORT", "address to serve on (default " DEFAULT_LISTEN ")", 0, 0,
		  NULL, &s->listen },
		{ FLAG_NUMBER, "--threads", "N", "worker threads, 1..64 (default 8)", 1, 64, NULL, &threads },
		{ FLAG_NUMBER, "--max-connections", "N",
		  "open connections at most, 1..10000 (default 512); past 7/8\n"
		  "of it a new one closes the oldest idle or half-open one",
		  1, 10000, NULL, &connections },
		{ FLAG_NUMBER, "--head-timeout", "S",
		  "close a new connection whose TLS handshake and first request\n"
		  "line and headers take longer, 1..60 (default 3)",
		  1, 60, NULL, &head_seconds },
		{ FLAG_NUMBER, "--idle-timeout", "S",
		  "close a kept-alive connection idle this long, 1..3600 (default 60)", 1, 3600, NULL,
		  &idle },
		{ FLAG_NUMBER, "--body-timeout", "S",
		  "close a connection whose request body is still arriving\n"
		  "this long after its headers, 1..3600 (default 10)",
		  1, 3600, NULL, &body_seconds },
		{ FLAG_NUMBER, "--max-body-bytes", "N", "largest AdmissionReview accepted (default 4194304)",
		  4096, 64ul * 1024 * 1024, NULL, &body_max },
		{ FLAG_TEXT, "--metrics-addr", "[A:]PORT",
		  "serve /metrics (and /healthz, /readyz) over plain HTTP here;\n"
		  "the only place /metrics is served (default 0: off)",
		  0, 0, NULL, &s->metrics_addr },
		{ FLAG_TEXT, "--health-addr", "[A:]PORT",
		  "also serve /healthz and /readyz alone over plain HTTP, with\n"
		  "threads of their own: kubelet's probes never wait behind\n"
		  "admission work (default 0: off)",
		  0, 0, NULL, &s->health_addr },
		{ FLAG_TEXT, "--kubeconfig", "PATH",
		  "API access for the pod route (reads placement records);\n"
		  "default: the in-cluster service account, else none",
		  0, 0, NULL, &s->kubeconfig },
		{ FLAG_NUMBER, "--pin-readers", "N",
		  "placement records read at once, each its own connection, 0..64\n"
		  "(default 0: one per --threads, so that a lookup never waits\n"
		  "for a reader: a slow read of one JobSet's record holds up only\n"
		  "its own thread)",
		  0, RECORD_CACHE_READERS_MAX, NULL, &s->reader_count },
		{ FLAG_NUMBER, "--pin-deadline-ms", "MS",
		  "answer every pod and Job at /pin within this, refusing\n"
		  "(the Job controller retries) when its record cannot be read\n"
		  "in time; below the webhook's timeoutSeconds, 500..30000\n"
		  "(default "
		  "3000"
		  ")",
		  500, 30000, NULL, &s->pin_deadline_ms },
		{ FLAG_TEXT, "--controller-user", "NAME",
		  "the user muster-controller acts as: only it marks a JobSet placed\n"
		  "(default " DEFAULT_CONTROLLER_USER ")",
		  0, 0, NULL, &s->options.controller_user },
		{ FLAG_SWITCH, "--quiet", NULL, "log denials and errors only, not every admission", 0, 0,
		  NULL, &s->options.quiet },
		{ FLAG_NUMBER, "--shutdown-delay", "S",
		  "on SIGTERM, fail /readyz and keep serving this long before\n"
		  "stopping, while the Service drops this replica (default 5)",
		  0, 300, NULL, &s->shutdown_delay },
		{ FLAG_SECTION, NULL, NULL, "The injected barrier", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--barrier-image", "IMAGE", "default " DEFAULT_IMAGE, 0, 0, image_problem,
		  &s->options.barrier.barrier_image },
		{ FLAG_TEXT, "--barrier-pull-policy", "P", "Always, IfNotPresent (default) or Never", 0, 0,
		  pull_policy_problem, &s->options.barrier.image_pull_policy },
		{ FLAG_NUMBER, "--barrier-port", "N",
		  "port the barrier listens on for the pushed release\n"
		  "(default " MUSTER_API_TEXT(
			  MUSTER_BARRIER_PORT) "; 0: no push, release through the volume only)",
		  0, 65535, NULL, &barrier_port },
		{ FLAG_TEXT, "--barrier-cpu", "Q", "CPU request (default 10m)", 0, 0, cpu_problem,
		  &s->options.barrier.cpu_request },
		{ FLAG_TEXT, "--barrier-memory", "Q", "memory request (default 16Mi)", 0, 0, memory_problem,
		  &s->options.barrier.memory_request },
		{ FLAG_TEXT, "--barrier-memory-limit", "Q", "memory limit (default 32Mi; \"\" for none)", 0,
		  0, memory_limit_problem, &s->options.barrier.memory_limit },
	};
	int code = daemon_exit_code(flag_parse(argc, argv, "muster-webhook", MUSTER_VERSION, usage_head,
					       flags, sizeof(flags) / sizeof(flags[0]), usage_tail));

	if (code >= 0)
		return code;
	s->serve.threads = (unsigned)threads;
	s->serve.connections_max = (unsigned)connections;
	s->serve.idle_seconds = (unsigned)idle;
	s->serve.head_seconds = (unsigned)head_seconds;
	s->serve.body_seconds = (unsigned)body_seconds;
	s->serve.body_max = (size_t)body_max;
	s->options.barrier.barrier_port = (unsigned)barrier_port;
	if (!s->serve.tls_cert_file || !s->serve.tls_key_file) {
		fprintf(stderr,
			"muster-webhook: --tls-cert-file and --tls-key-file are required: the apiserver "
			"calls admission webhooks over HTTPS only (deploy/gen-certs.sh makes a pair)\n");
		return 2;
	}
	return -1;
}

/* ---- API access ---- */

struct api {
	struct kube_config cfg;
	int have_cfg;
	struct kube_client *readers[RECORD_CACHE_READERS_MAX];
	struct own_pod own;
};

/* The pod route reads placement records through the API, with readers of
 * their own; the certificate's Events have a client of their own. Without
 * any configuration it still serves, and refuses pinned pods saying why. */
static int connect_api(struct settings *s, struct api *api, char **cause)
{
	int err = s->kubeconfig ? kube_config_from_kubeconfig(s->kubeconfig, NULL, &api->cfg, cause)
				: kube_config_in_cluster(NULL, &api->cfg, cause);

	if (err && s->kubeconfig)
		return err;
	if (err) {
		mlog(MLOG_INFO, "no-api-access",
		     "reason=\"%s\" effect=\"pods of placed JobSets are refused\"", *cause ? *cause : "");
		free(*cause);
		*cause = NULL;
		return 0;
	}
	api->have_cfg = 1;
	/* A pod's admission waits on this read: short, not retried (the
	 * apiserver's webhook timeout is 5 s; the Job controller retries a
	 * refused pod). */
	/* Half the deadline (1.5 s by default): a request can also wait behind
	 * one read of another on its worker thread (libmicrohttpd serves a
	 * thread's connections one at a time), and both must end well inside
	 * the apiserver's timeoutSeconds. */
	api->cfg.request_timeout_ms = (long)s->pin_deadline_ms / 2;
	api->cfg.max_retries = 0;
	/* A record is a ConfigMap (1 MiB at most, its JSON escaped). */
	api->cfg.max_response_bytes = 8u * 1024u * 1024u;
	if (!s->reader_count)
		s->reader_count = s->serve.threads;
	for (unsigned long i = 0; i < s->reader_count; i++)
		if ((err = kube_client_open(&api->cfg, &api->readers[i], cause)))
			return err;
	s->options.records.readers = api->readers;
	s->options.records.reader_count = s->reader_count;
	s->options.records.request_timeout_ms = (unsigned)api->cfg.request_timeout_ms;
	s->options.records.deadline_ms = (unsigned)s->pin_deadline_ms;
	api->own.namespace = getenv("POD_NAMESPACE");
	api->own.name = getenv("POD_NAME");
	api->own.uid = getenv("POD_UID") ? getenv("POD_UID") : "";
	if (api->own.namespace && *api->own.namespace && api->own.name && *api->own.name) {
		if ((err = kube_client_open(&api->cfg, &api->own.api, cause)))
			return err;
		s->serve.expiring = certificate_expiring;
		s->serve.expiring_arg = &api->own;
	}
	return 0;
}

static void api_close(struct api *api)
{
	for (size_t i = 0; i < RECORD_CACHE_READERS_MAX; i++)
		kube_client_free(api->readers[i]);
	kube_client_free(api->own.api);
	if (api->have_cfg)
		kube_config_free(&api->cfg);
}

/* ---- serving ---- */

struct servers {
	struct http_serve *admission, *metrics, *probes;
};

/* The admission routes over HTTPS (no metrics there: that port is open to
 * the whole cluster, the apiserver's address being nobody's to select),
 * /metrics on --metrics-addr, the probes on --health-addr. */
static int serve(struct settings *s, struct webhook *webhook, struct metrics_registry *registry,
		 struct http_serve_post_route posts[3], struct servers *out, char **cause)
{
	struct http_serve_routes routes = { .ready = ready_check }, health = { .ready = ready_check };
	int err;

	posts[0] = (struct http_serve_post_route){ "/mutate", "mutate", webhook_mutate, webhook };
	posts[1] = (struct http_serve_post_route){ "/validate", "validate", webhook_validate, webhook };
	posts[2] = (struct http_serve_post_route){ "/pin", "pin", webhook_pin, webhook };
	s->serve.posts = posts;
	s->serve.post_count = 3;
	s->serve.latency = registry;
	if ((err = http_serve_start_options(s->listen, &routes, &s->serve, &out->admission, cause)))
		return err;
	routes.metrics = registry;
	if (strcmp(s->metrics_addr, "0") != 0 &&
	    (err = http_serve_start(s->metrics_addr, &routes, &out->metrics, cause)))
		return err;
	if (strcmp(s->health_addr, "0") != 0 &&
	    (err = http_serve_start(s->health_addr, &health, &out->probes, cause)))
		return err;
	mlog(MLOG_INFO, "started",
	     "listen=%s port=%u threads=%u barrier_port=%u barrier_timeout_default=%u metrics=%s", s->listen,
	     http_serve_port(out->admission), s->serve.threads, s->options.barrier.barrier_port,
	     GROUP_CONFIG_TIMEOUT_DEFAULT, strcmp(s->metrics_addr, "0") ? s->metrics_addr : "off");
	return 0;
}

/* After SIGTERM: /readyz fails, and the webhook keeps answering for
 * `seconds` while the Service drops this replica. */
static void drain(unsigned long seconds)
{
	struct timespec delay = { .tv_sec = (time_t)seconds, .tv_nsec = 0 };

	atomic_store(&stopping, 1);
	if (!seconds)
		return;
	mlog(MLOG_INFO, "stopping", "serving_for_s=%lu", seconds);
	while (nanosleep(&delay, &delay) != 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct settings s = {
		.options = { .controller_user = DEFAULT_CONTROLLER_USER,
			     .barrier = { .barrier_image = DEFAULT_IMAGE,
					  .image_pull_policy = "IfNotPresent",
					  .barrier_port = MUSTER_BARRIER_PORT,
					  .cpu_request = "10m",
					  .memory_request = "16Mi",
					  .memory_limit = "32Mi" } },
		.serve = { .threads = 8,
			   .connections_max = 512,
			   .idle_seconds = 60,
			   .head_seconds = HTTP_SERVE_HEAD_SECONDS,
			   .body_seconds = 10,
			   .body_max = DEFAULT_BODY_MAX },
		.listen = DEFAULT_LISTEN,
		.metrics_addr = "0",
		.health_addr = "0",
		.shutdown_delay = 5,
		.reader_count = 0,
		.pin_deadline_ms = RECORD_CACHE_DEADLINE_MS,
	};
	struct api api = { 0 };
	struct servers servers = { 0 };
	struct http_serve_post_route posts[3];
	struct metrics_registry *registry = NULL;
	struct webhook *webhook = NULL;
	char *cause = NULL, quoted[512];
	int err, exit_code = parse_flags(argc, argv, &s);

	if (exit_code >= 0)
		return exit_code;
	mlog_init("webhook", NULL, NULL);
	daemon_signals(&stop_requested);
	if ((err = metrics_registry_new(0, &registry)))
		cause = strdup("out of memory");
	else if (!(err = connect_api(&s, &api, &cause)) && !(err = webhook_new(&s.options, &webhook, &cause)))
		err = serve(&s, webhook, registry, posts, &servers, &cause);
	if (err) {
		mlog(MLOG_ERROR, "exit", "err=%d cause=%s", err,
		     mlog_quote(quoted, sizeof(quoted), cause ? cause : "", cause ? strlen(cause) : 0));
		exit_code = 1;
	} else {
		daemon_wait(&stop_requested);
		drain(s.shutdown_delay);
		mlog(MLOG_INFO, "stopped", NULL);
		exit_code = 0;
	}
	free(cause);
	http_serve_stop(servers.probes);
	http_serve_stop(servers.metrics);
	http_serve_stop(servers.admission);
	webhook_free(webhook);
	api_close(&api);
	metrics_registry_free(registry);
	return exit_code;
}
