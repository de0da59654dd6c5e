/*
 * Benchmark of the push release path, in two parts measured in one run:
 *
 * 1. The controller's own cost: one responder process serves all
 *    BENCH_PUSH_TARGETS (default 5,000) loopback addresses with one epoll
 *    loop and answers OK to every line, as 5,000 barriers on 5,000 nodes
 *    would, each with a core of its own. push_fanout releases them
 *    BENCH_PUSH_ROUNDS times (default 5); per round: the fan-out call and
 *    the time to OK per target (p50, p99).
 * 2. The real-process fleet: 5,000 muster-barrier processes on distinct
 *    loopback addresses, as the pods of a 5,000-pod JobSet wait on their pod
 *    IPs, all sharing this machine's cores; one push_fanout call releases
 *    them all with BENCH_PUSH_PARALLELISM connections in flight (default
 *    256). Prints the time to each barrier's OK and to the exit of the last
 *    barrier process.
 *
 * The difference between the two is what 5,000 processes sharing 2 cores
 * cost, which a real cluster spreads over its nodes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "barrier_testproc.h"
#include "push_fanout.h"

#define TOKEN "bench-fanout-token-0123456789"

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The responder: one listening socket per address, one epoll loop; every
 * connection gets "OK\n" once its line is in. Writes one byte to `ready`
 * when listening, runs until killed. */
static void responder(size_t count, int ready)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event events[256];
	char byte = 1;

	if (ep < 0)
		_exit(1);
	for (size_t i = 0; i < count; i++) {
		struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(9443) };
		char ip[32];
		int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1ull << 63 | (uint64_t)fd };

		snprintf(ip, sizeof(ip), "127.5.%zu.%zu", i / 250, i % 250 + 1);
		inet_pton(AF_INET, ip, &addr.sin_addr);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 64) != 0 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
			_exit(1);
	}
	if (write(ready, &byte, 1) != 1)
		_exit(1);
	for (;;) {
		int n = epoll_wait(ep, events, 256, -1);

		for (int i = 0; i < n; i++) {
			int fd = (int)(events[i].data.u64 & 0xffffffffu);

			if (events[i].data.u64 >> 63) {
				int conn;

				while ((conn = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event ev = { .events = EPOLLIN,
								  .data.u64 = (uint64_t)conn };

					if (epoll_ctl(ep, EPOLL_CTL_ADD, conn, &ev) != 0)
						close(conn);
				}
			} else {
				char line[600];
				ssize_t got = recv(fd, line, sizeof(line), 0);

				if (got < 0 && errno == EAGAIN)
					continue;
				/* The line fits one segment on loopback. */
				if (got > 0 && memchr(line, '\n', (size_t)got))
					(void)!send(fd, "OK\n", 3, MSG_NOSIGNAL);
				close(fd);
			}
		}
	}
}

static int raise_file_limit(size_t want)
{
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
		return -1;
	if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
		limit.rlim_cur =
			limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= want ? want : limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
		getrlimit(RLIMIT_NOFILE, &limit);
	}
	return limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= want ? 0 : -1;
}

