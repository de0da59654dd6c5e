/*
 * topo_fields: the field readers shared by the decoders of topology objects
 * (topo_objects.c, topo_jobset.c). See topo_fields.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_fields.h"

#include "cause.h"
#include "kjson.h"
#include "quantity.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* A string field: *out NULL when absent; -1 when of another type or longer than max. */
int topo_field_string(const cJSON *obj, const char *key, size_t max, const char **out, const char *where,
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
int topo_field_copy(struct topo_store *s, const cJSON *obj, const char *key, size_t max, const char **out,
		    const char *where, const char *field, char **cause)
{
	if (topo_field_string(obj, key, max, out, where, field, cause))
		return -1;
	if (*out && !(*out = topo_store_string(s, *out)))
		return topo_store_nomem(s, cause);
	return 0;
}

/* An integer 0..max from a JSON number or a (YAML) string; def when absent. */
int topo_field_count(const cJSON *obj, const char *key, long long def, long long max, long long *out,
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
long long topo_field_quantity(const cJSON *v)
{
	char buf[64];

	if (cJSON_IsString(v))
		return quantity_parse(v->valuestring);
	if (!cJSON_IsNumber(v))
		return -1;
	snprintf(buf, sizeof(buf), "%.17g", v->valuedouble);
	return quantity_parse(buf);
}

/* Items of another kind are refused: a pods file given as --nodes says so. */
int topo_field_kind(const cJSON *item, const char *want, const char *where, char **cause)
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
int topo_field_labels(struct topo_store *s, const cJSON *obj, struct topo_label **out, size_t *count,
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
	if (cJSON_GetArraySize(obj) > TOPO_OBJ_LABELS_MAX)
		return cause_replace(cause, "%s: %s: more than %d entries", where, field,
				     TOPO_OBJ_LABELS_MAX);
	*out = topo_store_alloc(s, (size_t)cJSON_GetArraySize(obj), sizeof(**out));
	if (!*out)
		return topo_store_nomem(s, cause);
	cJSON_ArrayForEach(l, obj)
	{
		if (!l->string || !l->string[0] || strlen(l->string) > TOPO_OBJ_KEY_MAX)
			return cause_replace(cause, "%s: %s: a key is empty or longer than %d bytes", where,
					     field, TOPO_OBJ_KEY_MAX);
		if (!cJSON_IsString(l) || strlen(l->valuestring) > TOPO_VALUE_MAX)
			return cause_replace(cause, "%s: %s[\"%s\"]: not a string of at most %d bytes", where,
					     field, l->string, TOPO_VALUE_MAX);
		(*out)[n].key = topo_store_string(s, l->string);
		(*out)[n].value = topo_store_string(s, l->valuestring);
		if (!(*out)[n].key || !(*out)[n].value)
			return topo_store_nomem(s, cause);
		n++;
	}
	*count = n;
	return 0;
}

int topo_field_requirements(struct topo_store *s, const cJSON *list, enum topo_requirement_kind kind,
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

		if (topo_field_string(e, "key", TOPO_OBJ_KEY_MAX, &key, where, field, cause) ||
		    topo_field_string(e, "operator", 32, &op, where, field, cause))
			return -1;
		if (!key || !key[0] || !op)
			return cause_replace(cause, "%s: %s[%zu]: needs a key and an operator", where, field,
					     k);
		for (o = 0; o < sizeof(ops) / sizeof(ops[0]) && strcmp(ops[o].name, op) != 0; o++)
			;
		if (o == sizeof(ops) / sizeof(ops[0]) ||
		    (kind == TOPO_REQ_LABEL_SELECTOR && ops[o].values == 2) ||
		    (kind == TOPO_REQ_NODE_FIELDS && ops[o].op != TOPO_OP_IN && ops[o].op != TOPO_OP_NOT_IN))
			return cause_replace(cause, "%s: %s[%zu].operator: %s is not supported here", where,
					     field, k, op);
		if (kind == TOPO_REQ_NODE_FIELDS && strcmp(key, "metadata.name") != 0)
			return cause_replace(cause,
					     "%s: %s[%zu].key: only metadata.name is a node field, not %s",
					     where, field, k, key);
		if (values && !cJSON_IsArray(values))
			return cause_replace(cause, "%s: %s[%zu].values: not a list", where, field, k);
		n = values ? (size_t)cJSON_GetArraySize(values) : 0;
		if (n > TOPO_OBJ_VALUES_MAX || (ops[o].values == 0 && n) || (ops[o].values == 1 && !n) ||
		    (ops[o].values == 2 && n != 1))
			return cause_replace(cause, "%s: %s[%zu].values: %s takes %s", where, field, k, op,
					     ops[o].values == 0	  ? "no values"
					     : ops[o].values == 2 ? "exactly one value"
								  : "1 to 256 values");
		copies = topo_store_alloc(s, n, sizeof(*copies));
		if (!copies)
			return topo_store_nomem(s, cause);
		n = 0;
		cJSON_ArrayForEach(v, values)
		{
			if (!cJSON_IsString(v) || strlen(v->valuestring) > TOPO_NAME_MAX)
				return cause_replace(
					cause, "%s: %s[%zu].values[%zu]: not a string of at most %d bytes",
					where, field, k, n, TOPO_NAME_MAX);
			if (!(copies[n++] = topo_store_string(s, v->valuestring)))
				return topo_store_nomem(s, cause);
		}
		*r = (struct topo_requirement){ .key = topo_store_string(s, key),
						.op = ops[o].op,
						.values = copies,
						.value_count = n,
						.on_name = kind == TOPO_REQ_NODE_FIELDS };
		if (!r->key)
			return topo_store_nomem(s, cause);
		(*count)++;
		k++;
	}
	return 0;
}

int topo_field_list_size(const cJSON *list, int max, const char *where, const char *field, char **cause)
{
	if (list && !cJSON_IsArray(list))
		return cause_replace(cause, "%s: %s: not a list", where, field);
	if (cJSON_GetArraySize(list) > max)
		return cause_replace(cause, "%s: %s: more than %d entries", where, field, max);
	return cJSON_GetArraySize(list);
}

int topo_field_effect(const char *s, enum topo_effect *e)
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

long long topo_amount_add(long long a, long long b)
{
	return a > QUANTITY_MAX - b ? QUANTITY_MAX : a + b;
}

static long long *topo_amounts_slot(struct topo_amounts *a, const char *name)
{
	for (size_t i = 0; i < a->count; i++)
		if (strcmp(a->names[i], name) == 0)
			return &a->values[i];
	if (a->count == TOPO_OBJ_REQUESTS_MAX)
		return NULL;
	a->names[a->count] = name;
	a->values[a->count] = 0;
	return &a->values[a->count++];
}

enum topo_combine { TOPO_SUM, TOPO_MAX, TOPO_SET };

static int topo_amounts_combine(struct topo_amounts *into, const struct topo_amounts *from,
				enum topo_combine how)
{
	for (size_t i = 0; i < from->count; i++) {
		long long *slot = topo_amounts_slot(into, from->names[i]);

		if (!slot)
			return -1;
		*slot = how == TOPO_SUM	  ? topo_amount_add(*slot, from->values[i])
			: how == TOPO_MAX ? (*slot > from->values[i] ? *slot : from->values[i])
					  : from->values[i];
	}
	return 0;
}

/* A map of quantities (requests, limits, overhead). */
static int topo_amounts_of(const cJSON *map, struct topo_amounts *out, const char *where, const char *field,
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
		long long q = topo_field_quantity(x);
		long long *slot;

		if (!x->string || !x->string[0] || strlen(x->string) > TOPO_OBJ_KEY_MAX)
			return cause_replace(cause, "%s: %s: a resource name is empty or too long", where,
					     field);
		if (q < 0)
			return cause_replace(cause, "%s: %s[\"%s\"]: bad quantity %s%s%s", where, field,
					     x->string, cJSON_IsString(x) ? "\"" : "",
					     cJSON_IsString(x) ? x->valuestring : "(not a string)",
					     cJSON_IsString(x) ? "\"" : "");
		slot = topo_amounts_slot(out, x->string);
		if (!slot)
			return cause_replace(cause, "%s: %s: more than %d resources", where, field,
					     TOPO_OBJ_REQUESTS_MAX);
		*slot = q;
	}
	return 0;
}

