/*
 * http_post: the POST routes of the HTTP server: a request from its headers
 * to its reply, its body read within body_max and the server's bodies_max,
 * a body over a limit read and dropped, then refused. Not the dispatch of
 * requests, the GET routes or the responses themselves (http_serve.c), nor
 * the body's deadline, which the sweeper keeps (http_conn.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <microhttpd.h>

#include "http_serve_int.h"
#include "mlog.h"

/* A body without Content-Length starts with this much room, then doubles. */
#define BODY_INITIAL_SIZE 4096u

/* A POST request being read, from its headers to its reply. */
struct request {
	const struct http_serve_post_route *post;
	struct timespec begin;
	char *body; /* NUL-terminated; NULL until the first byte */
	size_t body_len, body_size; /* bytes held, bytes allocated (counted in bodies_held) */
	size_t received; /* bytes of body seen, held or dropped */
	unsigned refusal; /* 0, or the status already decided (413, 500): the body is dropped */
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
	return http_reply_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, body);
}

static enum MHD_Result reply_too_large(struct http_serve *server, struct MHD_Connection *connection)
{
	char body[96];

	snprintf(body, sizeof(body), "request body exceeds the limit of %zu bytes\n", server->body_max);
	return http_reply_text(connection, MHD_HTTP_CONTENT_TOO_LARGE, body);
}

/* The first call of a POST route's request, with its headers: refuses what
 * can be refused before the body (wrong method, a Content-Length over the
 * limit), else makes the request's state. */
enum MHD_Result http_post_begin(struct http_serve *server, struct MHD_Connection *connection,
				const struct http_serve_post_route *post, const char *method,
				const struct timespec *begin, void **request_state)
{
	const char *length_text, *expect;
	struct request *request;
	enum MHD_Result result;
	uint64_t length = 0;
	int has_length;

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
		result = http_reply_not_allowed(connection, "POST");
		http_observe_latency(server, post->name, "method_not_allowed", begin);
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
			http_observe_latency(server, post->name, "too_large", begin);
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
		result = http_reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		http_observe_latency(server, post->name, "error", begin);
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
enum MHD_Result http_post_data(struct http_serve *server, struct request *request, const char *data,
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

enum MHD_Result http_post_end(struct http_serve *server, struct MHD_Connection *connection,
			      struct request *request)
{
	const struct http_serve_post_route *post = request->post;
	struct http_serve_reply answer = { 0 };
	enum MHD_Result result;
	const char *label;

	if (request->refusal == MHD_HTTP_CONTENT_TOO_LARGE) {
		result = reply_too_large(server, connection);
		http_observe_latency(server, post->name, "too_large", &request->begin);
		return result;
	}
	if (request->refusal == MHD_HTTP_SERVICE_UNAVAILABLE) {
		mlog(MLOG_WARN, "http-bodies-busy", "listen=%s route=%s bodies_max=%zu", server->address,
		     post->name, server->bodies_max);
		result = reply_busy(server, connection);
		http_observe_latency(server, post->name, "busy", &request->begin);
		return result;
	}
	if (request->refusal) {
		result = http_reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		http_observe_latency(server, post->name, "error", &request->begin);
		return result;
	}
	post->handle(post->arg, request->body ? request->body : "", request->body_len, &answer);
	body_drop(server, request);
	if (answer.status < 200 || answer.status > 599) {
		mlog(MLOG_ERROR, "http-handler-failed",
		     "listen=%s route=%s status=%u cause=\"status out of range\"", server->address,
		     post->name, answer.status);
		free(answer.body);
		result = http_reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n");
		http_observe_latency(server, post->name, "error", &request->begin);
		return result;
	}
	label = answer.result ? answer.result : answer.status < 400 ? "ok" : "error";
	result = http_reply(connection, answer.status,
			    answer.content_type ? answer.content_type : TEXT_CONTENT_TYPE, answer.body,
			    answer.body ? answer.body_len : 0, 1, NULL);
	http_observe_latency(server, post->name, label, &request->begin);
	return result;
}

void http_post_free(struct http_serve *server, struct request *request)
{
	if (!request)
		return;
	body_drop(server, request);
	free(request);
}
