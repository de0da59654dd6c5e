/*
 * Unit tests of kube_config: kubeconfig parsing in all its credential forms
 * and refusals, loading from a file with relative paths, and the in-cluster
 * loader against a temporary service account directory.
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

#include "kube_config.h"
#include "kube_error.h"

#define DEEP65 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* "-----BEGIN CERTIFICATE-----\nCA\n" and friends, base64-encoded. */
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg=="
#define CA_TEXT "-----BEGIN CERTIFICATE-----\nCA\n"
#define CERT_B64 "Y2VydA=="
#define KEY_B64 "a2V5IQ"

static int parse(const char *yaml, const char *context, struct kube_config *cfg, char **cause)
{
	return kube_config_parse_kubeconfig(yaml, strlen(yaml), "/etc/kube", context, cfg, cause);
}

#define KUBECONFIG(cluster, user)                                                                            \
	"apiVersion: v1\n"                                                                                   \
	"kind: Config\n"                                                                                     \
	"clusters:\n"                                                                                        \
	"- name: other\n"                                                                                    \
	"  cluster:\n"                                                                                       \
	"    server: https://other:1\n"                                                                      \
	"- name: c1\n"                                                                                       \
	"  cluster:\n" cluster "users:\n"                                                                    \
	"- name: u1\n"                                                                                       \
	"  user:\n" user "contexts:\n"                                                                       \
	"- name: ctx1\n"                                                                                     \
	"  context:\n"                                                                                       \
	"    cluster: c1\n"                                                                                  \
	"    user: u1\n"                                                                                     \
	"    namespace: team-a\n"                                                                            \
	"- name: ctx-other\n"                                                                                \
	"  context:\n"                                                                                       \
	"    cluster: other\n"                                                                               \
	"current-context: ctx1\n"

static void token_and_ca_data(void **state)
{
	struct kube_config cfg;
	char *cause = NULL;

	(void)state;
	assert_int_equal(parse(KUBECONFIG("    server: https://127.0.0.1:6443/\n"
					  "    certificate-authority-data: " CA_B64 "\n",
					  "    token: abc.def\n"),
			       NULL, &cfg, &cause),
			 MUSTER_OK);
	assert_null(cause);
	assert_string_equal(cfg.server, "https://127.0.0.1:6443");
	assert_string_equal(cfg.namespace, "team-a");
	assert_string_equal(cfg.token, "abc.def");
	assert_null(cfg.token_file);
	assert_int_equal(cfg.ca_data_len, strlen(CA_TEXT));
	assert_memory_equal(cfg.ca_data, CA_TEXT, strlen(CA_TEXT));
	assert_null(cfg.ca_file);
	assert_true(cfg.qps == KUBE_DEFAULT_QPS);
	assert_int_equal(cfg.burst, KUBE_DEFAULT_BURST);
	assert_int_equal(cfg.max_response_bytes, KUBE_DEFAULT_MAX_RESPONSE);
	kube_config_free(&cfg);
	kube_config_free(&cfg);
	kube_config_free(NULL);
}

static void client_cert_files_are_resolved(void **state)
{
	struct kube_config cfg;
	char *cause = NULL;

	(void)state;
	assert_int_equal(parse(KUBECONFIG("    server: https://k:6443\n"
					  "    certificate-authority: pki/ca.crt\n"
					  "    insecure-skip-tls-verify: false\n",
					  "    client-certificate: pki/admin.crt\n"
					  "    client-key: /abs/admin.key\n"
					  "    tokenFile: token\n"),
			       NULL, &cfg, &cause),
			 MUSTER_OK);
	assert_string_equal(cfg.ca_file, "/etc/kube/pki/ca.crt");
	assert_string_equal(cfg.client_cert_file, "/etc/kube/pki/admin.crt");
	assert_string_equal(cfg.client_key_file, "/abs/admin.key");
	assert_string_equal(cfg.token_file, "/etc/kube/token");
	assert_null(cfg.client_cert_data);
	kube_config_free(&cfg);
}

