/*
 * http_serve: the GET routes, the POST routes, TLS and its reloads, on
 * libmicrohttpd. See http_serve.h for the contract.
 *
 * The listening socket is made here rather than by libmicrohttpd so that a
 * failed bind reports its errno ("Address already in use") and the bound port
 * is known at once; it is non-blocking, so a connection reset between poll()
 * and accept() cannot block the listener thread (and with it the stop). Once
 * passed to MHD_start_daemon() the socket belongs to libmicrohttpd, which
 * closes it when it stops and also when it fails to start.
 *
 * TLS: libmicrohttpd hands each handshake's choice of certificate to a GnuTLS
 * retrieve callback (MHD_OPTION_HTTPS_CERT_CALLBACK), which returns the
 * server's current pair. GnuTLS keeps pointers to that pair in the session
 * and does not copy it, so a pair replaced by a reload must live until the
 * last connection that took it closes: every pair counts its users (one for
 * being current, one per connection whose handshake took it), and the
 * connections are tracked from libmicrohttpd's connection notifications. The
 * callback is given the GnuTLS session only: libmicrohttpd keeps its
 * connection as the session's pointer (gnutls_session_set_ptr, which its own
 * PSK callback reads back), and the connection's socket context is our
 * record, so the handshake finds its server without any process-wide state.
 * Each server keeps its connections in its own list under its own lock (for
 * the teardown of connections whose close was never notified). Reloads run
 * on one watcher thread per server, the only writer of its current pair.
 */
#define _POSIX_C_SOURCE 200809L
#include "http_serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "mlog.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CONTENT_TYPE "text/plain; charset=utf-8"
/* Connections the kernel completes before they are accepted. A flood of
 * connections fills a short queue between two accepts, and a SYN that finds
 * it full is dropped and sent again only a second later: 64 made a
 * legitimate client wait 1 s now and then while hostile ones were reopened
 * by the thousand (the kernel caps it at net.core.somaxconn). */
#define LISTEN_BACKLOG 1024
#define LOG_WINDOW_SECONDS 60
/* A body without Content-Length starts with this much room, then doubles. */
#define BODY_INITIAL_SIZE 4096u
/* A stream of changes postpones a reload by at most this long. */
#define TLS_DEBOUNCE_MAX_MS 1000
/* How often a directory that cannot be watched is tried again. */
#define TLS_MISSING_RETRY_MS 1000
#define TLS_DIGEST_SIZE 64 /* SHA-256 of the certificate file, then of the key file */
#define TLS_WATCH_MASK                                                                                       \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | \
	 IN_MOVE_SELF | IN_ONLYDIR)

/* Histogram bounds of muster_http_request_duration_seconds: an admission
 * review is answered in well under a millisecond, a render in more. */
static const double latency_bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					 0.05,	 0.1,	  0.25,	  0.5,	 1,	 2.5,	5,    10 };

/* A certificate chain and its key, shared by the handshakes that took it. */
struct tls_pair {
	gnutls_pcert_st certs[HTTP_SERVE_TLS_CHAIN_MAX]; /* leaf first */
	unsigned cert_count;
	gnutls_privkey_t key;
	unsigned users; /* under the server's tls.lock: 1 while current, plus 1 per connection that took it */
	char subject[256]; /* the leaf's, quoted for the log */
	char not_after[32]; /* the leaf's, "2027-01-31T12:00:00Z" */
	int64_t expires; /* the leaf's notAfter, Unix seconds; 0 if unreadable */
};

/* What a connection waits for, for its deadline (the sweeper's). */
enum conn_phase {
	/* Its TLS handshake and the first request's line and headers:
	 * head_seconds from the accept. A client that has not got this far has
	 * proven nothing, so it is also the first to be closed for room. */
	CONN_NEW,
	CONN_IDLE, /* kept alive, the next request line: idle_seconds from the last request's end */
	CONN_HEADERS, /* the rest of the headers: header_seconds from the request line */
	CONN_BODY, /* a POST body: body_seconds from its headers */
	CONN_ANSWERING, /* a handler runs or the reply goes out: no deadline */
	CONN_CLOSING, /* shut down by the sweeper or for room: waits for its close notification */
	CONN_PHASES
};

/* Every connection, from libmicrohttpd's start notification to its close
 * notification (the connection's socket context), in the list of its phase.
 * libmicrohttpd's own timeout is an idle one, reset by every byte: a client
 * that trickles its headers or stalls its body would hold the connection for
 * ever, so a sweeper thread shuts down those past their phase's deadline.
 * A connection joins the tail of its phase's list when it enters the phase,
 * so each list runs from the longest waiting to the latest: the sweeper
 * stops at the first within its deadline, and room is made from the head. */
struct conn {
	struct conn *prev, *next; /* server->phases[phase], under conns_lock */
	struct http_serve *server;
	int fd;
	enum conn_phase phase; /* under conns_lock */
	struct timespec since; /* the phase's start, monotonic; under conns_lock */
	struct tls_connection *tls; /* NULL without TLS */
};

struct conn_list {
	struct conn *head, *tail;
};

struct http_serve;
static void conn_phase(struct http_serve *server, struct MHD_Connection *connection, enum conn_phase phase);

/* A TLS connection of some server, from libmicrohttpd's start notification
 * to its close notification. */
struct tls_connection {
	struct tls_connection *prev, *next;
	gnutls_session_t session;
	struct http_serve *server;
	struct tls_pair *pair; /* what its handshake took; NULL before */
};

struct tls_state {
	char *cert_file, *key_file;
	/* Guards current, the users counts of the pairs and connections. */
	pthread_mutex_t lock;
	int lock_ready;
	struct tls_pair *current; /* under lock (read without it by the watcher, its only writer) */
	struct tls_connection *connections; /* under lock */
	unsigned char digest[TLS_DIGEST_SIZE]; /* of the files the current pair came from */
	char *failure; /* cause of the last failed reload, not logged again */
	unsigned char failure_digest[TLS_DIGEST_SIZE]; /* of its files (zero if unread) */
	int inotify_fd; /* -1: none, the periodic check only */
	int wake_fd; /* eventfd that stops the watcher */
	char *dirs[2]; /* watched directories, the certificate's and (if another) the key's */
	int watches[2]; /* their watch descriptors, -1 while missing */
	int watch_failed[2]; /* a failure to watch was logged */
	size_t dir_count;
	pthread_t watcher;
	int watcher_started;
	struct metrics_counter *reloads_ok, *reloads_error;
	struct metrics_gauge *expiry; /* the current leaf's notAfter */
	void (*expiring)(void *arg, const char *subject, const char *not_after, long long days_left);
	void *expiring_arg;
	int64_t warned_at; /* when tls-certificate-expiring was last logged (monotonic ms), 0: never */
};

/* One series of the latency histogram. */
struct latency_series {
	const char *route, *result; /* borrowed: route names and static results */
	struct metrics_histogram *histogram; /* NULL when its registration failed */
};

struct http_serve {
	struct MHD_Daemon *daemon;
	struct http_serve_routes routes;
	struct http_serve_post_route posts[HTTP_SERVE_POST_ROUTES_MAX];
	size_t post_count;
	size_t body_max;
	size_t bodies_max; /* bytes of request bodies all connections may hold at once */
	pthread_mutex_t bodies_lock; /* bodies_held */
	size_t bodies_held;
	pthread_mutex_t conns_lock; /* phases, each connection's phase, open, evicted */
	struct conn_list phases[CONN_PHASES];
	unsigned open; /* connections not closing: every phase's but CONN_CLOSING */
	unsigned evict_at; /* a connection that makes open pass this closes the oldest unproven one */
	unsigned long evicted, evicted_logged; /* closed for room, in all; as of the last log line */
	int64_t evicted_log_at; /* when the last http-connections-evicted line went (monotonic ms) */
	pthread_cond_t sweeper_wake;
	pthread_t sweeper;
	int sweeper_started, sweeper_stop; /* sweeper_stop under conns_lock */
	unsigned threads, connections_max, idle_seconds, body_seconds, header_seconds, head_seconds;
	atomic_int stopping; /* set when the stop begins: no new check, render or handler */
	pthread_mutex_t render_lock; /* one render at a time bounds the memory */
	pthread_mutex_t log_lock; /* log_window, log_count */
	pthread_mutex_t latency_lock; /* latency_series, latency_count, latency_full */
	unsigned locks; /* how many of the three are initialised */
	time_t log_window; /* start of the current window of library messages */
	unsigned long log_count; /* library messages in it */
	struct metrics_registry *latency; /* NULL: no metrics */
	struct latency_series latency_series[HTTP_SERVE_LATENCY_SERIES_MAX];
	size_t latency_count;
	int latency_full; /* the table filled up (logged once) */
	int tls_on;
	struct tls_state tls;
	char address[INET6_ADDRSTRLEN + 8]; /* bound address, "[::1]:8080", for the log */
	uint16_t port;
};

