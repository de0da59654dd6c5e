/*
 * model_fields: the bounded field readers of muster's object models (the
 * JobSet model here, the controller's pod decoder), so that every string
 * taken out of a cJSON tree is bounded and every number range-checked the
 * same way, with the same sentences. Pure: -1 and a malloc'd cause
 * (docs/errors.md).
 */
#ifndef MUSTER_MODEL_FIELDS_H
#define MUSTER_MODEL_FIELDS_H

#include <stddef.h>
#include <stdint.h>

/* A label value and a DNS label (namespace, replicated job name, JobSet
 * name: JobSet copies the name into a label, so it cannot be longer). */
#define MODEL_LABEL_MAX 63
/* A DNS subdomain: metadata.name of a pod. */
#define MODEL_OBJECT_NAME_MAX 253
/* metadata.uid is a UUID (36 characters); anything up to 64 is accepted so
 * that another apiserver's format still works, longer is refused. */
#define MODEL_UID_MAX 64
/* Kubernetes int32 fields (replicas, restarts, the restart-attempt label). */
#define MODEL_INT32_MAX 2147483647u
/* Longest JSON document decoded at all: etcd refuses objects over 1.5 MiB. */
#define MODEL_JSON_MAX (2u * 1024u * 1024u)

struct cJSON;

/* object[key] when object is a JSON object, else NULL. */
const struct cJSON *model_member(const struct cJSON *object, const char *key);

/* Copies the string `item` into `dst` (max bytes + NUL). Absent or JSON null
 * gives "" and 0 when optional; -1 for a wrong type, an empty required
 * string, a string longer than max or one holding a NUL. `what` names the
 * field in the cause ("JobSet metadata.name"). */
int model_take_string(const struct cJSON *item, char *dst, size_t max, int required, const char *what,
		      char **cause);

/* Reads an optional integer in 0..MODEL_INT32_MAX. Absent or null leaves
 * *present 0. */
int model_take_count(const struct cJSON *item, uint32_t *value, int *present, const char *what, char **cause);

/* Parses a decimal number of at most `max_digits` digits, no sign and no
 * spaces, not above limit. Returns 0 and *value, or -1 (no cause). */
int model_parse_decimal(const char *text, unsigned max_digits, uint64_t limit, uint64_t *value);

/* Parses `len` bytes (at most MODEL_JSON_MAX) that must hold a JSON object;
 * `what` names it in the cause. Returns the tree (the caller deletes it) or
 * NULL with the cause set. */
struct cJSON *model_parse_object(const char *json, size_t len, const char *what, char **cause);

#endif
