/*
 * placement/decide.c: the decision of a pass, under the lock and without API
 * requests: the waiting JobSets placed in creation order on the snapshot with
 * every promise taken off, each placement taken before the next; the
 * relocations worth making (the JobSet fits elsewhere), or the stranded Jobs
 * moved alone instead (topo_move.h); the top-level domains for /metrics. Not
 * here: acting on it (act.c, move.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "placement_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "mlog.h"
#include "muster_api.h"
#include "topo_move.h"

void placement_collect_pending(void *arg, struct name_node *node)
{
	struct pass *p = arg;
	struct pjobset *j = (struct pjobset *)node;

	/* Not before its record was read: a record written before must be
	 * honoured, not a second placement made. */
	if (strcmp(j->state, MUSTER_PLACEMENT_WAITING) != 0 || j->finished || j->rec.resuming ||
	    !j->rec.record_checked)
		return;
	if (j->relocation.hold_until > now_s() || j->relocation.clear_jobs) {
		p->held++;
		if (!p->next_hold || j->relocation.hold_until < p->next_hold)
			p->next_hold = j->relocation.hold_until;
		return;
	}
	if (p->pending_count == p->pending_cap) {
		size_t cap = p->pending_cap ? p->pending_cap * 2 : 16;
		struct pjobset **grown = realloc(p->pending, cap * sizeof(*grown));

		if (!grown)
			return;
		p->pending = grown;
		p->pending_cap = cap;
	}
	p->pending[p->pending_count++] = j;
}

static int by_creation(const void *a, const void *b)
{
	const struct pjobset *x = *(const struct pjobset *const *)a, *y = *(const struct pjobset *const *)b;
	int c = strcmp(x->created, y->created);

	if (!c)
		c = strcmp(x->namespace, y->namespace);
	return c ? c : strcmp(x->name, y->name);
}

const struct topo_jobset_group *placement_group_named(const struct pjobset *j, const char *name)
{
	for (size_t g = 0; g < j->request.group_count; g++)
		if (strcmp(j->request.groups[g].name, name) == 0)
			return &j->request.groups[g];
	return NULL;
}

/* Adds one pod's request (of `pod`) to node `n` of the working copy. */
static void take(struct topo_cluster *c, struct topo_node *n, const struct topo_pod_scheduling *pod)
{
	int pods = topo_resource_index(c, "pods");

	for (size_t r = 0; r < pod->request_count; r++) {
		int i = topo_resource_index(c, pod->request_names[r]);

		if (i >= 0)
			n->used[i] = topo_amount_add(n->used[i], pod->request_values[r]);
	}
	if (pods >= 0)
		n->used[pods] += 1;
}
/* Room for a copy of the snapshot's nodes to model j on (malloc'd), and
 * *level: with no topology at all, the one label the JobSet names, as
 * decide() does. NULL when j cannot be modelled (no topology and no single
 * label, a topology problem, no node, no memory). */
static struct topo_node *model_scratch(const struct topology *top, const struct topo_cluster *snapshot,
				       const struct pjobset *j, const char **level)
{
	*level = NULL;
	if (top->none && !(*level = placement_single_level(&j->request)))
		return NULL;
	if ((top->problem[0] && !top->none) || !snapshot->node_count)
		return NULL;
	return malloc(snapshot->node_count * sizeof(struct topo_node));
}

/* 1 when the JobSet of a relocation would fit the cluster now, its own
 * promise given back (its bound pods still counted: conservative), every
 * other JobSet's taken: placing it again is worth suspending it; 0 when it
 * would not; -1 when this pass cannot tell (the topology was not read). A
 * domain with no node left is placed again whatever: its pods can never run. */
