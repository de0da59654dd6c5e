/*
 * topo_input: Kubernetes JSON / YAML into topo_* structs (contract in
 * topo_input.h). YAML is first turned into a cJSON tree (scalars as strings,
 * plain null scalars as null), so one decoder reads both. The tree lives for
 * one decoder call: what is kept is copied into the input's own storage.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_input.h"

#include "cause.h"
#include "kjson.h"
#include "quantity.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define CHUNK_SIZE 65536

static int nomem(char **cause)
{
	return cause_replace(cause, "input: out of memory or above %u bytes of decoded data",
			     TOPO_INPUT_STORED_MAX);
}

/* ---- storage ---- */

/* Zeroed memory owned by the input, freed by topo_input_free; NULL when out
 * of memory or above TOPO_INPUT_STORED_MAX. */
static void *own(struct topo_input *in, size_t count, size_t size)
{
	void *p;

	if (size && count > (TOPO_INPUT_STORED_MAX - in->stored) / size)
		return NULL;
	if (in->block_count == in->block_cap) {
		size_t cap = in->block_cap ? in->block_cap * 2 : 64;
		void **b = realloc(in->blocks, cap * sizeof(void *));

		if (!b)
			return NULL;
		in->blocks = b;
		in->block_cap = cap;
	}
	p = calloc(count ? count : 1, size ? size : 1);
	if (p) {
		in->blocks[in->block_count++] = p;
		in->stored += count * size;
	}
	return p;
}

/* A copy of s owned by the input (strings share chunks). */
static const char *own_string(struct topo_input *in, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (n > CHUNK_SIZE / 4) {
		p = own(in, n, 1);
	} else {
		if (n > in->chunk_left) {
			in->chunk = own(in, CHUNK_SIZE, 1);
			in->chunk_left = in->chunk ? CHUNK_SIZE : 0;
		}
		p = in->chunk_left >= n ? in->chunk : NULL;
		if (p) {
			in->chunk += n;
			in->chunk_left -= n;
		}
	}
	if (p)
		memcpy(p, s, n);
	return p;
}

void topo_input_free(struct topo_input *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < in->block_count; i++)
		free(in->blocks[i]);
	free(in->blocks);
	memset(in, 0, sizeof(*in));
}

/* ---- parsing: JSON, or YAML turned into cJSON ---- */

static int plain_null(const yaml_node_t *node)
{
	const char *v = (const char *)node->data.scalar.value;

	return node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!v[0] || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
		strcmp(v, "NULL") == 0);
}

/* *budget counts down: 16 per node plus the bytes of each scalar, so aliases
 * cannot make a small document expand without limit. */
static cJSON *yaml_node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth, size_t *budget)
{
	cJSON *out = NULL;

	if (!node || depth > TOPO_INPUT_DEPTH_MAX || *budget < 16)
		return NULL;
	*budget -= 16;
	switch (node->type) {
	case YAML_SCALAR_NODE:
		if (node->data.scalar.length > *budget)
			return NULL;
		*budget -= node->data.scalar.length;
		if (plain_null(node))
			return cJSON_CreateNull();
		return cJSON_CreateString((const char *)node->data.scalar.value);
	case YAML_SEQUENCE_NODE:
		out = cJSON_CreateArray();
		for (yaml_node_item_t *i = node->data.sequence.items.start;
		     out && i < node->data.sequence.items.top; i++) {
			cJSON *item =
				yaml_node_to_json(doc, yaml_document_get_node(doc, *i), depth + 1, budget);

			if (!item) {
				cJSON_Delete(out);
				return NULL;
			}
			cJSON_AddItemToArray(out, item);
		}
		return out;
	case YAML_MAPPING_NODE:
		out = cJSON_CreateObject();
		for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
		     out && pr < node->data.mapping.pairs.top; pr++) {
			yaml_node_t *k = yaml_document_get_node(doc, pr->key);
			cJSON *v;

			if (!k || k->type != YAML_SCALAR_NODE) {
				cJSON_Delete(out);
				return NULL;
			}
			v = yaml_node_to_json(doc, yaml_document_get_node(doc, pr->value), depth + 1, budget);
			if (!v) {
				cJSON_Delete(out);
				return NULL;
			}
			cJSON_AddItemToObject(out, (const char *)k->data.scalar.value, v);
		}
		return out;
	default:
		return NULL;
	}
}

static cJSON *parse_yaml(const char *data, size_t size, const char *what, char **cause);

/* JSON if it starts with '{' or '[' and parses, else YAML; several YAML
 * documents become an array (empty ones are skipped). */
static cJSON *parse_any(const char *data, size_t size, const char *what, char **cause)
{
	size_t i = 0;

	if (size > TOPO_INPUT_BYTES_MAX) {
		cause_replace(cause, "%s: above %u bytes", what, TOPO_INPUT_BYTES_MAX);
		return NULL;
	}
	while (i < size && isspace((unsigned char)data[i]))
		i++;
	if (i < size && (data[i] == '{' || data[i] == '[')) {
		const char *end = NULL;
		cJSON *j = cJSON_ParseWithLengthOpts(data, size, &end, 0);
		char *yaml_cause = NULL;

		if (j)
			return j;
		/* A YAML flow mapping ({a: b}) starts the same way. */
		j = parse_yaml(data, size, what, &yaml_cause);
		free(yaml_cause);
		if (!j)
			cause_replace(cause, "%s: not valid JSON (at byte %zu)", what,
				      end ? (size_t)(end - data) : 0);
		return j;
	}
	return parse_yaml(data, size, what, cause);
}

static cJSON *parse_yaml(const char *data, size_t size, const char *what, char **cause)
{
	yaml_parser_t parser;
	cJSON *docs = NULL, *one;
	size_t budget = 17 * size + 4096;
	int count = 0;

	if (!yaml_parser_initialize(&parser)) {
		cause_replace(cause, "%s: out of memory", what);
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, size);
	docs = cJSON_CreateArray();
	while (docs) {
		yaml_document_t doc;
		yaml_node_t *root;

		if (!yaml_parser_load(&parser, &doc)) {
			cause_replace(cause, "%s: not valid YAML (line %zu: %s)", what,
				      parser.problem_mark.line + 1,
				      parser.problem ? parser.problem : "syntax error");
			cJSON_Delete(docs);
			docs = NULL;
			break;
		}
		root = yaml_document_get_root_node(&doc);
		if (!root) {
			yaml_document_delete(&doc);
			break;
		}
		one = yaml_node_to_json(&doc, root, 0, &budget);
		yaml_document_delete(&doc);
		if (cJSON_IsNull(one)) {
			cJSON_Delete(one); /* an empty document, e.g. after a final --- */
			continue;
		}
		if (!one || ++count > 100000) {
			cJSON_Delete(one);
			cause_replace(
				cause,
				"%s: YAML too deep, expanding too much (aliases), with too many documents or "
				"a non-scalar key",
				what);
			cJSON_Delete(docs);
			docs = NULL;
			break;
		}
		cJSON_AddItemToArray(docs, one);
	}
	yaml_parser_delete(&parser);
	if (docs && count == 1) {
		one = cJSON_DetachItemFromArray(docs, 0);
		cJSON_Delete(docs);
		return one;
	}
	if (docs && count == 0) {
		cJSON_Delete(docs);
		cause_replace(cause, "%s: empty", what);
		return NULL;
	}
	return docs;
}

/* ---- reading a tree: `where` names the item, `field` the path in it ---- */

/* A string field: *out NULL when absent; -1 when of another type or longer than max. */
static int get_string(const cJSON *obj, const char *key, size_t max, const char **out, const char *where,
		      const char *field, char **cause)
{
	enum kjson_status st = kjson_string(kjson_value(obj, key), max, out);
	char words[64];

	if (st == KJSON_OK)
		return 0;
	return cause_replace(cause, "%s: %s%s: %s", where, field, key,
			     kjson_status_text(st, (long long)max, words, sizeof(words)));
}

