/*
 * http_serve: the HTTP server's front: listen addresses, causes and logging,
 * request latency, responses, the GET routes, the dispatch of each request
 * and the lifecycle (options, start, stop), on libmicrohttpd. See
 * http_serve.h for the contract, and http_serve_int.h for the other files
 * of the server: the POST routes and their bodies (http_post.c), connections
 * and their deadlines (http_conn.c), TLS and its reloads (http_tls.c), which
 * this file does not hold.
 *
 * The listening socket is made here rather than by libmicrohttpd so that a
 * failed bind reports its errno ("Address already in use") and the bound port
 * is known at once; it is non-blocking, so a connection reset between poll()
 * and accept() cannot block the listener thread (and with it the stop). Once
 * passed to MHD_start_daemon() the socket belongs to libmicrohttpd, which
 * closes it when it stops and also when it fails to start.
 */
#define _POSIX_C_SOURCE 200809L
#include "http_serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_serve_int.h"
#include "cause.h"
#include "mlog.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Connections the kernel completes before they are accepted. A flood of
 * connections fills a short queue between two accepts, and a SYN that finds
 * it full is dropped and sent again only a second later: 64 made a
 * legitimate client wait 1 s now and then while hostile ones were reopened
 * by the thousand (the kernel caps it at net.core.somaxconn). */
#define LISTEN_BACKLOG 1024
#define LOG_WINDOW_SECONDS 60

/* Histogram bounds of muster_http_request_duration_seconds: an admission
 * review is answered in well under a millisecond, a render in more. */
static const double latency_bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					 0.05,	 0.1,	  0.25,	  0.5,	 1,	 2.5,	5,    10 };

/* ---- listen addresses ---- */

static int parse_port(const char *text, uint16_t *port)
{
	unsigned long value = 0;
	size_t i;

	for (i = 0; text[i]; i++) {
		if (text[i] < '0' || text[i] > '9' || i == 5)
			return -1;
		value = value * 10 + (unsigned long)(text[i] - '0');
	}
	if (i == 0 || value > 65535)
		return -1;
	*port = (uint16_t)value;
	return 0;
}

int http_serve_parse_listen(const char *listen, struct http_serve_addr *out, const char **cause)
{
	char host[INET6_ADDRSTRLEN];
	const char *host_start, *port_text;
	size_t host_len;
	uint16_t port;
	int six;

	memset(out, 0, sizeof(*out));
	if (!listen || !listen[0]) {
		*cause = "empty (expected [ADDRESS:]PORT)";
		return MUSTER_EINVAL;
	}
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close[1] != ':') {
			*cause = "an IPv6 address must be written [ADDRESS]:PORT";
			return MUSTER_EINVAL;
		}
		host_start = listen + 1;
		host_len = (size_t)(close - host_start);
		port_text = close + 2;
		six = 1;
	} else {
		const char *colon = strrchr(listen, ':');

		host_start = listen;
		host_len = colon ? (size_t)(colon - listen) : 0;
		port_text = colon ? colon + 1 : listen;
		if (memchr(listen, ':', host_len)) {
			*cause = "an IPv6 address must be written [ADDRESS]:PORT";
			return MUSTER_EINVAL;
		}
		six = 0;
	}
	if (parse_port(port_text, &port) != 0) {
		*cause = "port is not a number from 0 to 65535";
		return MUSTER_EINVAL;
	}
	if (host_len >= sizeof(host)) {
		*cause = "address is too long";
		return MUSTER_EINVAL;
	}
	memcpy(host, host_start, host_len);
	host[host_len] = '\0';
	if (six) {
		struct sockaddr_in6 address = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

		if (inet_pton(AF_INET6, host, &address.sin6_addr) != 1) {
			*cause = "not an IPv6 address";
			return MUSTER_EINVAL;
		}
		memcpy(&out->addr, &address, sizeof(address));
		out->addr_len = sizeof(address);
	} else {
		struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };

		if (inet_pton(AF_INET, host_len ? host : HTTP_SERVE_DEFAULT_ADDRESS, &address.sin_addr) !=
		    1) {
			*cause =
				"not an IPv4 address (IPv6 is written [ADDRESS]:PORT; host names are not resolved)";
			return MUSTER_EINVAL;
		}
		memcpy(&out->addr, &address, sizeof(address));
		out->addr_len = sizeof(address);
	}
	return 0;
}