static int fits_elsewhere(struct pass *p, const struct topology *top, const struct topo_cluster *snapshot,
			  const struct pjobset *j)
{
	struct topo_node *scratch;
	struct topo_cluster c = *snapshot;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request request;
	struct topo_placement *pl = NULL;
	struct topo_tree *t;
	char *cause = NULL;
	int fits = 0;

	const char *level = NULL;

	if (!top->read)
		return -1;
	if (!(scratch = model_scratch(top, snapshot, j, &level)))
		return 0;
	placement_reserve_others(p, snapshot, &c, scratch, j);
	t = level ? topo_tree_from_levels(&c, &level, 1, &cause) : placement_build_tree(top, &c, &cause);
	if (t)
		fits = topo_jobset_place(&j->request, t, groups, &request, &pl, &cause) == 0;
	topo_placement_free(pl);
	topo_tree_free(t);
	free(cause);
	free(scratch);
	return fits;
}

/* The top-level domains' free cores and nodes, for /metrics. */
static void note_domains(struct placement_loop *loop, const struct topo_tree *t)
{
	const struct topo_cluster *c = t->cluster;
	int cpu = topo_resource_index(c, "cpu");
	size_t shown = 0;

	for (uint32_t d = 1; d < t->domain_count && shown < PLACEMENT_DOMAINS_SHOWN; d++) {
		const struct topo_domain *dom = &t->domains[d];

		if (dom->level != 1)
			continue;
		snprintf(loop->stats.domains[shown], sizeof(loop->stats.domains[shown]), "%s",
			 dom->name ? dom->name : "");
		loop->stats.free_cpu[shown] = 0;
		loop->stats.free_nodes[shown] = 0;
		for (uint32_t leaf = d; leaf < dom->end; leaf++) {
			const struct topo_node *n;

			if (t->domains[leaf].node == TOPO_NONE)
				continue;
			n = &c->nodes[t->domains[leaf].node];
			if (n->unschedulable || n->not_ready) /* the scheduler binds nothing there */
				continue;
			loop->stats.free_nodes[shown] += 1;
			if (cpu >= 0)
				loop->stats.free_cpu[shown] +=
					(double)(n->allocatable[cpu] - n->used[cpu]) / 1e3;
		}
		shown++;
	}
	loop->stats.domain_count = shown;
}
/* The domains a placement used, for the Event ("rack-1/a, rack-2/b"). */
static void describe(const struct topo_tree *t, const struct topo_placement *pl, char *out, size_t size)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < pl->instance_count && at + 2 < size; i++) {
		char path[200];
		size_t seen = 0;

		while (seen < i && pl->instance_domain[seen] != pl->instance_domain[i])
			seen++;
		if (seen < i)
			continue; /* named already */
		topo_tree_path(t, pl->instance_domain[i], path, sizeof(path));
		at += (size_t)snprintf(out + at, size - at, "%s%s", at ? ", " : "",
				       path[0] ? path : "(cluster)");
	}
}

/* The Jobs with stranded pods, each once. */
struct stranded_jobs {
	struct topo_move_job jobs[MOVE_JOBS_MAX];
	char names[MOVE_JOBS_MAX][64];
	size_t count;
	int overflow; /* more Jobs than MOVE_JOBS_MAX, or a name too long */
};

static void note_stranded(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	struct stranded_jobs *s = arg;

	(void)completion;
	for (size_t i = 0; i < s->count; i++)
		if (s->jobs[i].job_index == job && strcmp(s->names[i], rj) == 0)
			return;
	if (s->count == MOVE_JOBS_MAX || strlen(rj) >= sizeof(s->names[0])) {
		s->overflow = 1;
		return;
	}
	snprintf(s->names[s->count], sizeof(s->names[0]), "%s", rj);
	s->jobs[s->count].replicated_job = s->names[s->count];
	s->jobs[s->count].job_index = job;
	s->count++;
}

struct skip_moving {
	struct pass *p;
	const struct stranded_jobs *moving;
};

/* placement_pod_bound, and every pod of a moving Job counts as bound (it takes no
 * room where it was: it is placed again). */
static int bound_or_moving(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	const struct skip_moving *sm = arg;

	for (size_t i = 0; i < sm->moving->count; i++)
		if (sm->moving->jobs[i].job_index == job && strcmp(sm->moving->names[i], rj) == 0)
			return 1;
	return placement_pod_bound(sm->p, rj, job, completion);
}

