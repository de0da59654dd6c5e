/*
 * barrier_push: a bounded, non-blocking line server. See barrier_push.h.
 *
 * The barrier runs one poll() loop; this module contributes descriptors to it
 * and reacts to what poll() reports. It never blocks: every socket is
 * non-blocking, replies are one small send() that may be dropped.
 */
#define _GNU_SOURCE
#include "barrier_push.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlog.h"

/* Rejections are logged one by one up to this many, then one in REJECT_EVERY,
 * so a flood of garbage cannot flood the pod's log. */
#define REJECT_LOG_FIRST 20
#define REJECT_LOG_EVERY 100

static int parse_port(const char *text, uint16_t *port)
{
	char *end;
	unsigned long value;

	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	value = strtoul(text, &end, 10);
	if (errno || *end != '\0' || value > 65535)
		return -1;
	*port = (uint16_t)value;
	return 0;
}

int barrier_listen_parse(const char *spec, struct barrier_listen_addr *out, const char **cause)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *port_text;
	size_t host_len;
	uint16_t port;

	memset(out, 0, sizeof(*out));
	colon = strrchr(spec, ':');
	if (!colon) {
		if (parse_port(spec, &port) != 0) {
			*cause = "port is not a number from 0 to 65535";
			return -1;
		}
		struct sockaddr_in6 *any = (struct sockaddr_in6 *)&out->addr;

		any->sin6_family = AF_INET6;
		any->sin6_addr = in6addr_any;
		any->sin6_port = htons(port);
		out->addr_len = sizeof(*any);
		out->any = 1;
		return 0;
	}
	port_text = colon + 1;
	if (parse_port(port_text, &port) != 0) {
		*cause = "port is not a number from 0 to 65535";
		return -1;
	}
	if (spec[0] == '[') {
		if (colon == spec || colon[-1] != ']') {
			*cause = "an IPv6 address must be written [ADDRESS]:PORT";
			return -1;
		}
		host_len = (size_t)(colon - 1 - (spec + 1));
		if (host_len >= sizeof(host)) {
			*cause = "address is too long";
			return -1;
		}
		memcpy(host, spec + 1, host_len);
		host[host_len] = '\0';
		struct sockaddr_in6 *six = (struct sockaddr_in6 *)&out->addr;

		if (inet_pton(AF_INET6, host, &six->sin6_addr) != 1) {
			*cause = "not an IPv6 address";
			return -1;
		}
		six->sin6_family = AF_INET6;
		six->sin6_port = htons(port);
		out->addr_len = sizeof(*six);
		return 0;
	}
	host_len = (size_t)(colon - spec);
	if (host_len >= sizeof(host)) {
		*cause = "address is too long";
		return -1;
	}
	memcpy(host, spec, host_len);
	host[host_len] = '\0';
	struct sockaddr_in *four = (struct sockaddr_in *)&out->addr;

	if (strchr(host, ':')) {
		/* A bare IPv6 address: the port is after the last colon. The
		 * webhook writes `$(MUSTER_POD_IP):PORT` and status.podIP of an
		 * IPv6 pod has no brackets. */
		struct sockaddr_in6 *six = (struct sockaddr_in6 *)&out->addr;

		if (inet_pton(AF_INET6, host, &six->sin6_addr) != 1) {
			*cause = "not an IPv6 address";
			return -1;
		}
		six->sin6_family = AF_INET6;
		six->sin6_port = htons(port);
		out->addr_len = sizeof(*six);
		return 0;
	}
	if (inet_pton(AF_INET, host, &four->sin_addr) != 1) {
		*cause = "not an IPv4 address";
		return -1;
	}
	four->sin_family = AF_INET;
	four->sin_port = htons(port);
	out->addr_len = sizeof(*four);
	return 0;
}

static void format_addr(const struct sockaddr_storage *addr, char *out, size_t out_size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (addr->ss_family == AF_INET) {
		const struct sockaddr_in *four = (const struct sockaddr_in *)addr;

		inet_ntop(AF_INET, &four->sin_addr, host, sizeof(host));
		port = ntohs(four->sin_port);
		snprintf(out, out_size, "%s:%u", host, port);
	} else if (addr->ss_family == AF_INET6) {
		const struct sockaddr_in6 *six = (const struct sockaddr_in6 *)addr;

		inet_ntop(AF_INET6, &six->sin6_addr, host, sizeof(host));
		port = ntohs(six->sin6_port);
		snprintf(out, out_size, "[%s]:%u", host, port);
	} else {
		snprintf(out, out_size, "unknown");
	}
}

