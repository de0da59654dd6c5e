/*
 * group_expect: how many pods of a JobSet must have started before its group
 * is released.
 *
 * The rule: the sum, over the targeted replicated jobs, of
 *     replicas × min(parallelism, completions)
 * with the upstream defaults (replicas 1, parallelism 1, completions =
 * parallelism) already applied by group_decode. A Job runs at most
 * `parallelism` pods at once and never more than `completions` in total, so
 * min(parallelism, completions) is the number of pods each child Job starts
 * at the same time, which is the number that can wait at the barrier together.
 * Targeted: named in groupSchedulingConfig.targetReplicatedJobs, or every
 * replicated job when that list is empty or absent. A target naming no
 * replicated job adds nothing here; the webhook refuses such JobSets.
 *
 * Pure arithmetic on a decoded struct: no state, no allocation.
 */
#ifndef MUSTER_GROUP_EXPECT_H
#define MUSTER_GROUP_EXPECT_H

#include <stdint.h>

#include "group_decode.h"

/* The expected count of `jobset` by the rule above, ignoring has_config (a
 * JobSet without the config is simply never released by the controller).
 * Each term is below 2^62; the sum saturates at UINT64_MAX, a count no group
 * can reach, instead of wrapping to a small one that could release early. */
uint64_t group_expected_pods(const struct jobset_model *jobset);

/* The expected count of one replicated job, targeted or not. */
uint64_t group_expected_job_pods(const struct jobset_rjob *job);

#endif
