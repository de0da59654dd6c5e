/*
 * kubectl-muster: the kubectl plugin (`kubectl muster ...`): what muster
 * says of a JobSet (status: gang start and placement; explain: the
 * controller's view and the placement now) and of the cluster's topology
 * (tree). Parses the line (kc_args), finds the kubeconfig as kubectl does
 * (kc_kubeconfig), opens the API client (TLS always verified), then runs
 * the subcommand from the table below. docs/kubectl-muster.md.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kc_args.h"
#include "kc_fetch.h"
#include "kc_kubeconfig.h"
#include "kc_status.h"
#include "kjson.h"
#include "kube_config.h"
#include "kube_curl.h"
#include "kube_error.h"
#include "kube_path.h"
#include "topo_live.h"
#include "topo_run.h"

#define PROGRAM "kubectl-muster"

/* The exit codes (kc_args_usage says them to users). */
enum {
	EXIT_SHOWN = 0,
	EXIT_FAILED = 1, /* not found, or the cluster or kubeconfig failed */
	EXIT_USAGE = 2,
	EXIT_SHOWN_BAD = 3, /* shown: the gang timed out, or placement refuses now */
};

static int print_json(cJSON *out)
{
	char *text = out ? cJSON_PrintUnformatted(out) : NULL;

	cJSON_Delete(out);
	if (!text) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		return EXIT_FAILED;
	}
	printf("%s\n", text);
	free(text);
	return EXIT_SHOWN;
}

static int run_status(const struct kc_args *a, const char *ns, struct topo_live *live)
{
	struct kc_fetched f;
	struct kc_status *s = malloc(sizeof(*s));
	char *cause = NULL;
	int err, rc = EXIT_FAILED;

	if (!s) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		return EXIT_FAILED;
	}
	err = kc_fetch_status(topo_live_client(live), ns, a->jobset, &f, &cause);
	if (err == MUSTER_ENOTFOUND)
		fprintf(stderr, PROGRAM ": JobSet %s/%s not found\n", ns, a->jobset);
	else if (err)
		fprintf(stderr, PROGRAM ": JobSet %s/%s: %s\n", ns, a->jobset,
			cause ? cause : muster_err_name(err));
	else if (kc_status_build(f.jobset, f.pods, f.release, f.placement, f.events, s, &cause))
		fprintf(stderr, PROGRAM ": JobSet %s/%s: %s\n", ns, a->jobset,
			cause ? cause : "out of memory");
	else {
		rc = a->json ? print_json(kc_status_json(s)) : (kc_status_print(stdout, s), EXIT_SHOWN);
		if (rc == EXIT_SHOWN && s->gang.state == KC_GANG_TIMED_OUT)
			rc = EXIT_SHOWN_BAD;
	}
	kc_fetched_free(&f);
	free(cause);
	free(s);
	return rc;
}

/* No topology flag: the cluster's only Kueue Topology, else its HyperNodes
 * (the controller's default, docs/placement-live.md). 0, or an exit code. */
static int default_topology(struct topo_live *live, struct topo_run_options *run, char *name, size_t size)
{
	char path[256], *cause = NULL;
	cJSON *list = NULL;
	int err = kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES, NULL, NULL, &cause), count;
	const char *found = NULL;

	if (!err)
		err = topo_live_list(live, path, NULL, &list, &cause);
	if (err == MUSTER_ENOTFOUND) { /* Kueue's older version, or no Kueue */
		free(cause);
		cause = NULL;
		kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES_V1BETA1, NULL, NULL, NULL);
		err = topo_live_list(live, path, NULL, &list, &cause);
	}
	if (err == MUSTER_ENOTFOUND) {
		free(cause);
		run->cluster_hypernodes = 1;
		return 0;
	}
	if (err) {
		fprintf(stderr, PROGRAM ": %s: %s\n", path, cause ? cause : muster_err_name(err));
		free(cause);
		return EXIT_FAILED;
	}
	count = cJSON_GetArraySize(kjson_member(list, "items"));
	if (count == 1 &&
	    kjson_string(
		    kjson_path(cJSON_GetArrayItem(kjson_member(list, "items"), 0), "metadata", "name", NULL),
		    KUBE_NAME_MAX, &found) == KJSON_OK &&
	    found) {
		snprintf(name, size, "%s", found);
		run->topology = name;
	} else if (count > 1) {
		fprintf(stderr,
			PROGRAM ": the cluster has %d Kueue Topologies: give --topology NAME (or --levels)\n",
			count);
		cJSON_Delete(list);
		return EXIT_USAGE;
	} else {
		run->cluster_hypernodes = 1;
	}
	cJSON_Delete(list);
	return 0;
}

