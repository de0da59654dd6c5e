/*
 * Unit tests of group_tracker: what counts as started, release exactly once
 * per attempt, no release with a pod missing, restarts, crash recovery, and
 * event streams that arrive shuffled, duplicated or after a re-list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "group_decode.h"
#include "group_expect.h"
#include "group_tracker.h"

/* A JobSet ns/js with `workers` (replicas × parallelism pods) and one
 * `aux` pod; targets: workers only when only_workers. */
static void make_jobset(struct jobset_model *js, uint32_t replicas, uint32_t parallelism, int only_workers,
			uint32_t restarts)
{
	memset(js, 0, sizeof(*js));
	snprintf(js->namespace, sizeof(js->namespace), "ns");
	snprintf(js->name, sizeof(js->name), "js");
	snprintf(js->uid, sizeof(js->uid), "jobset-uid");
	js->restarts = restarts;
	js->has_config = 1;
	js->replicated_job_count = 2;
	snprintf(js->replicated_jobs[0].name, sizeof(js->replicated_jobs[0].name), "workers");
	js->replicated_jobs[0].replicas = replicas;
	js->replicated_jobs[0].parallelism = parallelism;
	js->replicated_jobs[0].completions = parallelism;
	js->replicated_jobs[0].targeted = 1;
	snprintf(js->replicated_jobs[1].name, sizeof(js->replicated_jobs[1].name), "aux");
	js->replicated_jobs[1].replicas = 1;
	js->replicated_jobs[1].parallelism = 1;
	js->replicated_jobs[1].completions = 1;
	js->replicated_jobs[1].targeted = !only_workers;
	if (only_workers) {
		js->target_count = 1;
		snprintf(js->targets[0], sizeof(js->targets[0]), "workers");
	}
}

/* Lifecycle stages of a worker pod, in the order the watch reports them. */
enum stage {
	PENDING,
	BOUND,
	WAITING,
	RUNNING,
	PASSED,
	MAIN_RUNNING,
	FAILED_BARRIER,
	TIMED_OUT,
	POD_FAILED,
	DELETING
};

static void make_pod(struct group_pod *p, int index, uint32_t attempt, enum stage stage, uint64_t rv)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->uid, sizeof(p->uid), "uid-%d-a%u", index, attempt);
	snprintf(p->name, sizeof(p->name), "js-workers-%d-x", index);
	snprintf(p->namespace, sizeof(p->namespace), "ns");
	snprintf(p->jobset_name, sizeof(p->jobset_name), "js");
	snprintf(p->jobset_uid, sizeof(p->jobset_uid), "jobset-uid");
	snprintf(p->replicated_job, sizeof(p->replicated_job), "workers");
	p->has_attempt = 1;
	p->attempt = attempt;
	p->has_resource_version = 1;
	p->resource_version = rv;
	p->phase = GROUP_PHASE_PENDING;
	p->bound = stage != PENDING;
	p->ip_family = stage >= WAITING ? 4 : 0;
	p->ip[0] = 10;
	p->ip[3] = (uint8_t)index;
	switch (stage) {
	case PENDING:
	case BOUND:
		break;
	case WAITING:
		p->barrier = GROUP_BARRIER_WAITING;
		break;
	case RUNNING:
		p->barrier = GROUP_BARRIER_RUNNING;
		break;
	case PASSED:
		p->barrier = GROUP_BARRIER_PASSED;
		break;
	case MAIN_RUNNING:
		p->barrier = GROUP_BARRIER_PASSED;
		p->phase = GROUP_PHASE_RUNNING;
		break;
	case FAILED_BARRIER:
		p->barrier = GROUP_BARRIER_FAILED;
		break;
	case TIMED_OUT:
		p->barrier = GROUP_BARRIER_TIMED_OUT;
		p->phase = GROUP_PHASE_FAILED;
		break;
	case POD_FAILED:
		p->barrier = GROUP_BARRIER_RUNNING;
		p->phase = GROUP_PHASE_FAILED;
		break;
	case DELETING:
		p->barrier = GROUP_BARRIER_RUNNING;
		p->deleting = 1;
		break;
	}
}

static struct group_tracker *new_tracker(const struct jobset_model *js)
{
	char *cause = NULL;
	struct group_tracker *t = group_tracker_new(js, 0, &cause);

	if (!t)
		fail_msg("group_tracker_new: %s", cause ? cause : "(no cause)");
	return t;
}

/* A tracker as after start-up: empty LIST applied, ConfigMap absent. */
static struct group_tracker *ready_tracker(const struct jobset_model *js)
{
	struct group_tracker *t = new_tracker(js);

	group_tracker_relist_begin(t);
	group_tracker_relist_end(t);
	group_tracker_set_none_released(t);
	return t;
}

static enum group_action decide(struct group_tracker *t, struct group_decision *d)
{
	struct group_decision local;

	if (!d)
		d = &local;
	group_tracker_decide(t, d);
	return d->action;
}

