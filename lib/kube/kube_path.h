/*
 * kube_path: the one builder of Kubernetes API paths, and the name rules
 * that any value must pass before it goes into one.
 *
 * Every path muster requests is made here from a resource (its API prefix
 * and plural), a namespace and a name. Names and namespaces often come from
 * objects a tenant wrote (a pod's labels reach the webhook before the
 * apiserver has validated them), so each is checked for its syntax before
 * use, and every byte that is not unreserved in a URI (RFC 3986) is
 * percent-encoded in any case: a value can never add a path segment, a
 * query or a fragment, nor name another namespace.
 *
 * Rules: a namespace is a DNS-1123 label (1 to 63 of a-z, 0-9 and '-',
 * alphanumeric at both ends); a name is a DNS-1123 subdomain (1 to 253, the
 * same with dots between labels), as for every kind muster names. Pure; no
 * state.
 */
#ifndef MUSTER_KUBE_PATH_H
#define MUSTER_KUBE_PATH_H

#include <stddef.h>

#define KUBE_NAMESPACE_MAX 63
#define KUBE_NAME_MAX 253

/* A resource's place in the API. */
struct kube_resource {
	const char *prefix; /* "/api/v1" or "/apis/GROUP/VERSION" */
	const char *plural; /* "configmaps" */
	int namespaced; /* 0: cluster-scoped (Nodes, HyperNodes, Topologies) */
};

/* The resources muster reads and writes, each defined once. */
extern const struct kube_resource KUBE_CONFIGMAPS, KUBE_PODS, KUBE_NODES, KUBE_EVENTS, KUBE_LEASES, KUBE_JOBS,
	KUBE_JOBSETS, KUBE_KUEUE_TOPOLOGIES, KUBE_KUEUE_TOPOLOGIES_V1BETA1, KUBE_VOLCANO_HYPERNODES;

/* 1 when s is a DNS-1123 label of at most max bytes, else 0 (NULL is 0). */
int kube_dns_label(const char *s, size_t max);

/* 1 when s is a DNS-1123 subdomain of at most max bytes, else 0. */
int kube_dns_subdomain(const char *s, size_t max);

/* 1 when s is a label value: at most 63 of A-Z, a-z, 0-9, '-', '_' and
 * '.', alphanumeric at both ends; "" too. NULL is 0. */
int kube_label_value(const char *s);

/* Writes the path of `name` in `namespace` into out (size bytes):
 * "PREFIX/namespaces/NS/PLURAL/NAME". namespace NULL: all namespaces (or a
 * cluster-scoped resource); name NULL: the collection. 0, or MUSTER_EINVAL
 * with a cause that names the rule broken (never the raw value: it may be
 * any bytes) when a value breaks its rule or the path does not fit. */
int kube_path(char *out, size_t size, const struct kube_resource *resource, const char *namespace,
	      const char *name, char **cause);

#endif