/* A POST request being read, from its headers to its reply. */
struct request {
	const struct http_serve_post_route *post;
	struct timespec begin;
	char *body; /* NUL-terminated; NULL until the first byte */
	size_t body_len, body_size; /* bytes held, bytes allocated (counted in bodies_held) */
	size_t received; /* bytes of body seen, held or dropped */
	unsigned refusal; /* 0, or the status already decided (413, 500): the body is dropped */
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

/* A cause for the log, quoted; NULL (no memory even for the cause) reads
 * "out of memory". */
static const char *quote_cause(char *out, size_t out_size, const char *cause)
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

/* Counts a request of route that came to result, registering its series on
 * first use. */
static void observe_latency(struct http_serve *server, const char *route, const char *result,
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
			     server->address, route, result, err, quote_cause(quoted, sizeof(quoted), cause));
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

/* Queues a response. body is copied, or with must_free handed over (and
 * freed here if the response cannot be made); NULL is an empty body. */
static enum MHD_Result reply(struct MHD_Connection *connection, unsigned status, const char *content_type,
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

static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned status, const char *text)
{
	return reply(connection, status, TEXT_CONTENT_TYPE, (char *)text, strlen(text), 0, NULL);
}

static enum MHD_Result reply_not_allowed(struct MHD_Connection *connection, const char *allow)
{
	return reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_CONTENT_TYPE,
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
		return reply_text(connection, MHD_HTTP_OK, "ok\n");
	}
	*result = "failed";
	len = one_line_length(reason, sizeof(reason) - 1);
	snprintf(body, sizeof(body), "%.*s\n", (int)(len ? len : strlen(failed)), len ? reason : failed);
	return reply_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, body);
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
		return reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
	}
	pthread_mutex_lock(&server->render_lock);
	err = metrics_render(server->routes.metrics, &text, &len, &cause);
	pthread_mutex_unlock(&server->render_lock);
	if (!err) {
		*result = "ok";
		return reply(connection, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, 1, NULL);
	}

	*result = "error";
	why = cause ? cause : "out of memory";
	why_len = one_line_length(why, 256);
	mlog_quote(quoted, sizeof(quoted), why, why_len);
	mlog(MLOG_WARN, "metrics-render-failed", "listen=%s err=%d cause=%s", server->address, err, quoted);
	snprintf(body, sizeof(body), "metrics unavailable: %.*s\n", (int)why_len, why);
	free(cause);
	return reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
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

/* ---- POST routes ---- */

/* A Content-Length value; one beyond 2^64 reads as UINT64_MAX (too large
 * either way). Returns -1 when it is not a number. */
static int parse_length(const char *text, uint64_t *out)
{
	uint64_t value = 0;
	size_t i;

	for (i = 0; text[i]; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -1;
		if (value > (UINT64_MAX - 9) / 10)
			value = UINT64_MAX;
		else
			value = value * 10 + (uint64_t)(text[i] - '0');
	}
	if (i == 0)
		return -1;
	*out = value;
	return 0;
}

/* Takes `more` bytes of the server's body budget: 0, or -1 when every
 * connection's bodies together would pass bodies_max. */
static int bodies_take(struct http_serve *server, size_t more)
{
	int ok;

	pthread_mutex_lock(&server->bodies_lock);
	ok = server->bodies_held <= server->bodies_max && more <= server->bodies_max - server->bodies_held;
	if (ok)
		server->bodies_held += more;
	pthread_mutex_unlock(&server->bodies_lock);
	return ok ? 0 : -1;
}

static void bodies_give(struct http_serve *server, size_t less)
{
	pthread_mutex_lock(&server->bodies_lock);
	server->bodies_held -= less <= server->bodies_held ? less : server->bodies_held;
	pthread_mutex_unlock(&server->bodies_lock);
}

/* Frees a request's body and gives its bytes back. */
static void body_drop(struct http_serve *server, struct request *request)
{
	free(request->body);
	bodies_give(server, request->body_size);
	request->body = NULL;
	request->body_len = request->body_size = 0;
}

static enum MHD_Result reply_busy(struct http_serve *server, struct MHD_Connection *connection)
{
	char body[160];

	snprintf(body, sizeof(body),
		 "busy: the request bodies in flight would pass %zu bytes; retry in a moment\n",
		 server->bodies_max);
	return reply_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, body);
}

static enum MHD_Result reply_too_large(struct http_serve *server, struct MHD_Connection *connection)
{
	char body[96];

	snprintf(body, sizeof(body), "request body exceeds the limit of %zu bytes\n", server->body_max);
	return reply_text(connection, MHD_HTTP_CONTENT_TOO_LARGE, body);
}

/* The first call of a POST route's request, with its headers: refuses what
 * can be refused before the body (wrong method, a Content-Length over the
 * limit), else makes the request's state. */
static enum MHD_Result post_begin(struct http_serve *server, struct MHD_Connection *connection,
				  const struct http_serve_post_route *post, const char *method,
				  const struct timespec *begin, void **request_state)
{
	const char *length_text, *expect;
	struct request *request;
	enum MHD_Result result;
	uint64_t length = 0;
	int has_length;

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
		result = reply_not_allowed(connection, "POST");
		observe_latency(server, post->name, "method_not_allowed", begin);
		return result;
	}
	length_text =
		MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	has_length = length_text && parse_length(length_text, &length) == 0;
	if (has_length && length > server->body_max) {
		/* A client that waits for "100 Continue" has not sent its body, so
		 * it can be answered now (and is never sent 100). So is one whose
		 * body is not worth reading, though while still sending it may
		 * see its connection reset rather than the reply. Any other
		 * body is read and dropped, and the refusal sent after it: a
		 * reply sent while the client sends is often lost. */
		expect = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
		if ((expect && strcasecmp(expect, "100-continue") == 0) ||
		    length - server->body_max > HTTP_SERVE_DISCARD_MAX) {
			result = reply_too_large(server, connection);
			observe_latency(server, post->name, "too_large", begin);
			return result;
		}
	}
	request = calloc(1, sizeof(*request));
	if (request && has_length && length > server->body_max) {
		request->refusal = MHD_HTTP_CONTENT_TOO_LARGE;
	} else if (request && has_length && length > 0 && bodies_take(server, (size_t)length + 1)) {
		request->refusal = MHD_HTTP_SERVICE_UNAVAILABLE; /* read, dropped, then 503 */
	} else if (request && has_length && length > 0) {
		/* The whole body at once: it is known not to exceed body_max. */
		request->body = malloc((size_t)length + 1);
		if (!request->body) {
			bodies_give(server, (size_t)length + 1);
			free(request);
			request = NULL;
		} else {
			request->body_size = (size_t)length + 1;
			request->body[0] = '\0';
		}
	}
	if (!request) {
		result = reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		observe_latency(server, post->name, "error", begin);
		return result;
	}
	request->post = post;
	request->begin = *begin;
	*request_state = request;
	return MHD_YES;
}

