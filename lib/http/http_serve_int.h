/*
 * http_serve_int: what the files of the HTTP server share, and nothing a
 * user of it sees (that is http_serve.h). The server is split by idea:
 *
 *   http_serve.c  listen addresses, causes and logging, latency, responses,
 *                 the GET routes, request dispatch, the lifecycle
 *   http_post.c   the POST routes: request bodies and their bounds
 *   http_conn.c   connections: phases, deadlines, eviction, the sweeper,
 *                 the descriptors they need
 *   http_tls.c    TLS credentials, the handshake's certificate, hot reloads
 *                 and the expiry check
 *
 * Only this header's structs and prototypes cross between them; every other
 * helper stays static in its file. Not an API: include it from lib/http's
 * server files only.
 */
#ifndef MUSTER_HTTP_SERVE_INT_H
#define MUSTER_HTTP_SERVE_INT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "http_serve.h"
#include "metrics.h"

#define TEXT_CONTENT_TYPE "text/plain; charset=utf-8"
#define TLS_DIGEST_SIZE 64 /* SHA-256 of the certificate file, then of the key file */

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
	/* A TLS connection whose ClientHello came whole (its handshake took a
	 * certificate), the rest of its head: the same deadline from the
	 * accept. Closed for room only when no CONN_NEW one is left, so a
	 * flood of silent or half-hello connections cannot close a client
	 * that is past its hello. */
	CONN_HELLO,
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
 * stops at the first within its deadline (CONN_HELLO's, whose deadlines run
 * from the accept, it walks whole), and room is made from the head. */
struct conn {
	struct conn *prev, *next; /* server->phases[phase], under conns_lock */
	struct http_serve *server;
	int fd;
	enum conn_phase phase; /* under conns_lock */
	struct timespec since; /* the phase's start (CONN_HELLO: the accept), monotonic; under conns_lock */
	struct tls_connection *tls; /* NULL without TLS */
};

struct conn_list {
	struct conn *head, *tail;
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

/* A POST request being read (http_post.c's). */
struct request;

/* ---- http_serve.c: causes, logging, latency, responses ---- */

/* Causes are made by cause_err (lib/base/cause.h). strerror_r into buf,
 * or "error N". */
const char *http_error_text(int errnum, char *buf, size_t size);
/* A cause for the log, quoted; NULL (no memory even for the cause) reads
 * "out of memory". */
const char *http_quote_cause(char *out, size_t out_size, const char *cause);
/* Counts a request of route that came to result, registering its series on
 * first use. */
void http_observe_latency(struct http_serve *server, const char *route, const char *result,
			  const struct timespec *begin);
/* Queues a response. body is copied, or with must_free handed over (and
 * freed here if the response cannot be made); NULL is an empty body. */
enum MHD_Result http_reply(struct MHD_Connection *connection, unsigned status, const char *content_type,
			   char *body, size_t len, int must_free, const char *allow);
enum MHD_Result http_reply_text(struct MHD_Connection *connection, unsigned status, const char *text);
enum MHD_Result http_reply_not_allowed(struct MHD_Connection *connection, const char *allow);

/* ---- http_post.c: the POST routes ---- */

/* A POST route's request begins (its headers are in): a refusal, or its state in *request_state. */
enum MHD_Result http_post_begin(struct http_serve *server, struct MHD_Connection *connection,
				const struct http_serve_post_route *post, const char *method,
				const struct timespec *begin, void **request_state);
/* A part of the body (*data_size bytes, set to 0 when taken). */
enum MHD_Result http_post_data(struct http_serve *server, struct request *request, const char *data,
			       size_t *data_size);
/* The whole body is in: the handler's reply, or the refusal decided on the
 * way. */
enum MHD_Result http_post_end(struct http_serve *server, struct MHD_Connection *connection,
			      struct request *request);
/* Frees a request, giving its body's bytes back; NULL is fine. */
void http_post_free(struct http_serve *server, struct request *request);

/* ---- http_conn.c: connections ---- */

/* libmicrohttpd's connection start and close (MHD_OPTION_NOTIFY_CONNECTION,
 * cls the server). */
void http_conn_notify(void *cls, struct MHD_Connection *mhd_connection, void **socket_context,
		      enum MHD_ConnectionNotificationCode code);
/* libmicrohttpd has read a request line (MHD_OPTION_URI_LOG_CALLBACK, cls
 * the server); returns the request's state, NULL. */
void *http_conn_request_line(void *cls, const char *uri, struct MHD_Connection *connection);
/* A connection enters a phase (its deadline starts now). One shut down
 * stays closing. */
void http_conn_phase(struct http_serve *server, struct MHD_Connection *connection, enum conn_phase phase);
/* conn's TLS handshake has read a whole ClientHello: CONN_NEW to CONN_HELLO. */
void http_conn_hello(struct http_serve *server, struct conn *conn);
/* Starts the sweeper thread. Returns 0 or a negative code of lib/base/errors.h with *cause. */
int http_conn_sweeper_start(struct http_serve *server, char **cause);
/* Stops the sweeper if it runs; before the daemon stops. */
void http_conn_sweeper_stop(struct http_serve *server);
/* Frees the connections left after the daemon stopped (whose close was
 * never notified). */
void http_conn_free_left(struct http_serve *server);
/* Connections open past which a newcomer closes another. */
unsigned http_conn_evict_threshold(unsigned connections_max);
/* Fits connections_max to the open-file limit (raised if it can be). */
void http_conn_fit_descriptors(struct http_serve *server);

/* What libmicrohttpd's own connection limit is set to (room for the spare eighth). */
unsigned http_conn_mhd_limit(const struct http_serve *server);

/* ---- http_tls.c: TLS ---- */

/* GnuTLS's retrieve callback (MHD_OPTION_HTTPS_CERT_CALLBACK). */
int http_tls_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
			 unsigned int *pcert_length, gnutls_privkey_t *privkey);
/* A TLS connection started: its record, in the server's list; NULL when it
 * has no GnuTLS session or no memory (its handshake then fails). */
struct tls_connection *http_tls_connection_open(struct http_serve *server,
						struct MHD_Connection *mhd_connection);
/* A TLS connection closed: out of the list, its pair released, freed. */
void http_tls_connection_close(struct http_serve *server, struct tls_connection *connection);
/* Loads the first pair and prepares the watch. Returns 0 or a negative code of
 * lib/base/errors.h with *cause. */
int http_tls_setup(struct http_serve *server, const struct http_serve_options *options, char **cause);
/* The reload counters and the expiry gauge, when there is a registry. */
void http_tls_counters(struct http_serve *server);
/* The expiry gauge, and the warning when the certificate is near its end
 * (force: even if warned less than a day ago). */
void http_tls_expiry_check(struct http_serve *server, int force);
/* Starts the watcher thread. Returns 0 or a negative code of lib/base/errors.h with *cause. */
int http_tls_watch_start(struct http_serve *server, char **cause);
/* Stops the watcher and frees the TLS state; after the daemon stopped. */
void http_tls_teardown(struct http_serve *server);

#endif
