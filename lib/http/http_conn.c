/*
 * http_conn: the HTTP server's connections: each from libmicrohttpd's start
 * notification to its close notification, in the list of the phase it waits
 * in (a first request, the next request line, headers, a body, the answer);
 * the sweeper that shuts down those past their phase's deadline; the oldest
 * unproven or idle one closed for room near the limit; the descriptors the
 * limit needs. Not what a TLS connection's handshake took (http_tls.c) nor
 * the requests themselves (http_serve.c, http_post.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "http_serve_int.h"
#include "cause.h"
#include "mlog.h"

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
 * has waited longest for its first request's head among those not past
 * their TLS hello, or else among those past it, or else the one kept alive
 * longest since its last request, never `fresh` itself. So connections that
 * are silent, half-way through a handshake or idle cannot take every slot:
 * a newcomer always gets one, a flood of silent ones does not close a
 * client past its hello, and only a connection that is sending a request or
 * being answered is never closed for room.
 * Called with conns_lock held. */
static void make_room(struct http_serve *server, const struct conn *fresh)
{
	static const enum conn_phase order[] = { CONN_NEW, CONN_HELLO, CONN_IDLE };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		struct conn *victim = server->phases[order[i]].head;

		if (victim == fresh)
			victim = victim->next;
		if (victim) {
			conn_shut(server, victim);
			server->evicted++;
			return;
		}
	}
}

/* libmicrohttpd's connection start and close: tracks every connection for
 * its deadlines, and TLS connections for the certificate they took. */
void http_conn_notify(void *cls, struct MHD_Connection *mhd_connection, void **socket_context,
		      enum MHD_ConnectionNotificationCode code)
{
	struct http_serve *server = cls;
	struct conn *conn = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
			MHD_get_connection_info(mhd_connection, MHD_CONNECTION_INFO_CONNECTION_FD);

		conn = calloc(1, sizeof(*conn));
		if (!conn)
			return;
		conn->server = server;
		conn->fd = fd ? fd->connect_fd : -1;
		if (server->tls_on)
			conn->tls = http_tls_connection_open(server, mhd_connection);
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
		if (connection)
			http_tls_connection_close(server, connection);
		free(conn);
		*socket_context = NULL;
	}
}

void http_conn_phase(struct http_serve *server, struct MHD_Connection *connection, enum conn_phase phase)
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

void http_conn_hello(struct http_serve *server, struct conn *conn)
{
	pthread_mutex_lock(&server->conns_lock);
	if (conn->phase == CONN_NEW) {
		struct timespec accepted = conn->since;

		conn_move(server, conn, CONN_HELLO, 1);
		conn->since = accepted; /* its deadline still runs from the accept */
	}
	pthread_mutex_unlock(&server->conns_lock);
}

/* libmicrohttpd has read a request line: its headers' deadline starts,
 * unless it is a new connection's first request, whose head has one
 * deadline from the accept. */
void *http_conn_request_line(void *cls, const char *uri, struct MHD_Connection *connection)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *conn = info ? info->socket_context : NULL;
	struct http_serve *server = cls;

	(void)uri;
	if (conn) {
		pthread_mutex_lock(&server->conns_lock);
		if (conn->phase != CONN_NEW && conn->phase != CONN_HELLO && conn->phase != CONN_CLOSING)
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
					      [CONN_HELLO] = "http-first-request-too-slow",
					      [CONN_IDLE] = "http-request-line-too-slow",
					      [CONN_HEADERS] = "http-headers-too-slow",
					      [CONN_BODY] = "http-body-too-slow" };
	struct http_serve *server = arg;

	pthread_mutex_lock(&server->conns_lock);
	while (!server->sweeper_stop) {
		const unsigned limits[] = { [CONN_NEW] = server->head_seconds,
					    [CONN_HELLO] = server->head_seconds,
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

			/* Oldest first: the first within its deadline ends the walk;
			 * CONN_HELLO's list runs in hello order, its deadlines from
			 * the accept, so all of it is walked (at most the limit). */
			for (c = server->phases[phase].head; c;) {
				struct conn *next = c->next;

				if (now.tv_sec - c->since.tv_sec > (time_t)limits[phase]) {
					if (!closed[phase]++)
						waited[phase] = (long)(now.tv_sec - c->since.tv_sec);
					conn_shut(server, c);
				} else if (phase != CONN_HELLO) {
					break;
				}
				c = next;
			}
		}
		/* Both are a first request too slow: one line for the two. */
		if (closed[CONN_HELLO] && (!closed[CONN_NEW] || waited[CONN_HELLO] > waited[CONN_NEW]))
			waited[CONN_NEW] = waited[CONN_HELLO];
		closed[CONN_NEW] += closed[CONN_HELLO];
		closed[CONN_HELLO] = 0;
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

int http_conn_sweeper_start(struct http_serve *server, char **cause)
{
	if (pthread_create(&server->sweeper, NULL, sweep, server) != 0)
		return cause_err(cause, MUSTER_EIO, "no thread for the connection deadlines of %s",
				 server->address);
	server->sweeper_started = 1;
	return 0;
}

void http_conn_sweeper_stop(struct http_serve *server)
{
	if (!server->sweeper_started)
		return;
	pthread_mutex_lock(&server->conns_lock);
	server->sweeper_stop = 1;
	pthread_cond_signal(&server->sweeper_wake);
	pthread_mutex_unlock(&server->conns_lock);
	pthread_join(server->sweeper, NULL);
}

void http_conn_free_left(struct http_serve *server)
{
	for (int phase = 0; phase < CONN_PHASES; phase++) {
		/* Each close notified frees its own; none should be left. */
		while (server->phases[phase].head) {
			struct conn *next = server->phases[phase].head->next;

			free(server->phases[phase].head);
			server->phases[phase].head = next;
		}
	}
}

/* Connections open (not closing) past which a newcomer closes another: an
 * eighth of connections_max (at least one) is kept for the newcomers and for
 * the closed ones libmicrohttpd has not let go of yet, so that its own limit,
 * at which it stops accepting, is not reached. */
unsigned http_conn_evict_threshold(unsigned connections_max)
{
	unsigned spare = connections_max / 8 ? connections_max / 8 : 1;

	return connections_max > spare ? connections_max - spare : 0;
}

/* The limit libmicrohttpd itself enforces: connections_max and as many
 * again as the spare eighth. A burst of connections accepted before
 * libmicrohttpd has let go of those closed to make room for them (a flood
 * of new connections does that) would otherwise reach its limit, at which
 * it refuses the next one, a legitimate request among them. */
unsigned http_conn_mhd_limit(const struct http_serve *server)
{
	return server->connections_max + (server->connections_max - server->evict_at);
}

/* Makes room for http_conn_mhd_limit's descriptors besides
 * HTTP_SERVE_FD_RESERVE for the rest of the process: raises the soft
 * RLIMIT_NOFILE up to the hard one if it is lower, and if even that is too
 * low, serves fewer connections (logged): past the descriptors, accept()
 * fails and nobody is served. */
void http_conn_fit_descriptors(struct http_serve *server)
{
	rlim_t need = (rlim_t)server->connections_max * 2 -
		      http_conn_evict_threshold(server->connections_max) + HTTP_SERVE_FD_RESERVE;
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
	server->evict_at = http_conn_evict_threshold(fit);
}
