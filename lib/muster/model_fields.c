/*
 * model_fields: bounded readers of cJSON fields. See model_fields.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "model_fields.h"
#include "cause.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

const cJSON *model_member(const cJSON *object, const char *key)
{
	return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, key) : NULL;
}

/* Copies the string `item` into `dst` (max bytes + NUL). Absent or JSON null
 * gives "" and 0 when optional; -1 for a wrong type, an empty required string,
 * a string longer than max or one holding a NUL. */
int model_take_string(const cJSON *item, char *dst, size_t max, int required, const char *what, char **cause)
{
	size_t n;

	dst[0] = '\0';
	if (!item || cJSON_IsNull(item)) {
		if (required)
			return cause_fail(cause, "%s is missing", what);
		return 0;
	}
	if (!cJSON_IsString(item) || !item->valuestring)
		return cause_fail(cause, "%s is not a string", what);
	n = strnlen(item->valuestring, max + 1);
	if (n > max)
		return cause_fail(cause, "%s is longer than %zu bytes", what, max);
	if (n == 0 && required)
		return cause_fail(cause, "%s is empty", what);
	memcpy(dst, item->valuestring, n);
	dst[n] = '\0';
	return 0;
}

/* Reads an optional integer in 0..MODEL_INT32_MAX. Absent or null leaves
 * *present 0. */
int model_take_count(const cJSON *item, uint32_t *value, int *present, const char *what, char **cause)
{
	double d;

	*present = 0;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!cJSON_IsNumber(item))
		return cause_fail(cause, "%s is not a number", what);
	d = item->valuedouble;
	if (!isfinite(d) || d < 0 || d > (double)MODEL_INT32_MAX || floor(d) != d)
		return cause_fail(cause, "%s is not an integer in 0..%u", what, MODEL_INT32_MAX);
	*value = (uint32_t)d;
	*present = 1;
	return 0;
}

/* Parses a decimal number of at most `max_digits` digits into *value, no sign
 * and no spaces. Returns 0 or -1. */
int model_parse_decimal(const char *text, unsigned max_digits, uint64_t limit, uint64_t *value)
{
	uint64_t v = 0;
	size_t n = strlen(text);

	if (n == 0 || n > max_digits)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (text[i] < '0' || text[i] > '9')
			return -1;
		d = (unsigned)(text[i] - '0');
		if (v > (limit - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*value = v;
	return 0;
}

cJSON *model_parse_object(const char *json, size_t len, const char *what, char **cause)
{
	cJSON *root;

	if (!json)
		return cause_fail(cause, "no %s JSON", what), NULL;
	if (len > MODEL_JSON_MAX)
		return cause_fail(cause, "%s JSON is %zu bytes, more than %u", what, len, MODEL_JSON_MAX),
		       NULL;
	root = cJSON_ParseWithLength(json, len);
	if (!root)
		return cause_fail(cause, "%s is not valid JSON", what), NULL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return cause_fail(cause, "%s JSON is not an object", what), NULL;
	}
	return root;
}