/* "1.2.3.4:80" or "[::1]:80", and the port. */
static uint16_t format_address(const struct sockaddr_storage *storage, char *out, size_t out_size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;

	if (storage->ss_family == AF_INET6) {
		struct sockaddr_in6 address;

		memcpy(&address, storage, sizeof(address));
		inet_ntop(AF_INET6, &address.sin6_addr, host, sizeof(host));
		port = ntohs(address.sin6_port);
		snprintf(out, out_size, "[%s]:%u", host, port);
	} else {
		struct sockaddr_in address;

		memcpy(&address, storage, sizeof(address));
		inet_ntop(AF_INET, &address.sin_addr, host, sizeof(host));
		port = ntohs(address.sin_port);
		snprintf(out, out_size, "%s:%u", host, port);
	}
	return port;
}

/* ---- causes and logging ---- */

const char *http_error_text(int errnum, char *buf, size_t size)
{
	if (strerror_r(errnum, buf, size) != 0)
		snprintf(buf, size, "error %d", errnum);
	return buf;
}

const char *http_quote_cause(char *out, size_t out_size, const char *cause)
{
	const char *why = cause ? cause : "out of memory";

	return mlog_quote(out, out_size, why, strlen(why));
}

/* Bytes of text before its first control character, at most max. */
static size_t one_line_length(const char *text, size_t max)
{
	size_t len = 0;

	while (len < max && text[len] && (unsigned char)text[len] >= 0x20 && text[len] != 0x7f)
		len++;
	return len;
}

/* libmicrohttpd's messages (failed sends, connection limit reached...): one
 * warn line each, at most HTTP_SERVE_LOG_BURST per LOG_WINDOW_SECONDS, the
 * number dropped reported with the next window's first line. */
static void on_library_message(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void on_library_message(void *cls, const char *fmt, va_list ap)
{
	struct http_serve *server = cls;
	char message[512], quoted[600];
	unsigned long dropped = 0;
	struct timespec now;
	int keep;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&server->log_lock);
	if (now.tv_sec - server->log_window >= LOG_WINDOW_SECONDS) {
		if (server->log_count > HTTP_SERVE_LOG_BURST)
			dropped = server->log_count - HTTP_SERVE_LOG_BURST;
		server->log_window = now.tv_sec;
		server->log_count = 0;
	}
	keep = server->log_count++ < HTTP_SERVE_LOG_BURST;
	pthread_mutex_unlock(&server->log_lock);
	if (!keep)
		return;
	vsnprintf(message, sizeof(message), fmt, ap);
	mlog_quote(quoted, sizeof(quoted), message, one_line_length(message, sizeof(message)));
	if (dropped)
		mlog(MLOG_WARN, "http-library", "listen=%s message=%s dropped=%lu", server->address, quoted,
		     dropped);
	else
		mlog(MLOG_WARN, "http-library", "listen=%s message=%s", server->address, quoted);
}

/* ---- latency ---- */

static double seconds_since(const struct timespec *begin)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - begin->tv_sec) + (double)(now.tv_nsec - begin->tv_nsec) / 1e9;
}

void http_observe_latency(struct http_serve *server, const char *route, const char *result,
			  const struct timespec *begin)
{
	struct metrics_histogram *histogram = NULL;
	size_t i;

	if (!server->latency)
		return;
	pthread_mutex_lock(&server->latency_lock);
	for (i = 0; i < server->latency_count; i++) {
		if (strcmp(server->latency_series[i].route, route) == 0 &&
		    strcmp(server->latency_series[i].result, result) == 0)
			break;
	}
	if (i < server->latency_count) {
		histogram = server->latency_series[i].histogram;
	} else if (i < HTTP_SERVE_LATENCY_SERIES_MAX) {
		const struct metrics_label labels[] = { { "route", route }, { "result", result } };
		char *cause = NULL, quoted[300];
		int err;

		err = metrics_histogram_register(
			server->latency, "muster_http_request_duration_seconds",
			"Time from a request's headers to its reply, by route and result.", labels, 2,
			latency_bounds, sizeof(latency_bounds) / sizeof(latency_bounds[0]), &histogram,
			&cause);
		if (err) {
			mlog(MLOG_WARN, "http-metric-failed", "listen=%s route=%s result=%s err=%d cause=%s",
			     server->address, route, result, err,
			     http_quote_cause(quoted, sizeof(quoted), cause));
			free(cause);
		}
		/* Kept also when it failed, so that the failure is logged once. */
		server->latency_series[i] = (struct latency_series){ route, result, histogram };
		server->latency_count++;
	} else if (!server->latency_full) {
		server->latency_full = 1;
		mlog(MLOG_WARN, "http-metric-failed",
		     "listen=%s route=%s result=%s cause=\"more than %u series\"", server->address, route,
		     result, HTTP_SERVE_LATENCY_SERIES_MAX);
	}
	pthread_mutex_unlock(&server->latency_lock);
	metrics_histogram_observe(histogram, seconds_since(begin));
}

