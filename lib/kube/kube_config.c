/*
 * kube_config: kubeconfig (libyaml) and in-cluster loaders. See kube_config.h.
 *
 * The kubeconfig is loaded as a libyaml document and walked along fixed paths
 * only (contexts -> cluster/user -> fields), never recursively, so a hostile
 * file with deep nesting or alias cycles costs at most its bounded size.
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_config.h"
#include "yaml_json.h"
#include "kube_error.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

void kube_config_defaults(struct kube_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->qps = KUBE_DEFAULT_QPS;
	cfg->burst = KUBE_DEFAULT_BURST;
	cfg->connect_timeout_ms = KUBE_DEFAULT_CONNECT_TIMEOUT_MS;
	cfg->request_timeout_ms = KUBE_DEFAULT_REQUEST_TIMEOUT_MS;
	cfg->watch_timeout_s = KUBE_DEFAULT_WATCH_TIMEOUT_S;
	cfg->max_response_bytes = KUBE_DEFAULT_MAX_RESPONSE;
	cfg->max_watch_line_bytes = KUBE_DEFAULT_MAX_WATCH_LINE;
	cfg->max_retries = KUBE_DEFAULT_MAX_RETRIES;
}

static void free_secret(void *p, size_t len)
{
	/* Credentials do not linger in freed heap memory. The volatile pointer
	 * keeps the compiler from eliding the stores before free(). */
	volatile unsigned char *b = p;

	if (!p)
		return;
	for (size_t i = 0; i < len; i++)
		b[i] = 0;
	free(p);
}

void kube_config_free(struct kube_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->namespace);
	free(cfg->ca_file);
	free(cfg->ca_data);
	if (cfg->token)
		free_secret(cfg->token, strlen(cfg->token));
	free(cfg->token_file);
	free(cfg->client_cert_file);
	free(cfg->client_cert_data);
	free(cfg->client_key_file);
	free_secret(cfg->client_key_data, cfg->client_key_data_len);
	memset(cfg, 0, sizeof(*cfg));
}