/* A copied string field. */
static int copy_string(struct topo_input *in, const cJSON *obj, const char *key, size_t max, const char **out,
		       const char *where, const char *field, char **cause)
{
	if (get_string(obj, key, max, out, where, field, cause))
		return -1;
	if (*out && !(*out = own_string(in, *out)))
		return nomem(cause);
	return 0;
}

/* An integer 0..max from a JSON number or a (YAML) string; def when absent. */
static int get_count(const cJSON *obj, const char *key, long long def, long long max, long long *out,
		     const char *where, const char *field, char **cause)
{
	enum kjson_status st = kjson_count(kjson_value(obj, key), def, max, out);
	char words[64];

	if (st == KJSON_OK)
		return 0;
	return cause_replace(cause, "%s: %s%s: %s", where, field, key,
			     kjson_status_text(st, max, words, sizeof(words)));
}

/* A quantity from a string, or a JSON number (Kubernetes accepts both). */
static long long quantity_of(const cJSON *v)
{
	char buf[64];

	if (cJSON_IsString(v))
		return quantity_parse(v->valuestring);
	if (!cJSON_IsNumber(v))
		return -1;
	snprintf(buf, sizeof(buf), "%.17g", v->valuedouble);
	return quantity_parse(buf);
}

/* The items of a List, of a bare list (YAML documents), or the object itself. */
static int items_of(const cJSON *root, const cJSON **items, size_t *count)
{
	const cJSON *list = kjson_value(root, "items");

	if (cJSON_IsArray(root))
		list = root;
	if (cJSON_IsArray(list)) {
		*items = list->child;
		*count = (size_t)cJSON_GetArraySize(list);
		return 0;
	}
	if (!cJSON_IsObject(root))
		return -1;
	*items = root;
	*count = 1;
	return 0;
}

/* A parsed root has no siblings, so its next is NULL as a list's last item's. */
static const cJSON *next_item(const cJSON *it)
{
	return it->next;
}

/* Items of another kind are refused: a pods file given as --nodes says so. */
static int check_kind(const cJSON *item, const char *want, const char *where, char **cause)
{
	const cJSON *kind = kjson_value(item, "kind");

	if (!cJSON_IsObject(item))
		return cause_replace(cause, "%s: not an object", where);
	if (kind && (!cJSON_IsString(kind) || strcmp(kind->valuestring, want) != 0))
		return cause_replace(cause, "%s: kind %s, expected %s", where,
				     cJSON_IsString(kind) ? kind->valuestring : "(not a string)", want);
	return 0;
}

/* A map of string to string (labels, nodeSelector, matchLabels), copied. */
static int labels_of(struct topo_input *in, const cJSON *obj, struct topo_label **out, size_t *count,
		     const char *where, const char *field, char **cause)
{
	const cJSON *l;
	size_t n = 0;

	*out = NULL;
	*count = 0;
	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj))
		return cause_replace(cause, "%s: %s: not a map", where, field);
	if (cJSON_GetArraySize(obj) > TOPO_INPUT_LABELS_MAX)
		return cause_replace(cause, "%s: %s: more than %d entries", where, field,
				     TOPO_INPUT_LABELS_MAX);
	*out = own(in, (size_t)cJSON_GetArraySize(obj), sizeof(**out));
	if (!*out)
		return nomem(cause);
	cJSON_ArrayForEach(l, obj)
	{
		if (!l->string || !l->string[0] || strlen(l->string) > TOPO_INPUT_KEY_MAX)
			return cause_replace(cause, "%s: %s: a key is empty or longer than %d bytes", where,
					     field, TOPO_INPUT_KEY_MAX);
		if (!cJSON_IsString(l) || strlen(l->valuestring) > TOPO_VALUE_MAX)
			return cause_replace(cause, "%s: %s[\"%s\"]: not a string of at most %d bytes", where,
					     field, l->string, TOPO_VALUE_MAX);
		(*out)[n].key = own_string(in, l->string);
		(*out)[n].value = own_string(in, l->valuestring);
		if (!(*out)[n].key || !(*out)[n].value)
			return nomem(cause);
		n++;
	}
	*count = n;
	return 0;
}

/* A list of requirements (matchExpressions, matchFields), copied. Label
 * selectors allow In / NotIn / Exists / DoesNotExist; node affinity Gt / Lt
 * too, and matchFields only metadata.name with In / NotIn. */
enum requirement_kind { LABEL_SELECTOR, NODE_AFFINITY, NODE_FIELDS };

static int requirements_of(struct topo_input *in, const cJSON *list, enum requirement_kind kind,
			   struct topo_requirement *out, size_t *count, const char *where, const char *field,
			   char **cause)
{
	static const struct {
		const char *name;
		enum topo_operator op;
		int values; /* 1: at least one, 0: none, 2: exactly one integer */
	} ops[] = {
		{ "In", TOPO_OP_IN, 1 },	 { "NotIn", TOPO_OP_NOT_IN, 1 },
		{ "Exists", TOPO_OP_EXISTS, 0 }, { "DoesNotExist", TOPO_OP_DOES_NOT_EXIST, 0 },
		{ "Gt", TOPO_OP_GT, 2 },	 { "Lt", TOPO_OP_LT, 2 },
	};
	const cJSON *e;
	size_t k = 0;

	cJSON_ArrayForEach(e, list)
	{
		struct topo_requirement *r = &out[*count];
		const char *key, *op;
		const cJSON *values = kjson_value(e, "values"), *v;
		size_t o, n = 0;
		const char **copies;

		if (get_string(e, "key", TOPO_INPUT_KEY_MAX, &key, where, field, cause) ||
		    get_string(e, "operator", 32, &op, where, field, cause))
			return -1;
		if (!key || !key[0] || !op)
			return cause_replace(cause, "%s: %s[%zu]: needs a key and an operator", where, field,
					     k);
		for (o = 0; o < sizeof(ops) / sizeof(ops[0]) && strcmp(ops[o].name, op) != 0; o++)
			;
		if (o == sizeof(ops) / sizeof(ops[0]) || (kind == LABEL_SELECTOR && ops[o].values == 2) ||
		    (kind == NODE_FIELDS && ops[o].op != TOPO_OP_IN && ops[o].op != TOPO_OP_NOT_IN))
			return cause_replace(cause, "%s: %s[%zu].operator: %s is not supported here", where,
					     field, k, op);
		if (kind == NODE_FIELDS && strcmp(key, "metadata.name") != 0)
			return cause_replace(cause,
					     "%s: %s[%zu].key: only metadata.name is a node field, not %s",
					     where, field, k, key);
		if (values && !cJSON_IsArray(values))
			return cause_replace(cause, "%s: %s[%zu].values: not a list", where, field, k);
		n = values ? (size_t)cJSON_GetArraySize(values) : 0;
		if (n > TOPO_INPUT_VALUES_MAX || (ops[o].values == 0 && n) || (ops[o].values == 1 && !n) ||
		    (ops[o].values == 2 && n != 1))
			return cause_replace(cause, "%s: %s[%zu].values: %s takes %s", where, field, k, op,
					     ops[o].values == 0	  ? "no values"
					     : ops[o].values == 2 ? "exactly one value"
								  : "1 to 256 values");
		copies = own(in, n, sizeof(*copies));
		if (!copies)
			return nomem(cause);
		n = 0;
		cJSON_ArrayForEach(v, values)
		{
			if (!cJSON_IsString(v) || strlen(v->valuestring) > TOPO_NAME_MAX)
				return cause_replace(
					cause, "%s: %s[%zu].values[%zu]: not a string of at most %d bytes",
					where, field, k, n, TOPO_NAME_MAX);
			if (!(copies[n++] = own_string(in, v->valuestring)))
				return nomem(cause);
		}
		*r = (struct topo_requirement){ .key = own_string(in, key),
						.op = ops[o].op,
						.values = copies,
						.value_count = n,
						.on_name = kind == NODE_FIELDS };
		if (!r->key)
			return nomem(cause);
		(*count)++;
		k++;
	}
	return 0;
}

