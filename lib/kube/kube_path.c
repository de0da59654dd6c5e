/*
 * kube_path: API paths and the name rules (kube_path.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_path.h"

#include <stdio.h>
#include <string.h>

#include "kube_error.h"

const struct kube_resource KUBE_CONFIGMAPS = { "/api/v1", "configmaps", 1 };
const struct kube_resource KUBE_PODS = { "/api/v1", "pods", 1 };
const struct kube_resource KUBE_NODES = { "/api/v1", "nodes", 0 };
const struct kube_resource KUBE_EVENTS = { "/api/v1", "events", 1 };
const struct kube_resource KUBE_LEASES = { "/apis/coordination.k8s.io/v1", "leases", 1 };
const struct kube_resource KUBE_JOBS = { "/apis/batch/v1", "jobs", 1 };
const struct kube_resource KUBE_JOBSETS = { "/apis/jobset.x-k8s.io/v1alpha2", "jobsets", 1 };
const struct kube_resource KUBE_KUEUE_TOPOLOGIES = { "/apis/kueue.x-k8s.io/v1beta2", "topologies", 0 };
const struct kube_resource KUBE_KUEUE_TOPOLOGIES_V1BETA1 = { "/apis/kueue.x-k8s.io/v1beta1", "topologies",
							     0 };
const struct kube_resource KUBE_VOLCANO_HYPERNODES = { "/apis/topology.volcano.sh/v1alpha1", "hypernodes",
						       0 };

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A DNS-1123 label of at most max bytes, or with dots allowed between
 * labels, a DNS-1123 subdomain. */
static int dns_name(const char *s, size_t max, int dots)
{
	size_t n = s ? strnlen(s, max + 1) : 0;

	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int edge = i == 0 || i == n - 1 || (dots && (s[i - 1] == '.' || s[i + 1] == '.'));

		if (is_lower_alnum(s[i]))
			continue;
		if (s[i] == '-' && !edge)
			continue;
		if (dots && s[i] == '.' && i > 0 && i < n - 1 && s[i - 1] != '.')
			continue;
		return 0;
	}
	return 1;
}

int kube_dns_label(const char *s, size_t max)
{
	return dns_name(s, max, 0);
}

int kube_dns_subdomain(const char *s, size_t max)
{
	return dns_name(s, max, 1);
}

static int alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

int kube_label_value(const char *s)
{
	size_t n = s ? strnlen(s, 64) : 64;

	if (n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && ((s[i] != '-' && s[i] != '_' && s[i] != '.') || i == 0 || i == n - 1))
			return 0;
	return 1;
}

static int unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '.' || c == '_' || c == '~';
}

/* Appends text to out at *at, percent-encoding what is not unreserved;
 * -1 when it does not fit. */
static int append(char *out, size_t size, size_t *at, const char *text, int encode)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (!encode || unreserved(*p) || *p == '/') {
			if (*at + 1 >= size)
				return -1;
			out[(*at)++] = (char)*p;
		} else {
			if (*at + 3 >= size)
				return -1;
			out[(*at)++] = '%';
			out[(*at)++] = hex[*p >> 4];
			out[(*at)++] = hex[*p & 15];
		}
	}
	out[*at] = '\0';
	return 0;
}

/* One path segment from a checked value: '/' is encoded too. */
static int append_segment(char *out, size_t size, size_t *at, const char *value)
{
	char one[2] = { 0, 0 };

	if (append(out, size, at, "/", 0))
		return -1;
	for (const char *p = value; *p; p++) {
		one[0] = *p;
		if (*p == '/') {
			if (append(out, size, at, "%2F", 0))
				return -1;
		} else if (append(out, size, at, one, 1)) {
			return -1;
		}
	}
	return 0;
}

int kube_path(char *out, size_t size, const struct kube_resource *resource, const char *namespace,
	      const char *name, char **cause)
{
	size_t at = 0;

	if (size)
		out[0] = '\0';
	if (namespace && !resource->namespaced)
		return cause_err(cause, MUSTER_EINVAL, "%s are not namespaced", resource->plural);
	if (namespace && !kube_dns_label(namespace, KUBE_NAMESPACE_MAX))
		return cause_err(cause, MUSTER_EINVAL,
				 "a namespace must be a DNS-1123 label (1 to %d of a-z, 0-9 and '-', "
				 "alphanumeric at both ends)",
				 KUBE_NAMESPACE_MAX);
	if (name && !kube_dns_subdomain(name, KUBE_NAME_MAX))
		return cause_err(cause, MUSTER_EINVAL,
				 "the name of one of %s must be a DNS-1123 subdomain (1 to %d of a-z, 0-9, "
				 "'-' and '.', alphanumeric at both ends of each part)",
				 resource->plural, KUBE_NAME_MAX);
	if (append(out, size, &at, resource->prefix, 1) ||
	    (namespace &&
	     (append(out, size, &at, "/namespaces", 0) || append_segment(out, size, &at, namespace))) ||
	    append_segment(out, size, &at, resource->plural) ||
	    (name && append_segment(out, size, &at, name)))
		return cause_err(cause, MUSTER_EINVAL, "the path of one of %s is longer than %zu bytes",
				 resource->plural, size ? size - 1 : 0);
	return MUSTER_OK;
}