int kube_read_file(const char *path, size_t max, char **out, size_t *out_len, char **cause)
{
	struct stat st;
	char *buf = NULL;
	size_t cap, len = 0;
	int fd, err = MUSTER_OK;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cause_err(cause, MUSTER_EIO, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		err = cause_err(cause, MUSTER_EIO, "%s is not a regular file", path);
		goto out;
	}
	if ((unsigned long long)st.st_size > max) {
		err = cause_err(cause, MUSTER_ETOOBIG, "%s is larger than %zu bytes", path, max);
		goto out;
	}
	/* The file may grow between fstat and read: read until EOF, but never
	 * past max. One byte of room detects growth past the limit. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nbuf;

			if (ncap <= cap) {
				err = cause_err(cause, MUSTER_ETOOBIG, "%s is larger than %zu bytes", path,
						max);
				goto out;
			}
			nbuf = realloc(buf, ncap + 1);
			if (!nbuf) {
				err = MUSTER_ENOMEM;
				goto out;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = cause_err(cause, MUSTER_EIO, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max) {
		err = cause_err(cause, MUSTER_ETOOBIG, "%s is larger than %zu bytes", path, max);
		goto out;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

/* ---- small string helpers ---- */

static char *path_join(const char *dir, const char *name)
{
	size_t dl, nl;
	char *p;

	if (name[0] == '/' || !dir || !dir[0])
		return strdup(name);
	dl = strlen(dir);
	nl = strlen(name);
	p = malloc(dl + nl + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, nl + 1);
	return p;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes standard base64 (white space ignored, padding optional) into a
 * malloc'd buffer with a NUL after the data. Returns 0 or -1 on bad input
 * or allocation failure. */
static int base64_decode(const char *in, size_t in_len, unsigned char **out, size_t *out_len)
{
	unsigned char *buf = malloc(in_len / 4 * 3 + 4);
	unsigned acc = 0;
	size_t len = 0, pad = 0;
	int bits = 0;

	if (!buf)
		return -1;
	for (size_t i = 0; i < in_len; i++) {
		unsigned char c = (unsigned char)in[i];
		int v;

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		v = b64_value(c);
		if (v < 0 || pad)
			goto fail;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[len++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits must be zero padding of a final 2- or 3-symbol group. */
	if (pad > 2 || bits >= 6 || acc != 0)
		goto fail;
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
fail:
	free(buf);
	return -1;
}

/* ---- the YAML walk ---- */

struct walk {
	yaml_document_t *doc;
	const char *base_dir;
	char **cause;
};

static yaml_node_t *node_at(struct walk *w, int index)
{
	return yaml_document_get_node(w->doc, index);
}

static int scalar_is(const yaml_node_t *node, const char *text)
{
	size_t n = strlen(text);

	return node && node->type == YAML_SCALAR_NODE && node->data.scalar.length == n &&
	       memcmp(node->data.scalar.value, text, n) == 0;
}

/* The value under `key` of a mapping node, or NULL. */
static yaml_node_t *map_get(struct walk *w, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
		if (scalar_is(node_at(w, p->key), key))
			return node_at(w, p->value);
	return NULL;
}

/* In a sequence of {name: N, <field>: {...}} entries, the <field> mapping
 * of the entry called `name`, or NULL. */
static yaml_node_t *named_entry(struct walk *w, const yaml_node_t *seq, const char *name, const char *field)
{
	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return NULL;
	for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
		yaml_node_t *entry = node_at(w, *i);

		if (scalar_is(map_get(w, entry, "name"), name)) {
			yaml_node_t *value = map_get(w, entry, field);

			return value && value->type == YAML_MAPPING_NODE ? value : NULL;
		}
	}
	return NULL;
}

/* Copies the scalar under `key` into *out (NULL when absent or empty).
 * Refuses non-scalars, embedded NULs and values over KUBE_CONFIG_VALUE_MAX. */
static int get_string(struct walk *w, const yaml_node_t *map, const char *key, char **out)
{
	yaml_node_t *node = map_get(w, map, key);
	size_t len;

	*out = NULL;
	if (!node)
		return MUSTER_OK;
	if (node->type != YAML_SCALAR_NODE)
		return cause_err(w->cause, MUSTER_ECONFIG, "kubeconfig: %s is not a string", key);
	len = node->data.scalar.length;
	if (len > KUBE_CONFIG_VALUE_MAX)
		return cause_err(w->cause, MUSTER_ECONFIG, "kubeconfig: %s is longer than %d bytes", key,
				 KUBE_CONFIG_VALUE_MAX);
	if (memchr(node->data.scalar.value, '\0', len))
		return cause_err(w->cause, MUSTER_ECONFIG, "kubeconfig: %s holds a NUL byte", key);
	if (len == 0)
		return MUSTER_OK;
	*out = strndup((const char *)node->data.scalar.value, len);
	return *out ? MUSTER_OK : MUSTER_ENOMEM;
}

/* A file name under `key`, resolved against the kubeconfig's directory. */
static int get_path(struct walk *w, const yaml_node_t *map, const char *key, char **out)
{
	char *raw;
	int err = get_string(w, map, key, &raw);

	*out = NULL;
	if (err || !raw)
		return err;
	*out = path_join(w->base_dir, raw);
	free(raw);
	return *out ? MUSTER_OK : MUSTER_ENOMEM;
}

/* Base64 data under `key`, decoded. */
static int get_data(struct walk *w, const yaml_node_t *map, const char *key, unsigned char **out, size_t *len)
{
	char *raw;
	int err = get_string(w, map, key, &raw);

	*out = NULL;
	*len = 0;
	if (err || !raw)
		return err;
	if (base64_decode(raw, strlen(raw), out, len) != 0)
		err = cause_err(w->cause, MUSTER_ECONFIG, "kubeconfig: %s is not valid base64", key);
	free(raw);
	return err;
}

static int is_false(const yaml_node_t *node)
{
	static const char *const no[] = {
		"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", ""
	};

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (scalar_is(node, no[i]))
			return 1;
	return 0;
}

static int load_cluster(struct walk *w, const yaml_node_t *cluster, struct kube_config *cfg)
{
	yaml_node_t *insecure = map_get(w, cluster, "insecure-skip-tls-verify");
	int err;

	/* Anything but an explicit false is refused: TLS is always verified. */
	if (insecure && !is_false(insecure))
		return cause_err(w->cause, MUSTER_ECONFIG,
				 "kubeconfig: insecure-skip-tls-verify is set; muster always verifies TLS, "
				 "give the cluster's CA instead");
	if ((err = get_string(w, cluster, "server", &cfg->server)))
		return err;
	if (!cfg->server)
		return cause_err(w->cause, MUSTER_ECONFIG, "kubeconfig: the cluster has no server");
	if (strncmp(cfg->server, "https://", 8) != 0 || !cfg->server[8])
		return cause_err(w->cause, MUSTER_ECONFIG, "kubeconfig: the server must be an https:// URL");
	/* The client appends paths that begin with '/'. */
	for (size_t n = strlen(cfg->server); n > 8 && cfg->server[n - 1] == '/'; n--)
		cfg->server[n - 1] = '\0';
	if ((err = get_path(w, cluster, "certificate-authority", &cfg->ca_file)))
		return err;
	return get_data(w, cluster, "certificate-authority-data", &cfg->ca_data, &cfg->ca_data_len);
}

static int load_user(struct walk *w, const yaml_node_t *user, struct kube_config *cfg)
{
	int err;

	if (map_get(w, user, "exec") || map_get(w, user, "auth-provider") || map_get(w, user, "username"))
		return cause_err(w->cause, MUSTER_ECONFIG,
				 "kubeconfig: exec, auth-provider and basic auth users are not supported; "
				 "use a token or a client certificate");
	if ((err = get_string(w, user, "token", &cfg->token)))
		return err;
	if ((err = get_path(w, user, "tokenFile", &cfg->token_file)))
		return err;
	if ((err = get_path(w, user, "client-certificate", &cfg->client_cert_file)))
		return err;
	if ((err = get_data(w, user, "client-certificate-data", &cfg->client_cert_data,
			    &cfg->client_cert_data_len)))
		return err;
	if ((err = get_path(w, user, "client-key", &cfg->client_key_file)))
		return err;
	if ((err = get_data(w, user, "client-key-data", &cfg->client_key_data, &cfg->client_key_data_len)))
		return err;
	if ((cfg->client_cert_file || cfg->client_cert_data) !=
	    (cfg->client_key_file || cfg->client_key_data))
		return cause_err(
			w->cause, MUSTER_ECONFIG,
			"kubeconfig: a client certificate needs a client key and the other way round");
	return MUSTER_OK;
}

int kube_config_parse_kubeconfig(const char *yaml, size_t len, const char *base_dir, const char *context,
				 struct kube_config *cfg, char **cause)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int have_doc = 0, err;
	struct walk w = { &doc, base_dir, cause };
	yaml_node_t *root, *ctx, *node;
	char *ctx_name = NULL, *cluster_name = NULL, *user_name = NULL;

	kube_config_defaults(cfg);
	if (len > KUBE_CONFIG_FILE_MAX)
		return cause_err(cause, MUSTER_ETOOBIG, "kubeconfig is larger than %d bytes",
				 KUBE_CONFIG_FILE_MAX);
	if (yaml_json_too_deep_at(yaml, len) < len)
		return cause_err(cause, MUSTER_EPARSE,
				 "kubeconfig is not valid YAML: nested deeper than %d levels (at byte %zu)",
				 YAML_JSON_DEPTH_MAX, yaml_json_too_deep_at(yaml, len));
	if (!yaml_parser_initialize(&parser))
		return MUSTER_ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		err = cause_err(cause, MUSTER_EPARSE, "kubeconfig is not valid YAML: %s at line %lu",
				parser.problem ? parser.problem : "error",
				(unsigned long)parser.problem_mark.line + 1);
		goto out;
	}
	have_doc = 1;
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		err = cause_err(cause, MUSTER_ECONFIG, "kubeconfig is not a mapping");
		goto out;
	}
	if (context) {
		ctx_name = strdup(context);
		if (!ctx_name) {
			err = MUSTER_ENOMEM;
			goto out;
		}
	} else if ((err = get_string(&w, root, "current-context", &ctx_name))) {
		goto out;
	}
	if (!ctx_name) {
		err = cause_err(cause, MUSTER_ECONFIG,
				"kubeconfig has no current-context and none was given");
		goto out;
	}
	ctx = named_entry(&w, map_get(&w, root, "contexts"), ctx_name, "context");
	if (!ctx) {
		err = cause_err(cause, MUSTER_ECONFIG, "kubeconfig has no context named \"%.128s\"",
				ctx_name);
		goto out;
	}
	if ((err = get_string(&w, ctx, "cluster", &cluster_name)) ||
	    (err = get_string(&w, ctx, "user", &user_name)) ||
	    (err = get_string(&w, ctx, "namespace", &cfg->namespace)))
		goto out;
	node = cluster_name ? named_entry(&w, map_get(&w, root, "clusters"), cluster_name, "cluster") : NULL;
	if (!node) {
		err = cause_err(cause, MUSTER_ECONFIG,
				"kubeconfig: context \"%.128s\" names no known cluster", ctx_name);
		goto out;
	}
	if ((err = load_cluster(&w, node, cfg)))
		goto out;
	/* A context without a user talks to the server anonymously. */
	if (user_name) {
		node = named_entry(&w, map_get(&w, root, "users"), user_name, "user");
		if (!node) {
			err = cause_err(cause, MUSTER_ECONFIG, "kubeconfig: no user named \"%.128s\"",
					user_name);
			goto out;
		}
		if ((err = load_user(&w, node, cfg)))
			goto out;
	}
	err = MUSTER_OK;
out:
	if (err)
		kube_config_free(cfg);
	free(ctx_name);
	free(cluster_name);
	free(user_name);
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return err;
}