static int list_size(const cJSON *list, int max, const char *where, const char *field, char **cause)
{
	if (list && !cJSON_IsArray(list))
		return cause_replace(cause, "%s: %s: not a list", where, field);
	if (cJSON_GetArraySize(list) > max)
		return cause_replace(cause, "%s: %s: more than %d entries", where, field, max);
	return cJSON_GetArraySize(list);
}

static int effect_of(const char *s, enum topo_effect *e)
{
	if (!s)
		return -1;
	if (strcmp(s, "NoSchedule") == 0)
		*e = TOPO_NO_SCHEDULE;
	else if (strcmp(s, "PreferNoSchedule") == 0)
		*e = TOPO_PREFER_NO_SCHEDULE;
	else if (strcmp(s, "NoExecute") == 0)
		*e = TOPO_NO_EXECUTE;
	else
		return -1;
	return 0;
}

/* ---- resources and requests ---- */

/* Resource amounts by name; names point into a parse tree or the input. */
struct amounts {
	const char *names[TOPO_INPUT_REQUESTS_MAX];
	long long values[TOPO_INPUT_REQUESTS_MAX];
	size_t count;
};

static long long add_capped(long long a, long long b)
{
	return a > QUANTITY_MAX - b ? QUANTITY_MAX : a + b;
}

static long long *amount_slot(struct amounts *a, const char *name)
{
	for (size_t i = 0; i < a->count; i++)
		if (strcmp(a->names[i], name) == 0)
			return &a->values[i];
	if (a->count == TOPO_INPUT_REQUESTS_MAX)
		return NULL;
	a->names[a->count] = name;
	a->values[a->count] = 0;
	return &a->values[a->count++];
}

enum combine { SUM, MAX, SET };

static int combine_into(struct amounts *into, const struct amounts *from, enum combine how)
{
	for (size_t i = 0; i < from->count; i++) {
		long long *slot = amount_slot(into, from->names[i]);

		if (!slot)
			return -1;
		*slot = how == SUM   ? add_capped(*slot, from->values[i])
			: how == MAX ? (*slot > from->values[i] ? *slot : from->values[i])
				     : from->values[i];
	}
	return 0;
}

/* A map of quantities (requests, limits, overhead). */
static int amounts_of(const cJSON *map, struct amounts *out, const char *where, const char *field,
		      char **cause)
{
	const cJSON *x;

	out->count = 0;
	if (!map)
		return 0;
	if (!cJSON_IsObject(map))
		return cause_replace(cause, "%s: %s: not a map", where, field);
	cJSON_ArrayForEach(x, map)
	{
		long long q = quantity_of(x);
		long long *slot;

		if (!x->string || !x->string[0] || strlen(x->string) > TOPO_INPUT_KEY_MAX)
			return cause_replace(cause, "%s: %s: a resource name is empty or too long", where,
					     field);
		if (q < 0)
			return cause_replace(cause, "%s: %s[\"%s\"]: bad quantity %s%s%s", where, field,
					     x->string, cJSON_IsString(x) ? "\"" : "",
					     cJSON_IsString(x) ? x->valuestring : "(not a string)",
					     cJSON_IsString(x) ? "\"" : "");
		slot = amount_slot(out, x->string);
		if (!slot)
			return cause_replace(cause, "%s: %s: more than %d resources", where, field,
					     TOPO_INPUT_REQUESTS_MAX);
		*slot = q;
	}
	return 0;
}

/* A container's requests, its limits standing for missing requests. */
static int container_requests(const cJSON *c, struct amounts *out, const char *where, const char *field,
			      char **cause)
{
	struct amounts limits;
	char f[128];

	snprintf(f, sizeof(f), "%s.resources.requests", field);
	if (amounts_of(kjson_path(c, "resources", "requests", NULL), out, where, f, cause))
		return -1;
	snprintf(f, sizeof(f), "%s.resources.limits", field);
	if (amounts_of(kjson_path(c, "resources", "limits", NULL), &limits, where, f, cause))
		return -1;
	for (size_t i = 0; i < limits.count; i++) {
		size_t k;

		for (k = 0; k < out->count && strcmp(out->names[k], limits.names[i]) != 0; k++)
			;
		if (k == out->count && amount_slot(out, limits.names[i]))
			out->values[k] = limits.values[i];
	}
	return 0;
}

/* The pod's effective request, as kube-scheduler counts it (topo_input.h). */
static int pod_requests(const cJSON *spec, struct amounts *out, const char *where, const char *prefix,
			char **cause)
{
	const cJSON *containers = kjson_value(spec, "containers"),
		    *inits = kjson_value(spec, "initContainers"), *c;
	struct amounts one, sidecars = { .count = 0 }, init = { .count = 0 }, pod_level, overhead;
	size_t i = 0;
	char field[128];

	out->count = 0;
	snprintf(field, sizeof(field), "%s.containers", prefix);
	if (list_size(containers, TOPO_INPUT_CONTAINERS_MAX, where, field, cause) < 0)
		return -1;
	snprintf(field, sizeof(field), "%s.initContainers", prefix);
	if (list_size(inits, TOPO_INPUT_CONTAINERS_MAX, where, field, cause) < 0)
		return -1;
	cJSON_ArrayForEach(c, containers)
	{
		snprintf(field, sizeof(field), "%s.containers[%zu]", prefix, i++);
		if (container_requests(c, &one, where, field, cause))
			return -1;
		if (combine_into(out, &one, SUM))
			goto too_many;
	}
	i = 0;
	cJSON_ArrayForEach(c, inits)
	{
		const cJSON *policy = kjson_value(c, "restartPolicy");

		snprintf(field, sizeof(field), "%s.initContainers[%zu]", prefix, i++);
		if (container_requests(c, &one, where, field, cause))
			return -1;
		if (cJSON_IsString(policy) && strcmp(policy->valuestring, "Always") == 0) {
			/* A sidecar runs beside the containers and every init container after it. */
			if (combine_into(out, &one, SUM) || combine_into(&sidecars, &one, SUM))
				goto too_many;
			if (combine_into(&init, &sidecars, MAX))
				goto too_many;
		} else {
			if (combine_into(&one, &sidecars, SUM) || combine_into(&init, &one, MAX))
				goto too_many;
		}
	}
	if (combine_into(out, &init, MAX))
		goto too_many;
	if (container_requests(spec, &pod_level, where, prefix, cause))
		return -1;
	for (i = 0; i < pod_level.count; i++)
		if (strcmp(pod_level.names[i], "cpu") == 0 || strcmp(pod_level.names[i], "memory") == 0)
			*amount_slot(out, pod_level.names[i]) = pod_level.values[i];
	snprintf(field, sizeof(field), "%s.overhead", prefix);
	if (amounts_of(kjson_value(spec, "overhead"), &overhead, where, field, cause))
		return -1;
	if (combine_into(out, &overhead, SUM))
		goto too_many;
	return 0;
too_many:
	return cause_replace(cause, "%s: %s: more than %d distinct resources requested", where, prefix,
			     TOPO_INPUT_REQUESTS_MAX);
}

/* ---- nodes ---- */

static int requested_by_jobset(const struct topo_input *in, const char *name)
{
	for (size_t g = 0; g < in->group_count; g++)
		for (size_t r = 0; r < in->groups[g].request_count; r++)
			if (strcmp(in->groups[g].request_names[r], name) == 0)
				return 1;
	return 0;
}

/* Rank of a resource for the TOPO_RESOURCES_MAX slots: lower is kept first. */
static int resource_rank(const struct topo_input *in, const char *name)
{
	if (requested_by_jobset(in, name))
		return 0;
	return strchr(name, '/') ? 1 : 2;
}

struct ranked_name {
	const char *name;
	int rank;
};

