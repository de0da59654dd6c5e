/*
 * topo_objects: the cluster objects that placement reads, one decoder per
 * kind. See topo_objects.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_objects.h"

#include "cause.h"
#include "kjson.h"
#include "topo_fields.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* ---- Node ---- */

/* The Ready condition: 1 True, 0 another status, -1 not reported. */
static int node_ready(const cJSON *conditions)
{
	const cJSON *c;

	if (!cJSON_IsArray(conditions))
		return -1;
	cJSON_ArrayForEach(c, conditions)
	{
		const cJSON *type = kjson_value(c, "type"), *status = kjson_value(c, "status");

		if (cJSON_IsString(type) && strcmp(type->valuestring, "Ready") == 0)
			return cJSON_IsString(status) && strcmp(status->valuestring, "True") == 0;
	}
	return -1;
}

int topo_node_decode(struct topo_store *s, const cJSON *it, const char *where_given,
		     const struct topo_cluster *resources, struct topo_node_object *out, char **cause)
{
	struct topo_node *node = &out->node;
	const cJSON *taints = kjson_path(it, "spec", "taints", NULL),
		    *alloc = kjson_path(it, "status", "allocatable", NULL);
	const cJSON *x;
	struct topo_label *labels;
	char where[320];
	int n;

	memset(out, 0, sizeof(*out));
	snprintf(where, sizeof(where), "%s", where_given);
	if (topo_field_kind(it, "Node", where, cause) ||
	    topo_field_copy(s, kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &node->name, where,
			    "metadata.", cause))
		return -1;
	if (!node->name || !node->name[0])
		return cause_replace(cause, "%s: metadata.name: missing", where);
	snprintf(where, sizeof(where), "%s (%s)", where_given, node->name);
	if (topo_field_labels(s, kjson_path(it, "metadata", "labels", NULL), &labels, &node->label_count,
			      where, "metadata.labels", cause))
		return -1;
	node->labels = labels;
	node->unschedulable = kjson_is_true(kjson_path(it, "spec", "unschedulable", NULL));
	if ((n = topo_field_list_size(taints, TOPO_OBJ_TAINTS_MAX, where, "spec.taints", cause)) < 0)
		return -1;
	if (n > 0) {
		struct topo_taint *t = topo_store_alloc(s, (size_t)n, sizeof(*t));
		size_t k = 0;

		if (!t)
			return topo_store_nomem(s, cause);
		cJSON_ArrayForEach(x, taints)
		{
			const char *effect;
			char field[48];

			snprintf(field, sizeof(field), "spec.taints[%zu].", k);
			if (topo_field_copy(s, x, "key", TOPO_OBJ_KEY_MAX, &t[k].key, where, field, cause) ||
			    topo_field_copy(s, x, "value", TOPO_VALUE_MAX, &t[k].value, where, field,
					    cause) ||
			    topo_field_string(x, "effect", 32, &effect, where, field, cause))
				return -1;
			if (!t[k].key || !t[k].key[0])
				return cause_replace(cause, "%s: %skey: missing", where, field);
			if (topo_field_effect(effect, &t[k].effect))
				return cause_replace(
					cause,
					"%s: %seffect: %s is not NoSchedule, PreferNoSchedule or NoExecute",
					where, field, effect ? effect : "(missing)");
			k++;
		}
		node->taints = t;
		node->taint_count = k;
	}
	if (alloc && !cJSON_IsObject(alloc))
		return cause_replace(cause, "%s: status.allocatable: not a map", where);
	cJSON_ArrayForEach(x, alloc)
	{
		int r = x->string ? topo_resource_index(resources, x->string) : -1;
		long long q = topo_field_quantity(x);

		if (q < 0)
			return cause_replace(cause, "%s: status.allocatable[\"%s\"]: bad quantity %s", where,
					     x->string ? x->string : "",
					     cJSON_IsString(x) ? x->valuestring : "(not a string)");
		if (r >= 0)
			node->allocatable[r] = strcmp(x->string, "pods") == 0 ? q / 1000 : q;
	}
	out->ready = node_ready(kjson_path(it, "status", "conditions", NULL));
	node->not_ready = out->ready == 0;
	return 0;
}

/* ---- Pod, as usage ---- */