/* Only the moving Jobs' pods, all of them: the rest count as bound. */
static int bound_or_staying(void *arg, const char *rj, uint32_t job, uint32_t completion)
{
	const struct skip_moving *sm = arg;

	(void)completion;
	for (size_t i = 0; i < sm->moving->count; i++)
		if (sm->moving->jobs[i].job_index == job && strcmp(sm->moving->names[i], rj) == 0)
			return 0; /* its pods bound now are old ones: every pod takes room anew */
	return 1;
}

/* Tries to move the Jobs of a lost-room relocation alone (topo_move.h):
 * 1 with a move queued (the relocation is dropped), else 0 (the whole
 * JobSet is considered, as before). Under the lock. */
static int try_move(struct pass *p, const struct topology *top, const struct topo_cluster *snapshot,
		    struct pjobset *j, const struct relocation *r)
{
	struct stranded_jobs stranded = { 0 };
	struct skip_moving sm = { p, &stranded };
	struct topo_promise promise;
	struct topo_cluster c;
	struct topo_node *scratch;
	struct topo_tree *t = NULL;
	const char *level = NULL;
	char where[256], *text = NULL, *cause = NULL;
	int rc = -1;

	if (!top->read || !j->rec.record || !j->decoded ||
	    !(scratch = model_scratch(top, snapshot, j, &level)))
		return 0;
	/* Which Jobs have pods with no room, every other JobSet's room taken. */
	placement_reserve_others(p, snapshot, &c, scratch, j);
	p->current = j;
	topo_promise_take_each(&c, scratch, &j->request, j->rec.record, placement_pod_bound, p, note_stranded,
			       &stranded, &promise);
	if (stranded.count && !stranded.overflow) {
		/* Afresh: the others' room and that of j's staying Jobs. */
		placement_reserve_others(p, snapshot, &c, scratch, j);
		p->current = j;
		topo_promise_take(&c, scratch, &j->request, j->rec.record, bound_or_moving, &sm, &promise);
		t = level ? topo_tree_from_levels(&c, &level, 1, &cause)
			  : placement_build_tree(top, &c, &cause);
		if (t)
			rc = topo_move(&j->request, t, j->rec.record, stranded.jobs, stranded.count, &text,
				       where, sizeof(where), &cause);
	}
	if (rc == TOPO_MOVE_PLACED) {
		struct move *grown = realloc(p->moves, (p->move_count + 1) * sizeof(*grown)), *m;

		if (grown) {
			p->moves = grown;
			m = &p->moves[p->move_count++];
			memset(m, 0, sizeof(*m));
			snprintf(m->namespace, sizeof(m->namespace), "%s", j->namespace);
			snprintf(m->name, sizeof(m->name), "%s", j->name);
			snprintf(m->uid, sizeof(m->uid), "%s", j->uid);
			m->record = text;
			text = NULL;
			m->count = stranded.count;
			memcpy(m->names, stranded.names, sizeof(m->names));
			for (size_t i = 0; i < m->count; i++)
				m->job_index[i] = stranded.jobs[i].job_index;
			if (r->promise.gone)
				snprintf(
					m->reason, sizeof(m->reason),
					"%llu pods not bound yet lost every node of their domain (%s): moved "
					"alone to %s; the other Jobs keep their domains",
					(unsigned long long)r->promise.stranded, r->promise.domain, where);
			else
				snprintf(m->reason, sizeof(m->reason),
					 "%llu pods not bound yet had no room in their domain (%s; %s) for "
					 "%.0f s: moved alone to %s; the other Jobs keep their domains",
					 (unsigned long long)r->promise.stranded, r->promise.domain,
					 r->promise.why, r->for_s, where);
			/* Their new room is taken in this pass's working copy at
			 * once: a JobSet placed later in the pass does not get it. */
			{
				struct topo_record *moved = NULL;

				if (topo_record_parse(m->record, strlen(m->record), &moved, NULL) == 0) {
					p->current = j;
					topo_promise_take(p->work_cluster, p->work_nodes, &j->request, moved,
							  bound_or_staying, &sm, &promise);
				}
				topo_record_free(moved);
			}
		} else {
			rc = -1;
		}
	} else if (!j->moving.move_refused_noted && (cause || stranded.overflow)) {
		j->moving.move_refused_noted = 1;
		mlog(MLOG_INFO, "placement-move-refused", "jobset=%s/%s jobs=%zu reason=\"%s\"", j->namespace,
		     j->name, stranded.count,
		     stranded.overflow ? "more Jobs lost room than are moved alone" : cause);
	}
	free(text);
	free(cause);
	topo_tree_free(t);
	free(scratch);
	return rc == TOPO_MOVE_PLACED;
}