/* ---- responses ---- */

enum MHD_Result http_reply(struct MHD_Connection *connection, unsigned status, const char *content_type,
			   char *body, size_t len, int must_free, const char *allow)
{
	struct MHD_Response *response;
	enum MHD_Result result = MHD_NO;

	if (!body) {
		body = (char *)"";
		len = 0;
		must_free = 0;
	}
	response = MHD_create_response_from_buffer(len, body,
						   must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	if (!response) {
		if (must_free)
			free(body);
		return MHD_NO;
	}
	if (MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) == MHD_YES &&
	    (!allow || MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow) == MHD_YES))
		result = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return result;
}

enum MHD_Result http_reply_text(struct MHD_Connection *connection, unsigned status, const char *text)
{
	return http_reply(connection, status, TEXT_CONTENT_TYPE, (char *)text, strlen(text), 0, NULL);
}

enum MHD_Result http_reply_not_allowed(struct MHD_Connection *connection, const char *allow)
{
	return http_reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_CONTENT_TYPE,
			  (char *)"method not allowed\n", 19, 0, allow);
}

/* 200 "ok\n", or 503 with the check's reason (or `failed`) on one line. */
static enum MHD_Result serve_check(struct http_serve *server, struct MHD_Connection *connection,
				   http_serve_check_fn check, const char *failed, const char **result)
{
	char reason[HTTP_SERVE_REASON_MAX], body[HTTP_SERVE_REASON_MAX + 1];
	size_t len;

	reason[0] = '\0';
	if (!check || check(server->routes.arg, reason, sizeof(reason)) == 0) {
		*result = "ok";
		return http_reply_text(connection, MHD_HTTP_OK, "ok\n");
	}
	*result = "failed";
	len = one_line_length(reason, sizeof(reason) - 1);
	snprintf(body, sizeof(body), "%.*s\n", (int)(len ? len : strlen(failed)), len ? reason : failed);
	return http_reply_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, body);
}

static enum MHD_Result serve_healthz(struct http_serve *server, struct MHD_Connection *connection,
				     const char **result)
{
	return serve_check(server, connection, server->routes.healthy, "unhealthy", result);
}

static enum MHD_Result serve_readyz(struct http_serve *server, struct MHD_Connection *connection,
				    const char **result)
{
	return serve_check(server, connection, server->routes.ready, "not ready", result);
}

static enum MHD_Result serve_metrics(struct http_serve *server, struct MHD_Connection *connection,
				     const char **result)
{
	char *text = NULL, *cause = NULL, quoted[300], body[300];
	const char *why;
	size_t len = 0, why_len;
	int err;

	if (!server->routes.metrics) {
		*result = "not_found";
		return http_reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
	}
	pthread_mutex_lock(&server->render_lock);
	err = metrics_render(server->routes.metrics, &text, &len, &cause);
	pthread_mutex_unlock(&server->render_lock);
	if (!err) {
		*result = "ok";
		return http_reply(connection, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, 1, NULL);
	}

	*result = "error";
	why = cause ? cause : "out of memory";
	why_len = one_line_length(why, 256);
	mlog_quote(quoted, sizeof(quoted), why, why_len);
	mlog(MLOG_WARN, "metrics-render-failed", "listen=%s err=%d cause=%s", server->address, err, quoted);
	snprintf(body, sizeof(body), "metrics unavailable: %.*s\n", (int)why_len, why);
	free(cause);
	return http_reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
}