void barrier_push_init(struct barrier_push *push, const char *token, size_t token_len,
		       const struct barrier_identity *own)
{
	memset(push, 0, sizeof(*push));
	push->listen_fd = -1;
	push->listen_poll_index = -1;
	push->token = token;
	push->token_len = token_len;
	push->own = *own;
	push->own.jobset_uid = NULL;
	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++) {
		push->conns[i].fd = -1;
		push->conns[i].poll_index = -1;
	}
}

static int open_listener(const struct sockaddr_storage *addr, socklen_t addr_len, int dual_stack)
{
	int one = 1, zero = 0;
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* hostNetwork pods of one node share its address: every barrier there
	 * binds the same port, and the kernel hands each connection to one of
	 * them. A released barrier closes its listener as it exits, so the
	 * controller's next connection reaches one still waiting (push_fanout
	 * retries shared addresses). Only sockets of the same user may join
	 * (the barrier's fixed non-root uid); a port taken by anything else
	 * still fails, and the volume releases that pod. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (dual_stack)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (const struct sockaddr *)addr, addr_len) != 0 || listen(fd, 64) != 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int barrier_push_listen(struct barrier_push *push, const struct barrier_listen_addr *addr, char *err,
			size_t err_size)
{
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	int fd;

	err[0] = '\0';
	fd = open_listener(&addr->addr, addr->addr_len, addr->any);
	if (fd < 0 && addr->any && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
		/* A pod without IPv6: fall back to every IPv4 address. */
		struct sockaddr_storage v4;
		struct sockaddr_in *four = (struct sockaddr_in *)&v4;

		memset(&v4, 0, sizeof(v4));
		four->sin_family = AF_INET;
		four->sin_addr.s_addr = htonl(INADDR_ANY);
		four->sin_port = ((const struct sockaddr_in6 *)&addr->addr)->sin6_port;
		fd = open_listener(&v4, sizeof(*four), 0);
	}
	if (fd < 0) {
		char want[72];

		format_addr(&addr->addr, want, sizeof(want));
		snprintf(err, err_size, "cannot listen on %s: %s", want, strerror(errno));
		return -1;
	}
	if (getsockname(fd, (struct sockaddr *)&bound, &bound_len) == 0)
		format_addr(&bound, push->bound, sizeof(push->bound));
	push->listen_fd = fd;
	return 0;
}

static void close_conn(struct barrier_push_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	conn->len = 0;
	conn->poll_index = -1;
}

static void reply_and_close(struct barrier_push_conn *conn, enum barrier_push_verdict verdict)
{
	const char *reply = barrier_push_reply(verdict);

	/* Best effort: a client that does not read its reply loses it. */
	(void)!send(conn->fd, reply, strlen(reply), MSG_NOSIGNAL | MSG_DONTWAIT);
	close_conn(conn);
}

static void log_reject(struct barrier_push *push, const struct barrier_push_conn *conn,
		       enum barrier_push_verdict verdict, const char *cause)
{
	push->rejected++;
	if (push->rejected > REJECT_LOG_FIRST && push->rejected % REJECT_LOG_EVERY != 0) {
		push->suppressed++;
		return;
	}
	mlog(MLOG_WARN, "push-rejected", "peer=%s reason=%s cause=\"%s\" rejected_total=%lu suppressed=%lu",
	     conn->peer, barrier_push_verdict_name(verdict), cause, push->rejected, push->suppressed);
	push->suppressed = 0;
}

size_t barrier_push_pollfds(struct barrier_push *push, struct pollfd *fds)
{
	size_t n = 0;

	push->listen_poll_index = -1;
	if (push->listen_fd >= 0) {
		fds[n] = (struct pollfd){ .fd = push->listen_fd, .events = POLLIN };
		push->listen_poll_index = (int)n++;
	}
	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++) {
		struct barrier_push_conn *conn = &push->conns[i];

		conn->poll_index = -1;
		if (conn->fd < 0)
			continue;
		fds[n] = (struct pollfd){ .fd = conn->fd, .events = POLLIN };
		conn->poll_index = (int)n++;
	}
	return n;
}

uint64_t barrier_push_next_deadline(const struct barrier_push *push)
{
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++) {
		if (push->conns[i].fd >= 0 && push->conns[i].deadline_ms < next)
			next = push->conns[i].deadline_ms;
	}
	return next;
}

