/*
 * webhook: the two admission routes of bin/muster-webhook, between the HTTPS
 * server (lib/http/http_serve) and the pure modules (admission, jobset_validate,
 * jobset_mutate).
 *
 *   POST /mutate    JobSet CREATE: validates (a JobSet the barrier cannot be
 *                   injected into is denied here already, with the same
 *                   message the validating route gives), then answers with
 *                   the JSON Patch; other operations and JobSets without
 *                   group scheduling are allowed unchanged.
 *   POST /validate  JobSet CREATE and UPDATE: jobset_validate's rules.
 *
 * A body that is not an AdmissionReview v1 with a request uid is answered
 * HTTP 400 with a one-line reason (there is no review to answer); a review
 * about anything but a jobset.x-k8s.io/v1alpha2 JobSet is denied with a
 * message saying the webhook is registered for the wrong resource. The
 * per-JobSet token is 32 characters of base64url from getrandom(2).
 *
 * Each review is logged as one line (event=admission: route, jobset
 * namespace/name, uid, operation, result, patch operations, duration);
 * bodies and tokens never. Counters by route and result are the server's
 * latency histogram (lib/http/http_serve).
 *
 * Lifecycle: webhook_new() succeeds fully or leaves nothing; the handlers
 * may run concurrently from the server's threads; webhook_free() (accepts
 * NULL) after the server stopped.
 */
#ifndef MUSTER_WEBHOOK_H
#define MUSTER_WEBHOOK_H

#include <stddef.h>

#include "http_serve.h"
#include "jobset_mutate.h"
#include "record_cache.h"

struct kube_client;

struct webhook_options {
	struct jobset_mutate_options barrier; /* strings copied */
	int quiet; /* 1: log denials and errors only (benchmarks) */
	/* The pod route's readers of placement records, their request timeout
	 * and the deadline of every pin answer (record_cache.h); no readers:
	 * every pinned pod is refused saying so. They must outlive the webhook. */
	struct record_cache_options records;
	/* The user muster-controller's requests come as (its service account):
	 * only it may mark a JobSet placed. Copied; NULL or "": nobody. */
	const char *controller_user;
};

struct webhook;

int webhook_new(const struct webhook_options *options, struct webhook **out, char **cause);
void webhook_free(struct webhook *webhook);

/* http_serve_post_fn handlers; arg is the struct webhook. */
void webhook_mutate(void *arg, const char *body, size_t body_len, struct http_serve_reply *reply);
void webhook_validate(void *arg, const char *body, size_t body_len, struct http_serve_reply *reply);
void webhook_pin(void *arg, const char *body, size_t body_len, struct http_serve_reply *reply);

#endif