int kube_config_from_kubeconfig(const char *path, const char *context, struct kube_config *cfg, char **cause)
{
	char *text = NULL, *dir = NULL, *slash;
	size_t len;
	int err;

	kube_config_defaults(cfg);
	err = kube_read_file(path, KUBE_CONFIG_FILE_MAX, &text, &len, cause);
	if (err)
		goto out;
	dir = strdup(path);
	if (!dir) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
	err = kube_config_parse_kubeconfig(text, len, dir[0] ? dir : ".", context, cfg, cause);
out:
	free(text);
	free(dir);
	return err;
}

/* Reads a small file and trims surrounding white space; *out NULL if empty. */
static int read_trimmed(const char *path, char **out, char **cause)
{
	char *text;
	size_t len, start = 0;
	int err = kube_read_file(path, KUBE_CONFIG_FILE_MAX, &text, &len, cause);

	*out = NULL;
	if (err)
		return err;
	while (len > 0 && strchr(" \t\r\n", text[len - 1]))
		len--;
	while (start < len && strchr(" \t\r\n", text[start]))
		start++;
	if (len > start) {
		memmove(text, text + start, len - start);
		text[len - start] = '\0';
		*out = text;
		return MUSTER_OK;
	}
	free(text);
	return MUSTER_OK;
}

