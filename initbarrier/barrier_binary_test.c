/*
 * Tests that run the real muster-barrier binary ($MUSTER_BARRIER_BIN) against
 * a directory that the test fills exactly as kubelet's AtomicWriter does, and
 * against real TCP clients on loopback. Every wait is bounded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "atomic_writer.h"
#include "barrier_testproc.h"

#define TOKEN "s3cret-token-0123456789"
#define TOKEN_ENV "MUSTER_BARRIER_TOKEN=" TOKEN
#define WAITING "event=waiting"

struct fixture {
	char root[64];
	char volume[96];
	char termination_log[96];
	struct testproc proc;
	int started;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "/tmp/muster-barrier-test-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->volume, sizeof(f->volume), "%s/volume", f->root);
	snprintf(f->termination_log, sizeof(f->termination_log), "%s/termination-log", f->root);
	if (mkdir(f->volume, 0755) != 0)
		return -1;
	/* Kubelet creates the termination log file before the container runs. */
	close(open(f->termination_log, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->started)
		testproc_finish(&f->proc);
	atomic_writer_remove_tree(f->root);
	free(f);
	return 0;
}

/* Starts the barrier with --dir and --termination-log from the fixture,
 * --watch from $MUSTER_BARRIER_WATCH when set (the suite runs once per watch
 * kind), the given extra arguments (NULL-terminated; a later flag wins) and
 * optional env entries. */
static void start(struct fixture *f, char *const env[], ...)
{
	char *argv[32];
	size_t n = 0;
	va_list ap;
	const char *arg;
	static const char *const unset[] = { "MUSTER_BARRIER_TOKEN", "POD_NAME", "POD_NAMESPACE", NULL };

	argv[n++] = (char *)testproc_barrier_path();
	argv[n++] = (char *)"--dir";
	argv[n++] = f->volume;
	argv[n++] = (char *)"--termination-log";
	argv[n++] = f->termination_log;
	if (getenv("MUSTER_BARRIER_WATCH")) {
		argv[n++] = (char *)"--watch";
		argv[n++] = getenv("MUSTER_BARRIER_WATCH");
	}
	va_start(ap, env);
	while ((arg = va_arg(ap, const char *)) != NULL && n < 31)
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	assert_int_equal(testproc_start(&f->proc, argv, env, unset), 0);
	f->started = 1;
}

static void release(struct fixture *f, const char *value)
{
	const struct atomic_writer_file files[] = { { "started", value } };

	assert_int_equal(atomic_writer_write(f->volume, files, 1, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL), 1);
}

static void wait_waiting(struct fixture *f)
{
	if (testproc_wait_for(&f->proc, WAITING, 5000) != 0)
		fail_msg("barrier never reported waiting; output:\n%s", f->proc.out);
}

static void assert_exit(struct fixture *f, int code, int within_ms)
{
	int got = testproc_wait_exit(&f->proc, within_ms);

	if (got != code)
		fail_msg("exit code %d, want %d; output:\n%s", got, code, f->proc.out);
}

static void assert_still_blocked(struct fixture *f, int for_ms)
{
	if (testproc_wait_exit(&f->proc, for_ms) != -1)
		fail_msg("barrier exited (%d) while it should block; output:\n%s", f->proc.exit_code,
			 f->proc.out);
}

static void assert_output_has(struct fixture *f, const char *needle)
{
	if (testproc_wait_for(&f->proc, needle, 2000) != 0)
		fail_msg("output lacks '%s':\n%s", needle, f->proc.out);
}

static char *read_termination_log(struct fixture *f, char *buf, size_t size)
{
	int fd = open(f->termination_log, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The port the barrier bound, from its "listen=127.0.0.1:PORT" log field. */
static int bound_port(struct fixture *f)
{
	const char *p = strstr(f->proc.out, "listen=127.0.0.1:");

	if (!p)
		fail_msg("no listen address in output:\n%s", f->proc.out);
	assert_non_null(p);
	long port = strtol(p + strlen("listen=127.0.0.1:"), NULL, 10);

	assert_true(port > 0 && port < 65536);
	return (int)port;
}

static int connect_to(int port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

/* Reads the reply line (or whatever comes before EOF) within timeout_ms. */
static void read_reply(int fd, char *reply, size_t size, int timeout_ms)
{
	size_t used = 0;
	double end = testproc_now_ms() + timeout_ms;

	reply[0] = '\0';
	while (used < size - 1) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = end - testproc_now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left + 1) <= 0)
			break;
		n = recv(fd, reply + used, size - 1 - used, 0);
		if (n <= 0)
			break;
		used += (size_t)n;
		reply[used] = '\0';
		if (memchr(reply, '\n', used))
			break;
	}
}

