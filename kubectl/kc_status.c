/*
 * kc_status: the summary behind `kubectl muster status`. See kc_status.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_status.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "jobset_model.h"
#include "kjson.h"
#include "muster_api.h"
#include "record_owner.h"
#include "topo_record.h"

/* Most pods and Events read from one LIST: beyond, the counts stop (the
 * JobSet is larger than any the controller tracks). */
#define ITEMS_MAX 1000000u

/* What the summary needs of a pod; not the controller's decoder. */
enum barrier_state {
	BARRIER_NONE,
	BARRIER_WAITING,
	BARRIER_RUNNING,
	BARRIER_PASSED,
	BARRIER_FAILED,
	BARRIER_TIMED_OUT
};

struct status_pod {
	const char *replicated_job, *jobset_uid;
	int has_epoch;
	uint32_t attempt, generation;
	int bound, deleting, failed, running_or_done, timed_out_before;
	enum barrier_state barrier;
};

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static const char *text_of(const cJSON *item)
{
	const char *s = NULL;

	return kjson_string(item, KJSON_OBJECT_MAX, &s) == KJSON_OK ? s : NULL;
}

static const char *label_of(const cJSON *object, const char *key)
{
	return text_of(kjson_path(object, "metadata", "labels", key));
}

static const char *annotation_of(const cJSON *object, const char *key)
{
	return text_of(kjson_path(object, "metadata", "annotations", key));
}

/* A numeric label: 1 and *value, 0 when absent, -1 when not a number. */
static int number_label(const cJSON *object, const char *key, uint32_t *value)
{
	const char *text = label_of(object, key);
	uint64_t v;

	if (!text)
		return 0;
	if (model_parse_decimal(text, 10, KJSON_INT32_MAX, &v))
		return -1;
	*value = (uint32_t)v;
	return 1;
}

static long long exit_code_of(const cJSON *terminated)
{
	long long code = -1;

	if (kjson_count(kjson_member(terminated, "exitCode"), -1, 255, &code) != KJSON_OK)
		return -1;
	return code;
}

/* The barrier container's state from status.initContainerStatuses. */
static void read_barrier(const cJSON *pod, struct status_pod *p)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, kjson_path(pod, "status", "initContainerStatuses", NULL))
	{
		const char *name = text_of(kjson_member(item, "name"));
		const cJSON *state = kjson_member(item, "state"), *terminated;

		if (!name || strcmp(name, MUSTER_BARRIER_CONTAINER) != 0)
			continue;
		p->timed_out_before = exit_code_of(kjson_path(item, "lastState", "terminated", NULL)) ==
				      MUSTER_BARRIER_EXIT_TIMEOUT;
		if (kjson_member(state, "running"))
			p->barrier = BARRIER_RUNNING;
		else if ((terminated = kjson_member(state, "terminated")) != NULL) {
			long long code = exit_code_of(terminated);

			p->barrier = code == MUSTER_BARRIER_EXIT_RELEASED  ? BARRIER_PASSED
				     : code == MUSTER_BARRIER_EXIT_TIMEOUT ? BARRIER_TIMED_OUT
									   : BARRIER_FAILED;
		} else if (kjson_member(state, "waiting"))
			p->barrier = BARRIER_WAITING;
		return;
	}
}

static void read_pod(const cJSON *pod, struct status_pod *p)
{
	const char *phase = text_of(kjson_path(pod, "status", "phase", NULL));
	const char *node = text_of(kjson_path(pod, "spec", "nodeName", NULL));
	int attempt, generation;

	memset(p, 0, sizeof(*p));
	p->replicated_job = label_of(pod, JOBSET_LABEL_REPLICATED_JOB);
	p->jobset_uid = label_of(pod, JOBSET_LABEL_UID);
	attempt = number_label(pod, JOBSET_LABEL_RESTART_ATTEMPT, &p->attempt);
	generation = number_label(pod, MUSTER_LABEL_GANG_GENERATION, &p->generation);
	p->has_epoch = attempt == 1 && generation >= 0;
	p->bound = node && *node;
	p->deleting = kjson_path(pod, "metadata", "deletionTimestamp", NULL) != NULL;
	p->failed = phase && strcmp(phase, "Failed") == 0;
	p->running_or_done = phase && (strcmp(phase, "Running") == 0 || strcmp(phase, "Succeeded") == 0);
	read_barrier(pod, p);
}

