/*
 * http_serve: the small HTTP(S) server of muster, on libmicrohttpd (HTTP
 * parsing is the library's, TLS is GnuTLS through it). Two users:
 *
 * - bin/muster-controller: plain HTTP for Prometheus and the kubelet's
 *   probes, started with http_serve_start();
 * - the admission webhook: HTTPS with POST routes (/mutate, /validate),
 *   started with http_serve_start_options().
 *
 * Routes every server has:
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
 * (metrics). The controller serves them over plain HTTP: they are scraped and
 * probed inside the cluster, like kube-state-metrics'.
 *
 * POST routes (options->posts): the exact path takes POST only (another
 * method gets 405 with "Allow: POST"). The body is read into a buffer that
 * grows up to options->body_max bytes, then the route's handler is called
 * with all of it and its reply is sent. A body over body_max gets 413 with a
 * one-line reason and is never held: it is decided from Content-Length when
 * there is one, else at the byte that crosses the limit. libmicrohttpd 0.9.75
 * cannot reply while a body arrives, and a reply sent while the client still
 * sends is often lost to a connection reset, so the refused body is read to
 * its end and dropped, then 413 is sent, on a connection that stays usable.
 * Exceptions: a client that sent "Expect: 100-continue" is answered at once
 * (it has not sent its body); a Content-Length more than
 * HTTP_SERVE_DISCARD_MAX over the limit is answered at once and its
 * connection closed; a body without length that goes more than
 * HTTP_SERVE_DISCARD_MAX over the limit has its connection closed
 * unanswered. A request answered before its body was read closes its
 * connection; any other keeps it open for the next request (HTTP/1.1
 * keep-alive, also over TLS).
 *
 * TLS (options->tls_cert_file and tls_key_file, PEM): TLS 1.2 and 1.3 only
 * (HTTP_SERVE_TLS_PRIORITIES). The pair is read and checked (the key must
 * sign what the certificate's public key verifies) at start, where a missing,
 * unreadable or bad file or a mismatched pair is an error naming the file.
 * After that it is reloaded without a restart: a thread watches the two
 * files' directories with inotify (a Secret volume swaps a "..data" symlink
 * by rename; cert-manager or a person may rewrite the files in place) and
 * reloads HTTP_SERVE_TLS_DEBOUNCE_MS after the last change, and also every
 * HTTP_SERVE_TLS_RECHECK_SECONDS whatever inotify said (by content: a reload
 * that reads the same bytes does nothing). Without inotify the periodic
 * check alone remains; a directory that cannot be watched (removed or
 * replaced, say) is tried again, and the files read, every second (either
 * logged once, tls-watch-failed). A reload takes effect for the next
 * handshake; connections already open keep the pair they started with, which
 * is freed when the last of them closes. A reload that fails (unreadable,
 * unparsable, key not matching) is logged once per distinct failure and the
 * pair in use stays; each outcome is one log line (tls-reloaded or
 * tls-reload-failed, with the file names; key material never) and, with a
 * registry in options->latency, a count in
 * muster_tls_reloads_total{result="ok"|"error"}.
 *
 * Metrics (options->latency non-NULL): the histogram
 * muster_http_request_duration_seconds{route,result}, from the request's
 * headers to its queued reply, for the GET routes (route "metrics",
 * "healthz", "readyz"; result "ok", "failed" (503), "error" (500),
 * "not_found", "method_not_allowed") and the POST routes (route = the post
 * route's name; result = the handler's, or "too_large",
 * "method_not_allowed", "error"). Series are registered on first use, at
 * most HTTP_SERVE_LATENCY_SERIES_MAX per server; one registry serves one
 * server (a second one's series collide and are not counted, with a log line).
 *
 * Bounded: at most connections_max connections (HTTP_SERVE_CONNECTIONS_MAX
 * by default; the soft RLIMIT_NOFILE is raised toward the hard one to hold
 * them and HTTP_SERVE_FD_RESERVE more, else fewer are served, logged
 * http-connections-reduced). Idle and half-open connections cannot take
 * them all: once more than seven eighths are open, each new connection
 * closes the one that has waited longest for its first request's head
 * (TLS handshake, request line, headers), or if none, the one kept alive
 * longest since its last request (counted, and logged once a minute,
 * http-connections-evicted); a connection sending a request or being
 * answered is never closed for room. Each is closed after idle_seconds
 * without progress (HTTP_SERVE_IDLE_SECONDS), and by deadlines that no
 * trickle of bytes resets (a sweeper thread checks them every half second):
 * a new connection's TLS handshake and first request line and headers
 * within head_seconds of the accept (HTTP_SERVE_HEAD_SECONDS), a kept-alive
 * one's next request line within idle_seconds of the previous request's
 * end and the rest of its headers within header_seconds
 * (HTTP_SERVE_HEADER_SECONDS), and a body within body_seconds of its
 * headers (HTTP_SERVE_BODY_SECONDS), whether the body trickles or stops,
 * with HTTP_SERVE_CONNECTION_MEMORY bytes for the
 * request's headers, plus at most body_max bytes of body per connection and
 * bodies_max for all of them (503 past it); one
 * render at a time; TLS files of at most HTTP_SERVE_TLS_FILE_MAX bytes and
 * HTTP_SERVE_TLS_CHAIN_MAX certificates. Start, stop, reloads and failures
 * while serving are logged through mlog (one key=value line; request bodies
 * never), libmicrohttpd's own messages too, at most HTTP_SERVE_LOG_BURST a
 * minute; a failed start is returned with its cause, for the caller to log.
 *
 * Threads: with options->threads 0 (and always for http_serve_start()) each
 * connection has its own thread, so a slow render or check never delays
 * another client; with N > 0 a pool of N threads serves the connections,
 * each thread poll()ing its share, so a slow handler delays the other
 * connections of its thread:
 * handlers should be quick. Checks and POST handlers may run concurrently
 * from several threads; they take their owner's locks.
 *
 * Lifecycle: http_serve_start() and http_serve_start_options() succeed fully
 * (listening, serving from their own threads) or leave nothing;
 * http_serve_stop() (accepts NULL) closes the listener and every connection,
 * waits for the threads (a handler under way is waited for) and frees the
 * server. The options, their array of POST routes and the file names are
 * copied; what they point to besides (registries, handler arguments, the
 * routes' path and name strings) must outlive the server.
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
/* Largest connections_max, threads and idle_seconds options accepted. */
#define HTTP_SERVE_CONNECTIONS_LIMIT 10000u
#define HTTP_SERVE_THREADS_MAX 256u
#define HTTP_SERVE_IDLE_SECONDS_MAX 3600u
#define HTTP_SERVE_BODY_SECONDS 10u
/* Seconds from a request line to the end of its headers. */
#define HTTP_SERVE_HEADER_SECONDS 10u
/* Seconds from a connection's accept to the end of its first request's
 * headers, the TLS handshake included: a client on the cluster's network
 * takes milliseconds; one that has not got this far is closed. */