/* Sends `len` bytes as one push and returns the reply in `reply`. */
static void push_bytes(int port, const char *bytes, size_t len, char *reply, size_t size)
{
	int fd = connect_to(port);

	(void)!send(fd, bytes, len, MSG_NOSIGNAL);
	read_reply(fd, reply, size, 3000);
	close(fd);
}

static void push_line(int port, const char *line, char *reply, size_t size)
{
	push_bytes(port, line, strlen(line), reply, size);
}

/* ---- release by volume ---- */

static void released_at_start(void **state)
{
	struct fixture *f = *state;

	release(f, "0");
	start(f, NULL, NULL);
	assert_exit(f, 0, 3000);
	assert_output_has(f, "event=released via=volume attempt=0 released_attempt=0");
}

static void released_at_start_by_a_later_attempt(void **state)
{
	struct fixture *f = *state;

	release(f, "5");
	start(f, NULL, "--attempt", "3", NULL);
	assert_exit(f, 0, 3000);
	assert_output_has(f, "released_attempt=5");
}

static void empty_dir_populated_later(void **state)
{
	struct fixture *f = *state;

	start(f, NULL, "--attempt", "0", NULL);
	wait_waiting(f);
	assert_output_has(f, "volume=empty");
	assert_still_blocked(f, 200);
	release(f, "0");
	assert_exit(f, 0, 2000);
}

static void empty_dir_populated_by_an_old_kubelet(void **state)
{
	struct fixture *f = *state;
	const struct atomic_writer_file files[] = { { "started", "1" } };

	start(f, NULL, "--attempt", "1", NULL);
	wait_waiting(f);
	assert_int_equal(atomic_writer_write(f->volume, files, 1, ATOMIC_WRITER_LINKS_BEFORE_RENAME, NULL),
			 1);
	assert_exit(f, 0, 2000);
}

static void update_from_old_attempt_to_current(void **state)
{
	struct fixture *f = *state;

	release(f, "1");
	start(f, NULL, "--attempt", "2", NULL);
	wait_waiting(f);
	assert_output_has(f, "volume=stale");
	assert_still_blocked(f, 300);
	release(f, "2");
	assert_exit(f, 0, 2000);
	assert_output_has(f, "via=volume attempt=2 released_attempt=2");
}

/* The release must name the barrier's own JobSet: a ConfigMap of the group's
 * name left by a deleted JobSet (another uid) or made by hand (no uid) keeps
 * the pod waiting; the JobSet's own release, in one projection with all
 * three keys, lets it through. */
static void release_of_another_jobset_stays_blocked(void **state)
{
	struct fixture *f = *state;
	const struct atomic_writer_file leftover[] = { { "started", "0" },
						       { "jobset-uid",
							 "11111111-0000-4000-8000-000000000001" },
						       { "generation", "0" } };
	const struct atomic_writer_file by_hand[] = { { "started", "5" } };
	const struct atomic_writer_file own[] = { { "started", "0" },
						  { "jobset-uid", "22222222-0000-4000-8000-000000000002" },
						  { "generation", "0" } };

	assert_int_equal(atomic_writer_write(f->volume, leftover, 3, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL),
			 1);
	start(f, NULL, "--attempt", "0", "--jobset-uid", "22222222-0000-4000-8000-000000000002", NULL);
	wait_waiting(f);
	assert_output_has(f, "volume=foreign");
	assert_still_blocked(f, 300);
	assert_int_equal(atomic_writer_write(f->volume, by_hand, 1, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL),
			 1);
	assert_still_blocked(f, 300);
	assert_int_equal(atomic_writer_write(f->volume, own, 3, ATOMIC_WRITER_LINKS_BEFORE_RENAME, NULL), 1);
	assert_exit(f, 0, 2000);
	assert_output_has(f, "via=volume attempt=0 released_attempt=0 generation=0 released_generation=0");
}

/* A resumed JobSet's pod (generation 1) ignores the release from before the
 * suspend (generation 0, same attempt), on both paths, and passes on its own. */