/* The controller's STARTED (controller/group_core.md), for a pod of the
 * current epoch: bound, not lost, and its barrier running or passed or the
 * pod running or done. */
static int pod_started(const struct status_pod *p)
{
	if (!p->bound || p->deleting || p->failed || p->barrier == BARRIER_FAILED ||
	    p->barrier == BARRIER_TIMED_OUT)
		return 0;
	return p->barrier == BARRIER_RUNNING || p->barrier == BARRIER_PASSED || p->running_or_done;
}

static int targeted(const struct jobset_model *m, const char *replicated_job)
{
	for (size_t i = 0; replicated_job && i < m->replicated_job_count; i++)
		if (strcmp(m->replicated_jobs[i].name, replicated_job) == 0)
			return m->replicated_jobs[i].targeted;
	return 0;
}

/* The expected count: controller/group_expect.h's rule, saturating. */
static uint64_t expected_pods(const struct jobset_model *m)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < m->replicated_job_count; i++) {
		const struct jobset_rjob *j = &m->replicated_jobs[i];
		uint64_t term = (uint64_t)j->replicas *
				(j->parallelism < j->completions ? j->parallelism : j->completions);

		if (!j->targeted)
			continue;
		if (term > UINT64_MAX - sum)
			return UINT64_MAX;
		sum += term;
	}
	return sum;
}

static void count_pods(const struct jobset_model *m, const cJSON *pods, struct kc_gang *g)
{
	const cJSON *pod;
	size_t seen = 0;

	cJSON_ArrayForEach(pod, kjson_member(pods, "items"))
	{
		struct status_pod p;

		if (++seen > ITEMS_MAX)
			break;
		read_pod(pod, &p);
		if (!p.has_epoch || p.attempt != m->restarts || p.generation != m->generation ||
		    !targeted(m, p.replicated_job) || (p.jobset_uid && strcmp(p.jobset_uid, m->uid) != 0))
			continue;
		if (p.barrier == BARRIER_TIMED_OUT || p.timed_out_before)
			g->timed_out++;
		if (p.deleting)
			continue;
		g->created++;
		g->bound += p.bound;
		g->started += pod_started(&p);
		g->at_barrier += p.bound && p.barrier == BARRIER_RUNNING;
		g->passed += p.barrier == BARRIER_PASSED;
	}
}

/* The latest write of an object: the newest managedFields time, else its
 * creationTimestamp (RFC 3339 times order as text). */
static void last_write(const cJSON *object, char *out, size_t size)
{
	const char *best = text_of(kjson_path(object, "metadata", "creationTimestamp", NULL));
	const cJSON *field;

	cJSON_ArrayForEach(field, kjson_path(object, "metadata", "managedFields", NULL))
	{
		const char *t = text_of(kjson_member(field, "time"));

		if (t && (!best || strcmp(t, best) > 0))
			best = t;
	}
	copy(out, size, best);
}

static void read_release(const struct jobset_model *m, const cJSON *cm, struct kc_gang *g)
{
	const cJSON *data = kjson_member(cm, "data");
	uint64_t started, generation = 0;
	const char *s = text_of(kjson_member(data, MUSTER_CONFIGMAP_KEY_STARTED));
	const char *gen = text_of(kjson_member(data, MUSTER_CONFIGMAP_KEY_GENERATION));

	if (!cm)
		return;
	g->record_found = 1;
	g->record_ours = record_owner_of(cm, m->name, m->uid, 1) == RECORD_OWNER_OURS;
	last_write(cm, g->record_time, sizeof(g->record_time));
	if (!g->record_ours || !s || model_parse_decimal(s, 10, KJSON_INT32_MAX, &started) ||
	    (gen && model_parse_decimal(gen, 10, KJSON_INT32_MAX, &generation)))
		return;
	g->record_has_release = 1;
	g->released_attempt = (uint32_t)started;
	g->released_generation = (uint32_t)generation;
}

/* The epoch order of the controller: generation first, then attempt. */
static int releases_current(const struct kc_gang *g, const struct jobset_model *m)
{
	uint64_t released = (uint64_t)g->released_generation << 32 | g->released_attempt;
	uint64_t current = (uint64_t)m->generation << 32 | m->restarts;

	return g->record_has_release && released >= current;
}