/* A part of the body. libmicrohttpd cannot send a reply while a body
 * arrives, so a refused body (over the limit, or out of memory) is read to
 * its end and dropped, as long as it stays within body_max +
 * HTTP_SERVE_DISCARD_MAX bytes; past that its connection is closed. */
static enum MHD_Result post_data(struct http_serve *server, struct request *request, const char *data,
				 size_t *data_size)
{
	size_t len = *data_size;
	struct timespec now;

	*data_size = 0;
	/* The idle timeout closes a silent connection; this one a client that
	 * keeps it alive with a trickle of body. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec - request->begin.tv_sec > (time_t)server->body_seconds) {
		mlog(MLOG_WARN, "http-body-too-slow", "listen=%s route=%s received=%zu body_seconds=%u",
		     server->address, request->post->name, request->received, server->body_seconds);
		return MHD_NO;
	}
	if (len > server->body_max + HTTP_SERVE_DISCARD_MAX - request->received) {
		mlog(MLOG_WARN, "http-body-dropped", "listen=%s route=%s status=%u received_over=%zu",
		     server->address, request->post->name, request->refusal ? request->refusal : 413u,
		     server->body_max + HTTP_SERVE_DISCARD_MAX);
		return MHD_NO;
	}
	request->received += len;
	if (!request->refusal && request->received > server->body_max)
		request->refusal = MHD_HTTP_CONTENT_TOO_LARGE;
	if (!request->refusal && request->body_len + len + 1 > request->body_size) {
		size_t size = request->body_size ? request->body_size : BODY_INITIAL_SIZE;
		char *body;

		while (size < request->body_len + len + 1)
			size *= 2;
		if (size > server->body_max + 1)
			size = server->body_max + 1;
		if (bodies_take(server, size - request->body_size)) {
			request->refusal = MHD_HTTP_SERVICE_UNAVAILABLE;
		} else if ((body = realloc(request->body, size)) != NULL) {
			request->body = body;
			request->body_size = size;
		} else {
			bodies_give(server, size - request->body_size);
			request->refusal = MHD_HTTP_INTERNAL_SERVER_ERROR;
		}
	}
	if (request->refusal) {
		body_drop(server, request);
		return MHD_YES;
	}
	memcpy(request->body + request->body_len, data, len);
	request->body_len += len;
	request->body[request->body_len] = '\0';
	return MHD_YES;
}

/* The whole body is in: the handler's reply, or the refusal decided on the
 * way. */
static enum MHD_Result post_end(struct http_serve *server, struct MHD_Connection *connection,
				struct request *request)
{
	const struct http_serve_post_route *post = request->post;
	struct http_serve_reply answer = { 0 };
	enum MHD_Result result;
	const char *label;

	if (request->refusal == MHD_HTTP_CONTENT_TOO_LARGE) {
		result = reply_too_large(server, connection);
		observe_latency(server, post->name, "too_large", &request->begin);
		return result;
	}
	if (request->refusal == MHD_HTTP_SERVICE_UNAVAILABLE) {
		mlog(MLOG_WARN, "http-bodies-busy", "listen=%s route=%s bodies_max=%zu", server->address,
		     post->name, server->bodies_max);
		result = reply_busy(server, connection);
		observe_latency(server, post->name, "busy", &request->begin);
		return result;
	}
	if (request->refusal) {
		result = reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		observe_latency(server, post->name, "error", &request->begin);
		return result;
	}
	post->handle(post->arg, request->body ? request->body : "", request->body_len, &answer);
	body_drop(server, request);
	if (answer.status < 200 || answer.status > 599) {
		mlog(MLOG_ERROR, "http-handler-failed",
		     "listen=%s route=%s status=%u cause=\"status out of range\"", server->address,
		     post->name, answer.status);
		free(answer.body);
		result = reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n");
		observe_latency(server, post->name, "error", &request->begin);
		return result;
	}
	label = answer.result ? answer.result : answer.status < 400 ? "ok" : "error";
	result = reply(connection, answer.status,
		       answer.content_type ? answer.content_type : TEXT_CONTENT_TYPE, answer.body,
		       answer.body ? answer.body_len : 0, 1, NULL);
	observe_latency(server, post->name, label, &request->begin);
	return result;
}

static void on_request_completed(void *cls, struct MHD_Connection *connection, void **request_state,
				 enum MHD_RequestTerminationCode code)
{
	struct request *request = *request_state;

	(void)code;
	conn_phase(cls, connection, CONN_IDLE); /* kept alive: the next request line's deadline */
	if (!request)
		return;
	body_drop(cls, request);
	free(request);
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
			return post_data(server, request, upload_data, upload_data_size);
		conn_phase(server, connection, CONN_ANSWERING);
		return post_end(server, connection, request);
	}
	clock_gettime(CLOCK_MONOTONIC, &begin);
	for (size_t i = 0; i < server->post_count; i++) {
		if (strcmp(url, server->posts[i].path) == 0) {
			conn_phase(server, connection, CONN_BODY);
			return post_begin(server, connection, &server->posts[i], method, &begin,
					  request_state);
		}
	}
	conn_phase(server, connection, CONN_ANSWERING);
	for (size_t i = 0; i < sizeof(route_table) / sizeof(route_table[0]); i++) {
		if (strcmp(url, route_table[i].path) != 0)
			continue;
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
			label = "method_not_allowed";
			result = reply_not_allowed(connection, "GET, HEAD");
		} else {
			result = route_table[i].serve(server, connection, &label);
		}
		observe_latency(server, route_table[i].name, label, &begin);
		return result;
	}
	return reply_text(connection, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* ---- TLS credentials ---- */

static void tls_pair_free(struct tls_pair *pair)
{
	if (!pair)
		return;
	for (unsigned i = 0; i < pair->cert_count; i++)
		gnutls_pcert_deinit(&pair->certs[i]);
	gnutls_privkey_deinit(pair->key);
	free(pair);
}

/* Drops one user of pair; the last frees it. Called with the server's tls.lock held. */
static void tls_pair_release(struct tls_pair *pair)
{
	if (pair && --pair->users == 0)
		tls_pair_free(pair);
}

/* Frees a buffer that may hold key material, wiping it first. */
static void free_secret(gnutls_datum_t *datum)
{
	if (datum->data) {
		gnutls_memset(datum->data, 0, datum->size);
		free(datum->data);
	}
	datum->data = NULL;
	datum->size = 0;
}

/* Reads the regular file path (what: "certificate file" or "key file"), at
 * most HTTP_SERVE_TLS_FILE_MAX bytes. Returns 0, or a negative errno value
 * with *cause naming the file. */
static int read_tls_file(const char *path, const char *what, gnutls_datum_t *out, char **cause)
{
	char error[128], quoted[300];
	unsigned char *data = NULL;
	size_t len = 0, size;
	struct stat st;
	int fd, err = 0;

	mlog_quote(quoted, sizeof(quoted), path, strlen(path));
	/* Non-blocking: a FIFO put in the file's place cannot hang the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		set_cause(cause, err, "TLS %s %s: %s", what, quoted, error_text(-err, error, sizeof(error)));
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		err = -errno;
		set_cause(cause, err, "TLS %s %s: %s", what, quoted, error_text(-err, error, sizeof(error)));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = set_cause(cause, -EINVAL, "TLS %s %s: not a regular file", what, quoted);
		goto out;
	}
	if ((uintmax_t)st.st_size > HTTP_SERVE_TLS_FILE_MAX)
		goto too_large;
	size = (size_t)st.st_size + 1;
	data = malloc(size);
	if (!data) {
		err = set_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == size) {
			/* The file grew since fstat(). */
			unsigned char *bigger;

			if (size > HTTP_SERVE_TLS_FILE_MAX)
				goto too_large;
			size = size * 2 > HTTP_SERVE_TLS_FILE_MAX + 1 ? HTTP_SERVE_TLS_FILE_MAX + 1
								      : size * 2;
			bigger = malloc(size);
			if (!bigger) {
				err = set_cause(cause, -ENOMEM, "out of memory");
				goto out;
			}
			memcpy(bigger, data, len);
			gnutls_memset(data, 0, len);
			free(data);
			data = bigger;
		}
		n = read(fd, data + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			set_cause(cause, err, "TLS %s %s: %s", what, quoted,
				  error_text(-err, error, sizeof(error)));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	goto out;

too_large:
	err = set_cause(cause, -EFBIG, "TLS %s %s: larger than %u bytes", what, quoted,
			HTTP_SERVE_TLS_FILE_MAX);
out:
	if (fd >= 0)
		close(fd);
	if (err) {
		gnutls_datum_t wipe = { data, (unsigned)len };

		free_secret(&wipe);
		return err;
	}
	out->data = data;
	out->size = (unsigned)len;
	return 0;
}

/* Both files, and their digest to tell a change. */
static int tls_read(const struct tls_state *tls, gnutls_datum_t *cert, gnutls_datum_t *key,
		    unsigned char digest[TLS_DIGEST_SIZE], char **cause)
{
	int err;

	err = read_tls_file(tls->cert_file, "certificate file", cert, cause);
	if (!err)
		err = read_tls_file(tls->key_file, "key file", key, cause);
	if (!err && (gnutls_hash_fast(GNUTLS_DIG_SHA256, cert->data, cert->size, digest) != 0 ||
		     gnutls_hash_fast(GNUTLS_DIG_SHA256, key->data, key->size, digest + 32) != 0))
		err = set_cause(cause, -ENOMEM, "cannot hash the TLS files");
	if (err) {
		free_secret(cert);
		free_secret(key);
	}
	return err;
}

/* Whether the key is the certificate's: it signs, the certificate's public
 * key verifies. Returns 0 or a GnuTLS error. */
static int tls_key_matches(const struct tls_pair *pair)
{
	static const unsigned char probe[] = "muster http_serve: does this key match the certificate?";
	const gnutls_datum_t data = { (unsigned char *)probe, sizeof(probe) - 1 };
	gnutls_datum_t signature = { NULL, 0 };
	gnutls_digest_algorithm_t hash = GNUTLS_DIG_SHA256;
	gnutls_sign_algorithm_t algorithm;
	int pk, ret;

	pk = gnutls_pubkey_get_pk_algorithm(pair->certs[0].pubkey, NULL);
	if (pk < 0)
		return pk;
	ret = gnutls_pubkey_get_preferred_hash_algorithm(pair->certs[0].pubkey, &hash, NULL);
	if (ret < 0)
		return ret;
	algorithm = gnutls_pk_to_sign((gnutls_pk_algorithm_t)pk, hash);
	if (algorithm == GNUTLS_SIGN_UNKNOWN)
		return GNUTLS_E_UNKNOWN_PK_ALGORITHM;
	ret = gnutls_privkey_sign_data2(pair->key, algorithm, 0, &data, &signature);
	if (ret >= 0)
		ret = gnutls_pubkey_verify_data2(pair->certs[0].pubkey, algorithm, 0, &data, &signature);
	gnutls_free(signature.data);
	return ret < 0 ? ret : 0;
}

/* The leaf's subject and notAfter, for the log. */
static void tls_describe(struct tls_pair *pair)
{
	gnutls_x509_crt_t leaf = NULL;
	gnutls_datum_t subject = { NULL, 0 };
	time_t not_after;
	struct tm tm;

	snprintf(pair->subject, sizeof(pair->subject), "\"?\"");
	snprintf(pair->not_after, sizeof(pair->not_after), "?");
	if (gnutls_x509_crt_init(&leaf) < 0)
		return;
	if (gnutls_x509_crt_import(leaf, &pair->certs[0].cert, GNUTLS_X509_FMT_DER) >= 0) {
		if (gnutls_x509_crt_get_dn3(leaf, &subject, 0) >= 0)
			mlog_quote(pair->subject, sizeof(pair->subject), (const char *)subject.data,
				   subject.size);
		not_after = gnutls_x509_crt_get_expiration_time(leaf);
		if (not_after != (time_t)-1 && gmtime_r(&not_after, &tm)) {
			strftime(pair->not_after, sizeof(pair->not_after), "%Y-%m-%dT%H:%M:%SZ", &tm);
			pair->expires = (int64_t)not_after;
		}
	}
	gnutls_free(subject.data);
	gnutls_x509_crt_deinit(leaf);
}

/* Parses the files' contents into a pair (one user). Returns 0, or -EINVAL
 * (-ENOMEM) with *cause naming the file at fault. */
static int tls_pair_parse(const struct tls_state *tls, const gnutls_datum_t *cert, const gnutls_datum_t *key,
			  struct tls_pair **out, char **cause)
{
	char cert_name[300], key_name[300];
	unsigned count = HTTP_SERVE_TLS_CHAIN_MAX;
	struct tls_pair *pair;
	int ret, err = 0;

	*out = NULL;
	mlog_quote(cert_name, sizeof(cert_name), tls->cert_file, strlen(tls->cert_file));
	mlog_quote(key_name, sizeof(key_name), tls->key_file, strlen(tls->key_file));
	pair = calloc(1, sizeof(*pair));
	if (!pair)
		return set_cause(cause, -ENOMEM, "out of memory");
	pair->users = 1;
	/* Unsorted chains are refused: a client needs the leaf first, then
	 * each certificate's issuer. */
	ret = gnutls_pcert_list_import_x509_raw(pair->certs, &count, cert, GNUTLS_X509_FMT_PEM,
						GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (ret == GNUTLS_E_SHORT_MEMORY_BUFFER) {
		err = set_cause(cause, -EINVAL, "TLS certificate file %s: more than %u certificates",
				cert_name, HTTP_SERVE_TLS_CHAIN_MAX);
		goto out;
	}
	if (ret < 0 || count == 0) {
		err = set_cause(cause, -EINVAL, "TLS certificate file %s: no PEM certificate chain: %s",
				cert_name, ret < 0 ? gnutls_strerror(ret) : "empty");
		goto out;
	}
	pair->cert_count = count;
	ret = gnutls_privkey_init(&pair->key);
	if (ret < 0) {
		err = set_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	ret = gnutls_privkey_import_x509_raw(pair->key, key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0) {
		err = set_cause(cause, -EINVAL, "TLS key file %s: no unencrypted PEM private key: %s",
				key_name, gnutls_strerror(ret));
		goto out;
	}
	ret = tls_key_matches(pair);
	if (ret < 0) {
		err = set_cause(cause, -EINVAL, "TLS key file %s does not match the certificate in %s: %s",
				key_name, cert_name, gnutls_strerror(ret));
		goto out;
	}
	tls_describe(pair);
out:
	if (err)
		tls_pair_free(pair);
	else
		*out = pair;
	return err;
}

/* GnuTLS asks for the certificate of a handshake: the connection's server's
 * current pair, which the connection then holds until it closes. */
static int on_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
			  const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
			  unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
	struct MHD_Connection *mhd_connection = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *info =
		mhd_connection ? MHD_get_connection_info(mhd_connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT)
			       : NULL;
	struct conn *conn = info ? info->socket_context : NULL;
	struct tls_connection *connection = conn ? conn->tls : NULL;
	struct tls_state *tls;
	int result = -1;

	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	/* No record only when its start notification could not allocate: the
	 * handshake fails rather than use a pair nobody holds. */
	if (!connection || connection->session != session)
		return -1;
	tls = &connection->server->tls;
	pthread_mutex_lock(&tls->lock);
	if (tls->current) {
		struct tls_pair *pair = tls->current;

		pair->users++;
		tls_pair_release(connection->pair); /* a renegotiation's previous one */
		connection->pair = pair;
		*pcert = pair->certs;
		*pcert_length = pair->cert_count;
		*privkey = pair->key;
		result = 0;
	}
	pthread_mutex_unlock(&tls->lock);
	return result;
}

/* Takes conn out of its phase's list. Called with conns_lock held. */
static void conn_unlink(struct http_serve *server, struct conn *conn)
{
	struct conn_list *list = &server->phases[conn->phase];

	if (conn->prev)
		conn->prev->next = conn->next;
	else
		list->head = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	else
		list->tail = conn->prev;
}

/* Moves conn to the tail of phase's list (its deadline starts now). Called
 * with conns_lock held. */
static void conn_move(struct http_serve *server, struct conn *conn, enum conn_phase phase, int listed)
{
	struct conn_list *list;

	if (listed)
		conn_unlink(server, conn);
	list = &server->phases[phase];
	conn->phase = phase;
	clock_gettime(CLOCK_MONOTONIC, &conn->since);
	conn->next = NULL;
	conn->prev = list->tail;
	if (list->tail)
		list->tail->next = conn;
	else
		list->head = conn;
	list->tail = conn;
}

/* Shuts conn down (libmicrohttpd then sees the socket end and closes it in
 * its own thread; the descriptor stays valid until the close notification,
 * which waits for conns_lock). Called with conns_lock held. */
static void conn_shut(struct http_serve *server, struct conn *conn)
{
	if (conn->fd >= 0)
		shutdown(conn->fd, SHUT_RDWR);
	conn->fd = -1;
	conn_move(server, conn, CONN_CLOSING, 1);
	server->open--;
}

/* A new connection took the open count past evict_at: closes the one that
 * has waited longest for its first request's head, or else the one kept
 * alive longest since its last request, never `fresh` itself. So
 * connections that are silent, half-way through a handshake or idle cannot
 * take every slot: a newcomer always gets one, and only a connection that
 * is sending a request or being answered is never closed for room.
 * Called with conns_lock held. */
static void make_room(struct http_serve *server, const struct conn *fresh)
{
	struct conn *victim = server->phases[CONN_NEW].head;

	if (!victim || victim == fresh)
		victim = server->phases[CONN_IDLE].head;
	if (!victim || victim == fresh)
		return;
	conn_shut(server, victim);
	server->evicted++;
}

/* libmicrohttpd's connection start and close: tracks every connection for
 * its deadlines, and TLS connections for the certificate they took. */
static void on_connection(void *cls, struct MHD_Connection *mhd_connection, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_serve *server = cls;
	struct conn *conn = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
			MHD_get_connection_info(mhd_connection, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct tls_connection *connection = NULL;

		conn = calloc(1, sizeof(*conn));
		if (!conn)
			return;
		conn->server = server;
		conn->fd = fd ? fd->connect_fd : -1;
		if (server->tls_on) {
			const union MHD_ConnectionInfo *info =
				MHD_get_connection_info(mhd_connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);

			if (info && info->tls_session && (connection = calloc(1, sizeof(*connection)))) {
				connection->session = info->tls_session;
				connection->server = server;
				pthread_mutex_lock(&server->tls.lock);
				connection->next = server->tls.connections;
				if (server->tls.connections)
					server->tls.connections->prev = connection;
				server->tls.connections = connection;
				pthread_mutex_unlock(&server->tls.lock);
			}
			conn->tls = connection;
		}
		pthread_mutex_lock(&server->conns_lock);
		conn_move(server, conn, CONN_NEW, 0);
		if (++server->open > server->evict_at)
			make_room(server, conn);
		pthread_mutex_unlock(&server->conns_lock);
		*socket_context = conn;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && conn) {
		struct tls_connection *connection = conn->tls;

		pthread_mutex_lock(&server->conns_lock);
		conn_unlink(server, conn);
		if (conn->phase != CONN_CLOSING)
			server->open--;
		pthread_mutex_unlock(&server->conns_lock);
		if (connection) {
			pthread_mutex_lock(&server->tls.lock);
			if (connection->prev)
				connection->prev->next = connection->next;
			else
				server->tls.connections = connection->next;
			if (connection->next)
				connection->next->prev = connection->prev;
			tls_pair_release(connection->pair);
			pthread_mutex_unlock(&server->tls.lock);
			free(connection);
		}
		free(conn);
		*socket_context = NULL;
	}
}

/* A connection enters a phase (its deadline starts now). One shut down
 * stays closing. */
static void conn_phase(struct http_serve *server, struct MHD_Connection *connection, enum conn_phase phase)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *conn = info ? info->socket_context : NULL;

	if (!conn)
		return;
	pthread_mutex_lock(&server->conns_lock);
	if (conn->phase != CONN_CLOSING)
		conn_move(server, conn, phase, 1);
	pthread_mutex_unlock(&server->conns_lock);
}

/* libmicrohttpd has read a request line: its headers' deadline starts,
 * unless it is a new connection's first request, whose head has one
 * deadline from the accept. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *connection)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *conn = info ? info->socket_context : NULL;
	struct http_serve *server = cls;

	(void)uri;
	if (conn) {
		pthread_mutex_lock(&server->conns_lock);
		if (conn->phase != CONN_NEW && conn->phase != CONN_CLOSING)
			conn_move(server, conn, CONN_HEADERS, 1);
		pthread_mutex_unlock(&server->conns_lock);
	}
	return NULL; /* the request's state starts empty, as on_request expects */
}

