/*
 * kube_curl: libcurl transport. See kube_curl.h for the contract.
 *
 * Each request starts with curl_easy_reset, which clears the options but, by
 * libcurl's design, keeps the connection cache: the options are then applied
 * afresh, so no setting of one request (method, body, headers) can leak into
 * the next while the connection is still reused.
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_curl.h"
#include "kube_client.h"
#include "kube_error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

/* Longest URL built (server plus path and query). */
#define KUBE_CURL_URL_MAX (16 * 1024)
/* Longest bearer token accepted from a file. */
#define KUBE_CURL_TOKEN_MAX (64 * 1024)
/* How much of a failed stream's body is kept for its Status message. */
#define KUBE_CURL_ERROR_BODY_MAX (64 * 1024)

struct kube_curl {
	CURL *easy;
	char *server;
	char *ca_file;
	unsigned char *ca_data;
	size_t ca_data_len;
	char *cert_file;
	unsigned char *cert_data;
	size_t cert_data_len;
	char *key_file;
	unsigned char *key_data;
	size_t key_data_len;
	long connect_timeout_ms;

	char *token; /* current bearer token, or NULL for none */
	char *token_file;
	struct stat token_stat; /* identity of the file token was read from */

	char errbuf[CURL_ERROR_SIZE];
};

static void wipe_free(char *s)
{
	volatile char *p = s;

	if (!s)
		return;
	while (*p)
		*p++ = 0;
	free(s);
}

static int dup_bytes(const unsigned char *src, size_t len, unsigned char **out)
{
	*out = NULL;
	if (!src)
		return 0;
	*out = malloc(len ? len : 1);
	if (!*out)
		return -1;
	memcpy(*out, src, len);
	return 0;
}

static int dup_str(const char *src, char **out)
{
	*out = src ? strdup(src) : NULL;
	return src && !*out ? -1 : 0;
}

/* Re-reads the token file if it changed since the last read. */
static int token_refresh(struct kube_curl *c, char **cause)
{
	struct stat st;
	char *text = NULL;
	size_t len;
	int err;

	if (!c->token_file)
		return MUSTER_OK;
	if (stat(c->token_file, &st) != 0) {
		if (c->token)
			return MUSTER_OK;
		return cause_err(cause, MUSTER_EIO, "cannot stat the token file %s", c->token_file);
	}
	if (c->token && st.st_ino == c->token_stat.st_ino && st.st_dev == c->token_stat.st_dev &&
	    st.st_size == c->token_stat.st_size && st.st_mtim.tv_sec == c->token_stat.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == c->token_stat.st_mtim.tv_nsec)
		return MUSTER_OK;
	err = kube_read_file(c->token_file, KUBE_CURL_TOKEN_MAX, &text, &len, cause);
	if (err) {
		/* A rotation in progress must not break a working client. */
		return c->token ? MUSTER_OK : err;
	}
	while (len > 0 && strchr(" \t\r\n", text[len - 1]))
		text[--len] = '\0';
	if (len == 0 || strpbrk(text, "\r\n")) {
		wipe_free(text);
		return c->token ? MUSTER_OK
				: cause_err(cause, MUSTER_ECONFIG, "the token file %s is empty or malformed",
					    c->token_file);
	}
	wipe_free(c->token);
	c->token = text;
	c->token_stat = st;
	return MUSTER_OK;
}

void kube_curl_free(struct kube_curl *c)
{
	if (!c)
		return;
	if (c->easy)
		curl_easy_cleanup(c->easy);
	free(c->server);
	free(c->ca_file);
	free(c->ca_data);
	free(c->cert_file);
	free(c->cert_data);
	free(c->key_file);
	if (c->key_data) {
		memset(c->key_data, 0, c->key_data_len);
		free(c->key_data);
	}
	wipe_free(c->token);
	free(c->token_file);
	free(c);
	curl_global_cleanup();
}

