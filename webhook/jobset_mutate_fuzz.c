/*
 * libFuzzer target for the mutator on a bare JobSet (shorter inputs than a
 * whole AdmissionReview, so the fuzzer reaches deeper into pod templates):
 * the settings decoded, the rules applied, the patch built. Whatever passes
 * validation must yield a patch whose every operation is an "add" with a
 * JSON Pointer into the JobSet; mutating twice must give the same patch (no
 * randomness, no state).
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobset_admission.h"
#include "jobset_mutate.h"
#include "jobset_validate.h"
#include "muster_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct jobset_mutate_options options = {
	.barrier_image = "muster-barrier:fuzz",
	.image_pull_policy = "IfNotPresent",
	.barrier_port = MUSTER_BARRIER_PORT,
	.cpu_request = "10m",
	.memory_request = "16Mi",
	.memory_limit = "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *jobset = cJSON_ParseWithLength((const char *)data, size), *patch = NULL, *again = NULL;
	struct jobset_admission *a = NULL;
	char *cause = NULL;
	const cJSON *op;

	if (!jobset || !(a = jobset_admission_decode(jobset, JOBSET_ADMISSION_COUNTED)))
		goto out;
	if (!a->config_ok) {
		if (!a->config_cause)
			abort();
		goto out;
	}
	if (jobset_validate_create(a, &cause))
		goto out;
	if (jobset_mutate(a, jobset, &options, "fuzz-token-0123456789", &patch, &cause))
		goto out;
	cJSON_ArrayForEach(op, patch)
	{
		const cJSON *path = cJSON_GetObjectItem(op, "path");

		if (strcmp(cJSON_GetObjectItem(op, "op")->valuestring, "add") != 0 || !cJSON_IsString(path) ||
		    path->valuestring[0] != '/' || !cJSON_GetObjectItem(op, "value"))
			abort();
	}
	if (jobset_mutate(a, jobset, &options, "fuzz-token-0123456789", &again, &cause) ||
	    !cJSON_Compare(patch, again, 1))
		abort();
out:
	cJSON_Delete(again);
	cJSON_Delete(patch);
	cJSON_Delete(jobset);
	free(cause);
	jobset_admission_free(a);
	return 0;
}