/* Every half second: shuts down the connections past their phase's
 * deadline, and says (at most once a minute) how many were closed for room. */
static void *sweep(void *arg)
{
	static const char *const events[] = { [CONN_NEW] = "http-first-request-too-slow",
					      [CONN_IDLE] = "http-request-line-too-slow",
					      [CONN_HEADERS] = "http-headers-too-slow",
					      [CONN_BODY] = "http-body-too-slow" };
	struct http_serve *server = arg;

	pthread_mutex_lock(&server->conns_lock);
	while (!server->sweeper_stop) {
		const unsigned limits[] = { [CONN_NEW] = server->head_seconds,
					    [CONN_IDLE] = server->idle_seconds,
					    [CONN_HEADERS] = server->header_seconds,
					    [CONN_BODY] = server->body_seconds };
		unsigned long closed[CONN_BODY + 1] = { 0 }, evicted = 0;
		long waited[CONN_BODY + 1] = { 0 };
		struct timespec now, until;
		int64_t now_ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		for (int phase = CONN_NEW; phase <= CONN_BODY; phase++) {
			struct conn *c;

			/* Oldest first: the first within its deadline ends the walk. */
			while ((c = server->phases[phase].head) != NULL &&
			       now.tv_sec - c->since.tv_sec > (time_t)limits[phase]) {
				if (!closed[phase]++)
					waited[phase] = (long)(now.tv_sec - c->since.tv_sec);
				conn_shut(server, c);
			}
		}
		if (server->evicted != server->evicted_logged && now_ms - server->evicted_log_at >= 60000) {
			evicted = server->evicted - server->evicted_logged;
			server->evicted_logged = server->evicted;
			server->evicted_log_at = now_ms;
		}
		/* Logged without the lock: libmicrohttpd's callbacks take it. One
		 * line per phase and tick, however many were closed. */
		pthread_mutex_unlock(&server->conns_lock);
		for (int phase = CONN_NEW; phase <= CONN_BODY; phase++)
			if (closed[phase])
				mlog(MLOG_WARN, events[phase],
				     "listen=%s seconds=%ld connections=%lu action=\"connection closed\"",
				     server->address, waited[phase], closed[phase]);
		if (evicted)
			mlog(MLOG_WARN, "http-connections-evicted",
			     "listen=%s connections=%lu connections_max=%u action=\"oldest idle or unproven connections "
			     "closed for new ones\"",
			     server->address, evicted, server->connections_max);
		pthread_mutex_lock(&server->conns_lock);
		if (server->sweeper_stop)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 500 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&server->sweeper_wake, &server->conns_lock, &until);
	}
	pthread_mutex_unlock(&server->conns_lock);
	return NULL;
}