/* The GET routes. Every path takes GET and HEAD (libmicrohttpd drops the body
 * of a HEAD response); name is the metric's route label. */
static const struct route {
	const char *path;
	const char *name;
	enum MHD_Result (*serve)(struct http_serve *server, struct MHD_Connection *connection,
				 const char **result);
} route_table[] = {
	{ "/metrics", "metrics", serve_metrics },
	{ "/healthz", "healthz", serve_healthz },
	{ "/readyz", "readyz", serve_readyz },
};

static void on_request_completed(void *cls, struct MHD_Connection *connection, void **request_state,
				 enum MHD_RequestTerminationCode code)
{
	struct request *request = *request_state;

	(void)code;
	http_conn_phase(cls, connection, CONN_IDLE); /* kept alive: the next request line's deadline */
	http_post_free(cls, request);
	*request_state = NULL;
}

/* Called once per GET route request, before any body is read: the answer
 * never depends on a body, so a body is never read (libmicrohttpd discards
 * it). A POST route's request is called again for each part of its body,
 * then once more when the body is complete. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **request_state)
{
	struct http_serve *server = cls;
	struct request *request = *request_state;
	struct timespec begin;
	enum MHD_Result result;
	const char *label = "ok";

	(void)version;
	/* Closes the connection. Besides sparing the owner calls while it shuts
	 * down, this matters because libmicrohttpd 0.9.75 calls the handler a
	 * second time for a request whose socket the stop shut down while the
	 * first call ran, which would run a slow check twice. */
	if (atomic_load(&server->stopping))
		return MHD_NO;
	if (request) {
		if (*upload_data_size)
			return http_post_data(server, request, upload_data, upload_data_size);
		http_conn_phase(server, connection, CONN_ANSWERING);
		return http_post_end(server, connection, request);
	}
	clock_gettime(CLOCK_MONOTONIC, &begin);
	for (size_t i = 0; i < server->post_count; i++) {
		if (strcmp(url, server->posts[i].path) == 0) {
			http_conn_phase(server, connection, CONN_BODY);
			return http_post_begin(server, connection, &server->posts[i], method, &begin,
					       request_state);
		}
	}
	http_conn_phase(server, connection, CONN_ANSWERING);
	for (size_t i = 0; i < sizeof(route_table) / sizeof(route_table[0]); i++) {
		if (strcmp(url, route_table[i].path) != 0)
			continue;
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
			label = "method_not_allowed";
			result = http_reply_not_allowed(connection, "GET, HEAD");
		} else {
			result = route_table[i].serve(server, connection, &label);
		}
		http_observe_latency(server, route_table[i].name, label, &begin);
		return result;
	}
	return http_reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* ---- lifecycle ---- */

