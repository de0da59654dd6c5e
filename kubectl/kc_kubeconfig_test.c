/*
 * Unit tests of kubectl/kc_kubeconfig: the files kubectl would read
 * (--kubeconfig, the KUBECONFIG list, ~/.kube/config), the first file that
 * holds the context, the namespace's order, on kubeconfigs in a temporary
 * directory.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kc_kubeconfig.h"
#include "kube_config.h"
#include "kube_error.h"

/* A kubeconfig of one context `context` on server `server`, with a
 * namespace when ns is not NULL. */
static void write_kubeconfig(const char *path, const char *context, const char *server, const char *ns)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f,
		"apiVersion: v1\nkind: Config\ncurrent-context: %s\n"
		"clusters:\n- name: c\n  cluster:\n    server: %s\n"
		"users:\n- name: u\n  user:\n    token: t\n"
		"contexts:\n- name: %s\n  context:\n    cluster: c\n    user: u\n%s%s%s",
		context, server, context, ns ? "    namespace: " : "", ns ? ns : "", ns ? "\n" : "");
	assert_int_equal(fclose(f), 0);
}

static void the_files_in_kubectl_order(void **state)
{
	struct kc_kubeconfig_files f;
	char *cause = NULL;

	(void)state;
	assert_int_equal(kc_kubeconfig_files("/flag", "/a:/b", "/home/u", &f, &cause), 0);
	assert_int_equal(f.count, 1);
	assert_string_equal(f.paths[0], "/flag");
	assert_int_equal(kc_kubeconfig_files(NULL, ":/a::/b:", "/home/u", &f, &cause), 0);
	assert_int_equal(f.count, 2);
	assert_string_equal(f.paths[0], "/a");
	assert_string_equal(f.paths[1], "/b");
	assert_int_equal(kc_kubeconfig_files(NULL, "", "/home/u", &f, &cause), 0);
	assert_int_equal(f.count, 1);
	assert_string_equal(f.paths[0], "/home/u/.kube/config");
	assert_int_equal(kc_kubeconfig_files(NULL, ":", "/home/u", &f, &cause), 0);
	assert_string_equal(f.paths[0], "/home/u/.kube/config");
	assert_null(cause);
	assert_int_equal(kc_kubeconfig_files(NULL, NULL, NULL, &f, &cause), MUSTER_ECONFIG);
	assert_non_null(strstr(cause, "no kubeconfig"));
	free(cause);
	cause = NULL;
	assert_int_equal(
		kc_kubeconfig_files(NULL, "1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17", NULL, &f, &cause),
		MUSTER_ECONFIG);
	assert_non_null(strstr(cause, "more than 16 files"));
	free(cause);
}

/* KUBECONFIG=missing:other-context:the-context: the third is used for a
 * named context; the current-context of the second for none. */
static void the_first_file_holding_the_context(void **state)
{
	char dir[] = "/tmp/kc_kubeconfig_test.XXXXXX", env[700], a[200], b[200], c[200];
	struct kc_kubeconfig_files f;
	struct kube_config cfg;
	char *cause = NULL;
	size_t used = 99;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/missing", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(c, sizeof(c), "%s/c", dir);
	write_kubeconfig(b, "other", "https://b.example:6443", NULL);
	write_kubeconfig(c, "dev", "https://c.example:6443", "team");
	snprintf(env, sizeof(env), "%s:%s:%s", a, b, c);
	assert_int_equal(kc_kubeconfig_files(NULL, env, NULL, &f, &cause), 0);

	assert_int_equal(kc_kubeconfig_load(&f, "dev", &cfg, &used, &cause), 0);
	assert_int_equal(used, 2);
	assert_string_equal(cfg.server, "https://c.example:6443");
	assert_string_equal(kc_kubeconfig_namespace(NULL, &cfg), "team");
	assert_string_equal(kc_kubeconfig_namespace("mine", &cfg), "mine");
	kube_config_free(&cfg);

	assert_int_equal(kc_kubeconfig_load(&f, NULL, &cfg, &used, &cause), 0);
	assert_int_equal(used, 1);
	assert_string_equal(cfg.server, "https://b.example:6443");
	assert_string_equal(kc_kubeconfig_namespace(NULL, &cfg), "default");
	kube_config_free(&cfg);

	/* A context no file holds: the first existing file's error, named. */
	assert_int_equal(kc_kubeconfig_load(&f, "prod", &cfg, &used, &cause), MUSTER_ECONFIG);
	assert_non_null(strstr(cause, b));
	assert_non_null(strstr(cause, "no context named \"prod\""));
	free(cause);
	cause = NULL;

	/* Only missing files. */
	assert_int_equal(kc_kubeconfig_files(NULL, a, NULL, &f, &cause), 0);
	assert_int_equal(kc_kubeconfig_load(&f, NULL, &cfg, &used, &cause), MUSTER_EIO);
	assert_non_null(strstr(cause, "does not exist"));
	free(cause);
	unlink(b);
	unlink(c);
	rmdir(dir);
}

/* TLS is verified whatever the file says (lib/kube refuses it): the
 * plugin passes the refusal on rather than skipping to another file. */
static void an_unverified_server_is_refused(void **state)
{
	char dir[] = "/tmp/kc_kubeconfig_test.XXXXXX", path[200];
	struct kc_kubeconfig_files f;
	struct kube_config cfg;
	char *cause = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	write_kubeconfig(path, "dev", "http://plain.example:8080", NULL);
	assert_int_equal(kc_kubeconfig_files(path, NULL, NULL, &f, &cause), 0);
	assert_int_equal(kc_kubeconfig_load(&f, NULL, &cfg, NULL, &cause), MUSTER_ECONFIG);
	assert_non_null(strstr(cause, "https://"));
	free(cause);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_files_in_kubectl_order),
		cmocka_unit_test(the_first_file_holding_the_context),
		cmocka_unit_test(an_unverified_server_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
