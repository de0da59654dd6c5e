/*
 * path_transport: a kube_transport (lib/kube/kube_transport.h) that answers
 * each request by its path, as a fake API server: the first answer whose
 * path prefix the request's path starts with, else 404 NotFound. It records
 * the paths asked (the first PATH_TRANSPORT_ASKED_MAX), so a test can check
 * the selectors sent. No streams (watches fail).
 */
#ifndef MUSTER_PATH_TRANSPORT_H
#define MUSTER_PATH_TRANSPORT_H

#include <stddef.h>

#include "kube_client.h"

#define PATH_TRANSPORT_ANSWERS_MAX 16
#define PATH_TRANSPORT_ASKED_MAX 16

struct path_transport {
	struct {
		const char *path_prefix;
		long status;
		char *body; /* owned */
	} answers[PATH_TRANSPORT_ANSWERS_MAX];
	size_t answer_count;
	char asked[PATH_TRANSPORT_ASKED_MAX][1024];
	size_t asked_count;
};

/* Adds an answer: `body` is taken (cJSON_PrintUnformatted'ed, then
 * deleted). 0, or -1 when full or out of memory. */
struct cJSON;
int path_transport_add(struct path_transport *t, const char *path_prefix, long status, struct cJSON *body);

/* A client on the fake (no rate limit, no retries), or NULL. */
struct kube_client *path_transport_client(struct path_transport *t);

/* Frees the answers' bodies. */
void path_transport_clear(struct path_transport *t);

#endif
