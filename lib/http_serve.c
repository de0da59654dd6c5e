/*
 * http_serve: /metrics, /healthz and /readyz on libmicrohttpd. See
 * http_serve.h for the contract.
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

#include "mlog.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CONTENT_TYPE "text/plain; charset=utf-8"
#define LISTEN_BACKLOG 64
#define LOG_WINDOW_SECONDS 60

struct http_serve {
	struct MHD_Daemon *daemon;
	struct http_serve_routes routes;
	atomic_int stopping; /* set when the stop begins: no new check or render */
	pthread_mutex_t render_lock; /* one render at a time bounds the memory */
	pthread_mutex_t log_lock; /* log_window, log_count */
	time_t log_window; /* start of the current window of library messages */
	unsigned long log_count; /* library messages in it */
	char address[INET6_ADDRSTRLEN + 8]; /* bound address, "[::1]:8080", for the log */
	uint16_t port;
};

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
		return -EINVAL;
	}
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close[1] != ':') {
			*cause = "an IPv6 address must be written [ADDRESS]:PORT";
			return -EINVAL;
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
			return -EINVAL;
		}
		six = 0;
	}
	if (parse_port(port_text, &port) != 0) {
		*cause = "port is not a number from 0 to 65535";
		return -EINVAL;
	}
	if (host_len >= sizeof(host)) {
		*cause = "address is too long";
		return -EINVAL;
	}
	memcpy(host, host_start, host_len);
	host[host_len] = '\0';
	if (six) {
		struct sockaddr_in6 address = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

		if (inet_pton(AF_INET6, host, &address.sin6_addr) != 1) {
			*cause = "not an IPv6 address";
			return -EINVAL;
		}
		memcpy(&out->addr, &address, sizeof(address));
		out->addr_len = sizeof(address);
	} else {
		struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };

		if (inet_pton(AF_INET, host_len ? host : HTTP_SERVE_DEFAULT_ADDRESS, &address.sin_addr) !=
		    1) {
			*cause =
				"not an IPv4 address (IPv6 is written [ADDRESS]:PORT; host names are not resolved)";
			return -EINVAL;
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

static int set_cause(char **cause, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int set_cause(char **cause, int err, const char *fmt, ...)
{
	va_list ap, copy;
	int n;

	if (!cause || *cause)
		return err;
	va_start(ap, fmt);
	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n >= 0 && (*cause = malloc((size_t)n + 1)) != NULL)
		vsnprintf(*cause, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return err;
}

static const char *error_text(int errnum, char *buf, size_t size)
{
	if (strerror_r(errnum, buf, size) != 0)
		snprintf(buf, size, "error %d", errnum);
	return buf;
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

/* ---- responses ---- */

/* Queues a response. body is copied, or with must_free handed over (and
 * freed here if the response cannot be made). */
static enum MHD_Result reply(struct MHD_Connection *connection, unsigned status, const char *content_type,
			     char *body, size_t len, int must_free, const char *allow)
{
	struct MHD_Response *response;
	enum MHD_Result result = MHD_NO;

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

static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned status, const char *text)
{
	return reply(connection, status, TEXT_CONTENT_TYPE, (char *)text, strlen(text), 0, NULL);
}

/* 200 "ok\n", or 503 with the check's reason (or `failed`) on one line. */
static enum MHD_Result serve_check(struct http_serve *server, struct MHD_Connection *connection,
				   http_serve_check_fn check, const char *failed)
{
	char reason[HTTP_SERVE_REASON_MAX], body[HTTP_SERVE_REASON_MAX + 1];
	size_t len;

	reason[0] = '\0';
	if (!check || check(server->routes.arg, reason, sizeof(reason)) == 0)
		return reply_text(connection, MHD_HTTP_OK, "ok\n");
	len = one_line_length(reason, sizeof(reason) - 1);
	snprintf(body, sizeof(body), "%.*s\n", (int)(len ? len : strlen(failed)), len ? reason : failed);
	return reply_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, body);
}

static enum MHD_Result serve_healthz(struct http_serve *server, struct MHD_Connection *connection)
{
	return serve_check(server, connection, server->routes.healthy, "unhealthy");
}

static enum MHD_Result serve_readyz(struct http_serve *server, struct MHD_Connection *connection)
{
	return serve_check(server, connection, server->routes.ready, "not ready");
}

static enum MHD_Result serve_metrics(struct http_serve *server, struct MHD_Connection *connection)
{
	char *text = NULL, *cause = NULL, quoted[300], body[300];
	const char *why;
	size_t len = 0, why_len;
	int err;

	if (!server->routes.metrics)
		return reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
	pthread_mutex_lock(&server->render_lock);
	err = metrics_render(server->routes.metrics, &text, &len, &cause);
	pthread_mutex_unlock(&server->render_lock);
	if (!err)
		return reply(connection, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, 1, NULL);

	why = cause ? cause : "out of memory";
	why_len = one_line_length(why, 256);
	mlog_quote(quoted, sizeof(quoted), why, why_len);
	mlog(MLOG_WARN, "metrics-render-failed", "listen=%s err=%d cause=%s", server->address, err, quoted);
	snprintf(body, sizeof(body), "metrics unavailable: %.*s\n", (int)why_len, why);
	free(cause);
	return reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
}

/* The routes. Every path takes GET and HEAD (libmicrohttpd drops the body
 * of a HEAD response). */
static const struct route {
	const char *path;
	enum MHD_Result (*serve)(struct http_serve *server, struct MHD_Connection *connection);
} route_table[] = {
	{ "/metrics", serve_metrics },
	{ "/healthz", serve_healthz },
	{ "/readyz", serve_readyz },
};

/* Called once per request, before any body is read: the answer never
 * depends on a body, so a body is never read (libmicrohttpd discards it). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **request_state)
{
	struct http_serve *server = cls;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)request_state;
	/* Closes the connection. Besides sparing the owner calls while it shuts
	 * down, this matters because libmicrohttpd 0.9.75 calls the handler a
	 * second time for a request whose socket the stop shut down while the
	 * first call ran, which would run a slow check twice. */
	if (atomic_load(&server->stopping))
		return MHD_NO;
	for (size_t i = 0; i < sizeof(route_table) / sizeof(route_table[0]); i++) {
		if (strcmp(url, route_table[i].path) != 0)
			continue;
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_CONTENT_TYPE,
				     (char *)"method not allowed\n", 19, 0, "GET, HEAD");
		return route_table[i].serve(server, connection);
	}
	return reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* ---- lifecycle ---- */

static void server_free(struct http_serve *server)
{
	pthread_mutex_destroy(&server->render_lock);
	pthread_mutex_destroy(&server->log_lock);
	free(server);
}

/* A listening, non-blocking socket on addr; its bound address in
 * server->address and server->port. Returns the descriptor or a negative
 * errno value with *cause. */
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
		return set_cause(cause, -err, "cannot make a socket for %s: %s", wanted,
				 error_text(err, error, sizeof(error)));
	}
	/* Lets a restarted controller bind while old connections linger in
	 * TIME_WAIT; a port another socket listens on is still refused. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (const struct sockaddr *)&addr->addr, addr->addr_len) != 0 ||
	    listen(fd, LISTEN_BACKLOG) != 0 || getsockname(fd, (struct sockaddr *)&bound, &bound_len) != 0) {
		err = errno;
		close(fd);
		return set_cause(cause, -err, "cannot listen on %s: %s", wanted,
				 error_text(err, error, sizeof(error)));
	}
	server->port = format_address(&bound, server->address, sizeof(server->address));
	return fd;
}

int http_serve_start(const char *listen, const struct http_serve_routes *routes, struct http_serve **out,
		     char **cause)
{
	struct http_serve_addr addr;
	struct http_serve *server;
	struct timespec now;
	const char *problem = NULL;
	char quoted[96];
	int fd;

	*out = NULL;
	if (http_serve_parse_listen(listen, &addr, &problem) != 0) {
		mlog_quote(quoted, sizeof(quoted), listen ? listen : "", listen ? strlen(listen) : 0);
		return set_cause(cause, -EINVAL, "listen address %s: %s", quoted, problem);
	}
	server = calloc(1, sizeof(*server));
	if (!server)
		return set_cause(cause, -ENOMEM, "out of memory");
	if (pthread_mutex_init(&server->render_lock, NULL) != 0) {
		free(server);
		return set_cause(cause, -ENOMEM, "out of memory");
	}
	if (pthread_mutex_init(&server->log_lock, NULL) != 0) {
		pthread_mutex_destroy(&server->render_lock);
		free(server);
		return set_cause(cause, -ENOMEM, "out of memory");
	}
	if (routes)
		server->routes = *routes;
	atomic_init(&server->stopping, 0);
	clock_gettime(CLOCK_MONOTONIC, &now);
	server->log_window = now.tv_sec;

	fd = listen_socket(server, &addr, cause);
	if (fd < 0) {
		server_free(server);
		return fd;
	}
	/* The logger comes first so that start-up messages reach it too. */
	server->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
			MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, server, MHD_OPTION_EXTERNAL_LOGGER, on_library_message, server,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)HTTP_SERVE_CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)HTTP_SERVE_IDLE_SECONDS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)HTTP_SERVE_CONNECTION_MEMORY, MHD_OPTION_END);
	if (!server->daemon) {
		/* libmicrohttpd closed fd; its http-library lines say why. */
		set_cause(cause, -EIO, "libmicrohttpd could not start serving %s", server->address);
		server_free(server);
		return -EIO;
	}
	mlog(MLOG_INFO, "http-started", "listen=%s connections_max=%u idle_seconds=%u", server->address,
	     HTTP_SERVE_CONNECTIONS_MAX, HTTP_SERVE_IDLE_SECONDS);
	*out = server;
	return 0;
}

uint16_t http_serve_port(const struct http_serve *server)
{
	return server ? server->port : 0;
}

void http_serve_stop(struct http_serve *server)
{
	if (!server)
		return;
	atomic_store(&server->stopping, 1);
	MHD_stop_daemon(server->daemon);
	mlog(MLOG_INFO, "http-stopped", "listen=%s", server->address);
	server_free(server);
}