/* Part 1: the fan-out against one epoll responder. */
static int controller_share(size_t count, const struct push_fanout_options *options)
{
	size_t rounds = (size_t)testproc_env_int("BENCH_PUSH_ROUNDS", 5);
	struct push_target *targets = calloc(count, sizeof(*targets));
	uint32_t *elapsed = calloc(count, sizeof(*elapsed));
	double *p50 = calloc(rounds, sizeof(double)), *p99 = calloc(rounds, sizeof(double));
	double *calls = calloc(rounds, sizeof(double));
	int ready[2], ok_all = 1;
	char byte;
	pid_t child;

	if (!targets || !elapsed || !p50 || !p99 || !calls || pipe2(ready, O_CLOEXEC) != 0 ||
	    raise_file_limit(count + 4200) != 0) {
		fprintf(stderr, "push fan-out (controller's share): no memory, pipe or file limit\n");
		return 1;
	}
	child = fork();
	if (child == 0) {
		close(ready[0]);
		responder(count, ready[1]);
	}
	close(ready[1]);
	if (child < 0 || read(ready[0], &byte, 1) != 1) {
		fprintf(stderr, "push fan-out (controller's share): the responder did not start\n");
		return 1;
	}
	close(ready[0]);
	for (size_t i = 0; i < count; i++) {
		snprintf(targets[i].ip, sizeof(targets[i].ip), "127.5.%zu.%zu", i / 250, i % 250 + 1);
		targets[i].port = 9443;
	}
	for (size_t r = 0; r < rounds; r++) {
		const char *cause = NULL;
		double begun = testproc_now_ms();
		int released = push_fanout(targets, count, 1, TOKEN, options, &cause);

		calls[r] = testproc_now_ms() - begun;
		ok_all &= released == (int)count;
		for (size_t i = 0; i < count; i++)
			elapsed[i] = targets[i].elapsed_us;
		qsort(elapsed, count, sizeof(*elapsed), compare_u32);
		p50[r] = elapsed[count / 2] / 1000.0;
		p99[r] = elapsed[(count * 99) / 100] / 1000.0;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	qsort(p99, rounds, sizeof(double), compare_double);
	qsort(p50, rounds, sizeof(double), compare_double);
	qsort(calls, rounds, sizeof(double), compare_double);
	printf("push fan-out, the controller's share: %zu addresses served by one epoll process, parallelism %zu, "
	       "%zu rounds\n",
	       count, options->parallelism, rounds);
	printf("  fan-out call (median)         %.1f ms (%.0f releases/s)%s\n", calls[rounds / 2],
	       calls[rounds / 2] > 0 ? count / (calls[rounds / 2] / 1000) : 0, ok_all ? "" : "  NOT ALL OK");
	printf("  time to OK per target         p50 %.1f ms  p99 %.1f ms (medians over rounds; worst round p99 %.1f ms)"
	       "  goal p50<300 p99<1000: %s\n",
	       p50[rounds / 2], p99[rounds / 2], p99[rounds - 1],
	       p50[rounds / 2] < 300 && p99[rounds / 2] < 1000 ? "met" : "MISSED");
	free(targets);
	free(elapsed);
	free(p50);
	free(p99);
	free(calls);
	return ok_all ? 0 : 1;
}

int main(void)
{
	size_t count = (size_t)testproc_env_int("BENCH_PUSH_TARGETS", 5000);
	struct push_fanout_options options = { .parallelism = (size_t)testproc_env_int(
						       "BENCH_PUSH_PARALLELISM", 256),
					       .target_timeout_ms = 2000,
					       .total_timeout_ms = 30000 };
	struct testproc *procs = calloc(count, sizeof(*procs));
	struct push_target *targets = calloc(count, sizeof(*targets));
	uint32_t *elapsed = calloc(count, sizeof(*elapsed));
	char dir[] = "/tmp/muster-fanout-bench-XXXXXX";
	char *env[] = { (char *)"MUSTER_BARRIER_TOKEN=" TOKEN, NULL };
	const char *cause = NULL;
	struct rlimit limit;
	double begun, spawned, all_exited = 0;
	int released, failed = 0;

	int share;

	if (!procs || !targets || !elapsed || !mkdtemp(dir))
		return 1;
	share = controller_share(count, &options);
	/* Every barrier holds a pipe to us: make room for them, or measure as
	 * many as the hard limit allows and say so. */
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
	    limit.rlim_cur < count + 512) {
		if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= count + 512)
			limit.rlim_cur = count + 512;
		else
			limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
		getrlimit(RLIMIT_NOFILE, &limit);
		if (limit.rlim_cur < count + 512) {
			size_t fits = limit.rlim_cur > 576 ? (size_t)limit.rlim_cur - 512 : 64;

			fprintf(stderr, "open-file limit %lu: measuring %zu barriers instead of %zu\n",
				(unsigned long)limit.rlim_cur, fits, count);
			count = fits;
		}
	}
	begun = testproc_now_ms();
	for (size_t i = 0; i < count; i++) {
		char listen[48];
		char *argv[] = { (char *)testproc_barrier_path(),
				 (char *)"--dir",
				 dir,
				 (char *)"--attempt",
				 (char *)"1",
				 (char *)"--listen",
				 listen,
				 NULL };

		snprintf(targets[i].ip, sizeof(targets[i].ip), "127.4.%zu.%zu", i / 250, i % 250 + 1);
		targets[i].port = 9443;
		snprintf(listen, sizeof(listen), "%s:9443", targets[i].ip);
		if (testproc_start(&procs[i], argv, env, NULL) != 0) {
			fprintf(stderr, "cannot start barrier %zu\n", i);
			while (i-- > 0)
				testproc_finish(&procs[i]);
			return 1;
		}
	}
	for (size_t i = 0; i < count; i++) {
		if (testproc_wait_for(&procs[i], "event=waiting", 30000) != 0 ||
		    strstr(procs[i].out, "listen-failed")) {
			fprintf(stderr, "barrier %zu did not start listening:\n%s\n", i, procs[i].out);
			for (size_t k = 0; k < count; k++)
				testproc_finish(&procs[k]);
			return 1;
		}
	}
	spawned = testproc_now_ms() - begun;

	begun = testproc_now_ms();
	released = push_fanout(targets, count, 1, TOKEN, &options, &cause);
	if (released < 0) {
		fprintf(stderr, "push_fanout: %s\n", cause);
		return 1;
	}
	double fanout_ms = testproc_now_ms() - begun;

	for (size_t i = 0; i < count; i++) {
		if (testproc_wait_exit_blocking(&procs[i]) != 0)
			failed++;
		testproc_finish(&procs[i]);
	}
	all_exited = testproc_now_ms() - begun;
	for (size_t i = 0; i < count; i++)
		elapsed[i] = targets[i].elapsed_us;
	qsort(elapsed, count, sizeof(*elapsed), compare_u32);

	printf("push fan-out: %zu barriers on distinct loopback addresses, parallelism %zu (spawned in %.1f s)\n",
	       count, options.parallelism, spawned / 1000);
	printf("  released (OK)                 %d of %zu, %d exited non-zero\n", released, count, failed);
	printf("  fan-out call                  %.1f ms (%.0f releases/s)\n", fanout_ms,
	       fanout_ms > 0 ? count / (fanout_ms / 1000) : 0);
	printf("  time to OK per barrier        p50 %.1f ms  p99 %.1f ms  max %.1f ms\n",
	       elapsed[count / 2] / 1000.0, elapsed[(count * 99) / 100] / 1000.0,
	       elapsed[count - 1] / 1000.0);
	printf("  last barrier process exited   %.1f ms after the fan-out began  goal p99<1000 ms: %s\n",
	       all_exited, all_exited < 1000 ? "met" : "MISSED");
	rmdir(dir);
	free(procs);
	free(targets);
	free(elapsed);
	return released == (int)count && failed == 0 && share == 0 ? 0 : 1;
}