static void release_of_an_earlier_generation_stays_blocked(void **state)
{
	struct fixture *f = *state;
	const struct atomic_writer_file before[] = { { "started", "0" },
						     { "jobset-uid", "u-1" },
						     { "generation", "0" } };
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	char reply[64];

	assert_int_equal(atomic_writer_write(f->volume, before, 3, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL),
			 1);
	start(f, env, "--attempt", "0", "--generation", "1", "--jobset-uid", "u-1", "--listen", "127.0.0.1:0",
	      NULL);
	wait_waiting(f);
	assert_output_has(f, "volume=stale");
	push_line(bound_port(f), "MUSTER1 RELEASE 0 " TOKEN "\n", reply, sizeof(reply));
	assert_string_equal(reply, "ERR stale-attempt\n");
	push_line(bound_port(f), "MUSTER1 RELEASE 3 " TOKEN " 0\n", reply, sizeof(reply));
	assert_string_equal(reply, "ERR stale-attempt\n");
	assert_still_blocked(f, 300);
	push_line(bound_port(f), "MUSTER1 RELEASE 0 " TOKEN " 1\n", reply, sizeof(reply));
	assert_string_equal(reply, "OK\n");
	assert_exit(f, 0, 2000);
	assert_output_has(f, "via=push attempt=0 released_attempt=0 generation=1 released_generation=1");
}

/* An empty --generation is the absent label: generation 0. */
static void empty_generation_is_zero(void **state)
{
	struct fixture *f = *state;

	release(f, "0");
	start(f, NULL, "--attempt", "0", "--generation", "", NULL);
	assert_exit(f, 0, 2000);
	assert_output_has(f, "event=no-jobset-uid");
}

static void stale_attempt_stays_blocked(void **state)
{
	struct fixture *f = *state;
	const struct atomic_writer_file more[] = { { "started", "1" }, { "note", "unrelated" } };
	const struct atomic_writer_file dropped[] = { { "note", "key removed" } };

	release(f, "1");
	start(f, NULL, "--attempt", "2", NULL);
	wait_waiting(f);
	/* An update that keeps the stale value, then one that drops the key. */
	assert_int_equal(atomic_writer_write(f->volume, more, 2, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL), 1);
	assert_still_blocked(f, 300);
	assert_int_equal(atomic_writer_write(f->volume, dropped, 1, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL),
			 1);
	assert_output_has(f, "verdict=empty");
	assert_still_blocked(f, 300);
	kill(f->proc.pid, SIGTERM);
	assert_exit(f, 143, 1000);
}

static void invalid_content_blocks_until_valid(void **state)
{
	struct fixture *f = *state;

	release(f, "yes");
	start(f, NULL, "--attempt", "3", NULL);
	wait_waiting(f);
	assert_output_has(f, "volume=invalid");
	assert_output_has(f, "content=\"yes\"");
	release(f, "3\n");
	assert_exit(f, 0, 2000);
}

/* Only inotify reports the removal of the watched directory itself. */
static void watched_directory_removed(void **state)
{
	struct fixture *f = *state;

	start(f, NULL, "--watch", "inotify", NULL);
	wait_waiting(f);
	assert_int_equal(rmdir(f->volume), 0);
	assert_exit(f, 4, 2000);
	assert_output_has(f, "removed or unmounted");
}

/* ---- timeout and signals ---- */

static void timeout_exits_3_with_a_reason(void **state)
{
	struct fixture *f = *state;
	char log[512];
	double begun = testproc_now_ms(), took;

	release(f, "1");
	start(f, NULL, "--attempt", "2", "--timeout", "1", NULL);
	assert_exit(f, 3, 5000);
	took = testproc_now_ms() - begun;
	assert_true(took >= 950 && took < 3000);
	assert_output_has(f, "event=timeout exit_code=3");
	read_termination_log(f, log, sizeof(log));
	assert_non_null(strstr(log, "muster-barrier: timed out after 1 s"));
	assert_non_null(strstr(log, "stale release for attempt 1"));
}

static void sigterm_and_sigint_end_promptly(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };

	start(f, NULL, NULL);
	wait_waiting(f);
	kill(f->proc.pid, SIGTERM);
	assert_exit(f, 143, 1000);
	assert_output_has(f, "event=stopped signal=SIGTERM");
	testproc_finish(&f->proc);

	start(f, env, "--listen", "127.0.0.1:0", NULL);
	wait_waiting(f);
	kill(f->proc.pid, SIGINT);
	assert_exit(f, 130, 1000);
}

/* ---- release by push ---- */