#define HTTP_SERVE_HEAD_SECONDS 3u
/* Open files kept for the rest of the process besides connections_max. */
#define HTTP_SERVE_FD_RESERVE 64u
#define HTTP_SERVE_BODY_SECONDS_MAX 3600u
/* Largest POST body unless options->body_max says otherwise, and the largest
 * body_max accepted. */
#define HTTP_SERVE_BODY_MAX_DEFAULT (4u * 1024u * 1024u)
#define HTTP_SERVE_BODY_MAX_LIMIT (256u * 1024u * 1024u)
/* Bodies of body_max that all connections together may hold at once unless
 * options->bodies_max says otherwise: a body past that budget is read and
 * dropped, and answered 503 (busy, retry), so that many connections each
 * sending a large body cannot take the memory. */
#define HTTP_SERVE_BODIES_DEFAULT 4u
/* How far past body_max a refused body is read (and dropped) to send its
 * 413 after it; beyond, the connection is closed (see POST routes above). */
#define HTTP_SERVE_DISCARD_MAX (1024u * 1024u)
#define HTTP_SERVE_POST_ROUTES_MAX 16u
#define HTTP_SERVE_LATENCY_SERIES_MAX 64u
/* TLS: versions and ciphers (a GnuTLS priority string), the largest file
 * read, the longest certificate chain, and when a reload happens. TLS 1.2
 * offers only AEAD ciphers (AES-GCM, ChaCha20-Poly1305) with ECDHE key
 * exchange: no CBC with SHA-1/SHA-2 MACs, no static RSA key exchange (what
 * Go's and curl's clients, the apiserver's and Prometheus's, offer first
 * anyway); TLS 1.3's suites are all AEAD. Key exchange groups X25519 first:
 * Go's client sends an X25519 key share only, and with the server's
 * precedence on NORMAL's order (P-256 first) every handshake of the
 * apiserver's took a HelloRetryRequest and one more round trip. */
#define HTTP_SERVE_TLS_PRIORITIES                                                                            \
	"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"                  \
	"+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-GROUP-ALL:+GROUP-X25519:"        \
	"+GROUP-SECP256R1:+GROUP-SECP384R1:%SERVER_PRECEDENCE"
#define HTTP_SERVE_TLS_FILE_MAX (1024u * 1024u)
#define HTTP_SERVE_TLS_CHAIN_MAX 16u
#define HTTP_SERVE_TLS_DEBOUNCE_MS 100u
#define HTTP_SERVE_TLS_RECHECK_SECONDS 60u
/* tls-certificate-expiring is logged (daily) when fewer days than this
 * remain; muster_tls_certificate_expiry_timestamp_seconds always says when. */
#define HTTP_SERVE_TLS_EXPIRY_WARN_DAYS 30u

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
 * nothing is resolved. Returns 0, or MUSTER_EINVAL with *cause set to a static
 * sentence. */
