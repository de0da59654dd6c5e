/*
 * muster-topology: reads nodes (kubectl get nodes -o json), optionally pods
 * for usage, a topology (--levels or a HyperNode file) and a JobSet, from
 * files or from a live cluster (--kubeconfig: every Node, the pods bound and
 * not ended, a Kueue Topology or the cluster's HyperNodes, a JobSet); prints
 * the topology tree with the free capacity per domain for each replicated
 * job's pod shape, then the placement or the refusal, as text or JSON.
 * Exit 0 placed, 1 refused, 2 bad input (the cause names the file, item and
 * field). The flow is lib/cli/topo_run's, shared with kubectl-muster; this
 * file parses the flags.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "flag.h"
#include "muster_api.h"
#include "topo_live.h"
#include "topo_run.h"
#include "topo_tree.h"

struct options {
	const char *nodes, *pods, *levels, *hypernodes, *jobset, *output, *depth;
	const char *kubeconfig, *topology, *jobset_ref, *explain;
	int cluster_hypernodes;
};

static const char *output_problem(const char *value)
{
	return strcmp(value, "text") == 0 || strcmp(value, "json") == 0 ? NULL : "neither text nor json";
}

static const char *depth_problem(const char *value)
{
	unsigned long n;

	return strcmp(value, "all") == 0 || flag_number(value, 0, TOPO_LEVELS_MAX + 1, &n) == 0
		       ? NULL
		       : "neither all nor a level from 0 to 9";
}

/* Parses the flags into *o and checks they name one of each input: -1 to
 * run, else the exit code. */
static int parse_flags(int argc, char **argv, struct options *o)
{
	const struct flag_def flags[] = {
		{ FLAG_SECTION, NULL, NULL, "inputs (JSON or YAML, as kubectl writes them):", 0, 0, NULL,
		  NULL },
		{ FLAG_TEXT, "--nodes", "FILE", "the nodes: kubectl get nodes -o json", 0, 0, NULL,
		  &o->nodes },
		{ FLAG_TEXT, "--pods", "FILE",
		  "pods using the nodes: kubectl get pods -A -o json (bound, not ended)", 0, 0, NULL,
		  &o->pods },
		{ FLAG_TEXT, "--levels", "L1,L2,...", "the topology as node labels, outermost first", 0, 0,
		  NULL, &o->levels },
		{ FLAG_TEXT, "--hypernodes", "FILE", "or the topology as Volcano HyperNodes", 0, 0, NULL,
		  &o->hypernodes },
		{ FLAG_TEXT, "--jobset", "FILE", "the JobSet to place", 0, 0, NULL, &o->jobset },
		{ FLAG_SECTION, NULL, NULL, "or from a live cluster:", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--kubeconfig", "FILE",
		  "read the nodes, and the pods bound and not ended, from the cluster\n(unless --nodes / --pods give files)",
		  0, 0, NULL, &o->kubeconfig },
		{ FLAG_TEXT, "--topology", "NAME", "the levels of the cluster's Kueue Topology NAME", 0, 0,
		  NULL, &o->topology },
		{ FLAG_SWITCH, "--cluster-hypernodes", NULL,
		  "the topology as the cluster's Volcano HyperNodes", 0, 0, NULL, &o->cluster_hypernodes },
		{ FLAG_TEXT, "--jobset-ref", "NS/NAME", "the cluster's JobSet NS/NAME", 0, 0, NULL,
		  &o->jobset_ref },
		{ FLAG_TEXT, "--explain", "NS/NAME",
		  "--jobset-ref NS/NAME, and first what muster-controller says of it:\nits placement state, why it waits, its placement of record",
		  0, 0, NULL, &o->explain },
		{ FLAG_SECTION, NULL, NULL, "output:", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--output", "text|json", "text (default), or one JSON object for scripts", 0, 0,
		  output_problem, &o->output },
		{ FLAG_TEXT, "--depth", "N|all",
		  "tree levels shown (text); default: all up to 200 domains,\nelse the top level and a summary per level",
		  0, 0, depth_problem, &o->depth },
	};
	static const char head[] =
		"usage: muster-topology --nodes FILE [--pods FILE] (--levels L1,L2,... | --hypernodes FILE)\n"
		"                       --jobset FILE [--output text|json] [--depth N|all]\n"
		"       muster-topology --kubeconfig FILE (--levels L1,... | --topology NAME | --cluster-hypernodes)\n"
		"                       (--jobset FILE | --jobset-ref NS/NAME | --explain NS/NAME) [--output text|json]\n"
		"                       [--depth N|all]\n"
		"Places a JobSet on a cluster's topology as muster would, and says why when it cannot.\n";
	static const char tail[] =
		"exit status: 0 placed, 1 refused (the reason is printed), 2 bad input (a request\nthe placement cannot take included)\n";
	int code = daemon_exit_code(flag_parse(argc, argv, "muster-topology", MUSTER_VERSION, head, flags,
					       sizeof(flags) / sizeof(flags[0]), tail));

	if (code >= 0)
		return code;
	if (o->explain) {
		if (o->jobset_ref) {
			fprintf(stderr,
				"muster-topology: --explain NS/NAME is --jobset-ref NS/NAME and more: give one\n");
			return 2;
		}
		o->jobset_ref = o->explain;
	}
	if ((!o->nodes && !o->kubeconfig) || !o->jobset == !o->jobset_ref ||
	    !!o->levels + !!o->hypernodes + !!o->topology + o->cluster_hypernodes != 1 ||
	    ((o->topology || o->cluster_hypernodes || o->jobset_ref) && !o->kubeconfig)) {
		fprintf(stderr,
			"muster-topology: give the nodes (--nodes or --kubeconfig), one JobSet (--jobset or "
			"--jobset-ref) and one topology (--levels, --hypernodes, --topology or "
			"--cluster-hypernodes; the last two and --jobset-ref need --kubeconfig); see --help\n");
		return 2;
	}
	return -1;
}