static void push_with_valid_token_releases(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	char reply[64];

	start(f, env, "--attempt", "4", "--listen", "127.0.0.1:0", NULL);
	wait_waiting(f);
	push_line(bound_port(f), "MUSTER1 RELEASE 4 " TOKEN "\n", reply, sizeof(reply));
	assert_string_equal(reply, "OK\n");
	assert_exit(f, 0, 2000);
	assert_output_has(f, "event=released via=push attempt=4 released_attempt=4");
	/* The token never reaches the log. */
	assert_null(strstr(f->proc.out, TOKEN));
}

static void push_with_invalid_token_or_attempt_is_refused(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	char reply[64];
	int port;

	start(f, env, "--attempt", "4", "--listen", "127.0.0.1:0", NULL);
	wait_waiting(f);
	port = bound_port(f);
	push_line(port, "MUSTER1 RELEASE 4 wrong-token-0123456789\n", reply, sizeof(reply));
	assert_string_equal(reply, "ERR bad-token\n");
	push_line(port, "MUSTER1 RELEASE 4 " TOKEN "x\n", reply, sizeof(reply));
	assert_string_equal(reply, "ERR bad-token\n");
	push_line(port, "MUSTER1 RELEASE 3 " TOKEN "\n", reply, sizeof(reply));
	assert_string_equal(reply, "ERR stale-attempt\n");
	assert_still_blocked(f, 200);
	assert_output_has(f, "reason=bad-token");
	assert_output_has(f, "reason=stale-attempt");
	push_line(port, "MUSTER1 RELEASE 5 " TOKEN "\r\n", reply, sizeof(reply));
	assert_string_equal(reply, "OK\n");
	assert_exit(f, 0, 2000);
}

static void push_malformed_and_oversized_input_is_refused(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	static const char garbage[] = "\x00\xff\x01MUSTER1 \x00RELEASE\n";
	char reply[64], big[10000];
	int port;

	start(f, env, "--listen", "127.0.0.1:0", NULL);
	wait_waiting(f);
	port = bound_port(f);
	push_bytes(port, garbage, sizeof(garbage) - 1, reply, sizeof(reply));
	assert_string_equal(reply, "ERR malformed\n");
	push_line(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", reply, sizeof(reply));
	assert_string_equal(reply, "ERR malformed\n");
	memset(big, 'A', sizeof(big));
	/* The barrier answers after 512 bytes and closes; the rest of the
	 * client's data may turn into a reset, so only the log is asserted. */
	push_bytes(port, big, sizeof(big), reply, sizeof(reply));
	assert_output_has(f, "reason=too-long");
	/* A client that connects and closes without a line. */
	close(connect_to(port));
	assert_output_has(f, "connection closed before a full line");
	assert_still_blocked(f, 200);
	push_line(port, "MUSTER1 RELEASE 0 " TOKEN "\n", reply, sizeof(reply));
	assert_string_equal(reply, "OK\n");
	assert_exit(f, 0, 2000);
}

static void push_idle_clients_cannot_hold_it(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	int idle[20], slow, port;
	char reply[64];
	double begun;

	start(f, env, "--listen", "127.0.0.1:0", NULL);
	wait_waiting(f);
	port = bound_port(f);
	/* A client that sends half a line and stalls gets "ERR timeout" after
	 * 2 s, and the barrier keeps waiting. */
	slow = connect_to(port);
	(void)!send(slow, "MUSTER1 REL", 11, MSG_NOSIGNAL);
	read_reply(slow, reply, sizeof(reply), 4000);
	assert_string_equal(reply, "ERR timeout\n");
	close(slow);
	assert_output_has(f, "line not finished within 2 s");
	/* More idle connections than there are slots, then the real release. */
	for (size_t i = 0; i < 20; i++)
		idle[i] = connect_to(port);
	begun = testproc_now_ms();
	push_line(port, "MUSTER1 RELEASE 0 " TOKEN "\n", reply, sizeof(reply));
	assert_string_equal(reply, "OK\n");
	assert_exit(f, 0, 2000);
	assert_true(testproc_now_ms() - begun < 1000);
	for (size_t i = 0; i < 20; i++)
		close(idle[i]);
}

static void push_port_in_use_falls_back_to_volume(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	char listen_arg[32];
	int taken = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(taken, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(taken, 1), 0);
	assert_int_equal(getsockname(taken, (struct sockaddr *)&addr, &len), 0);
	snprintf(listen_arg, sizeof(listen_arg), "127.0.0.1:%u", ntohs(addr.sin_port));
	start(f, env, "--listen", listen_arg, NULL);
	wait_waiting(f);
	assert_output_has(f, "event=listen-failed");
	assert_output_has(f, "fallback=volume");
	assert_output_has(f, "listen=none");
	release(f, "0");
	assert_exit(f, 0, 2000);
	close(taken);
}

static void token_from_file(void **state)
{
	struct fixture *f = *state;
	char path[128], reply[64];
	int fd;

	snprintf(path, sizeof(path), "%s/token", f->root);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, TOKEN "\n", strlen(TOKEN) + 1), (ssize_t)strlen(TOKEN) + 1);
	close(fd);
	start(f, NULL, "--listen", "127.0.0.1:0", "--token-file", path, NULL);
	wait_waiting(f);
	push_line(bound_port(f), "MUSTER1 RELEASE 0 " TOKEN "\n", reply, sizeof(reply));
	assert_string_equal(reply, "OK\n");
	assert_exit(f, 0, 2000);
}