static void gang_state(const struct jobset_model *m, struct kc_gang *g)
{
	if (!m->has_config || g->expected == 0) {
		g->state = KC_GANG_NONE;
		snprintf(g->why, sizeof(g->why),
			 !m->has_config
				 ? "the JobSet asks for no gang start (no spec.groupSchedulingConfig, no "
				   "annotation " MUSTER_ANNOTATION_GROUP_TIMEOUT ")"
				 : "no pod is expected (no targeted replicated job runs a pod)");
	} else if (releases_current(g, m)) {
		g->state = KC_GANG_RELEASED;
		g->why[0] = '\0';
	} else if (m->suspended) {
		g->state = KC_GANG_SUSPENDED;
		snprintf(g->why, sizeof(g->why), "the JobSet is suspended: its pods are not created yet");
	} else if (g->timed_out) {
		g->state = KC_GANG_TIMED_OUT;
		snprintf(g->why, sizeof(g->why),
			 "%llu pod(s) timed out at the barrier (after %us) with %llu of %llu pods started",
			 (unsigned long long)g->timed_out, g->has_timeout ? g->timeout_seconds : 0,
			 (unsigned long long)g->started, (unsigned long long)g->expected);
	} else if (g->started > g->expected) {
		g->state = KC_GANG_ANOMALY;
		snprintf(g->why, sizeof(g->why),
			 "%llu pods started, more than the %llu expected: the controller holds the release",
			 (unsigned long long)g->started, (unsigned long long)g->expected);
	} else if (g->started < g->expected) {
		g->state = KC_GANG_WAITING;
		snprintf(g->why, sizeof(g->why), "%llu of %llu pods started (%llu created, %llu bound)",
			 (unsigned long long)g->started, (unsigned long long)g->expected,
			 (unsigned long long)g->created, (unsigned long long)g->bound);
	} else {
		g->state = KC_GANG_RELEASING;
		snprintf(g->why, sizeof(g->why),
			 "every expected pod started; the release of record is not written yet");
	}
}

static int collect_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to,
		       const char *selector)
{
	struct kc_placement *p = arg;
	struct kc_job_domain *d = NULL;

	for (size_t i = p->job_count; i-- > 0;)
		if (p->jobs[i].job_index == job && strcmp(p->jobs[i].replicated_job, rj) == 0) {
			d = &p->jobs[i];
			break;
		}
	if (!d) {
		if (p->job_count == KC_STATUS_JOBS_MAX) {
			p->jobs_left_out++;
			return 0;
		}
		d = &p->jobs[p->job_count++];
		copy(d->replicated_job, sizeof(d->replicated_job), rj);
		d->job_index = job;
		copy(d->selector, sizeof(d->selector), selector);
		d->domains = 1;
	} else if (strcmp(d->selector, selector) != 0) {
		d->domains++;
	}
	d->pods += to - from + 1;
	return 0;
}

static void read_placement(const struct jobset_model *m, const cJSON *jobset, const cJSON *cm,
			   struct kc_placement *p)
{
	const char *text = text_of(kjson_path(cm, "data", MUSTER_PLACEMENT_KEY, NULL));
	struct topo_record *record = NULL;

	copy(p->state, sizeof(p->state), annotation_of(jobset, MUSTER_ANNOTATION_PLACEMENT));
	copy(p->reason, sizeof(p->reason), annotation_of(jobset, MUSTER_ANNOTATION_PLACEMENT_REASON));
	if (!cm)
		return;
	p->record_found = 1;
	p->record_ours = record_owner_of(cm, m->name, m->uid, 1) == RECORD_OWNER_OURS;
	if (!p->record_ours || !text || topo_record_parse(text, strlen(text), &record, NULL) != 0)
		return;
	p->record_readable = 1;
	p->record_attempt = topo_record_attempt(record);
	topo_record_foreach(record, collect_run, p);
	topo_record_free(record);
}

static const char *event_time(const cJSON *e)
{
	const char *t = text_of(kjson_member(e, "lastTimestamp"));

	if (!t)
		t = text_of(kjson_member(e, "eventTime"));
	if (!t)
		t = text_of(kjson_path(e, "metadata", "creationTimestamp", NULL));
	return t ? t : "";
}