/* ---- TLS reloads ---- */

static int64_t monotonic_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Watches the directories not watched yet (at start, and again after one was
 * removed or renamed). A failure is logged once: the periodic check goes on. */
static void tls_watch_directories(struct http_serve *server)
{
	struct tls_state *tls = &server->tls;
	char error[128], quoted[300];

	if (tls->inotify_fd < 0)
		return;
	for (size_t i = 0; i < tls->dir_count; i++) {
		if (tls->watches[i] >= 0)
			continue;
		tls->watches[i] = inotify_add_watch(tls->inotify_fd, tls->dirs[i], TLS_WATCH_MASK);
		if (tls->watches[i] >= 0) {
			tls->watch_failed[i] = 0;
		} else if (!tls->watch_failed[i]) {
			tls->watch_failed[i] = 1;
			mlog_quote(quoted, sizeof(quoted), tls->dirs[i], strlen(tls->dirs[i]));
			mlog(MLOG_WARN, "tls-watch-failed",
			     "listen=%s dir=%s error=\"%s\" recheck_seconds=%u", server->address, quoted,
			     error_text(errno, error, sizeof(error)), HTTP_SERVE_TLS_RECHECK_SECONDS);
		}
	}
}

static int tls_watch_missing(const struct tls_state *tls)
{
	if (tls->inotify_fd < 0)
		return 0;
	for (size_t i = 0; i < tls->dir_count; i++) {
		if (tls->watches[i] < 0)
			return 1;
	}
	return 0;
}