static int valid_host(const char *host)
{
	size_t n = strnlen(host, 256);

	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = host[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == ':' || c == '%'))
			return 0;
	}
	return 1;
}

static int valid_port(const char *port)
{
	unsigned long v = 0;
	size_t n = strnlen(port, 8);

	if (n == 0 || n > 5)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (port[i] < '0' || port[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(port[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

int kube_config_in_cluster(const char *sa_dir, struct kube_config *cfg, char **cause)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *token = NULL, *path = NULL;
	size_t n;
	int err;

	kube_config_defaults(cfg);
	if (!sa_dir)
		sa_dir = KUBE_SERVICE_ACCOUNT_DIR;
	if (!host || !port) {
		err = cause_err(
			cause, MUSTER_ECONFIG,
			"not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
		goto out;
	}
	if (!valid_host(host) || !valid_port(port)) {
		err = cause_err(
			cause, MUSTER_ECONFIG,
			"KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is not a host and a port");
		goto out;
	}
	/* An IPv6 literal needs brackets in a URL. */
	n = strlen(host) + strlen(port) + 16;
	cfg->server = malloc(n);
	if (!cfg->server) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	snprintf(cfg->server, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);

	cfg->token_file = path_join(sa_dir, "token");
	if (!cfg->token_file) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	if ((err = read_trimmed(cfg->token_file, &token, cause)))
		goto out;
	if (!token) {
		err = cause_err(cause, MUSTER_ECONFIG, "the service account token %s is empty",
				cfg->token_file);
		goto out;
	}
	path = path_join(sa_dir, "ca.crt");
	if (!path) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	if (access(path, R_OK) == 0) {
		cfg->ca_file = path;
		path = NULL;
	}
	free(path);
	path = path_join(sa_dir, "namespace");
	if (!path) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	/* The namespace file is optional: a missing one leaves NULL. */
	if (access(path, R_OK) == 0 && (err = read_trimmed(path, &cfg->namespace, cause)))
		goto out;
	err = MUSTER_OK;
out:
	if (token)
		free_secret(token, strlen(token));
	free(path);
	if (err)
		kube_config_free(cfg);
	return err;
}
