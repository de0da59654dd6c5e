/*
 * yaml_json: JSON or YAML into one cJSON tree. See yaml_json.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "yaml_json.h"
#include "cause.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

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

	if (!node || depth > YAML_JSON_DEPTH_MAX || *budget < 16)
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

/* The first byte where flow brackets ('[', '{') nest deeper than
 * YAML_JSON_DEPTH_MAX, or size. Quotes are not tracked, so a bracket inside
 * a string counts too: no input can hide its depth, and a real document
 * never has 64 brackets open at once inside its strings. One pass, so a
 * deep input is refused in time linear in its size, before libyaml (whose
 * scanner is quadratic in flow depth) or cJSON sees it. */
size_t yaml_json_too_deep_at(const char *data, size_t size)
{
	size_t depth = 0;

	for (size_t i = 0; i < size; i++) {
		if (data[i] == '[' || data[i] == '{') {
			if (++depth > YAML_JSON_DEPTH_MAX)
				return i;
		} else if ((data[i] == ']' || data[i] == '}') && depth > 0) {
			depth--;
		}
	}
	return size;
}

/* JSON if it starts with '{' or '[' and parses, else YAML; several YAML
 * documents become an array (empty ones are skipped). Content after a JSON
 * document is never dropped: the whole input is then read as YAML (JSON
 * documents separated by ---), and when it is not that either, it is an
 * error naming where the JSON document ended. */
cJSON *yaml_json_parse(const char *data, size_t size, const char *what, char **cause)
{
	size_t i = 0, deep = yaml_json_too_deep_at(data, size);
	char *text_cause = NULL;

	/* Both readers take the bytes of a string as they come: text that is
	 * not UTF-8, or a NUL that cuts a string, never reaches them. */
	if (utf8_check(data, size, what, &text_cause)) {
		cause_replace(cause, "%s", text_cause ? text_cause : "out of memory");
		free(text_cause);
		return NULL;
	}
	if (deep < size) {
		cause_replace(cause, "%s: nested deeper than %d levels (at byte %zu)", what,
			      YAML_JSON_DEPTH_MAX, deep);
		return NULL;
	}
	while (i < size && isspace((unsigned char)data[i]))
		i++;
	if (i < size && (data[i] == '{' || data[i] == '[')) {
		const char *end = NULL;
		cJSON *j = cJSON_ParseWithLengthOpts(data, size, &end, 0);
		char *yaml_cause = NULL;
		size_t rest = j && end ? (size_t)(end - data) : size;

		while (rest < size && isspace((unsigned char)data[rest]))
			rest++;
		if (j && rest == size)
			return j;
		cJSON_Delete(j);
		/* A YAML flow mapping ({a: b}) starts the same way; so do JSON
		 * documents separated by ---. */
		j = parse_yaml(data, size, what, &yaml_cause);
		free(yaml_cause);
		if (!j && rest < size && end)
			cause_replace(cause, "%s: more content after the JSON document, at byte %zu", what,
				      rest);
		else if (!j)
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