int topo_pod_usage_decode(const cJSON *it, const char *where_given, struct topo_pod_usage *out, char **cause)
{
	const cJSON *spec = kjson_value(it, "spec");
	const char *phase;
	char where[320];

	memset(out, 0, sizeof(*out));
	snprintf(where, sizeof(where), "%s", where_given);
	if (topo_field_kind(it, "Pod", where, cause) ||
	    topo_field_string(kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &out->name, where,
			      "metadata.", cause))
		return -1;
	if (out->name)
		snprintf(where, sizeof(where), "%s (%s)", where_given, out->name);
	if (topo_field_string(spec, "nodeName", TOPO_NAME_MAX, &out->node_name, where, "spec.", cause) ||
	    topo_field_string(kjson_value(it, "status"), "phase", 64, &phase, where, "status.", cause))
		return -1;
	if (out->node_name && !out->node_name[0])
		out->node_name = NULL;
	/* Only bound pods that have not ended hold resources. */
	out->holds = out->node_name &&
		     !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
	if (!out->holds)
		return 0;
	if (topo_pod_requests(spec, &out->requests, where, "spec", cause))
		return -1;
	/* "pods" is counted per pod, never requested. */
	for (size_t i = 0; i < out->requests.count; i++)
		if (strcmp(out->requests.names[i], "pods") == 0) {
			out->requests.names[i] = out->requests.names[out->requests.count - 1];
			out->requests.values[i] = out->requests.values[--out->requests.count];
			break;
		}
	return 0;
}

/* ---- a pod template's scheduling ---- */

static int decode_tolerations(struct topo_store *s, const cJSON *list, struct topo_pod_scheduling *g,
			      const char *where, const char *prefix, char **cause)
{
	char field[96];
	const cJSON *x;
	size_t k = 0;
	int n;

	snprintf(field, sizeof(field), "%s.tolerations", prefix);
	n = topo_field_list_size(list, TOPO_OBJ_TOLERATIONS_MAX, where, field, cause);
	if (n <= 0)
		return n;
	g->tolerations = topo_store_alloc(s, (size_t)n, sizeof(*g->tolerations));
	if (!g->tolerations)
		return topo_store_nomem(s, cause);
	cJSON_ArrayForEach(x, list)
	{
		struct topo_toleration *t = &g->tolerations[k];
		const char *op, *effect;
		char f[128];

		snprintf(f, sizeof(f), "%s[%zu].", field, k);
		if (topo_field_copy(s, x, "key", TOPO_OBJ_KEY_MAX, &t->key, where, f, cause) ||
		    topo_field_copy(s, x, "value", TOPO_VALUE_MAX, &t->value, where, f, cause) ||
		    topo_field_string(x, "operator", 16, &op, where, f, cause) ||
		    topo_field_string(x, "effect", 32, &effect, where, f, cause))
			return -1;
		if (op && op[0] && strcmp(op, "Exists") != 0 && strcmp(op, "Equal") != 0)
			return cause_replace(cause, "%s: %soperator: %s is neither Exists nor Equal", where,
					     f, op);
		t->exists = op && strcmp(op, "Exists") == 0;
		if (!t->exists && (!t->key || !t->key[0]))
			return cause_replace(cause, "%s: %skey: an empty key needs operator Exists", where,
					     f);
		t->any_effect = !effect || !effect[0];
		if (!t->any_effect && topo_field_effect(effect, &t->effect))
			return cause_replace(
				cause, "%s: %seffect: %s is not NoSchedule, PreferNoSchedule or NoExecute",
				where, f, effect);
		k++;
	}
	g->toleration_count = k;
	return 0;
}

/* One node selector term (matchExpressions and matchFields, all of them
 * required), `field` naming it. */
