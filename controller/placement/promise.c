/*
 * placement/promise.c: the room placed JobSets hold. Each placed JobSet's pods
 * not bound yet take their room in the pass's working copy of the cluster
 * (topo_promise.h); which Jobs have started; and which placed JobSets are to
 * be placed again (room lost for --placement-replace-after, a domain without
 * nodes, a restart attempt, a record gone). Under the lock, no API request.
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "jobset_pod.h"
#include "mlog.h"
#include "muster_api.h"

/* A record missing under a placed JobSet is believed after this long (an
 * informer event older than this controller's own suspend may still show
 * the JobSet placed). */
#define MISSING_RECORD_GRACE_S 5
/* 1 when the pod is bound now (p->current's). */
static int bound_now(const struct pass *p, const char *rj, uint32_t job, uint32_t completion)
{
	char key[JOBSET_POD_KEY_MAX + 1];

	return jobset_pod_key(p->current->uid, p->current->rec.record_attempt, rj, job, completion, key,
			      sizeof(key)) == 0 &&
	       name_table_find(&p->loop->bound, p->current->namespace, key) != NULL;
}

/* The JobSet-wide number of job `job` of replicated job rj, or -1. */
static long job_number(const struct pjobset *j, const char *rj, uint32_t job)
{
	long base = 0;

	for (size_t g = 0; g < j->request.group_count; g++) {
		if (strcmp(j->request.groups[g].name, rj) == 0)
			return job < j->request.groups[g].replicas ? base + (long)job : -1;
		base += j->request.groups[g].replicas;
	}
	return -1;
}

/* Whether each Job of the current attempt has had every pod bound at
 * once (started): its pods pending later (replacements) are its failure
 * policy's, never a reason to move it or the JobSet. Kept per attempt. */
static void note_started(struct pass *p, struct pjobset *j)
{
	size_t jobs = 0, n = 0;

	for (size_t g = 0; g < j->request.group_count; g++)
		jobs += j->request.groups[g].replicas;
	if (!j->promise.started || j->promise.started_count != jobs ||
	    j->promise.started_attempt != j->rec.record_attempt) {
		uint8_t *fresh = calloc(jobs ? jobs : 1, 1);

		if (!fresh)
			return;
		free(j->promise.started);
		j->promise.started = fresh;
		j->promise.started_count = jobs;
		j->promise.started_attempt = j->rec.record_attempt;
	}
	p->current = j;
	for (size_t g = 0; g < j->request.group_count; g++) {
		const struct topo_jobset_group *group = &j->request.groups[g];

		for (unsigned job = 0; job < group->replicas; job++, n++) {
			unsigned c = 0;

			if (j->promise.started[n])
				continue;
			while (c < group->pods && bound_now(p, group->name, job, c))
				c++;
			j->promise.started[n] = c == group->pods;
		}
	}
}

/* 1 when some node of the pass's cluster is in the pod's recorded domain. */
static int domain_has_nodes(const struct pass *p, const char *rj, uint32_t job, uint32_t completion)
{
	const char *selector = NULL;

	if (!p->work_cluster || !p->current->rec.record ||
	    !topo_record_find(p->current->rec.record, rj, job, completion, &selector) || !*selector)
		return 1;
	for (size_t n = 0; n < p->work_cluster->node_count; n++)
		if (topo_record_selector_matches(selector, &p->work_cluster->nodes[n]))
			return 1;
	return 0;
}

int placement_pod_bound(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	struct pass *p = arg;
	const struct pjobset *j = p->current;
	long n;

	/* A moved Job's old pods, bound where it was, are being deleted: its
	 * new runs keep their room promised meanwhile; its new pods, once
	 * bound, are bound. */
	for (size_t i = 0; i < j->moving.moved_count; i++)
		if (j->moving.moved[i].job == job && strcmp(j->moving.moved[i].replicated_job, rj) == 0 &&
		    j->moving.moved[i].until > now_s()) {
			char key[JOBSET_POD_KEY_MAX + 1];
			const struct bound *b;

			if (jobset_pod_key(j->uid, j->rec.record_attempt, rj, job, completion, key,
					   sizeof(key)) ||
			    !(b = (const struct bound *)name_table_find(&p->loop->bound, j->namespace, key)))
				return 0;
			for (size_t k = 0; k < j->moving.moved[i].old_count; k++)
				if (strcmp(j->moving.moved[i].old_pods[k], b->pod) == 0)
					return 0;
			return 1;
		}
	if (bound_now(p, rj, job, completion))
		return 1;
	/* A started Job's pod pending again is its failure policy's: it
	 * promises no room and is never stranded; unless its domain has no
	 * node left at all (it could never run, and never fail either). */
	if (j->promise.started && j->promise.started_attempt == j->rec.record_attempt &&
	    (n = job_number(j, rj, job)) >= 0 && (size_t)n < j->promise.started_count &&
	    j->promise.started[n])
		return domain_has_nodes(p, rj, job, completion);
	return 0;
}

/* 1 when a pod the JobSet's request implies is not bound (p->current is j). */
static int some_pod_unbound(struct pass *p, const struct pjobset *j)
{
	for (size_t g = 0; g < j->request.group_count; g++) {
		const struct topo_jobset_group *group = &j->request.groups[g];

		for (unsigned job = 0; job < group->replicas; job++)
			for (unsigned c = 0; c < group->pods; c++)
				if (!placement_pod_bound(p, group->name, job, c))
					return 1;
	}
	return 0;
}

