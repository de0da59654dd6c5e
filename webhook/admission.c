/*
 * admission: AdmissionReview v1 in and out (admission.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "admission.h"
#include "cause.h"
#include "kjson.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies an optional string field of the request, bounded. */
static int take(const cJSON *object, const char *key, char *dst, size_t max, int required, char **cause)
{
	char what[48];

	snprintf(what, sizeof(what), "request.%s", key);
	return kjson_take_string(kjson_member(object, key), dst, max, required, what, cause);
}

static const char *const operation_names[] = {
	[ADMISSION_CREATE] = "CREATE",
	[ADMISSION_UPDATE] = "UPDATE",
	[ADMISSION_DELETE] = "DELETE",
	[ADMISSION_CONNECT] = "CONNECT",
};

const char *admission_operation_name(enum admission_operation operation)
{
	if ((size_t)operation < sizeof(operation_names) / sizeof(operation_names[0]))
		return operation_names[operation];
	return "UNKNOWN";
}

static int ascii_printable(const char *text)
{
	for (; *text; text++)
		if ((unsigned char)*text < 0x20 || (unsigned char)*text > 0x7e)
			return 0;
	return 1;
}

static int decode_request(const cJSON *request, struct admission_request *out, char **cause)
{
	const cJSON *kind = kjson_member(request, "kind"), *item;
	char operation[ADMISSION_FIELD_MAX + 1];
	size_t i;

	if (take(request, "uid", out->uid, ADMISSION_UID_MAX, 1, cause))
		return -1;
	for (i = 0; out->uid[i]; i++)
		if (out->uid[i] < 0x21 || out->uid[i] > 0x7e)
			return cause_fail(cause, "request.uid holds a byte that is not printable ASCII");
	if (take(request, "operation", operation, ADMISSION_FIELD_MAX, 1, cause))
		return -1;
	for (i = 0; i < sizeof(operation_names) / sizeof(operation_names[0]); i++)
		if (strcmp(operation, operation_names[i]) == 0)
			break;
	if (i == sizeof(operation_names) / sizeof(operation_names[0]))
		return cause_fail(cause,
				  "request.operation \"%.20s\" is not CREATE, UPDATE, DELETE or CONNECT",
				  operation);
	out->operation = (enum admission_operation)i;
	if (!cJSON_IsObject(kind))
		return cause_fail(cause, "request.kind is missing");
	if (take(kind, "group", out->group, ADMISSION_NAME_MAX, 0, cause) ||
	    take(kind, "version", out->version, ADMISSION_FIELD_MAX, 1, cause) ||
	    take(kind, "kind", out->kind, ADMISSION_FIELD_MAX, 1, cause) ||
	    take(request, "namespace", out->namespace, ADMISSION_FIELD_MAX, 0, cause) ||
	    take(request, "name", out->name, ADMISSION_NAME_MAX, 0, cause))
		return -1;
	if (take(kjson_member(request, "userInfo"), "username", out->user, ADMISSION_NAME_MAX, 0, cause))
		return -1;
	item = kjson_member(request, "dryRun");
	if (item && !cJSON_IsNull(item) && !cJSON_IsBool(item))
		return cause_fail(cause, "request.dryRun is not a boolean");
	out->dry_run = cJSON_IsTrue(item);
	item = kjson_member(request, "object");
	if (item && !cJSON_IsNull(item)) {
		if (!cJSON_IsObject(item))
			return cause_fail(cause, "request.object is not an object");
		out->object = item;
	}
	item = kjson_member(request, "oldObject");
	if (item && !cJSON_IsNull(item)) {
		if (!cJSON_IsObject(item))
			return cause_fail(cause, "request.oldObject is not an object");
		out->old_object = item;
	}
	/* What an apiserver always sends: the object of a CREATE and an UPDATE,
	 * and the stored one of an UPDATE. */
	if ((out->operation == ADMISSION_CREATE || out->operation == ADMISSION_UPDATE) && !out->object)
		return cause_fail(cause, "request.object is missing: an apiserver sends it with every %s",
				  operation_names[out->operation]);
	if (out->operation == ADMISSION_UPDATE && !out->old_object)
		return cause_fail(cause,
				  "request.oldObject is missing: an apiserver sends it with every UPDATE");
	if (!ascii_printable(out->namespace) || !ascii_printable(out->name))
		return cause_fail(
			cause, "request.namespace or request.name holds a byte that is not printable ASCII "
			       "(Kubernetes names are DNS labels)");
	return 0;
}

