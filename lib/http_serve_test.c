/*
 * Unit tests of http_serve against a real server on 127.0.0.1 (port 0, so
 * the kernel picks a free one), driven with libcurl: /metrics (content type,
 * body, HEAD, render failure), /healthz and /readyz (200, 503 with a one-line
 * reason), 404 and 405, listen address parsing and refusals, a port in use,
 * parallel clients, the connection limit, and a stop that does not wait for
 * connected clients.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "http_serve.h"
#include "metrics.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_TYPE "text/plain; charset=utf-8"
#define BODY_MAX (8u * 1024u * 1024u)

/* ---- a small client ---- */

struct response {
	long status;
	char *body; /* NUL-terminated */
	size_t body_len;
	char content_type[128];
	char allow[64];
};

static size_t on_body(char *data, size_t size, size_t count, void *arg)
{
	struct response *response = arg;
	size_t len = size * count;
	char *body;

	if (len > BODY_MAX - response->body_len)
		return 0;
	body = realloc(response->body, response->body_len + len + 1);
	if (!body)
		return 0;
	memcpy(body + response->body_len, data, len);
	response->body = body;
	response->body_len += len;
	body[response->body_len] = '\0';
	return len;
}

static size_t on_header(char *data, size_t size, size_t count, void *arg)
{
	struct response *response = arg;
	size_t len = size * count;

	if (len > 6 && strncasecmp(data, "Allow:", 6) == 0) {
		size_t start = 6, end = len;

		while (start < end && data[start] == ' ')
			start++;
		while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n'))
			end--;
		snprintf(response->allow, sizeof(response->allow), "%.*s", (int)(end - start), data + start);
	}
	return len;
}

/* Sends one request on a fresh connection; returns the curl code. */
static CURLcode try_request(const char *host, uint16_t port, const char *method, const char *path,
			    const char *request_body, struct response *out)
{
	CURL *curl = curl_easy_init();
	char url[256];
	const char *content_type = NULL;
	CURLcode code;

	memset(out, 0, sizeof(*out));
	assert_non_null(curl);
	snprintf(url, sizeof(url), "http://%s:%u%s", host, port, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, out);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (request_body)
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request_body);
	code = curl_easy_perform(curl);
	if (code == CURLE_OK) {
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
		curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &content_type);
		if (content_type)
			snprintf(out->content_type, sizeof(out->content_type), "%s", content_type);
	}
	if (!out->body)
		out->body = calloc(1, 1);
	curl_easy_cleanup(curl);
	return code;
}

static void request(uint16_t port, const char *method, const char *path, const char *request_body,
		    struct response *out)
{
	CURLcode code = try_request("127.0.0.1", port, method, path, request_body, out);

	if (code != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(code));
}

/* Expects status, content type and the exact body. */
static void assert_response(uint16_t port, const char *method, const char *path, long status,
			    const char *content_type, const char *body)
{
	struct response response;

	request(port, method, path, NULL, &response);
	assert_int_equal(response.status, status);
	assert_string_equal(response.content_type, content_type);
	assert_string_equal(response.body, body);
	free(response.body);
}

/* ---- fixtures ---- */

/* What the checks answer; set by the test before each request. */
struct checks {
	atomic_int healthy_fails;
	atomic_int ready_fails;
	const char *_Atomic reason;
	atomic_int delay_ms; /* the ready check sleeps this long */
	atomic_int ready_calls;
};

static int check_healthy(void *arg, char *reason, size_t reason_size)
{
	struct checks *checks = arg;

	if (!atomic_load(&checks->healthy_fails))
		return 0;
	snprintf(reason, reason_size, "%s", atomic_load(&checks->reason));
	return 1;
}

static int check_ready(void *arg, char *reason, size_t reason_size)
{
	struct checks *checks = arg;
	int delay_ms = atomic_load(&checks->delay_ms);

	atomic_fetch_add(&checks->ready_calls, 1);
	if (delay_ms) {
		struct timespec pause = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };

		nanosleep(&pause, NULL);
	}
	if (!atomic_load(&checks->ready_fails))
		return 0;
	snprintf(reason, reason_size, "%s", atomic_load(&checks->reason));
	return -1;
}

static struct http_serve *start(const char *listen, const struct http_serve_routes *routes)
{
	struct http_serve *server = NULL;
	char *cause = NULL;
	int err = http_serve_start(listen, routes, &server, &cause);

