/*
 * libFuzzer target for the AdmissionReview decoder: any bytes must decode or
 * fail with a cause, never crash or leak. What decodes is answered as the
 * webhook would: the settings decoded, the create or update rules applied,
 * the mutation built and the response encoded, and the object read as a pod
 * and as a Job of the pin route and pinned, so a hostile object inside a
 * well-formed envelope reaches every module of the webhook. Only text (UTF-8
 * without NUL) decodes, and every cause and answer is text too.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "admission.h"
#include "jobset_admission.h"
#include "jobset_mutate.h"
#include "jobset_validate.h"
#include "placement_gate.h"
#include "muster_api.h"
#include "pod_pin.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct jobset_mutate_options options = {
	.barrier_image = "muster-barrier:fuzz",
	.image_pull_policy = "IfNotPresent",
	.barrier_port = MUSTER_BARRIER_PORT,
	.cpu_request = "10m",
	.memory_request = "16Mi",
	.memory_limit = "32Mi",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct admission_request request;
	struct jobset_admission *a = NULL, *old = NULL;
	char *cause = NULL, *patch_text = NULL, *response;
	cJSON *patch = NULL;
	size_t len = 0;
	int allowed = 1;

	if (admission_decode((const char *)data, size, &request, &cause)) {
		/* The sentence goes to the answer and the log: text, whatever the body. */
		if (!cause || request.root || utf8_invalid_at(cause, strlen(cause)) != strlen(cause))
			abort();
		free(cause);
		return 0;
	}
	if (strnlen(request.uid, ADMISSION_UID_MAX + 1) > ADMISSION_UID_MAX || !request.uid[0])
		abort();
	if (request.object) { /* the pin route's halves, on any object */
		struct jobset_pod key;
		uint32_t pods;
		cJSON *pin = cJSON_CreateArray();

		const cJSON *op;

		if (pin && pod_pin_key(request.object, &key, &cause) == 0)
			pod_pin_patch(request.object, "block=b1,rack=r~/1", pin, &cause);
		free(cause);
		cause = NULL;
		if (pin && pod_pin_job_key(request.object, &key, &pods, &cause) == 0) {
			pod_pin_job_patch(request.object, "block=b1,rack=r~/1", pin, &cause);
			pod_pin_job_unpinned(request.object, pin);
			pod_pin_job_share_patch(request.object, "block=b1,rack=r~/1", pin);
		}
		free(cause);
		cause = NULL;
		/* Every op names what it does and a pointer into the spec. */
		cJSON_ArrayForEach(op, pin)
		{
			const cJSON *kind = cJSON_GetObjectItemCaseSensitive(op, "op"),
				    *path = cJSON_GetObjectItemCaseSensitive(op, "path");

			if (!cJSON_IsString(kind) || !cJSON_IsString(path) ||
			    strncmp(path->valuestring, "/spec/", 6) != 0)
				abort();
		}
		cJSON_Delete(pin);
	}
	/* The admission models, as webhook.c decodes them: a part that does
	 * not decode has its cause. */
	if (request.object && !(a = jobset_admission_decode(request.object, JOBSET_ADMISSION_COUNTED)))
		goto out;
	if (a && ((!a->config_ok && !a->config_cause) || (a->asks < 0 && !a->placement_cause)))
		abort();
	if (request.object && request.old_object) {
		cJSON *gate = cJSON_CreateArray(), *modified = NULL;

		if (!(old = jobset_admission_decode_stored(request.old_object, a)) || !gate) {
			cJSON_Delete(gate);
			goto out;
		}
		if (placement_gate_update(old, a, 0, gate, &modified, &cause) && !cause)
			abort();
		free(cause);
		cause = NULL;
		cJSON_Delete(modified);
		cJSON_Delete(gate);
		allowed = jobset_validate_update(old, a, &cause) == 0;
		if (!allowed && !cause)
			abort();
		free(cause);
		cause = NULL;
	}
	if (a && a->config_ok) {
		if (jobset_validate_create(a, &cause) == 0) {
			if (jobset_mutate(a, request.object, &options, "fuzz-token-0123456789", &patch,
					  &cause) == 0) {
				if (!cJSON_IsArray(patch))
					abort();
				patch_text = cJSON_PrintUnformatted(patch);
			}
		} else {
			allowed = 0;
		}
	}
	response = admission_response(request.uid, allowed, 422, cause, patch_text,
				      patch_text ? strlen(patch_text) : 0, allowed ? cause : NULL, &len);
	/* What decodes is text, and so is every answer built from it. */
	if (utf8_invalid_at((const char *)data, size) != size ||
	    (response && (strlen(response) != len || utf8_invalid_at(response, len) != len)))
		abort();
	free(response);
	free(patch_text);
out:
	cJSON_Delete(patch);
	free(cause);
	jobset_admission_free(a);
	jobset_admission_free(old);
	admission_request_free(&request);
	return 0;
}
