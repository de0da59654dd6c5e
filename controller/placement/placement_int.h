/*
 * placement_int.h: what the rooms of controller/placement/ share, and
 * nothing the rest of the controller may use (its contract is
 * controller/placement_loop.h). The loop's state (struct placement_loop, one
 * lock for all of it), a placed or waiting JobSet (struct pjobset: what its
 * informer shows, then a part for each phase that keeps something of it), a bound
 * pod, the topology of a pass, what a pass decides (relocations, moves,
 * actions), and the functions one room calls in another, each named
 * placement_<what> and grouped by the file that defines it; the few small
 * helpers every room uses (clocks, object fields) are static inline here. A
 * helper used in one file stays static there.
 *
 * Locking: every field below `lock` in struct placement_loop, and every
 * pjobset, is read and written under loop->lock. Functions said to run
 * outside the lock take it themselves around what they touch.
 */
#ifndef MUSTER_PLACEMENT_INT_H
#define MUSTER_PLACEMENT_INT_H

#include "../placement_loop.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "jobset_state.h"
#include "topo_record_map.h"
#include "kjson.h"
#include "kube_client.h"
#include "kube_informer.h"
#include "muster_lock.h"
#include "name_table.h"
#include "topo_cache.h"
#include "topo_jobset.h"
#include "topo_promise.h"
#include "topo_record.h"
#include "topo_retire.h"
#include "../watch_hub.h"

/* Items a LIST page asks for. */
#define PAGE_SIZE 500
/* A waiting reason, the longest (the annotation and the Event say it). */
#define REASON_MAX (JOBSET_STATE_REASON_MAX + 1)

enum { API_NODES, API_PODS, API_JOBSETS, API_WRITES, API_COUNT };
enum { WATCH_NODES, WATCH_PODS, WATCH_JOBSETS, WATCH_COUNT };

/* A Job moved alone: until `until`, its old pods (bound where it was, by
 * name; deleted with the Job, not gone yet) count as not bound, so they do
 * not hide the room its new runs need (their own use is counted where they
 * run). Its new pods, once bound, count as bound. */
struct moved_job {
	char replicated_job[64];
	uint32_t job;
	double until; /* monotonic */
	char (*old_pods)[254];
	size_t old_count;
};

/* A JobSet's placement of record: read by the records phase (record.c),
 * written by act.c and move.c, taken back by a relocation. */
struct pjobset_record {
	int record_checked; /* the record was read (or written) once */
	int resuming; /* this pass resumes it from its record */
	uint32_t record_attempt; /* the attempt `record` places (a record of before attempts: the current one)
				  */
	struct topo_record *record; /* NULL: none */
};

/* A JobSet suspended to be placed again (act.c's relocate), held until the
 * pod route's cached records expire and its old Jobs are cleared (clear.c). */
struct pjobset_relocation {
	double hold_until; /* re-placed: not placed again before (pod route caches expire) */
	double relocated_at; /* when this controller last suspended it to place it again */
	int clear_jobs; /* placed again: its Jobs pinned (whole or a share) by the old record go before it is
			   placed */
	int relocating; /* suspended by relocate() (act.c); the informer has not shown it yet */
};

/* The room a placed JobSet holds and whether it lost it (promise.c). */
struct pjobset_promise {
	double stranded_since; /* 0, or since when pods not bound have no room in their domain */
	int no_room_noted; /* logged that it stays: no other room */
	uint8_t *started; /* per Job (JobSet-wide number): every pod bound once, this attempt */
	size_t started_count;
	uint32_t started_attempt;
};

/* Its Jobs moved alone (move.c) and those still to delete (retire.c). */
struct pjobset_moving {
	struct topo_retire *retire; /* moved Jobs to delete (MUSTER_ANNOTATION_PLACEMENT_RETIRE) */
	size_t retire_count;
	int move_refused_noted; /* logged why its stranded Jobs could not move alone */
	int move_failures; /* move writes or Job deletes that failed in a row */
	int move_stuck; /* they failed MOVE_FAILURES_MAX times: placed again whole */
	struct moved_job *moved; /* Jobs moved lately: their old pods hold no room of theirs */
	size_t moved_count;
};

/* A JobSet carrying muster.dev/placement: what its informer shows
 * (mirror.c), then one part for each phase that keeps something of it.
 * All of it under the loop's lock. */