static int by_rank_then_name(const void *a, const void *b)
{
	const struct ranked_name *x = a, *y = b;

	return x->rank != y->rank ? x->rank - y->rank : strcmp(x->name, y->name);
}

/* Picks the tracked resources from every node's allocatable (topo_input.h). */
static int choose_resources(struct topo_input *in, const cJSON *first, size_t count, char **cause)
{
	struct ranked_name seen[64];
	size_t n = 0, i = 0;
	const cJSON *it, *x;

	in->cluster.resources[0] = "cpu";
	in->cluster.resources[1] = "memory";
	in->cluster.resources[2] = "pods";
	in->cluster.resource_count = 3;
	for (it = first; it && i < count; it = next_item(it), i++)
		cJSON_ArrayForEach(x, kjson_path(it, "status", "allocatable", NULL))
		{
			size_t k;

			if (!x->string || topo_resource_index(&in->cluster, x->string) >= 0)
				continue;
			for (k = 0; k < n && strcmp(seen[k].name, x->string) != 0; k++)
				;
			if (k == n && n < sizeof(seen) / sizeof(seen[0]))
				seen[n++] = (struct ranked_name){ x->string, resource_rank(in, x->string) };
		}
	qsort(seen, n, sizeof(seen[0]), by_rank_then_name);
	for (i = 0; i < n && in->cluster.resource_count < TOPO_RESOURCES_MAX; i++) {
		const char *copy = own_string(in, seen[i].name);

		if (!copy)
			return nomem(cause);
		in->cluster.resources[in->cluster.resource_count++] = copy;
	}
	return 0;
}