/* Whether the body holds the JSON escape \u0000 (an odd run of backslashes
 * before "u0000"): cJSON would cut the string there without a word, so the
 * webhook would judge and patch a value other than the one sent. */
static int has_nul_escape(const char *body, size_t len)
{
	for (size_t i = 1; i + 5 <= len; i++) {
		size_t run = 0;

		if (body[i] != 'u' || memcmp(body + i + 1, "0000", 4) != 0)
			continue;
		while (run < i && body[i - 1 - run] == '\\')
			run++;
		if (run % 2 == 1)
			return 1;
	}
	return 0;
}

/* The scan's view of one string token: where it starts and ends. */
struct token {
	const char *at;
	size_t len;
};

static int token_is(struct token t, const char *word)
{
	return t.at && t.len == strlen(word) && memcmp(t.at, word, t.len) == 0;
}

/* As decode_request wants a uid: printable ASCII, no space, no escape. */
static int printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '\\' || s[i] == '"')
			return 0;
	return 1;
}

void admission_scan(const char *body, size_t len, struct admission_scan *out)
{
	/* The key being read at depths 1 and 2 (request, uid), and the last
	 * string seen, which is a key when ':' follows. */
	struct token key1 = { 0 }, key2 = { 0 }, last = { 0 };
	size_t depth = 0, values = 0;
	int want_uid = 0;

	/* Each value counted once: strings (less the keys), containers, and
	 * numbers and literals by their first character. */

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < len; i++) {
		char c = body[i];

		switch (c) {
		case '"': {
			size_t start = ++i;

			while (i < len && body[i] != '"')
				i += body[i] == '\\' ? 2 : 1;
			last = (struct token){ body + start, (i < len ? i : len) - start };
			if (want_uid && !out->uid[0] && last.len <= ADMISSION_UID_MAX &&
			    printable(last.at, last.len)) {
				memcpy(out->uid, last.at, last.len);
				out->uid[last.len] = '\0';
			}
			want_uid = 0;
			values++;
			break;
		}
		case ':':
			values -= values > 0; /* that string was a key, not a value */
			if (depth == 1)
				key1 = last;
			else if (depth == 2)
				key2 = last;
			want_uid = depth == 2 && token_is(key1, "request") && token_is(key2, "uid");
			break;
		case '{':
		case '[':
			values++;
			depth++;
			break;
		case '}':
		case ']':
			depth -= depth > 0;
			break;
		case '-':
		case 't': /* true */
		case 'f': /* false */
		case 'n': /* null */
			values++;
			while (i + 1 < len && !strchr(",:]} \t\r\n\"", body[i + 1]))
				i++;
			break;
		default:
			if (c >= '0' && c <= '9') { /* a number: one value, whatever its length */
				values++;
				while (i + 1 < len && !strchr(",:]} \t\r\n\"", body[i + 1]))
					i++;
			}
			break;
		}
	}
	out->values = values;
}

