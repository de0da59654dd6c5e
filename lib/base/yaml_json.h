/*
 * yaml_json: a document, JSON or YAML, as one cJSON tree, so that a single
 * decoder reads both (kubectl's -o json and -o yaml, files users write,
 * annotation values written in either form). YAML scalars become strings
 * (plain null scalars become null); several YAML documents become an array
 * (empty ones are skipped). Bounded: nesting depth YAML_JSON_DEPTH_MAX, and
 * aliases cannot expand a document beyond about 17 times its size. Pure: the
 * tree or NULL with a malloc'd cause (docs/errors.md).
 */
#ifndef MUSTER_YAML_JSON_H
#define MUSTER_YAML_JSON_H

#include <stddef.h>

#define YAML_JSON_DEPTH_MAX 64

struct cJSON;

/* JSON when it starts with '{' or '[' and parses as JSON, else YAML (a YAML
 * flow mapping starts the same way). `what` names the input in the cause:
 * "<what>: not valid JSON (at byte N)", "<what>: not valid YAML (line N:
 * ...)", "<what>: empty", "<what>: YAML too deep, expanding too much ...",
 * "<what> is not valid UTF-8 (byte 0xFF at offset N)" or "<what> holds a
 * NUL byte ..." (utf8.h: checked before either reader sees the text).
 * The caller deletes the tree. */
struct cJSON *yaml_json_parse(const char *data, size_t size, const char *what, char **cause);

/* The first byte where flow brackets nest deeper than YAML_JSON_DEPTH_MAX,
 * or size: checked in one linear pass before libyaml sees a document, as its
 * scanner is quadratic in flow depth (100,000 '[' take it half a minute).
 * Every reader of YAML (this one, the kubeconfig's) checks it first. */
size_t yaml_json_too_deep_at(const char *data, size_t size);

#endif
