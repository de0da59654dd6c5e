/*
 * side_queue: the controller's side thread. Work that must not hold up the
 * watches or the registry lock, the push of a release to the barriers
 * (push_fanout) and the Events on a JobSet, is queued here (bounded) and
 * done in order by one thread with its own API client.
 *
 * What it does not do: decide anything. A job copies all it needs (the
 * JobSet's identity, the addresses, the token), so the JobSet may be
 * forgotten meanwhile.
 *
 * Lifecycle: side_queue_init succeeds fully or leaves nothing; the owner
 * then sets the public fields; side_queue_start runs the thread;
 * side_queue_finish makes it do what is queued and stop; side_queue_destroy
 * frees what is left. side_queue_put and side_job_new: any thread.
 */
#ifndef MUSTER_SIDE_QUEUE_H
#define MUSTER_SIDE_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "controller_group.h"
#include "group_decode.h"
#include "kube_client.h"
#include "push_fanout.h"
#include "release_line.h"

/* Work for the side thread: the push of a release, or an Event. Copies
 * everything it needs, so the JobSet may be forgotten meanwhile. */
enum side_job_kind { SIDE_JOB_PUSH, SIDE_JOB_EVENT };

struct side_job {
	struct side_job *next;
	enum side_job_kind kind;
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_LABEL_MAX + 1];
	char uid[MODEL_UID_MAX + 1];
	/* SIDE_JOB_PUSH */
	uint32_t attempt;
	uint32_t generation;
	char token[RELEASE_TOKEN_MAX + 1];
	struct push_target *targets; /* malloc'd, may be NULL */
	size_t count;
	size_t passed; /* started pods already past their barrier: not pushed */
	uint64_t expected, started, spread_ms, last_start_ms;
	int repush; /* a push again after a restart: logged, no Event */
	/* SIDE_JOB_EVENT */
	const char *reason; /* static text */
	int warning;
	char message[512];
};

/* Jobs waiting at most; beyond, Events are dropped (logged) and pushes too
 * (the ConfigMap still releases those barriers). */
#define SIDE_JOBS_MAX 4096u

struct side_queue {
	/* Set by the owner after side_queue_init, read-only once started. */
	struct kube_client *client; /* the Events' */
	size_t push_parallelism;
	int push_target_timeout_ms, push_total_timeout_ms;
	const struct controller_group_observer *observer; /* NULL: none */
	struct timespec start; /* the monotonic clock that last_start_ms counts from */

	/* Counters, any thread. */
	struct {
		_Atomic uint64_t push_results[PUSH_TIMEOUT + 1], push_passed, jobs_dropped;
	} stats;

	/* Private. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct side_job *head, *tail;
	size_t count;
	int stop;
	pthread_t thread;
};

/* Returns 0, or MUSTER_ENOMEM with *cause. */
int side_queue_init(struct side_queue *queue, char **cause);

/* Frees the jobs still queued and the lock. */
void side_queue_destroy(struct side_queue *queue);

/* Starts the thread. Returns 0, or MUSTER_ENOMEM with *cause. */
int side_queue_start(struct side_queue *queue, char **cause);

/* Refuses new jobs, lets the thread finish what is queued (pushes are
 * bounded in time) and joins it. */
void side_queue_finish(struct side_queue *queue);

/* A job for the JobSet namespace/name (uid), its identity copied, or NULL
 * (counted as dropped) without memory. */
struct side_job *side_job_new(struct side_queue *queue, const char *namespace, const char *name,
			      const char *uid, enum side_job_kind kind);

void side_job_free(struct side_job *job);

/* Queues the job (the queue owns it), or drops it (logged `job-dropped`)
 * when the queue is full or finishing. */
void side_queue_put(struct side_queue *queue, struct side_job *job);

#endif