static void add_relocation(struct pass *p, const struct pjobset *j, enum relocation_kind kind,
			   const struct topo_promise *promise, double for_s)
{
	struct relocation *r;

	for (size_t i = 0; i < p->relocation_count; i++)
		if (p->relocations[i].jobset == j)
			return; /* one relocation a JobSet a pass */
	if (p->relocation_count == p->relocation_cap) {
		size_t cap = p->relocation_cap ? p->relocation_cap * 2 : 4;
		struct relocation *grown = realloc(p->relocations, cap * sizeof(*grown));

		if (!grown)
			return;
		p->relocations = grown;
		p->relocation_cap = cap;
	}
	r = &p->relocations[p->relocation_count++];
	memset(r, 0, sizeof(*r));
	snprintf(r->namespace, sizeof(r->namespace), "%s", j->namespace);
	snprintf(r->name, sizeof(r->name), "%s", j->name);
	snprintf(r->uid, sizeof(r->uid), "%s", j->uid);
	r->kind = kind;
	r->attempt = j->rec.record_attempt;
	r->restarts = j->restarts;
	if (promise)
		r->promise = *promise;
	r->for_s = for_s;
	r->jobset = j;
}

/* A placed, running JobSet without the record of its current attempt is
 * placed afresh: at once when it restarted (the record is of an earlier
 * attempt); when the record is gone, only while pods still need it to be
 * pinned (a JobSet whose pods all run is left alone). Neither needs the
 * topology nor the cluster, so a topology problem does not hold them up. */
void placement_check_record(void *arg, struct name_node *node)
{
	struct pass *p = arg;
	struct pjobset *j = (struct pjobset *)node;

	if (strcmp(j->state, MUSTER_PLACEMENT_PLACED) != 0 || j->suspended || j->finished || !j->decoded ||
	    !j->rec.record_checked || j->relocation.relocating)
		return;
	p->current = j;
	if (j->rec.record && j->rec.record_attempt != j->restarts)
		add_relocation(p, j, RELOCATE_RESTART, NULL, 0);
	else if (j->moving.move_stuck)
		add_relocation(p, j, RELOCATE_STUCK, NULL, 0);
	else if (!j->rec.record && now_s() - j->relocation.relocated_at > MISSING_RECORD_GRACE_S &&
		 some_pod_unbound(p, j))
		add_relocation(p, j, RELOCATE_MISSING, NULL, 0);
}

/* A placed JobSet's pods not bound yet take their room (topo_promise.h);
 * when some have none left in their domain for long enough, or their domain
 * has no node at all, the JobSet is to be placed again. */
void placement_reserve_jobset(void *arg, struct name_node *node)
{
	struct pass *p = arg;
	struct pjobset *j = (struct pjobset *)node;
	struct topo_promise promise;
	double now = now_s();
	int live;

	live = strcmp(j->state, MUSTER_PLACEMENT_PLACED) == 0 && !j->suspended;
	/* No record of its current attempt: it promises nothing (placement_check_record). */
	if (j->finished || !j->decoded || (j->suspended && strcmp(j->state, MUSTER_PLACEMENT_PLACED) == 0) ||
	    !j->rec.record || j->rec.record_attempt != j->restarts || j->relocation.relocating)
		return;
	p->current = j;
	if (p->skip) {
		if (j != p->skip)
			topo_promise_take(p->work_cluster, p->work_nodes, &j->request, j->rec.record,
					  placement_pod_bound, p, &promise);
		return;
	}
	if (live)
		note_started(p, j);
	topo_promise_take(p->work_cluster, p->work_nodes, &j->request, j->rec.record, placement_pod_bound, p,
			  &promise);
	p->reserved_pods += promise.reserved;
	if (live && promise.reserved)
		p->promising++;
	if (!live || !promise.stranded) {
		j->promise.stranded_since = 0;
		j->promise.no_room_noted = 0;
		return;
	}
	p->stranded++;
	if (!j->promise.stranded_since) {
		j->promise.stranded_since = now;
		mlog(MLOG_WARN, "placement-stranded",
		     "jobset=%s/%s pods=%llu domain=\"%s\" nodes=\"%s\" action=\"%s\"", j->namespace, j->name,
		     (unsigned long long)promise.stranded, promise.domain, promise.why,
		     promise.gone ? "placed again" : "placed again unless room comes back in time");
	}
	if (!promise.gone && now - j->promise.stranded_since < p->loop->replace_after)
		return;
	add_relocation(p, j, RELOCATE_LOST, &promise, now - j->promise.stranded_since);
}

/* `c` becomes the snapshot, on `nodes` (as many as the snapshot's), with
 * the room of every placed JobSet but j taken. */
void placement_reserve_others(struct pass *p, const struct topo_cluster *snapshot, struct topo_cluster *c,
			      struct topo_node *nodes, const struct pjobset *j)
{
	struct topo_cluster *saved_cluster = p->work_cluster;
	struct topo_node *saved_nodes = p->work_nodes;

	*c = *snapshot;
	c->nodes = nodes;
	memcpy(nodes, snapshot->nodes, snapshot->node_count * sizeof(*nodes));
	p->work_cluster = c;
	p->work_nodes = nodes;
	p->skip = j;
	name_table_each(&p->loop->jobsets, placement_reserve_jobset, p);
	p->skip = NULL;
	p->work_cluster = saved_cluster;
	p->work_nodes = saved_nodes;
}
