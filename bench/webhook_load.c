/*
 * webhook_load: a paced HTTPS load generator for the admission webhook
 * (bin/muster-webhook), one thread on libcurl's multi interface.
 *
 * It posts one body (an AdmissionReview: bench/webhook/admission-review.json)
 * over at most --connections keep-alive HTTP/1.1 connections, TLS verified
 * against --cacert, at a fixed rate: request i is due at start + i/R whatever
 * happened to the requests before it, as the apiserver's many independent
 * callers would send them. A closed-loop tool (wrk, ab) sends the next request
 * only when one comes back, so a stalled server also stalls the load and the
 * stall is counted once instead of for every request it delayed ("coordinated
 * omission"). Here a request that cannot go on time, because every connection
 * is busy, waits, and its latency counts from when it was due. Two latencies
 * are reported for every answered request:
 *
 *   from schedule  due time -> response complete (what a caller would see);
 *   from send      handed to libcurl -> response complete (the server's
 *                  response time plus the client's own overhead);
 *
 * and the send lag between them (due -> handed to libcurl: the queueing
 * behind busy connections and the generator's own lateness).
 *
 * Figures of a run: requests sent, answered 2xx, HTTP errors (any other
 * status), transport errors (libcurl's: refused, reset, TLS, timeout), the
 * achieved rate, p50/p90/p99/p99.9/max in ms (exact: every sample is kept and
 * sorted), the connections opened (the sum of CURLINFO_NUM_CONNECTS: about
 * --connections or fewer when keep-alive works, one per request when it does
 * not) and the generator's own CPU time; --samples also writes every
 * request's latencies as CSV. --max ramps the rate (max_rates) in short steps,
 * running a step that did not hold once more, and then bisects twice between
 * the last rate that held and the first that did not; a step holds when the
 * achieved rate is at least 98 % of the target, no request failed and p99
 * from schedule is at most 10 ms.
 *
 * The clock is CLOCK_MONOTONIC. The next due request is woken by a timerfd
 * (nanosecond deadline, timer slack lowered to 1 ns) polled beside libcurl's
 * sockets, so pacing is not rounded to curl_multi_poll()'s milliseconds.
 *
 * Bounded: a run keeps at most SAMPLES_MAX samples (--rate x --duration is
 * checked before anything starts), CONNECTIONS_MAX connections, a body of
 * BODY_MAX bytes, RESPONSE_KEEP bytes of each response (for --expect), each
 * request --timeout seconds, and a backlog is sent for at most max(5 s,
 * --duration) after its schedule ends (the rest count as not sent).
 *
 * It is not a general HTTP benchmark (one URL, one body, POST only) and not
 * multi-threaded: one thread drives every connection, and its CPU use is
 * printed with each result so that a run the generator itself cannot drive
 * shows as such. On the 2-CPU VM of docs/benchmarks.md it takes a third of a
 * core at 2,000 requests/s (most of it the kernel's wake-ups, one per request
 * each way) and holds 7,500 to 9,000/s on one core against a server that does
 * nothing; wrk, closed-loop, needs less per request because its requests
 * bunch up.
 *
 *   webhook_load --url URL --cacert FILE --body FILE [--rate R] [--duration S]
 *                [--warmup S] [--connections N] [--timeout S] [--expect STR]
 *                [--samples FILE] [--max] [--json]
 *
 * Exit status: 0 when every request was answered 2xx (and held --expect);
 * 1 when one was not (the figures are printed all the same); 2 when the run
 * could not be made (usage, body file, libcurl setup).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES_MAX 4000000u
#define CONNECTIONS_MAX 256L
#define BODY_MAX (4u * 1024u * 1024u)
#define RESPONSE_KEEP (64u * 1024u)
#define RATE_MAX 1000000.0
#define DURATION_MAX 3600.0
#define DRAIN_MIN_SECONDS 5.0
#define NS_PER_SECOND 1000000000LL
#define POLL_MAX_MS 1000

/* The --max ramp, then up to MAX_REFINE bisections (rounded to MAX_ROUND). */
static const double max_rates[] = { 1000, 2000, 4000, 6000, 8000, 12000, 16000, 24000, 32000, 48000, 64000 };
#define MAX_REFINE 2
#define MAX_ATTEMPTS 2 /* a step not held is run once more before the ramp ends */
#define MAX_ROUND 100.0
#define MAX_ACHIEVED_FRACTION 0.98
#define MAX_P99_MS 10.0
#define MAX_STEP_SECONDS 5.0
#define MAX_PAUSE_NS (NS_PER_SECOND / 2)

struct options {
	const char *url, *cacert, *body_path, *expect, *samples_path;
	double rate, duration, warmup, timeout;
	long connections;
	bool max, json, duration_given;
};