/* Refuses options out of range, with the reason. */
static int check_options(const struct http_serve_options *options, char **cause)
{
	unsigned connections_max =
		options->connections_max ? options->connections_max : HTTP_SERVE_CONNECTIONS_MAX;

	if (!options->tls_cert_file != !options->tls_key_file)
		return cause_err(cause, MUSTER_EINVAL,
				 "TLS needs both a certificate file and a key file (%s given alone)",
				 options->tls_cert_file ? "certificate" : "key");
	if (options->tls_cert_file && (!options->tls_cert_file[0] || !options->tls_key_file[0]))
		return cause_err(cause, MUSTER_EINVAL, "TLS file name is empty");
	if (options->threads > HTTP_SERVE_THREADS_MAX)
		return cause_err(cause, MUSTER_EINVAL, "threads %u exceeds %u", options->threads,
				 HTTP_SERVE_THREADS_MAX);
	if (connections_max > HTTP_SERVE_CONNECTIONS_LIMIT)
		return cause_err(cause, MUSTER_EINVAL, "connections_max %u exceeds %u", connections_max,
				 HTTP_SERVE_CONNECTIONS_LIMIT);
	/* libmicrohttpd shares the connections among the pool's threads. */
	if (options->threads > connections_max)
		return cause_err(cause, MUSTER_EINVAL, "threads %u exceeds connections_max %u",
				 options->threads, connections_max);
	if (options->idle_seconds > HTTP_SERVE_IDLE_SECONDS_MAX)
		return cause_err(cause, MUSTER_EINVAL, "idle_seconds %u exceeds %u", options->idle_seconds,
				 HTTP_SERVE_IDLE_SECONDS_MAX);
	if (options->body_seconds > HTTP_SERVE_BODY_SECONDS_MAX)
		return cause_err(cause, MUSTER_EINVAL, "body_seconds %u exceeds %u", options->body_seconds,
				 HTTP_SERVE_BODY_SECONDS_MAX);
	if (options->head_seconds > HTTP_SERVE_BODY_SECONDS_MAX)
		return cause_err(cause, MUSTER_EINVAL, "head_seconds %u exceeds %u", options->head_seconds,
				 HTTP_SERVE_BODY_SECONDS_MAX);
	if (options->header_seconds > HTTP_SERVE_BODY_SECONDS_MAX)
		return cause_err(cause, MUSTER_EINVAL, "header_seconds %u exceeds %u",
				 options->header_seconds, HTTP_SERVE_BODY_SECONDS_MAX);
	if (options->bodies_max &&
	    options->bodies_max < (options->body_max ? options->body_max : HTTP_SERVE_BODY_MAX_DEFAULT) + 1)
		return cause_err(cause, MUSTER_EINVAL, "bodies_max %zu is below body_max + 1",
				 options->bodies_max);
	if (options->body_max > HTTP_SERVE_BODY_MAX_LIMIT)
		return cause_err(cause, MUSTER_EINVAL, "body_max %zu exceeds %u", options->body_max,
				 HTTP_SERVE_BODY_MAX_LIMIT);
	if (options->post_count > HTTP_SERVE_POST_ROUTES_MAX || (options->post_count && !options->posts))
		return cause_err(cause, MUSTER_EINVAL, "at most %u POST routes", HTTP_SERVE_POST_ROUTES_MAX);
	for (size_t i = 0; i < options->post_count; i++) {
		const struct http_serve_post_route *post = &options->posts[i];

		if (!post->path || post->path[0] != '/' || !post->name || !post->name[0] || !post->handle)
			return cause_err(
				cause, MUSTER_EINVAL,
				"POST route %zu needs a path starting with '/', a name and a handler", i);
		for (size_t j = 0; j < sizeof(route_table) / sizeof(route_table[0]); j++) {
			if (strcmp(post->path, route_table[j].path) == 0)
				return cause_err(cause, MUSTER_EINVAL, "POST route %s is a GET route",
						 route_table[j].path);
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(post->path, options->posts[j].path) == 0)
				return cause_err(cause, MUSTER_EINVAL,
						 "POST route %zu repeats an earlier path", i);
		}
	}
	return 0;
}

/* Frees what server holds; stops the daemon and the watcher if running. */
static void server_free(struct http_serve *server)
{
	if (!server)
		return;
	http_conn_sweeper_stop(server); /* before the daemon, whose connections it reads */
	if (server->daemon)
		MHD_stop_daemon(server->daemon);
	http_conn_free_left(server);
	if (server->tls_on)
		http_tls_teardown(server);
	if (server->locks > 5)
		pthread_cond_destroy(&server->sweeper_wake);
	if (server->locks > 4)
		pthread_mutex_destroy(&server->conns_lock);
	if (server->locks > 3)
		pthread_mutex_destroy(&server->bodies_lock);
	if (server->locks > 2)
		pthread_mutex_destroy(&server->latency_lock);
	if (server->locks > 1)
		pthread_mutex_destroy(&server->log_lock);
	if (server->locks > 0)
		pthread_mutex_destroy(&server->render_lock);
	free(server);
}

static int server_new(const struct http_serve_routes *routes, const struct http_serve_options *options,
		      struct http_serve **out)
{
	struct http_serve *server = calloc(1, sizeof(*server));
	struct timespec now;

