/*
 * kube_config: where the API server is and how to authenticate to it.
 *
 * Two sources fill the same struct:
 *   - in-cluster: KUBERNETES_SERVICE_HOST/PORT and the mounted service
 *     account (token and ca.crt). The token is kept as a file name, not as
 *     bytes, so that the transport re-reads it when the kubelet rotates it.
 *   - a kubeconfig file (for local runs and tests), read with libyaml: the
 *     current (or a named) context's cluster and user. Token, token file,
 *     client certificate and key, and CA are accepted as files or as inline
 *     base64 data; relative file names are resolved against the kubeconfig's
 *     directory, as kubectl does.
 * TLS is always verified: `insecure-skip-tls-verify: true` and non-https
 * servers are refused with a cause saying so. Exec and auth-provider plugins
 * are not supported.
 *
 * Lifecycle: a struct kube_config is a value owned by the caller. If a
 * loader fails, the struct is left zeroed and nothing needs freeing; after a
 * successful load, kube_config_free() releases its members. kube_config_free
 * accepts NULL and a zeroed struct.
 *
 * This module reads files but does no network I/O.
 */
#ifndef MUSTER_KUBE_CONFIG_H
#define MUSTER_KUBE_CONFIG_H

#include <stddef.h>

/* Largest kubeconfig, token or certificate file that is read at all. */
#define KUBE_CONFIG_FILE_MAX (1024 * 1024)
/* Longest string value taken from a kubeconfig (server, names, paths, base64). */
#define KUBE_CONFIG_VALUE_MAX (256 * 1024)

/* The in-cluster service account directory. */
#define KUBE_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_config {
	char *server; /* "https://host:port", no trailing slash */
	char *namespace; /* the context's or service account's namespace, or NULL */

	/* Trust: a CA file, or PEM bytes held in memory (either or neither: the
	 * system store is used when both are NULL). */
	char *ca_file;
	unsigned char *ca_data;
	size_t ca_data_len;

	/* Bearer token: inline, or a file re-read when it changes. */
	char *token;
	char *token_file;

	/* Client certificate and key: files or PEM bytes. */
	char *client_cert_file;
	unsigned char *client_cert_data;
	size_t client_cert_data_len;
	char *client_key_file;
	unsigned char *client_key_data;
	size_t client_key_data_len;

	/* Behaviour; the loaders set the defaults below, callers may override. */
	double qps; /* client-side rate, <= 0 unlimited */
	unsigned burst;
	long connect_timeout_ms;
	long request_timeout_ms; /* total time of a non-watch request */
	long watch_timeout_s; /* server-side timeoutSeconds of one watch call */
	size_t max_response_bytes; /* largest non-watch response body */
	size_t max_watch_line_bytes; /* largest watch event line */
	unsigned max_retries; /* retries on connection errors, 429 and 5xx */
};

#define KUBE_DEFAULT_QPS 20.0
#define KUBE_DEFAULT_BURST 30
#define KUBE_DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define KUBE_DEFAULT_REQUEST_TIMEOUT_MS 30000L
#define KUBE_DEFAULT_WATCH_TIMEOUT_S 300L
#define KUBE_DEFAULT_MAX_RESPONSE (64u * 1024 * 1024)
#define KUBE_DEFAULT_MAX_WATCH_LINE (4u * 1024 * 1024)
#define KUBE_DEFAULT_MAX_RETRIES 5u

/* Zeroes the struct and sets the behaviour fields to the defaults above. */
void kube_config_defaults(struct kube_config *cfg);

/* Loads the context `context` (NULL: current-context) of the kubeconfig file
 * at `path` (at most KUBE_CONFIG_FILE_MAX bytes). Returns 0, or MUSTER_EIO /
 * MUSTER_ETOOBIG / MUSTER_EPARSE / MUSTER_ECONFIG / MUSTER_ENOMEM with a cause. */
int kube_config_from_kubeconfig(const char *path, const char *context, struct kube_config *cfg, char **cause);

/* The same from `len` bytes of YAML in memory (need not be NUL-terminated);
 * relative file names are resolved against `base_dir` (NULL: left as they
 * are). Files named in the YAML are not opened here. */
int kube_config_parse_kubeconfig(const char *yaml, size_t len, const char *base_dir, const char *context,
				 struct kube_config *cfg, char **cause);

/* In-cluster configuration from KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT and the service account directory `sa_dir` (NULL:
 * KUBE_SERVICE_ACCOUNT_DIR; tests pass a temporary one). The token file must
 * exist and be non-empty now; it is re-read later by the transport. The CA
 * file is used when present. Returns 0 or MUSTER_ECONFIG / MUSTER_EIO / MUSTER_ENOMEM
 * with a cause. */
int kube_config_in_cluster(const char *sa_dir, struct kube_config *cfg, char **cause);

/* Frees the members and zeroes the struct. Accepts NULL. */
void kube_config_free(struct kube_config *cfg);

/* Reads a whole regular file of at most `max` bytes into a malloc'd,
 * NUL-terminated buffer. Returns 0, MUSTER_EIO or MUSTER_ETOOBIG (cause set) or
 * MUSTER_ENOMEM. Shared with the transport, which re-reads token files. */
int kube_read_file(const char *path, size_t max, char **out, size_t *out_len, char **cause);

#endif
