/*
 * kc_kubeconfig: which kubeconfig, which context, which namespace. See
 * kc_kubeconfig.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_kubeconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube_config.h"
#include "kube_error.h"

static int add(struct kc_kubeconfig_files *out, const char *path, size_t len, char **cause)
{
	if (out->count == KC_KUBECONFIG_FILES_MAX)
		return cause_err(cause, MUSTER_ECONFIG, "KUBECONFIG lists more than %d files",
				 KC_KUBECONFIG_FILES_MAX);
	if (len >= KC_KUBECONFIG_PATH_MAX)
		return cause_err(cause, MUSTER_ECONFIG, "a kubeconfig path is longer than %d bytes",
				 KC_KUBECONFIG_PATH_MAX - 1);
	memcpy(out->paths[out->count], path, len);
	out->paths[out->count++][len] = '\0';
	return 0;
}

int kc_kubeconfig_files(const char *flag, const char *env, const char *home, struct kc_kubeconfig_files *out,
			char **cause)
{
	out->count = 0;
	if (flag && *flag)
		return add(out, flag, strlen(flag), cause);
	if (env && *env) {
		for (const char *at = env; *at;) {
			const char *end = strchr(at, ':');
			size_t len = end ? (size_t)(end - at) : strlen(at);
			int err = len ? add(out, at, len, cause) : 0;

			if (err)
				return err;
			at += len + (end ? 1 : 0);
		}
		if (out->count)
			return 0;
	}
	if (home && *home) {
		char path[KC_KUBECONFIG_PATH_MAX];
		int n = snprintf(path, sizeof(path), "%s/.kube/config", home);

		if (n < 0 || (size_t)n >= sizeof(path))
			return cause_err(cause, MUSTER_ECONFIG, "HOME is longer than %d bytes",
					 KC_KUBECONFIG_PATH_MAX - 14);
		return add(out, path, (size_t)n, cause);
	}
	return cause_err(cause, MUSTER_ECONFIG, "no kubeconfig: give --kubeconfig, set KUBECONFIG or HOME");
}

int kc_kubeconfig_load(const struct kc_kubeconfig_files *files, const char *context, struct kube_config *cfg,
		       size_t *used, char **cause)
{
	char *first = NULL;
	int first_err = 0;

	for (size_t i = 0; i < files->count; i++) {
		char *why = NULL;
		int err;

		if (access(files->paths[i], F_OK) != 0)
			continue;
		err = kube_config_from_kubeconfig(files->paths[i], context, cfg, &why);
		if (!err) {
			free(first);
			free(why);
			if (used)
				*used = i;
			return 0;
		}
		if (!first_err) {
			size_t size = strlen(files->paths[i]) + (why ? strlen(why) : 0) + 3;

			first_err = err;
			first = malloc(size);
			if (first)
				snprintf(first, size, "%s: %s", files->paths[i], why ? why : "");
		}
		free(why);
	}
	if (!first_err)
		return cause_err(cause, MUSTER_EIO, "no kubeconfig: %s%s does not exist", files->paths[0],
				 files->count > 1 ? " nor any other file of KUBECONFIG" : "");
	if (!first)
		return cause_err(cause, first_err, "out of memory reading the kubeconfig");
	if (cause && !*cause)
		*cause = first;
	else
		free(first);
	return first_err;
}

const char *kc_kubeconfig_namespace(const char *flag, const struct kube_config *cfg)
{
	if (flag && *flag)
		return flag;
	if (cfg && cfg->namespace && *cfg->namespace)
		return cfg->namespace;
	return "default";
}