int http_serve_parse_listen(const char *listen, struct http_serve_addr *out, const char **cause);

struct http_serve;

/* Parses `listen`, binds it and serves `routes` (copied). Returns 0 and
 * *out, or a negative code of lib/base/errors.h (MUSTER_EINVAL bad address;
 * MUSTER_ENOMEM; MUSTER_EIO when the bind fails, its errno in the cause,
 * e.g. "Address already in use", or libmicrohttpd fails to start) with
 * *out NULL and *cause a malloc'd sentence the caller frees. */
int http_serve_start(const char *listen, const struct http_serve_routes *routes, struct http_serve **out,
		     char **cause);

/* What a POST handler answers. result labels the request in the latency
 * histogram (e.g. "allowed", "denied", "patched", "bad_request", "error");
 * NULL is "ok" for a status below 400, else "error". Like content_type, it is
 * a static string: the server keeps the pointer. */
struct http_serve_reply {
	unsigned status; /* HTTP status code, 200 to 599 (else the client gets 500) */
	const char *content_type; /* NULL: "text/plain; charset=utf-8" */
	char *body; /* malloc'd by the handler; the server frees it (may be NULL) */
	size_t body_len;
	const char *result;
};

/* Handles one POST: called from a server thread, possibly concurrently, with
 * the complete request body (body_len <= options->body_max; body[body_len] is
 * a NUL, for convenience; an empty body is ""). The reply starts zeroed. */
typedef void (*http_serve_post_fn)(void *arg, const char *body, size_t body_len,
				   struct http_serve_reply *reply);

struct http_serve_post_route {
	const char *path; /* exact path, e.g. "/mutate"; not one of the GET routes' */
	const char *name; /* value of the metric's route label, e.g. "mutate" */
	http_serve_post_fn handle;
	void *arg;
};

struct http_serve_options {
	/* Both set: HTTPS (PEM chain, leaf first, and PEM key), reloaded when
	 * the files change; both NULL: plain HTTP; only one: MUSTER_EINVAL. */
	const char *tls_cert_file;
	const char *tls_key_file;
	unsigned threads; /* 0: a thread per connection; N > 0: a pool of N threads */
	unsigned connections_max; /* 0: HTTP_SERVE_CONNECTIONS_MAX; at least threads */
	unsigned idle_seconds; /* 0: HTTP_SERVE_IDLE_SECONDS */
	unsigned body_seconds; /* 0: HTTP_SERVE_BODY_SECONDS */
	unsigned header_seconds; /* 0: HTTP_SERVE_HEADER_SECONDS */
	unsigned head_seconds; /* 0: HTTP_SERVE_HEAD_SECONDS */
	size_t body_max; /* largest POST body accepted; 0: HTTP_SERVE_BODY_MAX_DEFAULT */
	/* bytes of POST bodies all connections may hold at once (at least
	 * body_max + 1); 0: HTTP_SERVE_BODIES_DEFAULT bodies of body_max */
	size_t bodies_max;
	const struct http_serve_post_route *posts; /* copied; at most HTTP_SERVE_POST_ROUTES_MAX */
	size_t post_count;
	/* Non-NULL: the request latency histogram and the TLS reload counters
	 * go here (see the top of this file). */
	struct metrics_registry *latency;
	/* Non-NULL: called with each tls-certificate-expiring warning (at a
	 * pair's load, then at most once a day, while fewer than
	 * HTTP_SERVE_TLS_EXPIRY_WARN_DAYS remain), from the server's start or
	 * its certificate watcher thread: e.g. to post an Event. */
	void (*expiring)(void *arg, const char *subject, const char *not_after, long long days_left);
	void *expiring_arg;
};

/* Like http_serve_start(), with the webhook's additions: POST routes, TLS,
 * a thread pool, other bounds and latency metrics. options NULL is
 * http_serve_start(). Returns 0 and *out, or a negative code of lib/base/errors.h with *out
 * NULL and *cause a malloc'd sentence the caller frees: besides
 * http_serve_start()'s, MUSTER_EINVAL for bad options (one TLS file, a bound out of
 * range, a POST route without path, name or handler, or twice), -ENOENT,
 * -EACCES... when a TLS file cannot be read, MUSTER_EINVAL when it does not parse or
 * the key does not match the certificate (the cause names the file),
 * MUSTER_ECONFIG when libmicrohttpd lacks TLS. */
int http_serve_start_options(const char *listen, const struct http_serve_routes *routes,
			     const struct http_serve_options *options, struct http_serve **out, char **cause);

/* The port actually bound (the one the kernel chose for port 0). */
uint16_t http_serve_port(const struct http_serve *server);

/* Stops serving and frees the server. A client that is still connected is
 * disconnected; a check, a render or a POST handler under way is waited
 * for. */
void http_serve_stop(struct http_serve *server);

#endif