int kube_curl_new(const struct kube_config *cfg, struct kube_curl **out, char **cause)
{
	struct kube_curl *c = NULL;
	int err = MUSTER_ENOMEM;

	*out = NULL;
	if (!cfg->server || strncmp(cfg->server, "https://", 8) != 0)
		return cause_err(cause, MUSTER_ECONFIG, "the API server must be an https:// URL");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return cause_err(cause, MUSTER_ETRANSPORT, "libcurl failed to initialise");
	c = calloc(1, sizeof(*c));
	if (!c) {
		curl_global_cleanup();
		return MUSTER_ENOMEM;
	}
	if (dup_str(cfg->server, &c->server) || dup_str(cfg->ca_file, &c->ca_file) ||
	    dup_bytes(cfg->ca_data, cfg->ca_data_len, &c->ca_data) ||
	    dup_str(cfg->client_cert_file, &c->cert_file) ||
	    dup_bytes(cfg->client_cert_data, cfg->client_cert_data_len, &c->cert_data) ||
	    dup_str(cfg->client_key_file, &c->key_file) ||
	    dup_bytes(cfg->client_key_data, cfg->client_key_data_len, &c->key_data) ||
	    dup_str(cfg->token, &c->token) || dup_str(cfg->token_file, &c->token_file))
		goto out;
	c->ca_data_len = cfg->ca_data_len;
	c->cert_data_len = cfg->client_cert_data_len;
	c->key_data_len = cfg->client_key_data_len;
	c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000L;
	/* An inline token takes precedence over a token file, as in kubectl. */
	if (c->token) {
		free(c->token_file);
		c->token_file = NULL;
	}
	if ((err = token_refresh(c, cause)))
		goto out;
	c->easy = curl_easy_init();
	if (!c->easy) {
		err = cause_err(cause, MUSTER_ENOMEM, "libcurl could not create a handle");
		goto out;
	}
	*out = c;
	c = NULL;
	err = MUSTER_OK;
out:
	kube_curl_free(c);
	return err;
}

/* ---- per-request setup ---- */

struct body_sink {
	char *buf;
	size_t len, cap, max;
	int toobig;
};

