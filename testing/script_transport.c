/*
 * script_transport: a scripted kube_transport for fuzzers
 * (script_transport.h).
 */
#include "script_transport.h"

#include <stdlib.h>
#include <string.h>

#include "kube_error.h"

static const long statuses[] = { 200, 200, 200, 201, 404, 409, 410, 500, 403, 429, 301, 0 };

static int script_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct script_transport *s = ctx;
	const uint8_t *nul;
	size_t len;

	resp->body = NULL;
	if (s->at >= s->end)
		return cause_err(cause, MUSTER_ETRANSPORT, "script: no more answers");
	nul = memchr(s->at, 0, (size_t)(s->end - s->at));
	len = (size_t)((nul ? nul : s->end) - s->at);
	resp->status = statuses[s->at[0] % (sizeof(statuses) / sizeof(statuses[0]))];
	if (len)
		len--; /* the status byte */
	if (len > req->max_response) {
		s->at = nul ? nul + 1 : s->end;
		return cause_err(cause, MUSTER_ETOOBIG, "script: answer over max_response");
	}
	resp->body = malloc(len + 1);
	if (!resp->body)
		return cause_err(cause, MUSTER_ENOMEM, "script: out of memory");
	if (len)
		memcpy(resp->body, s->at + 1, len);
	resp->body[len] = '\0';
	resp->body_len = len;
	s->at = nul ? nul + 1 : s->end;
	return MUSTER_OK;
}

static int script_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
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
	return cause_err(cause, MUSTER_ETRANSPORT, "script: no streams");
}

const struct kube_transport script_transport_ops = { script_send, script_stream };

static uint64_t script_now(void *arg)
{
	return ((struct script_transport *)arg)->now_ns;
}

static void script_sleep(void *arg, uint64_t ns)
{
	((struct script_transport *)arg)->now_ns += ns;
}

struct kube_client *script_transport_client(struct script_transport *script, const uint8_t *data, size_t size,
					    struct kube_clock *clock)
{
	struct kube_config cfg;
	struct kube_client *client = NULL;

	script->at = data;
	script->end = data + size;
	script->now_ns = 1000000000u;
	*clock = (struct kube_clock){ script_now, script_sleep, script };
	kube_config_defaults(&cfg);
	cfg.qps = 0;
	cfg.max_retries = 2;
	cfg.max_response_bytes = 4u << 20;
	if (kube_client_new(&cfg, &script_transport_ops, script, clock, &client, NULL) != MUSTER_OK)
		return NULL;
	return client;
}
