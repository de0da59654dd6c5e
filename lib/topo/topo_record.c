/*
 * topo_record: the placement of record (topo_record.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_record.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "utf8.h"

#define INDEX_MAX 2147483647.0

struct record_group {
	char *name;
	uint32_t first_job, job_count;
};

struct record_job {
	uint32_t first_run, run_count;
};

struct record_run {
	uint32_t from, to;
	const char *selector; /* in the record's pool */
};

struct topo_record {
	char *uid;
	uint32_t attempt; /* the JobSet's restart attempt it places */
	int has_attempt; /* 0: a record of before attempts were written */
	struct record_group groups[TOPO_GROUPS_MAX];
	size_t group_count;
	struct record_job *jobs;
	size_t job_count;
	struct record_run *runs;
	size_t run_count;
	/* Every run's selector, one after another in one block; a run whose
	 * selector is the one before's shares it. */
	char *pool;
	size_t pool_used, pool_size;
	size_t bytes; /* what the record holds in memory (topo_record_bytes) */
};

/* ---- encoding ---- */

/* Appends one run to the job's list. */
static int add_run(cJSON *job, uint32_t from, uint32_t to, const char *selector)
{
	cJSON *run = cJSON_CreateArray();

	if (!run || !cJSON_AddItemToArray(job, run)) {
		cJSON_Delete(run);
		return -1;
	}
	return cJSON_AddItemToArray(run, cJSON_CreateNumber(from)) &&
			       cJSON_AddItemToArray(run, cJSON_CreateNumber(to)) &&
			       cJSON_AddItemToArray(run, cJSON_CreateString(selector))
		       ? 0
		       : -1;
}

/* The job list of `name`, made when new; jobs up to job_index added. */
static cJSON *job_of(cJSON *groups, const char *name, uint32_t job_index)
{
	cJSON *jobs = cJSON_GetObjectItemCaseSensitive(groups, name);

	if (!jobs && !(jobs = cJSON_AddArrayToObject(groups, name)))
		return NULL;
	while ((uint32_t)cJSON_GetArraySize(jobs) <= job_index) {
		cJSON *job = cJSON_CreateArray();

		if (!job || !cJSON_AddItemToArray(jobs, job)) {
			cJSON_Delete(job);
			return NULL;
		}
	}
	return cJSON_GetArrayItem(jobs, (int)job_index);
}

/* Adds the runs of `placement` (of `request` on `tree`) to `groups`; with
 * `job_map`, instance i of group g is the JobSet's job job_map[g][i]. */
static int encode_runs(const struct topo_tree *tree, const struct topo_request *request,
		       const struct topo_placement *placement, const uint32_t *const *job_map, cJSON *groups,
		       char **cause)
{
	char selector[TOPO_RECORD_SELECTOR_MAX], run_selector[TOPO_RECORD_SELECTOR_MAX] = "";
	uint32_t run_group = UINT32_MAX, run_job = 0, run_from = 0, run_to = 0;
	cJSON *job = NULL;
	int ok = 1;

	for (size_t i = 0; ok && i <= placement->pod_count; i++) {
		const struct topo_pod *pod = i < placement->pod_count ? &placement->pods[i] : NULL;

		if (pod) {
			if (pod->domain == TOPO_NONE)
				selector[0] = '\0';
			else
				topo_tree_selector(tree, pod->domain, pod->node, selector, sizeof(selector));
			if (strlen(selector) + 1 >= sizeof(selector)) /* cut: it could name another domain */
				return cause_fail(cause, "a domain's nodeSelector is longer than %u bytes",
						  TOPO_RECORD_SELECTOR_MAX - 2);
			if (run_group == pod->group && run_job == pod->job_index &&
			    run_to + 1 == pod->completion && strcmp(selector, run_selector) == 0) {
				run_to = pod->completion;
				continue;
			}
		}
		if (run_group != UINT32_MAX) /* the run before ends here */
			ok = add_run(job, run_from, run_to, run_selector) == 0;
		if (!pod || !ok)
			break;
		if (pod->group >= request->group_count) {
			ok = 0;
			break;
		}
		if (run_group != pod->group || run_job != pod->job_index || !job)
			ok = (job = job_of(groups, request->groups[pod->group].name,
					   job_map ? job_map[pod->group][pod->job_index] : pod->job_index)) !=
			     NULL;
		run_group = pod->group;
		run_job = pod->job_index;
		run_from = run_to = pod->completion;
		memcpy(run_selector, selector, sizeof(selector));
	}
	return ok ? 0 : cause_fail(cause, "no memory for the placement record");
}

