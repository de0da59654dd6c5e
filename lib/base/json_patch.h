/*
 * json_patch: the one builder of JSON Patch documents (RFC 6902) and JSON
 * Pointer tokens (RFC 6901) in muster. A patch is a cJSON array the caller
 * owns; each function appends one operation to it. The webhook's answers
 * (the barrier's injection, the placement gate, the pin route) are built
 * with it. No I/O, no state.
 */
#ifndef MUSTER_JSON_PATCH_H
#define MUSTER_JSON_PATCH_H

#include <stddef.h>

struct cJSON;

/* {"op":kind,"path":path,"value":value}: kind "add", "replace" or
 * "remove" (value NULL for "remove" only). Takes `value` (deleted on
 * failure). 0, or -1 when memory ran out or value is missing. */
int json_patch_op(struct cJSON *patch, const char *kind, const char *path, struct cJSON *value);

/* {"op":"add","path":path,"value":value}. Takes `value` (deleted on
 * failure; NULL fails). 0, or -1 when memory ran out. */
int json_patch_add(struct cJSON *patch, const char *path, struct cJSON *value);

/* {"op":"replace",...}, as json_patch_add. */
int json_patch_replace(struct cJSON *patch, const char *path, struct cJSON *value);

/* {"op":"remove","path":path}. 0, or -1 when memory ran out. */
int json_patch_remove(struct cJSON *patch, const char *path);

/* Moves every op of `more` to the end of `patch`, in order; frees `more`
 * (NULL: nothing). */
void json_patch_append(struct cJSON *patch, struct cJSON *more);

/* Writes `len` bytes of `text` as one JSON Pointer token into `out`
 * (`size` bytes with the NUL): '~' as "~0", '/' as "~1". Returns 0, or -1
 * when it does not fit (out then holds ""). 3 * len + 1 bytes always do. */
int json_pointer_token(char *out, size_t size, const char *text, size_t len);

#endif