static int decode_node(struct topo_input *in, const cJSON *it, size_t index, struct topo_node *node,
		       char **cause)
{
	const cJSON *taints = kjson_path(it, "spec", "taints", NULL),
		    *alloc = kjson_path(it, "status", "allocatable", NULL);
	const cJSON *x;
	struct topo_label *labels;
	char where[320];
	int n;

	snprintf(where, sizeof(where), "nodes: items[%zu]", index);
	if (check_kind(it, "Node", where, cause) ||
	    copy_string(in, kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &node->name, where,
			"metadata.", cause))
		return -1;
	if (!node->name || !node->name[0])
		return cause_replace(cause, "%s: metadata.name: missing", where);
	snprintf(where, sizeof(where), "nodes: items[%zu] (%s)", index, node->name);
	if (labels_of(in, kjson_path(it, "metadata", "labels", NULL), &labels, &node->label_count, where,
		      "metadata.labels", cause))
		return -1;
	node->labels = labels;
	node->unschedulable = kjson_is_true(kjson_path(it, "spec", "unschedulable", NULL));
	if ((n = list_size(taints, TOPO_INPUT_TAINTS_MAX, where, "spec.taints", cause)) < 0)
		return -1;
	if (n > 0) {
		struct topo_taint *t = own(in, (size_t)n, sizeof(*t));
		size_t k = 0;

		if (!t)
			return nomem(cause);
		cJSON_ArrayForEach(x, taints)
		{
			const char *effect;
			char field[48];

			snprintf(field, sizeof(field), "spec.taints[%zu].", k);
			if (copy_string(in, x, "key", TOPO_INPUT_KEY_MAX, &t[k].key, where, field, cause) ||
			    copy_string(in, x, "value", TOPO_VALUE_MAX, &t[k].value, where, field, cause) ||
			    get_string(x, "effect", 32, &effect, where, field, cause))
				return -1;
			if (!t[k].key || !t[k].key[0])
				return cause_replace(cause, "%s: %skey: missing", where, field);
			if (effect_of(effect, &t[k].effect))
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
		int r = x->string ? topo_resource_index(&in->cluster, x->string) : -1;
		long long q = quantity_of(x);

		if (q < 0)
			return cause_replace(cause, "%s: status.allocatable[\"%s\"]: bad quantity %s", where,
					     x->string ? x->string : "",
					     cJSON_IsString(x) ? x->valuestring : "(not a string)");
		if (r >= 0)
			node->allocatable[r] = strcmp(x->string, "pods") == 0 ? q / 1000 : q;
	}
	return 0;
}

struct name_index {
	const char *name;
	uint32_t index;
};

/* By name only: to look a name up among unique names. */
static int by_name_only(const void *a, const void *b)
{
	return strcmp(((const struct name_index *)a)->name, ((const struct name_index *)b)->name);
}

/* By name, then by index, so that the result does not depend on qsort. */
static int by_name(const void *a, const void *b)
{
	const struct name_index *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Nodes by name, sorted (the caller frees), or NULL when out of memory. */
static struct name_index *sorted_names(const struct topo_input *in)
{
	struct name_index *sorted = malloc((in->cluster.node_count + 1) * sizeof(*sorted));

	if (!sorted)
		return NULL;
	for (size_t i = 0; i < in->cluster.node_count; i++)
		sorted[i] = (struct name_index){ in->nodes[i].name, (uint32_t)i };
	qsort(sorted, in->cluster.node_count, sizeof(*sorted), by_name);
	return sorted;
}

int topo_input_nodes(struct topo_input *in, const char *data, size_t size, char **cause)
{
	cJSON *root;
	struct name_index *sorted = NULL;
	const cJSON *first, *it;
	size_t count = 0, n = 0;
	int rc = -1;

	*cause = NULL;
	if (in->read_nodes)
		return cause_replace(cause, "nodes: read twice");
	in->read_nodes = 1;
	root = parse_any(data, size, "nodes", cause);
	if (!root)
		return -1;
	if (items_of(root, &first, &count)) {
		cause_replace(cause, "nodes: not a List, a list or a Node");
		goto out;
	}
	if (count > TOPO_NODES_MAX) {
		cause_replace(cause, "nodes: %zu items, at most %u", count, TOPO_NODES_MAX);
		goto out;
	}
	in->nodes = own(in, count, sizeof(*in->nodes));
	if (!in->nodes || choose_resources(in, first, count, cause)) {
		if (!*cause)
			nomem(cause);
		goto out;
	}
	for (it = first; it && n < count; it = next_item(it), n++)
		if (decode_node(in, it, n, &in->nodes[n], cause))
			goto out;
	in->cluster.nodes = in->nodes;
	in->cluster.node_count = n;
	/* Pods and HyperNode members name nodes: names must be unique. */
	sorted = sorted_names(in);
	if (!sorted) {
		nomem(cause);
		goto out;
	}
	for (size_t i = 1; i < n; i++)
		if (strcmp(sorted[i].name, sorted[i - 1].name) == 0) {
			cause_replace(cause, "nodes: items[%u] (%s): the name of items[%u] too",
				      sorted[i].index, sorted[i].name, sorted[i - 1].index);
			goto out;
		}
	rc = 0;
out:
	free(sorted);
	cJSON_Delete(root);
	return rc;
}

/* ---- pods ---- */

static int decode_pod(struct topo_input *in, const cJSON *it, size_t index, const struct name_index *sorted,
		      char **cause)
{
	const cJSON *spec = kjson_value(it, "spec");
	const char *node_name, *phase, *name;
	struct amounts req;
	struct name_index key, *hit;
	struct topo_node *node;
	char where[320];
	int pods;

	snprintf(where, sizeof(where), "pods: items[%zu]", index);
	if (check_kind(it, "Pod", where, cause) ||
	    get_string(kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &name, where, "metadata.", cause))
		return -1;
	if (name)
		snprintf(where, sizeof(where), "pods: items[%zu] (%s)", index, name);
	if (get_string(spec, "nodeName", TOPO_NAME_MAX, &node_name, where, "spec.", cause) ||
	    get_string(kjson_value(it, "status"), "phase", 64, &phase, where, "status.", cause))
		return -1;
	/* Only bound pods that have not ended hold resources. */
	if (!node_name || !node_name[0] ||
	    (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
		return 0;
	if (pod_requests(spec, &req, where, "spec", cause))
		return -1;
	key.name = node_name;
	hit = bsearch(&key, sorted, in->cluster.node_count, sizeof(*sorted), by_name_only);
	if (!hit)
		return 0; /* on a node not in the list */
	node = &in->nodes[hit->index];
	pods = topo_resource_index(&in->cluster, "pods");
	for (size_t i = 0; i < req.count; i++) {
		int r = topo_resource_index(&in->cluster, req.names[i]);

		if (r >= 0 && r != pods)
			node->used[r] = add_capped(node->used[r], req.values[i]);
	}
	if (pods >= 0)
		node->used[pods]++;
	return 0;
}

int topo_input_pods(struct topo_input *in, const char *data, size_t size, char **cause)
{
	cJSON *root = NULL;
	const cJSON *first, *it;
	struct name_index *sorted = NULL;
	size_t count = 0, n = 0;
	int rc = -1;

	*cause = NULL;
	if (!in->read_nodes || in->read_pods)
		return cause_replace(cause, "pods: read once, after the nodes");
	in->read_pods = 1;
	root = parse_any(data, size, "pods", cause);
	if (!root)
		return -1;
	if (items_of(root, &first, &count)) {
		cause_replace(cause, "pods: not a List, a list or a Pod");
		goto out;
	}
	sorted = sorted_names(in);
	if (!sorted) {
		nomem(cause);
		goto out;
	}
	for (it = first; it && n < count; it = next_item(it), n++)
		if (decode_pod(in, it, n, sorted, cause))
			goto out;
	rc = 0;
out:
	free(sorted);
	cJSON_Delete(root);
	return rc;
}

/* ---- JobSet ---- */

/* A Volcano networkTopology object (an annotation's value, or a field). */
static int network_of(struct topo_input *in, const cJSON *obj, struct topo_input_network *out,
		      const char *where, const char *field, char **cause)
{
	const char *mode;
	long long tier;
	char whole[160]; /* the object itself: field without its trailing ". " or ": " */
	size_t n;

	memset(out, 0, sizeof(*out));
	snprintf(whole, sizeof(whole), "%s", field);
	n = strlen(whole);
	while (n > 0 && (whole[n - 1] == '.' || whole[n - 1] == ' ' || whole[n - 1] == ':'))
		whole[--n] = '\0';
	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj))
		return cause_replace(cause, "%s: %s: not a map", where, whole);
	out->set = 1;
	if (get_string(obj, "mode", 16, &mode, where, field, cause) ||
	    get_count(obj, "highestTierAllowed", 0, 1000000, &tier, where, field, cause) ||
	    copy_string(in, obj, "highestTierName", TOPO_NAME_MAX, &out->tier_name, where, field, cause))
		return -1;
	if (mode && strcmp(mode, "hard") != 0 && strcmp(mode, "soft") != 0)
		return cause_replace(cause, "%s: %smode: %s is neither hard nor soft", where, field, mode);
	out->hard = !mode || strcmp(mode, "hard") == 0;
	out->tier = (int)tier;
	if (kjson_value(obj, "highestTierAllowed") && tier < 1)
		return cause_replace(cause, "%s: %shighestTierAllowed: tiers start at 1", where, field);
	if (out->tier && out->tier_name)
		return cause_replace(cause,
				     "%s: %s: highestTierAllowed and highestTierName cannot both be set",
				     where, whole);
	if (out->hard && !out->tier && !out->tier_name)
		return cause_replace(cause, "%s: %s: mode hard needs highestTierAllowed or highestTierName",
				     where, whole);
	return 0;
}

/* An annotation holding a small JSON or YAML object. */
static int annotation_object(const char *text, const char *where, const char *name, cJSON **out, char **cause)
{
	char what[320];

	snprintf(what, sizeof(what), "%s: annotation %s", where, name);
	*out = parse_any(text, strlen(text), what, cause);
	if (!*out)
		return -1;
	if (!cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return cause_replace(cause, "%s: not a map", what);
	}
	return 0;
}

static int decode_network_annotation(struct topo_input *in, const cJSON *annotations, const char *where,
				     const char *prefix, struct topo_input_network *out, char **cause)
{
	const char *text;
	cJSON *obj;
	char field[96];
	int rc;

	memset(out, 0, sizeof(*out));
	if (get_string(annotations, MUSTER_ANNOTATION_NETWORK_TOPOLOGY, 4096, &text, where, prefix, cause))
		return -1;
	if (!text)
		return 0;
	if (annotation_object(text, where, MUSTER_ANNOTATION_NETWORK_TOPOLOGY, &obj, cause))
		return -1;
	snprintf(field, sizeof(field), "annotation %s: ", MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
	rc = network_of(in, obj, out, where, field, cause);
	cJSON_Delete(obj);
	return rc;
}

static int decode_partitions(struct topo_input *in, const cJSON *annotations, struct topo_input_group *g,
			     const char *where, const char *prefix, char **cause)
{
	const char *text;
	cJSON *obj;
	long long total, size, least;
	char field[96];
	int rc = -1;

	if (get_string(annotations, MUSTER_ANNOTATION_PARTITION_POLICY, 4096, &text, where, prefix, cause))
		return -1;
	if (!text)
		return 0;
	if (annotation_object(text, where, MUSTER_ANNOTATION_PARTITION_POLICY, &obj, cause))
		return -1;
	snprintf(field, sizeof(field), "annotation %s: ", MUSTER_ANNOTATION_PARTITION_POLICY);
	if (get_count(obj, "totalPartitions", 0, TOPO_PODS_MAX, &total, where, field, cause) ||
	    get_count(obj, "partitionSize", 0, TOPO_PODS_MAX, &size, where, field, cause) ||
	    get_count(obj, "minPartitions", 0, TOPO_PODS_MAX, &least, where, field, cause))
		goto out;
	if (total < 1 || size < 1) {
		cause_replace(cause, "%s: %stotalPartitions and partitionSize must be at least 1", where,
			      field);
		goto out;
	}
	if ((unsigned long long)total * (unsigned long long)size != g->pods) {
		cause_replace(cause,
			      "%s: %stotalPartitions x partitionSize = %lld x %lld, the job has %u pods",
			      where, field, total, size, g->pods);
		goto out;
	}
	if (least > total) {
		cause_replace(cause, "%s: %sminPartitions %lld is above totalPartitions %lld", where, field,
			      least, total);
		goto out;
	}
	snprintf(field, sizeof(field), "annotation %s: networkTopology.", MUSTER_ANNOTATION_PARTITION_POLICY);
	if (network_of(in, kjson_value(obj, "networkTopology"), &g->partition_network, where, field, cause))
		goto out;
	if (g->partition_network.set && !g->partition_network.hard) {
		cause_replace(cause, "%s: %smode: soft partitions are not supported (hard only)", where,
			      field);
		goto out;
	}
	g->partitions = (unsigned)total;
	g->partition_size = (unsigned)size;
	g->min_partitions = (unsigned)least;
	rc = 0;
out:
	cJSON_Delete(obj);
	return rc;
}

/* The pod template's topology annotations. */
static int decode_annotations(struct topo_input *in, const cJSON *annotations, struct topo_input_group *g,
			      const char *where, char **cause)
{
	const char *unconstrained, *slice_size;
	char field[] = "template.spec.template.metadata.annotations.";
	int constraints;

	static const char *const known[] = { KUEUE_ANNOTATION_REQUIRED,	     KUEUE_ANNOTATION_PREFERRED,
					     KUEUE_ANNOTATION_UNCONSTRAINED, KUEUE_ANNOTATION_SLICE,
					     KUEUE_ANNOTATION_SLICE_SIZE,    KUEUE_ANNOTATION_GROUP };
	const cJSON *a;

	if (annotations && !cJSON_IsObject(annotations))
		return cause_replace(cause, "%s: %s: not a map", where, field);
	/* A Kueue topology annotation not read here would be ignored silently: refuse it. */
	cJSON_ArrayForEach(a, annotations)
	{
		size_t k;

		if (!a->string ||
		    strncmp(a->string, KUEUE_ANNOTATION_PREFIX, sizeof(KUEUE_ANNOTATION_PREFIX) - 1) != 0)
			continue;
		for (k = 0; k < sizeof(known) / sizeof(known[0]) && strcmp(known[k], a->string) != 0; k++)
			;
		if (k == sizeof(known) / sizeof(known[0]))
			return cause_replace(cause, "%s: %s%.64s: not supported by muster-topology", where,
					     field, a->string);
	}
	if (copy_string(in, annotations, KUEUE_ANNOTATION_REQUIRED, TOPO_INPUT_KEY_MAX, &g->required, where,
			field, cause) ||
	    copy_string(in, annotations, KUEUE_ANNOTATION_PREFERRED, TOPO_INPUT_KEY_MAX, &g->preferred, where,
			field, cause) ||
	    copy_string(in, annotations, KUEUE_ANNOTATION_SLICE, TOPO_INPUT_KEY_MAX, &g->slice_level, where,
			field, cause) ||
	    copy_string(in, annotations, KUEUE_ANNOTATION_GROUP, TOPO_NAME_MAX, &g->podset_group, where,
			field, cause) ||
	    get_string(annotations, KUEUE_ANNOTATION_UNCONSTRAINED, 16, &unconstrained, where, field,
		       cause) ||
	    get_string(annotations, KUEUE_ANNOTATION_SLICE_SIZE, 16, &slice_size, where, field, cause) ||
	    decode_network_annotation(in, annotations, where, field, &g->network, cause) ||
	    decode_partitions(in, annotations, g, where, field, cause))
		return -1;
	if (unconstrained && strcmp(unconstrained, "true") != 0 && strcmp(unconstrained, "false") != 0)
		return cause_replace(cause, "%s: %s%s: \"%s\" is neither true nor false", where, field,
				     KUEUE_ANNOTATION_UNCONSTRAINED, unconstrained);
	g->unconstrained = unconstrained && strcmp(unconstrained, "true") == 0;
	constraints = !!g->required + !!g->preferred + g->unconstrained + g->network.set;
	if (constraints > 1)
		return cause_replace(cause, "%s: %s: at most one of %s, %s, %s, %s", where, field,
				     KUEUE_ANNOTATION_REQUIRED, KUEUE_ANNOTATION_PREFERRED,
				     KUEUE_ANNOTATION_UNCONSTRAINED, MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
	if (!!g->slice_level != !!slice_size)
		return cause_replace(cause, "%s: %s: %s and %s go together", where, field,
				     KUEUE_ANNOTATION_SLICE, KUEUE_ANNOTATION_SLICE_SIZE);
	if (slice_size) {
		char *end;
		long v;

		errno = 0;
		v = strtol(slice_size, &end, 10);
		if (errno || *end || end == slice_size || v < 1 || v > (long)TOPO_PODS_MAX)
			return cause_replace(cause, "%s: %s%s: \"%s\" is not a positive integer", where,
					     field, KUEUE_ANNOTATION_SLICE_SIZE, slice_size);
		if (g->pods % (unsigned)v)
			return cause_replace(cause, "%s: %s%s: %ld does not divide the job's %u pods", where,
					     field, KUEUE_ANNOTATION_SLICE_SIZE, v, g->pods);
		g->slice_size = (unsigned)v;
	}
	if (g->slice_level && g->partitions)
		return cause_replace(cause, "%s: %s: %s and %s exclude each other", where, field,
				     KUEUE_ANNOTATION_SLICE, MUSTER_ANNOTATION_PARTITION_POLICY);
	return 0;
}

static int decode_tolerations(struct topo_input *in, const cJSON *list, struct topo_input_group *g,
			      const char *where, char **cause)
{
	const char *field = "template.spec.template.spec.tolerations";
	const cJSON *x;
	int n = list_size(list, TOPO_INPUT_TOLERATIONS_MAX, where, field, cause);
	size_t k = 0;

	if (n <= 0)
		return n;
	g->tolerations = own(in, (size_t)n, sizeof(*g->tolerations));
	if (!g->tolerations)
		return nomem(cause);
	cJSON_ArrayForEach(x, list)
	{
		struct topo_toleration *t = &g->tolerations[k];
		const char *op, *effect;
		char f[96];

		snprintf(f, sizeof(f), "%s[%zu].", field, k);
		if (copy_string(in, x, "key", TOPO_INPUT_KEY_MAX, &t->key, where, f, cause) ||
		    copy_string(in, x, "value", TOPO_VALUE_MAX, &t->value, where, f, cause) ||
		    get_string(x, "operator", 16, &op, where, f, cause) ||
		    get_string(x, "effect", 32, &effect, where, f, cause))
			return -1;
		if (op && op[0] && strcmp(op, "Exists") != 0 && strcmp(op, "Equal") != 0)
			return cause_replace(cause, "%s: %soperator: %s is neither Exists nor Equal", where,
					     f, op);
		t->exists = op && strcmp(op, "Exists") == 0;
		if (!t->exists && (!t->key || !t->key[0]))
			return cause_replace(cause, "%s: %skey: an empty key needs operator Exists", where,
					     f);
		t->any_effect = !effect || !effect[0];
		if (!t->any_effect && effect_of(effect, &t->effect))
			return cause_replace(
				cause, "%s: %seffect: %s is not NoSchedule, PreferNoSchedule or NoExecute",
				where, f, effect);
		k++;
	}
	g->toleration_count = k;
	return 0;
}

static int decode_affinity(struct topo_input *in, const cJSON *pod_spec, struct topo_input_group *g,
			   const char *where, char **cause)
{
	const char *field = "template.spec.template.spec.affinity.nodeAffinity."
			    "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
	const cJSON *required = kjson_path(pod_spec, "affinity", "nodeAffinity",
					   "requiredDuringSchedulingIgnoredDuringExecution");
	const cJSON *terms = kjson_value(required, "nodeSelectorTerms"), *term;
	int n = list_size(terms, TOPO_INPUT_TERMS_MAX, where, field, cause);
	size_t k = 0;

	if (n < 0)
		return -1;
	if (required && n == 0)
		return cause_replace(cause, "%s: %s: empty (no node would match)", where, field);
	if (n == 0)
		return 0;
	g->affinity = own(in, (size_t)n, sizeof(*g->affinity));
	if (!g->affinity)
		return nomem(cause);
	cJSON_ArrayForEach(term, terms)
	{
		const cJSON *exprs = kjson_value(term, "matchExpressions"),
			    *fields = kjson_value(term, "matchFields");
		char fe[320], ff[320];
		int ne, nf;
		struct topo_requirement *reqs;
		size_t count = 0;

		snprintf(fe, sizeof(fe), "%s[%zu].matchExpressions", field, k);
		snprintf(ff, sizeof(ff), "%s[%zu].matchFields", field, k);
		if ((ne = list_size(exprs, TOPO_INPUT_EXPRESSIONS_MAX, where, fe, cause)) < 0 ||
		    (nf = list_size(fields, TOPO_INPUT_EXPRESSIONS_MAX, where, ff, cause)) < 0)
			return -1;
		reqs = own(in, (size_t)(ne + nf), sizeof(*reqs));
		if (!reqs)
			return nomem(cause);
		if (requirements_of(in, exprs, NODE_AFFINITY, reqs, &count, where, fe, cause) ||
		    requirements_of(in, fields, NODE_FIELDS, reqs, &count, where, ff, cause))
			return -1;
		g->affinity[k++] = (struct topo_term){ reqs, count };
	}
	g->affinity_count = k;
	return 0;
}

static int decode_replicated_job(struct topo_input *in, const cJSON *rj, size_t index, char **cause)
{
	struct topo_input_group *g = &in->groups[index];
	const cJSON *job = kjson_path(rj, "template", "spec", NULL);
	const cJSON *pod = kjson_value(job, "template");
	const cJSON *pod_spec = kjson_value(pod, "spec");
	long long replicas, parallelism, completions;
	struct amounts req;
	char where[320];

	snprintf(where, sizeof(where), "jobset: spec.replicatedJobs[%zu]", index);
	if (!cJSON_IsObject(rj))
		return cause_replace(cause, "%s: not a map", where);
	if (copy_string(in, rj, "name", 63, &g->name, where, "", cause))
		return -1;
	if (!g->name || !g->name[0])
		return cause_replace(cause, "%s: name: missing", where);
	snprintf(where, sizeof(where), "jobset: spec.replicatedJobs[%zu] (%s)", index, g->name);
	if (get_count(rj, "replicas", 1, TOPO_INSTANCES_MAX, &replicas, where, "", cause) ||
	    get_count(job, "parallelism", 1, TOPO_PODS_MAX, &parallelism, where, "template.spec.", cause) ||
	    get_count(job, "completions", parallelism, TOPO_PODS_MAX, &completions, where, "template.spec.",
		      cause))
		return -1;
	if (!pod_spec)
		return cause_replace(cause, "%s: template.spec.template.spec: missing", where);
	g->replicas = (unsigned)replicas;
	g->pods = (unsigned)(parallelism < completions ? parallelism : completions);
	if (decode_annotations(in, kjson_path(pod, "metadata", "annotations", NULL), g, where, cause))
		return -1;
	if (pod_requests(pod_spec, &req, where, "template.spec.template.spec", cause))
		return -1;
	for (size_t i = 0; i < req.count; i++) {
		g->request_names[i] = own_string(in, req.names[i]);
		g->request_values[i] = req.values[i];
		if (!g->request_names[i])
			return nomem(cause);
	}
	g->request_count = req.count;
	if (labels_of(in, kjson_value(pod_spec, "nodeSelector"), &g->selector, &g->selector_count, where,
		      "template.spec.template.spec.nodeSelector", cause) ||
	    decode_affinity(in, pod_spec, g, where, cause) ||
	    decode_tolerations(in, kjson_value(pod_spec, "tolerations"), g, where, cause))
		return -1;
	return 0;
}

int topo_input_jobset(struct topo_input *in, const char *data, size_t size, char **cause)
{
	cJSON *root;
	const cJSON *rjs, *rj, *ann;
	const char *field = "metadata.annotations.";
	size_t n = 0;
	int rc = -1;

	*cause = NULL;
	if (in->read_jobset)
		return cause_replace(cause, "jobset: read twice");
	in->read_jobset = 1;
	root = parse_any(data, size, "jobset", cause);
	if (!root)
		return -1;
	if (check_kind(root, "JobSet", "jobset", cause) ||
	    copy_string(in, kjson_value(root, "metadata"), "name", TOPO_NAME_MAX, &in->jobset_name, "jobset",
			"metadata.", cause))
		goto out;
	ann = kjson_path(root, "metadata", "annotations", NULL);
	if (ann && !cJSON_IsObject(ann)) {
		cause_replace(cause, "jobset: metadata.annotations: not a map");
		goto out;
	}
	if (copy_string(in, ann, MUSTER_ANNOTATION_TOPOLOGY_REQUIRED, TOPO_INPUT_KEY_MAX, &in->whole_required,
			"jobset", field, cause) ||
	    copy_string(in, ann, MUSTER_ANNOTATION_TOPOLOGY_PREFERRED, TOPO_INPUT_KEY_MAX,
			&in->whole_preferred, "jobset", field, cause) ||
	    decode_network_annotation(in, ann, "jobset", field, &in->whole_network, cause))
		goto out;
	if (!!in->whole_required + !!in->whole_preferred + in->whole_network.set > 1) {
		cause_replace(cause, "jobset: metadata.annotations: at most one of %s, %s, %s",
			      MUSTER_ANNOTATION_TOPOLOGY_REQUIRED, MUSTER_ANNOTATION_TOPOLOGY_PREFERRED,
			      MUSTER_ANNOTATION_NETWORK_TOPOLOGY);
		goto out;
	}
	rjs = kjson_path(root, "spec", "replicatedJobs", NULL);
	if (!cJSON_IsArray(rjs) || cJSON_GetArraySize(rjs) == 0) {
		cause_replace(cause, "jobset: spec.replicatedJobs: missing, empty or not a list");
		goto out;
	}
	if (cJSON_GetArraySize(rjs) > TOPO_GROUPS_MAX) {
		cause_replace(cause, "jobset: spec.replicatedJobs: more than %d", TOPO_GROUPS_MAX);
		goto out;
	}
	cJSON_ArrayForEach(rj, rjs)
	{
		if (decode_replicated_job(in, rj, n, cause))
			goto out;
		for (size_t k = 0; k < n; k++)
			if (strcmp(in->groups[k].name, in->groups[n].name) == 0) {
				cause_replace(cause,
					      "jobset: spec.replicatedJobs[%zu]: name %s is used twice", n,
					      in->groups[n].name);
				goto out;
			}
		in->group_count = ++n;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- HyperNodes ---- */

static int decode_member(struct topo_input *in, const cJSON *m, struct topo_member *out, const char *where,
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
	if (get_string(m, "type", 16, &type, where, field, cause))
		return -1;
	if (type && strcmp(type, "Node") != 0 && strcmp(type, "HyperNode") != 0)
		return cause_replace(cause, "%s: %stype: %s is neither Node nor HyperNode", where, field,
				     type);
	out->kind = type && strcmp(type, "HyperNode") == 0 ? TOPO_MEMBER_HYPERNODE : TOPO_MEMBER_NODE;
	if (!sel) {
		/* The design document's short form: a bare name. */
		if (copy_string(in, m, "name", TOPO_NAME_MAX, &out->exact, where, field, cause))
			return -1;
		return out->exact ? 0 : cause_replace(cause, "%s: %sselector: missing", where, field);
	}
	snprintf(field, sizeof(field), "spec.members[%zu].selector.", index);
	if (copy_string(in, kjson_value(sel, "exactMatch"), "name", TOPO_NAME_MAX, &out->exact, where, field,
			cause) ||
	    copy_string(in, kjson_value(sel, "regexMatch"), "pattern", TOPO_INPUT_PATTERN_MAX, &out->regex,
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
		if (labels_of(in, kjson_value(labels, "matchLabels"), &l, &out->match_label_count, where,
			      field, cause))
			return -1;
		snprintf(field, sizeof(field), "spec.members[%zu].selector.labelMatch.matchExpressions",
			 index);
		if ((n = list_size(exprs, TOPO_INPUT_EXPRESSIONS_MAX, where, field, cause)) < 0)
			return -1;
		reqs = own(in, (size_t)n, sizeof(*reqs));
		if (!reqs)
			return nomem(cause);
		if (requirements_of(in, exprs, LABEL_SELECTOR, reqs, &count, where, field, cause))
			return -1;
		/* reqs is never NULL: it marks the label selector as the member's selector. */
		out->match_labels = l;
		out->match_expressions = reqs;
		out->match_expression_count = count;
	}
	return 0;
}

static int decode_hypernode(struct topo_input *in, const cJSON *it, size_t index, struct topo_hypernode *h,
			    char **cause)
{
	const cJSON *spec = kjson_value(it, "spec"), *members, *m;
	struct topo_member *mem;
	long long tier;
	size_t k = 0;
	char where[320];
	int n;

	snprintf(where, sizeof(where), "hypernodes: items[%zu]", index);
	if (check_kind(it, "HyperNode", where, cause) ||
	    copy_string(in, kjson_value(it, "metadata"), "name", TOPO_NAME_MAX, &h->name, where, "metadata.",
			cause))
		return -1;
	if (!h->name && copy_string(in, it, "name", TOPO_NAME_MAX, &h->name, where, "", cause))
		return -1; /* the design document's short form */
	if (!h->name || !h->name[0])
		return cause_replace(cause, "%s: metadata.name: missing", where);
	snprintf(where, sizeof(where), "hypernodes: items[%zu] (%s)", index, h->name);
	if (!spec)
		return cause_replace(cause, "%s: spec: missing", where);
	if (get_count(spec, "tier", -1, 1000000, &tier, where, "spec.", cause) ||
	    copy_string(in, spec, "tierName", TOPO_NAME_MAX, &h->tier_name, where, "spec.", cause))
		return -1;
	if (tier < 1)
		return cause_replace(cause, "%s: spec.tier: missing or below 1", where);
	h->tier = (int)tier;
	members = kjson_value(spec, "members");
	if ((n = list_size(members, TOPO_INPUT_MEMBERS_MAX, where, "spec.members", cause)) < 0)
		return -1;
	mem = own(in, (size_t)n, sizeof(*mem));
	if (!mem)
		return nomem(cause);
	cJSON_ArrayForEach(m, members)
	{
		if (decode_member(in, m, &mem[k], where, k, cause))
			return -1;
		k++;
	}
	h->members = mem;
	h->member_count = k;
	return 0;
}

int topo_input_hypernodes(struct topo_input *in, const char *data, size_t size, char **cause)
{
	cJSON *root;
	const cJSON *first, *it;
	size_t count = 0, n = 0;
	int rc = -1;

	*cause = NULL;
	if (in->read_hypernodes)
		return cause_replace(cause, "hypernodes: read twice");
	in->read_hypernodes = 1;
	root = parse_any(data, size, "hypernodes", cause);
	if (!root)
		return -1;
	if (items_of(root, &first, &count)) {
		cause_replace(cause, "hypernodes: not a List, a list or a HyperNode");
		goto out;
	}
	if (count > TOPO_HYPERNODES_MAX) {
		cause_replace(cause, "hypernodes: %zu items, at most %u", count, TOPO_HYPERNODES_MAX);
		goto out;
	}
	in->hypernodes = own(in, count, sizeof(*in->hypernodes));
	if (!in->hypernodes) {
		nomem(cause);
		goto out;
	}
	for (it = first; it && n < count; it = next_item(it), n++)
		if (decode_hypernode(in, it, n, &in->hypernodes[n], cause))
			goto out;
	in->hypernode_count = n;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- the request ---- */

/* A level by name (label, tierName, "tier N"), or a bare number: the highest tier not above it. */
static int level_named(const struct topo_tree *t, const char *name)
{
	int l = topo_tree_level(t, name);
	char *end;
	long tier;

	if (l >= 0)
		return l;
	errno = 0;
	tier = strtol(name, &end, 10);
	return errno || *end || end == name || tier < 1 || tier > 1000000
		       ? -1
		       : topo_tree_tier_level(t, (int)tier);
}

static int network_level(const struct topo_tree *t, const struct topo_input_network *net)
{
	return net->tier_name ? topo_tree_level(t, net->tier_name) : topo_tree_tier_level(t, net->tier);
}

/* A Volcano networkTopology as a constraint: hard = required, soft = preferred, soft without tier = none. */
static int network_constraint(const struct topo_tree *t, const struct topo_input_network *net,
			      struct topo_constraint *out, const char *who, char **cause)
{
	int l;

	if (!net->hard && !net->tier && !net->tier_name) {
		*out = (struct topo_constraint){ TOPO_MODE_NONE, 0 };
		return 0;
	}
	l = network_level(t, net);
	if (l < 1) {
		if (net->tier_name)
			return cause_replace(cause, "%s: highestTierName %s is not a tier of the topology",
					     who, net->tier_name);
		return cause_replace(cause, "%s: highestTierAllowed %d is below every tier of the topology",
				     who, net->tier);
	}
	*out = (struct topo_constraint){ net->hard ? TOPO_MODE_REQUIRED : TOPO_MODE_PREFERRED, (uint8_t)l };
	return 0;
}

static int group_request(const struct topo_input *in, const struct topo_tree *tree, size_t i,
			 struct topo_group *g, char **cause)
{
	const struct topo_input_group *ig = &in->groups[i];
	const char *lv = ig->required ? ig->required : ig->preferred;
	char who[128];

	snprintf(who, sizeof(who), "jobset: %s", ig->name);
	memset(g, 0, sizeof(*g));
	g->name = ig->name;
	g->replicas = ig->replicas;
	g->pods = ig->pods;
	g->shape.node_selector = ig->selector;
	g->shape.node_selector_count = ig->selector_count;
	g->shape.affinity = ig->affinity;
	g->shape.affinity_count = ig->affinity_count;
	g->shape.tolerations = ig->tolerations;
	g->shape.toleration_count = ig->toleration_count;
	for (size_t r = 0; r < ig->request_count; r++) {
		int slot = topo_resource_index(tree->cluster, ig->request_names[r]);

		if (strcmp(ig->request_names[r], "pods") == 0 || ig->request_values[r] == 0)
			continue;
		if (slot < 0)
			return cause_replace(
				cause,
				"%s requests %s, which no node has (or beyond the %d resources tracked)", who,
				ig->request_names[r], TOPO_RESOURCES_MAX);
		g->shape.requests[slot] = ig->request_values[r];
	}
	if (lv) {
		int l = level_named(tree, lv);

		if (l < 1)
			return cause_replace(cause, "%s: %s is not a level of the topology", who, lv);
		g->constraint =
			(struct topo_constraint){ ig->required ? TOPO_MODE_REQUIRED : TOPO_MODE_PREFERRED,
						  (uint8_t)l };
	} else if (ig->unconstrained) {
		g->constraint.mode = TOPO_MODE_UNCONSTRAINED;
	} else if (ig->network.set && network_constraint(tree, &ig->network, &g->constraint, who, cause)) {
		return -1;
	}
	if (ig->slice_level) {
		int l = level_named(tree, ig->slice_level);

		if (l < 1)
			return cause_replace(cause, "%s: %s is not a level of the topology", who,
					     ig->slice_level);
		g->slice_level = (uint8_t)l;
		g->slice_size = ig->slice_size;
	}
	if (ig->partitions) {
		struct topo_constraint part = { TOPO_MODE_NONE, 0 };

		if (ig->partition_network.set &&
		    network_constraint(tree, &ig->partition_network, &part, who, cause))
			return -1;
		g->slice_size = ig->partition_size;
		g->slice_level = part.level; /* 0: anywhere in the job's domain */
		g->min_slices = ig->min_partitions < ig->partitions ? ig->min_partitions : 0;
	}
	/* Co-placed groups share the number of the first group of their name. */
	for (size_t k = 0; ig->podset_group && k <= i; k++)
		if (in->groups[k].podset_group && strcmp(in->groups[k].podset_group, ig->podset_group) == 0) {
			g->together = (uint32_t)k + 1;
			break;
		}
	return 0;
}

int topo_input_request(const struct topo_input *in, const struct topo_tree *tree, struct topo_group *groups,
		       struct topo_request *req, char **cause)
{
	*cause = NULL;
	memset(req, 0, sizeof(*req));
	if (in->whole_required || in->whole_preferred) {
		const char *name = in->whole_required ? in->whole_required : in->whole_preferred;
		int l = level_named(tree, name);

		if (l < 1)
			return cause_replace(cause, "jobset: %s is not a level of the topology", name);
		req->whole = (struct topo_constraint){ in->whole_required ? TOPO_MODE_REQUIRED
									  : TOPO_MODE_PREFERRED,
						       (uint8_t)l };
	} else if (in->whole_network.set &&
		   network_constraint(tree, &in->whole_network, &req->whole, "jobset: the JobSet", cause)) {
		return -1;
	}
	for (size_t i = 0; i < in->group_count; i++)
		if (group_request(in, tree, i, &groups[i], cause))
			return -1;
	req->groups = groups;
	req->group_count = in->group_count;
	return 0;
}