static void client_cert_data(void **state)
{
	struct kube_config cfg;

	(void)state;
	assert_int_equal(
		parse(KUBECONFIG("    server: https://k:6443\n", "    client-certificate-data: " CERT_B64 "\n"
								 "    client-key-data: " KEY_B64 "\n"),
		      NULL, &cfg, NULL),
		MUSTER_OK);
	assert_int_equal(cfg.client_cert_data_len, 4);
	assert_memory_equal(cfg.client_cert_data, "cert", 4);
	assert_int_equal(cfg.client_key_data_len, 4);
	assert_memory_equal(cfg.client_key_data, "key!", 4);
	assert_null(cfg.token);
	kube_config_free(&cfg);
}

static void named_context(void **state)
{
	struct kube_config cfg;

	(void)state;
	assert_int_equal(
		parse(KUBECONFIG("    server: https://k:6443\n", "    token: t\n"), "ctx-other", &cfg, NULL),
		MUSTER_OK);
	assert_string_equal(cfg.server, "https://other:1");
	/* That context has no user: anonymous. */
	assert_null(cfg.token);
	assert_null(cfg.namespace);
	kube_config_free(&cfg);
}

static void refusals(void **state)
{
	static const struct {
		const char *yaml;
		const char *context;
		int err;
		const char *cause_part;
	} cases[] = {
		{ KUBECONFIG("    server: https://k\n    insecure-skip-tls-verify: true\n", "    token: t\n"),
		  NULL, MUSTER_ECONFIG, "always verifies TLS" },
		{ KUBECONFIG("    server: https://k\n    insecure-skip-tls-verify: yes\n", "    token: t\n"),
		  NULL, MUSTER_ECONFIG, "insecure-skip-tls-verify" },
		{ KUBECONFIG("    server: http://k:8080\n", "    token: t\n"), NULL, MUSTER_ECONFIG,
		  "https://" },
		{ KUBECONFIG("    certificate-authority: ca\n", "    token: t\n"), NULL, MUSTER_ECONFIG,
		  "no server" },
		{ KUBECONFIG("    server: https://k\n", "    exec:\n      command: aws\n"), NULL,
		  MUSTER_ECONFIG, "not supported" },
		{ KUBECONFIG("    server: https://k\n", "    client-certificate-data: " CERT_B64 "\n"), NULL,
		  MUSTER_ECONFIG, "client key" },
		{ KUBECONFIG("    server: https://k\n    certificate-authority-data: '!!notbase64'\n",
			     "    token: t\n"),
		  NULL, MUSTER_ECONFIG, "base64" },
		{ KUBECONFIG("    server: https://k\n", "    token: [a, b]\n"), NULL, MUSTER_ECONFIG,
		  "not a string" },
		{ KUBECONFIG("    server: https://k\n", "    token: t\n"), "nope", MUSTER_ECONFIG,
		  "no context named" },
		{ "clusters: []\n", NULL, MUSTER_ECONFIG, "current-context" },
		{ "current-context: x\ncontexts:\n- name: x\n  context: {cluster: missing}\n", NULL,
		  MUSTER_ECONFIG, "no known cluster" },
		{ "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		  "clusters:\n- name: c\n  cluster: {server: 'https://k'}\n",
		  NULL, MUSTER_ECONFIG, "no user named" },
		{ "- just\n- a list\n", NULL, MUSTER_ECONFIG, "not a mapping" },
		{ "", NULL, MUSTER_ECONFIG, "not a mapping" },
		{ "key: [unclosed\n", NULL, MUSTER_EPARSE, "not valid YAML" },
		{ "a: *undefined_alias\n", NULL, MUSTER_EPARSE, "not valid YAML" },
		{ "\t\x01\xff: :\n", NULL, MUSTER_EPARSE, "not valid YAML" },
		/* Refused before libyaml, whose scanner is quadratic in flow depth
		 * (the fuzzer's 100,000 '[' took it 24 s). */
		{ "a: " DEEP65, NULL, MUSTER_EPARSE, "nested deeper than 64 levels (at byte 67)" },
	};

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		struct kube_config cfg;
		char *cause = NULL;

		assert_int_equal(parse(cases[i].yaml, cases[i].context, &cfg, &cause), cases[i].err);
		assert_non_null(cause);
		if (!strstr(cause, cases[i].cause_part))
			fail_msg("case %zu: cause \"%s\" lacks \"%s\"", i, cause, cases[i].cause_part);
		/* A failed load leaves nothing behind. */
		assert_null(cfg.server);
		assert_null(cfg.token);
		free(cause);
	}
}