/* Prints the record; frees root. */
static int print_record(cJSON *root, char **out, char **cause)
{
	*out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!*out)
		return cause_fail(cause, "no memory for the placement record");
	if (strlen(*out) > TOPO_RECORD_BYTES_MAX) {
		size_t n = strlen(*out);

		free(*out);
		*out = NULL;
		return cause_fail(cause, "the placement record would take %zu bytes, more than %u", n,
				  TOPO_RECORD_BYTES_MAX);
	}
	return 0;
}

static cJSON *record_root(const char *uid, uint32_t attempt, cJSON **groups)
{
	cJSON *root = cJSON_CreateObject();

	if (root && cJSON_AddStringToObject(root, "uid", uid ? uid : "") &&
	    cJSON_AddNumberToObject(root, "attempt", attempt) &&
	    (*groups = cJSON_AddObjectToObject(root, "replicatedJobs")))
		return root;
	cJSON_Delete(root);
	return NULL;
}

int topo_record_encode(const struct topo_tree *tree, const struct topo_request *request,
		       const struct topo_placement *placement, const char *uid, uint32_t attempt, char **out,
		       char **cause)
{
	cJSON *groups = NULL, *root = record_root(uid, attempt, &groups);

	*out = NULL;
	if (!root)
		return cause_fail(cause, "no memory for the placement record");
	if (encode_runs(tree, request, placement, NULL, groups, cause)) {
		cJSON_Delete(root);
		return -1;
	}
	return print_record(root, out, cause);
}

/* ---- parsing ---- */

static int index_of(const cJSON *item, uint32_t *out)
{
	if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble > INDEX_MAX ||
	    item->valuedouble != (double)(uint32_t)item->valuedouble)
		return -1;
	*out = (uint32_t)item->valuedouble;
	return 0;
}

/* "key=value,key=value" with non-empty keys, or "". */
static int selector_ok(const char *s)
{
	if (!*s)
		return 1;
	for (;;) {
		const char *eq = strchr(s, '='), *comma = strchr(s, ',');

		if (!eq || eq == s || (comma && comma < eq))
			return 0;
		if (!comma)
			return 1;
		s = comma + 1;
	}
}

void topo_record_free(struct topo_record *record)
{
	if (!record)
		return;
	free(record->uid);
	for (size_t g = 0; g < record->group_count; g++)
		free(record->groups[g].name);
	free(record->pool);
	free(record->jobs);
	free(record->runs);
	free(record);
}

/* Counts the jobs, the runs and their selectors' bytes so that each array
 * is sized once. */
static int count(const cJSON *groups, size_t *jobs, size_t *runs, size_t *text)
{
	const cJSON *group, *job, *run;

	*jobs = *runs = *text = 0;
	cJSON_ArrayForEach(group, groups)
	{
		if (!cJSON_IsArray(group))
			return -1;
		cJSON_ArrayForEach(job, group)
		{
			if (!cJSON_IsArray(job))
				return -1;
			++*jobs;
			cJSON_ArrayForEach(run, job)
			{
				const cJSON *selector = cJSON_GetArrayItem(run, 2);

				++*runs;
				if (cJSON_IsString(selector))
					*text += strnlen(selector->valuestring, TOPO_RECORD_SELECTOR_MAX) + 1;
			}
		}
	}
	return 0;
}

/* The pool's copy of a checked selector (count() made room for every
 * run's): the last one again when it is the same. */
static const char *intern(struct topo_record *r, const char *selector)
{
	size_t len = strlen(selector);
	char *copy;

	if (r->run_count && strcmp(r->runs[r->run_count - 1].selector, selector) == 0)
		return r->runs[r->run_count - 1].selector;
	copy = r->pool + r->pool_used;
	memcpy(copy, selector, len + 1);
	r->pool_used += len + 1;
	return copy;
}

