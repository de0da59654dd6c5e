/*
 * http_serve: the small HTTP server of bin/muster-controller for Prometheus
 * and the kubelet's probes, on libmicrohttpd (HTTP parsing is the library's):
 *
 *   GET /metrics   200, the registry's text (Content-Type: text/plain;
 *                  version=0.0.4; charset=utf-8), or 500 with a one-line
 *                  reason when the render fails
 *   GET /healthz   200 "ok\n", or 503 with a one-line reason
 *   GET /readyz    200 "ok\n", or 503 with a one-line reason
 *
 * HEAD works wherever GET does; another method on these paths gets 405 (with
 * "Allow: GET, HEAD"), and any other path 404. A route whose part of
 * struct http_serve_routes is NULL answers 200 "ok\n" (checks) or 404
 * (metrics). Plain HTTP: the endpoints are scraped and probed inside the
 * cluster, like kube-state-metrics'.
 *
 * Bounded: at most HTTP_SERVE_CONNECTIONS_MAX connections, each served by
 * its own thread (a slow render never delays a probe), closed after
 * HTTP_SERVE_IDLE_SECONDS without progress, with HTTP_SERVE_CONNECTION_MEMORY
 * bytes for the request; one render at a time. Start, stop and failures
 * while serving are logged through mlog (one key=value line; request bodies
 * never), libmicrohttpd's own messages too, at most HTTP_SERVE_LOG_BURST a
 * minute; a failed start is returned with its cause, for the caller to log.
 *
 * TLS comes later, for the webhook (issue 5): it will be a further argument
 * (a struct http_serve_tls with the certificate and key, NULL for plain HTTP)
 * that adds MHD_USE_TLS and the key options where this file starts the
 * daemon, with the webhook's routes in the same route table. Nothing in this
 * interface assumes plain HTTP beyond the absence of that argument.
 *
 * Lifecycle: http_serve_start() succeeds fully (listening, serving from its
 * own threads) or leaves nothing; http_serve_stop() (accepts NULL) closes the
 * listener and every connection, waits for the threads and frees the server.
 * What the routes point to (registry, callback argument) must outlive the
 * server.
 */
#ifndef MUSTER_HTTP_SERVE_H
#define MUSTER_HTTP_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "metrics.h"

#define HTTP_SERVE_DEFAULT_ADDRESS "0.0.0.0"
#define HTTP_SERVE_CONNECTIONS_MAX 32u
#define HTTP_SERVE_IDLE_SECONDS 10u
#define HTTP_SERVE_CONNECTION_MEMORY (32u * 1024u)
/* Longest reason a check may give (bytes, with the NUL). */
#define HTTP_SERVE_REASON_MAX 256u
#define HTTP_SERVE_LOG_BURST 20u

/* A check behind /healthz or /readyz, called from a connection thread (so it
 * must take its owner's lock) for every probe. Returns 0 when the check
 * passes; any other value fails it (503), with a reason written into reason
 * (reason_size bytes; it is cut at the first control character; empty gives
 * "unhealthy" or "not ready"). */
typedef int (*http_serve_check_fn)(void *arg, char *reason, size_t reason_size);

struct http_serve_routes {
	struct metrics_registry *metrics; /* GET /metrics; NULL: 404 */
	http_serve_check_fn healthy; /* GET /healthz (liveness); NULL: always ok */
	http_serve_check_fn ready; /* GET /readyz (readiness); NULL: always ok */
	void *arg; /* passed to both checks */
};

/* A parsed listen address. */
struct http_serve_addr {
	struct sockaddr_storage addr; /* AF_INET or AF_INET6, port set */
	socklen_t addr_len;
};

/* Parses "PORT", ":PORT", "IPV4:PORT" or "[IPV6]:PORT": a bare or empty
 * address means HTTP_SERVE_DEFAULT_ADDRESS; PORT is decimal, 0 to 65535 (0:
 * the kernel picks a free port, for tests). Host names are refused, so
 * nothing is resolved. Returns 0, or -EINVAL with *cause set to a static
 * sentence. */
int http_serve_parse_listen(const char *listen, struct http_serve_addr *out, const char **cause);

struct http_serve;

/* Parses `listen`, binds it and serves `routes` (copied). Returns 0 and
 * *out, or a negative errno value (-EINVAL bad address; the bind's errno,
 * e.g. -EADDRINUSE; -ENOMEM; -EIO when libmicrohttpd fails to start) with
 * *out NULL and *cause a malloc'd sentence the caller frees. */
int http_serve_start(const char *listen, const struct http_serve_routes *routes, struct http_serve **out,
		     char **cause);

/* The port actually bound (the one the kernel chose for port 0). */
uint16_t http_serve_port(const struct http_serve *server);

/* Stops serving and frees the server. A client that is still connected is
 * disconnected; a check or a render under way is waited for. */
void http_serve_stop(struct http_serve *server);

#endif
