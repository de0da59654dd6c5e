/*
 * kc_kubeconfig: which kubeconfig kubectl-muster reads, the way kubectl
 * finds it: --kubeconfig FILE alone when given; else the files of
 * $KUBECONFIG (a ':'-separated list; empty entries skipped); else
 * ~/.kube/config. kubectl merges the files of the list; this does not: the
 * first file that exists and from which the context (--context, else that
 * file's current-context) loads is used whole, the others are not read
 * further. The namespace is --namespace, else the context's, else
 * "default". The loading itself (and its refusal of unverified TLS) is
 * lib/kube/kube_config's.
 *
 * kc_kubeconfig_files is pure; kc_kubeconfig_load reads files. Errors: a
 * KUBE_E* code and a malloc'd cause (docs/errors.md).
 */
#ifndef MUSTER_KC_KUBECONFIG_H
#define MUSTER_KC_KUBECONFIG_H

#include <stddef.h>

struct kube_config;

/* Most files taken from $KUBECONFIG; longest path. */
#define KC_KUBECONFIG_FILES_MAX 16
#define KC_KUBECONFIG_PATH_MAX 4096

struct kc_kubeconfig_files {
	size_t count;
	char paths[KC_KUBECONFIG_FILES_MAX][KC_KUBECONFIG_PATH_MAX];
};

/* The files to try, in order, from the flag, $KUBECONFIG and $HOME (each
 * may be NULL). 0, or MUSTER_ECONFIG with a cause: a path too long, more
 * than KC_KUBECONFIG_FILES_MAX files, or nowhere to look (no flag, no
 * list, no HOME). */
int kc_kubeconfig_files(const char *flag, const char *env, const char *home, struct kc_kubeconfig_files *out,
			char **cause);

/* Loads the first of `files` that exists and holds the context (NULL: the
 * file's current-context) into *cfg; *used (may be NULL) gets its index.
 * When none does: MUSTER_EIO "no kubeconfig ..." if none exists, else the
 * error of the first that exists. */
int kc_kubeconfig_load(const struct kc_kubeconfig_files *files, const char *context, struct kube_config *cfg,
		       size_t *used, char **cause);

/* The namespace to use: the flag's, else the context's, else "default". */
const char *kc_kubeconfig_namespace(const char *flag, const struct kube_config *cfg);

#endif
