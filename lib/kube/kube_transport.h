/*
 * kube_transport: the I/O interface under the Kubernetes client.
 *
 * The client (kube_client) builds requests and interprets responses; a
 * transport only moves bytes. kube_curl is the real one (libcurl, TLS); unit
 * tests plug in a fake that replays scripted statuses, bodies, stream lines
 * and connection errors, so every decision of the client is tested without
 * a network.
 *
 * Contract for implementations:
 *   - send: performs one request. On MUSTER_OK, resp->status holds the HTTP
 *     status (any status, errors included) and resp->body a malloc'd,
 *     NUL-terminated body of resp->body_len bytes (never more than
 *     req->max_response, else MUSTER_ETOOBIG) that the caller frees. On failure
 *     resp->body is NULL and the return is MUSTER_ETRANSPORT, MUSTER_ETLS,
 *     MUSTER_ETIMEOUT, MUSTER_ETOOBIG or MUSTER_ENOMEM, with a cause that never
 *     contains credentials.
 *   - stream: performs one GET whose 2xx body is a sequence of lines (a
 *     watch). It calls on_line for each complete line, without its '\n',
 *     empty lines skipped; a line longer than max_line ends the stream with
 *     MUSTER_ETOOBIG. For a non-2xx status no line is delivered: *status is set
 *     and the (bounded) body is given as *error_body (malloc'd, may be NULL)
 *     so the caller can read the Status. Returns MUSTER_OK when the server
 *     ended the stream, when on_line returned non-zero, or when *stop became
 *     non-zero (checked at least once a second); MUSTER_ETIMEOUT when nothing
 *     arrived for idle_timeout_s seconds; otherwise like send.
 */
#ifndef MUSTER_KUBE_TRANSPORT_H
#define MUSTER_KUBE_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>

enum kube_method {
	KUBE_METHOD_GET,
	KUBE_METHOD_POST,
	KUBE_METHOD_PUT,
	KUBE_METHOD_PATCH,
	KUBE_METHOD_DELETE
};

struct kube_request {
	enum kube_method method;
	const char *path; /* absolute path and query, begins with '/' */
	const char *content_type; /* NULL when there is no body */
	const char *body;
	size_t body_len;
	long timeout_ms; /* total time allowed (send only) */
	size_t max_response; /* largest body accepted */
	const atomic_int *stop; /* send: given up with MUSTER_ESTOPPED once non-zero; may be NULL */
};

struct kube_response {
	long status;
	char *body; /* malloc'd, NUL-terminated; the caller frees */
	size_t body_len;
};

/* Called with each line of a stream; returns 0 to go on, non-zero to stop. */
typedef int (*kube_line_fn)(void *arg, const char *line, size_t len);

struct kube_transport {
	int (*send)(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause);
	int (*stream)(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		      const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		      char **error_body, char **cause);
};

#endif