static enum group_apply_result apply(struct group_tracker *t, int index, uint32_t attempt, enum stage stage,
				     uint64_t rv, enum group_event event)
{
	struct group_pod p;

	make_pod(&p, index, attempt, stage, rv);
	return group_tracker_apply_pod(t, &p, event, rv);
}

static void started_semantics(void **state)
{
	static const struct {
		enum stage stage;
		int started;
	} cases[] = {
		{ PENDING, 0 }, /* not bound */
		{ BOUND, 0 }, /* bound, barrier has no status yet */
		{ WAITING, 0 }, /* barrier being created: not at the barrier yet */
		{ RUNNING, 1 }, /* at the barrier */
		{ PASSED, 1 }, /* past it */
		{ MAIN_RUNNING, 1 }, /* past it, main container running */
		{ FAILED_BARRIER, 0 }, /* broke */
		{ TIMED_OUT, 0 }, /* timed out */
		{ POD_FAILED, 0 }, /* phase Failed */
		{ DELETING, 0 }, /* deletionTimestamp set */
	};
	struct jobset_model js;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 1, 1, 1, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct group_tracker *t = ready_tracker(&js);

		assert_int_equal(apply(t, 0, 0, cases[i].stage, 10, GROUP_EVENT_ADDED), GROUP_APPLY_CHANGED);
		decide(t, &d);
		if (d.started != (uint64_t)cases[i].started)
			fail_msg("stage %zu: started %llu, want %d", i, (unsigned long long)d.started,
				 cases[i].started);
		assert_int_equal(d.tracked, 1);
		assert_int_equal(d.action, cases[i].started ? GROUP_ACTION_RELEASE : GROUP_ACTION_WAIT);
		group_tracker_free(t);
	}
	/* A status that says running without a node (kubelet never sends it,
	 * a broken or forged object might) does not count: binding is required. */
	{
		struct group_tracker *t = ready_tracker(&js);
		struct group_pod p;

		make_pod(&p, 0, 0, MAIN_RUNNING, 10);
		p.bound = 0;
		assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_CHANGED);
		decide(t, &d);
		assert_int_equal(d.started, 0);
		assert_int_equal(d.action, GROUP_ACTION_WAIT);
		group_tracker_free(t);
	}
}

static void other_pods_do_not_count(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_pod p;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 1, 1, 1, 1);
	t = ready_tracker(&js);
	/* Older attempt: ignored. */
	make_pod(&p, 0, 0, RUNNING, 5);
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	/* No attempt label. */
	make_pod(&p, 1, 1, RUNNING, 5);
	p.has_attempt = 0;
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	/* Untargeted replicated job (Story 2's auxiliary). */
	make_pod(&p, 2, 1, MAIN_RUNNING, 5);
	snprintf(p.replicated_job, sizeof(p.replicated_job), "aux");
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	/* Replicated job the JobSet does not have. */
	snprintf(p.replicated_job, sizeof(p.replicated_job), "ghost");
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	/* Another JobSet, another namespace. */
	make_pod(&p, 3, 1, RUNNING, 5);
	snprintf(p.jobset_name, sizeof(p.jobset_name), "other");
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	make_pod(&p, 3, 1, RUNNING, 5);
	snprintf(p.namespace, sizeof(p.namespace), "other");
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	/* A later attempt is kept but does not count yet. */
	assert_int_equal(apply(t, 4, 2, RUNNING, 6, GROUP_EVENT_ADDED), GROUP_APPLY_CHANGED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.started, 0);
	assert_int_equal(d.tracked, 0);
	assert_int_equal(group_tracker_records(t), 1);
	group_tracker_free(t);
}

/* `kubectl delete -f js.yaml && kubectl apply -f js.yaml` while the garbage
 * collector still removes the old pods: they carry the same JobSet name and
 * restart attempt, but the old uid, and never count for the new JobSet. */
static void pods_of_an_earlier_jobset_of_the_same_name_do_not_count(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	struct group_pod p;

	(void)state;
	make_jobset(&js, 2, 2, 1, 0);
	t = ready_tracker(&js);
	/* Four old pods (running, at the barrier, finished, about to go). */
	for (int i = 0; i < 4; i++) {
		make_pod(&p, 100 + i, 0,
			 i == 0	  ? MAIN_RUNNING
			 : i == 1 ? RUNNING
			 : i == 2 ? PASSED
				  : BOUND,
			 5);
		snprintf(p.jobset_uid, sizeof(p.jobset_uid), "old-jobset-uid");
		assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_IGNORED);
	}
	/* One new pod of four started: no release. */
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.started, 1);
	assert_int_equal(d.tracked, 1);
	for (int i = 1; i < 4; i++)
		apply(t, i, 0, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_int_equal(d.started, 4);
	group_tracker_free(t);
}

/* JobSet before v0.10 sets no jobset-uid label: its pods are matched by the
 * JobSet's name, as they cannot be told apart, rather than never counted
 * (which would leave every such group waiting until its timeout). */
