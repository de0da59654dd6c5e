/*
 * admission: the AdmissionReview v1 envelope, decoded where a request enters
 * the webhook and encoded where the answer leaves.
 *
 * The decoder checks the envelope (apiVersion admission.k8s.io/v1, kind
 * AdmissionReview, a request with a uid) and reads the fields the webhook
 * routes on into a plain struct; the JobSet itself (request.object and
 * request.oldObject) stays a cJSON tree owned by the struct, because the
 * mutator must copy parts of it into the patch verbatim. Anything the
 * envelope check refuses is the caller's HTTP 400: the apiserver never sends
 * such a body, so it is a misconfigured client, and without a uid there is
 * no review to answer. Text that is not UTF-8 or holds a NUL is refused
 * before any parsing (ADMISSION_BAD_TEXT), so no raw byte of a body ever
 * reaches a patch, a denial or a log line.
 *
 * The encoder writes the AdmissionReview response: allowed, or denied with
 * an HTTP-like code and a message the apiserver shows to the user, and an
 * optional RFC 6902 patch (base64 in the review, as the API requires).
 *
 * No I/O, no state. Failure: admission_decode() returns 0, or -1 with *cause
 * a malloc'd sentence (NULL only when that allocation failed) the caller
 * frees; on failure the request owns nothing. admission_request_free()
 * accepts a zeroed or freed request.
 */
#ifndef MUSTER_ADMISSION_H
#define MUSTER_ADMISSION_H

#include <stddef.h>

/* Longest request.uid accepted (the apiserver sends a 36-byte UUID). */
#define ADMISSION_UID_MAX 128
#define ADMISSION_NAME_MAX 253
#define ADMISSION_FIELD_MAX 63

enum admission_operation {
	ADMISSION_CREATE,
	ADMISSION_UPDATE,
	ADMISSION_DELETE,
	ADMISSION_CONNECT,
};

/* The most JSON values (objects, arrays, strings, numbers, literals) a
 * review may hold: a cJSON tree costs about 100 bytes a value, so this
 * bounds one request's tree near 26 MB, whatever the body (a million empty
 * strings fit in the apiserver's 3 MiB). The largest JobSet etcd stores
 * (1.5 MiB), old and new in an UPDATE, is well under it. */
#define ADMISSION_VALUES_MAX 262144u
/* Reviews of more values than this are "large": the webhook admits them
 * one at a time and gives their memory back after each. */
#define ADMISSION_VALUES_LARGE 16384u

struct cJSON;

/* What a scan of a body finds without building a tree (a few ms for 3 MiB). */
struct admission_scan {
	size_t values; /* an upper bound of the JSON values in it */
	char uid[ADMISSION_UID_MAX + 1]; /* request.uid when found, else "" */
};

/* Scans `len` bytes of JSON: how many values, and request.uid, so that a
 * review too large to decode can still be answered by its uid. Malformed
 * JSON is the decoder's to report: the scan only counts. */
void admission_scan(const char *body, size_t len, struct admission_scan *out);

struct admission_request {
	char uid[ADMISSION_UID_MAX + 1];
	enum admission_operation operation;
	/* request.kind: what the object is (group "" for the core API). */
	char group[ADMISSION_NAME_MAX + 1];
	char version[ADMISSION_FIELD_MAX + 1];
	char kind[ADMISSION_FIELD_MAX + 1];
	char namespace[ADMISSION_FIELD_MAX + 1]; /* "" when absent */
	char name[ADMISSION_NAME_MAX + 1]; /* "" on a CREATE with generateName */
	int dry_run;
	char user[ADMISSION_NAME_MAX + 1]; /* request.userInfo.username, "" when absent */
	struct cJSON *root; /* the whole review; owned */
	const struct cJSON *object; /* request.object, borrowed from root; NULL when absent */
	const struct cJSON *old_object; /* request.oldObject, borrowed; NULL when absent */
};

/* Decodes `len` bytes of JSON (no NUL needed). A review of more than
 * ADMISSION_VALUES_MAX values is not parsed: ADMISSION_TOO_LARGE, with
 * out->uid set when the scan found it (answer it denied, code 413) and the
 * cause saying how large it is. */
#define ADMISSION_TOO_LARGE (-2)
/* A body that is not well-formed UTF-8 (utf8.h), holds a raw NUL byte or
 * the escape \u0000 is not parsed either: ADMISSION_BAD_TEXT, with out->uid
 * set when the scan found it (answer it denied, code 400), and a cause that
 * says where by offset and hex value, never with the bytes themselves. */
#define ADMISSION_BAD_TEXT (-3)
int admission_decode(const char *body, size_t len, struct admission_request *out, char **cause);

void admission_request_free(struct admission_request *request);

/* 1 when the request is about a jobset.x-k8s.io/v1alpha2 JobSet. */
int admission_is_jobset(const struct admission_request *request);

/* The operation's name as the API spells it ("CREATE"). */
const char *admission_operation_name(enum admission_operation operation);

/* Encodes the response to the review with this uid. allowed 1: the patch
 * (`patch_len` bytes of a JSON Patch array, may be NULL) is attached when
 * given; allowed 0: `code` (e.g. 400, 422) and `message` (may be NULL) form
 * the status. `warning` (may be NULL) is shown to the user of an allowed
 * request (response.warnings: kubectl prints "Warning: ..."). Returns a
 * malloc'd NUL-terminated document and its length in *len, or NULL when out
 * of memory. */
char *admission_response(const char *uid, int allowed, int code, const char *message, const char *patch,
			 size_t patch_len, const char *warning, size_t *len);

#endif