static int decode_term(struct topo_store *s, const cJSON *term, struct topo_term *out, const char *where,
		       const char *field, char **cause)
{
	const cJSON *exprs = kjson_value(term, "matchExpressions"),
		    *fields = kjson_value(term, "matchFields");
	char fe[400], ff[400];
	int ne, nf;
	struct topo_requirement *reqs;
	size_t count = 0;

	if (term && !cJSON_IsObject(term))
		return cause_replace(cause, "%s: %s: not a map", where, field);
	snprintf(fe, sizeof(fe), "%s.matchExpressions", field);
	snprintf(ff, sizeof(ff), "%s.matchFields", field);
	if ((ne = topo_field_list_size(exprs, TOPO_OBJ_EXPRESSIONS_MAX, where, fe, cause)) < 0 ||
	    (nf = topo_field_list_size(fields, TOPO_OBJ_EXPRESSIONS_MAX, where, ff, cause)) < 0)
		return -1;
	reqs = topo_store_alloc(s, (size_t)(ne + nf), sizeof(*reqs));
	if (!reqs)
		return topo_store_nomem(s, cause);
	if (topo_field_requirements(s, exprs, TOPO_REQ_NODE_AFFINITY, reqs, &count, where, fe, cause) ||
	    topo_field_requirements(s, fields, TOPO_REQ_NODE_FIELDS, reqs, &count, where, ff, cause))
		return -1;
	*out = (struct topo_term){ reqs, count };
	return 0;
}

static int decode_affinity(struct topo_store *s, const cJSON *pod_spec, struct topo_pod_scheduling *g,
			   const char *where, const char *prefix, char **cause)
{
	char field[160];
	const cJSON *required = kjson_path(pod_spec, "affinity", "nodeAffinity",
					   "requiredDuringSchedulingIgnoredDuringExecution");
	const cJSON *terms = kjson_value(required, "nodeSelectorTerms"), *term;
	size_t k = 0;
	int n;

	snprintf(field, sizeof(field),
		 "%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
		 prefix);
	n = topo_field_list_size(terms, TOPO_OBJ_TERMS_MAX, where, field, cause);
	if (n < 0)
		return -1;
	if (required && n == 0)
		return cause_replace(cause, "%s: %s: empty (no node would match)", where, field);
	if (n == 0)
		return 0;
	g->affinity = topo_store_alloc(s, (size_t)n, sizeof(*g->affinity));
	if (!g->affinity)
		return topo_store_nomem(s, cause);
	cJSON_ArrayForEach(term, terms)
	{
		char f[320];

		snprintf(f, sizeof(f), "%s[%zu]", field, k);
		if (decode_term(s, term, &g->affinity[k], where, f, cause))
			return -1;
		k++;
	}
	g->affinity_count = k;
	return 0;
}

/* preferredDuringSchedulingIgnoredDuringExecution: terms with a weight of
 * 1 to 100 (as the API server validates it) and a preference. */
static int decode_preferred(struct topo_store *s, const cJSON *pod_spec, struct topo_pod_scheduling *g,
			    const char *where, const char *prefix, char **cause)
{
	char field[160];
	const cJSON *list = kjson_path(pod_spec, "affinity", "nodeAffinity",
				       "preferredDuringSchedulingIgnoredDuringExecution"),
		    *item;
	size_t k = 0;
	int n;

	snprintf(field, sizeof(field),
		 "%s.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution", prefix);
	n = topo_field_list_size(list, TOPO_OBJ_TERMS_MAX, where, field, cause);
	if (n <= 0)
		return n;
	g->preferred = topo_store_alloc(s, (size_t)n, sizeof(*g->preferred));
	if (!g->preferred)
		return topo_store_nomem(s, cause);
	cJSON_ArrayForEach(item, list)
	{
		char f[200], pf[320];
		long long weight;

		snprintf(f, sizeof(f), "%s[%zu].", field, k);
		snprintf(pf, sizeof(pf), "%spreference", f);
		if (!cJSON_IsObject(item))
			return cause_replace(cause, "%s: %s[%zu]: not a map", where, field, k);
		if (topo_field_count(item, "weight", 0, 100, &weight, where, f, cause))
			return -1;
		if (weight < 1)
			return cause_replace(cause, "%s: %sweight: %s (1 to 100)", where, f,
					     kjson_value(item, "weight") ? "0" : "missing");
		if (decode_term(s, kjson_value(item, "preference"), &g->preferred[k].term, where, pf, cause))
			return -1;
		g->preferred[k++].weight = (int32_t)weight;
	}
	g->preferred_count = k;
	return 0;
}