static void pods_without_the_uid_label_match_by_name(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	struct group_pod p;

	(void)state;
	make_jobset(&js, 2, 1, 1, 0);
	t = ready_tracker(&js);
	for (int i = 0; i < 2; i++) {
		make_pod(&p, i, 0, RUNNING, 5);
		p.jobset_uid[0] = '\0';
		assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_CHANGED);
	}
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	group_tracker_free(t);
}

/* A released JobSet suspended and resumed: its new pods carry the same
 * restart attempt and the next gang generation. The release of the
 * generation before is not theirs: they wait for their own siblings. */
static void resumed_jobset_waits_for_its_new_pods(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	struct group_pod p;
	char *cause = NULL;

	(void)state;
	make_jobset(&js, 2, 1, 1, 0);
	t = ready_tracker(&js);
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	apply(t, 1, 0, RUNNING, 11, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_int_equal(d.generation, 0);
	group_tracker_release_done(t, d.epoch);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	/* Suspended (the old pods deleted), then resumed with generation 1. */
	apply(t, 0, 0, RUNNING, 12, GROUP_EVENT_DELETED);
	apply(t, 1, 0, RUNNING, 13, GROUP_EVENT_DELETED);
	js.generation = 1;
	assert_int_equal(group_tracker_set_jobset(t, &js, 20, &cause), 0);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.attempt, 0);
	assert_int_equal(d.generation, 1);
	assert_true(d.epoch == group_epoch(1, 0));
	/* One new pod started; a pod still labelled generation 0 counts for nothing. */
	make_pod(&p, 2, 0, RUNNING, 30);
	p.generation = 1;
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 30), GROUP_APPLY_CHANGED);
	make_pod(&p, 4, 0, RUNNING, 31);
	assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 31), GROUP_APPLY_IGNORED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.started, 1);
	/* The release read back from before the suspend does not cover it. */
	group_tracker_set_released(t, group_epoch(0, 0));
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	make_pod(&p, 3, 0, RUNNING, 32);
	p.generation = 1;
	group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 32);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_true(d.epoch == group_epoch(1, 0));
	group_tracker_release_done(t, d.epoch);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	/* A later restart attempt of generation 1 is above it again. */
	js.restarts = 1;
	assert_int_equal(group_tracker_set_jobset(t, &js, 40, &cause), 0);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_true(d.epoch == group_epoch(1, 1));
	/* A stale JobSet event (generation 0) changes nothing. */
	js.generation = 0;
	assert_int_equal(group_tracker_set_jobset(t, &js, 41, &cause), 0);
	assert_true(decide(t, &d) == GROUP_ACTION_WAIT && d.epoch == group_epoch(1, 1));
	group_tracker_free(t);
}

static void release_exactly_once(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 2, 2, 1, 0);
	t = ready_tracker(&js);
	for (int i = 0; i < 4; i++)
		apply(t, i, 0, PENDING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	for (int i = 0; i < 3; i++)
		apply(t, i, 0, RUNNING, 20 + (uint64_t)i, GROUP_EVENT_MODIFIED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.expected, 4);
	assert_int_equal(d.started, 3);
	assert_int_equal(d.tracked, 4);
	apply(t, 3, 0, RUNNING, 30, GROUP_EVENT_MODIFIED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_int_equal(d.attempt, 0);
	assert_true(d.has_starts);
	assert_int_equal(d.first_start, 20);
	assert_int_equal(d.last_start, 30);
	/* Asked again before the write is reported: no second release. */
	assert_int_equal(decide(t, &d), GROUP_ACTION_PENDING);
	assert_int_equal(decide(t, &d), GROUP_ACTION_PENDING);
	group_tracker_release_done(t, 0);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	/* Pods passing their barrier and running change nothing. */
	for (int i = 0; i < 4; i++)
		apply(t, i, 0, MAIN_RUNNING, 40 + (uint64_t)i, GROUP_EVENT_MODIFIED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	assert_int_equal(d.started, 4);
	group_tracker_free(t);
}

static void release_retried_after_failed_write(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;

	(void)state;
	make_jobset(&js, 1, 1, 1, 0);
	t = ready_tracker(&js);
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_RELEASE);
	group_tracker_release_failed(t, 7); /* not the pending attempt: no effect */
	assert_int_equal(decide(t, NULL), GROUP_ACTION_PENDING);
	group_tracker_release_failed(t, 0);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_RELEASE);
	group_tracker_set_released(t, 0); /* read back from the ConfigMap */
	assert_int_equal(decide(t, NULL), GROUP_ACTION_RELEASED);
	group_tracker_free(t);
}

static void no_release_without_full_picture(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;

	(void)state;
	make_jobset(&js, 1, 1, 1, 0);
	t = new_tracker(&js);
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	/* No LIST yet, released attempt unknown. */
	assert_int_equal(decide(t, NULL), GROUP_ACTION_UNKNOWN);
	group_tracker_relist_begin(t);
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_UNKNOWN);
	group_tracker_relist_end(t);
	/* Still no ConfigMap read. */
	assert_int_equal(decide(t, NULL), GROUP_ACTION_UNKNOWN);
	group_tracker_set_none_released(t);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_RELEASE);
	group_tracker_free(t);
}