/* Reads the pending inotify events; returns whether there were any. Every
 * event counts: the files are reached through symlinks whose names say
 * little, and a reload that finds the same bytes costs two small reads. */
static int tls_drain(struct tls_state *tls)
{
	char buffer[4096];
	int any = 0;

	for (;;) {
		ssize_t n = read(tls->inotify_fd, buffer, sizeof(buffer));
		size_t at = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return any;
		while (at + sizeof(struct inotify_event) <= (size_t)n) {
			struct inotify_event event;

			memcpy(&event, buffer + at, sizeof(event));
			/* The directory went away, or was renamed (its watch would
			 * follow it): its path is watched again at the next check. */
			for (size_t i = 0; i < tls->dir_count; i++) {
				if (tls->watches[i] != event.wd ||
				    !(event.mask & (IN_IGNORED | IN_MOVE_SELF | IN_DELETE_SELF)))
					continue;
				if (!(event.mask & IN_IGNORED))
					inotify_rm_watch(tls->inotify_fd, event.wd);
				tls->watches[i] = -1;
			}
			any = 1;
			at += sizeof(struct inotify_event) + event.len;
		}
	}
}

/* The serving certificate's expiry: the gauge, and a warning
 * (tls-certificate-expiring) when less than HTTP_SERVE_TLS_EXPIRY_WARN_DAYS
 * remain, once on the pair's load and then at most once a day, so that a
 * certificate nothing renews is seen weeks before the apiserver refuses it. */
static void tls_expiry_check(struct http_serve *server, int force)
{
	struct tls_state *tls = &server->tls;
	const struct tls_pair *pair = tls->current;
	int64_t left, now = monotonic_ms();

	if (!pair || !pair->expires)
		return;
	metrics_gauge_set(tls->expiry, (double)pair->expires);
	left = pair->expires - (int64_t)time(NULL);
	if (left >= (int64_t)HTTP_SERVE_TLS_EXPIRY_WARN_DAYS * 86400)
		return;
	if (!force && tls->warned_at && now - tls->warned_at < 86400LL * 1000)
		return;
	tls->warned_at = now;
	mlog(MLOG_WARN, "tls-certificate-expiring", "listen=%s subject=%s not_after=%s days_left=%lld",
	     server->address, pair->subject, pair->not_after, (long long)(left > 0 ? left / 86400 : 0));
	if (tls->expiring)
		tls->expiring(tls->expiring_arg, pair->subject, pair->not_after,
			      (long long)(left > 0 ? left / 86400 : 0));
}

/* Reads the files and, if they changed, swaps in the new pair or logs why
 * not. Runs on the watcher thread only. */
static void tls_reload(struct http_serve *server)
{
	struct tls_state *tls = &server->tls;
	gnutls_datum_t cert = { NULL, 0 }, key = { NULL, 0 };
	unsigned char digest[TLS_DIGEST_SIZE];
	char *cause = NULL, quoted[600], cert_name[300], key_name[300];
	struct tls_pair *pair = NULL, *old;
	int err;

	memset(digest, 0, sizeof(digest));
	err = tls_read(tls, &cert, &key, digest, &cause);
	if (!err && memcmp(digest, tls->digest, sizeof(digest)) == 0) {
		/* Unchanged, or back to what is in use: a failure is over. */
		free(tls->failure);
		tls->failure = NULL;
		goto out;
	}
	if (!err)
		err = tls_pair_parse(tls, &cert, &key, &pair, &cause);
	mlog_quote(cert_name, sizeof(cert_name), tls->cert_file, strlen(tls->cert_file));
	mlog_quote(key_name, sizeof(key_name), tls->key_file, strlen(tls->key_file));
	if (err) {
		const char *why = cause ? cause : "out of memory";

		if (tls->failure && strcmp(tls->failure, why) == 0 &&
		    memcmp(digest, tls->failure_digest, sizeof(digest)) == 0)
			goto out; /* logged already */
		mlog_quote(quoted, sizeof(quoted), why, strlen(why));
		mlog(MLOG_WARN, "tls-reload-failed", "listen=%s cert=%s key=%s err=%d cause=%s kept=%s",
		     server->address, cert_name, key_name, err, quoted, tls->current->subject);
		metrics_counter_inc(tls->reloads_error);
		free(tls->failure);
		tls->failure = cause ? cause : strdup(why);
		cause = NULL;
		memcpy(tls->failure_digest, digest, sizeof(digest));
		goto out;
	}
	pthread_mutex_lock(&tls->lock);
	old = tls->current;
	tls->current = pair;
	tls_pair_release(old);
	pthread_mutex_unlock(&tls->lock);
	memcpy(tls->digest, digest, sizeof(digest));
	free(tls->failure);
	tls->failure = NULL;
	mlog(MLOG_INFO, "tls-reloaded", "listen=%s cert=%s key=%s subject=%s not_after=%s chain=%u",
	     server->address, cert_name, key_name, pair->subject, pair->not_after, pair->cert_count);
	metrics_counter_inc(tls->reloads_ok);
	tls_expiry_check(server, 1);
out:
	free(cause);
	free_secret(&cert);
	free_secret(&key);
}

/* The watcher: a reload HTTP_SERVE_TLS_DEBOUNCE_MS after the last change in
 * the directories (so that a certificate and its key written one after the
 * other are read together; at most TLS_DEBOUNCE_MAX_MS after the first), and
 * one every HTTP_SERVE_TLS_RECHECK_SECONDS in case inotify missed one (a
 * file system that does not report), or every TLS_MISSING_RETRY_MS while a
 * directory is not watched. */
static void *tls_watch(void *arg)
{
	struct http_serve *server = arg;
	struct tls_state *tls = &server->tls;
	int64_t now = monotonic_ms(), next_check = now + HTTP_SERVE_TLS_RECHECK_SECONDS * 1000LL;
	int64_t due = 0, first = 0;

	if (tls_watch_missing(tls))
		next_check = now + TLS_MISSING_RETRY_MS;
	for (;;) {
		struct pollfd fds[2] = { { tls->wake_fd, POLLIN, 0 }, { tls->inotify_fd, POLLIN, 0 } };
		int64_t deadline = due && due < next_check ? due : next_check;
		int n;

		now = monotonic_ms();
		n = poll(fds, tls->inotify_fd >= 0 ? 2 : 1, deadline > now ? (int)(deadline - now) : 0);
		if (n < 0 && errno != EINTR) {
			struct timespec pause = { 0, 100000000L }; /* never spin */

			nanosleep(&pause, NULL);
		}
		if (n > 0 && (fds[0].revents & POLLIN))
			break;
		now = monotonic_ms();
		if (n > 0 && (fds[1].revents & POLLIN) && tls_drain(tls)) {
			if (!due)
				first = now;
			due = now + HTTP_SERVE_TLS_DEBOUNCE_MS;
			if (due > first + TLS_DEBOUNCE_MAX_MS)
				due = first + TLS_DEBOUNCE_MAX_MS;
		}
		if ((due && now >= due) || now >= next_check) {
			tls_watch_directories(server);
			tls_reload(server);
			tls_expiry_check(server, 0);
			due = 0;
			next_check = monotonic_ms() + HTTP_SERVE_TLS_RECHECK_SECONDS * 1000LL;
			/* A directory that cannot be watched (yet: replaced, not
			 * there again) is tried again, and its files read, every
			 * second. */
			if (tls_watch_missing(tls))
				next_check = monotonic_ms() + TLS_MISSING_RETRY_MS;
		}
	}
	return NULL;
}