/* Drops the relocations that would not fit elsewhere now (their pods wait
 * where they are pinned; checked again on the next pass), saying so once. */
static void keep_worthwhile_relocations(struct pass *p, const struct topology *top,
					const struct topo_cluster *snapshot)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->relocation_count; i++) {
		struct relocation *r = &p->relocations[i];
		struct pjobset *j = (struct pjobset *)r->jobset;

		int fits;

		/* A pass that did not read the topology (only Nodes changed)
		 * leaves it to the next, a second later: moving Jobs alone
		 * needs the topology, even when a domain is gone. */
		if (r->kind == RELOCATE_LOST && !top->read)
			continue;
		/* One move a pass: the next one is decided on a model that
		 * holds this one's record (a second later). */
		if (r->kind == RELOCATE_LOST && p->move_count)
			continue;
		if (r->kind == RELOCATE_LOST && j->moving.move_failures < MOVE_FAILURES_MAX &&
		    try_move(p, top, snapshot, j, r))
			continue; /* its stranded Jobs move alone */
		fits = r->kind != RELOCATE_LOST || r->promise.gone ? 1 : fits_elsewhere(p, top, snapshot, j);

		if (fits == 1) {
			p->relocations[kept++] = *r;
			continue;
		}
		if (fits == 0 && !j->promise.no_room_noted) {
			j->promise.no_room_noted = 1;
			mlog(MLOG_WARN, "placement-stranded",
			     "jobset=%s/%s pods=%llu domain=\"%s\" nodes=\"%s\" seconds=%.1f "
			     "action=\"kept: the cluster has no other room for it now; checked again\"",
			     j->namespace, j->name, (unsigned long long)r->promise.stranded,
			     r->promise.domain, r->promise.why, r->for_s);
		}
	}
	p->relocation_count = kept;
}