static void idle_without_config_or_pods(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;

	(void)state;
	make_jobset(&js, 1, 1, 1, 0);
	js.has_config = 0;
	t = ready_tracker(&js);
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_IDLE);
	group_tracker_free(t);
	make_jobset(&js, 0, 1, 1, 0);
	t = ready_tracker(&js);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_IDLE);
	group_tracker_free(t);
}

static void more_started_than_expected_is_anomaly(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 1, 2, 1, 0);
	t = ready_tracker(&js);
	for (int i = 0; i < 3; i++)
		apply(t, i, 0, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_ANOMALY);
	assert_int_equal(d.started, 3);
	/* One of them goes away: now exactly the group. */
	apply(t, 2, 0, RUNNING, 20, GROUP_EVENT_DELETED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	group_tracker_free(t);
}

static void stale_and_deleted_events(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 1, 2, 1, 0);
	t = ready_tracker(&js);
	assert_int_equal(apply(t, 0, 0, RUNNING, 20, GROUP_EVENT_ADDED), GROUP_APPLY_CHANGED);
	/* An older MODIFIED (lower resourceVersion) and a duplicate are ignored. */
	assert_int_equal(apply(t, 0, 0, PENDING, 15, GROUP_EVENT_MODIFIED), GROUP_APPLY_UNCHANGED);
	assert_int_equal(apply(t, 0, 0, RUNNING, 20, GROUP_EVENT_MODIFIED), GROUP_APPLY_UNCHANGED);
	decide(t, &d);
	assert_int_equal(d.started, 1);
	/* DELETED of an unknown uid: harmless, and the pod cannot come back. */
	assert_int_equal(apply(t, 1, 0, RUNNING, 30, GROUP_EVENT_DELETED), GROUP_APPLY_CHANGED);
	assert_int_equal(apply(t, 1, 0, RUNNING, 25, GROUP_EVENT_ADDED), GROUP_APPLY_UNCHANGED);
	assert_int_equal(apply(t, 1, 0, RUNNING, 35, GROUP_EVENT_MODIFIED), GROUP_APPLY_UNCHANGED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.started, 1);
	assert_int_equal(d.tracked, 1);
	/* DELETED with an older resourceVersion still deletes. */
	assert_int_equal(apply(t, 0, 0, RUNNING, 5, GROUP_EVENT_DELETED), GROUP_APPLY_CHANGED);
	decide(t, &d);
	assert_int_equal(d.started, 0);
	assert_int_equal(d.tracked, 0);
	/* Without numeric resourceVersions the latest event wins. */
	{
		struct group_pod p;

		make_pod(&p, 2, 0, RUNNING, 0);
		p.has_resource_version = 0;
		group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1);
		make_pod(&p, 2, 0, WAITING, 0);
		p.has_resource_version = 0;
		assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_MODIFIED, 2),
				 GROUP_APPLY_CHANGED);
		decide(t, &d);
		assert_int_equal(d.started, 0);
	}
	group_tracker_free(t);
}

/* A recorded watch stream: every pod goes PENDING, BOUND, WAITING, RUNNING;
 * resourceVersions grow along the stream as the apiserver's do. */
struct recorded {
	int index;
	uint32_t attempt;
	enum stage stage;
	enum group_event event;
	uint64_t rv;
};

static size_t record_stream(struct recorded *out, int pods, int skip_last_running, int with_churn)
{
	static const enum stage stages[] = { PENDING, BOUND, WAITING, RUNNING };
	uint64_t rv = 100;
	size_t n = 0;

	for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++)
		for (int i = 0; i < pods; i++) {
			if (skip_last_running && stages[s] == RUNNING && i == pods - 1)
				continue;
			out[n++] = (struct recorded){ i, 0, stages[s],
						      s ? GROUP_EVENT_MODIFIED : GROUP_EVENT_ADDED, rv++ };
		}
	if (with_churn) {
		/* Pod 0 is evicted after it started and replaced by pod 1000,
		 * which starts too; a pod of an old attempt lingers. */
		out[n++] = (struct recorded){ 0, 0, DELETING, GROUP_EVENT_MODIFIED, rv++ };
		out[n++] = (struct recorded){ 0, 0, DELETING, GROUP_EVENT_DELETED, rv++ };
		out[n++] = (struct recorded){ 1000, 0, PENDING, GROUP_EVENT_ADDED, rv++ };
		out[n++] = (struct recorded){ 1000, 0, BOUND, GROUP_EVENT_MODIFIED, rv++ };
		out[n++] = (struct recorded){ 1000, 0, RUNNING, GROUP_EVENT_MODIFIED, rv++ };
		out[n++] = (struct recorded){ 7, 0, FAILED_BARRIER, GROUP_EVENT_MODIFIED, rv++ };
	}
	return n;
}

static void shuffle(struct recorded *events, size_t n, unsigned seed)
{
	/* A fixed LCG, so that every run and platform sees the same orders. */
	uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;

	for (size_t i = n - 1; i > 0; i--) {
		size_t j;
		struct recorded tmp;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		j = (size_t)((x >> 33) % (i + 1));
		tmp = events[i];
		events[i] = events[j];
		events[j] = tmp;
	}
}