	*out = NULL;
	if (!server)
		return MUSTER_ENOMEM;
	if (pthread_mutex_init(&server->render_lock, NULL) != 0)
		goto fail;
	server->locks++;
	if (pthread_mutex_init(&server->log_lock, NULL) != 0)
		goto fail;
	server->locks++;
	if (pthread_mutex_init(&server->latency_lock, NULL) != 0)
		goto fail;
	server->locks++;
	if (pthread_mutex_init(&server->bodies_lock, NULL) != 0)
		goto fail;
	server->locks++;
	if (pthread_mutex_init(&server->conns_lock, NULL) != 0)
		goto fail;
	server->locks++;
	if (pthread_cond_init(&server->sweeper_wake, NULL) != 0)
		goto fail;
	server->locks++;
	if (routes)
		server->routes = *routes;
	if (options->post_count)
		memcpy(server->posts, options->posts, options->post_count * sizeof(server->posts[0]));
	server->post_count = options->post_count;
	server->body_max = options->body_max ? options->body_max : HTTP_SERVE_BODY_MAX_DEFAULT;
	server->bodies_max = options->bodies_max ? options->bodies_max
						 : server->body_max * HTTP_SERVE_BODIES_DEFAULT +
							   HTTP_SERVE_BODIES_DEFAULT;
	server->threads = options->threads;
	server->connections_max =
		options->connections_max ? options->connections_max : HTTP_SERVE_CONNECTIONS_MAX;
	server->idle_seconds = options->idle_seconds ? options->idle_seconds : HTTP_SERVE_IDLE_SECONDS;
	server->body_seconds = options->body_seconds ? options->body_seconds : HTTP_SERVE_BODY_SECONDS;
	server->header_seconds =
		options->header_seconds ? options->header_seconds : HTTP_SERVE_HEADER_SECONDS;
	server->head_seconds = options->head_seconds ? options->head_seconds : HTTP_SERVE_HEAD_SECONDS;
	server->evict_at = http_conn_evict_threshold(server->connections_max);
	server->latency = options->latency;
	server->tls_on = options->tls_cert_file != NULL;
	server->tls.inotify_fd = server->tls.wake_fd = -1;
	server->tls.expiring = options->expiring;
	server->tls.expiring_arg = options->expiring_arg;
	server->tls.watches[0] = server->tls.watches[1] = -1;
	atomic_init(&server->stopping, 0);
	clock_gettime(CLOCK_MONOTONIC, &now);
	server->log_window = now.tv_sec;
	*out = server;
	return 0;

fail:
	server_free(server);
	return MUSTER_ENOMEM;
}

/* A listening, non-blocking socket on addr; its bound address in
 * server->address and server->port. Returns the descriptor or MUSTER_EIO with
 * *cause (the errno in its sentence). */
static int listen_socket(struct http_serve *server, const struct http_serve_addr *addr, char **cause)
{
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	char error[128], wanted[sizeof(server->address)];
	int fd, err, one = 1;

	format_address(&addr->addr, wanted, sizeof(wanted));
	fd = socket(addr->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = errno;
		return cause_err(cause, MUSTER_EIO, "cannot make a socket for %s: %s", wanted,
				 http_error_text(err, error, sizeof(error)));
	}
	/* Lets a restarted controller bind while old connections linger in
	 * TIME_WAIT; a port another socket listens on is still refused. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (const struct sockaddr *)&addr->addr, addr->addr_len) != 0 ||
	    listen(fd, LISTEN_BACKLOG) != 0 || getsockname(fd, (struct sockaddr *)&bound, &bound_len) != 0) {
		err = errno;
		close(fd);
		return cause_err(cause, MUSTER_EIO, "cannot listen on %s: %s", wanted,
				 http_error_text(err, error, sizeof(error)));
	}
	server->port = format_address(&bound, server->address, sizeof(server->address));
	return fd;
}

/* Starts libmicrohttpd on fd (which it owns from here, also on failure). */
static int daemon_start(struct http_serve *server, int fd, char **cause)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem extra[7];
	size_t n = 0;

	/* A thread per connection polls its one socket; a pool's threads each
	 * poll() their share of the connections. Not epoll: libmicrohttpd
	 * 0.9.75's epoll loop retries a TLS handshake that waits for its client
	 * without waiting itself, so a thread spun a whole core for as long as
	 * a client took to answer (or for idle_seconds, after 5 bytes of a
	 * record): 3 ms of CPU a connection from a local curl, and most of the
	 * webhook's CPU when a busy apiserver opened connections to it. */
	flags |= MHD_USE_POLL;
	if (server->threads == 0)
		flags |= MHD_USE_THREAD_PER_CONNECTION;
	if (server->threads > 1)
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)server->threads,
						      NULL };
	if (server->tls_on) {
		flags |= MHD_USE_TLS;
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						      (void *)HTTP_SERVE_TLS_PRIORITIES };
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
						      (void *)http_tls_certificate };
	}
	extra[n++] =
		(struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)http_conn_notify, server };
	extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)http_conn_request_line,
					      server };
	extra[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	/* The logger comes first so that start-up messages reach it too. */
	server->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, server, MHD_OPTION_EXTERNAL_LOGGER, on_library_message,
		server, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
		http_conn_mhd_limit(server), MHD_OPTION_CONNECTION_TIMEOUT, server->idle_seconds,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_SERVE_CONNECTION_MEMORY,
		MHD_OPTION_NOTIFY_COMPLETED, on_request_completed, server, MHD_OPTION_ARRAY, extra,
		MHD_OPTION_END);
	if (!server->daemon) {
		/* libmicrohttpd closed fd; its http-library lines say why. */
		return cause_err(cause, MUSTER_EIO, "libmicrohttpd could not start serving %s",
				 server->address);
	}
	return http_conn_sweeper_start(server, cause);
}

