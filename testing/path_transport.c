/*
 * path_transport: a fake API server answering by path
 * (path_transport.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "path_transport.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_config.h"
#include "kube_error.h"

static const char NOT_FOUND[] = "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}";

static int path_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct path_transport *t = ctx;
	const char *body = NOT_FOUND;

	resp->status = 404;
	if (t->asked_count < PATH_TRANSPORT_ASKED_MAX)
		snprintf(t->asked[t->asked_count++], sizeof(t->asked[0]), "%s", req->path);
	for (size_t i = 0; i < t->answer_count; i++)
		if (strncmp(req->path, t->answers[i].path_prefix, strlen(t->answers[i].path_prefix)) == 0) {
			resp->status = t->answers[i].status;
			body = t->answers[i].body;
			break;
		}
	resp->body = strdup(body);
	if (!resp->body)
		return cause_err(cause, MUSTER_ENOMEM, "path_transport: out of memory");
	resp->body_len = strlen(body);
	return MUSTER_OK;
}

static int path_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	(void)ctx;
	(void)req;
	(void)max_line;
	(void)idle_timeout_s;
	(void)stop;
	(void)on_line;
	(void)arg;
	*status = 0;
	*error_body = NULL;
	return cause_err(cause, MUSTER_ETRANSPORT, "path_transport: no streams");
}

static const struct kube_transport path_transport_ops = { path_send, path_stream };

int path_transport_add(struct path_transport *t, const char *path_prefix, long status, cJSON *body)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	if (!text || t->answer_count == PATH_TRANSPORT_ANSWERS_MAX) {
		free(text);
		return -1;
	}
	t->answers[t->answer_count].path_prefix = path_prefix;
	t->answers[t->answer_count].status = status;
	t->answers[t->answer_count++].body = text;
	return 0;
}

struct kube_client *path_transport_client(struct path_transport *t)
{
	struct kube_config cfg;
	struct kube_client *client = NULL;

	kube_config_defaults(&cfg);
	cfg.qps = 0;
	cfg.max_retries = 0;
	if (kube_client_new(&cfg, &path_transport_ops, t, NULL, &client, NULL) != MUSTER_OK)
		return NULL;
	return client;
}

void path_transport_clear(struct path_transport *t)
{
	for (size_t i = 0; i < t->answer_count; i++)
		free(t->answers[i].body);
	t->answer_count = 0;
	t->asked_count = 0;
}