/* ---- files ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void remove_file(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void from_file_resolves_against_its_directory(void **state)
{
	char dir[] = "/tmp/kube-config-test-XXXXXX";
	char path[256];
	struct kube_config cfg;
	char *cause = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_file(dir, "config",
		   KUBECONFIG("    server: https://k\n    certificate-authority: ca.crt\n",
			      "    tokenFile: tok\n"));
	snprintf(path, sizeof(path), "%s/config", dir);
	assert_int_equal(kube_config_from_kubeconfig(path, NULL, &cfg, &cause), MUSTER_OK);
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	assert_string_equal(cfg.ca_file, path);
	snprintf(path, sizeof(path), "%s/tok", dir);
	assert_string_equal(cfg.token_file, path);
	kube_config_free(&cfg);

	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(kube_config_from_kubeconfig(path, NULL, &cfg, &cause), MUSTER_EIO);
	assert_non_null(strstr(cause, "cannot open"));
	free(cause);
	cause = NULL;
	assert_int_equal(kube_config_from_kubeconfig(dir, NULL, &cfg, &cause), MUSTER_EIO);
	free(cause);
	remove_file(dir, "config");
	rmdir(dir);
}

static void read_file_is_bounded(void **state)
{
	char dir[] = "/tmp/kube-config-test-XXXXXX";
	char path[256];
	char *text = NULL, *cause = NULL;
	size_t len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_file(dir, "f", "0123456789");
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(kube_read_file(path, 10, &text, &len, &cause), MUSTER_OK);
	assert_int_equal(len, 10);
	assert_string_equal(text, "0123456789");
	free(text);
	assert_int_equal(kube_read_file(path, 9, &text, &len, &cause), MUSTER_ETOOBIG);
	assert_null(text);
	free(cause);
	remove_file(dir, "f");
	rmdir(dir);
}

static void in_cluster(void **state)
{
	char dir[] = "/tmp/kube-sa-test-XXXXXX";
	char path[256];
	struct kube_config cfg;
	char *cause = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_ECONFIG);
	assert_non_null(strstr(cause, "KUBERNETES_SERVICE_HOST"));
	free(cause);
	cause = NULL;

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	/* No token yet. */
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_EIO);
	free(cause);
	cause = NULL;
	write_file(dir, "token", "\n");
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_ECONFIG);
	assert_non_null(strstr(cause, "empty"));
	free(cause);
	cause = NULL;

	write_file(dir, "token", "eyJhbGciOi.token\n");
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_OK);
	assert_string_equal(cfg.server, "https://10.96.0.1:443");
	snprintf(path, sizeof(path), "%s/token", dir);
	assert_string_equal(cfg.token_file, path);
	/* The token is re-read by the transport, never cached here. */
	assert_null(cfg.token);
	assert_null(cfg.ca_file);
	assert_null(cfg.namespace);
	kube_config_free(&cfg);

	write_file(dir, "ca.crt", CA_TEXT);
	write_file(dir, "namespace", "muster-system\n");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_OK);
	assert_string_equal(cfg.server, "https://[fd00::1]:443");
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	assert_string_equal(cfg.ca_file, path);
	assert_string_equal(cfg.namespace, "muster-system");
	kube_config_free(&cfg);

	setenv("KUBERNETES_SERVICE_HOST", "evil/host@x", 1);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_ECONFIG);
	free(cause);
	cause = NULL;
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "70000", 1);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &cause), MUSTER_ECONFIG);
	free(cause);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	remove_file(dir, "token");
	remove_file(dir, "ca.crt");
	remove_file(dir, "namespace");
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(token_and_ca_data),
		cmocka_unit_test(client_cert_files_are_resolved),
		cmocka_unit_test(client_cert_data),
		cmocka_unit_test(named_context),
		cmocka_unit_test(refusals),
		cmocka_unit_test(from_file_resolves_against_its_directory),
		cmocka_unit_test(read_file_is_bounded),
		cmocka_unit_test(in_cluster),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