int http_serve_start_options(const char *listen, const struct http_serve_routes *routes,
			     const struct http_serve_options *options, struct http_serve **out, char **cause)
{
	static const struct http_serve_options defaults = { 0 };
	struct http_serve_addr addr;
	struct http_serve *server = NULL;
	const char *problem = NULL;
	char quoted[96], threads[32], tls_text[400] = "tls=off";
	int fd, err;

	*out = NULL;
	if (!options)
		options = &defaults;
	if (http_serve_parse_listen(listen, &addr, &problem) != 0) {
		mlog_quote(quoted, sizeof(quoted), listen ? listen : "", listen ? strlen(listen) : 0);
		return cause_err(cause, MUSTER_EINVAL, "listen address %s: %s", quoted, problem);
	}
	err = check_options(options, cause);
	if (err)
		return err;
	err = server_new(routes, options, &server);
	if (err)
		return cause_err(cause, err, "out of memory");
	fd = listen_socket(server, &addr, cause);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	http_conn_fit_descriptors(server);
	if (server->tls_on) {
		err = http_tls_setup(server, options, cause);
		if (err) {
			close(fd);
			goto out;
		}
	}
	err = daemon_start(server, fd, cause);
	if (err)
		goto out;
	if (server->tls_on) {
		/* Read while the watcher, which may replace the pair, is not
		 * running yet. */
		snprintf(tls_text, sizeof(tls_text), "tls=on subject=%s not_after=%s",
			 server->tls.current->subject, server->tls.current->not_after);
		/* Before the watcher, which counts with them. Should the thread
		 * not start, they stay in the registry at zero: a registry has no
		 * way to take a series back. */
		http_tls_counters(server);
		http_tls_expiry_check(server, 1);
		err = http_tls_watch_start(server, cause);
		if (err)
			goto out;
	}
	if (server->threads)
		snprintf(threads, sizeof(threads), "%u", server->threads);
	else
		snprintf(threads, sizeof(threads), "per-connection");
	mlog(MLOG_INFO, "http-started",
	     "listen=%s threads=%s connections_max=%u evict_at=%u head_seconds=%u idle_seconds=%u body_seconds=%u "
	     "body_max=%zu bodies_max=%zu posts=%zu %s",
	     server->address, threads, server->connections_max, server->evict_at, server->head_seconds,
	     server->idle_seconds, server->body_seconds, server->body_max, server->bodies_max,
	     server->post_count, tls_text);
	*out = server;
	server = NULL;
out:
	server_free(server);
	return err;
}

int http_serve_start(const char *listen, const struct http_serve_routes *routes, struct http_serve **out,
		     char **cause)
{
	return http_serve_start_options(listen, routes, NULL, out, cause);
}

uint16_t http_serve_port(const struct http_serve *server)
{
	return server ? server->port : 0;
}

void http_serve_stop(struct http_serve *server)
{
	char address[sizeof(server->address)];

	if (!server)
		return;
	atomic_store(&server->stopping, 1);
	memcpy(address, server->address, sizeof(address));
	server_free(server);
	mlog(MLOG_INFO, "http-stopped", "listen=%s", address);
}