int topo_pod_scheduling_decode(struct topo_store *s, const cJSON *pod_spec, const char *where,
			       const char *prefix, struct topo_pod_scheduling *out, char **cause)
{
	struct topo_amounts req;
	char field[96];

	memset(out, 0, sizeof(*out));
	if (topo_pod_requests(pod_spec, &req, where, prefix, cause))
		return -1;
	for (size_t i = 0; i < req.count; i++) {
		out->request_names[i] = topo_store_string(s, req.names[i]);
		out->request_values[i] = req.values[i];
		if (!out->request_names[i])
			return topo_store_nomem(s, cause);
	}
	out->request_count = req.count;
	snprintf(field, sizeof(field), "%s.nodeSelector", prefix);
	if (topo_field_labels(s, kjson_value(pod_spec, "nodeSelector"), &out->selector, &out->selector_count,
			      where, field, cause) ||
	    decode_affinity(s, pod_spec, out, where, prefix, cause) ||
	    decode_preferred(s, pod_spec, out, where, prefix, cause) ||
	    decode_tolerations(s, kjson_value(pod_spec, "tolerations"), out, where, prefix, cause))
		return -1;
	return 0;
}

/* ---- HyperNode ---- */

static int decode_member(struct topo_store *s, const cJSON *m, struct topo_member *out, const char *where,
			 size_t index, char **cause)
{
	const char *type;
	const cJSON *sel = kjson_value(m, "selector"), *labels;
	char field[96];
	int kinds;

	snprintf(field, sizeof(field), "spec.members[%zu].", index);
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(m))
		return cause_replace(cause, "%s: %s: not a map", where, field);
	if (topo_field_string(m, "type", 16, &type, where, field, cause))
		return -1;
	if (type && strcmp(type, "Node") != 0 && strcmp(type, "HyperNode") != 0)
		return cause_replace(cause, "%s: %stype: %s is neither Node nor HyperNode", where, field,
				     type);
	out->kind = type && strcmp(type, "HyperNode") == 0 ? TOPO_MEMBER_HYPERNODE : TOPO_MEMBER_NODE;
	if (!sel) {
		/* The design document's short form: a bare name. */
		if (topo_field_copy(s, m, "name", TOPO_NAME_MAX, &out->exact, where, field, cause))
			return -1;
		return out->exact ? 0 : cause_replace(cause, "%s: %sselector: missing", where, field);
	}
	snprintf(field, sizeof(field), "spec.members[%zu].selector.", index);
	if (topo_field_copy(s, kjson_value(sel, "exactMatch"), "name", TOPO_NAME_MAX, &out->exact, where,
			    field, cause) ||
	    topo_field_copy(s, kjson_value(sel, "regexMatch"), "pattern", TOPO_OBJ_PATTERN_MAX, &out->regex,
			    where, field, cause))
		return -1;
	labels = kjson_value(sel, "labelMatch");
	kinds = !!kjson_value(sel, "exactMatch") + !!kjson_value(sel, "regexMatch") + !!labels;
	if (kinds != 1)
		return cause_replace(cause,
				     "%s: %s: exactly one of exactMatch, regexMatch, labelMatch is needed",
				     where, field);
	if ((kjson_value(sel, "exactMatch") && !out->exact) ||
	    (kjson_value(sel, "regexMatch") && !out->regex))
		return cause_replace(cause, "%s: %s: exactMatch.name or regexMatch.pattern is missing", where,
				     field);
	if (labels) {
		const cJSON *exprs = kjson_value(labels, "matchExpressions");
		struct topo_label *l;
		struct topo_requirement *reqs;
		size_t count = 0;
		int n;

		snprintf(field, sizeof(field), "spec.members[%zu].selector.labelMatch", index);
		if (out->kind != TOPO_MEMBER_NODE)
			return cause_replace(cause, "%s: %s: for Node members only", where, field);
		if (topo_field_labels(s, kjson_value(labels, "matchLabels"), &l, &out->match_label_count,
				      where, field, cause))
			return -1;
		snprintf(field, sizeof(field), "spec.members[%zu].selector.labelMatch.matchExpressions",
			 index);
		if ((n = topo_field_list_size(exprs, TOPO_OBJ_EXPRESSIONS_MAX, where, field, cause)) < 0)
			return -1;
		reqs = topo_store_alloc(s, (size_t)n, sizeof(*reqs));
		if (!reqs)
			return topo_store_nomem(s, cause);
		if (topo_field_requirements(s, exprs, TOPO_REQ_LABEL_SELECTOR, reqs, &count, where, field,
					    cause))
			return -1;
		/* reqs is never NULL: it marks the label selector as the member's selector. */
		out->match_labels = l;
		out->match_expressions = reqs;
		out->match_expression_count = count;
	}
	return 0;
}