/* ---- usage ---- */

static void expect_usage_error(struct fixture *f, char *const env[], const char *needle, ...)
{
	char *argv[16];
	size_t n = 0;
	const char *arg;
	va_list ap;
	char log[512];
	static const char *const unset[] = { "MUSTER_BARRIER_TOKEN", NULL };

	argv[n++] = (char *)testproc_barrier_path();
	argv[n++] = (char *)"--termination-log";
	argv[n++] = f->termination_log;
	va_start(ap, needle);
	while ((arg = va_arg(ap, const char *)) != NULL && n < 15)
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	if (f->started)
		testproc_finish(&f->proc);
	assert_int_equal(testproc_start(&f->proc, argv, env, unset), 0);
	f->started = 1;
	assert_exit(f, 2, 2000);
	assert_output_has(f, needle);
	read_termination_log(f, log, sizeof(log));
	if (!strstr(log, needle))
		fail_msg("termination log lacks '%s': %s", needle, log);
}

/* The webhook injects `--listen $(MUSTER_POD_IP):PORT`, and an IPv6 pod's IP
 * has no brackets: a bare IPv6 address takes the port after its last colon. */
static void listen_on_a_bare_ipv6_address(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 loopback = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	if (probe < 0 || bind(probe, (struct sockaddr *)&loopback, sizeof(loopback)) != 0) {
		if (probe >= 0)
			close(probe);
		skip(); /* no IPv6 loopback on this machine */
	}
	close(probe);
	start(f, env, "--listen", "::1:0", NULL);
	wait_waiting(f);
	assert_output_has(f, "listen=[::1]:");
	kill(f->proc.pid, SIGTERM);
	assert_exit(f, 143, 1000);
}

static void usage_errors_are_clear(void **state)
{
	struct fixture *f = *state;
	char *const short_token[] = { (char *)"MUSTER_BARRIER_TOKEN=short", NULL };
	char missing[128];

	snprintf(missing, sizeof(missing), "%s/nope", f->root);
	expect_usage_error(f, NULL, "--listen needs a token", "--dir", f->volume, "--listen", "9443", NULL);
	expect_usage_error(f, short_token, "token is shorter than 16 bytes", "--dir", f->volume, "--listen",
			   "9443", NULL);
	expect_usage_error(f, NULL, "--attempt '' is not a number", "--dir", f->volume, "--attempt", "",
			   NULL);
	expect_usage_error(f, NULL, "--attempt '-1' is not a number", "--attempt=-1", NULL);
	expect_usage_error(f, NULL, "--timeout '5s' is not a number", "--timeout", "5s", NULL);
	expect_usage_error(f, NULL, "--listen 'localhost:80': not an IPv4 address", "--listen",
			   "localhost:80", NULL);
	expect_usage_error(f, NULL, "--listen '70000': port is not a number", "--listen", "70000", NULL);
	expect_usage_error(f, NULL, "--listen 'fd00::zz:80': not an IPv6 address", "--listen", "fd00::zz:80",
			   NULL);
	expect_usage_error(f, NULL, "unknown flag", "--frobnicate", NULL);
	expect_usage_error(f, NULL, "--watch 'fanotify' is neither", "--watch", "fanotify", NULL);
	expect_usage_error(f, NULL, "unexpected argument 'extra'", "--dir", f->volume, "extra", NULL);
	expect_usage_error(f, NULL, "is not a directory: mount the group-scheduling ConfigMap volume",
			   "--dir", missing, NULL);
}