static struct barrier_push_conn *free_slot(struct barrier_push *push)
{
	struct barrier_push_conn *oldest = NULL;

	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++) {
		struct barrier_push_conn *conn = &push->conns[i];

		if (conn->fd < 0)
			return conn;
		if (!oldest || conn->deadline_ms < oldest->deadline_ms)
			oldest = conn;
	}
	/* All slots busy: the oldest connection, the likeliest to be stuck,
	 * makes room, so idle clients cannot lock the controller out. */
	log_reject(push, oldest, BARRIER_PUSH_TIMEOUT, "evicted to make room for a new connection");
	reply_and_close(oldest, BARRIER_PUSH_TIMEOUT);
	return oldest;
}

static void accept_all(struct barrier_push *push, uint64_t now_ms)
{
	/* Bounded per wake-up so a connection storm cannot starve the volume. */
	for (int round = 0; round < 64; round++) {
		struct sockaddr_storage peer;
		socklen_t peer_len = sizeof(peer);
		struct barrier_push_conn *conn;
		int fd = accept4(push->listen_fd, (struct sockaddr *)&peer, &peer_len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				mlog(MLOG_WARN, "push-accept-failed", "error=\"%s\"", strerror(errno));
			return;
		}
		conn = free_slot(push);
		conn->fd = fd;
		conn->len = 0;
		conn->deadline_ms = now_ms + BARRIER_PUSH_READ_MS;
		format_addr(&peer, conn->peer, sizeof(conn->peer));
	}
}

/* Reads what is there. Returns 1 on a valid release, 0 otherwise. */
static int read_conn(struct barrier_push *push, struct barrier_push_conn *conn,
		     struct barrier_release *released)
{
	for (;;) {
		ssize_t n = recv(conn->fd, conn->buf + conn->len, sizeof(conn->buf) - conn->len, 0);
		char *newline;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			log_reject(push, conn, BARRIER_PUSH_MALFORMED,
				   n == 0 ? "connection closed before a full line" : "receive failed");
			close_conn(conn);
			return 0;
		}
		newline = memchr(conn->buf + conn->len, '\n', (size_t)n);
		conn->len += (size_t)n;
		if (newline) {
			struct barrier_push_msg msg;
			const char *cause = NULL;
			enum barrier_push_verdict verdict;

			if (barrier_push_parse(conn->buf, (size_t)(newline - conn->buf), &msg, &cause) != 0) {
				log_reject(push, conn, BARRIER_PUSH_MALFORMED, cause);
				reply_and_close(conn, BARRIER_PUSH_MALFORMED);
				return 0;
			}
			verdict = barrier_judge_push(&msg, push->token, push->token_len, &push->own);
			if (verdict != BARRIER_PUSH_RELEASE) {
				log_reject(push, conn, verdict,
					   verdict == BARRIER_PUSH_STALE
						   ? "release is for an earlier generation or attempt"
						   : "token does not match");
				reply_and_close(conn, verdict);
				return 0;
			}
			released->attempt = msg.attempt;
			released->generation = msg.generation;
			mlog(MLOG_INFO, "push-accepted", "peer=%s released_attempt=%u released_generation=%u",
			     conn->peer, msg.attempt, msg.generation);
			reply_and_close(conn, BARRIER_PUSH_RELEASE);
			return 1;
		}
		if (conn->len == sizeof(conn->buf)) {
			log_reject(push, conn, BARRIER_PUSH_TOO_LONG, "no newline within 512 bytes");
			reply_and_close(conn, BARRIER_PUSH_TOO_LONG);
			return 0;
		}
	}
}

int barrier_push_handle(struct barrier_push *push, const struct pollfd *fds, uint64_t now_ms,
			struct barrier_release *released)
{
	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++) {
		struct barrier_push_conn *conn = &push->conns[i];

		if (conn->fd < 0 || conn->poll_index < 0 || !fds[conn->poll_index].revents)
			continue;
		if (read_conn(push, conn, released))
			return 1;
	}
	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++) {
		struct barrier_push_conn *conn = &push->conns[i];

		if (conn->fd >= 0 && conn->deadline_ms <= now_ms) {
			log_reject(push, conn, BARRIER_PUSH_TIMEOUT, "line not finished within 2 s");
			reply_and_close(conn, BARRIER_PUSH_TIMEOUT);
		}
	}
	/* Accept last: a slot freed above is reused, and new connections are
	 * not mistaken for readable ones from this round. */
	if (push->listen_poll_index >= 0 && fds[push->listen_poll_index].revents)
		accept_all(push, now_ms);
	return 0;
}

void barrier_push_close(struct barrier_push *push)
{
	for (size_t i = 0; i < BARRIER_PUSH_CONNS; i++)
		close_conn(&push->conns[i]);
	if (push->listen_fd >= 0)
		close(push->listen_fd);
	push->listen_fd = -1;
}