/* Applies the stream, calling decide() after every event; returns the
 * number of RELEASE answers, each acknowledged at once. */
static int replay(struct group_tracker *t, const struct recorded *events, size_t n, int duplicate)
{
	int releases = 0;

	for (size_t i = 0; i < n; i++) {
		struct group_decision d;

		for (int k = 0; k <= duplicate; k++)
			apply(t, events[i].index, events[i].attempt, events[i].stage, events[i].rv,
			      events[i].event);
		if (decide(t, &d) == GROUP_ACTION_RELEASE) {
			releases++;
			group_tracker_release_done(t, d.attempt);
		}
	}
	return releases;
}

#define STREAM_PODS 24
#define STREAM_MAX (STREAM_PODS * 4 + 16)
#define SEEDS 300

static void shuffled_streams_release_once(void **state)
{
	struct recorded events[STREAM_MAX];
	struct jobset_model js;
	size_t n;

	(void)state;
	make_jobset(&js, 4, STREAM_PODS / 4, 1, 0);
	for (unsigned seed = 0; seed < SEEDS; seed++) {
		struct group_tracker *t = ready_tracker(&js);
		struct group_decision d;

		n = record_stream(events, STREAM_PODS, 0, 0);
		if (seed)
			shuffle(events, n, seed);
		/* Every event twice, and the whole stream replayed again. */
		assert_int_equal(replay(t, events, n, seed % 2), 1);
		assert_int_equal(replay(t, events, n, 0), 0);
		assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
		assert_int_equal(d.started, STREAM_PODS);
		group_tracker_free(t);
	}
}

static void shuffled_streams_never_release_with_one_missing(void **state)
{
	struct recorded events[STREAM_MAX];
	struct jobset_model js;
	size_t n;

	(void)state;
	make_jobset(&js, 4, STREAM_PODS / 4, 1, 0);
	for (unsigned seed = 0; seed < SEEDS; seed++) {
		struct group_tracker *t = ready_tracker(&js);
		struct group_decision d;

		n = record_stream(events, STREAM_PODS, 1, 0);
		shuffle(events, n, seed);
		assert_int_equal(replay(t, events, n, seed % 2), 0);
		assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
		assert_int_equal(d.started, STREAM_PODS - 1);
		group_tracker_free(t);
	}
}

static void shuffled_streams_converge(void **state)
{
	struct recorded events[STREAM_MAX];
	struct jobset_model js;
	struct group_decision want, got;
	struct group_tracker *t;
	size_t n;

	(void)state;
	make_jobset(&js, 4, STREAM_PODS / 4, 1, 0);
	n = record_stream(events, STREAM_PODS, 0, 1);
	t = ready_tracker(&js);
	for (size_t i = 0; i < n; i++)
		apply(t, events[i].index, events[i].attempt, events[i].stage, events[i].rv, events[i].event);
	decide(t, &want);
	/* In order: pod 0 gone, pod 1000 started, pod 7 failed its barrier. */
	assert_int_equal(want.started, STREAM_PODS - 1);
	assert_int_equal(want.tracked, STREAM_PODS);
	group_tracker_free(t);
	for (unsigned seed = 1; seed < SEEDS; seed++) {
		t = ready_tracker(&js);
		shuffle(events, n, seed);
		for (size_t i = 0; i < n; i++)
			apply(t, events[i].index, events[i].attempt, events[i].stage, events[i].rv,
			      events[i].event);
		decide(t, &got);
		assert_int_equal(got.started, want.started);
		assert_int_equal(got.tracked, want.tracked);
		assert_int_equal(got.action, want.action);
		group_tracker_free(t);
	}
}

static void relist_drops_pod_deleted_in_gap(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 1, 4, 1, 0);
	t = ready_tracker(&js);
	for (int i = 0; i < 3; i++)
		apply(t, i, 0, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	apply(t, 3, 0, RUNNING, 14, GROUP_EVENT_ADDED);
	/* The watch broke; pod 3 was deleted and replaced by pod 4, which is
	 * still pending. A re-list shows the truth. */
	group_tracker_relist_begin(t);
	for (int i = 0; i < 3; i++)
		apply(t, i, 0, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_UNKNOWN); /* pod 3 not swept yet */
	apply(t, 4, 0, PENDING, 40, GROUP_EVENT_ADDED);
	group_tracker_relist_end(t);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.started, 3);
	assert_int_equal(d.tracked, 4);
	assert_int_equal(group_tracker_records(t), 4);
	/* Tombstones are swept by a re-list too. */
	apply(t, 9, 0, RUNNING, 50, GROUP_EVENT_DELETED);
	assert_int_equal(group_tracker_records(t), 5);
	group_tracker_relist_begin(t);
	for (int i = 0; i < 3; i++)
		apply(t, i, 0, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	apply(t, 4, 0, RUNNING, 60, GROUP_EVENT_ADDED);
	group_tracker_relist_end(t);
	assert_int_equal(group_tracker_records(t), 4);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	/* relist_end without begin is a no-op. */
	group_tracker_relist_end(t);
	group_tracker_free(t);
}