int admission_decode(const char *body, size_t len, struct admission_request *out, char **cause)
{
	const cJSON *api_version, *kind;
	struct admission_scan scan;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	if (!body || len == 0)
		return cause_fail(cause, "empty body: expected an AdmissionReview (admission.k8s.io/v1)");
	admission_scan(body, len, &scan);
	if (scan.values > ADMISSION_VALUES_MAX) {
		memcpy(out->uid, scan.uid, sizeof(out->uid));
		cause_fail(cause,
			   "the AdmissionReview is too large for muster-webhook: about %zu JSON values, "
			   "limit %u (%zu bytes; a JobSet or Pod of that many fields is refused so that "
			   "no request can take the webhook's memory)",
			   scan.values, ADMISSION_VALUES_MAX, len);
		return ADMISSION_TOO_LARGE;
	}
	/* Text the webhook will not judge, answered by its uid when the scan
	 * found one: bytes that are not UTF-8 would be copied as they are into
	 * the patch and the denial, and a NUL cuts a string where cJSON reads it. */
	if (utf8_check(body, len, "the AdmissionReview", cause) ||
	    (has_nul_escape(body, len) &&
	     cause_fail(cause,
			"the AdmissionReview holds a NUL character (\\u0000), which no Kubernetes "
			"object muster admits carries and which its JSON reader would silently cut at"))) {
		memcpy(out->uid, scan.uid, sizeof(out->uid));
		return ADMISSION_BAD_TEXT;
	}
	out->root = cJSON_ParseWithLength(body, len);
	if (!out->root)
		return cause_fail(cause, "the body is not valid JSON (malformed or truncated): expected an "
					 "AdmissionReview (admission.k8s.io/v1)");
	api_version = kjson_member(out->root, "apiVersion");
	kind = kjson_member(out->root, "kind");
	if (!cJSON_IsObject(out->root) || !cJSON_IsString(kind) ||
	    strcmp(kind->valuestring, "AdmissionReview") != 0) {
		cause_fail(cause, "the body is not an AdmissionReview");
		goto bad;
	}
	if (!cJSON_IsString(api_version) || strcmp(api_version->valuestring, "admission.k8s.io/v1") != 0) {
		cause_fail(cause,
			   "AdmissionReview apiVersion %s%.40s%s is not supported: register the webhook with "
			   "admissionReviewVersions [v1]",
			   cJSON_IsString(api_version) ? "\"" : "",
			   cJSON_IsString(api_version) ? api_version->valuestring : "(missing)",
			   cJSON_IsString(api_version) ? "\"" : "");
		goto bad;
	}
	if (!cJSON_IsObject(kjson_member(out->root, "request"))) {
		cause_fail(cause, "the AdmissionReview has no request");
		goto bad;
	}
	if (decode_request(kjson_member(out->root, "request"), out, cause))
		goto bad;
	return 0;
bad:
	admission_request_free(out);
	return -1;
}

void admission_request_free(struct admission_request *request)
{
	if (!request)
		return;
	cJSON_Delete(request->root);
	memset(request, 0, sizeof(*request));
}

int admission_is_jobset(const struct admission_request *request)
{
	return strcmp(request->group, "jobset.x-k8s.io") == 0 && strcmp(request->version, "v1alpha2") == 0 &&
	       strcmp(request->kind, "JobSet") == 0;
}

static char *base64(const char *data, size_t len)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out, *p;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	p = out;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)data[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (uint32_t)(unsigned char)data[i + 1] << 8;
		if (left > 2)
			v |= (unsigned char)data[i + 2];
		*p++ = alphabet[(v >> 18) & 63];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = left > 1 ? alphabet[(v >> 6) & 63] : '=';
		*p++ = left > 2 ? alphabet[v & 63] : '=';
	}
	*p = '\0';
	return out;
}

char *admission_response(const char *uid, int allowed, int code, const char *message, const char *patch,
			 size_t patch_len, const char *warning, size_t *len)
{
	cJSON *review = cJSON_CreateObject(), *response = NULL, *status;
	char *encoded = NULL, *text = NULL;

	if (!review || !cJSON_AddStringToObject(review, "apiVersion", "admission.k8s.io/v1") ||
	    !cJSON_AddStringToObject(review, "kind", "AdmissionReview"))
		goto out;
	response = cJSON_AddObjectToObject(review, "response");
	if (!response || !cJSON_AddStringToObject(response, "uid", uid ? uid : "") ||
	    !cJSON_AddBoolToObject(response, "allowed", allowed))
		goto out;
	if (allowed && patch) {
		encoded = base64(patch, patch_len);
		if (!encoded || !cJSON_AddStringToObject(response, "patchType", "JSONPatch") ||
		    !cJSON_AddStringToObject(response, "patch", encoded))
			goto out;
	}
	if (allowed && warning) {
		cJSON *warnings = cJSON_AddArrayToObject(response, "warnings"),
		      *one = cJSON_CreateString(warning);

		if (!warnings || !one || !cJSON_AddItemToArray(warnings, one)) {
			cJSON_Delete(one);
			goto out;
		}
	}
	if (!allowed) {
		status = cJSON_AddObjectToObject(response, "status");
		if (!status || !cJSON_AddNumberToObject(status, "code", code) ||
		    !cJSON_AddStringToObject(status, "reason", code == 422 ? "Invalid" : "BadRequest") ||
		    (message && !cJSON_AddStringToObject(status, "message", message)))
			goto out;
	}
	text = cJSON_PrintUnformatted(review);
	if (text && len)
		*len = strlen(text);
out:
	free(encoded);
	cJSON_Delete(review);
	return text;
}