static void help_and_version(void **state)
{
	struct fixture *f = *state;
	char *argv[] = { (char *)testproc_barrier_path(), (char *)"--help", NULL };
	char *version[] = { (char *)testproc_barrier_path(), (char *)"--version", NULL };

	assert_int_equal(testproc_start(&f->proc, argv, NULL, NULL), 0);
	f->started = 1;
	assert_exit(f, 0, 2000);
	assert_output_has(f, "Exit codes:");
	assert_output_has(f, "143  sigterm");
	assert_output_has(f, "MUSTER_BARRIER_TOKEN");
	testproc_finish(&f->proc);
	assert_int_equal(testproc_start(&f->proc, version, NULL, NULL), 0);
	assert_exit(f, 0, 2000);
	assert_output_has(f, "muster-barrier ");
}

/* ---- what the pod sees ---- */

static void log_lines_carry_the_pod(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)"POD_NAMESPACE=team-a", (char *)"POD_NAME=train-workers-0-3-abcde",
			      NULL };

	release(f, "0");
	start(f, env, NULL);
	assert_exit(f, 0, 2000);
	assert_output_has(f, "component=barrier pod=team-a/train-workers-0-3-abcde event=released");
	/* Every line is one structured record with a timestamp. */
	for (const char *line = f->proc.out; *line;) {
		const char *end = strchr(line, '\n');

		assert_non_null(end);
		assert_memory_equal(line, "ts=", 3);
		line = end + 1;
	}
}

static long context_switches(pid_t pid)
{
	long switches = testproc_status_field(pid, "ctxt_switches:");

	assert_true(switches >= 0);
	return switches;
}

static void no_wakeups_while_blocked(void **state)
{
	struct fixture *f = *state;
	char *const env[] = { (char *)TOKEN_ENV, NULL };
	long before;

	start(f, env, "--listen", "127.0.0.1:0", "--timeout", "600", NULL);
	wait_waiting(f);
	usleep(100 * 1000);
	before = context_switches(f->proc.pid);
	usleep(700 * 1000);
	assert_int_equal(context_switches(f->proc.pid), before);
}

static void binary_is_static_and_small(void **state)
{
	const char *path = testproc_barrier_path();
	Elf64_Ehdr header;
	struct stat st;
	int fd;

	(void)state;
	if (getenv("MUSTER_BARRIER_SANITIZED"))
		skip(); /* the sanitized build is dynamic by design */
	assert_int_equal(stat(path, &st), 0);
	if (st.st_size > 128 * 1024)
		fail_msg("%s is %lld bytes, over the 131072-byte budget", path, (long long)st.st_size);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &header, sizeof(header)), (ssize_t)sizeof(header));
	assert_memory_equal(header.e_ident, ELFMAG, SELFMAG);
	for (unsigned i = 0; i < header.e_phnum; i++) {
		Elf64_Phdr ph;

		assert_int_equal(pread(fd, &ph, sizeof(ph), (off_t)(header.e_phoff + i * header.e_phentsize)),
				 (ssize_t)sizeof(ph));
		assert_int_not_equal(ph.p_type, PT_INTERP);
		assert_int_not_equal(ph.p_type, PT_DYNAMIC);
	}
	close(fd);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(released_at_start),
		T(released_at_start_by_a_later_attempt),
		T(empty_dir_populated_later),
		T(empty_dir_populated_by_an_old_kubelet),
		T(update_from_old_attempt_to_current),
		T(stale_attempt_stays_blocked),
		T(release_of_another_jobset_stays_blocked),
		T(release_of_an_earlier_generation_stays_blocked),
		T(empty_generation_is_zero),
		T(invalid_content_blocks_until_valid),
		T(watched_directory_removed),
		T(timeout_exits_3_with_a_reason),
		T(sigterm_and_sigint_end_promptly),
		T(push_with_valid_token_releases),
		T(push_with_invalid_token_or_attempt_is_refused),
		T(push_malformed_and_oversized_input_is_refused),
		T(push_idle_clients_cannot_hold_it),
		T(push_port_in_use_falls_back_to_volume),
		T(token_from_file),
		T(listen_on_a_bare_ipv6_address),
		T(usage_errors_are_clear),
		T(help_and_version),
		T(log_lines_carry_the_pod),
		T(no_wakeups_while_blocked),
		cmocka_unit_test(binary_is_static_and_small),
	};

	/* A client writing to a socket the barrier closed must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("barrier_binary", tests, NULL, NULL);
}