int topo_hypernode_decode(struct topo_store *s, const cJSON *it, const char *where_given,
			  struct topo_hypernode *h, char **cause)
{
	const cJSON *spec = kjson_value(it, "spec"), *members, *m;
	struct topo_member *mem;
	long long tier;
	size_t k = 0;
	char where[320];
	int n;

	memset(h, 0, sizeof(*h));
	snprintf(where, sizeof(where), "%s", where_given);
	if (topo_field_kind(it, "HyperNode", where, cause) ||
	    topo_field_copy(s, kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &h->name, where,
			    "metadata.", cause))
		return -1;
	if (!h->name && topo_field_copy(s, it, "name", TOPO_NAME_MAX, &h->name, where, "", cause))
		return -1; /* the design document's short form */
	if (!h->name || !h->name[0])
		return cause_replace(cause, "%s: metadata.name: missing", where);
	snprintf(where, sizeof(where), "%s (%s)", where_given, h->name);
	if (!spec)
		return cause_replace(cause, "%s: spec: missing", where);
	if (topo_field_count(spec, "tier", -1, 1000000, &tier, where, "spec.", cause) ||
	    topo_field_copy(s, spec, "tierName", TOPO_NAME_MAX, &h->tier_name, where, "spec.", cause))
		return -1;
	if (tier < 1)
		return cause_replace(cause, "%s: spec.tier: missing or below 1", where);
	h->tier = (int)tier;
	members = kjson_value(spec, "members");
	if ((n = topo_field_list_size(members, TOPO_OBJ_MEMBERS_MAX, where, "spec.members", cause)) < 0)
		return -1;
	if (n == 0)
		return cause_replace(
			cause, "%s: spec.members: missing or empty (a HyperNode lists at least one member)",
			where);
	mem = topo_store_alloc(s, (size_t)n, sizeof(*mem));
	if (!mem)
		return topo_store_nomem(s, cause);
	cJSON_ArrayForEach(m, members)
	{
		if (decode_member(s, m, &mem[k], where, k, cause))
			return -1;
		k++;
	}
	h->members = mem;
	h->member_count = k;
	return 0;
}

/* ---- Kueue Topology ---- */

int topo_kueue_topology_decode(struct topo_store *s, const cJSON *it, const char *where_given,
			       struct topo_levels *out, char **cause)
{
	const cJSON *levels = kjson_path(it, "spec", "levels", NULL), *level;
	char where[320], field[48];
	int n;

	memset(out, 0, sizeof(*out));
	snprintf(where, sizeof(where), "%s", where_given);
	if (topo_field_kind(it, "Topology", where, cause) ||
	    topo_field_copy(s, kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &out->name, where,
			    "metadata.", cause))
		return -1;
	if (!out->name || !out->name[0])
		return cause_replace(cause, "%s: metadata.name: missing", where);
	snprintf(where, sizeof(where), "%s (%s)", where_given, out->name);
	if ((n = topo_field_list_size(levels, 16, where, "spec.levels", cause)) < 0)
		return -1;
	if (n == 0)
		return cause_replace(cause, "%s: spec.levels: missing or empty (Kueue requires 1 to 16)",
				     where);
	if (n > TOPO_LEVELS_MAX)
		return cause_replace(cause, "%s: spec.levels: %d levels, muster places on at most %d", where,
				     n, TOPO_LEVELS_MAX);
	cJSON_ArrayForEach(level, levels)
	{
		const char *label;

		snprintf(field, sizeof(field), "spec.levels[%zu].", out->count);
		if (!cJSON_IsObject(level))
			return cause_replace(cause, "%s: %s: not a map", where, field);
		if (topo_field_copy(s, level, "nodeLabel", TOPO_OBJ_KEY_MAX, &label, where, field, cause))
			return -1;
		if (!label || !label[0])
			return cause_replace(cause, "%s: %snodeLabel: missing", where, field);
		for (size_t k = 0; k < out->count; k++)
			if (strcmp(out->labels[k], label) == 0)
				return cause_replace(cause, "%s: %snodeLabel: %s is also level %zu", where,
						     field, label, k);
		out->labels[out->count++] = label;
	}
	return 0;
}