/* One easy handle: one request in flight at a time, reused for the next. */
struct slot {
	CURL *easy;
	int64_t due_ns, sent_ns;
	size_t received; /* response body bytes */
	size_t kept; /* of them in head */
	char *head; /* the first RESPONSE_KEEP bytes (--expect, failures) */
	char errbuf[CURL_ERROR_SIZE];
};

/* Latencies in ms of the answered requests of one phase. */
struct samples {
	float *from_schedule, *from_send, *lag;
	float *due; /* s after the phase's start; only for --samples */
	int64_t start_ns;
	size_t count, capacity;
};

struct distribution {
	double p50, p90, p99, p999, max;
};

/* What one phase (warm-up, the run, a --max step) measured. */
struct phase {
	double rate, duration;
	uint64_t scheduled, sent, ok, http_errors, transport_errors, bad_bodies, unsent;
	double elapsed, achieved, cpu_seconds;
	long connects;
	int attempt; /* of a --max step: 1, or 2 when the first was not held */
	bool measured, pass;
	struct distribution schedule, send, lag;
	char first_error[CURL_ERROR_SIZE + 64];
};

struct load {
	const struct options *opt;
	CURLM *multi;
	struct curl_slist *headers;
	struct slot *slots;
	long *free_slots; /* stack of indices into slots */
	long free_count;
	int timer_fd;
	int64_t armed_ns; /* the timer's deadline, 0 when disarmed */
	char *body;
	size_t body_len;
	FILE *progress; /* human-readable lines: stdout, or stderr with --json */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SECOND + ts.tv_nsec;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_SECOND),
			       .tv_nsec = (long)(ns % NS_PER_SECOND) };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void usage(FILE *out)
{
	fputs("usage: webhook_load --url https://HOST:PORT/PATH --cacert FILE --body FILE\n"
	      "                    [--rate R] [--duration S] [--warmup S] [--connections N]\n"
	      "                    [--timeout S] [--expect STR] [--samples FILE] [--max] [--json]\n"
	      "  --rate R         requests per second, paced (default 2000)\n"
	      "  --duration S     measured seconds (default 20; with --max, each step: 5)\n"
	      "  --warmup S       seconds at the rate (--max: the first step's) before measuring (default 5)\n"
	      "  --connections N  keep-alive connections at most (default 16)\n"
	      "  --timeout S      per request (default 10, the apiserver's default for webhooks)\n"
	      "  --expect STR     a 2xx response whose body lacks STR counts as a failure\n"
	      "  --samples FILE   also write every measured request as CSV (due_s,from_schedule_ms,from_send_ms)\n"
	      "  --max            ramp the rate; report the highest held (>= 98 % achieved,\n"
	      "                   no failure, p99 from schedule <= 10 ms)\n"
	      "  --json           one JSON object on stdout; progress lines go to stderr\n",
	      out);
}

static int parse_double(const char *text, const char *name, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "webhook_load: %s: expected a number from %g to %g, got \"%s\"\n", name, min,
			max, text);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "cacert", required_argument, NULL, 'c' },
		{ "body", required_argument, NULL, 'b' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "connections", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "expect", required_argument, NULL, 'e' },
		{ "samples", required_argument, NULL, 's' },
		{ "max", no_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double connections = 16;
	int c;

	*opt = (struct options){ .rate = 2000, .duration = 20, .warmup = 5, .timeout = 10 };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		int err = 0;

		switch (c) {
		case 'u':
			opt->url = optarg;
			break;
		case 'c':
			opt->cacert = optarg;
			break;
		case 'b':
			opt->body_path = optarg;
			break;
		case 'e':
			opt->expect = optarg;
			break;
		case 's':
			opt->samples_path = optarg;
			break;
		case 'r':
			err = parse_double(optarg, "--rate", 1, RATE_MAX, &opt->rate);
			break;
		case 'd':
			err = parse_double(optarg, "--duration", 0.1, DURATION_MAX, &opt->duration);
			opt->duration_given = true;
			break;
		case 'w':
			err = parse_double(optarg, "--warmup", 0, DURATION_MAX, &opt->warmup);
			break;
		case 't':
			err = parse_double(optarg, "--timeout", 0.001, DURATION_MAX, &opt->timeout);
			break;
		case 'n':
			err = parse_double(optarg, "--connections", 1, (double)CONNECTIONS_MAX, &connections);
			if (!err && connections != floor(connections)) {
				fprintf(stderr, "webhook_load: --connections: a whole number\n");
				err = -1;
			}
			break;
		case 'm':
			opt->max = true;
			break;
		case 'j':
			opt->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (err)
			return -1;
	}
	opt->connections = (long)connections;
	if (optind != argc || !opt->url || !opt->cacert || !opt->body_path) {
		usage(stderr);
		return -1;
	}
	if (strncmp(opt->url, "https://", 8) != 0) {
		fprintf(stderr,
			"webhook_load: --url must be https:// (the webhook is only served over TLS)\n");
		return -1;
	}
	if (opt->expect && !*opt->expect) {
		fprintf(stderr, "webhook_load: --expect: an empty string\n");
		return -1;
	}
	if (opt->max && opt->samples_path) {
		fprintf(stderr, "webhook_load: --samples is for a fixed rate, not --max\n");
		return -1;
	}
	if (opt->max && !opt->duration_given)
		opt->duration = MAX_STEP_SECONDS;
	if (!opt->max && opt->rate * opt->duration > (double)SAMPLES_MAX) {
		fprintf(stderr, "webhook_load: --rate x --duration is over %u requests: shorten the run\n",
			SAMPLES_MAX);
		return -1;
	}
	return 0;
}