struct pjobset {
	struct name_node node;
	char namespace[64], name[254], uid[129], created[40];
	char state[16];
	int finished;
	int suspended; /* spec.suspend: a placed JobSet suspended again holds no room */
	uint32_t restarts; /* status.restarts: the attempt a record must be of */
	struct topo_store store;
	struct topo_jobset request;
	int decoded;
	char decode_cause[REASON_MAX - 64];
	char reason[REASON_MAX]; /* the waiting reason of record (its annotation) */
	struct pjobset_record rec;
	struct pjobset_relocation relocation;
	struct pjobset_promise promise;
	struct pjobset_moving moving;
};

/* Pods of placed JobSets that are bound, by namespace and
 * "jobset uid/restart attempt/replicated job/job index/completion index"
 * (refs: two pods of one key may overlap for a moment). */
struct bound {
	struct name_node node;
	char namespace[64];
	char key[600];
	unsigned refs;
	char pod[254]; /* the pod's own name, to forget it on delete */
};

struct api {
	struct kube_client *client; /* owns its transport, or on the tests' own */
};

/* A JobSet the webhook marked MUSTER_ANNOTATION_PLACEMENT_SKIPPED: it asks
 * muster for a domain, but another scheduler places it (its `by`). */
#define SKIPPED_MAX 4096
struct skipped {
	struct name_node node; /* first: the table's */
	char namespace[64], name[64], uid[65], by[16];
	int reported;
};

struct placement_loop {
	char *namespace, *levels, *topology, *resources;
	int hypernodes;
	const char *resource_names[TOPO_RESOURCES_MAX];
	size_t resource_count;
	struct api api[API_COUNT]; /* API_PODS, API_JOBSETS: only for watches of its own */
	struct kube_informer *informers[WATCH_COUNT];
	/* The JobSet and pod watches: the process's (shared), or its own. */
	struct watch_hub *jobset_watch, *pod_watch;
	int own_watches;
	int pod_consumer; /* its index in pod_watch, joined once a JobSet asks */
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;
	struct topo_cache *cache;
	struct name_table jobsets, bound, pod_keys;
	/* JobSets another scheduler places although they ask muster for a
	 * domain (struct skipped), at most SKIPPED_MAX; skipped_pending: some
	 * not said yet. */
	struct name_table skipped;
	int skipped_pending;
	int dirty;
	int pods_changed; /* since the last pass: a bound pod came, changed or went (PLACEMENT_POD_PASS_S) */
	/* of stats.waiting, the JobSets whose record or resume failed in the
	 * last pass, or that a user's ConfigMap blocks: retried by the timed
	 * pass; room freed (a pod's event) does not help them */
	size_t retrying;
	int nodes_changed; /* since the last pass: a domain may have lost its nodes */
	int placed_changed; /* since the last pass: a placed JobSet changed (restarted, say) */
	double next_hold; /* a pass is due then: a held JobSet may be placed (0: none) */
	double next_retire; /* wall clock: a moved Job is due to be deleted then (0: none) */
	double hold_s; /* how long a JobSet placed again is held (RECORD_CACHE_WAIT_S) */
	double replace_after; /* --placement-replace-after */
	int balanced; /* --placement-balanced: for JobSets that do not say */
	size_t promising; /* the last pass: placed JobSets with pods not bound (checked each retry) */
	size_t stranded; /* the last pass: of those, with pods that have no room (checked each second) */
	int cluster_watching; /* the Node and pod watches run (once a JobSet asked) */
	int listed[WATCH_COUNT];
	struct placement_stats stats;
	struct placement_observer observer;
	struct topo_node *work; /* the pass's copy of the nodes, with promised room */
	size_t work_cap;
};

