/*
 * json_patch: JSON Patch operations and JSON Pointer tokens (json_patch.h).
 */
#include "json_patch.h"

#include <cjson/cJSON.h>
#include <string.h>

int json_patch_op(cJSON *patch, const char *kind, const char *path, cJSON *value)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || (!value && strcmp(kind, "remove") != 0) || !cJSON_AddStringToObject(o, "op", kind) ||
	    !cJSON_AddStringToObject(o, "path", path) || !cJSON_AddItemToArray(patch, o)) {
		cJSON_Delete(o);
		cJSON_Delete(value);
		return -1;
	}
	if (value)
		cJSON_AddItemToObject(o, "value", value);
	return 0;
}

int json_patch_add(cJSON *patch, const char *path, cJSON *value)
{
	return json_patch_op(patch, "add", path, value);
}

int json_patch_replace(cJSON *patch, const char *path, cJSON *value)
{
	return json_patch_op(patch, "replace", path, value);
}

int json_patch_remove(cJSON *patch, const char *path)
{
	return json_patch_op(patch, "remove", path, NULL);
}

void json_patch_append(cJSON *patch, cJSON *more)
{
	cJSON *item;

	while (more && (item = cJSON_DetachItemFromArray(more, 0)) != NULL)
		cJSON_AddItemToArray(patch, item);
	cJSON_Delete(more);
}

int json_pointer_token(char *out, size_t size, const char *text, size_t len)
{
	size_t o = 0;

	if (!size)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int escaped = text[i] == '~' || text[i] == '/';

		if (o + (escaped ? 2 : 1) >= size) {
			out[0] = '\0';
			return -1;
		}
		if (escaped) {
			out[o++] = '~';
			out[o++] = text[i] == '~' ? '0' : '1';
		} else {
			out[o++] = text[i];
		}
	}
	out[o] = '\0';
	return 0;
}