static void restart_releases_new_attempt_only(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	char *cause = NULL;

	(void)state;
	make_jobset(&js, 1, 3, 1, 0);
	t = ready_tracker(&js);
	for (int i = 0; i < 3; i++)
		apply(t, i, 0, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	group_tracker_release_done(t, 0);
	/* Pods of attempt 1 may arrive before the JobSet update that says so. */
	apply(t, 0, 1, RUNNING, 30, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	js.restarts = 1;
	assert_int_equal(group_tracker_set_jobset(t, &js, 45, &cause), 0);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	assert_int_equal(d.attempt, 1);
	assert_int_equal(d.started, 1);
	assert_int_equal(d.tracked, 1);
	assert_true(d.has_starts); /* pod 0 of attempt 1, stamped when the attempt became current */
	assert_int_equal(d.first_start, 45);
	assert_int_equal(group_tracker_records(t), 1); /* attempt 0 records dropped */
	/* Late events of attempt 0 do not count. */
	for (int i = 1; i < 3; i++)
		assert_int_equal(apply(t, i, 0, MAIN_RUNNING, 40 + (uint64_t)i, GROUP_EVENT_MODIFIED),
				 GROUP_APPLY_IGNORED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	apply(t, 1, 1, RUNNING, 50, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_WAIT);
	apply(t, 2, 1, RUNNING, 51, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_int_equal(d.attempt, 1);
	assert_int_equal(d.first_start, 45); /* marks restart with the attempt */
	assert_int_equal(d.last_start, 51);
	group_tracker_release_done(t, 1);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	/* A stale JobSet event (restarts 0) changes nothing. */
	js.restarts = 0;
	assert_int_equal(group_tracker_set_jobset(t, &js, 45, &cause), 0);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	assert_int_equal(d.attempt, 1);
	group_tracker_free(t);
}

static void restart_while_release_pending(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	char *cause = NULL;

	(void)state;
	make_jobset(&js, 1, 1, 1, 0);
	t = ready_tracker(&js);
	apply(t, 0, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	js.restarts = 1;
	assert_int_equal(group_tracker_set_jobset(t, &js, 45, &cause), 0);
	apply(t, 0, 1, RUNNING, 20, GROUP_EVENT_ADDED);
	/* The old write lands late: it does not release attempt 1. */
	group_tracker_release_done(t, 0);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_int_equal(d.attempt, 1);
	group_tracker_free(t);
}

static void crash_recovery_never_releases_twice(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 2, 2, 1, 3);
	/* A new process: LIST shows all pods of attempt 3 started, some past
	 * the barrier; the ConfigMap says 3 was released. */
	t = new_tracker(&js);
	group_tracker_relist_begin(t);
	apply(t, 0, 3, MAIN_RUNNING, 10, GROUP_EVENT_ADDED);
	apply(t, 1, 3, PASSED, 11, GROUP_EVENT_ADDED);
	apply(t, 2, 3, RUNNING, 12, GROUP_EVENT_ADDED);
	apply(t, 3, 3, RUNNING, 13, GROUP_EVENT_ADDED);
	group_tracker_relist_end(t);
	assert_int_equal(decide(t, &d), GROUP_ACTION_UNKNOWN);
	group_tracker_set_released(t, 3);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	assert_int_equal(d.started, 4);
	/* A lower value read later does not undo it. */
	group_tracker_set_released(t, 1);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASED);
	group_tracker_free(t);

	/* Crashed after the pods started but before the write: release now. */
	t = new_tracker(&js);
	group_tracker_relist_begin(t);
	for (int i = 0; i < 4; i++)
		apply(t, i, 3, RUNNING, 10 + (uint64_t)i, GROUP_EVENT_ADDED);
	group_tracker_relist_end(t);
	group_tracker_set_released(t, 2);
	assert_int_equal(decide(t, &d), GROUP_ACTION_RELEASE);
	assert_int_equal(d.attempt, 3);
	group_tracker_free(t);
}

static void jobset_changes(void **state)
{
	struct jobset_model js, changed;
	struct group_tracker *t;
	struct group_decision d;
	char *cause = NULL;

	(void)state;
	make_jobset(&js, 1, 2, 1, 0);
	t = ready_tracker(&js);
	changed = js;
	snprintf(changed.uid, sizeof(changed.uid), "other-uid");
	assert_int_equal(group_tracker_set_jobset(t, &changed, 0, &cause), -1);
	assert_non_null(strstr(cause, "new uid"));
	free(cause);
	changed = js;
	changed.replicated_jobs[1].targeted = 1;
	assert_int_equal(group_tracker_set_jobset(t, &changed, 0, &cause), -1);
	assert_non_null(strstr(cause, "changed"));
	free(cause);
	changed = js;
	changed.replicated_job_count = 1;
	assert_int_equal(group_tracker_set_jobset(t, &changed, 0, &cause), -1);
	free(cause);
	/* Replicas may change: the expected count follows. */
	changed = js;
	changed.replicated_jobs[0].replicas = 3;
	assert_int_equal(group_tracker_set_jobset(t, &changed, 0, &cause), 0);
	decide(t, &d);
	assert_int_equal(d.expected, 6);
	changed.replicated_jobs[0].replicas = 2000000;
	assert_int_equal(group_tracker_set_jobset(t, &changed, 0, &cause), -1);
	assert_non_null(strstr(cause, "expects"));
	free(cause);
	group_tracker_free(t);
	/* A JobSet too large to track is refused at creation, leaving nothing. */
	assert_null(group_tracker_new(&changed, 0, &cause));
	assert_non_null(cause);
	free(cause);
	make_jobset(&js, 1, 100, 1, 0);
	assert_null(group_tracker_new(&js, 50, &cause));
	assert_non_null(cause);
	free(cause);
	group_tracker_free(NULL);
}

static void capacity_is_bounded(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	char *cause = NULL;

	(void)state;
	make_jobset(&js, 1, 2, 1, 0);
	t = group_tracker_new(&js, 3, &cause);
	assert_non_null(t);
	for (int i = 0; i < 3; i++)
		assert_int_equal(apply(t, i, 0, PENDING, 10 + (uint64_t)i, GROUP_EVENT_ADDED),
				 GROUP_APPLY_CHANGED);
	assert_int_equal(apply(t, 3, 0, PENDING, 20, GROUP_EVENT_ADDED), GROUP_APPLY_FULL);
	/* Updates of known pods still work when full. */
	assert_int_equal(apply(t, 0, 0, RUNNING, 30, GROUP_EVENT_MODIFIED), GROUP_APPLY_CHANGED);
	group_tracker_free(t);
}

static int collect(const struct group_started_pod *pod, void *context)
{
	int *seen = context;

	assert_int_equal(pod->ip_family, 4);
	assert_int_equal(pod->ip[0], 10);
	assert_int_equal(strncmp(pod->name, "js-workers-", 11), 0);
	seen[pod->ip[3]]++;
	return 0;
}

static int stop_at_first(const struct group_started_pod *pod, void *context)
{
	(void)pod;
	(void)context;
	return 42;
}

static void foreach_started_pods(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	int seen[8] = { 0 };

	(void)state;
	make_jobset(&js, 1, 4, 1, 0);
	t = ready_tracker(&js);
	apply(t, 1, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	apply(t, 2, 0, WAITING, 11, GROUP_EVENT_ADDED);
	apply(t, 3, 0, MAIN_RUNNING, 12, GROUP_EVENT_ADDED);
	assert_int_equal(group_tracker_foreach_started(t, collect, seen), 0);
	assert_int_equal(seen[1], 1);
	assert_int_equal(seen[2], 0);
	assert_int_equal(seen[3], 1);
	assert_int_equal(group_tracker_foreach_started(t, stop_at_first, NULL), 42);
	group_tracker_free(t);
}

/* Each pod whose barrier timed out is reported once, however often its
 * status is seen again (updates, duplicates, a re-list); a new attempt
 * starts its own count. */
static void timeouts_are_counted_once(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;

	(void)state;
	make_jobset(&js, 1, 4, 1, 0);
	t = ready_tracker(&js);
	apply(t, 1, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	apply(t, 2, 0, RUNNING, 11, GROUP_EVENT_ADDED);
	assert_int_equal(group_tracker_take_timeouts(t), 0);
	apply(t, 1, 0, TIMED_OUT, 20, GROUP_EVENT_MODIFIED);
	apply(t, 1, 0, TIMED_OUT, 20, GROUP_EVENT_MODIFIED); /* duplicate */
	apply(t, 1, 0, TIMED_OUT, 21, GROUP_EVENT_MODIFIED); /* a later update, same state */
	apply(t, 2, 0, FAILED_BARRIER, 22, GROUP_EVENT_MODIFIED); /* failed, not timed out */
	decide(t, &d);
	assert_int_equal(d.timeouts, 1);
	assert_int_equal(d.started, 0);
	assert_int_equal(group_tracker_take_timeouts(t), 1);
	assert_int_equal(group_tracker_take_timeouts(t), 0);
	/* A re-list that still holds the pod does not count it again. */
	group_tracker_relist_begin(t);
	apply(t, 1, 0, TIMED_OUT, 21, GROUP_EVENT_ADDED);
	group_tracker_relist_end(t);
	assert_int_equal(group_tracker_take_timeouts(t), 0);
	/* Its deletion does not undo it either. */
	apply(t, 1, 0, TIMED_OUT, 30, GROUP_EVENT_DELETED);
	decide(t, &d);
	assert_int_equal(d.timeouts, 1);
	/* The next attempt counts its own. */
	make_jobset(&js, 1, 4, 1, 1);
	assert_int_equal(group_tracker_set_jobset(t, &js, 40, &(char *){ NULL }), 0);
	decide(t, &d);
	assert_int_equal(d.timeouts, 0);
	apply(t, 5, 1, TIMED_OUT, 41, GROUP_EVENT_ADDED);
	apply(t, 6, 0, TIMED_OUT, 42, GROUP_EVENT_ADDED); /* the old attempt's: ignored */
	decide(t, &d);
	assert_int_equal(d.timeouts, 1);
	assert_int_equal(group_tracker_take_timeouts(t), 1);
	group_tracker_free(t);
}

/* restartPolicy OnFailure (JobSet's default): kubelet restarts a barrier
 * that timed out in place, so the API shows it waiting (back-off) or
 * running again, with the timeout only in lastState. It is counted once per
 * pod, whichever status the watch shows and however often it times out. */
static void timeouts_restarted_in_place_are_counted_once(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_decision d;
	struct group_pod p;

	(void)state;
	make_jobset(&js, 1, 2, 1, 0);
	t = ready_tracker(&js);
	apply(t, 1, 0, RUNNING, 10, GROUP_EVENT_ADDED);
	assert_int_equal(group_tracker_take_timeouts(t), 0);
	make_pod(&p, 1, 0, WAITING, 20); /* CrashLoopBackOff, lastState exit code 3 */
	p.barrier_timed_out_before = 1;
	group_tracker_apply_pod(t, &p, GROUP_EVENT_MODIFIED, 20);
	assert_int_equal(group_tracker_take_timeouts(t), 1);
	make_pod(&p, 1, 0, RUNNING, 30); /* restarted: at the barrier again */
	p.barrier_timed_out_before = 1;
	group_tracker_apply_pod(t, &p, GROUP_EVENT_MODIFIED, 30);
	decide(t, &d);
	assert_int_equal(d.timeouts, 1);
	assert_int_equal(d.started, 1); /* waiting at the barrier again: started */
	assert_int_equal(group_tracker_take_timeouts(t), 0);
	group_tracker_free(t);
}

static void memory_per_pod_is_small(void **state)
{
	struct jobset_model js;
	struct group_tracker *t;
	struct group_pod p;
	size_t before, after;

	(void)state;
	make_jobset(&js, 50, 100, 1, 0);
	t = ready_tracker(&js);
	before = group_tracker_memory(t);
	for (int i = 0; i < 5000; i++) {
		make_pod(&p, i, 0, RUNNING, 10 + (uint64_t)i);
		/* Realistic lengths: a 36-byte uid and a 30-byte name. */
		snprintf(p.uid, sizeof(p.uid), "%08x-aaaa-4bbb-8ccc-ddddeeeeffff", i);
		snprintf(p.name, sizeof(p.name), "my-jobset-workers-%d-%d-abcde", i / 100, i % 100);
		assert_int_equal(group_tracker_apply_pod(t, &p, GROUP_EVENT_ADDED, 1), GROUP_APPLY_CHANGED);
	}
	after = group_tracker_memory(t);
	assert_int_equal(group_tracker_records(t), 5000);
	if ((after - before) / 5000 > 256)
		fail_msg("%zu bytes per pod", (after - before) / 5000);
	assert_int_equal(decide(t, NULL), GROUP_ACTION_RELEASE);
	group_tracker_free(t);
}

static void names_of_actions(void **state)
{
	(void)state;
	assert_string_equal(group_action_name(GROUP_ACTION_RELEASE), "release");
	assert_string_equal(group_action_name(GROUP_ACTION_ANOMALY), "anomaly");
	assert_string_equal(group_action_name((enum group_action)99), "unknown-action");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(started_semantics),
		cmocka_unit_test(other_pods_do_not_count),
		cmocka_unit_test(release_exactly_once),
		cmocka_unit_test(pods_of_an_earlier_jobset_of_the_same_name_do_not_count),
		cmocka_unit_test(resumed_jobset_waits_for_its_new_pods),
		cmocka_unit_test(pods_without_the_uid_label_match_by_name),
		cmocka_unit_test(release_retried_after_failed_write),
		cmocka_unit_test(no_release_without_full_picture),
		cmocka_unit_test(idle_without_config_or_pods),
		cmocka_unit_test(more_started_than_expected_is_anomaly),
		cmocka_unit_test(stale_and_deleted_events),
		cmocka_unit_test(shuffled_streams_release_once),
		cmocka_unit_test(shuffled_streams_never_release_with_one_missing),
		cmocka_unit_test(shuffled_streams_converge),
		cmocka_unit_test(relist_drops_pod_deleted_in_gap),
		cmocka_unit_test(restart_releases_new_attempt_only),
		cmocka_unit_test(restart_while_release_pending),
		cmocka_unit_test(crash_recovery_never_releases_twice),
		cmocka_unit_test(jobset_changes),
		cmocka_unit_test(capacity_is_bounded),
		cmocka_unit_test(foreach_started_pods),
		cmocka_unit_test(timeouts_are_counted_once),
		cmocka_unit_test(timeouts_restarted_in_place_are_counted_once),
		cmocka_unit_test(memory_per_pod_is_small),
		cmocka_unit_test(names_of_actions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