static int parse_group(struct topo_record *r, const cJSON *group, char **cause)
{
	struct record_group *g = &r->groups[r->group_count];
	const cJSON *job, *run;
	uint32_t job_index = 0;

	for (size_t other = 0; other < r->group_count; other++)
		if (strcmp(r->groups[other].name, group->string) == 0)
			return cause_fail(cause, "the placement record names replicated job %s twice",
					  group->string);
	if (!(g->name = strdup(group->string)))
		return cause_fail(cause, "no memory for the placement record");
	r->bytes += strlen(g->name) + 1;
	r->group_count++;
	g->first_job = (uint32_t)r->job_count;
	cJSON_ArrayForEach(job, group)
	{
		struct record_job *j = &r->jobs[r->job_count++];
		uint32_t next = 0;

		j->first_run = (uint32_t)r->run_count;
		cJSON_ArrayForEach(run, job)
		{
			struct record_run *one = &r->runs[r->run_count];
			const cJSON *from = cJSON_GetArrayItem(run, 0), *to = cJSON_GetArrayItem(run, 1),
				    *selector = cJSON_GetArrayItem(run, 2);

			if (!cJSON_IsArray(run) || cJSON_GetArraySize(run) != 3 ||
			    index_of(from, &one->from) || index_of(to, &one->to) || one->to < one->from ||
			    (j->run_count && one->from < next))
				return cause_fail(
					cause,
					"replicatedJobs.%s[%u]: run %u is not [from, to, selector] with "
					"indexes ascending and not overlapping",
					g->name, job_index, j->run_count);
			if (!cJSON_IsString(selector) ||
			    strlen(selector->valuestring) >= TOPO_RECORD_SELECTOR_MAX ||
			    !selector_ok(selector->valuestring))
				return cause_fail(
					cause,
					"replicatedJobs.%s[%u]: run %u: the selector is not key=value,...",
					g->name, job_index, j->run_count);
			one->selector = intern(r, selector->valuestring);
			r->run_count++;
			j->run_count++;
			next = one->to + 1;
		}
		job_index++;
		g->job_count++;
	}
	return 0;
}

