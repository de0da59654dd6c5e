/*
 * kc_args: kubectl-muster's command line. See kc_args.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_args.h"

#include <stddef.h>
#include <string.h>

#include "cause.h"
#include "flag.h"
#include "topo_tree.h"

const char kc_args_usage[] =
	"usage: kubectl muster status JOBSET [-n NAMESPACE] [-o json]\n"
	"       kubectl muster tree [JOBSET] [--levels L1,L2,... | --topology NAME | --hypernodes]\n"
	"                           [--depth N|all] [-o json]\n"
	"       kubectl muster explain JOBSET [--levels L1,L2,... | --topology NAME | --hypernodes]\n"
	"                           [--depth N|all] [-o json]\n"
	"What muster says of a JobSet and of the cluster's topology.\n"
	"  status    the gang start (expected, started, at the barrier, released, why not yet) and the\n"
	"            placement (state, each Job's domain, why it waits), with the JobSet's last Events\n"
	"  tree      the topology with the free room of each domain (free resources, or with JOBSET the\n"
	"            pods of each of its replicated jobs that fit), and which placed JobSets hold which domains\n"
	"  explain   what the controller says of the JobSet, the tree, and what placement would decide now\n"
	"flags (anywhere on the line):\n"
	"  --kubeconfig FILE    the kubeconfig (default: $KUBECONFIG, a list of files separated by ':',\n"
	"                       the first that holds the context is used; else ~/.kube/config)\n"
	"  --context NAME       the kubeconfig context (default: its current-context)\n"
	"  -n, --namespace NS   the JobSet's namespace (default: the context's namespace, else default)\n"
	"  -o, --output json    one JSON object instead of text\n"
	"  --levels L1,L2,...   the topology as node labels, outermost first\n"
	"  --topology NAME      the topology as the cluster's Kueue Topology NAME\n"
	"  --hypernodes         the topology as the cluster's Volcano HyperNodes\n"
	"                       (default: the cluster's only Kueue Topology, else its HyperNodes)\n"
	"  --depth N|all        tree levels shown (text; default: all up to 200 domains)\n"
	"exit status: 0 shown; 1 not found or failed (the JobSet, the cluster, the kubeconfig);\n"
	"2 bad usage; 3 shown, and the gang timed out (status) or placement refuses now (explain)\n";

/* Flags that take a value: their long name, short name and field. */
struct valued_flag {
	const char *name, *short_name;
	size_t offset;
};

static const struct valued_flag valued_flags[] = {
	{ "--kubeconfig", NULL, offsetof(struct kc_args, kubeconfig) },
	{ "--context", NULL, offsetof(struct kc_args, context) },
	{ "--namespace", "-n", offsetof(struct kc_args, namespace) },
	{ "--levels", NULL, offsetof(struct kc_args, levels) },
	{ "--topology", NULL, offsetof(struct kc_args, topology) },
	{ "--depth", NULL, offsetof(struct kc_args, depth) },
	{ "--output", "-o", 0 }, /* into json */
};

static const struct {
	const char *word;
	enum kc_command command;
} commands[] = {
	{ "status", KC_STATUS }, { "tree", KC_TREE },	    { "explain", KC_EXPLAIN },
	{ "help", KC_HELP },	 { "version", KC_VERSION },
};

/* The value of flag f at argv[*i] ("--f=v", "-nv" or "--f v"), NULL when
 * argv[*i] is not f; *missing when it is f without a value. */
static const char *flag_value(const struct valued_flag *f, int argc, char **argv, int *i, int *missing)
{
	const char *arg = argv[*i];
	size_t len = strlen(f->name);

	*missing = 0;
	if (strncmp(arg, f->name, len) == 0 && arg[len] == '=')
		return arg + len + 1;
	if (f->short_name && strncmp(arg, f->short_name, 2) == 0 && arg[2]) {
		if (strcmp(arg, f->short_name) != 0)
			return arg[2] == '=' ? arg + 3 : arg + 2;
	}
	if (strcmp(arg, f->name) != 0 && !(f->short_name && strcmp(arg, f->short_name) == 0))
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return arg;
	}
	return argv[++*i];
}

