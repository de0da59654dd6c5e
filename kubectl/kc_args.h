/*
 * kc_args: kubectl-muster's command line, as kubectl passes it to a plugin
 * (`kubectl muster status -n ns train` runs `kubectl-muster status -n ns
 * train`). Flags may come before or after the subcommand, as `--flag value`
 * or `--flag=value` (and `-n NS`, `-nNS`, `-o json`, `-ojson`). Pure: 0, or
 * -1 and a malloc'd cause saying what is wrong (docs/errors.md); the
 * strings of the result point into argv.
 */
#ifndef MUSTER_KC_ARGS_H
#define MUSTER_KC_ARGS_H

enum kc_command {
	KC_STATUS, /* status JOBSET */
	KC_TREE, /* tree [JOBSET] */
	KC_EXPLAIN, /* explain JOBSET */
	KC_HELP, /* --help, -h, help, or no subcommand */
	KC_VERSION, /* --version, version */
};

struct kc_args {
	enum kc_command command;
	/* Where the cluster is (kc_kubeconfig.h); NULL when not given. */
	const char *kubeconfig, *context, *namespace;
	const char *jobset; /* the JobSet's name, NULL when not given */
	int json; /* -o json */
	/* The topology of tree and explain: at most one of these; none means
	 * the cluster's only Kueue Topology, else its HyperNodes. */
	const char *levels, *topology;
	int hypernodes;
	const char *depth; /* "N" (0..9) or "all", NULL when not given */
};

int kc_args_parse(int argc, char **argv, struct kc_args *out, char **cause);

/* The usage text (help and bad usage). */
extern const char kc_args_usage[];

#endif
