/*
 * topo_fields: the bounded field readers of the topology objects' decoders
 * (Node, Pod, HyperNode, Kueue Topology, the JobSet's pod templates):
 * strings, counts, quantities, label maps, selector requirements, taint
 * effects, and a pod's effective request as kube-scheduler counts it. Every
 * failure is a cause "<where>: <field><key>: <what is wrong>" (docs/errors.md);
 * `where` names the object ("nodes: items[3] (n-7)"), `field` the path to
 * the key, ending in '.' when the key follows ("spec.").
 *
 * Internal to lib/topo: callers outside use topo_objects.h and topo_jobset.h.
 */
#ifndef MUSTER_TOPO_FIELDS_H
#define MUSTER_TOPO_FIELDS_H

#include <stddef.h>

#include "topo_objects.h"

struct cJSON;

/* A string field, borrowed from the tree: *out NULL when absent or null; -1
 * when of another type or longer than max. */
int topo_field_string(const struct cJSON *obj, const char *key, size_t max, const char **out,
		      const char *where, const char *field, char **cause);

/* The same, copied into the store. */
int topo_field_copy(struct topo_store *s, const struct cJSON *obj, const char *key, size_t max,
		    const char **out, const char *where, const char *field, char **cause);

/* An integer 0..max from a JSON number or a (YAML) decimal string; def when
 * absent or null. */
int topo_field_count(const struct cJSON *obj, const char *key, long long def, long long max, long long *out,
		     const char *where, const char *field, char **cause);

/* A quantity (lib/base/quantity.h) from a string or a JSON number; -1 when
 * neither or malformed. */
long long topo_field_quantity(const struct cJSON *v);

/* Refuses an item that is no object, or whose kind is present and not `want`
 * (a pods file given as nodes says so). */
int topo_field_kind(const struct cJSON *item, const char *want, const char *where, char **cause);

/* A map of string to string (labels, nodeSelector, matchLabels), copied. */
int topo_field_labels(struct topo_store *s, const struct cJSON *obj, struct topo_label **out, size_t *count,
		      const char *where, const char *field, char **cause);

/* A list of requirements (matchExpressions, matchFields), copied and added
 * at out[*count]. Label selectors allow In / NotIn / Exists / DoesNotExist;
 * node affinity Gt / Lt too, and matchFields only metadata.name with In /
 * NotIn. */
enum topo_requirement_kind { TOPO_REQ_LABEL_SELECTOR, TOPO_REQ_NODE_AFFINITY, TOPO_REQ_NODE_FIELDS };
int topo_field_requirements(struct topo_store *s, const struct cJSON *list, enum topo_requirement_kind kind,
			    struct topo_requirement *out, size_t *count, const char *where, const char *field,
			    char **cause);

/* The size of an optional list of at most max items, or -1. */
int topo_field_list_size(const struct cJSON *list, int max, const char *where, const char *field,
			 char **cause);

/* A taint effect by name: 0, or -1 for NULL or an unknown name. */
int topo_field_effect(const char *name, enum topo_effect *e);

/* The pod's effective request from its spec (topo_objects.h, pod usage);
 * `prefix` names the spec in causes ("spec", "template.spec.template.spec").
 * Names point into the tree. */
int topo_pod_requests(const struct cJSON *spec, struct topo_amounts *out, const char *where,
		      const char *prefix, char **cause);

#endif