static int by_time(const void *a, const void *b)
{
	return strcmp(((const struct kc_event *)a)->time, ((const struct kc_event *)b)->time);
}

/* The last KC_STATUS_EVENTS_MAX Events by time, oldest first. */
static void read_events(const cJSON *events, struct kc_status *s)
{
	const cJSON *e;
	size_t seen = 0;

	cJSON_ArrayForEach(e, kjson_member(events, "items"))
	{
		struct kc_event one;
		long long count = 1;
		size_t at = s->event_count;

		if (++seen > ITEMS_MAX)
			break;
		copy(one.time, sizeof(one.time), event_time(e));
		copy(one.type, sizeof(one.type), text_of(kjson_member(e, "type")));
		copy(one.reason, sizeof(one.reason), text_of(kjson_member(e, "reason")));
		copy(one.message, sizeof(one.message), text_of(kjson_member(e, "message")));
		kjson_count(kjson_member(e, "count"), 1, KJSON_INT32_MAX, &count);
		one.count = (uint32_t)count;
		if (at == KC_STATUS_EVENTS_MAX) {
			/* Full: replace the oldest when this one is newer. */
			size_t oldest = 0;

			for (size_t i = 1; i < at; i++)
				if (strcmp(s->events[i].time, s->events[oldest].time) < 0)
					oldest = i;
			if (strcmp(one.time, s->events[oldest].time) <= 0)
				continue;
			at = oldest;
		} else {
			s->event_count++;
		}
		s->events[at] = one;
	}
	qsort(s->events, s->event_count, sizeof(s->events[0]), by_time);
}

int kc_status_build(const cJSON *jobset, const cJSON *pods, const cJSON *release,
		    const cJSON *placement_record, const cJSON *events, struct kc_status *out, char **cause)
{
	struct jobset_model *m = malloc(sizeof(*m));

	memset(out, 0, sizeof(*out));
	if (!m)
		return cause_fail(cause, "out of memory");
	if (jobset_model_decode(jobset, m, cause)) {
		free(m);
		return -1;
	}
	copy(out->namespace, sizeof(out->namespace), m->namespace);
	copy(out->name, sizeof(out->name), m->name);
	copy(out->uid, sizeof(out->uid), m->uid);
	out->attempt = m->restarts;
	out->generation = m->generation;
	out->suspended = m->suspended;
	out->gang.expected = expected_pods(m);
	out->gang.has_timeout = m->has_timeout;
	out->gang.timeout_seconds = m->timeout_seconds;
	count_pods(m, pods, &out->gang);
	read_release(m, release, &out->gang);
	gang_state(m, &out->gang);
	read_placement(m, jobset, placement_record, &out->placement);
	read_events(events, out);
	free(m);
	return 0;
}

static const char *const gang_state_names[] = {
	[KC_GANG_NONE] = "none",	 [KC_GANG_SUSPENDED] = "suspended",
	[KC_GANG_WAITING] = "waiting",	 [KC_GANG_TIMED_OUT] = "timed-out",
	[KC_GANG_ANOMALY] = "anomaly",	 [KC_GANG_RELEASING] = "releasing",
	[KC_GANG_RELEASED] = "released",
};

const char *kc_gang_state_name(enum kc_gang_state state)
{
	return (size_t)state < sizeof(gang_state_names) / sizeof(gang_state_names[0])
		       ? gang_state_names[state]
		       : "unknown";
}

static void print_release_record(FILE *out, const struct kc_status *s)
{
	const struct kc_gang *g = &s->gang;

	fprintf(out, "  release of record: ConfigMap %s/%s%s: ", s->namespace, s->name,
		MUSTER_CONFIGMAP_SUFFIX);
	if (!g->record_found)
		fprintf(out, "none yet\n");
	else if (!g->record_ours)
		fprintf(out, "not this JobSet's (another owner): the controller does not touch it\n");
	else if (!g->record_has_release)
		fprintf(out, "holds no release\n");
	else
		fprintf(out, "released attempt %u of gang generation %u%s%s\n", g->released_attempt,
			g->released_generation, g->record_time[0] ? " at " : "", g->record_time);
}