int topo_record_parse(const char *text, size_t len, struct topo_record **out, char **cause)
{
	struct topo_record *r = NULL;
	cJSON *root = NULL;
	const cJSON *uid, *attempt, *groups, *group;
	const char *end = NULL;
	size_t jobs, runs, pool;
	int err = -1;

	*out = NULL;
	if (len > TOPO_RECORD_BYTES_MAX)
		return cause_fail(cause, "the placement record is %zu bytes, more than %u", len,
				  TOPO_RECORD_BYTES_MAX);
	if (utf8_check(text, len, "the placement record", cause))
		goto out;
	root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!root) {
		cause_fail(cause, "the placement record is not JSON (at byte %zu)",
			   end && end >= text ? (size_t)(end - text) : (size_t)0);
		goto out;
	}
	while (end && (size_t)(end - text) < len &&
	       (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r'))
		end++;
	if (!end || (size_t)(end - text) < len) {
		cause_fail(cause, "the placement record is not JSON: content after it at byte %zu",
			   end ? (size_t)(end - text) : (size_t)0);
		goto out;
	}
	uid = cJSON_GetObjectItemCaseSensitive(root, "uid");
	groups = cJSON_GetObjectItemCaseSensitive(root, "replicatedJobs");
	if (!cJSON_IsObject(root) || !cJSON_IsString(uid) || !cJSON_IsObject(groups)) {
		cause_fail(cause, "the placement record lacks uid or replicatedJobs");
		goto out;
	}
	/* Absent in records written before muster wrote it. */
	attempt = cJSON_GetObjectItemCaseSensitive(root, "attempt");
	if (attempt && (!cJSON_IsNumber(attempt) || attempt->valuedouble < 0 ||
			attempt->valuedouble > (double)TOPO_RECORD_ATTEMPT_MAX ||
			attempt->valuedouble != (double)(uint32_t)attempt->valuedouble)) {
		cause_fail(cause, "the placement record's attempt is not a whole number from 0 to %u",
			   TOPO_RECORD_ATTEMPT_MAX);
		goto out;
	}
	if (cJSON_GetArraySize(groups) > TOPO_GROUPS_MAX) {
		cause_fail(cause, "the placement record holds more than %d replicated jobs", TOPO_GROUPS_MAX);
		goto out;
	}
	if (count(groups, &jobs, &runs, &pool)) {
		cause_fail(cause, "the placement record's replicated jobs are not lists of lists of runs");
		goto out;
	}
	if (!(r = calloc(1, sizeof(*r))) || !(r->uid = strdup(uid->valuestring)) ||
	    !(r->jobs = calloc(jobs ? jobs : 1, sizeof(*r->jobs))) ||
	    !(r->runs = calloc(runs ? runs : 1, sizeof(*r->runs))) || !(r->pool = malloc(pool ? pool : 1))) {
		cause_fail(cause, "no memory for the placement record");
		goto out;
	}
	r->pool_size = pool ? pool : 1;
	r->bytes = sizeof(*r) + strlen(r->uid) + 1 + jobs * sizeof(*r->jobs) + runs * sizeof(*r->runs) +
		   r->pool_size;
	r->attempt = attempt ? (uint32_t)attempt->valuedouble : 0;
	r->has_attempt = attempt != NULL;
	cJSON_ArrayForEach(group, groups)
	{
		if (parse_group(r, group, cause))
			goto out;
	}
	err = 0;
	*out = r;
	r = NULL;
out:
	topo_record_free(r);
	cJSON_Delete(root);
	return err;
}

size_t topo_record_bytes(const struct topo_record *record)
{
	return record->bytes;
}

const char *topo_record_uid(const struct topo_record *record)
{
	return record->uid;
}

uint32_t topo_record_attempt(const struct topo_record *record)
{
	return record->attempt;
}

int topo_record_has_attempt(const struct topo_record *record)
{
	return record->has_attempt;
}

/* A Job runs at most as many pods at once as its record places (indexes
 * 0..span-1: min(parallelism, completions), as Kueue counts a PodSet); a
 * pod of a later index (parallelism below completions) starts when one of
 * those ends and takes the slot of its index modulo span. A range that
 * reaches past span is taken as the slots it may use: the one range
 * modulo span when it does not wrap, else every slot. */
static void slots(const struct topo_record *record, const struct record_job *job, uint32_t *from,
		  uint32_t *to)
{
	uint32_t span;

	if (!job->run_count)
		return;
	span = record->runs[job->first_run + job->run_count - 1].to + 1;
	if (*to < span)
		return;
	if (*from >= span && *to - *from < span && *from % span <= *to % span) {
		*from %= span;
		*to %= span;
	} else {
		*from = 0;
		*to = span - 1;
	}
}

int topo_record_find_range(const struct topo_record *record, const char *replicated_job, uint32_t job_index,
			   uint32_t from, uint32_t to, const char **selector)
{
	for (size_t g = 0; g < record->group_count; g++) {
		const struct record_group *group = &record->groups[g];
		const struct record_job *job;
		size_t lo, hi;

		if (strcmp(group->name, replicated_job) != 0)
			continue;
		if (job_index >= group->job_count)
			return 0;
		job = &record->jobs[group->first_job + job_index];
		slots(record, job, &from, &to);
		lo = job->first_run;
		hi = lo + job->run_count;
		while (lo < hi) { /* the first run ending at or after `from` */
			size_t mid = lo + (hi - lo) / 2;

			if (record->runs[mid].to < from)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == job->first_run + job->run_count || record->runs[lo].from > from)
			return 0;
		*selector = record->runs[lo].selector;
		return record->runs[lo].to >= to ? 1 : 2;
	}
	return 0;
}

/* 1 when selectors a and b ("k=v,k=v") name the same keys in the same
 * order. */
static int same_keys(const char *a, const char *b)
{
	for (;;) {
		size_t ka = strcspn(a, "="), kb = strcspn(b, "=");

		if (ka != kb || memcmp(a, b, ka) != 0)
			return 0;
		a += ka;
		b += kb;
		a += strcspn(a, ",");
		b += strcspn(b, ",");
		if (!*a || !*b)
			return !*a && !*b;
		a++;
		b++;
	}
}

int topo_record_job_template(const struct topo_record *record, const char *replicated_job, uint32_t job_index,
			     uint32_t from, uint32_t to, const char **selector)
{
	const struct record_run *widest = NULL;
	uint64_t widest_count = 0, covered = 0;
	const char *first;

	if (from > to || !topo_record_find_range(record, replicated_job, job_index, from, to, &first))
		return 0;
	for (size_t g = 0; g < record->group_count; g++) {
		const struct record_group *group = &record->groups[g];
		const struct record_job *job;

		if (strcmp(group->name, replicated_job) != 0)
			continue;
		job = &record->jobs[group->first_job + job_index];
		slots(record, job, &from, &to);
		for (uint32_t r = 0; r < job->run_count; r++) {
			const struct record_run *run = &record->runs[job->first_run + r];
			uint32_t lo = run->from > from ? run->from : from, hi = run->to < to ? run->to : to;
			uint64_t n;

			if (run->to < from || run->from > to)
				continue;
			if (!run->selector[0] || (widest && !same_keys(run->selector, widest->selector)))
				return 0;
			n = (uint64_t)hi - lo + 1;
			covered += n;
			if (n > widest_count) {
				widest = run;
				widest_count = n;
			}
		}
		break;
	}
	/* Every index in a run: runs ascend without overlap. */
	if (!widest || covered != (uint64_t)to - from + 1)
		return 0;
	*selector = widest->selector;
	return 1;
}

int topo_record_find(const struct topo_record *record, const char *replicated_job, uint32_t job_index,
		     uint32_t completion, const char **selector)
{
	return topo_record_find_range(record, replicated_job, job_index, completion, completion, selector);
}

int topo_record_foreach(const struct topo_record *record,
			int (*fn)(void *arg, const char *replicated_job, uint32_t job_index, uint32_t from,
				  uint32_t to, const char *selector),
			void *arg)
{
	for (size_t g = 0; g < record->group_count; g++) {
		const struct record_group *group = &record->groups[g];

		for (uint32_t j = 0; j < group->job_count; j++) {
			const struct record_job *job = &record->jobs[group->first_job + j];

			for (uint32_t r = 0; r < job->run_count; r++) {
				const struct record_run *run = &record->runs[job->first_run + r];
				int rc = fn(arg, group->name, j, run->from, run->to, run->selector);

				if (rc)
					return rc;
			}
		}
	}
	return 0;
}

/* 1 when job `job` of replicated job `name` is one the move places. */
static int moved(const struct topo_request *request, const uint32_t *const *job_map, const char *name,
		 uint32_t job)
{
	for (size_t g = 0; g < request->group_count; g++)
		if (strcmp(request->groups[g].name, name) == 0)
			for (uint32_t i = 0; i < request->groups[g].replicas; i++)
				if (job_map[g][i] == job)
					return 1;
	return 0;
}

int topo_record_encode_moved(const struct topo_record *old, const struct topo_tree *tree,
			     const struct topo_request *request, const struct topo_placement *placement,
			     const uint32_t *const *job_map, char **out, char **cause)
{
	cJSON *groups = NULL, *root = record_root(old->uid, old->attempt, &groups);
	int ok = root != NULL;

	*out = NULL;
	for (size_t g = 0; ok && g < old->group_count; g++) {
		const struct record_group *group = &old->groups[g];

		for (uint32_t j = 0; ok && j < group->job_count; j++) {
			const struct record_job *job = &old->jobs[group->first_job + j];
			cJSON *list = job_of(groups, group->name, j);

			ok = list != NULL;
			if (!ok || moved(request, job_map, group->name, j))
				continue; /* its runs come from the placement */
			for (uint32_t r = 0; ok && r < job->run_count; r++) {
				const struct record_run *run = &old->runs[job->first_run + r];

				ok = add_run(list, run->from, run->to, run->selector) == 0;
			}
		}
	}
	if (!ok) {
		cJSON_Delete(root);
		return cause_fail(cause, "no memory for the placement record");
	}
	if (!old->has_attempt) /* a record of before attempts: it stays one */
		cJSON_DeleteItemFromObjectCaseSensitive(root, "attempt");
	if (encode_runs(tree, request, placement, job_map, groups, cause)) {
		cJSON_Delete(root);
		return -1;
	}
	return print_record(root, out, cause);
}

int topo_record_selector_matches(const char *selector, const struct topo_node *node)
{
	char key[TOPO_RECORD_SELECTOR_MAX];

	while (*selector) {
		const char *eq = strchr(selector, '='), *comma, *value;
		size_t key_len, value_len;

		if (!eq)
			return 0;
		key_len = (size_t)(eq - selector);
		comma = strchr(eq + 1, ',');
		value_len = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
		if (key_len >= sizeof(key))
			return 0;
		memcpy(key, selector, key_len);
		key[key_len] = '\0';
		if (strcmp(key, "kubernetes.io/hostname") == 0 && !topo_node_label(node, key)) {
			if (strlen(node->name) != value_len || memcmp(node->name, eq + 1, value_len) != 0)
				return 0;
		} else {
			value = topo_node_label(node, key);
			if (!value || strlen(value) != value_len || memcmp(value, eq + 1, value_len) != 0)
				return 0;
		}
		selector = comma ? comma + 1 : eq + 1 + value_len;
	}
	return 1;
}