/* A container's requests, its limits standing for missing requests. */
static int container_requests(const cJSON *c, struct topo_amounts *out, const char *where, const char *field,
			      char **cause)
{
	struct topo_amounts limits;
	char f[128];

	snprintf(f, sizeof(f), "%s.resources.requests", field);
	if (topo_amounts_of(kjson_path(c, "resources", "requests", NULL), out, where, f, cause))
		return -1;
	snprintf(f, sizeof(f), "%s.resources.limits", field);
	if (topo_amounts_of(kjson_path(c, "resources", "limits", NULL), &limits, where, f, cause))
		return -1;
	for (size_t i = 0; i < limits.count; i++) {
		size_t k;

		for (k = 0; k < out->count && strcmp(out->names[k], limits.names[i]) != 0; k++)
			;
		if (k == out->count && topo_amounts_slot(out, limits.names[i]))
			out->values[k] = limits.values[i];
	}
	return 0;
}

int topo_pod_requests(const cJSON *spec, struct topo_amounts *out, const char *where, const char *prefix,
		      char **cause)
{
	const cJSON *containers = kjson_value(spec, "containers"),
		    *inits = kjson_value(spec, "initContainers"), *c;
	struct topo_amounts one, sidecars = { .count = 0 }, init = { .count = 0 }, pod_level, overhead;
	size_t i = 0;
	char field[128];

	out->count = 0;
	snprintf(field, sizeof(field), "%s.containers", prefix);
	if (topo_field_list_size(containers, TOPO_OBJ_CONTAINERS_MAX, where, field, cause) < 0)
		return -1;
	snprintf(field, sizeof(field), "%s.initContainers", prefix);
	if (topo_field_list_size(inits, TOPO_OBJ_CONTAINERS_MAX, where, field, cause) < 0)
		return -1;
	cJSON_ArrayForEach(c, containers)
	{
		snprintf(field, sizeof(field), "%s.containers[%zu]", prefix, i++);
		if (container_requests(c, &one, where, field, cause))
			return -1;
		if (topo_amounts_combine(out, &one, TOPO_SUM))
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
			if (topo_amounts_combine(out, &one, TOPO_SUM) ||
			    topo_amounts_combine(&sidecars, &one, TOPO_SUM))
				goto too_many;
			if (topo_amounts_combine(&init, &sidecars, TOPO_MAX))
				goto too_many;
		} else {
			if (topo_amounts_combine(&one, &sidecars, TOPO_SUM) ||
			    topo_amounts_combine(&init, &one, TOPO_MAX))
				goto too_many;
		}
	}
	if (topo_amounts_combine(out, &init, TOPO_MAX))
		goto too_many;
	if (container_requests(spec, &pod_level, where, prefix, cause))
		return -1;
	for (i = 0; i < pod_level.count; i++)
		if (strcmp(pod_level.names[i], "cpu") == 0 || strcmp(pod_level.names[i], "memory") == 0) {
			long long *slot = topo_amounts_slot(out, pod_level.names[i]);

			if (!slot)
				goto too_many;
			*slot = pod_level.values[i];
		}
	snprintf(field, sizeof(field), "%s.overhead", prefix);
	if (topo_amounts_of(kjson_value(spec, "overhead"), &overhead, where, field, cause))
		return -1;
	if (topo_amounts_combine(out, &overhead, TOPO_SUM))
		goto too_many;
	return 0;
too_many:
	return cause_replace(cause, "%s: %s: more than %d distinct resources requested", where, prefix,
			     TOPO_OBJ_REQUESTS_MAX);
}