static void print_placement(FILE *out, const struct kc_status *s)
{
	const struct kc_placement *p = &s->placement;

	if (!p->state[0])
		fprintf(out,
			"placement: none (not gated by muster: no topology request, or Kueue's or Volcano's)\n");
	else
		fprintf(out, "placement: %s%s%s\n", p->state, p->reason[0] ? ": " : "", p->reason);
	fprintf(out, "  placement of record: ConfigMap %s/%s%s: ", s->namespace, s->name,
		MUSTER_PLACEMENT_SUFFIX);
	if (!p->record_found)
		fprintf(out, "none\n");
	else if (!p->record_ours)
		fprintf(out, "not this JobSet's (another owner)\n");
	else if (!p->record_readable)
		fprintf(out, "holds no readable record\n");
	else
		fprintf(out, "attempt %u%s\n", p->record_attempt,
			p->record_attempt != s->attempt ? " (not the current attempt)" : "");
	for (size_t i = 0; i < p->job_count; i++) {
		const struct kc_job_domain *d = &p->jobs[i];

		fprintf(out, "  %s-%u: %s (%u pods", d->replicated_job, d->job_index,
			d->selector[0] ? d->selector : "(anywhere)", d->pods);
		if (d->domains > 1)
			fprintf(out, ", in %u domains; the first shown", d->domains);
		fprintf(out, ")\n");
	}
	if (p->jobs_left_out)
		fprintf(out, "  ... and %zu more Jobs\n", p->jobs_left_out);
}

void kc_status_print(FILE *out, const struct kc_status *s)
{
	const struct kc_gang *g = &s->gang;

	fprintf(out, "JobSet %s/%s (uid %s): attempt %u, gang generation %u%s\n", s->namespace, s->name,
		s->uid, s->attempt, s->generation, s->suspended ? ", suspended" : "");
	fprintf(out, "gang start: %s%s%s\n", kc_gang_state_name(g->state), g->why[0] ? ": " : "", g->why);
	if (g->state != KC_GANG_NONE) {
		fprintf(out,
			"  expected %llu, created %llu, bound %llu, started %llu, at the barrier %llu, past it %llu, "
			"timed out %llu",
			(unsigned long long)g->expected, (unsigned long long)g->created,
			(unsigned long long)g->bound, (unsigned long long)g->started,
			(unsigned long long)g->at_barrier, (unsigned long long)g->passed,
			(unsigned long long)g->timed_out);
		if (g->has_timeout)
			fprintf(out, "; timeout %us", g->timeout_seconds);
		fprintf(out, "\n");
		print_release_record(out, s);
	}
	print_placement(out, s);
	fprintf(out, "events (the last %d, oldest first):\n", KC_STATUS_EVENTS_MAX);
	if (!s->event_count)
		fprintf(out, "  none\n");
	for (size_t i = 0; i < s->event_count; i++) {
		const struct kc_event *e = &s->events[i];

		fprintf(out, "  %s %s %s", e->time[0] ? e->time : "-", e->type[0] ? e->type : "-", e->reason);
		if (e->count > 1)
			fprintf(out, " (x%u)", e->count);
		fprintf(out, ": %s\n", e->message);
	}
}

static int add_number(cJSON *o, const char *key, double value)
{
	return cJSON_AddNumberToObject(o, key, value) != NULL;
}

static int add_text(cJSON *o, const char *key, const char *value)
{
	return (value && *value ? cJSON_AddStringToObject(o, key, value) : cJSON_AddNullToObject(o, key)) !=
	       NULL;
}

