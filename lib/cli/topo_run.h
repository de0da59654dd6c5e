/*
 * topo_run: the placement flow the command-line tools share
 * (muster-topology, and kubectl-muster's tree and explain): the inputs read
 * from files or from a live cluster (topo_input, topo_live), the topology
 * tree (node label levels, a Kueue Topology of the cluster, or HyperNodes),
 * the JobSet's request, then the report: the tree with its free room
 * (topo_view), which placed JobSets hold which domains, what
 * muster-controller says of the JobSet (explain), and the placement or the
 * refusal; as text on stdout or as one JSON object. Messages about bad
 * input go to stderr, prefixed by the program's name.
 *
 * Exit codes (the tools' contract): TOPO_RUN_PLACED 0 (placed; or a tree
 * shown), TOPO_RUN_REFUSED 1 (the placement refused, the reason printed),
 * TOPO_RUN_BAD_INPUT 2 (bad input: a file, an object, a request the
 * placement cannot take, an object not found).
 */
#ifndef MUSTER_TOPO_RUN_H
#define MUSTER_TOPO_RUN_H

struct topo_live;

enum topo_run_exit {
	TOPO_RUN_PLACED = 0,
	TOPO_RUN_REFUSED = 1,
	TOPO_RUN_BAD_INPUT = 2,
};

struct topo_run_options {
	const char *program; /* prefixes messages on stderr and names the decider */
	/* Files (NULL: not given); nodes and pods are read from the cluster
	 * when live and not given. */
	const char *nodes, *pods, *hypernodes, *jobset;
	/* The topology: one of levels ("L1,L2,..."), topology (a Kueue
	 * Topology of the cluster), hypernodes (a file) or cluster_hypernodes. */
	const char *levels, *topology;
	int cluster_hypernodes;
	/* The cluster's JobSet (both or neither). */
	const char *jobset_namespace, *jobset_name;
	int explain; /* also what muster-controller says of the cluster's JobSet */
	int json; /* one JSON object instead of text */
	const char *depth; /* "N" or "all" (checked by the caller), or NULL */
};

/* The whole report for one JobSet (a file or the cluster's); `live` may be
 * NULL when every input is a file. Returns an exit code above. */
int topo_run_place(const struct topo_run_options *options, struct topo_live *live);

/* The tree alone with its free room: without a JobSet, free resources per
 * domain; with one, free pods of each replicated job's shape; then (live)
 * which placed JobSets hold which domains. Returns TOPO_RUN_PLACED or
 * TOPO_RUN_BAD_INPUT. */
int topo_run_tree(const struct topo_run_options *options, struct topo_live *live);

#endif
