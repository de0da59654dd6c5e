/*
 * kjson: the bounded readers of cJSON fields that every decoder of a
 * Kubernetes object uses (the JobSet model, the controller's pod decoder,
 * AdmissionReview, the group settings, the topology objects), so that every
 * string taken out of a tree is bounded and every number range-checked the
 * same way, with the same words. Pure: -1 and a malloc'd cause
 * (docs/errors.md), or a status the caller puts into its own sentence.
 */
#ifndef MUSTER_KJSON_H
#define MUSTER_KJSON_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* object[key] when object is a JSON object, else NULL. A JSON null is
 * returned as it is (some fields tell null from absent). */
const struct cJSON *kjson_member(const struct cJSON *object, const char *key);

/* object[key], NULL also when the value is JSON null (absent and null mean
 * the same for most Kubernetes fields). */
const struct cJSON *kjson_value(const struct cJSON *object, const char *key);

/* kjson_value along up to three keys; b and c may be NULL. */
const struct cJSON *kjson_path(const struct cJSON *object, const char *a, const char *b, const char *c);

/* What is wrong with a field, for the caller's own sentence. */
enum kjson_status {
	KJSON_OK = 0,
	KJSON_NOT_STRING, /* "not a string" */
	KJSON_TOO_LONG, /* "longer than MAX bytes" */
	KJSON_NOT_COUNT, /* "not an integer from 0 to MAX" */
};

/* The words for a status ("not a string", "longer than 63 bytes", ...),
 * written into buf; returns buf. */
const char *kjson_status_text(enum kjson_status status, long long max, char *buf, size_t size);

/* Borrows the string `item`: *out NULL when absent or null, else its text
 * (at most max bytes; cJSON strings stop at the first NUL). */
enum kjson_status kjson_string(const struct cJSON *item, size_t max, const char **out);

/* An integer 0..max, from a JSON number or a decimal string (YAML gives
 * strings); *out = def when absent or null. */
enum kjson_status kjson_count(const struct cJSON *item, long long def, long long max, long long *out);

/* JSON true, or the strings "true", "True", "TRUE" (YAML and annotations). */
int kjson_is_true(const struct cJSON *item);

/* Copies the string `item` into `dst` (max bytes + NUL). Absent or JSON null
 * gives "" and 0 when optional; -1 for a wrong type, an empty required
 * string or a string longer than max. `what` names the field in the cause:
 * "<what> is missing", "<what> is not a string", "<what> is longer than N
 * bytes", "<what> is empty". */
int kjson_take_string(const struct cJSON *item, char *dst, size_t max, int required, const char *what,
		      char **cause);

/* Reads an optional JSON integer in 0..KJSON_INT32_MAX (Kubernetes int32
 * fields). Absent or null leaves *present 0. */
#define KJSON_INT32_MAX 2147483647u
int kjson_take_count(const struct cJSON *item, uint32_t *value, int *present, const char *what, char **cause);

/* Longest JSON document decoded at all: etcd refuses objects over 1.5 MiB. */
#define KJSON_OBJECT_MAX (2u * 1024u * 1024u)

/* Parses `len` bytes (at most KJSON_OBJECT_MAX) that must hold a JSON
 * object in well-formed UTF-8 without a NUL byte (utf8.h); `what` names it
 * in the cause. Returns the tree (the caller deletes
 * it) or NULL with the cause set. */
struct cJSON *kjson_parse_object(const char *json, size_t len, const char *what, char **cause);

#endif