/* The directory part of path, malloc'd: "." for a bare name. */
static char *directory_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	char *dir;

	if (!slash)
		return strdup(".");
	if (len == 0)
		len = 1; /* "/name" */
	dir = malloc(len + 1);
	if (dir) {
		memcpy(dir, path, len);
		dir[len] = '\0';
	}
	return dir;
}

/* Loads the first pair and prepares the watch (started later by
 * tls_watch_start). Returns 0 or a negative errno value with *cause. */
static int tls_setup(struct http_serve *server, const struct http_serve_options *options, char **cause)
{
	struct tls_state *tls = &server->tls;
	gnutls_datum_t cert = { NULL, 0 }, key = { NULL, 0 };
	char error[128];
	int err;

	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
	    MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES)
		return set_cause(cause, -ENOTSUP,
				 "libmicrohttpd was built without TLS certificate callbacks");
	if (pthread_mutex_init(&tls->lock, NULL) != 0)
		return set_cause(cause, -ENOMEM, "cannot make a lock");
	tls->lock_ready = 1;
	tls->cert_file = strdup(options->tls_cert_file);
	tls->key_file = strdup(options->tls_key_file);
	tls->dirs[0] = tls->cert_file ? directory_of(tls->cert_file) : NULL;
	tls->dirs[1] = tls->key_file ? directory_of(tls->key_file) : NULL;
	if (!tls->cert_file || !tls->key_file || !tls->dirs[0] || !tls->dirs[1])
		return set_cause(cause, -ENOMEM, "out of memory");
	tls->dir_count = 2;
	if (strcmp(tls->dirs[0], tls->dirs[1]) == 0) {
		free(tls->dirs[1]);
		tls->dirs[1] = NULL;
		tls->dir_count = 1;
	}
	tls->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (tls->wake_fd < 0) {
		err = -errno;
		return set_cause(cause, err, "cannot make an eventfd: %s",
				 error_text(-err, error, sizeof(error)));
	}
	/* Watched before the first read, so that no change after it is missed.
	 * Without inotify the periodic check still reloads. */
	tls->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (tls->inotify_fd < 0)
		mlog(MLOG_WARN, "tls-watch-failed", "listen=%s error=\"%s\" recheck_seconds=%u",
		     server->address, error_text(errno, error, sizeof(error)),
		     HTTP_SERVE_TLS_RECHECK_SECONDS);
	tls_watch_directories(server);

	err = tls_read(tls, &cert, &key, tls->digest, cause);
	if (!err)
		err = tls_pair_parse(tls, &cert, &key, &tls->current, cause);
	free_secret(&cert);
	free_secret(&key);
	return err;
}

static int tls_watch_start(struct http_serve *server, char **cause)
{
	char error[128];
	int err = pthread_create(&server->tls.watcher, NULL, tls_watch, server);

	if (err)
		return set_cause(cause, -err, "cannot start the TLS watcher thread: %s",
				 error_text(err, error, sizeof(error)));
	server->tls.watcher_started = 1;
	return 0;
}

/* Stops the watcher and frees the TLS state; the daemon is stopped, so no
 * connection is left but those whose close was never notified. */