static int gang_json(cJSON *root, const struct kc_status *s)
{
	const struct kc_gang *g = &s->gang;
	cJSON *o = cJSON_AddObjectToObject(root, "gang"), *r;
	char name[200];
	int ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "state", kc_gang_state_name(g->state));
	ok = ok && add_text(o, "why", g->why);
	ok = ok && add_number(o, "expected", (double)g->expected) &&
	     add_number(o, "created", (double)g->created);
	ok = ok && add_number(o, "bound", (double)g->bound) && add_number(o, "started", (double)g->started);
	ok = ok && add_number(o, "atBarrier", (double)g->at_barrier) &&
	     add_number(o, "passed", (double)g->passed);
	ok = ok && add_number(o, "timedOut", (double)g->timed_out);
	ok = ok && (g->has_timeout ? add_number(o, "timeoutSeconds", g->timeout_seconds)
				   : cJSON_AddNullToObject(o, "timeoutSeconds") != NULL);
	ok = ok && cJSON_AddBoolToObject(o, "released", g->state == KC_GANG_RELEASED);
	ok = ok && (r = cJSON_AddObjectToObject(o, "record")) != NULL;
	snprintf(name, sizeof(name), "%s%s", s->name, MUSTER_CONFIGMAP_SUFFIX);
	ok = ok && cJSON_AddStringToObject(r, "configMap", name);
	ok = ok && cJSON_AddBoolToObject(r, "found", g->record_found) &&
	     cJSON_AddBoolToObject(r, "ours", g->record_ours);
	if (ok && g->record_has_release) {
		ok = add_number(r, "releasedAttempt", g->released_attempt) &&
		     add_number(r, "releasedGeneration", g->released_generation);
	}
	ok = ok && add_text(r, "time", g->record_time);
	return ok;
}

static int placement_json(cJSON *root, const struct kc_status *s)
{
	const struct kc_placement *p = &s->placement;
	cJSON *o = cJSON_AddObjectToObject(root, "placement"), *r, *jobs;
	char name[200];
	int ok = o != NULL;

	ok = ok && add_text(o, "state", p->state) && add_text(o, "reason", p->reason);
	ok = ok && (r = cJSON_AddObjectToObject(o, "record")) != NULL;
	snprintf(name, sizeof(name), "%s%s", s->name, MUSTER_PLACEMENT_SUFFIX);
	ok = ok && cJSON_AddStringToObject(r, "configMap", name);
	ok = ok && cJSON_AddBoolToObject(r, "found", p->record_found) &&
	     cJSON_AddBoolToObject(r, "ours", p->record_ours);
	ok = ok && cJSON_AddBoolToObject(r, "readable", p->record_readable);
	if (ok && p->record_readable)
		ok = add_number(r, "attempt", p->record_attempt);
	ok = ok && (jobs = cJSON_AddArrayToObject(o, "jobs")) != NULL;
	for (size_t i = 0; ok && i < p->job_count; i++) {
		cJSON *one = cJSON_CreateObject();

		ok = one && cJSON_AddItemToArray(jobs, one);
		ok = ok && cJSON_AddStringToObject(one, "replicatedJob", p->jobs[i].replicated_job);
		ok = ok && add_number(one, "jobIndex", p->jobs[i].job_index) &&
		     add_number(one, "pods", p->jobs[i].pods);
		ok = ok && add_number(one, "domains", p->jobs[i].domains);
		ok = ok && cJSON_AddStringToObject(one, "nodeSelector", p->jobs[i].selector);
	}
	ok = ok && add_number(o, "jobsLeftOut", (double)p->jobs_left_out);
	return ok;
}

cJSON *kc_status_json(const struct kc_status *s)
{
	cJSON *root = cJSON_CreateObject(), *js, *events;
	int ok = root != NULL;

	ok = ok && (js = cJSON_AddObjectToObject(root, "jobset")) != NULL;
	ok = ok && cJSON_AddStringToObject(js, "namespace", s->namespace) &&
	     cJSON_AddStringToObject(js, "name", s->name) && cJSON_AddStringToObject(js, "uid", s->uid);
	ok = ok && add_number(js, "attempt", s->attempt) && add_number(js, "generation", s->generation);
	ok = ok && cJSON_AddBoolToObject(js, "suspended", s->suspended);
	ok = ok && gang_json(root, s) && placement_json(root, s);
	ok = ok && (events = cJSON_AddArrayToObject(root, "events")) != NULL;
	for (size_t i = 0; ok && i < s->event_count; i++) {
		const struct kc_event *e = &s->events[i];
		cJSON *one = cJSON_CreateObject();

		ok = one && cJSON_AddItemToArray(events, one);
		ok = ok && add_text(one, "time", e->time) && add_text(one, "type", e->type);
		ok = ok && add_text(one, "reason", e->reason) && add_text(one, "message", e->message);
		ok = ok && add_number(one, "count", e->count);
	}
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}