static inline double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline const char *meta_string(const cJSON *object, const char *field)
{
	const cJSON *v = kjson_member(kjson_member(object, "metadata"), field);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static inline const char *annotation(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(kjson_member(kjson_member(object, "metadata"), "annotations"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline const char *label(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(kjson_member(kjson_member(object, "metadata"), "labels"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 1 when `object` has a condition of type `done` or "Failed" whose status
 * is "True": a JobSet's terminal conditions (Completed, Failed) and a Job's
 * (Complete, Failed). */
static inline int condition_done(const cJSON *object, const char *done)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, kjson_member(kjson_member(object, "status"), "conditions"))
	{
		const cJSON *type = kjson_member(c, "type"), *status = kjson_member(c, "status");

		if (cJSON_IsString(type) && cJSON_IsString(status) &&
		    strcmp(status->valuestring, "True") == 0 &&
		    (strcmp(type->valuestring, done) == 0 || strcmp(type->valuestring, "Failed") == 0))
			return 1;
	}
	return 0;
}

static inline void mark_dirty(struct placement_loop *loop)
{
	loop->dirty = 1;
	pthread_cond_signal(&loop->cond);
}

struct topology {
	struct topo_store store;
	const char *levels[TOPO_LEVELS_MAX];
	size_t level_count;
	struct topo_hypernode *hypernodes;
	size_t hypernode_count;
	int from_hypernodes;
	char problem[REASON_MAX]; /* why there is none, or "" */
	int none; /* the cluster has none and no flag names one: a JobSet's own level may serve */
	int read; /* read this pass (a pass with nothing to place or move reads none) */
};

/* A placed JobSet to suspend and place again: some of its pods, not bound
 * yet, have no room left in their domain (its nodes deleted at once; not
 * Ready, cordoned, tainted or full for --placement-replace-after); or it
 * restarted (status.restarts above its record's attempt: each attempt is
 * placed afresh); or its record is gone (deleted by hand, or this
 * controller stopped between dropping it and the suspend). */
enum relocation_kind { RELOCATE_LOST, RELOCATE_RESTART, RELOCATE_MISSING, RELOCATE_STUCK };

struct relocation {
	char namespace[64], name[254], uid[129];
	enum relocation_kind kind;
	uint32_t attempt, restarts; /* RELOCATE_RESTART: the record's, the JobSet's */
	struct topo_promise promise;
	double for_s; /* how long they had no room */
	const struct pjobset *jobset; /* valid under the lock only */
};

/* Jobs of a placed JobSet moved alone (topo_move.h): the new record to
 * write, and the Jobs to delete once the pod route's caches expired. */
#define MOVE_JOBS_MAX 64
/* Writes of a move (or deletes of its Jobs) that fail this many times in a
 * row (RBAC without jobs, say): the whole JobSet is placed again instead. */
#define MOVE_FAILURES_MAX 3

struct move {
	char namespace[64], name[254], uid[129];
	char *record; /* the new record's text */
	size_t count;
	char names[MOVE_JOBS_MAX][64]; /* the moved Jobs: replicated job, job index */
	uint32_t job_index[MOVE_JOBS_MAX];
	char reason[REASON_MAX];
};

/* What a pass decided for one JobSet, acted on outside the lock. */
struct action {
	char namespace[64], name[254], uid[129];
	int place; /* 1: write `record`, resume; 0: wait with `reason` */
	char *record;
	uint32_t attempt; /* the restart attempt `record` places */
	char reason[REASON_MAX];
	int reason_changed;
	size_t pods;
	char where[256]; /* the domains, for the Event */
};

/* JobSets whose record was never read: read once (a restart finds the
 * placements of record there). */
struct unread {
	char namespace[64], name[254], uid[129];
};

struct unread_list {
	struct unread *items;
	size_t count, cap;
};

/* The context of a pass, which every phase of loop.c's table works on. */
struct pass {
	struct placement_loop *loop;
	double started; /* monotonic: the pass's start */
	struct topology top; /* read only when something is to be placed or moved */
	int placing; /* a JobSet waits to be placed */
	struct unread_list recorded; /* recorded but not resumed: resumed, not placed again */
	struct topo_cluster cluster;
	struct pjobset **pending;
	size_t pending_count, pending_cap;
	struct action *actions;
	size_t action_count;
	/* for reservations */
	const struct pjobset *current;
	struct topo_cluster *work_cluster;
	struct topo_node *work_nodes; /* work_cluster's nodes, writable */
	const struct pjobset *skip; /* set: only take room, for every JobSet but this one */
	uint64_t reserved_pods;
	size_t held; /* waiting, held back after a re-placement */
	double next_hold; /* the earliest end of those holds, 0 when none */
	size_t promising; /* placed JobSets with pods not bound */
	size_t stranded; /* of those, with pods that have no room in their domain */
	struct relocation *relocations; /* placed JobSets to place again */
	size_t relocation_count, relocation_cap;
	struct move *moves; /* of those, the ones whose stranded Jobs move alone */
	size_t move_count;
};

/* The pod route caches a record this long (webhook/record_cache.h): a
 * JobSet placed again waits it out, so no pod is pinned by the old one. */
#define RECORD_CACHE_WAIT_S 11

/* A Job moved alone counts its pods as not bound this long after its
 * delete is due (their room in the new domain stays promised while the
 * old ones go). */
#define MOVED_HOLD_S 120

/* ---- mirror.c: the informers' handlers, the JobSets and bound pods they keep ---- */

/* The handlers of the three watches, in WATCH_* order (`arg` left NULL). */
void placement_mirror_handlers(struct kube_informer_handlers handlers[WATCH_COUNT]);
/* Frees every JobSet and bound pod the tables hold (placement_loop_free). */
void placement_mirror_free(struct placement_loop *loop);
/* act.c: the JobSets of loop->skipped not said yet get their Warning Event
 * PlacementSkipped, once each (no lock held while posting). */
void placement_report_skipped(struct placement_loop *loop);
/* Takes `record` as j's placement of record (NULL: none). Under the lock. */
void placement_set_record(struct pjobset *j, struct topo_record *record);

/* ---- topology.c: the topology of a pass ---- */

/* The tree of `c` by the topology's levels or HyperNodes, or NULL and a cause. */
struct topo_tree *placement_build_tree(const struct topology *top, const struct topo_cluster *c,
				       char **cause);
/* The one node label a JobSet's request names, or NULL. */
const char *placement_single_level(const struct topo_jobset *js);

/* ---- record.c: the record ConfigMap and the JobSet patches ---- */

int placement_record_path(char *path, size_t size, const char *namespace, const char *name, int collection,
			  char **cause);
int placement_record_get(struct placement_loop *loop, const char *namespace, const char *name,
			 const char *uid, cJSON **configmap, enum topo_record_whose *owner, const char **text,
			 char **cause);
int placement_record_drop(struct placement_loop *loop, const char *namespace, const char *name,
			  const char *uid, char **cause);
int placement_record_write(struct placement_loop *loop, const char *namespace, const char *name,
			   const char *uid, uint32_t attempt, const char *text, struct topo_record **kept,
			   int *foreign, char **cause);
int placement_retire_parse(const char *text, struct topo_retire **out, size_t *count, const char *namespace,
			   const char *name);
int placement_resume(struct placement_loop *loop, const char *namespace, const char *name, const char *uid,
		     char **cause);
int placement_write_reason(struct placement_loop *loop, const char *namespace, const char *name,
			   const char *uid, const char *reason, char **cause);
/* name_table_each: waiting JobSets whose record exists, to resume (arg: struct unread_list). */
void placement_collect_recorded(void *arg, struct name_node *node);

/* ---- promise.c: the room placed JobSets hold, and which must be placed again ---- */

/* topo_promise's "is this pod bound" for p->current (arg: struct pass). */
int placement_pod_bound(void *arg, const char *rj, uint32_t job, uint32_t completion);
/* name_table_each over the JobSets (arg: struct pass). */
void placement_check_record(void *arg, struct name_node *node);
void placement_reserve_jobset(void *arg, struct name_node *node);
void placement_reserve_others(struct pass *p, const struct topo_cluster *snapshot, struct topo_cluster *c,
			      struct topo_node *nodes, const struct pjobset *j);

/* ---- decide.c: the decision, under the lock ---- */

/* name_table_each: the waiting JobSets to place this pass (arg: struct pass). */
void placement_collect_pending(void *arg, struct name_node *node);
const struct topo_jobset_group *placement_group_named(const struct pjobset *j, const char *name);

/* ---- act.c: the decisions carried out, outside the lock ---- */

/* ---- move.c: Jobs moved alone ---- */

int placement_job_path(char *path, size_t size, const char *namespace, const char *jobset, const char *rj,
		       uint32_t job, char **cause);
void placement_move_failed(struct placement_loop *loop, const char *namespace, const char *name,
			   const char *uid);
void placement_note_moved(struct placement_loop *loop, struct pjobset *j, const char *rj, uint32_t job,
			  double until);
/* ---- the phases of a pass, in the order loop.c runs them ---- */

void placement_phase_records(struct pass *p); /* record.c: the records not read yet */
void placement_phase_clear(struct pass *p); /* clear.c: Jobs pinned by an old record */
void placement_phase_topology(struct pass *p); /* topology.c: read if anything is to place or move */
void placement_phase_decide(struct pass *p); /* decide.c: the decision, under the lock */
void placement_phase_resume(struct pass *p); /* act.c: JobSets recorded before, resumed */
void placement_phase_act(struct pass *p); /* act.c: placed, or told why they wait */
void placement_phase_relocate(struct pass *p); /* act.c: suspended to be placed again */
void placement_phase_move(struct pass *p); /* move.c: Jobs moved alone */
void placement_phase_retire(struct pass *p); /* retire.c: moved Jobs deleted when due */

#endif