/* The cluster's JobSet NS/NAME split into ns (a buffer of ns_size) and
 * its name; 0, or -1 said on stderr. */
static int split_ref(const char *ref, char *ns, size_t ns_size, const char **name)
{
	const char *slash = strchr(ref, '/');

	if (!slash || slash == ref || (size_t)(slash - ref) >= ns_size || !slash[1]) {
		fprintf(stderr, "muster-topology: --jobset-ref: give NAMESPACE/NAME\n");
		return -1;
	}
	snprintf(ns, ns_size, "%.*s", (int)(slash - ref), ref);
	*name = slash + 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .output = "text", .depth = NULL };
	struct topo_run_options run = { .program = "muster-topology" };
	struct topo_live *live = NULL;
	char *cause = NULL, ns[254];
	int rc = parse_flags(argc, argv, &o);

	if (rc >= 0)
		return rc;
	rc = TOPO_RUN_BAD_INPUT;
	run.nodes = o.nodes;
	run.pods = o.pods;
	run.hypernodes = o.hypernodes;
	run.jobset = o.jobset;
	run.levels = o.levels;
	run.topology = o.topology;
	run.cluster_hypernodes = o.cluster_hypernodes;
	run.explain = o.explain != NULL;
	run.json = strcmp(o.output, "json") == 0;
	run.depth = o.depth;
	if (o.jobset_ref) {
		if (split_ref(o.jobset_ref, ns, sizeof(ns), &run.jobset_name))
			return rc;
		run.jobset_namespace = ns;
	}
	if (o.kubeconfig && topo_live_open(o.kubeconfig, NULL, &live, &cause)) {
		fprintf(stderr, "muster-topology: %s: %s\n", o.kubeconfig, cause ? cause : "out of memory");
		free(cause);
		return rc;
	}
	rc = topo_run_place(&run, live);
	topo_live_close(live);
	return rc;
}