static void tls_teardown(struct http_serve *server)
{
	struct tls_state *tls = &server->tls;
	struct tls_connection *connection, *next;

	if (tls->watcher_started) {
		uint64_t one = 1;

		if (write(tls->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			mlog(MLOG_ERROR, "tls-watch-failed", "listen=%s cause=\"cannot wake the watcher\"",
			     server->address);
		pthread_join(tls->watcher, NULL);
	}
	if (tls->lock_ready) {
		/* The daemon is stopped: only connections whose close was never
		 * notified are left. */
		for (connection = tls->connections; connection; connection = next) {
			next = connection->next;
			tls_pair_release(connection->pair);
			free(connection);
		}
		tls->connections = NULL;
		tls_pair_release(tls->current);
		tls->current = NULL;
		pthread_mutex_destroy(&tls->lock);
		tls->lock_ready = 0;
	}
	if (tls->inotify_fd >= 0)
		close(tls->inotify_fd);
	if (tls->wake_fd >= 0)
		close(tls->wake_fd);
	free(tls->dirs[0]);
	free(tls->dirs[1]);
	free(tls->cert_file);
	free(tls->key_file);
	free(tls->failure);
}

/* ---- lifecycle ---- */

/* Refuses options out of range, with the reason. */
static int check_options(const struct http_serve_options *options, char **cause)
{
	unsigned connections_max =
		options->connections_max ? options->connections_max : HTTP_SERVE_CONNECTIONS_MAX;

	if (!options->tls_cert_file != !options->tls_key_file)
		return set_cause(cause, -EINVAL,
				 "TLS needs both a certificate file and a key file (%s given alone)",
				 options->tls_cert_file ? "certificate" : "key");
	if (options->tls_cert_file && (!options->tls_cert_file[0] || !options->tls_key_file[0]))
		return set_cause(cause, -EINVAL, "TLS file name is empty");
	if (options->threads > HTTP_SERVE_THREADS_MAX)
		return set_cause(cause, -EINVAL, "threads %u exceeds %u", options->threads,
				 HTTP_SERVE_THREADS_MAX);
	if (connections_max > HTTP_SERVE_CONNECTIONS_LIMIT)
		return set_cause(cause, -EINVAL, "connections_max %u exceeds %u", connections_max,
				 HTTP_SERVE_CONNECTIONS_LIMIT);
	/* libmicrohttpd shares the connections among the pool's threads. */
	if (options->threads > connections_max)
		return set_cause(cause, -EINVAL, "threads %u exceeds connections_max %u", options->threads,
				 connections_max);
	if (options->idle_seconds > HTTP_SERVE_IDLE_SECONDS_MAX)
		return set_cause(cause, -EINVAL, "idle_seconds %u exceeds %u", options->idle_seconds,
				 HTTP_SERVE_IDLE_SECONDS_MAX);
	if (options->body_seconds > HTTP_SERVE_BODY_SECONDS_MAX)
		return set_cause(cause, -EINVAL, "body_seconds %u exceeds %u", options->body_seconds,
				 HTTP_SERVE_BODY_SECONDS_MAX);
	if (options->head_seconds > HTTP_SERVE_BODY_SECONDS_MAX)
		return set_cause(cause, -EINVAL, "head_seconds %u exceeds %u", options->head_seconds,
				 HTTP_SERVE_BODY_SECONDS_MAX);
	if (options->header_seconds > HTTP_SERVE_BODY_SECONDS_MAX)
		return set_cause(cause, -EINVAL, "header_seconds %u exceeds %u", options->header_seconds,
				 HTTP_SERVE_BODY_SECONDS_MAX);
	if (options->bodies_max &&
	    options->bodies_max < (options->body_max ? options->body_max : HTTP_SERVE_BODY_MAX_DEFAULT) + 1)
		return set_cause(cause, -EINVAL, "bodies_max %zu is below body_max + 1", options->bodies_max);
	if (options->body_max > HTTP_SERVE_BODY_MAX_LIMIT)
		return set_cause(cause, -EINVAL, "body_max %zu exceeds %u", options->body_max,
				 HTTP_SERVE_BODY_MAX_LIMIT);
	if (options->post_count > HTTP_SERVE_POST_ROUTES_MAX || (options->post_count && !options->posts))
		return set_cause(cause, -EINVAL, "at most %u POST routes", HTTP_SERVE_POST_ROUTES_MAX);
	for (size_t i = 0; i < options->post_count; i++) {
		const struct http_serve_post_route *post = &options->posts[i];

		if (!post->path || post->path[0] != '/' || !post->name || !post->name[0] || !post->handle)
			return set_cause(
				cause, -EINVAL,
				"POST route %zu needs a path starting with '/', a name and a handler", i);
		for (size_t j = 0; j < sizeof(route_table) / sizeof(route_table[0]); j++) {
			if (strcmp(post->path, route_table[j].path) == 0)
				return set_cause(cause, -EINVAL, "POST route %s is a GET route",
						 route_table[j].path);
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(post->path, options->posts[j].path) == 0)
				return set_cause(cause, -EINVAL, "POST route %zu repeats an earlier path", i);
		}
	}
	return 0;
}

/* Frees what server holds; stops the daemon and the watcher if running. */
static void server_free(struct http_serve *server)
{
	if (!server)
		return;
	if (server->sweeper_started) { /* before the daemon, whose connections it reads */
		pthread_mutex_lock(&server->conns_lock);
		server->sweeper_stop = 1;
		pthread_cond_signal(&server->sweeper_wake);
		pthread_mutex_unlock(&server->conns_lock);
		pthread_join(server->sweeper, NULL);
	}
	if (server->daemon)
		MHD_stop_daemon(server->daemon);
	for (int phase = 0; phase < CONN_PHASES; phase++) {
		/* Each close notified frees its own; none should be left. */
		while (server->phases[phase].head) {
			struct conn *next = server->phases[phase].head->next;

			free(server->phases[phase].head);
			server->phases[phase].head = next;
		}
	}
	if (server->tls_on)
		tls_teardown(server);
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

/* Connections open (not closing) past which a newcomer closes another: an
 * eighth of connections_max (at least one) is kept for the newcomers and for
 * the closed ones libmicrohttpd has not let go of yet, so that its own limit,
 * at which it stops accepting, is not reached. */
static unsigned evict_threshold(unsigned connections_max)
{
	unsigned spare = connections_max / 8 ? connections_max / 8 : 1;

	return connections_max > spare ? connections_max - spare : 0;
}

/* The limit libmicrohttpd itself enforces: connections_max and as many
 * again as the spare eighth. A burst of connections accepted before
 * libmicrohttpd has let go of those closed to make room for them (a flood
 * of new connections does that) would otherwise reach its limit, at which
 * it refuses the next one, a legitimate request among them. */
static unsigned mhd_limit(const struct http_serve *server)
{
	return server->connections_max + (server->connections_max - server->evict_at);
}

/* Makes room for connections_max descriptors besides HTTP_SERVE_FD_RESERVE
 * for the rest of the process: raises the soft RLIMIT_NOFILE up to the hard
 * one if it is lower, and if even that is too low, serves fewer connections
 * (logged): past the descriptors, accept() fails and nobody is served. */
static void fit_descriptors(struct http_serve *server)
{
	rlim_t need = (rlim_t)server->connections_max * 2 - evict_threshold(server->connections_max) +
		      HTTP_SERVE_FD_RESERVE; /* mhd_limit's */
	struct rlimit limit;
	unsigned fit;

	if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
	    limit.rlim_cur >= need)
		return;
	if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max > limit.rlim_cur) {
		struct rlimit raised = { limit.rlim_max == RLIM_INFINITY ? need : limit.rlim_max,
					 limit.rlim_max };

		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			limit = raised;
	}
	if (limit.rlim_cur >= need)
		return;
	/* fit and its spare eighth in what is left */
	fit = limit.rlim_cur > HTTP_SERVE_FD_RESERVE + 2
		      ? (unsigned)((limit.rlim_cur - HTTP_SERVE_FD_RESERVE) * 8 / 9)
		      : 1;
	if (fit < server->threads)
		fit = server->threads;
	mlog(MLOG_WARN, "http-connections-reduced",
	     "listen=%s connections_max=%u now=%u open_files_limit=%llu reserve=%u", server->address,
	     server->connections_max, fit, (unsigned long long)limit.rlim_cur, HTTP_SERVE_FD_RESERVE);
	server->connections_max = fit;
	server->evict_at = evict_threshold(fit);
}

static int server_new(const struct http_serve_routes *routes, const struct http_serve_options *options,
		      struct http_serve **out)
{
	struct http_serve *server = calloc(1, sizeof(*server));
	struct timespec now;

	*out = NULL;
	if (!server)
		return -ENOMEM;
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
	server->evict_at = evict_threshold(server->connections_max);
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
	return -ENOMEM;
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
		extra[n++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)on_certificate };
	}
	extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, server };
	extra[n++] =
		(struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, server };
	extra[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	/* The logger comes first so that start-up messages reach it too. */
	server->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, server, MHD_OPTION_EXTERNAL_LOGGER, on_library_message,
		server, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
		mhd_limit(server), MHD_OPTION_CONNECTION_TIMEOUT, server->idle_seconds,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_SERVE_CONNECTION_MEMORY,
		MHD_OPTION_NOTIFY_COMPLETED, on_request_completed, server, MHD_OPTION_ARRAY, extra,
		MHD_OPTION_END);
	if (!server->daemon) {
		/* libmicrohttpd closed fd; its http-library lines say why. */
		return set_cause(cause, -EIO, "libmicrohttpd could not start serving %s", server->address);
	}
	if (pthread_create(&server->sweeper, NULL, sweep, server) != 0)
		return set_cause(cause, -EAGAIN, "no thread for the connection deadlines of %s",
				 server->address);
	server->sweeper_started = 1;
	return 0;
}

/* The reload counters, when there is a registry. A failure (say, a second
 * server on the registry) is logged and leaves them NULL, which counts
 * nothing. */
static void tls_counters(struct http_serve *server)
{
	static const struct metrics_label ok = { "result", "ok" }, error = { "result", "error" };
	static const char help[] = "Reloads of the TLS certificate and key, by result.";
	char *cause = NULL, quoted[300];
	int err;

	if (!server->latency)
		return;
	err = metrics_counter_register(server->latency, "muster_tls_reloads_total", help, &ok, 1,
				       &server->tls.reloads_ok, &cause);
	if (!err)
		err = metrics_counter_register(server->latency, "muster_tls_reloads_total", help, &error, 1,
					       &server->tls.reloads_error, &cause);
	if (err) {
		server->tls.reloads_ok = server->tls.reloads_error = NULL;
		mlog(MLOG_WARN, "http-metric-failed",
		     "listen=%s name=muster_tls_reloads_total err=%d cause=%s", server->address, err,
		     quote_cause(quoted, sizeof(quoted), cause));
		free(cause);
		cause = NULL;
	}
	err = metrics_gauge_register(server->latency, "muster_tls_certificate_expiry_timestamp_seconds",
				     "notAfter of the serving certificate in use, as Unix time (seconds).",
				     NULL, 0, &server->tls.expiry, &cause);
	if (err) {
		server->tls.expiry = NULL;
		mlog(MLOG_WARN, "http-metric-failed",
		     "listen=%s name=muster_tls_certificate_expiry_timestamp_seconds err=%d cause=%s",
		     server->address, err, quote_cause(quoted, sizeof(quoted), cause));
		free(cause);
	}
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
		return set_cause(cause, -EINVAL, "listen address %s: %s", quoted, problem);
	}
	err = check_options(options, cause);
	if (err)
		return err;
	err = server_new(routes, options, &server);
	if (err)
		return set_cause(cause, err, "out of memory");
	fd = listen_socket(server, &addr, cause);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	fit_descriptors(server);
	if (server->tls_on) {
		err = tls_setup(server, options, cause);
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
		tls_counters(server);
		tls_expiry_check(server, 1);
		err = tls_watch_start(server, cause);
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