static int read_body(const char *path, char **out, size_t *out_len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf = NULL;
	int err = -1;

	if (!f) {
		fprintf(stderr, "webhook_load: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == -1 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uintmax_t)st.st_size > BODY_MAX) {
		fprintf(stderr, "webhook_load: %s: not a regular file of 1 to %u bytes\n", path, BODY_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		fprintf(stderr, "webhook_load: %s: could not read it\n", path);
		goto out;
	}
	*out = buf;
	*out_len = (size_t)st.st_size;
	buf = NULL;
	err = 0;
out:
	free(buf);
	fclose(f);
	return err;
}

static size_t on_body(char *data, size_t size, size_t count, void *arg)
{
	struct slot *s = arg;
	size_t n = size * count;

	if (s->kept < RESPONSE_KEEP) {
		size_t take = n < RESPONSE_KEEP - s->kept ? n : RESPONSE_KEEP - s->kept;

		memcpy(s->head + s->kept, data, take);
		s->kept += take;
	}
	s->received += n;
	return n;
}

static void load_free(struct load *l)
{
	if (!l)
		return;
	if (l->slots) {
		for (long i = 0; i < l->opt->connections; i++) {
			if (l->slots[i].easy) {
				curl_multi_remove_handle(l->multi, l->slots[i].easy);
				curl_easy_cleanup(l->slots[i].easy);
			}
			free(l->slots[i].head);
		}
	}
	if (l->multi)
		curl_multi_cleanup(l->multi);
	curl_slist_free_all(l->headers);
	if (l->timer_fd >= 0)
		close(l->timer_fd);
	free(l->slots);
	free(l->free_slots);
	free(l->body);
	free(l);
}

static int setup_slot(struct load *l, struct slot *s)
{
	const struct options *opt = l->opt;
	CURLcode rc = CURLE_OK;

	if (!(s->easy = curl_easy_init()))
		return -1;
	if (!(s->head = malloc(RESPONSE_KEEP)))
		return -1;
#define LOAD_SET(option, value)                                                                              \
	do {                                                                                                 \
		if (rc == CURLE_OK)                                                                          \
			rc = curl_easy_setopt(s->easy, option, value);                                       \
	} while (0)
	LOAD_SET(CURLOPT_URL, opt->url);
	LOAD_SET(CURLOPT_PROTOCOLS_STR, "https");
	LOAD_SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	LOAD_SET(CURLOPT_CAINFO, opt->cacert);
	/* Verification stays on: the benchmark measures what the apiserver does. */
	LOAD_SET(CURLOPT_SSL_VERIFYPEER, 1L);
	LOAD_SET(CURLOPT_SSL_VERIFYHOST, 2L);
	/* Straight to the webhook: never through an http(s)_proxy from the
	 * environment (which libcurl would also look up for every request). */
	LOAD_SET(CURLOPT_PROXY, "");
	LOAD_SET(CURLOPT_NOSIGNAL, 1L);
	LOAD_SET(CURLOPT_TCP_NODELAY, 1L);
	LOAD_SET(CURLOPT_FOLLOWLOCATION, 0L);
	LOAD_SET(CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	LOAD_SET(CURLOPT_TIMEOUT_MS, (long)(opt->timeout * 1000));
	LOAD_SET(CURLOPT_USERAGENT, "muster-webhook-load");
	LOAD_SET(CURLOPT_HTTPHEADER, l->headers);
	/* The body is shared by every handle and outlives them: no copy. */
	LOAD_SET(CURLOPT_POSTFIELDS, l->body);
	LOAD_SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)l->body_len);
	LOAD_SET(CURLOPT_WRITEFUNCTION, on_body);
	LOAD_SET(CURLOPT_WRITEDATA, s);
	LOAD_SET(CURLOPT_ERRORBUFFER, s->errbuf);
	LOAD_SET(CURLOPT_PRIVATE, s);
#undef LOAD_SET
	return rc == CURLE_OK ? 0 : -1;
}

/* Everything for the run, or NULL (with the cause printed) and nothing left. */
static struct load *load_new(const struct options *opt)
{
	/* No "Expect: 100-continue" (libcurl adds it to large POSTs; the
	 * apiserver's Go client never sends it). */
	static const char *const headers[] = { "Content-Type: application/json",
					       "Accept: application/json, */*", "Expect:" };
	struct load *l = calloc(1, sizeof(*l));
	CURLMcode mc = CURLM_OK;

	if (!l) {
		fprintf(stderr, "webhook_load: out of memory\n");
		return NULL;
	}
	l->opt = opt;
	l->timer_fd = -1;
	l->progress = opt->json ? stderr : stdout;
	if (read_body(opt->body_path, &l->body, &l->body_len))
		goto fail;
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		struct curl_slist *next = curl_slist_append(l->headers, headers[i]);

		if (!next)
			goto fail_setup;
		l->headers = next;
	}
	l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->timer_fd < 0) {
		fprintf(stderr, "webhook_load: timerfd_create: %s\n", strerror(errno));
		goto fail;
	}
	if (!(l->multi = curl_multi_init()))
		goto fail_setup;
	/* At most N connections, all kept in the cache between requests. */
	mc = curl_multi_setopt(l->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, opt->connections);
	if (mc == CURLM_OK)
		mc = curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS, opt->connections);
	if (mc == CURLM_OK)
		mc = curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, opt->connections);
	if (mc == CURLM_OK)
		mc = curl_multi_setopt(l->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
	if (mc != CURLM_OK)
		goto fail_setup;
	l->slots = calloc((size_t)opt->connections, sizeof(*l->slots));
	l->free_slots = calloc((size_t)opt->connections, sizeof(*l->free_slots));
	if (!l->slots || !l->free_slots)
		goto fail_setup;
	for (long i = 0; i < opt->connections; i++) {
		if (setup_slot(l, &l->slots[i]))
			goto fail_setup;
		l->free_slots[l->free_count++] = i;
	}
	return l;
fail_setup:
	fprintf(stderr, "webhook_load: libcurl setup failed (out of memory or an option libcurl %s lacks)\n",
		curl_version_info(CURLVERSION_NOW)->version);
fail:
	load_free(l);
	return NULL;
}

