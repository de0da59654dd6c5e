/*
 * side_queue: pushes and Events off the registry lock (see side_queue.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "side_queue.h"
#include "jobset_event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kube_error.h"
#include "mlog.h"
#include "muster_lock.h"

static void stat_add(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static uint64_t now_ms(const struct side_queue *queue)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - queue->start.tv_sec) * 1000u +
	       (uint64_t)((now.tv_nsec - queue->start.tv_nsec) / 1000000);
}

struct side_job *side_job_new(struct side_queue *queue, const char *namespace, const char *name,
			      const char *uid, enum side_job_kind kind)
{
	struct side_job *job = calloc(1, sizeof(*job));

	if (!job) {
		stat_add(&queue->stats.jobs_dropped, 1);
		return NULL;
	}
	job->kind = kind;
	snprintf(job->namespace, sizeof(job->namespace), "%s", namespace);
	snprintf(job->name, sizeof(job->name), "%s", name);
	snprintf(job->uid, sizeof(job->uid), "%s", uid);
	return job;
}

void side_job_free(struct side_job *job)
{
	if (!job)
		return;
	free(job->targets);
	free(job);
}

void side_queue_put(struct side_queue *queue, struct side_job *job)
{
	muster_lock(&queue->lock);
	if (queue->count >= SIDE_JOBS_MAX || queue->stop) {
		muster_unlock(&queue->lock);
		stat_add(&queue->stats.jobs_dropped, 1);
		mlog(MLOG_WARN, "job-dropped", "jobset=%s/%s kind=%s reason=\"%s\"", job->namespace,
		     job->name, job->kind == SIDE_JOB_PUSH ? "push" : "event",
		     queue->stop ? "stopping" : "queue full; the ConfigMap still releases");
		side_job_free(job);
		return;
	}
	job->next = NULL;
	if (queue->tail)
		queue->tail->next = job;
	else
		queue->head = job;
	queue->tail = job;
	queue->count++;
	pthread_cond_signal(&queue->cond);
	muster_unlock(&queue->lock);
}

/* Creates an Event on the JobSet (jobset_event.h). */
static void send_event(struct side_queue *queue, const struct side_job *job)
{
	jobset_event_post(queue->client, job->namespace, job->name, job->uid, job->reason, job->warning,
			  job->message);
}

/* Pushes the release to every started pod's barrier, logs the outcome and
 * records the GroupReleased Event. */
static void push_job(struct side_queue *queue, struct side_job *job)
{
	struct push_fanout_options push = {
		.parallelism = queue->push_parallelism,
		.target_timeout_ms = queue->push_target_timeout_ms,
		.total_timeout_ms = queue->push_total_timeout_ms,
		.generation = job->generation,
	};
	const char *push_cause = NULL;
	uint64_t begun = now_ms(queue), done;
	uint64_t counts[PUSH_TIMEOUT + 1] = { 0 }, retries = 0;

	if (job->count) {
		if (push_fanout(job->targets, job->count, job->attempt, job->token, &push, &push_cause) < 0)
			mlog(MLOG_WARN, "push-failed", "jobset=%s/%s attempt=%u cause=\"%s\"", job->namespace,
			     job->name, job->attempt, push_cause);
		for (size_t i = 0; i < job->count; i++) {
			counts[job->targets[i].result]++;
			retries += job->targets[i].tries > 1 ? job->targets[i].tries - 1 : 0;
		}
		for (int r = 0; r <= PUSH_TIMEOUT; r++)
			stat_add(&queue->stats.push_results[r], counts[r]);
	}
	stat_add(&queue->stats.push_passed, job->passed);
	done = now_ms(queue);
	if (job->count) {
		mlog(MLOG_INFO, "pushed",
		     "jobset=%s/%s attempt=%u repush=%d pushed=%zu push_ms=%llu since_last_start_ms=%llu ok=%llu "
		     "refused=%llu unreachable=%llu timeout=%llu pending=%llu passed=%zu retries=%llu",
		     job->namespace, job->name, job->attempt, job->repush, job->count,
		     (unsigned long long)(done - begun), (unsigned long long)(done - job->last_start_ms),
		     (unsigned long long)counts[PUSH_OK], (unsigned long long)counts[PUSH_REFUSED],
		     (unsigned long long)counts[PUSH_UNREACHABLE], (unsigned long long)counts[PUSH_TIMEOUT],
		     (unsigned long long)counts[PUSH_PENDING], job->passed, (unsigned long long)retries);
		if (queue->observer && queue->observer->pushed && !job->repush)
			queue->observer->pushed(queue->observer->arg,
						(double)(done - job->last_start_ms) / 1e3);
	}
	if (job->repush)
		return;
	job->reason = "GroupReleased";
	job->warning = 0;
	snprintf(
		job->message, sizeof(job->message),
		"Released restart attempt %u: %llu of %llu pods started, %llu ms from the first start to the "
		"last; pushed to %zu, %llu answered",
		job->attempt, (unsigned long long)job->started, (unsigned long long)job->expected,
		(unsigned long long)job->spread_ms, job->count, (unsigned long long)counts[PUSH_OK]);
	send_event(queue, job);
}

static void *side_main(void *arg)
{
	struct side_queue *queue = arg;

	for (;;) {
		struct side_job *job;

		muster_lock(&queue->lock);
		while (!queue->head && !queue->stop)
			pthread_cond_wait(&queue->cond, &queue->lock);
		job = queue->head;
		if (!job) { /* stopping, and nothing left */
			muster_unlock(&queue->lock);
			return NULL;
		}
		queue->head = job->next;
		if (!queue->head)
			queue->tail = NULL;
		queue->count--;
		muster_unlock(&queue->lock);
		if (job->kind == SIDE_JOB_PUSH)
			push_job(queue, job);
		else
			send_event(queue, job);
		side_job_free(job);
	}
}

int side_queue_init(struct side_queue *queue, char **cause)
{
	memset(queue, 0, sizeof(*queue));
	if (pthread_mutex_init(&queue->lock, NULL) != 0)
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a mutex");
	if (pthread_cond_init(&queue->cond, NULL) != 0) {
		pthread_mutex_destroy(&queue->lock);
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a condition variable");
	}
	return 0;
}

void side_queue_destroy(struct side_queue *queue)
{
	while (queue->head) {
		struct side_job *next = queue->head->next;

		side_job_free(queue->head);
		queue->head = next;
	}
	pthread_cond_destroy(&queue->cond);
	pthread_mutex_destroy(&queue->lock);
}

int side_queue_start(struct side_queue *queue, char **cause)
{
	if (pthread_create(&queue->thread, NULL, side_main, queue) != 0)
		return cause_err(cause, MUSTER_ENOMEM, "cannot start the push thread");
	return 0;
}

void side_queue_finish(struct side_queue *queue)
{
	muster_lock(&queue->lock);
	queue->stop = 1;
	if (queue->count)
		mlog(MLOG_INFO, "draining", "jobs=%zu", queue->count);
	pthread_cond_signal(&queue->cond);
	muster_unlock(&queue->lock);
	pthread_join(queue->thread, NULL);
}
