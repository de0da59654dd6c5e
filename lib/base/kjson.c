/*
 * kjson: bounded readers of cJSON fields. See kjson.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "kjson.h"
#include "cause.h"
#include "utf8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

const cJSON *kjson_member(const cJSON *object, const char *key)
{
	return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, key) : NULL;
}

const cJSON *kjson_value(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(object, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

const cJSON *kjson_path(const cJSON *object, const char *a, const char *b, const char *c)
{
	const cJSON *v = kjson_value(object, a);

	if (v && b)
		v = kjson_value(v, b);
	if (v && c)
		v = kjson_value(v, c);
	return v;
}

const char *kjson_status_text(enum kjson_status status, long long max, char *buf, size_t size)
{
	switch (status) {
	case KJSON_OK:
		snprintf(buf, size, "fine");
		break;
	case KJSON_NOT_STRING:
		snprintf(buf, size, "not a string");
		break;
	case KJSON_TOO_LONG:
		snprintf(buf, size, "longer than %lld bytes", max);
		break;
	case KJSON_NOT_COUNT:
		snprintf(buf, size, "not an integer from 0 to %lld", max);
		break;
	}
	return buf;
}

enum kjson_status kjson_string(const cJSON *item, size_t max, const char **out)
{
	*out = NULL;
	if (!item || cJSON_IsNull(item))
		return KJSON_OK;
	if (!cJSON_IsString(item) || !item->valuestring)
		return KJSON_NOT_STRING;
	if (strnlen(item->valuestring, max + 1) > max)
		return KJSON_TOO_LONG;
	*out = item->valuestring;
	return KJSON_OK;
}

enum kjson_status kjson_count(const cJSON *item, long long def, long long max, long long *out)
{
	*out = def;
	if (!item || cJSON_IsNull(item))
		return KJSON_OK;
	if (cJSON_IsNumber(item)) {
		double d = item->valuedouble;

		if (d >= 0 && d <= (double)max && d == (double)(long long)d) {
			*out = (long long)d;
			return KJSON_OK;
		}
	} else if (cJSON_IsString(item) && item->valuestring) {
		char *end;
		long long x;

		errno = 0;
		x = strtoll(item->valuestring, &end, 10);
		if (!errno && !*end && end != item->valuestring && x >= 0 && x <= max) {
			*out = x;
			return KJSON_OK;
		}
	}
	return KJSON_NOT_COUNT;
}

int kjson_is_true(const cJSON *item)
{
	return cJSON_IsTrue(item) ||
	       (cJSON_IsString(item) && item->valuestring &&
		(strcmp(item->valuestring, "true") == 0 || strcmp(item->valuestring, "True") == 0 ||
		 strcmp(item->valuestring, "TRUE") == 0));
}

int kjson_take_string(const cJSON *item, char *dst, size_t max, int required, const char *what, char **cause)
{
	const char *text;
	size_t n;

	dst[0] = '\0';
	if (!item || cJSON_IsNull(item)) {
		if (required)
			return cause_fail(cause, "%s is missing", what);
		return 0;
	}
	switch (kjson_string(item, max, &text)) {
	case KJSON_OK:
		break;
	case KJSON_TOO_LONG:
		return cause_fail(cause, "%s is longer than %zu bytes", what, max);
	default:
		return cause_fail(cause, "%s is not a string", what);
	}
	n = strlen(text);
	if (n == 0 && required)
		return cause_fail(cause, "%s is empty", what);
	memcpy(dst, text, n + 1);
	return 0;
}

int kjson_take_count(const cJSON *item, uint32_t *value, int *present, const char *what, char **cause)
{
	double d;

	*present = 0;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!cJSON_IsNumber(item))
		return cause_fail(cause, "%s is not a number", what);
	d = item->valuedouble;
	if (!isfinite(d) || d < 0 || d > (double)KJSON_INT32_MAX || floor(d) != d)
		return cause_fail(cause, "%s is not an integer in 0..%u", what, KJSON_INT32_MAX);
	*value = (uint32_t)d;
	*present = 1;
	return 0;
}

cJSON *kjson_parse_object(const char *json, size_t len, const char *what, char **cause)
{
	cJSON *root;

	if (!json)
		return cause_fail(cause, "no %s JSON", what), NULL;
	if (len > KJSON_OBJECT_MAX)
		return cause_fail(cause, "%s JSON is %zu bytes, more than %u", what, len, KJSON_OBJECT_MAX),
		       NULL;
	if (utf8_check(json, len, what, cause))
		return NULL;
	root = cJSON_ParseWithLength(json, len);
	if (!root)
		return cause_fail(cause, "%s is not valid JSON", what), NULL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return cause_fail(cause, "%s JSON is not an object", what), NULL;
	}
	return root;
}