static int samples_init(struct samples *s, uint64_t capacity, bool with_due)
{
	*s = (struct samples){ 0 };
	if (capacity > SAMPLES_MAX)
		return -1;
	s->capacity = (size_t)capacity;
	if (!capacity)
		return 0;
	s->from_schedule = malloc(s->capacity * sizeof(float));
	s->from_send = malloc(s->capacity * sizeof(float));
	s->lag = malloc(s->capacity * sizeof(float));
	if (with_due && !(s->due = malloc(s->capacity * sizeof(float))))
		return -1;
	return s->from_schedule && s->from_send && s->lag ? 0 : -1;
}

static void samples_free(struct samples *s)
{
	free(s->from_schedule);
	free(s->from_send);
	free(s->lag);
	free(s->due);
	*s = (struct samples){ 0 };
}

static int compare_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* Nearest rank on sorted values: the smallest value with at least p % of the
 * samples at or below it. */
static double rank(const float *sorted, size_t n, double p)
{
	size_t r = (size_t)ceil(p / 100.0 * (double)n);

	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return sorted[r - 1];
}

static struct distribution distribution_of(float *values, size_t n)
{
	struct distribution d = { 0 };

	if (!n)
		return d;
	qsort(values, n, sizeof(*values), compare_float);
	d.p50 = rank(values, n, 50);
	d.p90 = rank(values, n, 90);
	d.p99 = rank(values, n, 99);
	d.p999 = rank(values, n, 99.9);
	d.max = values[n - 1];
	return d;
}

