/*
 * Unit tests of kubectl/kc_args: flags before and after the subcommand in
 * every form kubectl users write them, the rules between subcommand and
 * flags, help and version.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kc_args.h"

/* kc_args_parse over the words given, after the program's name; the
 * words end at NULL. */
static int parse(struct kc_args *out, char **cause, ...)
{
	static char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)"kubectl-muster";
	va_start(ap, cause);
	for (const char *word; argc < 31 && (word = va_arg(ap, const char *)) != NULL;)
		argv[argc++] = (char *)word;
	va_end(ap);
	argv[argc] = NULL;
	return kc_args_parse(argc, argv, out, cause);
}

#define PARSE(out, cause, ...) parse(out, cause, __VA_ARGS__, (const char *)NULL)

static void status_with_flags_anywhere(void **state)
{
	struct kc_args a;
	char *cause = NULL;

	(void)state;
	assert_int_equal(PARSE(&a, &cause, "-n", "team", "status", "train", "-o", "json", "--context=dev"),
			 0);
	assert_int_equal(a.command, KC_STATUS);
	assert_string_equal(a.namespace, "team");
	assert_string_equal(a.jobset, "train");
	assert_string_equal(a.context, "dev");
	assert_int_equal(a.json, 1);
	assert_null(a.kubeconfig);
	assert_int_equal(PARSE(&a, &cause, "status", "--namespace=ns2", "-ojson", "--kubeconfig", "/k", "x"),
			 0);
	assert_string_equal(a.namespace, "ns2");
	assert_string_equal(a.kubeconfig, "/k");
	assert_string_equal(a.jobset, "x");
	assert_int_equal(a.json, 1);
	assert_int_equal(PARSE(&a, &cause, "status", "-nteam", "x", "--output=text"), 0);
	assert_string_equal(a.namespace, "team");
	assert_int_equal(a.json, 0);
	assert_null(cause);
}

static void tree_and_explain_take_a_topology(void **state)
{
	struct kc_args a;
	char *cause = NULL;

	(void)state;
	assert_int_equal(PARSE(&a, &cause, "tree"), 0);
	assert_int_equal(a.command, KC_TREE);
	assert_null(a.jobset);
	assert_int_equal(PARSE(&a, &cause, "tree", "--levels", "block,rack", "--depth", "all"), 0);
	assert_string_equal(a.levels, "block,rack");
	assert_string_equal(a.depth, "all");
	assert_int_equal(PARSE(&a, &cause, "explain", "train", "--topology=blocks"), 0);
	assert_int_equal(a.command, KC_EXPLAIN);
	assert_string_equal(a.topology, "blocks");
	assert_int_equal(PARSE(&a, &cause, "tree", "train", "--hypernodes", "--depth=2"), 0);
	assert_int_equal(a.hypernodes, 1);
	assert_string_equal(a.jobset, "train");
	assert_null(cause);
}

/* Each bad line fails with a sentence naming what is wrong. */
static void refuses_bad_lines(void **state)
{
	struct kc_args a;
	char *cause = NULL;

	(void)state;
	assert_int_equal(PARSE(&a, &cause, "status"), -1);
	assert_non_null(strstr(cause, "give the JobSet's name"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "explain"), -1);
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "status", "a", "b"), -1);
	assert_non_null(strstr(cause, "b: one JobSet at most"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "status", "a", "--levels", "rack"), -1);
	assert_non_null(strstr(cause, "status takes no topology"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "tree", "--levels", "rack", "--hypernodes"), -1);
	assert_non_null(strstr(cause, "give one topology"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "tree", "--depth", "x"), -1);
	assert_non_null(strstr(cause, "--depth x"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "status", "a", "-o", "yaml"), -1);
	assert_non_null(strstr(cause, "--output yaml"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "status", "a", "-n"), -1);
	assert_non_null(strstr(cause, "--namespace: give a value"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "status", "a", "--namespace="), -1);
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "status", "a", "--verbose"), -1);
	assert_non_null(strstr(cause, "--verbose: no such flag"));
	free(cause);
	cause = NULL;
	assert_int_equal(PARSE(&a, &cause, "describe", "a"), -1);
	assert_non_null(strstr(cause, "describe: no such subcommand"));
	free(cause);
}

static void help_and_version_win(void **state)
{
	struct kc_args a;
	char *cause = NULL;

	(void)state;
	assert_int_equal(parse(&a, &cause, (const char *)NULL), 0);
	assert_int_equal(a.command, KC_HELP);
	assert_int_equal(PARSE(&a, &cause, "--help", "status"), 0);
	assert_int_equal(a.command, KC_HELP);
	assert_int_equal(PARSE(&a, &cause, "status", "-h"), 0);
	assert_int_equal(a.command, KC_HELP);
	assert_int_equal(PARSE(&a, &cause, "version"), 0);
	assert_int_equal(a.command, KC_VERSION);
	assert_int_equal(PARSE(&a, &cause, "--version"), 0);
	assert_int_equal(a.command, KC_VERSION);
	assert_null(cause);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(status_with_flags_anywhere),
		cmocka_unit_test(tree_and_explain_take_a_topology),
		cmocka_unit_test(refuses_bad_lines),
		cmocka_unit_test(help_and_version_win),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