static int sink_append(struct body_sink *s, const char *data, size_t n)
{
	if (n > s->max - s->len) {
		s->toobig = 1;
		return -1;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *nbuf;

		while (cap < s->len + n + 1)
			cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
		if (cap > s->max + 1)
			cap = s->max + 1;
		nbuf = realloc(s->buf, cap);
		if (!nbuf)
			return -1;
		s->buf = nbuf;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	size_t n = size * nmemb;

	/* Returning less than n makes libcurl fail with CURLE_WRITE_ERROR. */
	return sink_append(arg, data, n) == 0 ? n : 0;
}

static int map_curl(struct kube_curl *c, CURLcode rc, const char *path, char **cause)
{
	int err;

	switch (rc) {
	case CURLE_OK:
		return MUSTER_OK;
	case CURLE_OUT_OF_MEMORY:
		return MUSTER_ENOMEM;
	case CURLE_OPERATION_TIMEDOUT:
		err = MUSTER_ETIMEOUT;
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
		err = MUSTER_ETLS;
		break;
	default:
		err = MUSTER_ETRANSPORT;
		break;
	}
	return cause_err(cause, err, "%.256s: %s", path, c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
}

static const char *method_name(enum kube_method m)
{
	static const char *const names[] = {
		[KUBE_METHOD_GET] = "GET",     [KUBE_METHOD_POST] = "POST",	[KUBE_METHOD_PUT] = "PUT",
		[KUBE_METHOD_PATCH] = "PATCH", [KUBE_METHOD_DELETE] = "DELETE",
	};

	return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "GET";
}

/* Adds a header to *list; returns -1 on allocation failure. */
static int add_header(struct curl_slist **list, const char *header)
{
	struct curl_slist *n = curl_slist_append(*list, header);

	if (!n)
		return -1;
	*list = n;
	return 0;
}

/* Resets the handle and applies everything common to all requests. The
 * caller frees *headers with curl_slist_free_all after the transfer. */
static int setup(struct kube_curl *c, const struct kube_request *req, struct curl_slist **headers,
		 char **cause)
{
	CURL *h = c->easy;
	char url[KUBE_CURL_URL_MAX];
	CURLcode rc = CURLE_OK;
	int err, n;

	*headers = NULL;
	if (!req->path || req->path[0] != '/')
		return cause_err(cause, MUSTER_EINVAL, "request path must begin with '/'");
	n = snprintf(url, sizeof(url), "%s%s", c->server, req->path);
	if (n < 0 || (size_t)n >= sizeof(url))
		return cause_err(cause, MUSTER_EINVAL, "request URL longer than %d bytes", KUBE_CURL_URL_MAX);
	if ((err = token_refresh(c, cause)))
		return err;

	curl_easy_reset(h);
	c->errbuf[0] = '\0';
	if (add_header(headers, "Accept: application/json") || add_header(headers, "Expect:"))
		return MUSTER_ENOMEM;
	if (req->content_type) {
		char ct[256];

		snprintf(ct, sizeof(ct), "Content-Type: %s", req->content_type);
		if (add_header(headers, ct))
			return MUSTER_ENOMEM;
	}
	if (c->token) {
		size_t len = strlen(c->token) + 32;
		char *auth = malloc(len);

		if (!auth)
			return MUSTER_ENOMEM;
		snprintf(auth, len, "Authorization: Bearer %s", c->token);
		n = add_header(headers, auth);
		wipe_free(auth);
		if (n)
			return MUSTER_ENOMEM;
	}

	/* Each setopt can only fail on memory or an unsupported option; the
	 * first failure is kept. */
#define KUBE_SET(opt, value)                                                                                 \
	do {                                                                                                 \
		if (rc == CURLE_OK)                                                                          \
			rc = curl_easy_setopt(h, opt, value);                                                \
	} while (0)
	KUBE_SET(CURLOPT_URL, url);
	KUBE_SET(CURLOPT_ERRORBUFFER, c->errbuf);
	KUBE_SET(CURLOPT_NOSIGNAL, 1L);
	KUBE_SET(CURLOPT_PROTOCOLS_STR, "https");
	KUBE_SET(CURLOPT_FOLLOWLOCATION, 0L);
	KUBE_SET(CURLOPT_SSL_VERIFYPEER, 1L);
	KUBE_SET(CURLOPT_SSL_VERIFYHOST, 2L);
	KUBE_SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	KUBE_SET(CURLOPT_TCP_KEEPALIVE, 1L);
	KUBE_SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	KUBE_SET(CURLOPT_USERAGENT, "muster/kube-client");
	KUBE_SET(CURLOPT_HTTPHEADER, *headers);
	if (c->ca_file)
		KUBE_SET(CURLOPT_CAINFO, c->ca_file);
	if (c->ca_data) {
		struct curl_blob blob = { c->ca_data, c->ca_data_len, CURL_BLOB_COPY };

		KUBE_SET(CURLOPT_CAINFO_BLOB, &blob);
	}
	if (c->cert_file)
		KUBE_SET(CURLOPT_SSLCERT, c->cert_file);
	if (c->cert_data) {
		struct curl_blob blob = { c->cert_data, c->cert_data_len, CURL_BLOB_COPY };

		KUBE_SET(CURLOPT_SSLCERT_BLOB, &blob);
	}
	if (c->cert_file || c->cert_data)
		KUBE_SET(CURLOPT_SSLCERTTYPE, "PEM");
	if (c->key_file)
		KUBE_SET(CURLOPT_SSLKEY, c->key_file);
	if (c->key_data) {
		struct curl_blob blob = { c->key_data, c->key_data_len, CURL_BLOB_COPY };

		KUBE_SET(CURLOPT_SSLKEY_BLOB, &blob);
	}
	if (c->key_file || c->key_data)
		KUBE_SET(CURLOPT_SSLKEYTYPE, "PEM");
	if (req->method != KUBE_METHOD_GET)
		KUBE_SET(CURLOPT_CUSTOMREQUEST, method_name(req->method));
	if (req->body) {
		KUBE_SET(CURLOPT_POSTFIELDS, req->body);
		KUBE_SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
#undef KUBE_SET
	if (rc != CURLE_OK)
		return cause_err(cause, rc == CURLE_OUT_OF_MEMORY ? MUSTER_ENOMEM : MUSTER_ECONFIG,
				 "libcurl refused an option: %s", curl_easy_strerror(rc));
	return MUSTER_OK;
}

/* A request's progress: given up once its stop flag is set. */
static int on_send_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			    curl_off_t ulnow)
{
	const atomic_int *stop = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return atomic_load(stop) ? 1 : 0;
}

static void free_curl(void *ctx)
{
	kube_curl_free(ctx);
}

int kube_client_open(const struct kube_config *cfg, struct kube_client **out, char **cause)
{
	struct kube_curl *curl = NULL;
	int err;

	*out = NULL;
	if ((err = kube_curl_new(cfg, &curl, cause)))
		return err;
	if ((err = kube_client_new(cfg, &kube_curl_transport, curl, NULL, out, cause))) {
		kube_curl_free(curl);
		return err;
	}
	kube_client_own_transport(*out, free_curl);
	return MUSTER_OK;
}

static int curl_send(void *ctx, const struct kube_request *req, struct kube_response *resp, char **cause)
{
	struct kube_curl *c = ctx;
	struct curl_slist *headers = NULL;
	struct body_sink sink = { .max = req->max_response };
	CURLcode rc = CURLE_OK;
	int err;

	resp->status = 0;
	resp->body = NULL;
	resp->body_len = 0;
	if ((err = setup(c, req, &headers, cause)))
		goto out;
	rc = curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &sink);
	if (rc == CURLE_OK && req->timeout_ms > 0)
		rc = curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	if (rc == CURLE_OK && req->stop) {
		rc = curl_easy_setopt(c->easy, CURLOPT_NOPROGRESS, 0L);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(c->easy, CURLOPT_XFERINFOFUNCTION, on_send_progress);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(c->easy, CURLOPT_XFERINFODATA, (void *)(uintptr_t)req->stop);
	}
	if (rc == CURLE_OK)
		rc = curl_easy_perform(c->easy);
	if (rc == CURLE_ABORTED_BY_CALLBACK && req->stop && atomic_load(req->stop)) {
		err = cause_err(cause, MUSTER_ESTOPPED, "%.256s: stopped", req->path);
		goto out;
	}
	if (sink.toobig) {
		err = cause_err(cause, MUSTER_ETOOBIG, "%.256s: response larger than %zu bytes", req->path,
				req->max_response);
		goto out;
	}
	if ((err = map_curl(c, rc, req->path, cause)))
		goto out;
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	if (!sink.buf && !(sink.buf = calloc(1, 1))) {
		err = MUSTER_ENOMEM;
		goto out;
	}
	resp->body = sink.buf;
	resp->body_len = sink.len;
	sink.buf = NULL;
out:
	free(sink.buf);
	curl_slist_free_all(headers);
	return err;
}

/* ---- streams ---- */

struct stream_state {
	CURL *easy;
	long status; /* 0 until the first body byte */
	struct body_sink line; /* the line being assembled */
	struct body_sink error_body; /* body of a non-2xx response */
	kube_line_fn on_line;
	void *arg;
	const atomic_int *stop;
	int stopped;
};

static size_t on_stream(char *data, size_t size, size_t nmemb, void *arg)
{
	struct stream_state *s = arg;
	size_t n = size * nmemb, done = 0;

	if (s->status == 0)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status < 200 || s->status >= 300) {
		/* Keep the start of an error body; ignore the rest. */
		if (s->error_body.len < s->error_body.max)
			(void)sink_append(&s->error_body, data,
					  n < s->error_body.max - s->error_body.len
						  ? n
						  : s->error_body.max - s->error_body.len);
		return n;
	}
	while (done < n) {
		const char *nl = memchr(data + done, '\n', n - done);
		size_t seg = nl ? (size_t)(nl - (data + done)) : n - done;

		if (sink_append(&s->line, data + done, seg) != 0)
			return 0;
		done += seg;
		if (!nl)
			break;
		done++;
		if (s->line.len > 0 && s->line.buf[s->line.len - 1] == '\r')
			s->line.buf[--s->line.len] = '\0';
		if (s->line.len > 0 && s->on_line(s->arg, s->line.buf, s->line.len) != 0) {
			s->stopped = 1;
			return 0;
		}
		s->line.len = 0;
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct stream_state *s = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (s->stop && atomic_load(s->stop)) {
		s->stopped = 1;
		return 1;
	}
	return 0;
}

static int curl_stream(void *ctx, const struct kube_request *req, size_t max_line, long idle_timeout_s,
		       const atomic_int *stop, kube_line_fn on_line, void *arg, long *status,
		       char **error_body, char **cause)
{
	struct kube_curl *c = ctx;
	struct curl_slist *headers = NULL;
	struct stream_state s = {
		.easy = c->easy,
		.line = { .max = max_line },
		.error_body = { .max = KUBE_CURL_ERROR_BODY_MAX },
		.on_line = on_line,
		.arg = arg,
		.stop = stop,
	};
	CURLcode rc = CURLE_OK;
	int err;

	*status = 0;
	*error_body = NULL;
	if ((err = setup(c, req, &headers, cause)))
		goto out;
	/* No total timeout: a watch lasts as long as the server keeps it. A
	 * connection on which nothing arrives for idle_timeout_s is dead. */
	rc = curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_stream);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &s);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_NOPROGRESS, 0L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_XFERINFODATA, &s);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c->easy, CURLOPT_LOW_SPEED_TIME,
				      idle_timeout_s > 0 ? idle_timeout_s : 60L);
	if (rc == CURLE_OK)
		rc = curl_easy_perform(c->easy);
	if (s.stopped) {
		err = MUSTER_OK;
	} else if (s.line.toobig) {
		err = cause_err(cause, MUSTER_ETOOBIG, "%.256s: stream line longer than %zu bytes", req->path,
				max_line);
	} else {
		err = map_curl(c, rc, req->path, cause);
	}
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, status);
	if (*status != 0 && (*status < 200 || *status >= 300)) {
		*error_body = s.error_body.buf;
		s.error_body.buf = NULL;
	}
out:
	free(s.line.buf);
	free(s.error_body.buf);
	curl_slist_free_all(headers);
	return err;
}

const struct kube_transport kube_curl_transport = {
	.send = curl_send,
	.stream = curl_stream,
};