static void note_error(struct phase *ph, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note_error(struct phase *ph, const char *fmt, ...)
{
	va_list ap;

	if (ph->first_error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(ph->first_error, sizeof(ph->first_error), fmt, ap);
	va_end(ap);
	/* One line, whatever the server answered. */
	for (char *p = ph->first_error; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	}
}

static int start_request(struct load *l, int64_t due_ns)
{
	struct slot *s = &l->slots[l->free_slots[l->free_count - 1]];
	CURLMcode mc;

	s->due_ns = due_ns;
	s->received = 0;
	s->kept = 0;
	s->errbuf[0] = '\0';
	s->sent_ns = now_ns();
	mc = curl_multi_add_handle(l->multi, s->easy);
	if (mc != CURLM_OK) {
		fprintf(stderr, "webhook_load: curl_multi_add_handle: %s\n", curl_multi_strerror(mc));
		return -1;
	}
	l->free_count--;
	return 0;
}

/* Accounts for one finished transfer and puts its handle back. */
static void finish_request(struct load *l, CURLMsg *msg, struct phase *ph, struct samples *rec,
			   int64_t done_ns)
{
	struct slot *s;
	char *private = NULL;
	long status = 0, connects = 0;

	curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &private);
	s = (struct slot *)(void *)private;
	curl_easy_getinfo(msg->easy_handle, CURLINFO_NUM_CONNECTS, &connects);
	ph->connects += connects;
	if (msg->data.result == CURLE_OK)
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
	if (msg->data.result != CURLE_OK) {
		ph->transport_errors++;
		note_error(ph, "transport: %s (%s)", curl_easy_strerror(msg->data.result),
			   s->errbuf[0] ? s->errbuf : "no detail");
	} else if (status < 200 || status > 299) {
		ph->http_errors++;
		note_error(ph, "HTTP %ld, %zu bytes: %.*s", status, s->received,
			   (int)(s->kept < 300 ? s->kept : 300), s->head);
	} else if (l->opt->expect && !memmem(s->head, s->kept, l->opt->expect, strlen(l->opt->expect))) {
		ph->bad_bodies++;
		note_error(ph, "HTTP %ld without the expected string, %zu bytes: %.*s", status, s->received,
			   (int)(s->kept < 300 ? s->kept : 300), s->head);
	} else {
		ph->ok++;
		if (rec && rec->count < rec->capacity) {
			rec->from_schedule[rec->count] = (float)((double)(done_ns - s->due_ns) / 1e6);
			rec->from_send[rec->count] = (float)((double)(done_ns - s->sent_ns) / 1e6);
			rec->lag[rec->count] = (float)((double)(s->sent_ns - s->due_ns) / 1e6);
			if (rec->due)
				rec->due[rec->count] = (float)((double)(s->due_ns - rec->start_ns) / 1e9);
			rec->count++;
		}
	}
	curl_multi_remove_handle(l->multi, msg->easy_handle);
	l->free_slots[l->free_count++] = s - l->slots;
}

/* Sets the timer to at_ns (CLOCK_MONOTONIC), or disarms it for 0. */
/* --samples: one CSV line per answered request, in the order they were
 * answered (before the arrays are sorted for the percentiles). */
static int write_samples(const char *path, const struct samples *rec)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f) {
		fprintf(stderr, "webhook_load: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fputs("due_s,from_schedule_ms,from_send_ms\n", f);
	for (size_t i = 0; i < rec->count; i++)
		fprintf(f, "%.6f,%.4f,%.4f\n", rec->due[i], rec->from_schedule[i], rec->from_send[i]);
	if (ferror(f))
		err = -1;
	if (fclose(f) != 0)
		err = -1;
	if (err)
		fprintf(stderr, "webhook_load: %s: could not write the samples\n", path);
	return err;
}

static void arm_timer(struct load *l, int64_t at_ns)
{
	struct itimerspec its = { 0 };

	if (at_ns == l->armed_ns)
		return;
	l->armed_ns = at_ns;
	if (at_ns > 0) {
		its.it_value.tv_sec = (time_t)(at_ns / NS_PER_SECOND);
		its.it_value.tv_nsec = (long)(at_ns % NS_PER_SECOND);
	}
	timerfd_settime(l->timer_fd, at_ns > 0 ? TFD_TIMER_ABSTIME : 0, &its, NULL);
}

/*
 * One phase: rate x duration requests, request i due at start + i / rate.
 * Samples go to rec when it is not NULL. Returns -1 when libcurl fails
 * (printed), else 0 with the counts in ph; latencies are left in rec.
 */
static int run_phase(struct load *l, double rate, double duration, struct samples *rec, struct phase *ph)
{
	uint64_t total = (uint64_t)llround(rate * duration);
	double drain = duration > DRAIN_MIN_SECONDS ? duration : DRAIN_MIN_SECONDS;
	double cpu_before = cpu_seconds();
	int64_t start = now_ns() + NS_PER_SECOND / 1000; /* the first request 1 ms from now */
	int64_t send_deadline = start + (int64_t)((duration + drain) * 1e9);
	int64_t last_done = start;
	uint64_t next = 0;
	long in_flight = 0;

	ph->rate = rate;
	ph->duration = duration;
	ph->scheduled = total;
	if (rec)
		rec->start_ns = start;
#define DUE(i) (start + (int64_t)((double)(i)*1e9 / rate))
	for (;;) {
		int64_t t = now_ns();
		bool sending;
		struct curl_waitfd timer = { .fd = l->timer_fd, .events = POLLIN };
		int running = 0, left = 0, timeout_ms = POLL_MAX_MS;
		CURLMsg *msg;
		CURLMcode mc;

		while (next < total && t < send_deadline && l->free_count > 0 && DUE(next) <= t) {
			if (start_request(l, DUE(next)))
				return -1;
			next++;
			in_flight++;
		}
		sending = next < total && t < send_deadline;
		if (!sending && in_flight == 0)
			break;
		mc = curl_multi_perform(l->multi, &running);
		if (mc != CURLM_OK) {
			fprintf(stderr, "webhook_load: curl_multi_perform: %s\n", curl_multi_strerror(mc));
			return -1;
		}
		while ((msg = curl_multi_info_read(l->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			last_done = now_ns();
			finish_request(l, msg, ph, rec, last_done);
			in_flight--;
		}
		t = now_ns();
		sending = next < total && t < send_deadline;
		if (sending && l->free_count > 0 && DUE(next) <= t)
			continue;
		/* Woken by a response, by the timer at the next due time, or
		 * at the send deadline. */
		arm_timer(l, sending && l->free_count > 0 ? DUE(next) : 0);
		if (sending && (send_deadline - t) / 1000000 < POLL_MAX_MS)
			timeout_ms = (int)((send_deadline - t) / 1000000) + 1;
		mc = curl_multi_poll(l->multi, &timer, 1, timeout_ms, NULL);
		if (mc != CURLM_OK) {
			fprintf(stderr, "webhook_load: curl_multi_poll: %s\n", curl_multi_strerror(mc));
			return -1;
		}
		if (timer.revents & POLLIN) {
			uint64_t expirations;

			if (read(l->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
				return -1;
			l->armed_ns = 0; /* expired: a one-shot timer is disarmed */
		}
	}
#undef DUE
	arm_timer(l, 0);
	ph->sent = next;
	ph->unsent = total - next;
	if (ph->unsent)
		note_error(ph, "%" PRIu64 " requests not sent within %.0f s after the schedule ended",
			   ph->unsent, drain);
	ph->elapsed = (double)(last_done - start) / 1e9;
	ph->achieved = (double)ph->ok / (ph->elapsed > duration ? ph->elapsed : duration);
	ph->cpu_seconds = cpu_seconds() - cpu_before;
	if (rec && rec->due && write_samples(l->opt->samples_path, rec))
		return -1;
	if (rec) {
		ph->measured = true;
		ph->schedule = distribution_of(rec->from_schedule, rec->count);
		ph->send = distribution_of(rec->from_send, rec->count);
		ph->lag = distribution_of(rec->lag, rec->count);
	}
	return 0;
}

static uint64_t failures(const struct phase *ph)
{
	return ph->http_errors + ph->transport_errors + ph->bad_bodies + ph->unsent;
}

/* The generator's CPU over the phase's wall time, in % of one core. */
static double cpu_percent(const struct phase *ph)
{
	double wall = ph->elapsed > ph->duration ? ph->elapsed : ph->duration;

	return wall > 0 ? 100.0 * ph->cpu_seconds / wall : 0;
}

static void print_distribution(FILE *out, const char *label, const struct distribution *d)
{
	fprintf(out, "%-24s p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", label, d->p50, d->p90,
		d->p99, d->p999, d->max);
}

static void print_phase(FILE *out, const struct load *l, const struct phase *ph)
{
	fprintf(out, "%-24s %.0f req/s for %.1f s (%" PRIu64 " requests)\n", "rate target", ph->rate,
		ph->duration, ph->scheduled);
	fprintf(out, "%-24s %" PRIu64 "\n", "sent", ph->sent);
	fprintf(out, "%-24s %" PRIu64 "\n", "ok (2xx)", ph->ok);
	fprintf(out, "%-24s %" PRIu64 "\n", "http errors", ph->http_errors);
	fprintf(out, "%-24s %" PRIu64 "\n", "transport errors", ph->transport_errors);
	if (l->opt->expect)
		fprintf(out, "%-24s %" PRIu64 " (2xx without \"%s\")\n", "bad bodies", ph->bad_bodies,
			l->opt->expect);
	if (ph->unsent)
		fprintf(out, "%-24s %" PRIu64 "\n", "not sent in time", ph->unsent);
	if (ph->first_error[0])
		fprintf(out, "%-24s %s\n", "first failure", ph->first_error);
	fprintf(out, "%-24s %.1f req/s (%.1f %% of the target)\n", "achieved rate", ph->achieved,
		100.0 * ph->achieved / ph->rate);
	print_distribution(out, "latency from schedule", &ph->schedule);
	print_distribution(out, "latency from send", &ph->send);
	print_distribution(out, "send lag", &ph->lag);
	fprintf(out, "%-24s %ld (at most %ld allowed, for %" PRIu64 " requests)\n", "connections opened",
		ph->connects, l->opt->connections, ph->sent);
	fprintf(out, "%-24s %.2f s (%.1f %% of one core)\n", "load generator CPU", ph->cpu_seconds,
		cpu_percent(ph));
}

static void print_step(FILE *out, const struct phase *ph)
{
	fprintf(out,
		"step %6.0f req/s: achieved %8.1f, ok %" PRIu64 ", failed %" PRIu64
		", from schedule p50 %.3f "
		"p99 %.3f max %.3f ms, from send p99 %.3f ms, conns %ld, generator CPU %.0f %% -> %s%s\n",
		ph->rate, ph->achieved, ph->ok, failures(ph), ph->schedule.p50, ph->schedule.p99,
		ph->schedule.max, ph->send.p99, ph->connects, cpu_percent(ph), ph->pass ? "held" : "NOT held",
		ph->attempt > 1 ? " (second attempt)" : "");
	if (ph->first_error[0])
		fprintf(out, "  first failure: %s\n", ph->first_error);
	fflush(out);
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void json_distribution(FILE *out, const char *name, const struct distribution *d)
{
	fprintf(out, ",\"%s\":{\"p50\":%.4f,\"p90\":%.4f,\"p99\":%.4f,\"p99_9\":%.4f,\"max\":%.4f}", name,
		d->p50, d->p90, d->p99, d->p999, d->max);
}

static void json_phase(FILE *out, const struct phase *ph)
{
	fprintf(out,
		"{\"rate\":%.1f,\"duration\":%.3f,\"scheduled\":%" PRIu64 ",\"sent\":%" PRIu64
		",\"ok\":%" PRIu64 ",\"http_errors\":%" PRIu64 ",\"transport_errors\":%" PRIu64
		",\"bad_bodies\":%" PRIu64 ",\"unsent\":%" PRIu64 ",\"failed\":%" PRIu64
		",\"achieved\":%.2f,\"elapsed\":%.4f"
		",\"connections_opened\":%ld,\"cpu_seconds\":%.3f,\"cpu_percent\":%.1f",
		ph->rate, ph->duration, ph->scheduled, ph->sent, ph->ok, ph->http_errors,
		ph->transport_errors, ph->bad_bodies, ph->unsent, failures(ph), ph->achieved, ph->elapsed,
		ph->connects, ph->cpu_seconds, cpu_percent(ph));
	if (ph->measured) {
		json_distribution(out, "latency_from_schedule_ms", &ph->schedule);
		json_distribution(out, "latency_from_send_ms", &ph->send);
		json_distribution(out, "send_lag_ms", &ph->lag);
	}
	if (ph->attempt)
		fprintf(out, ",\"held\":%s,\"attempt\":%d", ph->pass ? "true" : "false", ph->attempt);
	if (ph->first_error[0]) {
		fputs(",\"first_failure\":", out);
		json_string(out, ph->first_error);
	}
	fputc('}', out);
}

static void json_head(FILE *out, const struct load *l, const char *mode)
{
	fprintf(out, "{\"mode\":\"%s\",\"url\":", mode);
	json_string(out, l->opt->url);
	fprintf(out, ",\"connections\":%ld,\"body_bytes\":%zu,\"libcurl\":", l->opt->connections,
		l->body_len);
	json_string(out, curl_version());
}

/* Warm-up, then one measured phase. Returns the exit status. */
static int run_rate(struct load *l)
{
	const struct options *opt = l->opt;
	struct phase warm = { 0 }, run = { 0 };
	struct samples rec;
	int status = 2;

	if (samples_init(&rec, (uint64_t)llround(opt->rate * opt->duration), opt->samples_path != NULL)) {
		fprintf(stderr, "webhook_load: out of memory for %.0f samples\n", opt->rate * opt->duration);
		goto out;
	}
	if (opt->warmup > 0) {
		fprintf(l->progress, "warm-up: %.1f s at %.0f req/s (not counted)\n", opt->warmup, opt->rate);
		fflush(l->progress);
		if (run_phase(l, opt->rate, opt->warmup, NULL, &warm))
			goto out;
		if (failures(&warm))
			fprintf(l->progress, "warm-up: %" PRIu64 " of %" PRIu64 " failed: %s\n",
				failures(&warm), warm.scheduled, warm.first_error);
	}
	if (run_phase(l, opt->rate, opt->duration, &rec, &run))
		goto out;
	if (opt->json) {
		json_head(stdout, l, "rate");
		fputs(",\"warmup\":", stdout);
		json_phase(stdout, &warm);
		fputs(",\"result\":", stdout);
		json_phase(stdout, &run);
		fprintf(stdout, ",\"connections_opened_total\":%ld}\n", warm.connects + run.connects);
	} else {
		fprintf(stdout, "%-24s %s, %zu-byte body, %ld connections at most, %s\n", "target", opt->url,
			l->body_len, opt->connections, curl_version());
		print_phase(stdout, l, &run);
		fprintf(stdout, "%-24s %ld, warm-up included (%" PRIu64 " requests)\n",
			"connections opened, all", warm.connects + run.connects, warm.sent + run.sent);
	}
	status = failures(&warm) + failures(&run) ? 1 : 0;
out:
	samples_free(&rec);
	return status;
}

static double round_rate(double rate)
{
	return floor(rate / MAX_ROUND + 0.5) * MAX_ROUND;
}

/* One --max step: a phase of its own with its samples; fills ph->pass. */
static int run_step(struct load *l, double rate, struct phase *ph)
{
	struct samples rec;
	int err = -1;

	*ph = (struct phase){ 0 };
	if (samples_init(&rec, (uint64_t)llround(rate * l->opt->duration), false)) {
		fprintf(stderr, "webhook_load: out of memory for a step of %.0f req/s\n", rate);
		goto out;
	}
	if (run_phase(l, rate, l->opt->duration, &rec, ph))
		goto out;
	ph->pass = failures(ph) == 0 && ph->achieved >= MAX_ACHIEVED_FRACTION * rate &&
		   ph->schedule.p99 <= MAX_P99_MS;
	sleep_ns(MAX_PAUSE_NS);
	err = 0;
out:
	samples_free(&rec);
	return err;
}

/* Runs the step at rate, and once more if it was not held: another process
 * taking the CPUs for a moment should not end the ramp, while a rate beyond
 * the capacity fails twice. Appends to steps; returns 1 held, 0 not held,
 * -1 when the step could not be run. */
static int try_rate(struct load *l, double rate, struct phase *steps, size_t *count)
{
	for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
		struct phase *ph = &steps[(*count)++];

		if (run_step(l, rate, ph))
			return -1;
		ph->attempt = attempt;
		print_step(l->progress, ph);
		if (ph->pass)
			return 1;
	}
	return 0;
}

/* The ramp and bisection of --max. Returns the exit status. */
static int run_max(struct load *l)
{
	enum { STEPS_MAX = (sizeof(max_rates) / sizeof(max_rates[0]) + MAX_REFINE) * MAX_ATTEMPTS };
	const struct options *opt = l->opt;
	struct phase warm = { 0 }, steps[STEPS_MAX];
	size_t count = 0;
	double held = 0, failed = 0;
	uint64_t failed_requests = 0;
	long connects = 0;

	fprintf(l->progress,
		"max: steps of %.1f s; held = achieved >= %.0f %% of the target, no failure, p99 from schedule "
		"<= %.0f ms\n",
		opt->duration, 100 * MAX_ACHIEVED_FRACTION, MAX_P99_MS);
	if (opt->warmup > 0) {
		fprintf(l->progress, "warm-up: %.1f s at %.0f req/s (not counted)\n", opt->warmup,
			max_rates[0]);
		fflush(l->progress);
		if (run_phase(l, max_rates[0], opt->warmup, NULL, &warm))
			return 2;
		connects += warm.connects;
	}
	for (size_t i = 0; i < sizeof(max_rates) / sizeof(max_rates[0]); i++) {
		if (max_rates[i] * opt->duration > (double)SAMPLES_MAX)
			break;
		int outcome = try_rate(l, max_rates[i], steps, &count);

		if (outcome < 0)
			return 2;
		if (!outcome) {
			failed = max_rates[i];
			break;
		}
		held = max_rates[i];
	}
	for (int r = 0; r < MAX_REFINE && held > 0 && failed > 0; r++) {
		double mid = round_rate((held + failed) / 2);
		int outcome;

		if (mid <= held || mid >= failed)
			break;
		outcome = try_rate(l, mid, steps, &count);
		if (outcome < 0)
			return 2;
		if (outcome)
			held = mid;
		else
			failed = mid;
	}
	for (size_t i = 0; i < count; i++) {
		connects += steps[i].connects;
		failed_requests += failures(&steps[i]);
	}
	if (opt->json) {
		json_head(stdout, l, "max");
		fprintf(stdout,
			",\"criteria\":{\"achieved_fraction\":%.2f,\"p99_from_schedule_ms\":%.1f,\"failures\":0}"
			",\"step_seconds\":%.3f,\"warmup\":",
			MAX_ACHIEVED_FRACTION, MAX_P99_MS, opt->duration);
		json_phase(stdout, &warm);
		fputs(",\"steps\":[", stdout);
		for (size_t i = 0; i < count; i++) {
			if (i)
				fputc(',', stdout);
			json_phase(stdout, &steps[i]);
		}
		fprintf(stdout,
			"],\"max_sustained_rate\":%.0f,\"first_not_held\":%.0f,\"connections_opened_total\":%ld",
			held, failed, connects);
		fprintf(stdout, ",\"failed_requests\":%" PRIu64 "}\n", failed_requests + failures(&warm));
	} else {
		if (held > 0)
			fprintf(stdout, "%-24s %.0f req/s (%s %.0f req/s)\n", "max sustained rate", held,
				failed > 0 ? "not held at" : "the ramp ended; held up to",
				failed > 0 ? failed : held);
		else
			fprintf(stdout, "%-24s none: %.0f req/s was not held\n", "max sustained rate",
				max_rates[0]);
		fprintf(stdout, "%-24s %ld for every step and the warm-up, %ld allowed\n",
			"connections opened", connects, opt->connections);
	}
	return failed_requests + failures(&warm) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct options opt;
	struct load *l;
	int status;

	if (parse_options(argc, argv, &opt))
		return 2;
	/* Timers wake on time: the default 50 us slack would show as send lag. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "webhook_load: curl_global_init failed\n");
		return 2;
	}
	l = load_new(&opt);
	if (!l) {
		curl_global_cleanup();
		return 2;
	}
	status = opt.max ? run_max(l) : run_rate(l);
	load_free(l);
	curl_global_cleanup();
	return status;
}