	if (err)
		fail_msg("http_serve_start(%s): %d %s", listen, err, cause ? cause : "");
	assert_null(cause);
	assert_non_null(server);
	assert_int_not_equal(http_serve_port(server), 0);
	return server;
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* ---- tests ---- */

static void metrics_endpoint(void **state)
{
	struct metrics_registry *registry = NULL;
	struct metrics_counter *counter = NULL;
	struct http_serve_routes routes = { 0 };
	struct http_serve *server;
	struct response response;
	uint16_t port;

	(void)state;
	assert_int_equal(metrics_registry_new(0, &registry), 0);
	assert_int_equal(metrics_counter_register(registry, "muster_releases_total", "Releases written.",
						  NULL, 0, &counter, NULL),
			 0);
	routes.metrics = registry;
	server = start("127.0.0.1:0", &routes);
	port = http_serve_port(server);

	metrics_counter_add(counter, 2);
	assert_response(port, "GET", "/metrics", 200, METRICS_TYPE,
			"# HELP muster_releases_total Releases written.\n"
			"# TYPE muster_releases_total counter\n"
			"muster_releases_total 2\n");
	metrics_counter_inc(counter);
	/* The query string is not part of the path. */
	assert_response(port, "GET", "/metrics?debug=1", 200, METRICS_TYPE,
			"# HELP muster_releases_total Releases written.\n"
			"# TYPE muster_releases_total counter\n"
			"muster_releases_total 3\n");
	/* HEAD: the same status and headers, no body. */
	request(port, "HEAD", "/metrics", NULL, &response);
	assert_int_equal(response.status, 200);
	assert_string_equal(response.content_type, METRICS_TYPE);
	assert_int_equal(response.body_len, 0);
	free(response.body);

	http_serve_stop(server);
	metrics_registry_free(registry);
}

static void metrics_empty_and_large(void **state)
{
	struct metrics_registry *registry = NULL;
	struct metrics_gauge *gauge = NULL;
	struct http_serve_routes routes = { 0 };
	struct http_serve *server;
	struct response response;
	char *text = NULL, value[1024];
	size_t len;

	(void)state;
	assert_int_equal(metrics_registry_new(0, &registry), 0);
	routes.metrics = registry;
	server = start("127.0.0.1:0", &routes);
	assert_response(http_serve_port(server), "GET", "/metrics", 200, METRICS_TYPE, "");

	/* About 2 MiB: 2,000 series with 1 KiB label values. */
	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	for (int i = 0; i < 2000; i++) {
		const struct metrics_label label = { "payload", value };

		snprintf(value, 16, "%015d", i);
		value[15] = 'x';
		assert_int_equal(
			metrics_gauge_register(registry, "muster_big", NULL, &label, 1, &gauge, NULL), 0);
		metrics_gauge_set(gauge, i);
	}
	assert_int_equal(metrics_render(registry, &text, &len, NULL), 0);
	assert_true(len > 2000u * 1024u);
	request(http_serve_port(server), "GET", "/metrics", NULL, &response);
	assert_int_equal(response.status, 200);
	assert_int_equal(response.body_len, len);
	assert_memory_equal(response.body, text, len);
	free(response.body);
	free(text);
	http_serve_stop(server);
	metrics_registry_free(registry);
}

static void metrics_render_failure(void **state)
{
	struct metrics_registry *registry = NULL;
	struct metrics_counter *counter = NULL;
	struct http_serve_routes routes = { 0 };
	struct http_serve *server;

	(void)state;
	assert_int_equal(metrics_registry_new(10, &registry), 0);
	assert_int_equal(
		metrics_counter_register(registry, "muster_releases_total", NULL, NULL, 0, &counter, NULL),
		0);
	routes.metrics = registry;
	server = start("127.0.0.1:0", &routes);
	assert_response(http_serve_port(server), "GET", "/metrics", 500, TEXT_TYPE,
			"metrics unavailable: metrics output exceeds the limit of 10 bytes\n");
	/* The server goes on serving. */
	assert_response(http_serve_port(server), "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	http_serve_stop(server);
	metrics_registry_free(registry);
}

static void health_and_readiness(void **state)
{
	struct checks checks = { 0 };
	struct http_serve_routes routes = { .healthy = check_healthy, .ready = check_ready, .arg = &checks };
	struct http_serve *server;
	uint16_t port;

	(void)state;
	server = start("127.0.0.1:0", &routes);
	port = http_serve_port(server);
	assert_response(port, "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	assert_response(port, "GET", "/readyz", 200, TEXT_TYPE, "ok\n");

	atomic_store(&checks.ready_fails, 1);
	atomic_store(&checks.reason, "JobSet watch not synced");
	assert_response(port, "GET", "/readyz", 503, TEXT_TYPE, "JobSet watch not synced\n");
	/* Liveness is its own check. */
	assert_response(port, "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	atomic_store(&checks.healthy_fails, 1);
	atomic_store(&checks.reason, "pod watch failed: HTTP 403");
	assert_response(port, "GET", "/healthz", 503, TEXT_TYPE, "pod watch failed: HTTP 403\n");
	/* One line only; an empty reason gets a default. */
	atomic_store(&checks.reason, "first line\nsecond line");
	assert_response(port, "GET", "/healthz", 503, TEXT_TYPE, "first line\n");
	assert_response(port, "GET", "/readyz", 503, TEXT_TYPE, "first line\n");
	atomic_store(&checks.reason, "");
	assert_response(port, "GET", "/healthz", 503, TEXT_TYPE, "unhealthy\n");
	assert_response(port, "GET", "/readyz", 503, TEXT_TYPE, "not ready\n");
	assert_response(port, "HEAD", "/readyz", 503, TEXT_TYPE, "");
	atomic_store(&checks.healthy_fails, 0);
	atomic_store(&checks.ready_fails, 0);
	assert_response(port, "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	assert_response(port, "GET", "/readyz", 200, TEXT_TYPE, "ok\n");
	/* /metrics without a registry does not exist. */
	assert_response(port, "GET", "/metrics", 404, TEXT_TYPE, "not found\n");
	http_serve_stop(server);
}

static void without_routes(void **state)
{
	struct http_serve *server;

	(void)state;
	server = start("127.0.0.1:0", NULL);
	assert_response(http_serve_port(server), "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	assert_response(http_serve_port(server), "GET", "/readyz", 200, TEXT_TYPE, "ok\n");
	assert_response(http_serve_port(server), "GET", "/metrics", 404, TEXT_TYPE, "not found\n");
	http_serve_stop(server);
}

static void not_found_and_not_allowed(void **state)
{
	static const struct {
		const char *method;
		const char *path;
		const char *body;
		long status;
		const char *allow;
	} cases[] = {
		{ "GET", "/", NULL, 404, "" },
		{ "GET", "/nope", NULL, 404, "" },
		{ "GET", "/metrics/", NULL, 404, "" },
		{ "GET", "/healthz/x", NULL, 404, "" },
		{ "GET", "/METRICS", NULL, 404, "" },
		{ "POST", "/nope", "x=1", 404, "" },
		{ "POST", "/metrics", "a request body that is never read", 405, "GET, HEAD" },
		{ "POST", "/healthz", NULL, 405, "GET, HEAD" },
		{ "PUT", "/readyz", "{}", 405, "GET, HEAD" },
		{ "DELETE", "/metrics", NULL, 405, "GET, HEAD" },
		{ "OPTIONS", "/metrics", NULL, 405, "GET, HEAD" },
	};
	struct metrics_registry *registry = NULL;
	struct http_serve_routes routes = { 0 };
	struct http_serve *server;

	(void)state;
	assert_int_equal(metrics_registry_new(0, &registry), 0);
	routes.metrics = registry;
	server = start("127.0.0.1:0", &routes);
	for (size_t i = 0; i < N(cases); i++) {
		struct response response;

		request(http_serve_port(server), cases[i].method, cases[i].path, cases[i].body, &response);
		if (response.status != cases[i].status)
			fail_msg("%s %s: status %ld, expected %ld", cases[i].method, cases[i].path,
				 response.status, cases[i].status);
		assert_string_equal(response.allow, cases[i].allow);
		assert_string_equal(response.content_type, TEXT_TYPE);
		assert_string_equal(response.body,
				    cases[i].status == 404 ? "not found\n" : "method not allowed\n");
		free(response.body);
	}
	assert_response(http_serve_port(server), "GET", "/metrics", 200, METRICS_TYPE, "");
	http_serve_stop(server);
	metrics_registry_free(registry);
}

static void listen_parsing(void **state)
{
	static const struct {
		const char *listen;
		int family;
		const char *address;
		uint16_t port;
	} good[] = {
		{ "8080", AF_INET, "0.0.0.0", 8080 },
		{ ":0", AF_INET, "0.0.0.0", 0 },
		{ ":9090", AF_INET, "0.0.0.0", 9090 },
		{ "127.0.0.1:65535", AF_INET, "127.0.0.1", 65535 },
		{ "10.1.2.3:00080", AF_INET, "10.1.2.3", 80 },
		{ "[::1]:9090", AF_INET6, "::1", 9090 },
		{ "[::]:0", AF_INET6, "::", 0 },
		{ "[fd00::1:2]:443", AF_INET6, "fd00::1:2", 443 },
	};
	static const struct {
		const char *listen;
		const char *cause;
	} bad[] = {
		{ "", "empty" },
		{ "abc", "port is not a number from 0 to 65535" },
		{ "1.2.3.4:99999", "port is not a number from 0 to 65535" },
		{ "65536", "port is not a number from 0 to 65535" },
		{ "1.2.3.4:123456", "port is not a number from 0 to 65535" },
		{ "1.2.3.4:", "port is not a number from 0 to 65535" },
		{ ":", "port is not a number from 0 to 65535" },
		{ "1.2.3.4:-1", "port is not a number from 0 to 65535" },
		{ "1.2.3.4:+80", "port is not a number from 0 to 65535" },
		{ "1.2.3.4: 80", "port is not a number from 0 to 65535" },
		{ "1.2.3.4:80 ", "port is not a number from 0 to 65535" },
		{ "999.1.1.1:80", "not an IPv4 address" },
		{ "1.2.3:80", "not an IPv4 address" },
		{ "localhost:80", "host names are not resolved" },
		{ " 1.2.3.4:80", "not an IPv4 address" },
		{ "::1:80", "[ADDRESS]:PORT" },
		{ "[::1]80", "[ADDRESS]:PORT" },
		{ "[::1", "[ADDRESS]:PORT" },
		{ "[]:80", "not an IPv6 address" },
		{ "[1.2.3.4]:80", "not an IPv6 address" },
		{ "[fe80::1%eth0]:80", "not an IPv6 address" },
		{ "[::1]:", "port is not a number" },
		{ "[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000]:1", "address is too long" },
	};
	struct http_serve_addr addr;
	const char *cause;

	(void)state;
	for (size_t i = 0; i < N(good); i++) {
		char text[INET6_ADDRSTRLEN];
		uint16_t port;

		cause = NULL;
		if (http_serve_parse_listen(good[i].listen, &addr, &cause) != 0)
			fail_msg("\"%s\" refused: %s", good[i].listen, cause);
		assert_int_equal(addr.addr.ss_family, good[i].family);
		if (good[i].family == AF_INET) {
			struct sockaddr_in four;

			assert_int_equal(addr.addr_len, sizeof(four));
			memcpy(&four, &addr.addr, sizeof(four));
			inet_ntop(AF_INET, &four.sin_addr, text, sizeof(text));
			port = ntohs(four.sin_port);
		} else {
			struct sockaddr_in6 six;

			assert_int_equal(addr.addr_len, sizeof(six));
			memcpy(&six, &addr.addr, sizeof(six));
			inet_ntop(AF_INET6, &six.sin6_addr, text, sizeof(text));
			port = ntohs(six.sin6_port);
		}
		assert_string_equal(text, good[i].address);
		assert_int_equal(port, good[i].port);
	}
	for (size_t i = 0; i < N(bad); i++) {
		cause = NULL;
		if (http_serve_parse_listen(bad[i].listen, &addr, &cause) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i].listen);
		assert_non_null(cause);
		if (!strstr(cause, bad[i].cause))
			fail_msg("\"%s\": cause \"%s\" lacks \"%s\"", bad[i].listen, cause, bad[i].cause);
	}
	cause = NULL;
	assert_int_equal(http_serve_parse_listen(NULL, &addr, &cause), -EINVAL);
	assert_non_null(cause);
}

static void start_refuses_bad_listen(void **state)
{
	static const struct {
		const char *listen;
		const char *cause;
	} cases[] = {
		{ "", "listen address \"\": empty (expected [ADDRESS:]PORT)" },
		{ "abc", "listen address \"abc\": port is not a number from 0 to 65535" },
		{ "1.2.3.4:99999", "listen address \"1.2.3.4:99999\": port is not a number from 0 to 65535" },
		{ "bad\n:1", "listen address \"bad\\x0a:1\": not an IPv4 address" },
	};
	struct http_serve *server;

	(void)state;
	/* Port 0 on every address is fine. */
	server = start(":0", NULL);
	assert_response(http_serve_port(server), "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	for (size_t i = 0; i < N(cases); i++) {
		struct http_serve *refused = server; /* a refusal sets it to NULL */
		char *cause = NULL;

		assert_int_equal(http_serve_start(cases[i].listen, NULL, &refused, &cause), -EINVAL);
		assert_null(refused);
		assert_non_null(cause);
		if (strncmp(cause, cases[i].cause, strlen(cases[i].cause)) != 0)
			fail_msg("cause \"%s\", expected \"%s\"", cause, cases[i].cause);
		free(cause);
	}
	http_serve_stop(server);
}

static void port_in_use(void **state)
{
	struct http_serve *first, *second = NULL;
	char listen[32], expected[96], *cause = NULL;

	(void)state;
	first = start("127.0.0.1:0", NULL);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", http_serve_port(first));
	assert_int_equal(http_serve_start(listen, NULL, &second, &cause), -EADDRINUSE);
	assert_null(second);
	snprintf(expected, sizeof(expected), "cannot listen on %s: Address already in use", listen);
	assert_non_null(cause);
	assert_string_equal(cause, expected);
	free(cause);
	/* The first server is untouched. */
	assert_response(http_serve_port(first), "GET", "/healthz", 200, TEXT_TYPE, "ok\n");
	http_serve_stop(first);
	/* Once stopped, the port is free again. */
	second = start(listen, NULL);
	assert_response(http_serve_port(second), "GET", "/readyz", 200, TEXT_TYPE, "ok\n");
	http_serve_stop(second);
}

static void ipv6_loopback(void **state)
{
	struct http_serve *server = NULL;
	struct response response;
	char *cause = NULL;
	int err;

	(void)state;
	err = http_serve_start("[::1]:0", NULL, &server, &cause);
	if (err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT) {
		free(cause);
		skip(); /* no IPv6 loopback here */
	}
	assert_int_equal(err, 0);
	assert_int_equal(try_request("[::1]", http_serve_port(server), "GET", "/healthz", NULL, &response),
			 CURLE_OK);
	assert_int_equal(response.status, 200);
	assert_string_equal(response.body, "ok\n");
	free(response.body);
	http_serve_stop(server);
}

struct client_args {
	uint16_t port;
	atomic_int failures;
};

static void *parallel_client(void *arg)
{
	struct client_args *args = arg;
	static const char *const paths[] = { "/metrics", "/healthz", "/readyz" };

	for (int i = 0; i < 30; i++) {
		struct response response;

		if (try_request("127.0.0.1", args->port, "GET", paths[i % 3], NULL, &response) != CURLE_OK ||
		    response.status != 200)
			atomic_fetch_add(&args->failures, 1);
		free(response.body);
	}
	return NULL;
}

static void parallel_clients(void **state)
{
	struct metrics_registry *registry = NULL;
	struct metrics_counter *counter = NULL;
	struct checks checks = { 0 };
	struct http_serve_routes routes = { .healthy = check_healthy, .ready = check_ready, .arg = &checks };
	struct client_args args = { 0 };
	struct http_serve *server;
	pthread_t threads[8];

	(void)state;
	assert_int_equal(metrics_registry_new(0, &registry), 0);
	assert_int_equal(metrics_counter_register(registry, "c", NULL, NULL, 0, &counter, NULL), 0);
	routes.metrics = registry;
	server = start("127.0.0.1:0", &routes);

	args.port = http_serve_port(server);
	for (size_t i = 0; i < N(threads); i++)
		assert_int_equal(pthread_create(&threads[i], NULL, parallel_client, &args), 0);
	for (size_t i = 0; i < N(threads); i++)
		assert_int_equal(pthread_join(threads[i], NULL), 0);
	assert_int_equal(atomic_load(&args.failures), 0);
	assert_int_equal(atomic_load(&checks.ready_calls), 8 * 10);
	http_serve_stop(server);
	metrics_registry_free(registry);
}

static void connection_limit(void **state)
{
	struct sockaddr_in address = { .sin_family = AF_INET };
	int idle[HTTP_SERVE_CONNECTIONS_MAX];
	struct http_serve *server;
	struct response response;
	CURLcode code;

	(void)state;
	server = start("127.0.0.1:0", NULL);
	address.sin_port = htons(http_serve_port(server));
	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (size_t i = 0; i < N(idle); i++) {
		idle[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(idle[i] >= 0);
		assert_int_equal(connect(idle[i], (const struct sockaddr *)&address, sizeof(address)), 0);
	}
	/* Every slot is taken by a silent client: one more is closed unanswered. */
	code = try_request("127.0.0.1", http_serve_port(server), "GET", "/healthz", NULL, &response);
	assert_int_not_equal(code, CURLE_OK);
	free(response.body);
	for (size_t i = 0; i < N(idle); i++)
		close(idle[i]);
	/* The slots come back once their clients leave. */
	for (int attempt = 0;; attempt++) {
		struct timespec pause = { 0, 10000000L };

		code = try_request("127.0.0.1", http_serve_port(server), "GET", "/healthz", NULL, &response);
		if (code == CURLE_OK)
			break;
		free(response.body);
		assert_true(attempt < 300);
		nanosleep(&pause, NULL);
	}
	assert_int_equal(response.status, 200);
	free(response.body);
	http_serve_stop(server);
}

struct slow_client {
	uint16_t port;
	CURLcode code;
	long status;
};

static void *slow_ready_client(void *arg)
{
	struct slow_client *client = arg;
	struct response response;

	client->code = try_request("127.0.0.1", client->port, "GET", "/readyz", NULL, &response);
	client->status = response.status;
	free(response.body);
	return NULL;
}

static void stop_with_connected_clients(void **state)
{
	struct checks checks = { 0 };
	struct http_serve_routes routes = { .ready = check_ready, .arg = &checks };
	struct slow_client slow = { 0 };
	static const char partial[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
	struct sockaddr_in address = { .sin_family = AF_INET };
	struct http_serve *server;
	struct timespec begin;
	pthread_t thread;
	char byte;
	int idle, half;

	(void)state;
	alarm(30); /* a hang fails the test instead of blocking the suite */
	server = start("127.0.0.1:0", &routes);
	address.sin_port = htons(http_serve_port(server));
	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	/* One client connected and silent, one half-way through its request
	 * line, one inside a check that takes 300 ms. */
	idle = socket(AF_INET, SOCK_STREAM, 0);
	half = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(idle >= 0 && half >= 0);
	assert_int_equal(connect(idle, (const struct sockaddr *)&address, sizeof(address)), 0);
	assert_int_equal(connect(half, (const struct sockaddr *)&address, sizeof(address)), 0);
	assert_int_equal(send(half, partial, sizeof(partial) - 1, 0), (ssize_t)(sizeof(partial) - 1));
	atomic_store(&checks.delay_ms, 300);
	slow.port = http_serve_port(server);
	assert_int_equal(pthread_create(&thread, NULL, slow_ready_client, &slow), 0);
	while (atomic_load(&checks.ready_calls) == 0) {
		struct timespec pause = { 0, 1000000L };

		nanosleep(&pause, NULL);
	}

	clock_gettime(CLOCK_MONOTONIC, &begin);
	http_serve_stop(server);
	/* Waits for the check under way (300 ms), once, and not for the idle
	 * clients (HTTP_SERVE_IDLE_SECONDS). */
	assert_true(seconds_since(&begin) < 1.5);
	assert_int_equal(atomic_load(&checks.ready_calls), 1);
	assert_int_equal(pthread_join(thread, NULL), 0);
	if (slow.code == CURLE_OK)
		assert_int_equal(slow.status, 200);
	/* The connected clients were disconnected. */
	assert_true(recv(idle, &byte, 1, 0) <= 0);
	assert_true(recv(half, &byte, 1, 0) <= 0);
	close(idle);
	close(half);
	alarm(0);
	http_serve_stop(NULL);
	assert_int_equal(http_serve_port(NULL), 0);
}

static int setup(void **state)
{
	(void)state;
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(metrics_endpoint),
		cmocka_unit_test(metrics_empty_and_large),
		cmocka_unit_test(metrics_render_failure),
		cmocka_unit_test(health_and_readiness),
		cmocka_unit_test(without_routes),
		cmocka_unit_test(not_found_and_not_allowed),
		cmocka_unit_test(listen_parsing),
		cmocka_unit_test(start_refuses_bad_listen),
		cmocka_unit_test(port_in_use),
		cmocka_unit_test(ipv6_loopback),
		cmocka_unit_test(parallel_clients),
		cmocka_unit_test(connection_limit),
		cmocka_unit_test(stop_with_connected_clients),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
