/*
 * group_expect: the expected started-pod count. See group_expect.h.
 */
#include "group_expect.h"

uint64_t group_expected_job_pods(const struct jobset_rjob *job)
{
	uint64_t per_job = job->parallelism < job->completions ? job->parallelism : job->completions;

	/* Both factors are at most 2^31 - 1, so the product fits in 64 bits. */
	return (uint64_t)job->replicas * per_job;
}

uint64_t group_expected_pods(const struct jobset_model *jobset)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < jobset->replicated_job_count && i < JOBSET_MODEL_RJOBS_MAX; i++) {
		uint64_t term;

		if (!jobset->replicated_jobs[i].targeted)
			continue;
		term = group_expected_job_pods(&jobset->replicated_jobs[i]);
		if (term > UINT64_MAX - sum)
			return UINT64_MAX;
		sum += term;
	}
	return sum;
}