static int set_value(struct kc_args *out, const struct valued_flag *f, const char *value, char **cause)
{
	if (!*value)
		return cause_fail(cause, "%s: give a value", f->name);
	if (f->offset == 0) {
		if (strcmp(value, "json") == 0)
			out->json = 1;
		else if (strcmp(value, "text") == 0)
			out->json = 0;
		else
			return cause_fail(cause, "--output %s: give json (or text, the default)", value);
		return 0;
	}
	*(const char **)(void *)((char *)out + f->offset) = value;
	return 0;
}

/* One argument that starts with '-'; 0, 1 for help or version (nothing
 * more is read), or -1 with the cause. */
static int take_flag(struct kc_args *out, int argc, char **argv, int *i, char **cause)
{
	const char *arg = argv[*i];

	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
		out->command = KC_HELP;
		return 1;
	}
	if (strcmp(arg, "--version") == 0) {
		out->command = KC_VERSION;
		return 1;
	}
	if (strcmp(arg, "--hypernodes") == 0) {
		out->hypernodes = 1;
		return 0;
	}
	for (size_t k = 0; k < sizeof(valued_flags) / sizeof(valued_flags[0]); k++) {
		int missing;
		const char *value = flag_value(&valued_flags[k], argc, argv, i, &missing);

		if (missing)
			return cause_fail(cause, "%s: give a value", valued_flags[k].name);
		if (value)
			return set_value(out, &valued_flags[k], value, cause);
	}
	return cause_fail(cause, "%s: no such flag", arg);
}

/* The rules between the flags and the subcommand. */
static int check(struct kc_args *out, const char *extra, char **cause)
{
	int topologies = !!out->levels + !!out->topology + out->hypernodes;
	unsigned long depth;

	if (out->command == KC_HELP || out->command == KC_VERSION)
		return 0;
	if (extra)
		return cause_fail(cause, "%s: one JobSet at most", extra);
	if (out->command != KC_TREE && !out->jobset)
		return cause_fail(cause, "%s: give the JobSet's name",
				  out->command == KC_STATUS ? "status" : "explain");
	if (out->command == KC_STATUS && (topologies || out->depth))
		return cause_fail(cause, "status takes no topology nor --depth (tree and explain do)");
	if (topologies > 1)
		return cause_fail(cause, "give one topology: --levels, --topology or --hypernodes");
	if (out->depth && strcmp(out->depth, "all") != 0 &&
	    flag_number(out->depth, 0, TOPO_LEVELS_MAX + 1, &depth) != 0)
		return cause_fail(cause, "--depth %s: neither all nor a level from 0 to %d", out->depth,
				  TOPO_LEVELS_MAX + 1);
	return 0;
}

int kc_args_parse(int argc, char **argv, struct kc_args *out, char **cause)
{
	int have_command = 0;
	const char *extra = NULL;

	memset(out, 0, sizeof(*out));
	out->command = KC_HELP;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (arg[0] == '-' && arg[1]) {
			int rc = take_flag(out, argc, argv, &i, cause);

			if (rc)
				return rc < 0 ? -1 : 0;
			continue;
		}
		if (!have_command) {
			size_t k;

			for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
				if (strcmp(arg, commands[k].word) == 0)
					break;
			if (k == sizeof(commands) / sizeof(commands[0]))
				return cause_fail(cause, "%s: no such subcommand (status, tree, explain)",
						  arg);
			out->command = commands[k].command;
			have_command = 1;
			if (out->command == KC_HELP || out->command == KC_VERSION)
				return 0;
		} else if (!out->jobset) {
			out->jobset = arg;
		} else if (!extra) {
			extra = arg;
		}
	}
	return check(out, extra, cause);
}