/* tree and explain: topo_run's flow on the cluster. */
static int run_topology(const struct kc_args *a, const char *ns, struct topo_live *live)
{
	struct topo_run_options run = { .program = PROGRAM };
	char topology[KUBE_NAME_MAX + 1];
	int rc;

	run.levels = a->levels;
	run.topology = a->topology;
	run.cluster_hypernodes = a->hypernodes;
	run.json = a->json;
	run.depth = a->depth;
	if (a->jobset) {
		run.jobset_namespace = ns;
		run.jobset_name = a->jobset;
	}
	if (!a->levels && !a->topology && !a->hypernodes &&
	    (rc = default_topology(live, &run, topology, sizeof(topology))))
		return rc;
	if (a->command == KC_TREE)
		return topo_run_tree(&run, live) == TOPO_RUN_PLACED ? EXIT_SHOWN : EXIT_FAILED;
	run.explain = 1;
	rc = topo_run_place(&run, live);
	return rc == TOPO_RUN_PLACED ? EXIT_SHOWN : rc == TOPO_RUN_REFUSED ? EXIT_SHOWN_BAD : EXIT_FAILED;
}

static const struct {
	enum kc_command command;
	int (*run)(const struct kc_args *a, const char *ns, struct topo_live *live);
} subcommands[] = {
	{ KC_STATUS, run_status },
	{ KC_TREE, run_topology },
	{ KC_EXPLAIN, run_topology },
};

/* The cluster from the kubeconfig; 0, or an exit code (said). */
static int open_cluster(const struct kc_args *a, struct kube_config *cfg, struct topo_live **live)
{
	struct kc_kubeconfig_files files;
	struct kube_client *client = NULL;
	char *cause = NULL;
	int err = kc_kubeconfig_files(a->kubeconfig, getenv("KUBECONFIG"), getenv("HOME"), &files, &cause);

	if (!err)
		err = kc_kubeconfig_load(&files, a->context, cfg, NULL, &cause);
	if (!err)
		err = kube_client_open(cfg, &client, &cause);
	if (!err)
		err = topo_live_wrap(client, live, &cause);
	if (err) {
		fprintf(stderr, PROGRAM ": %s\n", cause ? cause : muster_err_name(err));
		free(cause);
		return EXIT_FAILED;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kc_args a;
	struct kube_config cfg;
	struct topo_live *live = NULL;
	char *cause = NULL;
	int rc;

	if (kc_args_parse(argc, argv, &a, &cause)) {
		fprintf(stderr, PROGRAM ": %s (kubectl muster --help says how)\n",
			cause ? cause : "out of memory");
		free(cause);
		return EXIT_USAGE;
	}
	if (a.command == KC_HELP) {
		fputs(kc_args_usage, stdout);
		return EXIT_SHOWN;
	}
	if (a.command == KC_VERSION) {
		printf(PROGRAM " %s\n", MUSTER_VERSION);
		return EXIT_SHOWN;
	}
	if (a.namespace && !kube_dns_label(a.namespace, KUBE_NAMESPACE_MAX)) {
		fprintf(stderr, PROGRAM ": --namespace %s: not a namespace name\n", a.namespace);
		return EXIT_USAGE;
	}
	if (a.jobset && !kube_dns_subdomain(a.jobset, KUBE_NAME_MAX)) {
		fprintf(stderr, PROGRAM ": %s: not a JobSet name\n", a.jobset);
		return EXIT_USAGE;
	}
	memset(&cfg, 0, sizeof(cfg));
	rc = open_cluster(&a, &cfg, &live);
	if (rc)
		return rc;
	rc = EXIT_USAGE;
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (subcommands[i].command == a.command)
			rc = subcommands[i].run(&a, kc_kubeconfig_namespace(a.namespace, &cfg), live);
	topo_live_close(live);
	kube_config_free(&cfg);
	return rc;
}