/* Decides under the lock; fills p->actions. */
static void decide(struct pass *p, const struct topology *top)
{
	struct placement_loop *loop = p->loop;
	struct topo_cluster snapshot, *c = &p->cluster;
	struct topo_tree *t = NULL;
	char *cause = NULL;

	name_table_each(&loop->jobsets, placement_collect_pending, p);
	name_table_each(&loop->jobsets, placement_check_record, p);
	if (p->pending_count > 1)
		qsort(p->pending, p->pending_count, sizeof(*p->pending), by_creation);
	p->actions = calloc(p->pending_count ? p->pending_count : 1, sizeof(*p->actions));
	if (!p->actions)
		return;
	if ((!top->problem[0] || top->none) && topo_cache_cluster(loop->cache, &snapshot, &cause) == 0) {
		/* A copy the pass may add promised room to. */
		if (snapshot.node_count > loop->work_cap) {
			struct topo_node *grown = realloc(loop->work, snapshot.node_count * sizeof(*grown));

			if (grown) {
				loop->work = grown;
				loop->work_cap = snapshot.node_count;
			}
		}
		if (snapshot.node_count <= loop->work_cap) {
			if (snapshot.node_count)
				memcpy(loop->work, snapshot.nodes, snapshot.node_count * sizeof(*loop->work));
			*c = snapshot;
			c->nodes = loop->work;
			p->work_cluster = c;
			p->work_nodes = loop->work;
			name_table_each(&loop->jobsets, placement_reserve_jobset, p);
			keep_worthwhile_relocations(p, top, &snapshot);
			if (p->pending_count && !top->problem[0])
				t = placement_build_tree(top, c, &cause);
		}
	}
	if (t)
		note_domains(loop, t);
	for (size_t i = 0; i < p->pending_count; i++) {
		struct pjobset *j = p->pending[i];
		struct action *a = &p->actions[p->action_count++];
		struct topo_group groups[TOPO_GROUPS_MAX];
		struct topo_request request;
		struct topo_placement *pl = NULL;
		struct topo_tree *own = NULL, *use = t;
		const char *level = NULL;
		char *why = NULL;

		/* No topology at all: the one label the JobSet names, if it does. */
		if (top->none && j->decoded && p->work_cluster &&
		    (level = placement_single_level(&j->request)) != NULL)
			use = own = topo_tree_from_levels(c, &level, 1, &why);
		snprintf(a->namespace, sizeof(a->namespace), "%s", j->namespace);
		snprintf(a->name, sizeof(a->name), "%s", j->name);
		snprintf(a->uid, sizeof(a->uid), "%s", j->uid);
		a->attempt = j->restarts;
		if (!j->decoded) {
			snprintf(a->reason, sizeof(a->reason), "the placement request: %s", j->decode_cause);
		} else if (top->problem[0] && !own) {
			snprintf(a->reason, sizeof(a->reason), "%.440s%s%.440s", top->problem,
				 why ? ": " : "", why ? why : "");
		} else if (!use) {
			snprintf(a->reason, sizeof(a->reason), "the topology tree: %s",
				 cause ? cause : "out of memory");
		} else if (topo_jobset_place(&j->request, use, groups, &request, &pl, &why) == 0 &&
			   topo_record_encode(use, &request, pl, j->uid, j->restarts, &a->record, &why) ==
				   0) {
			a->place = 1;
			a->pods = pl->pod_count;
			describe(use, pl, a->where, sizeof(a->where));
			/* Its pods take their room before the next JobSet is placed. */
			for (size_t k = 0; k < pl->pod_count; k++) {
				const struct topo_jobset_group *g =
					placement_group_named(j, request.groups[pl->pods[k].group].name);

				if (pl->pods[k].node != TOPO_NONE && g)
					take(c, &loop->work[pl->pods[k].node], &g->pod);
			}
			if (t) {
				topo_tree_free(t);
				t = placement_build_tree(top, c, &cause);
			}
		} else {
			snprintf(a->reason, sizeof(a->reason), "%s", why ? why : "out of memory");
		}
		free(why);
		topo_tree_free(own);
		topo_placement_free(pl);
		if (!a->place)
			a->reason_changed = strcmp(a->reason, j->reason) != 0;
	}
	loop->stats.waiting = p->held;
	loop->retrying = 0;
	for (size_t i = 0; i < p->action_count; i++)
		loop->stats.waiting += !p->actions[i].place;
	if (p->pending_count || p->relocation_count)
		mlog(MLOG_INFO, "placement-pass", "pending=%zu promised_pods=%llu nodes=%zu relocations=%zu",
		     p->pending_count, (unsigned long long)p->reserved_pods, c->node_count,
		     p->relocation_count);
	topo_tree_free(t);
	free(cause);
}

/* The decision, and the checks of placed JobSets (lost domains, restarts):
 * when something waits, Nodes changed (a pod's event cannot take a
 * domain's nodes away), a placed JobSet changed, or placed pods are not
 * bound yet. Under the lock, with the JobSets recorded but not resumed
 * (resumed, not placed again). */
void placement_phase_decide(struct pass *p)
{
	struct placement_loop *loop = p->loop;

	muster_lock(&loop->lock);
	loop->dirty = 0;
	loop->pods_changed = 0;
	loop->stats.passes++;
	name_table_each(&loop->jobsets, placement_collect_recorded, &p->recorded);
	if (p->placing || loop->nodes_changed || loop->placed_changed || loop->promising) {
		loop->nodes_changed = 0;
		loop->placed_changed = 0;
		decide(p, &p->top);
		loop->next_hold = p->next_hold;
		loop->promising = p->promising;
		loop->stranded = p->stranded;
	}
	loop->stats.last_decision_s = now_s() - p->started;
	muster_unlock(&loop->lock);
}
